"""The benchmark harness in quick mode: it runs end to end and writes its report.

Nothing about speed is asserted (the machine is shared); what is asserted is that every quick
system was started, answered the samples right, took load without errors, shows up in the
report's table and chart, and left no process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
QUICK_SYSTEMS = {"raw", "runner", "triton-http", "runnerkit-w1"}
QUICK_CONCURRENCY = (1, 8)

pytestmark = pytest.mark.skipif(
    shutil.which("wrk") is None, reason="wrk is not installed (`make system-deps` installs it)"
)


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or ())
        if text in cmdline:
            found.append(f"{proc.info['pid']}: {cmdline[:200]}")
    return found


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("bench")
    scratch = root / "tmp"
    scratch.mkdir()
    output = root / "report" / "benchmarks.md"
    # The harness's scratch folders (shadow repository, logs) land under `scratch`, so a
    # leftover server is recognisable by its command line.
    env = os.environ | {"TMPDIR": str(scratch)}
    proc = subprocess.run(
        [sys.executable, "benchmarks/compare.py", "--quick", "--output", str(output)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, f"compare.py --quick failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return output, proc


def test_report_has_a_row_per_system_and_concurrency(quick_run: tuple[Path, object]) -> None:
    output, _ = quick_run
    data = json.loads(output.with_suffix(".json").read_text())
    labels = {s["key"]: s["label"] for s in data["systems"]}
    assert set(labels) == QUICK_SYSTEMS
    markdown = output.read_text()
    assert "| System | Concurrency | req/s |" in markdown
    for label in labels.values():
        for concurrency in QUICK_CONCURRENCY:
            assert f"| {label} | {concurrency} | " in markdown, f"no table row for {label} at {concurrency}"
    assert "BentoML legacy runner" not in markdown  # quick mode leaves the peer out
    assert "](benchmarks.png)" in markdown


def test_every_system_answered_right_under_load(quick_run: tuple[Path, object]) -> None:
    output, _ = quick_run
    data = json.loads(output.with_suffix(".json").read_text())
    samples = json.loads((REPO_ROOT / "samples" / "index.json").read_text())
    for system in data["systems"]:
        assert system["check"].startswith(f"{len(samples)}/{len(samples)} "), system
    cells = {(row["system"], row["concurrency"]): row for row in data["summary"]}
    assert set(cells) == {(s, c) for s in QUICK_SYSTEMS for c in QUICK_CONCURRENCY}
    for key, row in cells.items():
        assert row["requests"] > 0, key
        assert row["errors"] == 0, key
        assert row["wrong"] == 0, key
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"], key


def test_chart_is_a_png(quick_run: tuple[Path, object]) -> None:
    output, _ = quick_run
    chart = output.with_suffix(".png")
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert chart.stat().st_size > 10_000  # two plotted panels, not an empty canvas


def test_no_server_outlives_the_harness(quick_run: tuple[Path, object]) -> None:
    output, _ = quick_run
    scratch = output.parent.parent / "tmp"
    assert _processes_mentioning(str(scratch)) == []
    assert list(scratch.glob("runnerkit-bench-*")) == []  # the harness removed its scratch folders
