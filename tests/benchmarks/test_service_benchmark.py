"""benchmarks/service_vs_triton.py runs (quick mode); the figures themselves are not asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.service.stack import REPO_ROOT, wait_for_model_repository


def test_service_vs_triton_quick(tmp_path: Path) -> None:
    wait_for_model_repository()
    out = tmp_path / "results.json"
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/service_vs_triton.py",
            "--quick",
            "--concurrency",
            "8",
            "--json",
            str(out),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "service / Triton: throughput" in done.stdout
    results = json.loads(out.read_text())
    for side in ("service", "triton"):
        assert results[side]["requests"] > 0
        assert results[side]["errors"] == 0 and results[side]["wrong"] == 0
    assert results["throughput_ratio"] > 0
