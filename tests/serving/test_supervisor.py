"""The supervisor restarts a dead tritonserver with the models that were loaded named on its
command line, and falls back to the first launch's options when one of them no longer loads."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from tests.triton.conftest import make_repository

from .conftest import production_server, triton_ports, wait_until

SERVICE = """
import os

import runnerkit

runner = runnerkit.triton.Runner(
    "echoes",
    model_repository=os.environ["ECHO_REPOSITORY"],
    cli_args=["--model-control-mode=explicit", "--load-model=echo"],
)
svc = runnerkit.Service("echoes", runners=[runner])
"""


def ready_models(http_port: int) -> set[str]:
    index = httpx.post(f"http://127.0.0.1:{http_port}/v2/repository/index", json={}, timeout=30)
    return {row["name"] for row in index.json() if row.get("state") == "READY"}


def test_a_model_that_no_longer_loads_does_not_keep_tritonserver_down(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "models", "echo")
    make_repository(tmp_path / "second", "echo")
    (tmp_path / "second" / "echo").rename(repository / "echo_b")
    config = repository / "echo_b" / "config.pbtxt"
    config.write_text(config.read_text().replace('name: "echo"', 'name: "echo_b"'))
    (tmp_path / "echoes.py").write_text(SERVICE)
    env = {"ECHO_REPOSITORY": str(repository)}
    args = ["--workers", "1", "--no-access-log"]
    with production_server("echoes.py:svc", args, tmp_path / "serve.log", env, cwd=tmp_path) as server:
        server.wait_ready()
        [triton] = server.triton_pids()
        http_port = triton_ports(triton)["http"]
        loaded = httpx.post(f"http://127.0.0.1:{http_port}/v2/repository/models/echo_b/load", timeout=60)
        assert loaded.status_code == 200, loaded.text
        wait_until(lambda: "models loaded: echo, echo_b" in server.log_path.read_text(), 30, "the note")

        config.write_text("this is not a model configuration")  # echo_b no longer loads
        os.kill(triton, signal.SIGKILL)
        wait_until(server.ready, 180, "/readyz after the restarts")
        # the second attempt started as first launched, then tries echo_b again
        wait_until(lambda: "loading 'echo_b' again failed" in server.log_path.read_text(), 60, "the retry")
        assert ready_models(http_port) == {"echo"}
        log = server.log_path.read_text()
        assert "restarting with the models that were loaded: echo, echo_b" in log
        assert "tritonserver did not come back" in log  # the first attempt, echo_b named
        [restarted] = server.triton_pids()
        command = Path(f"/proc/{restarted}/cmdline").read_bytes().split(b"\0")
        assert b"--load-model=echo" in command and b"--load-model=echo_b" not in command


TWO_RUNNERS = """
import os

import numpy as np

import runnerkit
from runnerkit import io

first = runnerkit.triton.Runner("first", model_repository=os.environ["FIRST_REPOSITORY"])
second = runnerkit.triton.Runner("second", model_repository=os.environ["SECOND_REPOSITORY"])
svc = runnerkit.Service("two", runners=[first, second])


@svc.api(input=io.JSON(), output=io.JSON())
async def both(values: list) -> dict:
    x = np.asarray(values, dtype=np.float32)
    a = await first.echo.async_run(x)
    b = await second.echo.async_run(x * 2)
    return {"first": a.as_numpy("y").tolist(), "second": b.as_numpy("y").tolist()}
"""


def test_two_runners_get_a_tritonserver_each_with_their_own_options_restarts_and_metrics(
    tmp_path: Path,
) -> None:
    env = {
        "FIRST_REPOSITORY": str(make_repository(tmp_path / "first", "echo", "arith")),
        "SECOND_REPOSITORY": str(make_repository(tmp_path / "second", "echo", "arith")),
    }
    (tmp_path / "two.py").write_text(TWO_RUNNERS)
    args = [
        "--workers", "2", "--no-access-log",
        "--triton-options", "model-control-mode=explicit",
        "--triton-options", "load-model=echo",
        "--triton-options", "second.load-model=*",  # this runner only: replaces load-model=echo
    ]  # fmt: skip
    with production_server("two.py:svc", args, tmp_path / "serve.log", env, cwd=tmp_path) as server:
        server.wait_ready()
        pids = server.triton_pids()
        assert len(pids) == 2
        by_repository = {}
        for pid in pids:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            [repository] = [a.split("=", 1)[1] for a in command if a.startswith("--model-repository=")]
            by_repository[Path(repository).name] = (pid, triton_ports(pid), command)
        (first, first_ports, first_command), (second, second_ports, second_command) = (
            by_repository["first"],
            by_repository["second"],
        )
        assert set(first_ports.values()).isdisjoint(second_ports.values())
        assert "--load-model=echo" in first_command and "--load-model=*" not in first_command
        assert "--load-model=*" in second_command and "--load-model=echo" not in second_command
        assert ready_models(first_ports["http"]) == {"echo"}
        assert ready_models(second_ports["http"]) == {"echo", "arith"}

        def call() -> httpx.Response:
            return httpx.post(f"{server.url}/both", json=[1.0, 2.5], timeout=30)

        assert call().json() == {"first": [1.0, 2.5], "second": [2.0, 5.0]}

        metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
        for runner in ("first", "second"):
            assert f'nv_inference_request_success{{runner="{runner}",model="echo"' in metrics

        os.kill(second, signal.SIGKILL)  # only that runner's server is restarted
        restarted = lambda: second not in server.triton_pids() and len(server.triton_pids()) == 2  # noqa: E731
        wait_until(restarted, 60, "a new tritonserver for runner 'second'")
        wait_until(server.ready, 120, "/readyz after the restart")
        assert first in server.triton_pids()
        # the worker that answered /readyz is ready; the other one reconnects within its backoff
        wait_until(lambda: call().status_code == 200, 10, "both API workers to reconnect")
        for _ in range(10):
            assert call().json() == {"first": [1.0, 2.5], "second": [2.0, 5.0]}
        assert "runner 'second': tritonserver is back" in server.log_path.read_text()
        assert "runner 'first': tritonserver (pid" not in server.log_path.read_text()
