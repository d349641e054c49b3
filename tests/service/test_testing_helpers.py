"""runnerkit.testing: a user's service, with its real tritonserver, called from a test."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
from pathlib import Path

import numpy as np
import psutil
import pytest

import runnerkit
from runnerkit import io
from runnerkit.testing import ServeProcess, ServiceNotReadyError, serve_in_process, serve_in_process_async
from tests.service.stack import TINY_REPOSITORY


def make_service() -> runnerkit.Service:
    tiny = runnerkit.triton.Runner("tiny", model_repository=TINY_REPOSITORY)
    svc = runnerkit.Service("helper", runners=[tiny])

    @svc.api(input=io.NumpyNdarray(dtype="float32"), output=io.NumpyNdarray())
    async def scale(x: np.ndarray) -> np.ndarray:
        return (await tiny.scale.async_run(x)).as_numpy("y")

    @svc.api(input=io.NumpyNdarray(dtype="float32"), output=io.NumpyNdarray())
    def scale_sync(x: np.ndarray) -> np.ndarray:
        return tiny.scale.run(x).as_numpy("y")

    return svc


def tritonservers() -> set[int]:
    """This test process's own tritonserver children."""
    return {p.pid for p in psutil.Process(os.getpid()).children() if p.name() == "tritonserver"}


def test_serve_in_process_runs_the_service_with_uvicorn_and_its_triton() -> None:
    before = tritonservers()
    with serve_in_process(make_service()) as client:
        assert str(client.base_url).startswith("http://127.0.0.1:")
        assert client.get("/readyz").status_code == 200
        assert client.post("/scale", json=[1, 2]).json() == [2.0, 4.0]
        assert client.post("/scale_sync", json=[0.5]).json() == [1.0]
        started = tritonservers() - before
        assert len(started) == 1
    assert not tritonservers() & started, "the service's tritonserver must stop with it"


def test_serve_in_process_async_drives_the_asgi_app() -> None:
    async def scenario() -> list[float]:
        async with serve_in_process_async(make_service()) as client:
            response = await client.post("/scale", json=[4])
            assert response.status_code == 200
            return response.json()

    before = tritonservers()
    assert asyncio.run(scenario()) == [8.0]
    assert tritonservers() == before


def test_a_runner_that_cannot_start_is_reported(tmp_path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(TINY_REPOSITORY, broken, ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "scale" / "1" / "model.py").write_text(
        "class TritonPythonModel:\n"
        "    def initialize(self, args):\n"
        "        raise RuntimeError('cannot load')\n"
    )
    svc = runnerkit.Service("broken", runners=[runnerkit.triton.Runner("tiny", model_repository=broken)])
    with pytest.raises(ServiceNotReadyError, match=r"(?s)a runner failed to start.*cannot load"):
        with serve_in_process(svc, ready_timeout=120):
            pass


def test_serve_process_logs_outlive_stop_and_leave_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("import runnerkit\nsvc = runnerkit.Service('plain')\n")
    served = ServeProcess("plain.py:svc", cwd=tmp_path).start(timeout=120)
    log = served.log_path
    served.stop()
    assert "serving 'plain'" in served.log_text()  # readable after stop()
    del served
    gc.collect()
    assert not log.exists()

    with ServeProcess("plain.py:svc", cwd=tmp_path) as served:
        log = served.log_path
        assert log.exists()
    assert not log.exists()
