"""`runnerkit serve` as a child process: started, waited on, stopped, with its process tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from runnerkit.testing._wait import ServiceNotReadyError, wait_http
from runnerkit.triton._server import LOOPBACK, free_port

_BIND_FAILURE = ("address already in use", "error while attempting to bind")


def _runnerkit_command() -> list[str]:
    script = Path(sys.executable).with_name("runnerkit")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from runnerkit.cli import main; sys.exit(main())"]


class ServeProcess:
    """`runnerkit serve TARGET [ARGS...] --port <free port>` in a child process.

        with ServeProcess("services/digits.py:svc", cwd=repo) as served:
            httpx.post(served.url + "/classify", ...)

    `start()` waits until `/readyz` answers 200 (or `/livez`, with `wait_for="livez"`); the
    output goes to a temporary log file (`log_path`, `log_text()`, still there after `stop()`,
    removed when the object goes away or the block ends). `stop()` sends SIGTERM (or the
    signal given) and waits; `pid` is the serve process, whose children are its tritonservers
    and API worker.
    """

    def __init__(
        self,
        target: str,
        *args: str,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.target = target
        self.args: tuple[str, ...] = args
        self.cwd = None if cwd is None else Path(cwd)
        self.env = dict(os.environ if env is None else env)
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        handle, name = tempfile.mkstemp(prefix="runnerkit-serve-", suffix=".log")
        os.close(handle)
        self.log_path = Path(name)
        # Removed with this object (or at exit): readable after stop(), never left in /tmp.
        self._remove_log = weakref.finalize(self, self.log_path.unlink, missing_ok=True)

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the process has not been started")
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the process has not been started")
        return self.process.pid

    def command(self) -> list[str]:
        assert self.port is not None
        return [*_runnerkit_command(), "serve", self.target, *self.args, "--port", str(self.port)]

    def start(self, *, timeout: float = 180.0, wait_for: str = "readyz", attempts: int = 3) -> ServeProcess:
        """Launch and wait for `/<wait_for>` to answer 200; a port taken meanwhile is retried."""
        chosen = self.port
        for attempt in range(attempts):
            self.port = chosen or free_port()
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    self.command(),
                    cwd=self.cwd,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            try:
                wait_http(f"{self.url}/{wait_for}", timeout=timeout, alive=self._exited)
                return self
            except ServiceNotReadyError as exc:
                retry = (
                    chosen is None
                    and attempt + 1 < attempts
                    and self.process.poll() is not None
                    and any(m in self.log_text().lower() for m in _BIND_FAILURE)
                )
                if not retry:
                    self.stop()
                    tail = self.log_text()[-6000:]
                    raise ServiceNotReadyError(f"{exc}\n--- runnerkit serve log ---\n{tail}") from None
        raise AssertionError("unreachable")

    def _exited(self) -> str | None:
        code = None if self.process is None else self.process.poll()
        return None if code is None else f"runnerkit serve exited with code {code}"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def send_signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        """Signal the serve process and wait for it; SIGKILL if it outlives `timeout`."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signum)
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                return process.wait(timeout=10)
        return process.returncode

    def __enter__(self) -> ServeProcess:
        if self.process is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self._remove_log()
