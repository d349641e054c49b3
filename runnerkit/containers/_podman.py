"""The podman engine: the podman command line, its output streamed line by line."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runnerkit.containers._engine import (
    LOG_TAIL_LINES,
    ContainerEngine,
    ContainerHandle,
    LogCallback,
    PathLike,
    RunResult,
    context_and_dockerfile,
    normalize_id,
)
from runnerkit.containers._podman_env import (
    PodmanConfigMode,
    PodmanSettings,
    podman_environment,
)
from runnerkit.containers._streaming import LineBuffer, stream_process
from runnerkit.containers.errors import (
    ContainerBuildError,
    ContainerEngineUnavailableError,
    ContainerError,
    ContainerRunError,
)

PODMAN_INSTALL_HINT = (
    "install podman (Debian/Ubuntu, as root: `bash scripts/install-system-deps.sh`, or "
    "`apt-get install -y podman buildah runc fuse-overlayfs uidmap slirp4netns`), "
    "or pass podman='/path/to/podman'"
)


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
        sink: LineBuffer,
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
        context, dockerfile_path = context_and_dockerfile(context_dir, dockerfile)
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
            sink = LineBuffer(on_log)
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
            return normalize_id(iidfile.read_text())

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
        return normalize_id(proc.stdout.splitlines()[0])

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
        sink = LineBuffer(None, keep=100_000)
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
