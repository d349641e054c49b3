"""Fixtures for runnerkit.triton: a second session server on the test models of
model_repository_extra/, tmp repositories, and process bookkeeping."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from runnerkit.triton import Runner
from tests.conftest import AsyncLoop

EXTRA_REPOSITORY = Path(__file__).resolve().parent / "model_repository_extra"


@pytest.fixture(scope="session")
def extra_grpc_runner(aio: AsyncLoop) -> Iterator[Runner]:
    """The test models (several inputs, FP16/INT64/BOOL/BYTES/BF16, a sequence model), over gRPC."""
    with Runner("extra", model_repository=EXTRA_REPOSITORY, tritonserver_type="grpc") as runner:
        yield runner


@pytest.fixture(scope="session")
def extra_http_runner(aio: AsyncLoop, extra_grpc_runner: Runner) -> Iterator[Runner]:
    with Runner("extra_http", url=extra_grpc_runner.addresses["http"], tritonserver_type="http") as runner:
        yield runner


@pytest.fixture(params=["grpc", "http"])
def extra_runner(request: pytest.FixtureRequest) -> Runner:
    """The test models' runner, once per protocol."""
    runner: Runner = request.getfixturevalue(f"extra_{request.param}_runner")
    return runner


def make_repository(destination: Path, *models: str, source: Path = EXTRA_REPOSITORY) -> Path:
    """A fresh repository holding copies of some models (of model_repository_extra by default)."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in models:
        shutil.copytree(source / name, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def process_group(pgid: int) -> set[int]:
    """PIDs of the live processes in a process group (tritonserver and its python stubs)."""
    members = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # after the command: state, ppid, pgrp; zombies are already dead
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.add(int(entry.name))
    return members


def alive(pids: Iterable[int]) -> set[int]:
    """Those of `pids` that still run (not zombies)."""
    left = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.add(pid)
    return left


def server_pid(runner: Runner) -> int:
    """The owned tritonserver's PID (its process group has the same id: it leads its session)."""
    server = runner._server
    assert server is not None and server.pid is not None, f"{runner!r} owns no running server"
    return server.pid


async def inference_counts(runner: Runner, model: str) -> tuple[int, int]:
    """Triton's own count of (successful, failed) requests for a model, all versions."""
    stats: Any = await runner.get_inference_statistics(model)
    if runner.tritonserver_type == "grpc":
        rows = [(s.inference_stats.success.count, s.inference_stats.fail.count) for s in stats.model_stats]
    else:
        rows = [
            (
                int(s["inference_stats"]["success"].get("count", 0)),
                int(s["inference_stats"]["fail"].get("count", 0)),
            )
            for s in stats["model_stats"]
        ]
    return sum(r[0] for r in rows), sum(r[1] for r in rows)


def digits(rows: int, seed: int = 0) -> np.ndarray:
    """Inputs shaped like the classifier's: rows of 64 pixels in [0, 1]."""
    return np.random.default_rng(seed).random((rows, 64), dtype=np.float32)


def onnx_logits(example_repository: Path, version: int, x: np.ndarray) -> np.ndarray:
    """The classifier's logits computed by onnxruntime directly on the repository's file."""
    session = ort.InferenceSession(
        str(example_repository / "digits_onnx" / str(version) / "model.onnx"),
        providers=["CPUExecutionProvider"],
    )
    (logits,) = session.run(["logits"], {"input": x})
    return np.asarray(logits)
