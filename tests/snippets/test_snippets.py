"""Each snippet under snippets/ runs as its docstring shows (containerize_bento.py runs in
tests/bentos/test_containerize.py, where the container engine is set up)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from runnerkit.bentos import BentoStore

from ..bentos.conftest import REPO_ROOT, SAMPLES, ServeProcess, wait_for_example_repository

BIN = Path(sys.executable).parent


@pytest.fixture
def build_env(tmp_path: Path, runnerkit_wheel_file: Path) -> dict[str, str]:
    wait_for_example_repository()
    return {
        **os.environ,
        "RUNNERKIT_HOME": str(tmp_path / "home"),
        "RUNNERKIT_WHEEL": str(runnerkit_wheel_file),
    }


def check_built(proc: subprocess.CompletedProcess[str], home: Path) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.fullmatch(r'Successfully built Bento\(tag="(digits:[0-9-]+)"\)', proc.stdout.strip())
    assert match, proc.stdout
    bento = BentoStore(home / "bentos").get(match.group(1))
    assert (bento.src_dir / "services" / "digits.py").is_file()
    assert (bento.src_dir / "model_repository" / "digits_onnx" / "config.pbtxt").is_file()
    assert "nvcr.io/nvidia/tritonserver:25.11-py3" in bento.dockerfile.read_text()


def test_bentofile_snippet(build_env: dict[str, str]) -> None:
    proc = subprocess.run(
        [str(BIN / "runnerkit"), "build", "-f", "snippets/bentofile.yaml"],
        cwd=REPO_ROOT,
        env=build_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    check_built(proc, Path(build_env["RUNNERKIT_HOME"]))


def test_build_bento_snippet(build_env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "snippets/build_bento.py"],
        cwd=REPO_ROOT,
        env=build_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    check_built(proc, Path(build_env["RUNNERKIT_HOME"]))


def test_service_model_version_1_snippet(serve_process: Callable[..., ServeProcess]) -> None:
    wait_for_example_repository()
    labels = json.loads((SAMPLES / "index.json").read_text())
    server = serve_process(["snippets/service_model_version_1.py:svc"])
    server.wait_ready(timeout=240)
    data = (SAMPLES / "digit_3.png").read_bytes()
    headers = {"Content-Type": "image/png"}
    pinned = httpx.post(f"{server.url}/classify_v1", content=data, headers=headers, timeout=60)
    latest = httpx.post(f"{server.url}/classify_latest", content=data, headers=headers, timeout=60)
    assert pinned.status_code == 200, pinned.text
    assert latest.status_code == 200, latest.text
    assert pinned.json() == {"label": labels["digit_3.png"]["label"], "model_version": "1"}
    assert latest.json()["model_version"] == "2"
