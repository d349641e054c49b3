"""Benchmark runnerkit against raw Triton and BentoML's Triton runner, and write docs/benchmarks.md.

    python benchmarks/compare.py            # the full comparison (about 15 minutes)
    python benchmarks/compare.py --quick    # a few seconds per system, no BentoML

One machine, one run: the same tritonserver binary and model repository for every system, the
load generator in a separate process, systems taking turns at every concurrency. The first full
run installs BentoML into .state/bentoml-venv (about a minute). See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import os
import platform
import shlex
import shutil
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `runnerkit` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from benchmarks import _bentoml_peer as peer_setup
from benchmarks._loadgen import LoadGeneratorError, wrk_executable, wrk_version
from benchmarks._report import BenchmarkRun, Measurement, SystemInfo, write_report
from benchmarks._systems import (
    BentoService,
    RawTriton,
    RunnerDirect,
    RunnerkitService,
    System,
    SystemStartError,
    TritonHttp,
    TritonUnderTest,
    make_work_dir,
    runnerkit_serve_options,
    versions_of,
)
from benchmarks._workload import MODEL, MODEL_REPOSITORY, REPO_ROOT, SAMPLES_DIR, load_samples
from runnerkit.exceptions import TritonServerNotFoundError, TritonStartError
from runnerkit.triton import locate_tritonserver

ALL_SYSTEMS = ("raw", "runner", "triton-http", "runnerkit-w1", "runnerkit-w2", "bentoml-w1", "bentoml-w2")
QUICK_SYSTEMS = ("raw", "runner", "triton-http", "runnerkit-w1")
DEFAULT_OUTPUT = REPO_ROOT / "docs" / "benchmarks.md"
QUICK_OUTPUT = REPO_ROOT / ".state" / "benchmarks-quick" / "benchmarks.md"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/compare.py",
        description="runnerkit vs raw Triton vs BentoML's legacy Triton runner, side by side.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a few seconds per system, no BentoML (proves the harness works)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help=f"the Markdown report (default {DEFAULT_OUTPUT.relative_to(REPO_ROOT)}; "
        f"quick: {QUICK_OUTPUT.relative_to(REPO_ROOT)}); the chart (.png) and the "
        "data (.json) go next to it",
    )
    parser.add_argument(
        "--systems",
        nargs="+",
        choices=ALL_SYSTEMS,
        default=None,
        help=f"systems to measure (default: all; quick: {' '.join(QUICK_SYSTEMS)})",
    )
    parser.add_argument("--no-bentoml", action="store_true", help="leave the BentoML peer out")
    parser.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=None,
        help="closed-loop clients (default 1 8 32 64; quick: 1 8)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="seconds measured per system and concurrency (default 10; quick: 1)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="seconds of load before each measurement (default 2; quick: 0)",
    )
    parser.add_argument("--rounds", type=int, default=None, help="turns per system (default 2; quick: 1)")
    parser.add_argument(
        "--attach-service",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the runnerkit service attaches to the harness's tritonserver instead of "
        "launching its own (default: only in quick mode)",
    )
    parser.add_argument(
        "--note", action="append", default=[], help="a line for the report's notes on this run (repeatable)"
    )
    parser.add_argument("--model-repository", type=Path, default=MODEL_REPOSITORY)
    parser.add_argument("--samples", type=Path, default=SAMPLES_DIR)
    args = parser.parse_args(argv)
    quick = args.quick
    args.mode = "quick" if quick else "full"
    args.output = (args.output or (QUICK_OUTPUT if quick else DEFAULT_OUTPUT)).resolve()
    args.concurrency = args.concurrency or ([1, 8] if quick else [1, 8, 32, 64])
    args.duration = args.duration if args.duration is not None else (1.0 if quick else 10.0)
    args.warmup = args.warmup if args.warmup is not None else (0.0 if quick else 2.0)
    args.rounds = args.rounds if args.rounds is not None else (1 if quick else 2)
    args.attach_service = quick if args.attach_service is None else args.attach_service
    systems = list(args.systems or (QUICK_SYSTEMS if quick else ALL_SYSTEMS))
    if args.no_bentoml:
        systems = [s for s in systems if not s.startswith("bentoml")]
    args.systems = systems
    for name, value in (("--duration", args.duration), ("--rounds", args.rounds)):
        if value <= 0:
            parser.error(f"{name} must be positive, got {value}")
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0, got {args.warmup}")
    if any(c < 1 for c in args.concurrency):
        parser.error(f"--concurrency values must be >= 1, got {args.concurrency}")
    if not (args.model_repository / MODEL / "config.pbtxt").is_file():
        parser.error(
            f"{args.model_repository} has no {MODEL}; generate it with "
            "`python scripts/make_model_repository.py`"
        )
    return args


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def machine_info() -> dict[str, Any]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    os_name = platform.platform()
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    return {
        "cpu": model,
        "cpus": len(os.sched_getaffinity(0)),
        "memory": f"{psutil.virtual_memory().total / 2**30:.1f} GiB",
        "os": os_name,
        "kernel": platform.release(),
        "gpu": "yes" if Path("/dev/nvidiactl").exists() else "none",
        "load average at start (1/5/15 min)": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def local_versions() -> dict[str, Any]:
    names = ("runnerkit", "tritonclient", "grpcio", "numpy", "uvicorn", "starlette", "onnxruntime")
    return {"python": platform.python_version(), **{n: _dist_version(n) for n in names}}


def rotated(items: Sequence[System], shift: int) -> list[System]:
    shift %= len(items)
    return [*items[shift:], *items[:shift]]


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # run the `finally` blocks: no server outlives the harness


def build_systems(
    args: argparse.Namespace,
    triton: TritonUnderTest,
    work_dir: Path,
    notes: list[str],
    versions: dict[str, Any],
) -> list[System]:
    wanted = args.systems
    systems: list[System] = []
    direct: dict[str, Callable[[TritonUnderTest], System]] = {
        "raw": RawTriton,
        "runner": RunnerDirect,
        "triton-http": TritonHttp,
    }
    for key in ("raw", "runner", "triton-http"):
        if key in wanted:
            systems.append(direct[key](triton))
    service_keys = [k for k in wanted if k.startswith("runnerkit-w")]
    if service_keys:
        options = runnerkit_serve_options()
        production = "--production" in options and "--workers" in options
        if not production:
            notes.append(
                "`runnerkit serve` has no `--production --workers` yet: the runnerkit service ran "
                "under development serving (one uvicorn worker); the 2-worker case was skipped."
            )
        for key in service_keys:
            workers = int(key.removeprefix("runnerkit-w"))
            if not production and workers != 1:
                continue
            attach = triton if args.attach_service else None
            systems.append(
                RunnerkitService(
                    workers,
                    production=production,
                    log_dir=work_dir,
                    attach_to=attach,
                    access_log_option="--no-access-log" in options,
                )
            )
    bento_keys = [k for k in wanted if k.startswith("bentoml-w")]
    if bento_keys:
        log("preparing the BentoML peer (the first time installs it into .state/bentoml-venv)")
        peer = peer_setup.prepare_peer(triton.binary)
        bento = versions_of(peer.python, ("bentoml", "tritonclient", "numpy", "uvicorn", "starlette"))
        versions.update({f"{name} (BentoML venv)": v for name, v in bento.items()})
        for key in bento_keys:
            systems.append(
                BentoService(int(key.removeprefix("bentoml-w")), peer=peer, triton=triton, log_dir=work_dir)
            )
    return systems


def run_benchmark(args: argparse.Namespace, argv: Sequence[str]) -> BenchmarkRun:
    started = _now()
    samples = load_samples(args.samples)
    wrk_executable()  # fail now, not after minutes of start-up
    machine = machine_info()
    versions: dict[str, Any] = local_versions() | {"wrk": wrk_version()}
    notes: list[str] = list(args.note)
    load = os.getloadavg()[0]
    if load > 0.5 * machine["cpus"]:
        notes.append(
            f"The 1-minute load average was {load:.1f} on {machine['cpus']} CPUs before the run: other "
            "work shared the machine, so the figures are noisy, and systems with more processes get a "
            "larger share of a contended CPU. Compare systems within this run only."
        )
    binary = locate_tritonserver()
    work_dir = make_work_dir()
    triton = TritonUnderTest(binary, args.model_repository, work_dir)
    systems: list[System] = []
    started_systems: list[System] = []
    measurements: list[Measurement] = []
    infos: list[SystemInfo] = []
    try:
        log(f"starting tritonserver ({binary.source}) on {triton.served_repository}")
        triton.start()
        versions["tritonserver"] = triton.server_version()
        versions["tritonserver_source"] = binary.source
        systems = build_systems(args, triton, work_dir, notes, versions)
        for system in systems:
            log(f"starting {system.label}")
            system.start()
            started_systems.append(system)
        for system in systems:
            answers = system.classify(samples)
            right = sum(a == s.label for a, s in zip(answers, samples))
            check = f"{right}/{len(samples)} samples classified right"
            if right != len(samples):
                notes.append(f"{system.label} misclassified samples before the load: {answers}")
            log(f"{system.label}: {check}")
            infos.append(SystemInfo(system.key, system.label, system.describe(), check))
        cell = 0
        for round_index in range(args.rounds):
            for concurrency in args.concurrency:
                sample = samples[cell % len(samples)]
                for position, system in enumerate(rotated(systems, cell)):
                    result = system.measure(
                        sample, concurrency=concurrency, duration=args.duration, warmup=args.warmup
                    )
                    measurements.append(Measurement(system.key, round_index, position, sample.name, result))
                    log(
                        f"round {round_index + 1}/{args.rounds} c={concurrency} {system.label}: "
                        f"{result.rps:,.0f} req/s, p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, "
                        f"errors {result.errors}, wrong {result.wrong}"
                    )
                cell += 1
    finally:
        for system in reversed(started_systems):
            log(f"stopping {system.label}")
            system.stop()
        triton.stop()
        shutil.rmtree(work_dir, ignore_errors=True)
    machine["load average at end (1/5/15 min)"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    if triton.fallback:
        repo_note = (
            f"`{args.model_repository.name}/` through runnerkit's shadow repository: this "
            f"tritonserver lacks a backend, so {', '.join(sorted(triton.fallback))} run in the "
            "python backend (onnxruntime / TorchScript)"
        )
    else:
        repo_note = f"`{args.model_repository.name}/` as it is"
    settings = {
        "concurrency": list(args.concurrency),
        "duration": args.duration,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "model": MODEL,
        "systems": [s.key for s in systems],
        "runnerkit service attached to the harness's tritonserver": args.attach_service,
        "served_repository_note": repo_note,
    }
    command = shlex.join(["python", "benchmarks/compare.py", *argv])
    return BenchmarkRun(
        args.mode, started, _now(), command, settings, machine, versions, infos, measurements, notes
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        run = run_benchmark(args, argv)
    except (SystemStartError, TritonStartError, TritonServerNotFoundError, LoadGeneratorError) as exc:
        log(f"error: {exc}")  # the message carries the end of the failing server's log
        return 1
    except peer_setup.PeerSetupError as exc:
        log(f"error: the BentoML peer could not be prepared: {exc}\n(leave it out with --no-bentoml)")
        return 1
    chart = args.output.with_suffix(".png")
    data = args.output.with_suffix(".json")
    write_report(run, args.output, chart, data)
    log(f"wrote {args.output}, {chart.name} and {data.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
