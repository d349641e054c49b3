"""A narrow container-engine interface with two backends.

- :class:`DockerEngine` talks to a Docker-compatible API with the ``docker`` Python SDK
  (``docker.from_env()`` by default, so ``DOCKER_HOST`` works; podman's API socket works too).
- :class:`PodmanEngine` runs the ``podman`` command line, streaming its output line by line.

Both build images (``build``), answer whether an image exists (``image_exists``), remove one
(``remove_image``), and run containers: one-shot (``run``) or detached with published ports
(``start``, which returns a :class:`ContainerHandle`). An engine that cannot be reached raises
:class:`~runnerkit.containers.errors.ContainerEngineUnavailableError`; a failed build raises
:class:`~runnerkit.containers.errors.ContainerBuildError` with the last log lines.
"""

from __future__ import annotations

import abc
import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs

from runnerkit.containers._podman_env import (
    PodmanConfigMode,
    PodmanSettings,
    podman_environment,
)
from runnerkit.containers.errors import (
    ContainerBuildError,
    ContainerEngineUnavailableError,
    ContainerError,
    ContainerRunError,
)

__all__ = [
    "ContainerEngine",
    "ContainerHandle",
    "DockerEngine",
    "LogCallback",
    "PodmanEngine",
    "RunResult",
]

LogCallback = Callable[[str], None]
PathLike = str | os.PathLike[str]

LOG_TAIL_LINES = 60
PODMAN_SOCKET_HINT = (
    "start podman's Docker-compatible API and point DOCKER_HOST at it: "
    "`podman system service --time=0 unix:///run/podman/podman.sock &` then "
    "`export DOCKER_HOST=unix:///run/podman/podman.sock` "
    "(runnerkit.containers.PodmanApiService does this for you); or start the Docker daemon; "
    "or use runnerkit.containers.PodmanEngine"
)
PODMAN_INSTALL_HINT = (
    "install podman (Debian/Ubuntu, as root: `bash scripts/install-system-deps.sh`, or "
    "`apt-get install -y podman buildah runc fuse-overlayfs uidmap slirp4netns`), "
    "or pass podman='/path/to/podman'"
)


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


class _LineBuffer:
    """Splits a stream of text chunks into lines, reports each, keeps the last ones."""

    def __init__(self, on_log: LogCallback | None, keep: int = LOG_TAIL_LINES) -> None:
        self._on_log = on_log
        self._partial = ""
        self.tail: collections.deque[str] = collections.deque(maxlen=keep)

    def feed(self, text: str) -> None:
        text = self._partial + text.replace("\r\n", "\n")
        *lines, self._partial = text.split("\n")
        for line in lines:
            self.line(line)

    def line(self, line: str) -> None:
        line = line.rstrip("\r\n")
        self.tail.append(line)
        if self._on_log is not None:
            self._on_log(line)

    def flush(self) -> None:
        if self._partial:
            partial, self._partial = self._partial, ""
            self.line(partial)


def _normalize_id(image_id: str) -> str:
    image_id = image_id.strip()
    return image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"


def _context_and_dockerfile(context_dir: PathLike, dockerfile: PathLike | None) -> tuple[Path, Path | None]:
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


# --------------------------------------------------------------------------------------------
# podman (command line)
# --------------------------------------------------------------------------------------------


class _PodmanHandle(ContainerHandle):
    def __init__(
        self, engine: PodmanEngine, container_id: str, *, image: str, ports: Mapping[int, int]
    ) -> None:
        super().__init__(container_id, image=image, ports=ports)
        self._engine = engine

    def is_running(self) -> bool:
        proc = self._engine._podman(
            ["inspect", "--format", "{{.State.Running}}", self.id], check=False, timeout=30
        )
        return proc.returncode == 0 and proc.stdout.strip() == "true"

    def logs(self) -> str:
        proc = self._engine._podman(["logs", self.id], check=False, timeout=30, merge=True)
        return proc.stdout

    def stop(self, timeout: float = 10.0) -> None:
        self._engine._podman(
            ["rm", "--force", "--time", str(round(timeout)), self.id],
            check=False,
            timeout=timeout + 30,
        )


class PodmanEngine(ContainerEngine):
    """The podman command line, run as a subprocess.

    ``config`` chooses the podman configuration (see ``runnerkit.containers._podman_env``):
    ``"auto"`` (the user's own when there is one, else runnerkit's managed one under
    ``$RUNNERKIT_HOME/containers``), ``"managed"`` or ``"user"``. ``settings`` customises the
    managed configuration (state directory, storage driver). ``env`` replaces the computed
    overrides entirely (used as-is on top of ``os.environ``).
    """

    name = "podman"

    def __init__(
        self,
        *,
        podman: str = "podman",
        config: PodmanConfigMode = "auto",
        settings: PodmanSettings | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.podman = podman
        self.env_overrides: dict[str, str] = (
            dict(env) if env is not None else podman_environment(config, settings)
        )
        self._ready = False
        self._cgroup_manager = ""
        self._graph_driver = ""
        self._graph_root: Path | None = None

    @classmethod
    def managed(cls, state_dir: PathLike | None = None, **kwargs: Any) -> PodmanEngine:
        """An engine on runnerkit's managed configuration (default state directory if None)."""
        settings = PodmanSettings() if state_dir is None else PodmanSettings(Path(state_dir))
        return cls(config="managed", settings=settings, **kwargs)

    def __repr__(self) -> str:
        conf = self.env_overrides.get("CONTAINERS_STORAGE_CONF", "user configuration")
        return f"<PodmanEngine {self.podman} ({conf})>"

    # -- plumbing --------------------------------------------------------------------------

    def full_env(self) -> dict[str, str]:
        """The environment podman processes run with (``os.environ`` plus the overrides)."""
        return {**os.environ, **self.env_overrides}

    def _binary(self) -> str:
        found = shutil.which(self.podman)
        if found is None:
            raise ContainerEngineUnavailableError(
                "podman",
                "the podman binary was not found",
                tried=f"{self.podman!r} on PATH={os.environ.get('PATH', '')}",
                hint=PODMAN_INSTALL_HINT,
            )
        return found

    def _podman(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        timeout: float = 120.0,
        merge: bool = False,
        input_text: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self._binary(), *args]
        try:
            proc = subprocess.run(
                cmd,
                env=self.full_env(),
                input=input_text,
                stdin=None if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                text=True,
                errors="replace",
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise ContainerError(f"`podman {' '.join(args)}` took longer than {timeout}s") from exc
        if check and proc.returncode != 0:
            raise ContainerError(
                f"`podman {' '.join(args)}` failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
            )
        return proc

    def ping(self) -> None:
        if self._ready:
            return
        binary = self._binary()
        try:
            proc = self._podman(
                [
                    "info",
                    "--format",
                    "{{.Host.CgroupManager}}|{{.Store.GraphDriverName}}|{{.Store.GraphRoot}}",
                ],
                check=False,
                timeout=60,
            )
        except ContainerError as exc:
            raise ContainerEngineUnavailableError(
                "podman", str(exc), tried=f"{binary} info", hint=PODMAN_INSTALL_HINT
            ) from exc
        if proc.returncode != 0:
            config = self.env_overrides or {"configuration": "the user's own"}
            raise ContainerEngineUnavailableError(
                "podman",
                f"`podman info` failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}",
                tried=f"{binary} info with {config}",
                hint=(
                    "run as root, or set up rootless podman (uidmap, /etc/subuid); on hosts "
                    "where crun or the default ulimits fail use runnerkit's managed "
                    "configuration: PodmanEngine.managed()"
                ),
            )
        self._cgroup_manager, self._graph_driver, graph_root = (
            [*proc.stdout.strip().split("|", 2), "", "", ""]
        )[:3]
        self._graph_root = Path(graph_root) if graph_root else None
        self._ready = True

    def _stream(
        self,
        args: Sequence[str],
        sink: _LineBuffer,
        timeout: float | None,
        on_timeout: Callable[[], object] | None = None,
    ) -> tuple[int, bool]:
        """Run podman, feeding merged stdout/stderr to ``sink``; return (exit code, timed out)."""
        return stream_process(
            [self._binary(), *args], sink, timeout, env=self.full_env(), on_timeout=on_timeout
        )

    # -- operations ------------------------------------------------------------------------

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
        context, dockerfile_path = _context_and_dockerfile(context_dir, dockerfile)
        self.ping()
        with tempfile.TemporaryDirectory(prefix="runnerkit-build-") as tmp:
            iidfile = Path(tmp) / "iid"
            args = ["build", "--layers", "--iidfile", str(iidfile)]
            if dockerfile_path is not None:
                args += ["--file", str(dockerfile_path)]
            if tag:
                args += ["--tag", tag]
            for key, value in (build_args or {}).items():
                args += ["--build-arg", f"{key}={value}"]
            for key, value in (labels or {}).items():
                args += ["--label", f"{key}={value}"]
            if platform:
                args += ["--platform", platform]
            # a cgroup of our own lets a timed-out build's RUN processes be found and killed
            cgroup_token = f"runnerkit-build-{uuid.uuid4().hex[:16]}"
            if self._cgroup_manager == "cgroupfs":
                args.append(f"--cgroup-parent=/{cgroup_token}")
            args.append(str(context))
            sink = _LineBuffer(on_log)
            code, timed_out = self._stream(args, sink, timeout)
            if timed_out:
                self._cleanup_killed_build(cgroup_token)
                raise ContainerBuildError(
                    f"podman build of {tag or context} ran past {timeout}s and was stopped",
                    tag=tag,
                    log_lines=sink.tail,
                    exit_code=code,
                )
            if code != 0 or not iidfile.is_file():
                raise ContainerBuildError(
                    f"podman build of {tag or context} failed (exit {code})",
                    tag=tag,
                    log_lines=sink.tail,
                    exit_code=code,
                )
            return _normalize_id(iidfile.read_text())

    def _cleanup_killed_build(self, cgroup_token: str) -> None:
        """Kill what a killed ``podman build`` left running, remove its working container.

        podman does not clean up after a signal: the RUN step's processes keep running
        (reparented to init) and buildah's working container stays in storage. Best effort: the
        processes are found by the build's own cgroup, the container by their root layer.
        """
        pids = _pids_in_cgroup(cgroup_token)
        layers = {layer for layer in map(_overlay_upper_layer, pids) if layer}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
            time.sleep(0.1)
        for folder in [
            *Path("/sys/fs/cgroup").glob(f"*/{cgroup_token}"),
            Path("/sys/fs/cgroup", cgroup_token),
        ]:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if not layers or self._graph_root is None:
            return
        index = self._graph_root / f"{self._graph_driver}-containers" / "containers.json"
        try:
            containers = json.loads(index.read_text())
        except (OSError, ValueError):
            return
        for container in containers:
            if isinstance(container, dict) and container.get("layer") in layers:
                self._podman(["rm", "--force", str(container["id"])], check=False, timeout=60)

    def image_exists(self, tag: str) -> bool:
        self.ping()
        proc = self._podman(["image", "exists", tag], check=False, timeout=60)
        if proc.returncode not in (0, 1):
            raise ContainerError(f"`podman image exists {tag}` failed: {proc.stderr.strip()}")
        return proc.returncode == 0

    def image_id(self, tag: str) -> str:
        self.ping()
        proc = self._podman(["image", "inspect", "--format", "{{.Id}}", tag], timeout=60)
        return _normalize_id(proc.stdout.splitlines()[0])

    def remove_image(self, tag: str, *, force: bool = False) -> bool:
        if not self.image_exists(tag):
            return False
        self._podman(["rmi", *(["--force"] if force else []), tag], timeout=120)
        return True

    def tag_image(self, source: str, target: str) -> None:
        self.ping()
        self._podman(["tag", source, target], timeout=60)

    def _run_args(
        self,
        env: Mapping[str, str] | None,
        volumes: Mapping[PathLike, str] | None,
    ) -> list[str]:
        args: list[str] = []
        for key, value in (env or {}).items():
            args += ["--env", f"{key}={value}"]
        for host, target in (volumes or {}).items():
            args += ["--volume", f"{Path(host).resolve()}:{target}"]
        return args

    def run(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        volumes: Mapping[PathLike, str] | None = None,
        timeout: float = 120.0,
    ) -> RunResult:
        self.ping()
        name = f"runnerkit-run-{uuid.uuid4().hex[:12]}"

        def remove(grace: int) -> None:
            self._podman(["rm", "--force", "--ignore", "--time", str(grace), name], check=False, timeout=60)

        args = ["run", "--rm", "--name", name, *self._run_args(env, volumes), image]
        sink = _LineBuffer(None, keep=100_000)
        try:
            code, timed_out = self._stream(
                [*args, *(command or [])], sink, timeout, on_timeout=lambda: remove(0)
            )
        finally:
            remove(10)  # a podman run that was killed (or interrupted) leaves its container
        if timed_out:
            raise ContainerRunError(
                f"container from {image} ran past {timeout}s and was stopped",
                log_lines=list(sink.tail)[-LOG_TAIL_LINES:],
            )
        return RunResult(exit_code=code, output="\n".join(sink.tail))

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
        self.ping()
        args = ["run", "--detach", *self._run_args(env, volumes)]
        if name:
            args += ["--name", name]
        for container_port, host_port in (ports or {}).items():
            args += ["--publish", f"127.0.0.1:{host_port}:{container_port}"]
        proc = self._podman([*args, image, *(command or [])], check=False, timeout=120)
        if proc.returncode != 0:
            raise ContainerRunError(
                f"podman could not start a container from {image} (exit {proc.returncode})",
                log_lines=(proc.stderr + proc.stdout).strip().splitlines()[-LOG_TAIL_LINES:],
                exit_code=proc.returncode,
            )
        container_id = proc.stdout.strip().splitlines()[-1]
        return _PodmanHandle(self, container_id, image=image, ports=ports or {})


def stream_process(
    cmd: Sequence[str],
    sink: _LineBuffer,
    timeout: float | None,
    *,
    env: Mapping[str, str] | None = None,
    on_timeout: Callable[[], object] | None = None,
) -> tuple[int, bool]:
    """Run ``cmd`` in its own session, feeding each output line (stdout and stderr) to ``sink``.

    Returns (exit code, timed out). Past ``timeout`` seconds ``on_timeout`` runs (if given),
    then the process group gets SIGTERM, then SIGKILL; an exception in the caller (e.g.
    KeyboardInterrupt) also ends it.
    """
    proc = subprocess.Popen(
        list(cmd),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
    )
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        if on_timeout is not None:
            with contextlib.suppress(Exception):
                on_timeout()
        _terminate_group(proc)

    timer = threading.Timer(timeout, kill) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            sink.line(line)
        code = proc.wait()
    except BaseException:
        _terminate_group(proc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
    return code, timed_out.is_set()


def _pids_in_cgroup(token: str) -> list[int]:
    """Processes whose cgroup path (any hierarchy) contains ``/token``."""
    pids: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "cgroup").read_text()
        except OSError:
            continue
        if f"/{token}" in text:
            pids.append(int(entry.name))
    return pids


def _overlay_upper_layer(pid: int) -> str | None:
    """The containers/storage layer id of an overlay-mounted process root (``.../<id>/diff``)."""
    try:
        lines = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[4] == "/" and "upperdir=" in line:
            upper = line.split("upperdir=", 1)[1].split(",", 1)[0]
            path = Path(upper)
            return path.parent.name if path.name == "diff" else None
    return None


def _terminate_group(proc: subprocess.Popen[str], grace: float = 10.0) -> None:
    """SIGTERM the process group of ``proc`` (started with a new session), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(grace)


# --------------------------------------------------------------------------------------------
# Docker-compatible API (docker SDK)
# --------------------------------------------------------------------------------------------


class _DockerHandle(ContainerHandle):
    def __init__(self, container: Any, *, image: str, ports: Mapping[int, int]) -> None:
        super().__init__(container.id, image=image, ports=ports)
        self._container = container

    def is_running(self) -> bool:
        import docker.errors

        try:
            self._container.reload()
        except docker.errors.NotFound:
            return False
        return bool(self._container.status == "running")

    def logs(self) -> str:
        data: bytes = self._container.logs(stdout=True, stderr=True)
        return data.decode("utf-8", "replace")

    def stop(self, timeout: float = 10.0) -> None:
        import docker.errors

        try:
            self._container.stop(timeout=round(timeout))
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            pass
        try:
            self._container.remove(force=True)
        except docker.errors.NotFound:
            pass


def _docker_build_source(context: Path, dockerfile: Path | None) -> dict[str, Any]:
    """``APIClient.build`` arguments for a context folder and a Dockerfile.

    A Dockerfile outside the context is added to the context tar under a generated name. (The
    SDK does this itself but then sends ``dockerfile`` twice in the query, name and content;
    Docker reads the first, podman's compat API the last and fails with ``stat ...``.)
    """
    if dockerfile is None:
        return {"path": str(context)}
    if dockerfile.resolve().is_relative_to(context):
        return {"path": str(context), "dockerfile": str(dockerfile.resolve().relative_to(context))}
    import docker.utils

    name = f".dockerfile.{uuid.uuid4().hex}"
    exclude = None
    ignore = context / ".dockerignore"
    if ignore.is_file():
        lines = (line.strip() for line in ignore.read_text().splitlines())
        exclude = [line for line in lines if line and not line.startswith("#")]
    fileobj = docker.utils.tar(str(context), exclude=exclude, dockerfile=(name, dockerfile.read_text()))
    return {"fileobj": fileobj, "custom_context": True, "dockerfile": name}


class DockerEngine(ContainerEngine):
    """A Docker-compatible API through the ``docker`` SDK.

    ``base_url`` (e.g. ``unix:///run/podman/podman.sock``) wins; without it the SDK's
    ``docker.from_env()`` reads ``DOCKER_HOST`` (default ``unix:///var/run/docker.sock``).
    ``timeout`` is the HTTP read timeout of API calls: a build step silent for longer fails.
    The client is created on first use; an engine that does not answer raises
    ``ContainerEngineUnavailableError`` naming the address that was tried.
    """

    name = "docker"

    def __init__(self, base_url: str | None = None, *, timeout: float = 600.0) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self._client_obj: Any = None

    def __repr__(self) -> str:
        return f"<DockerEngine {self.address}>"

    @property
    def address(self) -> str:
        """The API address this engine uses, and where it came from."""
        if self.base_url:
            return self.base_url
        if os.environ.get("DOCKER_HOST"):
            return os.environ["DOCKER_HOST"]
        return "unix:///var/run/docker.sock"

    def _describe_address(self) -> str:
        if self.base_url:
            source = "base_url"
        elif os.environ.get("DOCKER_HOST"):
            source = "DOCKER_HOST"
        else:
            source = "the default (DOCKER_HOST not set; a docker CLI context may also apply)"
        text = f"{self.address} (from {source})"
        if self.address.startswith("unix://"):
            path = Path(self.address[len("unix://") :])
            if not path.exists():
                text += f"; socket file {path} does not exist"
            elif not path.is_socket():
                text += f"; {path} is not a socket"
            else:
                text += f"; nothing answered on socket {path}"
        return text

    def _unavailable(self, exc: BaseException) -> ContainerEngineUnavailableError:
        return ContainerEngineUnavailableError(
            "docker",
            f"the Docker API did not answer: {exc}",
            tried=self._describe_address(),
            hint=PODMAN_SOCKET_HINT,
        )

    def _client(self) -> Any:
        if self._client_obj is not None:
            return self._client_obj
        import docker
        import docker.errors
        import requests.exceptions

        try:
            if self.base_url:
                client = docker.DockerClient(base_url=self.base_url, timeout=round(self.timeout))
            else:
                client = docker.from_env(timeout=round(self.timeout))
            client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._unavailable(exc) from exc
        self._client_obj = client
        return client

    def ping(self) -> None:
        import docker.errors
        import requests.exceptions

        client = self._client()
        try:
            client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._unavailable(exc) from exc

    def close(self) -> None:
        if self._client_obj is not None:
            self._client_obj.close()
            self._client_obj = None

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        import requests.exceptions

        return (requests.exceptions.ConnectionError,)

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
        import docker.errors
        import requests.exceptions

        context, dockerfile_path = _context_and_dockerfile(context_dir, dockerfile)
        api = self._client().api
        sink = _LineBuffer(on_log)
        deadline = None if timeout is None else time.monotonic() + timeout
        image_id: str | None = None
        error: str | None = None
        source = _docker_build_source(context, dockerfile_path)
        try:
            stream: Iterator[dict[str, Any]] = api.build(
                **source,
                tag=tag,
                buildargs=dict(build_args or {}),
                platform=platform,
                labels=dict(labels or {}) or None,
                decode=True,
                rm=True,
                forcerm=True,
                timeout=round(min(self.timeout, timeout or self.timeout)),
            )
            for chunk in stream:
                if "stream" in chunk:
                    sink.feed(str(chunk["stream"]))
                if "status" in chunk:
                    sink.line(" ".join(str(chunk[k]) for k in ("status", "id") if chunk.get(k)))
                if "error" in chunk or "errorDetail" in chunk:
                    detail = chunk.get("errorDetail") or {}
                    error = str(chunk.get("error") or detail.get("message") or chunk)
                    sink.line(error)
                aux = chunk.get("aux")
                if isinstance(aux, dict) and aux.get("ID"):
                    image_id = str(aux["ID"])
                if deadline is not None and time.monotonic() > deadline:
                    close = getattr(stream, "close", None)
                    if close is not None:
                        close()
                    sink.flush()
                    raise ContainerBuildError(
                        f"docker build of {tag or context} ran past {timeout}s and was abandoned",
                        tag=tag,
                        log_lines=sink.tail,
                    )
        except docker.errors.APIError as exc:
            sink.flush()
            sink.line(str(exc))
            raise ContainerBuildError(
                f"docker build of {tag or context} failed: {exc.explanation or exc}",
                tag=tag,
                log_lines=sink.tail,
            ) from exc
        except requests.exceptions.ConnectionError as exc:
            raise self._unavailable(exc) from exc
        except requests.exceptions.RequestException as exc:  # read timeout of a silent step
            sink.flush()
            raise ContainerBuildError(
                f"docker build of {tag or context} failed: {exc}", tag=tag, log_lines=sink.tail
            ) from exc
        finally:
            fileobj = source.get("fileobj")
            if fileobj is not None:
                fileobj.close()
        sink.flush()
        if error is not None:
            raise ContainerBuildError(
                f"docker build of {tag or context} failed: {error}", tag=tag, log_lines=sink.tail
            )
        if image_id is None:
            for line in reversed(sink.tail):
                if line.startswith("Successfully built "):
                    image_id = line.split()[-1]
                    break
        if tag:
            # the tag is the truth (the "Successfully built" id can be a short id)
            image_id = self.image_id(tag)
        if image_id is None:
            raise ContainerBuildError(f"docker build of {context} reported no image id", log_lines=sink.tail)
        return _normalize_id(image_id)

    def image_id(self, tag: str) -> str:
        import docker.errors

        try:
            return _normalize_id(str(self._client().images.get(tag).id))
        except docker.errors.NotFound as exc:
            raise ContainerError(f"no image {tag!r}") from exc
        except self._api_errors() as exc:
            raise self._unavailable(exc) from exc

    def image_exists(self, tag: str) -> bool:
        import docker.errors

        try:
            self._client().images.get(tag)
        except docker.errors.NotFound:
            return False
        except self._api_errors() as exc:
            raise self._unavailable(exc) from exc
        return True

    def remove_image(self, tag: str, *, force: bool = False) -> bool:
        import docker.errors

        try:
            self._client().images.remove(tag, force=force)
        except docker.errors.NotFound:
            return False
        except self._api_errors() as exc:
            raise self._unavailable(exc) from exc
        return True

    def tag_image(self, source: str, target: str) -> None:
        repository, _, tag_part = target.rpartition(":")
        if not repository or "/" in tag_part:
            repository, tag_part = target, "latest"
        self._client().images.get(source).tag(repository, tag_part)

    def _volumes(self, volumes: Mapping[PathLike, str] | None) -> dict[str, dict[str, str]]:
        return {
            str(Path(host).resolve()): {"bind": target, "mode": "rw"}
            for host, target in (volumes or {}).items()
        }

    def run(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        volumes: Mapping[PathLike, str] | None = None,
        timeout: float = 120.0,
    ) -> RunResult:
        import docker.errors
        import requests.exceptions

        client = self._client()
        try:
            container = client.containers.create(
                image,
                list(command) if command else None,
                environment=dict(env or {}),
                volumes=self._volumes(volumes),
            )
        except docker.errors.APIError as exc:
            raise ContainerRunError(f"could not create a container from {image}: {exc}") from exc
        except requests.exceptions.ConnectionError as exc:
            raise self._unavailable(exc) from exc
        try:
            container.start()
            try:
                result = container.wait(timeout=timeout)
            except requests.exceptions.RequestException as exc:
                output = container.logs().decode("utf-8", "replace")
                raise ContainerRunError(
                    f"container from {image} ran past {timeout}s and was stopped",
                    log_lines=output.splitlines()[-LOG_TAIL_LINES:],
                ) from exc
            output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
            return RunResult(exit_code=int(result.get("StatusCode", -1)), output=output)
        finally:
            try:
                container.remove(force=True)
            except docker.errors.APIError:
                pass

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
        import docker.errors
        import requests.exceptions

        try:
            container = self._client().containers.run(
                image,
                list(command) if command else None,
                detach=True,
                name=name,
                environment=dict(env or {}),
                volumes=self._volumes(volumes),
                ports={f"{c}/tcp": ("127.0.0.1", h) for c, h in (ports or {}).items()},
            )
        except docker.errors.APIError as exc:
            raise ContainerRunError(f"could not start a container from {image}: {exc}") from exc
        except requests.exceptions.ConnectionError as exc:
            raise self._unavailable(exc) from exc
        return _DockerHandle(container, image=image, ports=ports or {})
