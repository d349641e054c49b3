"""Start-up and shutdown of `runnerkit serve --production`: triton options, failures, SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from runnerkit.cli import main

from .conftest import (
    EXAMPLE,
    PNG,
    REPO_ROOT,
    RUNNERKIT,
    SLOW_SERVICE,
    ProductionServer,
    Sample,
    alive,
    free_port,
    production_server,
    session_members,
    triton_ports,
    wait_until,
)

SLOW_SECONDS = 6.0
IN_FLIGHT = 6


# -- settings refused before anything is launched ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--workers", "0"], {}, "--workers is 0: expected a whole number of API workers, 1 or more"),
        ([], {"RUNNERKIT_WORKERS": "", "WORKER_COUNT": "many"}, "$WORKER_COUNT is 'many'"),
        (["--triton-options", "nosuch.load-model=x"], {}, "no runner named 'nosuch' launches a tritonserver"),
        (["--triton-options", "model control"], {}, "expected 'key=value'"),
        (["--reload"], {}, "--reload is for development"),
    ],
)
def test_bad_settings_are_refused_with_what_was_wrong(
    argv: list[str],
    env: dict[str, str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(REPO_ROOT)
    assert main(["serve", EXAMPLE, "--production", "--port", str(free_port()), *argv]) == 1
    assert message in capsys.readouterr().err


def test_production_flags_need_production(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", EXAMPLE, "--workers", "2", "--triton-options", "load-model=x"]) == 1
    assert "--workers, --triton-options only apply with --production" in capsys.readouterr().err


def test_a_taken_port_is_refused_before_tritonserver_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["serve", str(REPO_ROOT / EXAMPLE), "--production", "--host", "127.0.0.1", "--port", str(port)]
        code = main(argv)
    assert code == 1
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in capsys.readouterr().err


# -- an option tritonserver rejects ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("model-control-mode=bogus", "invalid argument for --model-control-mode"),
        ("--no-such-option=1", "unrecognized option '--no-such-option=1'"),
    ],
)
def test_an_option_tritonserver_rejects_stops_start_up(option: str, message: str) -> None:
    port = free_port()
    command = [RUNNERKIT, "serve", EXAMPLE, "--production", "--port", str(port), f"--triton-options={option}"]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    text = output.decode(errors="replace")
    assert process.returncode == 1, text
    error = text[text.index("runnerkit: error:") :]
    assert message in error  # tritonserver's own words
    assert option in error  # and what it was given
    assert "--help" not in error  # not its 400 lines of usage
    assert "serving 'digits'" not in text  # no API worker was started
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/livez", timeout=5)
    assert session_members({process.pid}) == set()


# -- explicit model control, then SIGTERM with requests in flight ----------------------------------


@pytest.fixture(scope="module")
def marker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("in-flight")


@pytest.fixture(scope="module")
def explicit_server(tmp_path_factory: pytest.TempPathFactory, marker_dir: Path) -> Iterator[ProductionServer]:
    """The example's APIs (plus a slow one) with only digits_onnx loaded. The last test stops it."""
    log = tmp_path_factory.mktemp("explicit") / "serve.log"
    args = [
        "--workers", "2",
        "--grace-period", "30",
        "--triton-options", "model-control-mode=explicit",
        "--triton-options", "--load-model=digits_onnx",  # the --key=value form, as its own word
        "--triton-options", "triton_runner.grpc-port=8001",  # owned by runnerkit: ignored, said so
    ]  # fmt: skip
    env = {"SLOW_MARKER_DIR": str(marker_dir), "SLOW_SECONDS": str(SLOW_SECONDS)}
    with production_server(SLOW_SERVICE, args, log, env) as server:
        server.wait_ready()
        yield server


def test_explicit_mode_loads_only_the_models_asked_for(
    explicit_server: ProductionServer, samples: Sequence[Sample]
) -> None:
    [triton] = explicit_server.triton_pids()
    http_port = triton_ports(triton)["http"]
    index = httpx.post(f"http://127.0.0.1:{http_port}/v2/repository/index", json={}, timeout=30)
    assert index.status_code == 200, index.text
    ready = {row["name"] for row in index.json() if row.get("state") == "READY"}
    listed = {row["name"] for row in index.json()}
    assert ready == {"digits_onnx"}
    assert {"digits_torchscript", "digits_pipeline"} <= listed  # in the repository, not loaded
    for sample in samples:
        response = httpx.post(
            f"{explicit_server.url}/classify",
            content=sample.png,
            headers={"Content-Type": "image/png"},
            timeout=30,
        )
        assert response.status_code == 200 and response.json()["label"] == sample.label
    log = explicit_server.log_path.read_text()
    assert "ignoring --triton-options 'triton_runner.grpc-port=8001': runnerkit binds" in log


def _ready_models(http_port: int) -> set[str]:
    index = httpx.post(f"http://127.0.0.1:{http_port}/v2/repository/index", json={}, timeout=30)
    return {row["name"] for row in index.json() if row.get("state") == "READY"}


def test_models_loaded_at_run_time_are_loaded_again_after_tritonserver_dies(
    explicit_server: ProductionServer, samples: Sequence[Sample]
) -> None:
    server = explicit_server
    [triton] = server.triton_pids()
    http_port = triton_ports(triton)["http"]
    triton_url = f"http://127.0.0.1:{http_port}"
    loaded = httpx.post(f"{triton_url}/v2/repository/models/digits_postprocess/load", timeout=120)
    assert loaded.status_code == 200, loaded.text
    noted = "models loaded: digits_onnx, digits_postprocess"
    wait_until(lambda: noted in server.log_path.read_text(), 30, "the supervisor to note the load")

    os.kill(triton, signal.SIGKILL)
    wait_until(lambda: [p for p in server.triton_pids() if p != triton], 60, "a new tritonserver")
    [restarted] = server.triton_pids()
    command = Path(f"/proc/{restarted}/cmdline").read_bytes().split(b"\0")
    assert b"--load-model=digits_postprocess" in command and b"--load-model=digits_onnx" in command
    # the models are loaded before the server answers: /readyz says ready only once they are
    wait_until(server.ready, 180, "/readyz")
    assert _ready_models(http_port) == {"digits_onnx", "digits_postprocess"}
    log = server.log_path.read_text()
    assert "restarting with the models that were loaded: digits_onnx, digits_postprocess" in log
    response = httpx.post(f"{server.url}/classify", content=samples[3].png, headers=PNG, timeout=30)
    assert response.status_code == 200 and response.json()["label"] == samples[3].label


def _refused(url: str) -> bool:
    try:
        httpx.get(f"{url}/livez", timeout=2)
    except httpx.ConnectError:
        return True
    except httpx.HTTPError:
        return False
    return False


def test_sigterm_lets_requests_in_flight_finish_then_nothing_is_left(
    explicit_server: ProductionServer, samples: Sequence[Sample], marker_dir: Path
) -> None:
    server = explicit_server
    tree = server.tree()
    [triton] = server.triton_pids()
    assert len(server.worker_pids()) == 2 and triton in tree
    assert any(p != triton and Path(f"/proc/{p}/comm").read_text().startswith("triton_python") for p in tree)
    answers: dict[int, tuple[int, int] | str] = {}

    def slow(i: int) -> None:
        sample = samples[i % len(samples)]
        try:
            with httpx.Client(timeout=60) as client:
                response = client.post(
                    f"{server.url}/slow_classify", content=sample.png, headers={"Content-Type": "image/png"}
                )
            answers[i] = (response.status_code, response.json().get("label", -1) - sample.label)
        except Exception as exc:
            answers[i] = f"{type(exc).__name__}: {exc}"

    for old in marker_dir.iterdir():
        old.unlink()
    threads = [threading.Thread(target=slow, args=(i,)) for i in range(IN_FLIGHT)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(list(marker_dir.iterdir())) == IN_FLIGHT, 60, "the slow requests to arrive")
    signalled = time.monotonic()
    os.kill(server.pid, 15)

    # It stops accepting at once, while the requests in flight are still being answered.
    wait_until(lambda: _refused(server.url), 10, "new connections to be refused")
    assert time.monotonic() - signalled < SLOW_SECONDS and len(answers) < IN_FLIGHT
    for thread in threads:
        thread.join(timeout=60)
    assert answers == {i: (200, 0) for i in range(IN_FLIGHT)}  # each completed, and right

    assert server.process.wait(timeout=60) == 0
    tree |= server.seen
    wait_until(lambda: not any(alive(p) for p in tree), 10, "every process of the tree to end")
    assert session_members({server.pid, triton}) == set()  # no tritonserver, stub or worker anywhere
    log = server.log_path.read_text()
    assert "Signal (15) received" in log  # tritonserver was stopped, after the workers
    assert log.rindex("Finished server process") < log.rindex("Signal (15) received")


# -- the supervisor interrupted or killed -----------------------------------------------------------

FAST = ["--triton-options=model-control-mode=explicit", "--triton-options=load-model=digits_onnx"]


def test_sigterm_during_start_up_stops_tritonserver_too(tmp_path: Path) -> None:
    with production_server(EXAMPLE, ["--workers", "1", *FAST], tmp_path / "serve.log") as server:
        wait_until(server.triton_pids, 120, "tritonserver to be launched")
        tree = server.tree()
        [triton] = server.triton_pids()
        os.kill(server.pid, signal.SIGTERM)
        assert server.process.wait(timeout=60) == 130  # interrupted: nothing was served
        wait_until(lambda: not any(alive(p) for p in tree | server.seen), 30, "every process to end")
        assert session_members({server.pid, triton}) == set()
        assert "serving 'digits'" not in server.log_path.read_text()


def test_a_killed_supervisor_takes_its_workers_and_tritonserver_along(tmp_path: Path) -> None:
    # A process killed outright cannot remove its private folders (metrics, shadow repository):
    # the next runnerkit process does. TMPDIR keeps this test's apart.
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"TMPDIR": str(temp)}
    with production_server(EXAMPLE, ["--workers", "2", *FAST], tmp_path / "serve.log", env) as server:
        server.wait_ready()
        tree = server.tree()
        [triton] = server.triton_pids()
        assert len(server.worker_pids()) == 2
        left = sorted(p.name for p in temp.glob("runnerkit-*"))
        assert [n.split(".pid")[0] for n in left] == ["runnerkit-metrics", "runnerkit-triton_runner"]
        os.kill(server.pid, signal.SIGKILL)
        # The workers and tritonserver get SIGTERM from the kernel when their parent dies.
        wait_until(lambda: not any(alive(p) for p in tree), 60, "every process to end")
        assert session_members({server.pid, triton}) == set()
    assert sorted(p.name for p in temp.glob("runnerkit-*")) == left
    # the next start sweeps what the killed one left, and only that
    (temp / "runnerkit-other.pid1-keep").mkdir()  # pid 1 is alive: not an orphan
    with production_server(EXAMPLE, ["--workers", "1", *FAST], tmp_path / "again.log", env) as again:
        again.wait_ready()
        names = {p.name for p in temp.iterdir()}
        assert not names & set(left)
        assert "runnerkit-other.pid1-keep" in names
        assert "left by runnerkit processes that were killed" in again.log_path.read_text()
