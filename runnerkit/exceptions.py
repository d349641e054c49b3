"""Every error runnerkit raises on purpose derives from :class:`RunnerkitError`."""

from __future__ import annotations

__all__ = [
    "BadRequestError",
    "InvalidInputError",
    "ModelNotFoundError",
    "PayloadTooLargeError",
    "RunnerNotStartedError",
    "RunnerkitError",
    "TritonError",
    "TritonServerNotFoundError",
    "TritonStartError",
    "TritonUnavailableError",
]


class RunnerkitError(Exception):
    """Base class of runnerkit's errors."""


class InvalidInputError(RunnerkitError, ValueError):
    """Inputs given to a model do not match its configuration; raised before anything is sent."""

    def __init__(self, model: str, message: str, *, input_name: str | None = None) -> None:
        where = f"model {model!r}" + (f", input {input_name!r}" if input_name else "")
        super().__init__(f"{where}: {message}")
        self.model = model
        self.input_name = input_name


class ModelNotFoundError(RunnerkitError, AttributeError):
    """A model name that the runner's repository does not hold."""


class RunnerNotStartedError(RunnerkitError, RuntimeError):
    """A runner was called before it was started (for example at import time of a service)."""


class TritonError(RunnerkitError):
    """Triton answered with an error; carries Triton's status and message."""

    def __init__(self, message: str, *, status: str | None = None, url: str | None = None) -> None:
        super().__init__(message if status is None else f"[{status}] {message}")
        self.message = message
        self.status = status
        self.url = url


class TritonUnavailableError(TritonError):
    """Triton could not be reached (not started, restarting, or gone)."""


class TritonStartError(RunnerkitError):
    """tritonserver did not become ready; the message carries the tail of its log."""

    def __init__(self, message: str, *, log_tail: str = "", exit_code: int | None = None) -> None:
        text = message
        if log_tail:
            text += "\n--- tritonserver log (last lines) ---\n" + log_tail
        super().__init__(text)
        self.log_tail = log_tail
        self.exit_code = exit_code


class TritonServerNotFoundError(RunnerkitError, FileNotFoundError):
    """No tritonserver binary could be found to launch."""


class BadRequestError(RunnerkitError, ValueError):
    """A request body that an API's input descriptor cannot accept (HTTP 400)."""


class PayloadTooLargeError(RunnerkitError):
    """A request body over the service's size limit (HTTP 413)."""
