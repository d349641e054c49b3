"""tritonserver processes: start failures carry the log, unreachable servers name the URL, and
nothing is left running afterwards."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runnerkit.exceptions import TritonStartError, TritonUnavailableError
from runnerkit.triton import Runner, locate_tritonserver
from runnerkit.triton import _server as server_module
from runnerkit.triton._repository import ModelRepositoryError
from runnerkit.triton._server import TritonServerProcess
from tests.triton.conftest import alive, make_repository, process_group

FAILING_MODEL = """
class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("this model fails on purpose: 4711")

    def execute(self, requests):
        return []
"""
SLOW_MODEL = """
import time


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(120)

    def execute(self, requests):
        return []
"""


def python_model(repository: Path, name: str, source: str, backend: str = "python") -> None:
    folder = repository / name
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.py").write_text(source)
    (folder / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "{backend}"\nmax_batch_size: 0\n'
        'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
        'output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
    )


@pytest.fixture
def empty_repository(tmp_path: Path) -> Path:
    repository = tmp_path / "empty"
    repository.mkdir()
    return repository


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- cannot start ---------------------------------------------------------------------------------


def test_an_option_tritonserver_rejects_is_start_error_naming_it(empty_repository: Path) -> None:
    runner = Runner("bad_option", model_repository=empty_repository, cli_args=["--no-such-option=1"])
    started = time.monotonic()
    with pytest.raises(TritonStartError) as caught:
        runner.start_sync()
    assert time.monotonic() - started < 60
    assert caught.value.exit_code not in (None, 0)
    # tritonserver names the option first, then prints hundreds of lines of usage
    assert "unrecognized option '--no-such-option=1'" in caught.value.log_tail
    assert "unrecognized option '--no-such-option=1'" in str(caught.value)
    assert "usage text omitted" in str(caught.value)
    assert not runner.is_started
    assert runner._server is None


def test_a_model_that_fails_to_load_is_start_error_with_the_reason(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    python_model(repository, "broken", FAILING_MODEL)
    with pytest.raises(TritonStartError) as caught:
        Runner("broken_model", model_repository=repository).start_sync()
    assert "this model fails on purpose: 4711" in str(caught.value)
    assert "exited with code" in str(caught.value)


def test_a_config_naming_a_missing_backend_is_start_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repository = tmp_path / "models"
    python_model(repository, "needs_openvino", "", backend="openvino")
    runner = Runner("missing_backend", model_repository=repository)
    with caplog.at_level(logging.WARNING, logger="runnerkit.triton"):
        with pytest.raises(TritonStartError) as caught:
            runner.start_sync()
    assert "unable to find backend library for backend 'openvino'" in str(caught.value)
    # runnerkit said beforehand that it cannot stand in for that backend
    assert any("cannot stand in for" in r.getMessage() for r in caplog.records)


def test_an_unparsable_config_is_named_before_launching(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    (repository / "garbled" / "1").mkdir(parents=True)
    (repository / "garbled" / "config.pbtxt").write_text('name: "garbled"\nmax_batch_size: [oops\n')
    runner = Runner("garbled", model_repository=repository)
    with pytest.raises(ModelRepositoryError, match=r"garbled/config\.pbtxt: invalid model configuration"):
        runner.start_sync()
    assert runner._server is None


def test_not_ready_in_time_is_start_error_and_the_server_is_stopped(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    python_model(repository, "slow", SLOW_MODEL)
    process = TritonServerProcess(locate_tritonserver(), [str(repository)])
    process.start()
    assert process.pid is not None
    started = time.monotonic()
    with pytest.raises(TritonStartError, match=r"not ready within 3 s") as caught:
        process.wait_ready(timeout=3)
    assert time.monotonic() - started < 30
    assert "loading: slow:1" in caught.value.log_tail
    assert process.poll() is not None
    assert process_group(process.pid) == set()


def test_a_lost_port_race_is_retried_on_other_ports(
    empty_repository: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Another process takes the gRPC port between runnerkit choosing it and tritonserver binding
    # it: simulated by handing out a port that is already bound, once.
    real_free_ports = server_module.free_ports
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = int(squatter.getsockname()[1])
        handed_out: list[list[int]] = []

        def racy_free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
            ports = real_free_ports(count, host)
            if not handed_out:
                ports[0] = taken
            handed_out.append(ports)
            return ports

        monkeypatch.setattr(server_module, "free_ports", racy_free_ports)
        process = TritonServerProcess(locate_tritonserver(), [str(empty_repository)])
        try:
            process.start()
            with caplog.at_level(logging.INFO, logger="runnerkit.tritonserver"):
                process.wait_ready(timeout=120)
            assert process.addresses is not None
            assert process.addresses.grpc_port != taken
            assert process.is_ready()
            assert len(handed_out) == 2
            assert any("lost a port race" in r.getMessage() for r in caplog.records)
        finally:
            process.stop()


# -- cannot be reached ----------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_an_unreachable_url_is_unavailable_error_naming_it(closed_port: int, protocol: str) -> None:
    url = f"127.0.0.1:{closed_port}"
    runner = Runner("unreachable", url=url, tritonserver_type=protocol, startup_timeout=2)
    started = time.monotonic()
    with pytest.raises(TritonUnavailableError) as caught:
        runner.start_sync()
    assert time.monotonic() - started < 20
    assert caught.value.url == url
    assert url in str(caught.value)
    assert f"({protocol})" in str(caught.value)
    assert not runner.is_started


def test_an_unreachable_url_fails_async_start_too(closed_port: int) -> None:
    import asyncio

    url = f"127.0.0.1:{closed_port}"

    async def start() -> None:
        async with Runner("unreachable_async", url=url, startup_timeout=1):
            pass

    with pytest.raises(TritonUnavailableError, match=url):
        asyncio.run(start())


# -- stopping -------------------------------------------------------------------------------------


@pytest.fixture
def echo_server(tmp_path: Path) -> Iterator[TritonServerProcess]:
    process = TritonServerProcess(locate_tritonserver(), [str(make_repository(tmp_path / "m", "echo"))])
    try:
        process.start()
        process.wait_ready(timeout=120)
        yield process
    finally:
        process.stop()


def test_stop_ends_the_server_and_its_python_stubs(echo_server: TritonServerProcess) -> None:
    pid = echo_server.pid
    assert pid is not None
    members = process_group(pid)
    # tritonserver leads its own process group, with the python backend's stub in it
    assert pid in members and len(members) >= 2
    shm_prefix = echo_server._shm_prefix
    assert list(Path("/dev/shm").glob(shm_prefix + "*"))
    echo_server.stop()
    assert alive(members) == set()
    assert not list(Path("/dev/shm").glob(shm_prefix + "*"))
    assert echo_server.poll() is not None


def test_kill_leaves_nothing_either(echo_server: TritonServerProcess) -> None:
    assert echo_server.pid is not None
    members = process_group(echo_server.pid)
    echo_server.kill()
    assert alive(members) == set()


def test_the_server_listens_on_loopback_only(echo_server: TritonServerProcess) -> None:
    assert echo_server.addresses is not None
    assert echo_server.addresses.host == "127.0.0.1"
    command = " ".join(echo_server.command(echo_server.addresses))
    for option in ("grpc-address", "http-address", "metrics-address"):
        assert f"--{option}=127.0.0.1" in command
    listening = Path("/proc/net/tcp").read_text().splitlines()[1:]
    ports = {echo_server.addresses.grpc_port, echo_server.addresses.http_port}
    for line in listening:
        local, state = line.split()[1], line.split()[3]
        host_hex, port_hex = local.split(":")
        if state == "0A" and int(port_hex, 16) in ports:  # LISTEN
            assert host_hex == "0100007F"  # 127.0.0.1


def test_log_tail_holds_the_servers_output(echo_server: TritonServerProcess) -> None:
    tail = echo_server.log_tail(400)
    assert "successfully loaded 'echo'" in tail
    assert len(tail.splitlines()) <= 400
    assert len(echo_server.log_tail(5).splitlines()) == 5
