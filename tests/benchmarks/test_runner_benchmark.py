"""benchmarks/runner_vs_raw.py in quick mode: the harness runs and reports sane figures.

Nothing about speed is asserted (the machine is shared): only that both sides ran at both
concurrencies without errors, that the reported figures are consistent with each other, and
that no tritonserver outlived the script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_quick_runner_vs_raw_benchmark(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    output = tmp_path / "runner_vs_raw.json"
    # The runner's shadow repository lands under `scratch`: a leftover tritonserver would carry
    # that path on its command line.
    proc = subprocess.run(
        [sys.executable, "benchmarks/runner_vs_raw.py", "--quick", "--json", str(output)],
        cwd=REPO_ROOT,
        env=os.environ | {"TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, (
        f"runner_vs_raw.py --quick failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    )

    data = json.loads(output.read_text())
    assert [row["concurrency"] for row in data["results"]] == [1, 16]
    for row in data["results"]:
        for side in ("runner", "raw"):
            figures = row[side]
            assert figures["requests"] > 0 and figures["errors"] == 0, (side, row)
            assert figures["rounds"] == data["rounds"] == 2
            assert 0 < figures["p50_ms"] <= figures["p99_ms"], (side, row)
            assert figures["client_cpu_us"] > 0, (side, row)
            assert figures["rps"] == pytest.approx(
                figures["requests"] / (data["rounds"] * data["duration_s"])
            )
        assert row["ratio"] == pytest.approx(row["runner"]["rps"] / row["raw"]["rps"])
        assert len(row["ratio_per_round"]) == 2 and all(r > 0 for r in row["ratio_per_round"])

    printed = proc.stdout
    assert "| concurrency | side | req/s | p50 ms | p99 ms | client CPU us/req | errors |" in printed
    for row in data["results"]:
        assert f"concurrency {row['concurrency']}: runner/raw throughput = {row['ratio']:.3f}" in printed

    leftovers = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if str(scratch) in " ".join(p.info["cmdline"] or ())
    ]
    assert leftovers == []
