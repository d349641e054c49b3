"""Errors of the container layer; all derive from :class:`ContainerError` (a ``RunnerkitError``)."""

from __future__ import annotations

from collections.abc import Sequence

from runnerkit.exceptions import RunnerkitError

__all__ = [
    "ContainerBuildError",
    "ContainerEngineUnavailableError",
    "ContainerError",
    "ContainerRunError",
]


class ContainerError(RunnerkitError):
    """Base class of the errors raised by ``runnerkit.containers``."""


class ContainerEngineUnavailableError(ContainerError):
    """The container engine cannot be used: not installed, not running, or not reachable.

    The message says which engine, what was tried (socket address, binary) and how to start it.
    """

    def __init__(self, engine: str, message: str, *, tried: str = "", hint: str = "") -> None:
        text = f"{engine} engine unavailable: {message}"
        if tried:
            text += f"\n  tried: {tried}"
        if hint:
            text += f"\n  how to fix: {hint}"
        super().__init__(text)
        self.engine = engine
        self.tried = tried
        self.hint = hint


class _LogTailError(ContainerError):
    """An error that carries the last lines an engine printed."""

    def __init__(self, message: str, *, log_lines: Sequence[str] = (), exit_code: int | None = None) -> None:
        self.log_lines: tuple[str, ...] = tuple(log_lines)
        self.exit_code = exit_code
        text = message
        if self.log_lines:
            text += "\n--- last log lines ---\n" + "\n".join(self.log_lines)
        super().__init__(text)
        self.message = message

    @property
    def log_tail(self) -> str:
        return "\n".join(self.log_lines)


class ContainerBuildError(_LogTailError):
    """An image build failed (or ran past its time limit); carries the build's last log lines."""

    def __init__(
        self,
        message: str,
        *,
        tag: str | None = None,
        log_lines: Sequence[str] = (),
        exit_code: int | None = None,
    ) -> None:
        super().__init__(message, log_lines=log_lines, exit_code=exit_code)
        self.tag = tag


class ContainerRunError(_LogTailError):
    """A container could not be started, or a one-shot run failed or timed out."""
