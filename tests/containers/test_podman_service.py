"""podman's Docker-compatible API socket as a managed subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runnerkit.containers import (
    ContainerError,
    PodmanApiService,
    PodmanEngine,
    ping_unix_socket,
)

pytestmark = [pytest.mark.container, pytest.mark.timeout(120)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_service_answers_and_leaves_nothing_behind(podman_engine: PodmanEngine) -> None:
    service = PodmanApiService(engine=podman_engine, start_timeout=60)
    with service:
        assert service.running
        assert service.socket_path is not None and ping_unix_socket(service.socket_path)
        assert service.docker_host == f"unix://{service.socket_path}"
        proc = service._proc
        assert proc is not None
        engine = service.docker_engine(timeout=30)
        engine.ping()
        engine.close()
        socket_path = service.socket_path
    assert not service.running
    assert proc.poll() is not None and not _alive(proc.pid)
    assert not socket_path.exists() and not socket_path.parent.exists()


def test_explicit_socket_path_and_no_second_service_on_it(
    podman_engine: PodmanEngine, tmp_path: Path
) -> None:
    path = tmp_path / "api.sock"
    with PodmanApiService(path, engine=podman_engine, start_timeout=60) as service:
        assert service.socket_path == path and ping_unix_socket(path)
        with pytest.raises(ContainerError, match="already answers"):
            PodmanApiService(path, engine=podman_engine).start()
        assert ping_unix_socket(path)
    assert not path.exists()


def test_socket_path_too_long(podman_engine: PodmanEngine, tmp_path: Path) -> None:
    path = tmp_path / ("x" * 120) / "api.sock"
    with pytest.raises(ContainerError, match="too long"):
        PodmanApiService(path, engine=podman_engine).start()
