"""Micro-batching: concurrent calls to one model coalesced into one batched Triton request.

Each Triton request has a fixed cost in the client (building it, a gRPC or HTTP round trip)
and in the server (parsing, scheduling, the backend's execute; for the python backend an IPC
round trip to the stub as well) that does not grow with the rows it carries. Under concurrency
the runner sends what callers have queued as one request and splits the answer back per caller.

Per model, version and event loop: with nothing in flight a call goes straight out (no added
latency at low load). Otherwise it waits: once the event loop has run the work that is ready
(so calls made together, such as those of HTTP requests that arrived together, wait together)
and while fewer than `max_inflight` requests are in flight, the oldest waiting call goes out with
every waiting call it can be merged with, in arrival order, up to `max_batch_size` rows; when a
request in flight returns, the same happens. Calls merge when they give the same inputs with the
same dtypes and non-batch dimensions and ask for the same outputs; calls with per-call options
(request_id, sequence, priority, timeout, parameters) never merge. When the waiting calls hold a
full batch it goes out at once, so no call waits for more than the requests in flight.

Each caller gets its own rows (`CoalescedInferResult`); an error of a coalesced request reaches
every caller in it, and a caller cancelled while its request is in flight leaves the others
their answers.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs
import numpy as np

from runnerkit.exceptions import TritonError
from runnerkit.triton._client import DEFAULT_OPTIONS, TritonClient
from runnerkit.triton._model_config import ModelSpec
from runnerkit.triton._result import CoalescedInferResult, InferResult, SharedOutputs
from runnerkit.triton._validation import PreparedInput


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"MicroBatching({attribute.name}=...) must be a whole number >= 1, got {value!r}")


# Set by `runnerkit serve --production` for its API workers: how many there are.
ENV_API_WORKERS = "RUNNERKIT_API_WORKERS"
# Requests in flight per model that a whole service aims at by default: one keeps Triton busy,
# the second hides the round trip while the first comes back.
_SERVICE_INFLIGHT = 2


def default_max_inflight() -> int:
    """2 in a process of its own; 1 in each of several API workers (about 2 for the service)."""
    raw = os.environ.get(ENV_API_WORKERS, "").strip()
    workers = int(raw) if raw.isdigit() and int(raw) > 0 else 1
    return max(1, _SERVICE_INFLIGHT // workers)


@attrs.frozen
class MicroBatching:
    """How a runner coalesces concurrent calls to one model (see the module's description).

    `max_inflight`: requests per model (and version, and event loop) in flight before calls wait
    to be coalesced; more overlaps Triton's work with the client's, fewer makes larger batches
    (fewer requests for Triton and the client to handle). Default: 2, or 1 in each API worker
    when `runnerkit serve --production` runs several (which share one tritonserver: each request
    costs its CPU, and more in flight from more workers would only make the batches smaller).
    `max_batch_size`: rows per coalesced request (default: the model's `max_batch_size`).
    """

    max_inflight: int | None = attrs.field(default=None, validator=_positive)
    max_batch_size: int | None = attrs.field(default=None, validator=_positive)


# What a runner's `micro_batching=` takes: for every model, or per model name.
MicroBatchingOption: TypeAlias = "bool | MicroBatching | Mapping[str, bool | MicroBatching] | None"


def check_option(value: Any) -> MicroBatchingOption:
    def check_one(item: Any, where: str) -> None:
        if item is not None and not isinstance(item, (bool, MicroBatching)):
            raise TypeError(
                f"{where} takes None (automatic), True, False or runnerkit.triton.MicroBatching(...), "
                f"got {item!r}"
            )

    if isinstance(value, Mapping):
        for name, item in value.items():
            check_one(item, f"micro_batching[{name!r}]")
    else:
        check_one(value, "micro_batching")
    return value


def settings_for(option: MicroBatchingOption, spec: ModelSpec) -> MicroBatching | None:
    """The micro-batching a model gets, or None (its calls go straight to Triton).

    None (automatic): models whose configuration has `dynamic_batching`, which already lets
    Triton merge their requests the same way. True or MicroBatching(...): any model with
    `max_batch_size > 0`. A mapping sets it per model name; unnamed models are automatic.
    """
    setting: Any = option.get(spec.name) if isinstance(option, Mapping) else option
    if setting is False or spec.max_batch_size <= 0:
        return None
    config = spec.config
    if any(getattr(t, "allow_ragged_batch", False) for t in config.input):
        return None  # ragged inputs are not concatenated along a batch dimension
    if setting is None:
        if not config.HasField("dynamic_batching"):
            return None
        return MicroBatching()
    return MicroBatching() if setting is True else setting


class _Waiting:
    """One call waiting to be sent."""

    __slots__ = ("future", "inputs", "key", "outputs", "rows", "sent")

    def __init__(
        self,
        inputs: Sequence[PreparedInput],
        outputs: Sequence[str] | None,
        key: Hashable,
        rows: int,
        future: asyncio.Future[InferResult],
    ) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self.key = key
        self.rows = rows
        self.future = future
        self.sent = False


class MicroBatcher:
    """Coalesces the calls of one event loop to one model version; see the module description."""

    def __init__(
        self,
        client: TritonClient,
        model: str,
        version: str,
        settings: MicroBatching,
        model_max_batch_size: int,
    ) -> None:
        self.client = client
        self.model = model
        self.version = version
        self.max_inflight = settings.max_inflight or default_max_inflight()
        self.max_rows = min(settings.max_batch_size or model_max_batch_size, model_max_batch_size)
        self.inflight = 0
        self._waiting: collections.deque[_Waiting] = collections.deque()
        self._waiting_rows = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._scheduled = False

    async def infer(self, inputs: Sequence[PreparedInput], outputs: Sequence[str] | None) -> InferResult:
        if not self.inflight and not self._waiting:
            return await self._direct(inputs, outputs)  # idle: no waiting at all
        key, rows = _merge_key(inputs, outputs)
        if key is None or rows > self.max_rows:
            return await self._direct(inputs, outputs)
        if len(inputs) > 1:
            inputs = sorted(inputs, key=lambda item: item.name)
        waiting = _Waiting(inputs, outputs, key, rows, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        self._waiting_rows += rows
        if self._waiting_rows >= self.max_rows:
            self._dispatch()
        elif self.inflight < self.max_inflight:
            self._schedule()
        try:
            return await waiting.future
        except asyncio.CancelledError:
            if not waiting.sent:  # still queued: take it out; a sent batch goes on for the others
                self._waiting.remove(waiting)
                self._waiting_rows -= waiting.rows
            raise

    async def _direct(self, inputs: Sequence[PreparedInput], outputs: Sequence[str] | None) -> InferResult:
        self.inflight += 1
        try:
            return await self.client.infer(self.model, self.version, inputs, outputs, DEFAULT_OPTIONS)
        finally:
            self.inflight -= 1
            if self._waiting:
                self._schedule()

    def _schedule(self) -> None:
        """Dispatch once the event loop has run what is ready now: calls made meanwhile (such as
        those of requests that arrived together) go out in the same batch."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_dispatch)

    def _scheduled_dispatch(self) -> None:
        self._scheduled = False
        self._dispatch()

    def _dispatch(self) -> None:
        """Send what waits while a request slot is free, or while a full batch waits."""
        while self._waiting and (self.inflight < self.max_inflight or self._waiting_rows >= self.max_rows):
            batch = self._take()
            self.inflight += 1
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _take(self) -> list[_Waiting]:
        """The oldest waiting call and, in arrival order, those it merges with (up to max_rows)."""
        head = self._waiting.popleft()
        batch = [head]
        rows = head.rows
        if self._waiting and rows < self.max_rows:
            kept: collections.deque[_Waiting] = collections.deque()
            for waiting in self._waiting:
                if waiting.key == head.key and rows + waiting.rows <= self.max_rows:
                    batch.append(waiting)
                    rows += waiting.rows
                else:
                    kept.append(waiting)
            self._waiting = kept
        self._waiting_rows -= rows
        for waiting in batch:
            waiting.sent = True
        return batch

    async def _send(self, batch: list[_Waiting]) -> None:
        try:
            batch = [w for w in batch if not w.future.done()]  # callers cancelled meanwhile
            if not batch:
                return
            try:
                results = await self._infer_batch(batch)
            except BaseException as exc:
                for waiting in batch:
                    if not waiting.future.done():
                        if isinstance(exc, asyncio.CancelledError):
                            waiting.future.cancel()
                        else:
                            waiting.future.set_exception(_own_copy(exc))
                if not isinstance(exc, Exception):
                    raise
                return
            for waiting, result in zip(batch, results):
                if not waiting.future.done():
                    waiting.future.set_result(result)
        finally:
            self.inflight -= 1
            if self._waiting:
                self._schedule()

    async def _infer_batch(self, batch: list[_Waiting]) -> list[InferResult]:
        first = batch[0].inputs
        outputs = batch[0].outputs
        if len(batch) == 1:
            return [await self.client.infer(self.model, self.version, first, outputs, DEFAULT_OPTIONS)]
        merged = [
            PreparedInput(item.name, np.concatenate([w.inputs[i].array for w in batch]), item.datatype)
            for i, item in enumerate(first)
        ]
        total = sum(w.rows for w in batch)
        result = await self.client.infer(self.model, self.version, merged, outputs, DEFAULT_OPTIONS)
        uneven = {name: dim for name, dim in result.leading_dims().items() if dim != total}
        if uneven:
            raise TritonError(
                f"model {self.model!r} answered a coalesced request of {total} rows from {len(batch)} "
                f"calls with outputs of other lengths {uneven}, so the answer cannot be split per "
                "call; turn micro-batching off for this model (Runner(micro_batching="
                f"{{{self.model!r}: False}}))",
                status="MICRO_BATCHING",
            )
        shared = SharedOutputs(result.raw)
        split: list[InferResult] = []
        start = 0
        for waiting in batch:
            stop = start + waiting.rows
            split.append(CoalescedInferResult(shared, result.protocol, start, stop, total))
            start = stop
        return split


def _merge_key(inputs: Sequence[PreparedInput], outputs: Sequence[str] | None) -> tuple[Hashable, int]:
    """What calls must share to merge, and this call's rows; (None, rows) when it cannot merge."""
    rows = -1
    parts = []
    for item in inputs:
        shape = item.array.shape
        if not shape or (rows >= 0 and shape[0] != rows):
            return None, 0  # inconsistent batch dimensions: Triton says what is wrong, to this caller
        rows = shape[0]
        parts.append((item.name, item.datatype, item.array.dtype.str, shape[1:]))
    if rows < 1:
        return None, 0
    if len(parts) > 1:
        parts.sort()
    return (None if outputs is None else tuple(outputs), tuple(parts)), rows


def _own_copy(exc: BaseException) -> BaseException:
    """A copy of a batch's error for each of its callers: one exception object raised in many
    tasks would collect all their tracebacks."""
    try:
        copied = copy.copy(exc)
    except Exception:
        return exc
    copied.__cause__ = exc.__cause__
    copied.__suppress_context__ = exc.__suppress_context__
    return copied
