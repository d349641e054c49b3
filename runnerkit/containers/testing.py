"""pytest fixtures for tests that build and run real container images (a pytest plugin).

Load it from the top-level ``tests/conftest.py``: ``pytest_plugins = ["runnerkit.containers.testing"]``.

Session-scoped fixtures:

- ``podman_engine``: :class:`PodmanEngine` on runnerkit's managed configuration (state directory
  ``$RUNNERKIT_CONTAINERS_DIR`` or ``$RUNNERKIT_HOME/containers``: images stay cached between runs
  on a machine that keeps it);
- ``cpu_base_image``: the tag of the CPU stand-in for the NGC tritonserver image, built once (the
  first build takes a minute or two; its log goes to ``test-artifacts/containers/``);
- ``debian_base_image``: the plain Debian minbase image under it (``/bin/sh``, apt, no Python);
- ``podman_api_service``: podman's Docker-compatible API socket for the session;
- ``docker_engine``: :class:`DockerEngine` talking to that socket.

A test using them is skipped, with the reason, only where podman cannot run at all: podman is
not installed and this is not root (root installs it with ``scripts/install-system-deps.sh``), or
rootless podman is not set up. As root with podman missing, or when podman fails as root, the
fixtures fail: the machine is expected to run them.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import pytest

from runnerkit.containers._base_image import (
    CpuBaseImage,
    ensure_cpu_base_image,
    ensure_debian_base_image,
)
from runnerkit.containers._docker import DockerEngine
from runnerkit.containers._podman import PodmanEngine
from runnerkit.containers._podman_service import PodmanApiService
from runnerkit.containers.errors import ContainerEngineUnavailableError

__all__ = [
    "cpu_base_image",
    "debian_base_image",
    "docker_engine",
    "podman_api_service",
    "podman_engine",
    "podman_unavailable_reason",
]

BASE_IMAGE_TIMEOUT_S = 1200.0


def _is_root() -> bool:
    return os.geteuid() == 0


def podman_unavailable_reason(podman: str = "podman") -> str | None:
    """Why podman cannot run here at all (a skip reason), or None when tests should run it."""
    if shutil.which(podman) is None:
        if _is_root():
            return None  # root can install it: the fixture fails with the install command
        return (
            "podman is not installed and this is not root (as root, "
            "`bash scripts/install-system-deps.sh` installs it)"
        )
    return None


def _timestamped(log: TextIO) -> Callable[[str], None]:
    started = time.monotonic()

    def write(line: str) -> None:
        print(f"{time.monotonic() - started:7.1f}s {line}", file=log, flush=True)

    return write


def _artifacts_dir(config: pytest.Config) -> Path:
    path = Path(config.rootpath) / "test-artifacts" / "containers"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def podman_engine() -> PodmanEngine:
    reason = podman_unavailable_reason()
    if reason:
        pytest.skip(reason)
    engine = PodmanEngine.managed()
    try:
        engine.ping()
    except ContainerEngineUnavailableError as exc:
        if _is_root():
            raise
        pytest.skip(f"rootless podman does not run here: {exc}")
    return engine


def _built_once(
    engine: PodmanEngine,
    pytestconfig: pytest.Config,
    tag: str,
    build: Callable[..., str],
    log_name: str,
) -> str:
    """`tag` if the engine has it, else built by `build` (root only), its log kept as an artifact."""
    if engine.image_exists(tag):
        return tag
    if not _is_root():
        pytest.skip(f"{tag} is missing and building it needs root (debootstrap)")
    with open(_artifacts_dir(pytestconfig) / log_name, "w") as log:
        return build(engine, spec=CpuBaseImage(), on_log=_timestamped(log), timeout=BASE_IMAGE_TIMEOUT_S)


@pytest.fixture(scope="session")
def cpu_base_image(podman_engine: PodmanEngine, pytestconfig: pytest.Config) -> str:
    """The CPU stand-in for ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3`` (built once, cached)."""
    return _built_once(
        podman_engine, pytestconfig, CpuBaseImage().tag, ensure_cpu_base_image, "base-image-build.log"
    )


@pytest.fixture(scope="session")
def debian_base_image(podman_engine: PodmanEngine, pytestconfig: pytest.Config) -> str:
    """Plain Debian bookworm minbase (``/bin/sh``, apt; no Python): for small test builds."""
    return _built_once(
        podman_engine,
        pytestconfig,
        CpuBaseImage().os_tag,
        ensure_debian_base_image,
        "debian-base-image-build.log",
    )


@pytest.fixture(scope="session")
def podman_api_service(podman_engine: PodmanEngine) -> Iterator[PodmanApiService]:
    with PodmanApiService(engine=podman_engine, start_timeout=60.0) as service:
        yield service


@pytest.fixture(scope="session")
def docker_engine(podman_api_service: PodmanApiService) -> Iterator[DockerEngine]:
    engine = podman_api_service.docker_engine()
    yield engine
    engine.close()
