"""Real image builds through both backends: the podman CLI, and the docker SDK over podman's socket."""

from __future__ import annotations

import socket
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runnerkit.containers import (
    ContainerBuildError,
    ContainerEngine,
    ContainerRunError,
    DockerEngine,
    PodmanEngine,
)

pytestmark = [pytest.mark.container, pytest.mark.timeout(1500)]  # first run builds base images


@pytest.fixture(params=["podman-cli", "docker-sdk-over-podman-socket"])
def engine(request: pytest.FixtureRequest) -> ContainerEngine:
    name = "podman_engine" if request.param == "podman-cli" else "docker_engine"
    value: ContainerEngine = request.getfixturevalue(name)
    return value


@pytest.fixture
def tag(engine: ContainerEngine) -> Iterator[str]:
    name = f"localhost/runnerkit-test-{uuid.uuid4().hex[:12]}:latest"
    yield name
    engine.remove_image(name, force=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_build_streams_logs_and_returns_the_image_id(
    engine: ContainerEngine, debian_base_image: str, tag: str, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex[:8]
    (tmp_path / "payload.txt").write_text(f"payload-{token}")
    (tmp_path / "Dockerfile").write_text(
        f"FROM {debian_base_image}\n"
        "ARG GREETING=unset\n"
        "COPY payload.txt /payload.txt\n"
        'RUN echo "first-$GREETING-$(cat /payload.txt)" && sleep 2 && echo "second-$GREETING"\n'
    )
    seen: list[tuple[float, str]] = []
    image_id = engine.build(
        tmp_path,
        "Dockerfile",
        tag,
        build_args={"GREETING": f"hi{token}"},
        on_log=lambda line: seen.append((time.monotonic(), line)),
        timeout=300,
    )
    finished = time.monotonic()
    assert image_id.startswith("sha256:") and len(image_id) == len("sha256:") + 64
    lines = [line for _, line in seen]
    first = next(t for t, line in seen if line == f"first-hi{token}-payload-{token}")
    second = next(t for t, line in seen if line == f"second-hi{token}")
    # streamed while the build ran, not handed over at the end
    assert second - first > 1.0, lines
    assert finished - first > 1.0, lines
    assert engine.image_exists(tag)
    result = engine.run(tag, ["cat", "/payload.txt"], timeout=60)
    assert result.ok and result.output.strip() == f"payload-{token}"
    assert engine.remove_image(tag) is True
    assert not engine.image_exists(tag)
    assert engine.remove_image(tag) is False


def test_failed_build_carries_the_last_log_lines(
    engine: ContainerEngine, debian_base_image: str, tag: str, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex[:8]
    (tmp_path / "Dockerfile").write_text(
        f"FROM {debian_base_image}\nRUN echo about-to-fail-{token} && exit 3\n"
    )
    with pytest.raises(ContainerBuildError) as info:
        engine.build(tmp_path, tag=tag, timeout=300)
    assert any(f"about-to-fail-{token}" in line for line in info.value.log_lines)
    assert f"about-to-fail-{token}" in str(info.value)
    assert info.value.tag == tag
    assert not engine.image_exists(tag)


def test_dockerfile_outside_the_context(
    engine: ContainerEngine, debian_base_image: str, tag: str, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    (context / "hello.txt").write_text("hello")
    dockerfile = tmp_path / "elsewhere.Dockerfile"
    dockerfile.write_text(f"FROM {debian_base_image}\nCOPY hello.txt /hello.txt\n")
    engine.build(context, dockerfile, tag, timeout=300)
    assert engine.run(tag, ["cat", "/hello.txt"], timeout=60).output.strip() == "hello"


def test_missing_dockerfile_is_reported_before_building(engine: ContainerEngine, tmp_path: Path) -> None:
    with pytest.raises(ContainerBuildError, match="does not exist"):
        engine.build(tmp_path, "Nope.Dockerfile", "localhost/never:built")


def test_one_shot_run_reports_exit_code_and_is_bounded(
    engine: ContainerEngine, debian_base_image: str
) -> None:
    result = engine.run(debian_base_image, ["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=60)
    assert result.exit_code == 7 and not result.ok
    assert "out" in result.output and "err" in result.output
    started = time.monotonic()
    with pytest.raises(ContainerRunError, match="ran past"):
        engine.run(debian_base_image, ["sleep", "60"], timeout=3)
    assert time.monotonic() - started < 40


def test_started_container_publishes_a_port(engine: ContainerEngine, cpu_base_image: str) -> None:
    port = _free_port()
    with engine.start(
        cpu_base_image, ["python3", "-m", "http.server", "8000"], ports={8000: port}
    ) as container:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            try:
                status = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).status
                break
            except OSError:
                time.sleep(0.25)
        assert status == 200, container.logs()
        assert container.is_running()
        assert container.host_port(8000) == port
        assert "GET / " in container.logs()
        container.stop(timeout=2)  # python as PID 1 ignores SIGTERM: don't wait the default 10 s
        assert not container.is_running()
    assert not container.is_running()  # a second stop (the with block's) is harmless


def test_podman_build_timeout_stops_the_build_and_its_processes(
    podman_engine: PodmanEngine, debian_base_image: str, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex[:8]
    (tmp_path / "Dockerfile").write_text(f"FROM {debian_base_image}\nRUN echo started-{token} && sleep 60\n")
    tag = f"localhost/runnerkit-test-timeout-{token}:latest"
    started = time.monotonic()
    with pytest.raises(ContainerBuildError, match="ran past 5"):
        podman_engine.build(tmp_path, tag=tag, timeout=5)
    assert time.monotonic() - started < 40
    leftovers = [
        p.name for p in Path("/proc").iterdir() if p.name.isdigit() and f"started-{token}" in _cmdline(p)
    ]
    assert leftovers == []
    assert not podman_engine.image_exists(tag)


def _cmdline(proc_dir: Path) -> str:
    try:
        return (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def test_docker_engine_follows_docker_host(
    podman_api_service: object, debian_base_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runnerkit.containers import PodmanApiService

    assert isinstance(podman_api_service, PodmanApiService)
    monkeypatch.setenv("DOCKER_HOST", podman_api_service.docker_host)
    engine = DockerEngine(timeout=60)
    try:
        assert engine.image_exists(debian_base_image)
        assert engine.address == podman_api_service.docker_host
    finally:
        engine.close()
