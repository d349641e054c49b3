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
        assert ready_models(http_port) == {"echo"}
        log = server.log_path.read_text()
        assert "restarting with the models that were loaded: echo, echo_b" in log
        assert "tritonserver did not come back" in log  # the first attempt, echo_b named
        assert "loading 'echo_b' again failed" in log  # the second, as first launched
        [restarted] = server.triton_pids()
        command = Path(f"/proc/{restarted}/cmdline").read_bytes().split(b"\0")
        assert b"--load-model=echo" in command and b"--load-model=echo_b" not in command
