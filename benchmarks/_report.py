"""docs/benchmarks.md, its chart and its data, from the measurements of one run."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from benchmarks._loadgen import LoadResult

# (numerator, denominator, what the ratio says)
RATIO_PAIRS = (
    ("runnerkit-w1", "bentoml-w1", "runnerkit service / BentoML, 1 worker"),
    ("runnerkit-w2", "bentoml-w2", "runnerkit service / BentoML, 2 workers"),
    ("runner", "raw", "runnerkit runner / raw Triton"),
    ("runnerkit-w1", "raw", "runnerkit service (1 worker) / raw Triton"),
    ("runnerkit-w2", "raw", "runnerkit service (2 workers) / raw Triton"),
)
TARGET_CONCURRENCY = 32


@attrs.frozen
class Measurement:
    system: str
    round: int
    position: int  # where in the cell's order this system ran
    sample: str
    result: LoadResult


@attrs.frozen
class SystemInfo:
    key: str
    label: str
    description: str
    check: str  # the correctness check before any load, e.g. "10/10 samples right"


@attrs.frozen
class BenchmarkRun:
    mode: str
    started: str
    finished: str
    command: str
    settings: dict[str, Any]
    machine: dict[str, Any]
    versions: dict[str, Any]
    systems: list[SystemInfo]
    measurements: list[Measurement]
    notes: list[str]


@attrs.frozen
class Summary:
    """One system at one concurrency, over the rounds."""

    rps: float  # total answers / total measured seconds
    rps_min: float
    rps_max: float
    p50_ms: float  # latency percentiles: the median of the rounds' values
    p95_ms: float
    p99_ms: float
    requests: int
    errors: int
    wrong: int
    client_cpu: float
    rounds: int


def summarize(measurements: Sequence[Measurement]) -> dict[tuple[str, int], Summary]:
    cells: dict[tuple[str, int], list[LoadResult]] = {}
    for m in measurements:
        cells.setdefault((m.system, m.result.concurrency), []).append(m.result)
    out = {}
    for key, results in cells.items():
        seconds = sum(r.duration_s for r in results)
        out[key] = Summary(
            rps=sum(r.requests for r in results) / seconds if seconds else 0.0,
            rps_min=min(r.rps for r in results),
            rps_max=max(r.rps for r in results),
            p50_ms=statistics.median(r.p50_ms for r in results),
            p95_ms=statistics.median(r.p95_ms for r in results),
            p99_ms=statistics.median(r.p99_ms for r in results),
            requests=sum(r.requests for r in results),
            errors=sum(r.errors for r in results),
            wrong=sum(r.wrong for r in results),
            client_cpu=statistics.fmean(r.client_cpu for r in results),
            rounds=len(results),
        )
    return out


def _num(value: float) -> str:
    return f"{value:,.0f}"


def _ms(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def results_table(run: BenchmarkRun, summary: dict[tuple[str, int], Summary]) -> list[str]:
    lines = [
        "| System | Concurrency | req/s | req/s range | p50 ms | p95 ms | p99 ms | errors | wrong "
        "| load gen CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for info in run.systems:
        for c in run.settings["concurrency"]:
            s = summary.get((info.key, c))
            if s is None:
                continue
            spread = f"{_num(s.rps_min)}-{_num(s.rps_max)}" if s.rounds > 1 else "-"
            lines.append(
                f"| {info.label} | {c} | {_num(s.rps)} | {spread} | {_ms(s.p50_ms)} | {_ms(s.p95_ms)} | "
                f"{_ms(s.p99_ms)} | {s.errors} | {s.wrong} | {s.client_cpu:.0%} |"
            )
    return lines


def ratio_rows(run: BenchmarkRun, summary: dict[tuple[str, int], Summary]) -> list[str]:
    present = {info.key for info in run.systems}
    pairs = [p for p in RATIO_PAIRS if p[0] in present and p[1] in present]
    if not pairs:
        return ["No pair of systems to compare was measured in this run."]
    lines = ["| Ratio | Concurrency | req/s ratio | p99 ratio |", "|---|---:|---:|---:|"]
    for top, bottom, label in pairs:
        for c in run.settings["concurrency"]:
            a, b = summary.get((top, c)), summary.get((bottom, c))
            if a is None or b is None:
                continue
            rps = a.rps / b.rps if b.rps else None
            p99 = a.p99_ms / b.p99_ms if b.p99_ms else None
            lines.append(f"| {label} | {c} | {_ratio(rps)} | {_ratio(p99)} |")
    return lines


def target_rows(run: BenchmarkRun, summary: dict[tuple[str, int], Summary]) -> list[str]:
    c = TARGET_CONCURRENCY

    def get(key: str) -> Summary | None:
        return summary.get((key, c))

    lines = ["| Target (concurrency 32) | Measured | Met |", "|---|---|---|"]
    for workers in (1, 2):
        ours, theirs = get(f"runnerkit-w{workers}"), get(f"bentoml-w{workers}")
        what = f"runnerkit service >= 2x BentoML req/s and lower p99, {workers} worker{'s' * (workers > 1)}"
        if ours is None or theirs is None or not theirs.rps:
            lines.append(f"| {what} | not measured | - |")
            continue
        ratio = ours.rps / theirs.rps
        met = ratio >= 2.0 and ours.p99_ms < theirs.p99_ms
        measured = f"{ratio:.2f}x req/s; p99 {_ms(ours.p99_ms)} vs {_ms(theirs.p99_ms)} ms"
        lines.append(f"| {what} | {measured} | {'yes' if met else 'no'} |")
    raw = get("raw")
    for key, need, what in (
        ("runner", 0.95, "runnerkit runner >= 0.95x raw Triton req/s"),
        ("runnerkit-w1", 0.8, "runnerkit service (1 worker) >= 0.8x raw Triton req/s"),
        ("runnerkit-w2", 0.8, "runnerkit service (2 workers) >= 0.8x raw Triton req/s"),
    ):
        ours = get(key)
        if ours is None or raw is None or not raw.rps:
            lines.append(f"| {what} | not measured | - |")
            continue
        ratio = ours.rps / raw.rps
        lines.append(f"| {what} | {ratio:.2f}x | {'yes' if ratio >= need else 'no'} |")
    return lines


def write_chart(run: BenchmarkRun, summary: dict[tuple[str, int], Summary], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    concurrency = list(run.settings["concurrency"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for info in run.systems:
        points = [(c, summary[(info.key, c)]) for c in concurrency if (info.key, c) in summary]
        if not points:
            continue
        xs = [c for c, _ in points]
        style = "--" if info.key == "triton-http" else "-"
        left.plot(xs, [s.rps for _, s in points], style, marker="o", label=info.label)
        right.plot(xs, [s.p99_ms for _, s in points], style, marker="o", label=info.label)
    for axis, title, unit in ((left, "Throughput", "requests/s"), (right, "p99 latency", "ms")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(concurrency, [str(c) for c in concurrency])
        axis.set_xlabel("concurrency (closed-loop clients)")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    right.set_yscale("log")
    right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    left.set_ylim(bottom=0)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize="small", frameon=False)
    fig.suptitle(
        f"digits_onnx: PNG/tensor in, label out ({run.machine.get('cpus', '?')} CPUs, {run.mode} run)"
    )
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_markdown(run: BenchmarkRun, summary: dict[tuple[str, int], Summary], chart_name: str) -> str:
    s = run.settings
    m = run.machine
    lines = [
        "# Benchmarks: runnerkit, raw Triton and BentoML's Triton runner",
        "",
        f"Generated by `{run.command}` ({run.mode} run, {run.started} to {run.finished}). "
        "Do not edit by hand: run the command again.",
        "",
    ]
    if run.mode == "quick":
        lines += [
            "> **Quick run**: a few seconds per system, no BentoML. It proves the harness works; "
            "its figures mean little. Run `python benchmarks/compare.py` for the real comparison.",
            "",
        ]
    lines += ["## Targets", "", *target_rows(run, summary), ""]
    lines += [
        "## Results",
        "",
        f"Each cell: {s['rounds']} round(s) of {s['duration']:g} s after {s['warmup']:g} s of warm-up; "
        "req/s over all rounds, latency percentiles the median of the rounds'. `errors` counts "
        "transport errors and non-2xx answers, `wrong` successful answers with another label than "
        "the sample's; `load gen CPU` is the load generator's CPU time per wall second (100% = one core).",
        "",
        *results_table(run, summary),
        "",
        f"![Throughput and p99 latency against concurrency]({chart_name})",
        "",
        "## Ratios",
        "",
        "req/s ratio above 1 and p99 ratio below 1 favour the first system.",
        "",
        *ratio_rows(run, summary),
        "",
        "## What was measured",
        "",
        f"One machine, one run, the same tritonserver binary ({run.versions.get('tritonserver', '?')}, "
        f"from {run.versions.get('tritonserver_source', '?')}) and the same model repository "
        f"({s['served_repository_note']}); every system classifies the sample digits of `samples/` with "
        f"`{s['model']}`.",
        "",
    ]
    for info in run.systems:
        lines.append(f"- **{info.label}**: {info.description}. Correctness check: {info.check}.")
    lines += [
        "",
        "Load: `concurrency` closed-loop clients, each sending its next request when its answer "
        "arrives. HTTP systems are loaded by wrk (one thread, keep-alive connections, "
        "benchmarks/loadgen.lua checks the label of every answer) in its own process; the raw and "
        "runner cases by a Python asyncio process (`python -m benchmarks._loadgen`), since there "
        "the client is what is measured. Systems take turns for every concurrency, in an order "
        "rotated each round, so drift on a busy machine hits all of them alike; all systems stay "
        "up for the whole run. The sample digit changes from cell to cell, the same for every system.",
        "",
        "Load generator check: the `raw Triton (HTTP/JSON, wrk)` rows are wrk against Triton's own "
        "C++ HTTP front end. Where they reach more requests/s than the HTTP services, at a small "
        "CPU share, wrk is not what limits the services.",
        "",
    ]
    if run.notes:
        lines += ["## Notes on this run", "", *(f"- {note}" for note in run.notes), ""]
    lines += ["## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in m.items()]
    lines += ["", "## Versions", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in run.versions.items()]
    lines += [
        "",
        "## Settings",
        "",
        "| | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in s.items() if k != "served_repository_note"),
        "",
    ]
    return "\n".join(lines)


def write_report(run: BenchmarkRun, markdown: Path, chart: Path, data: Path) -> None:
    summary = summarize(run.measurements)
    write_chart(run, summary, chart)
    chart_ref = chart.name if chart.parent.resolve() == markdown.parent.resolve() else str(chart)
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(render_markdown(run, summary, chart_ref))
    payload = attrs.asdict(run)
    payload["summary"] = [
        {"system": key, "concurrency": c, **attrs.asdict(s)} for (key, c), s in sorted(summary.items())
    ]
    data.write_text(json.dumps(payload, indent=2) + "\n")
