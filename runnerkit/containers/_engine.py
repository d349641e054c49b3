"""The container-engine interface: build images, run containers, read their logs.

Two engines implement it: :class:`~runnerkit.containers.PodmanEngine` (the podman command line,
runnerkit/containers/_podman.py) and :class:`~runnerkit.containers.DockerEngine` (a Docker-compatible
API through the docker SDK, runnerkit/containers/_docker.py). Both build images (``build``), answer
whether an image exists (``image_exists``), remove one (``remove_image``), and run containers:
one-shot (``run``) or detached with published ports (``start``, which returns a
:class:`ContainerHandle`). An engine that cannot be reached raises
:class:`~runnerkit.containers.errors.ContainerEngineUnavailableError`; a failed build raises
:class:`~runnerkit.containers.errors.ContainerBuildError` with the last log lines.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs

from runnerkit.containers.errors import (
    ContainerBuildError,
)

LogCallback = Callable[[str], None]
PathLike = str | os.PathLike[str]

LOG_TAIL_LINES = 60


@attrs.frozen
class RunResult:
    """The outcome of a one-shot container run: exit code and combined stdout/stderr."""

    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class ContainerHandle(abc.ABC):
    """A detached container started by :meth:`ContainerEngine.start`.

    Use it as a context manager, or call :meth:`stop` (which also removes the container).
    """

    def __init__(self, container_id: str, *, image: str, ports: Mapping[int, int]) -> None:
        self.id = container_id
        self.image = image
        self.ports: dict[int, int] = dict(ports)

    @abc.abstractmethod
    def is_running(self) -> bool: ...

    @abc.abstractmethod
    def logs(self) -> str:
        """Everything the container printed so far (stdout and stderr)."""

    @abc.abstractmethod
    def stop(self, timeout: float = 10.0) -> None:
        """Stop (SIGTERM, then SIGKILL after ``timeout`` seconds) and remove the container."""

    def host_port(self, container_port: int) -> int:
        return self.ports[container_port]

    def __enter__(self) -> ContainerHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id[:12]} image={self.image!r} ports={self.ports}>"


class ContainerEngine(abc.ABC):
    """What runnerkit needs from a container engine, and nothing more."""

    name: ClassVar[str]

    @abc.abstractmethod
    def ping(self) -> None:
        """Check that the engine answers; raise ``ContainerEngineUnavailableError`` otherwise."""

    @abc.abstractmethod
    def build(
        self,
        context_dir: PathLike,
        dockerfile: PathLike | None = None,
        tag: str | None = None,
        build_args: Mapping[str, str] | None = None,
        platform: str | None = None,
        on_log: LogCallback | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> str:
        """Build an image from ``context_dir`` and return its id (``sha256:...``).

        ``dockerfile`` is relative to ``context_dir`` or absolute (default: ``Dockerfile`` in the
        context). Each log line is passed to ``on_log`` as it arrives. ``timeout`` bounds the
        whole build in seconds. Raises ``ContainerBuildError`` carrying the last log lines.
        """

    @abc.abstractmethod
    def image_exists(self, tag: str) -> bool: ...

    @abc.abstractmethod
    def remove_image(self, tag: str, *, force: bool = False) -> bool:
        """Remove an image; ``False`` when it did not exist."""

    @abc.abstractmethod
    def run(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        volumes: Mapping[PathLike, str] | None = None,
        timeout: float = 120.0,
    ) -> RunResult:
        """Run a container to completion (removed afterwards); raise on timeout.

        ``volumes`` maps host paths to container paths (mounted read-write).
        """

    @abc.abstractmethod
    def start(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        ports: Mapping[int, int] | None = None,
        env: Mapping[str, str] | None = None,
        volumes: Mapping[PathLike, str] | None = None,
        name: str | None = None,
    ) -> ContainerHandle:
        """Start a detached container; ``ports`` maps container port -> host port (127.0.0.1)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def normalize_id(image_id: str) -> str:
    image_id = image_id.strip()
    return image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"


def context_and_dockerfile(context_dir: PathLike, dockerfile: PathLike | None) -> tuple[Path, Path | None]:
    context = Path(context_dir).resolve()
    if not context.is_dir():
        raise ContainerBuildError(f"build context {context} is not a directory")
    if dockerfile is None:
        return context, None
    path = Path(dockerfile)
    path = path if path.is_absolute() else context / path
    if not path.is_file():
        raise ContainerBuildError(f"Dockerfile {path} does not exist")
    return context, path
