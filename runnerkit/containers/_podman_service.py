"""podman's Docker-compatible API socket as a managed subprocess.

    with PodmanApiService() as service:           # podman system service --time=0 unix://...
        engine = service.docker_engine()          # DockerEngine(base_url=service.docker_host)
        engine.build(...)

The service runs with the same podman configuration as the :class:`PodmanEngine` it is given (so
both see the same images). It is started in its own session with ``PR_SET_PDEATHSIG`` so it does
not outlive this process; on exit it gets SIGTERM, then SIGKILL after ``stop_timeout`` seconds, and
its socket (and the temporary folder holding it, when runnerkit chose the path) is removed.
Containers started through the API keep running after the service stops (podman's conmon
monitors them, by design): stop them through the engine before leaving.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from runnerkit.containers._docker import DockerEngine
from runnerkit.containers._engine import PathLike
from runnerkit.containers._podman import PodmanEngine
from runnerkit.containers.errors import ContainerEngineUnavailableError, ContainerError

__all__ = ["PodmanApiService", "ping_unix_socket"]

_UNIX_PATH_MAX = 107


def ping_unix_socket(path: PathLike, timeout: float = 2.0) -> bool:
    """``GET /_ping`` over a unix socket; True when it answers ``200 OK``."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: localhost\r\n\r\n")
            data = b""
            while len(data) < 4096:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return False
    status = data.split(b"\r\n", 1)[0].split()
    return len(status) >= 2 and status[1] == b"200" and data.rstrip().endswith(b"OK")


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class PodmanApiService:
    """``podman system service --time=0 unix://<socket>`` for the lifetime of a ``with`` block.

    ``socket_path`` defaults to a fresh temporary folder (short, under /tmp: unix socket paths
    are limited to 107 bytes). ``engine`` gives the podman binary and configuration (default:
    ``PodmanEngine()``). ``start_timeout`` bounds the wait for ``/_ping`` to answer.
    """

    def __init__(
        self,
        socket_path: PathLike | None = None,
        *,
        engine: PodmanEngine | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.engine = engine if engine is not None else PodmanEngine()
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._given_path = Path(socket_path) if socket_path is not None else None
        self._tmpdir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self.socket_path: Path | None = self._given_path

    @property
    def docker_host(self) -> str:
        """The ``DOCKER_HOST`` value for this socket (``unix:///...``)."""
        if self.socket_path is None:
            raise ContainerError("the podman API service has not been started")
        return f"unix://{self.socket_path}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def docker_engine(self, **kwargs: Any) -> DockerEngine:
        return DockerEngine(base_url=self.docker_host, **kwargs)

    def log(self) -> str:
        """What the service printed so far."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")

    def start(self) -> PodmanApiService:
        if self.running:
            return self
        binary = shutil.which(self.engine.podman)
        if binary is None:
            self.engine.ping()  # raises the "podman binary not found" error
            raise AssertionError("unreachable")
        self._tmpdir = Path(tempfile.mkdtemp(prefix="rk-podman-api-"))
        path = self._given_path or self._tmpdir / "podman.sock"
        path = path.absolute()
        if len(str(path).encode()) > _UNIX_PATH_MAX:
            self._cleanup_tmpdir()
            raise ContainerError(f"unix socket path too long ({len(str(path))} bytes): {path}")
        if ping_unix_socket(path):
            self._cleanup_tmpdir()
            raise ContainerError(f"something already answers on {path}; not starting another")
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self.socket_path = path
        self._log_path = self._tmpdir / "service.log"
        with open(self._log_path, "wb") as log:
            self._proc = subprocess.Popen(
                [binary, "system", "service", "--time=0", f"unix://{path}"],
                env=self.engine.full_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if path.exists() and ping_unix_socket(path):
                return self
            time.sleep(0.1)
        code = self._proc.poll()
        log_text = self.log()
        self.stop()
        what = (
            f"exited with code {code}"
            if code is not None
            else f"did not answer /_ping within {self.start_timeout}s"
        )
        raise ContainerEngineUnavailableError(
            "podman API",
            f"`podman system service` {what}; its output:\n{log_text[-3000:]}",
            tried=f"{binary} system service --time=0 unix://{path}",
            hint="check that `podman info` works with the same configuration",
        )

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(self.stop_timeout)
        if self.socket_path is not None and self._given_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        self._cleanup_tmpdir()

    def _cleanup_tmpdir(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> PodmanApiService:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
