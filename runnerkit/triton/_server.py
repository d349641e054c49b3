"""One tritonserver process: launch on loopback ports, wait until ready, stop without orphans."""

from __future__ import annotations

import collections
import contextlib
import ctypes
import http.client
import itertools
import logging
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from runnerkit._leftovers import shared_memory_prefix
from runnerkit.exceptions import TritonStartError
from runnerkit.triton._server_binary import TritonServerBinary

logger = logging.getLogger("runnerkit.tritonserver")

LOOPBACK = "127.0.0.1"
# Options runnerkit owns: it picks the ports and binds them to loopback only.
OWNED_OPTIONS = frozenset(
    {
        "grpc-port", "http-port", "metrics-port", "grpc-address", "http-address",
        "metrics-address", "allow-http", "allow-grpc", "allow-metrics", "model-repository",
        "model-store", "backend-directory",
    }
)  # fmt: skip
_BIND_ERRORS = ("already in use", "address in use", "failed to bind", "socket bind")
# glog's error and fatal prefixes (E1121 03:25:30...), and plain-text failures
_ERROR_LINE = re.compile(r"^[EF]\d{4} |error|unrecognized|failed|invalid", re.IGNORECASE)
_HEAD_LINES = 40
_LAUNCH_ATTEMPTS = 5
_counter = itertools.count()


@attrs.frozen
class ServerAddresses:
    grpc_port: int
    http_port: int
    metrics_port: int
    host: str = LOOPBACK

    @property
    def grpc_url(self) -> str:
        return f"{self.host}:{self.grpc_port}"

    @property
    def http_url(self) -> str:
        return f"{self.host}:{self.http_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.metrics_port}/metrics"


def free_port(host: str = LOOPBACK) -> int:
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """`count` distinct ports free right now (all held open together, so none repeats)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def _die_with_parent() -> None:
    # If the launching process is killed outright, the kernel sends tritonserver SIGTERM
    # instead of leaving it running (PR_SET_PDEATHSIG = 1).
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class TritonServerProcess:
    """A tritonserver child process, its log tail and its loopback addresses.

    `extra_args` must not contain options in OWNED_OPTIONS; callers filter them first.
    """

    def __init__(
        self,
        binary: TritonServerBinary,
        model_repositories: Sequence[str],
        extra_args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        log_prefix: str = "tritonserver",
        log_lines: int = 400,
        on_log_line: Callable[[str], None] | None = None,
    ) -> None:
        self.binary = binary
        self.model_repositories = tuple(model_repositories)
        self.extra_args = tuple(extra_args)
        self._env = env
        self._log_prefix = log_prefix
        self._tail: collections.deque[str] = collections.deque(maxlen=log_lines)
        # The tail alone can miss why a start failed: a bad option is named on the first line,
        # before hundreds of lines of usage text.
        self._head: list[str] = []
        self._error_lines: collections.deque[str] = collections.deque(maxlen=20)
        self._on_log_line = on_log_line
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._shm_prefix = shared_memory_prefix(next(_counter))
        self.addresses: ServerAddresses | None = None

    # -- launching ---------------------------------------------------------------------------

    def command(self, addresses: ServerAddresses) -> list[str]:
        args = [str(self.binary.executable)]
        args += [f"--model-repository={repo}" for repo in self.model_repositories]
        if self.binary.backend_directory is not None:
            args.append(f"--backend-directory={self.binary.backend_directory}")
        if self.binary.cache_directory is not None:
            args.append(f"--cache-directory={self.binary.cache_directory}")
        args += [
            f"--grpc-address={addresses.host}",
            f"--grpc-port={addresses.grpc_port}",
            f"--http-address={addresses.host}",
            f"--http-port={addresses.http_port}",
            f"--metrics-address={addresses.host}",
            f"--metrics-port={addresses.metrics_port}",
            "--allow-grpc=true",
            "--allow-http=true",
            "--allow-metrics=true",
            # A unique prefix lets stop() remove the python backend's shared memory reliably.
            f"--backend-config=python,shm-region-prefix-name={self._shm_prefix}",
        ]
        return args + list(self.extra_args)

    def start(self) -> ServerAddresses:
        """Launch and return the addresses; does not wait for readiness (see wait_ready)."""
        grpc_port, http_port, metrics_port = free_ports(3)
        addresses = ServerAddresses(grpc_port, http_port, metrics_port)
        self._launch(addresses)
        self.addresses = addresses
        return addresses

    def restart(self, extra_args: Sequence[str] | None = None) -> None:
        """Launch again on the same ports once the process has ended (or kill it first), with
        `extra_args` instead of the options it had when given.

        For a supervisor: its API workers' clients keep their addresses and reconnect. Wait with
        `wait_ready(..., relocate_on_conflict=False)` so that a taken port fails instead of moving.
        """
        if self.addresses is None:
            raise RuntimeError("restart() needs a server that was started before")
        if extra_args is not None:
            self.extra_args = tuple(extra_args)
        self.cleanup_after_exit()
        self._launch(self.addresses)

    def _launch(self, addresses: ServerAddresses) -> None:
        self._tail.clear()
        self._head = []
        self._error_lines.clear()
        cmd = self.command(addresses)
        logger.debug("launching %s", " ".join(cmd))
        self._process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.binary.launch_env(self._env),
            start_new_session=True,  # own process group: stop() reaches the python stubs too
            preexec_fn=_die_with_parent,
        )
        self._reader = threading.Thread(
            target=self._read_log,
            args=(self._process,),
            name=f"{self._log_prefix}-log",
            daemon=True,
        )
        self._reader.start()

    def _read_log(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for raw in iter(process.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            self._tail.append(line)
            if len(self._head) < _HEAD_LINES:
                self._head.append(line)
            if _ERROR_LINE.search(line):
                self._error_lines.append(line)
            if self._on_log_line is not None:
                self._on_log_line(line)
            else:
                logger.debug("[%s] %s", self._log_prefix, line)
        process.stdout.close()

    # -- state -------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def poll(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return None if self._process is None else self._process.poll()

    def log_tail(self, lines: int = 60) -> str:
        if self._reader is not None and self.poll() is not None:
            self._reader.join(timeout=2)  # let the reader drain what the process last wrote
        return "\n".join(list(self._tail)[-lines:])

    def failure_log(self, lines: int = 60) -> str:
        """What to show when the server did not come up: the tail, plus earlier error lines."""
        tail = self.log_tail(lines)
        for index, line in enumerate(self._head):
            if line.startswith("Usage: "):
                # A command-line error: tritonserver names it, then prints its whole usage.
                return "\n".join([*self._head[:index], "(tritonserver's usage text omitted)"])
        tail_lines = set(tail.splitlines())
        earlier = [line for line in self._error_lines if line not in tail_lines]
        if earlier:
            return "\n".join(["(earlier error lines)", *earlier, "(last lines)", tail])
        return tail

    def is_ready(self) -> bool:
        if self.addresses is None or self.poll() is not None:
            return False
        try:
            conn = http.client.HTTPConnection(LOOPBACK, self.addresses.http_port, timeout=2)
            try:
                conn.request("GET", "/v2/health/ready")
                return conn.getresponse().status == 200
            finally:
                conn.close()
        except OSError:
            return False

    def _bind_conflict(self) -> bool:
        text = "\n".join(self._tail).lower()
        return any(marker in text for marker in _BIND_ERRORS)

    def wait_ready(self, timeout: float = 120.0, *, relocate_on_conflict: bool = True) -> None:
        """Block until ready; relaunch on other ports after a port conflict (unless
        `relocate_on_conflict` is false); raise TritonStartError on failure."""
        deadline = time.monotonic() + timeout
        attempts = 1
        delay = 0.02
        while True:
            if self.is_ready():
                return
            code = self.poll()
            if code is not None:
                if relocate_on_conflict and self._bind_conflict() and attempts < _LAUNCH_ATTEMPTS:
                    attempts += 1
                    logger.info("tritonserver lost a port race; relaunching on other ports")
                    self.cleanup_after_exit()
                    self.start()
                    continue
                self.cleanup_after_exit()
                raise TritonStartError(
                    f"tritonserver exited with code {code} before it was ready "
                    f"(model repository: {', '.join(self.model_repositories)})",
                    log_tail=self.failure_log(),
                    exit_code=code,
                )
            if time.monotonic() > deadline:
                tail = self.failure_log()
                self.stop()
                raise TritonStartError(f"tritonserver was not ready within {timeout:.0f} s", log_tail=tail)
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)

    # -- stopping ----------------------------------------------------------------------------

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM, wait up to `grace`, then SIGKILL the whole process group."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                logger.warning("tritonserver did not stop within %.0f s; killing it", grace)
        self.cleanup_after_exit()

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        self.cleanup_after_exit()

    def cleanup_after_exit(self) -> None:
        """Reap the process, kill whatever is left of its group, drop its shared memory."""
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=2)
        for leftover in Path("/dev/shm").glob(self._shm_prefix + "*"):
            with contextlib.suppress(OSError):
                leftover.unlink()
