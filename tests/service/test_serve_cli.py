"""`runnerkit serve` itself: --reload keeps tritonserver, Ctrl-C / SIGTERM leave no process behind."""

from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import httpx
import psutil
import pytest

from runnerkit.testing import ServeProcess
from tests.service.stack import TINY_REPOSITORY

SERVICE = """
from pathlib import Path

import numpy as np

import runnerkit
from runnerkit import io

VERSION = "A"
tiny = runnerkit.triton.Runner("tiny", model_repository=Path(__file__).parent / "repo")
svc = runnerkit.Service("reloadable", runners=[tiny])


@svc.api(input=io.NumpyNdarray(dtype="float32"), output=io.JSON())
async def scale(x: np.ndarray) -> dict:
    return {"version": VERSION, "y": (await tiny.scale.async_run(x)).as_numpy("y").tolist()}
"""
ADDED_API = """

@svc.api(input=io.Text(), output=io.Text())
def added(text: str) -> str:
    return "added " + text
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A service file and its own copy of the tiny repository in a fresh directory."""
    shutil.copytree(TINY_REPOSITORY, tmp_path / "repo", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "reloadable.py").write_text(SERVICE)
    return tmp_path


def tree(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def named(processes: list[psutil.Process], name: str) -> list[psutil.Process]:
    return [p for p in processes if p.name() == name]


def test_reload_restarts_the_api_but_not_tritonserver(project: Path) -> None:
    served = ServeProcess("reloadable.py:svc", "--reload", cwd=project).start(timeout=120)
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            assert client.post("/scale", json=[1, 2]).json() == {"version": "A", "y": [2.0, 4.0]}
            assert client.post("/added", content=b"x").status_code == 404
            before = tree(served.pid)
            (triton,) = named(before, "tritonserver")
            workers = {p.pid for p in before if "spawn_main" in " ".join(p.cmdline())}
            assert workers, [p.cmdline() for p in before]

            source = project / "reloadable.py"
            source.write_text(source.read_text().replace('VERSION = "A"', 'VERSION = "B"') + ADDED_API)
            deadline = time.monotonic() + 90
            while True:
                try:
                    answer = client.post("/scale", json=[3])
                    if answer.status_code == 200 and answer.json()["version"] == "B":
                        break
                except httpx.TransportError:
                    pass  # the worker is restarting
                assert time.monotonic() < deadline, "the edit was not picked up"
                time.sleep(0.2)
            assert answer.json() == {"version": "B", "y": [6.0]}
            assert client.post("/added", content=b"x").text == "added x"

            after = tree(served.pid)
            assert [p.pid for p in named(after, "tritonserver")] == [triton.pid]
            assert triton.is_running()
            assert not workers & {p.pid for p in after}, "the API worker should have been replaced"
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("signum", "reload"), [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["sigint-reload", "sigterm"]
)
def test_signal_stops_everything(project: Path, signum: int, reload: bool) -> None:
    served = ServeProcess("reloadable.py:svc", *(["--reload"] if reload else []), cwd=project).start(
        timeout=120
    )
    try:
        assert httpx.post(f"{served.url}/scale", json=[1], timeout=30).status_code == 200
        processes = tree(served.pid)
        (triton,) = named(processes, "tritonserver")
        assert named(processes, "triton_python_backend_stub"), [p.name() for p in processes]
        shm_prefix = f"runnerkit_{served.pid}_"
        assert list(Path("/dev/shm").glob(shm_prefix + "*")), "the python backend's shared memory"

        served.send_signal(signum)
        assert served.wait(timeout=60) == 0
        gone, alive = psutil.wait_procs(processes, timeout=10)
        assert not alive, [(p.pid, p.name()) for p in alive]
        assert triton in gone
        assert not list(Path("/dev/shm").glob(shm_prefix + "*"))
        log = served.log_text()
        assert "Application shutdown complete" in log
        assert "Traceback" not in log, log[-3000:]
    finally:
        served.stop()
