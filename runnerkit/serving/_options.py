"""`--triton-options`: tritonserver arguments from the command line, for every runner or for one."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence

import attrs

from runnerkit.exceptions import RunnerkitError
from runnerkit.triton._server import OWNED_OPTIONS

logger = logging.getLogger("runnerkit.serve")

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_PORTS = frozenset(
    {
        "grpc-port", "http-port", "metrics-port", "grpc-address", "http-address", "metrics-address",
        "allow-http", "allow-grpc", "allow-metrics",
    }
)  # fmt: skip


class TritonOptionsError(RunnerkitError, ValueError):
    """A `--triton-options` value that is not `[runner.]key[=value]`."""


@attrs.frozen
class TritonOption:
    """One `--triton-options` value: `key=value`, `--key=value`, `runner.key=value` or a bare flag."""

    given: str  # as written on the command line, for messages
    key: str
    value: str | None  # None: a flag without a value (`--strict-readiness`)
    runner: str | None  # None: every runner

    @classmethod
    def parse(cls, text: str) -> TritonOption:
        # Only the first `=` separates: values hold commas and `=` (backend-config=python,a=b).
        head, sep, value = text.strip().partition("=")
        name = head.lstrip("-")
        runner: str | None = None
        if "." in name:
            runner, _, name = name.partition(".")
            if not runner.isidentifier():
                raise TritonOptionsError(
                    f"--triton-options {text!r}: {runner!r} is not a runner name; expected "
                    "'key=value' (every runner) or 'runner_name.key=value' (one runner)"
                )
        if not _KEY.fullmatch(name):
            raise TritonOptionsError(
                f"--triton-options {text!r}: expected 'key=value', '--key=value' or "
                "'runner_name.key=value', with a tritonserver option name such as "
                "'model-control-mode=explicit'"
            )
        return cls(text, name, value if sep else None, runner)

    @property
    def argument(self) -> str:
        return f"--{self.key}" if self.value is None else f"--{self.key}={self.value}"

    @property
    def owned_reason(self) -> str | None:
        """Why runnerkit ignores this option, or None when it passes through."""
        if self.key not in OWNED_OPTIONS:
            return None
        if self.key in _PORTS:
            return (
                "runnerkit binds tritonserver's gRPC, HTTP and metrics endpoints to free ports on "
                "127.0.0.1, chosen at start (only the API port is reachable from outside)"
            )
        if self.key in ("model-repository", "model-store"):
            return "each runner's model_repository= sets it"
        return "runnerkit sets it for the tritonserver it launches"


def triton_arguments(values: Iterable[str], runners: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """tritonserver arguments per runner name, from `--triton-options` values in their order.

    A runner's own options (`runner.key=value`) replace the options for every runner with the
    same key (`load-model=a` for all, `vision.load-model=*` for one: that one gets `*` only).
    Options runnerkit owns are dropped with a warning; a runner prefix naming no runner that
    launches a tritonserver is an error (before anything is launched).
    """
    everyone: list[TritonOption] = []
    own: dict[str, list[TritonOption]] = {name: [] for name in runners}
    for text in values:
        option = TritonOption.parse(text)
        if option.runner is not None and option.runner not in own:
            known = ", ".join(repr(n) for n in runners) or "none"
            raise TritonOptionsError(
                f"--triton-options {text!r}: no runner named {option.runner!r} launches a "
                f"tritonserver here (runners that do: {known})"
            )
        reason = option.owned_reason
        if reason is not None:
            logger.warning("ignoring --triton-options %r: %s", text, reason)
            continue
        (everyone if option.runner is None else own[option.runner]).append(option)
    arguments: dict[str, tuple[str, ...]] = {}
    for name in runners:
        keys = {option.key for option in own[name]}
        chosen = [option for option in everyone if option.key not in keys] + own[name]
        arguments[name] = tuple(option.argument for option in chosen)
    return arguments
