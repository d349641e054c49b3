"""Running a command with its output streamed line by line, bounded in time, group and all."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence

from runnerkit.containers._engine import LOG_TAIL_LINES, LogCallback


class LineBuffer:
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


def stream_process(
    cmd: Sequence[str],
    sink: LineBuffer,
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
        terminate_group(proc)

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
        terminate_group(proc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
    return code, timed_out.is_set()


def terminate_group(proc: subprocess.Popen[str], grace: float = 10.0) -> None:
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
