"""An engine that cannot be reached fails with a clear error (no container engine needed)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from runnerkit.containers import (
    ContainerEngineUnavailableError,
    ContainerError,
    DockerEngine,
    PodmanEngine,
)
from runnerkit.exceptions import RunnerkitError


def test_docker_sdk_pointed_at_a_missing_socket(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "docker.sock"
    engine = DockerEngine(base_url=f"unix://{missing}", timeout=5)
    with pytest.raises(ContainerEngineUnavailableError) as info:
        engine.ping()
    message = str(info.value)
    assert message.startswith("docker engine unavailable")
    assert str(missing) in message
    assert "does not exist" in message
    assert "podman system service" in message and "DOCKER_HOST" in message
    assert isinstance(info.value, ContainerError) and isinstance(info.value, RunnerkitError)
    assert info.value.engine == "docker"


def test_docker_host_from_the_environment_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "docker.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{missing}")
    with pytest.raises(ContainerEngineUnavailableError) as info:
        DockerEngine(timeout=5).image_exists("anything")
    assert f"unix://{missing} (from DOCKER_HOST)" in str(info.value)


def test_docker_build_on_a_missing_socket_raises_unavailable(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    engine = DockerEngine(base_url=f"unix://{tmp_path / 'gone.sock'}", timeout=5)
    with pytest.raises(ContainerEngineUnavailableError):
        engine.build(tmp_path, tag="localhost/never:built")


def test_socket_file_with_nobody_listening(tmp_path: Path) -> None:
    path = tmp_path / "dead.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))  # the file exists; nothing listens once closed
    with pytest.raises(ContainerEngineUnavailableError) as info:
        DockerEngine(base_url=f"unix://{path}", timeout=5).ping()
    assert f"nothing answered on socket {path}" in str(info.value)


def test_podman_binary_missing(tmp_path: Path) -> None:
    engine = PodmanEngine(podman=str(tmp_path / "bin" / "podman"), env={})
    with pytest.raises(ContainerEngineUnavailableError) as info:
        engine.image_exists("anything")
    message = str(info.value)
    assert message.startswith("podman engine unavailable: the podman binary was not found")
    assert str(tmp_path / "bin" / "podman") in message
    assert "install-system-deps.sh" in message
