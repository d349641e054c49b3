"""benchmarks/production.py in quick mode: it runs end to end and reports what it measured.

Nothing about speed is asserted (the machine is shared): only that both worker counts took load
without an error or a wrong answer, that traffic recovered after tritonserver was killed with
nothing but fast 503s meanwhile, and that no process outlived the script.
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

pytestmark = pytest.mark.skipif(
    shutil.which("wrk") is None, reason="wrk is not installed (`make system-deps` installs it)"
)


def test_quick_production_benchmark(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    output = tmp_path / "report" / "production.md"
    # Its scratch folders (shadow repository, logs) land under `scratch`: a leftover server
    # would be recognisable by its command line.
    proc = subprocess.run(
        [sys.executable, "benchmarks/production.py", "--quick", "--output", str(output)],
        cwd=REPO_ROOT,
        env=os.environ | {"TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, f"production.py --quick failed ({proc.returncode}):\n{proc.stderr[-4000:]}"

    data = json.loads(output.with_suffix(".json").read_text())
    assert [row["workers"] for row in data["throughput"]] == [1, 2]
    for row in data["throughput"]:
        assert row["requests"] > 0 and row["errors"] == 0 and row["wrong"] == 0, row
        assert 0 < row["p50_ms"] <= row["p99_ms"], row
    [recovery] = data["recoveries"]
    assert recovery["clean"], recovery  # only 503s meanwhile, no timeout, no wrong answer
    assert 0 < recovery["first_ok_s"] < 180 and recovery["slowest_failure_ms"] < 10_000
    assert recovery["restart_s"] is not None and recovery["restart_delay_s"] is not None  # reported
    markdown = output.read_text()
    assert "| API workers | req/s | p50 ms | p99 ms |" in markdown and "kill -9" in markdown

    leftovers = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if str(scratch) in " ".join(p.info["cmdline"] or ())
    ]
    assert leftovers == []
    # scratch folders (bench logs, shadow repository, metrics) removed
    assert [p.name for p in scratch.iterdir() if p.name.startswith("runnerkit-")] == []
