"""A model of a runner's repository: `runner.<model>.run(...)` / `await ....async_run(...)`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runnerkit.triton._client import DEFAULT_OPTIONS, InferOptions
from runnerkit.triton._model_config import ModelSpec
from runnerkit.triton._result import InferResult

if TYPE_CHECKING:
    from runnerkit.triton._runner import Runner

_UNKNOWN: Any = object()


class Model:
    """Calls one model (optionally one pinned version) through its runner.

    Inputs are all positional (in the configuration's input order) or all keyword (matched by
    name, any order). Options are keyword-only; a model input that shares an option's name can
    still be passed positionally.
    """

    __slots__ = ("name", "runner", "version")

    def __init__(self, runner: Runner, name: str, version: str = "") -> None:
        self.runner = runner
        self.name = name
        self.version = version

    def with_version(self, version: int | str) -> Model:
        """A handle pinned to one version of the model (Triton's version policy must serve it)."""
        text = str(version)
        if not text.isdigit():
            raise ValueError(f"model {self.name!r}: a version is a positive integer, got {version!r}")
        return Model(self.runner, self.name, text)

    async def async_run(
        self,
        *args: Any,
        outputs: Sequence[str] | None = None,
        request_id: str = "",
        sequence_id: int | str = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        priority: int = 0,
        timeout_us: int | None = None,
        parameters: dict[str, Any] | None = None,
        **inputs: Any,
    ) -> InferResult:
        runner = self.runner
        client = runner._client_for_running_loop(self.name)
        validator = runner._validators.get(self.name) or await runner._load_validator(self.name)
        prepared = validator.prepare(args, inputs)
        if request_id or sequence_id or priority or timeout_us is not None or parameters:
            options = InferOptions(
                request_id,
                sequence_id,
                sequence_start,
                sequence_end,
                priority,
                timeout_us,
                parameters,
            )
            # calls with their own options never merge with others
            return await client.infer(self.name, self.version, prepared, outputs, options)
        batcher = runner._batchers.get((client, self.name, self.version), _UNKNOWN)
        if batcher is _UNKNOWN:
            batcher = runner._make_batcher(client, self.name, self.version, validator)
        if batcher is not None:
            return await batcher.infer(prepared, outputs)
        return await client.infer(self.name, self.version, prepared, outputs, DEFAULT_OPTIONS)

    def run(self, *args: Any, **kwargs: Any) -> InferResult:
        """Synchronous `async_run`, for plain code and worker threads (not inside an event loop)."""
        return self.runner._run_sync(self.name, lambda: self.async_run(*args, **kwargs))

    async def config(self) -> ModelSpec:
        """The model's configuration as the server reports it (fetched once, then cached)."""
        return (await self.runner._load_validator(self.name)).spec

    async def metadata(self) -> Any:
        return await self.runner.get_model_metadata(self.name, self.version)

    def __repr__(self) -> str:
        pinned = f", version={self.version}" if self.version else ""
        return f"<Model {self.name!r} of runner {self.runner.name!r}{pinned}>"
