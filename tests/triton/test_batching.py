"""Micro-batching against a real tritonserver: concurrent calls coalesced into one request.

The probe model (written below into a fresh repository) answers, for each request, `y = 2 * x`,
`batch` (the rows of the request it came in: how many rows the runner coalesced) and `text`
(BYTES: each row's sum). A row holding a gate value (>= 1000) makes it create `entered-<gate>`
and wait until the test creates `release-<gate>`: a request held in flight that way lets
callers queue behind it deterministically, without sleeps. A negative value makes it answer with an error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tritonclient.grpc import service_pb2

from runnerkit.exceptions import TritonError
from runnerkit.triton import InferResult, MicroBatching, ModelSpec, Runner
from runnerkit.triton._batching import ENV_API_WORKERS, MicroBatcher, default_max_inflight, settings_for
from runnerkit.triton._result import CoalescedInferResult
from tests.conftest import AsyncLoop
from tests.triton.conftest import inference_counts

PROBE_CONFIG = """
name: "probe"
backend: "python"
max_batch_size: 16
dynamic_batching {}
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [
  { name: "y" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "batch" data_type: TYPE_INT64 dims: [ 1 ] },
  { name: "text" data_type: TYPE_STRING dims: [ 1 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

PROBE_MODEL = """
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

RELEASE_DIR = {release_dir!r}


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            for gate in sorted({{int(v) for v in x[x >= 1000]}}):
                open(os.path.join(RELEASE_DIR, f"entered-{{gate}}"), "w").close()
                path = os.path.join(RELEASE_DIR, f"release-{{gate}}")
                deadline = time.monotonic() + 60
                while not os.path.exists(path) and time.monotonic() < deadline:
                    time.sleep(0.005)
            if (x < 0).any():
                error = pb_utils.TritonError("probe refuses negative values")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            rows = x.shape[0]
            text = np.array([[f"{{v:g}}".encode()] for v in x.sum(axis=1)], dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("y", (x * 2).astype(np.float32)),
                        pb_utils.Tensor("batch", np.full((rows, 1), rows, dtype=np.int64)),
                        pb_utils.Tensor("text", text),
                    ]
                )
            )
        return responses
"""

# No batch dimension: nothing to coalesce along.
PLAIN_CONFIG = """
name: "plain"
backend: "python"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 2 ] } ]
"""

PLAIN_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("y", pb_utils.get_input_tensor_by_name(r, "x").as_numpy())]
            )
            for r in requests
        ]
"""

WAIT = 30.0  # bound of every poll below


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("release")


@pytest.fixture(scope="module")
def probe_repository(tmp_path_factory: pytest.TempPathFactory, release_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("batching_repository")
    (root / "probe" / "1").mkdir(parents=True)
    (root / "probe" / "config.pbtxt").write_text(PROBE_CONFIG)
    (root / "probe" / "1" / "model.py").write_text(PROBE_MODEL.format(release_dir=str(release_dir)))
    (root / "plain" / "1").mkdir(parents=True)
    (root / "plain" / "config.pbtxt").write_text(PLAIN_CONFIG)
    (root / "plain" / "1" / "model.py").write_text(PLAIN_MODEL)
    return root


@pytest.fixture(scope="module")
def probe_grpc_runner(aio: AsyncLoop, probe_repository: Path) -> Iterator[Runner]:
    # One request in flight, so that everything sent meanwhile waits and is coalesced.
    runner = Runner(
        "probe_grpc",
        model_repository=probe_repository,
        tritonserver_type="grpc",
        micro_batching=MicroBatching(max_inflight=1),
    )
    with runner:
        yield runner


@pytest.fixture(scope="module")
def probe_http_runner(aio: AsyncLoop, probe_grpc_runner: Runner) -> Iterator[Runner]:
    url = probe_grpc_runner.addresses["http"]
    one = MicroBatching(max_inflight=1)
    with Runner("probe_http", url=url, tritonserver_type="http", micro_batching=one) as runner:
        yield runner


@pytest.fixture(params=["grpc", "http"])
def probe_runner(request: pytest.FixtureRequest) -> Runner:
    runner: Runner = request.getfixturevalue(f"probe_{request.param}_runner")
    return runner


class Gates:
    """Gate values for the probe, each released once by creating its file."""

    def __init__(self, release_dir: Path) -> None:
        self.release_dir = release_dir
        self.next = 1000

    def new(self) -> float:
        self.next += 1
        return float(self.next)

    def entered(self, gate: float) -> bool:
        """Whether a request holding `gate` has reached the model."""
        return (self.release_dir / f"entered-{int(gate)}").exists()

    def release(self, gate: float) -> None:
        (self.release_dir / f"release-{int(gate)}").touch()


@pytest.fixture(scope="module")
def gates(release_dir: Path) -> Gates:
    return Gates(release_dir)


def rows(count: int, width: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 100, (count, width)).astype(np.float32)


def batcher_of(runner: Runner, model: str = "probe") -> MicroBatcher:
    found = [b for (_, name, _), b in runner._batchers.items() if name == model and b is not None]
    assert len(found) == 1, f"expected one micro-batcher for {model!r}, got {found}"
    return found[0]


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT} s: {what}")
        await asyncio.sleep(0.002)


async def counts_after(runner: Runner, expected: tuple[int, int]) -> tuple[int, int]:
    """Triton's (success, fail) request counts once they reach `expected` (it updates them just
    after answering), or whatever they are after the bound."""
    deadline = time.monotonic() + 10
    while (counts := await inference_counts(runner, "probe")) != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return counts


async def hold(runner: Runner, gates: Gates) -> tuple[asyncio.Future[InferResult], float, MicroBatcher]:
    """A request held in flight by a new gate: its future, the gate, the probe's micro-batcher."""
    gate = gates.new()
    held = asyncio.ensure_future(runner.probe.async_run(np.full((1, 3), gate, dtype=np.float32)))
    await wait_for(lambda: bool(runner._batchers) and batcher_of(runner).inflight == 1, "a request in flight")
    return held, gate, batcher_of(runner)


async def behind_a_gate(
    runner: Runner, gates: Gates, calls: list[Callable[[], Awaitable[InferResult]]], queued: int | None = None
) -> tuple[InferResult, list[Any]]:
    """Hold one request in flight, start `calls` while it is, wait until `queued` of them
    (default all) wait in the micro-batcher, release the gate; the gate's result and the calls'
    results (or exceptions)."""
    held, gate, batcher = await hold(runner, gates)
    tasks = [asyncio.ensure_future(call()) for call in calls]
    expected = len(calls) if queued is None else queued
    await wait_for(lambda: len(batcher._waiting) == expected, f"{expected} calls waiting")
    gates.release(gate)
    results = await asyncio.gather(*tasks, return_exceptions=True)
    return await held, results


# -- coalescing ------------------------------------------------------------------------------------


def test_concurrent_callers_get_exactly_their_own_rows(
    aio: AsyncLoop, probe_runner: Runner, gates: Gates
) -> None:
    inputs = [rows(n, seed=i) for i, n in enumerate([1, 3, 2, 1, 4])]
    total = sum(len(x) for x in inputs)

    async def scenario() -> tuple[list[Any], list[InferResult], tuple[int, int], tuple[int, int]]:
        before = await inference_counts(probe_runner, "probe")
        _, results = await behind_a_gate(
            probe_runner, gates, [lambda x=x: probe_runner.probe.async_run(x) for x in inputs]
        )
        # The gate and one coalesced request: two requests for six calls.
        after = await counts_after(probe_runner, (before[0] + 2, before[1]))
        alone = [await probe_runner.probe.async_run(x) for x in inputs]  # nothing in flight: direct
        return results, alone, before, after

    results, alone, before, after = aio.run(scenario())
    assert after == (before[0] + 2, before[1])
    for x, result, single in zip(inputs, results, alone):
        assert isinstance(result, CoalescedInferResult)
        assert type(single) is InferResult
        np.testing.assert_array_equal(result.as_numpy("batch"), np.full((len(x), 1), total))
        np.testing.assert_array_equal(single.as_numpy("batch"), np.full((len(x), 1), len(x)))
        for name in ("y", "text"):
            np.testing.assert_array_equal(result.as_numpy(name), single.as_numpy(name))
            np.testing.assert_array_equal(result.outputs[name], single.outputs[name])
        np.testing.assert_array_equal(result.as_numpy("y"), x * 2)
        assert set(result.outputs) == {"y", "batch", "text"}
        assert result.as_numpy("no_such_output") is None
        assert (result.model_name, result.model_version) == ("probe", "1")


def test_a_coalesced_callers_response_holds_only_its_rows(
    aio: AsyncLoop, probe_runner: Runner, gates: Gates
) -> None:
    inputs = [rows(2, seed=10), rows(3, seed=11)]

    async def scenario() -> tuple[list[Any], list[InferResult]]:
        _, results = await behind_a_gate(
            probe_runner, gates, [lambda x=x: probe_runner.probe.async_run(x) for x in inputs]
        )
        return results, [await probe_runner.probe.async_run(x) for x in inputs]

    results, alone = aio.run(scenario())
    for x, result, single in zip(inputs, results, alone):
        assert isinstance(result, CoalescedInferResult)
        response, expected = result.get_response(), single.get_response()
        if probe_runner.tritonserver_type == "grpc":
            assert isinstance(response, service_pb2.ModelInferResponse)
            assert [(o.name, o.datatype, list(o.shape)) for o in response.outputs] == [
                (o.name, o.datatype, list(o.shape)) for o in expected.outputs
            ]
            # Byte for byte what Triton answers this caller's rows alone, apart from the batch size.
            for index, output in enumerate(response.outputs):
                if output.name != "batch":
                    assert response.raw_output_contents[index] == expected.raw_output_contents[index]
            assert result.get_output("y").shape == [len(x), 3]
            assert result.get_output("y", as_json=True)["shape"] == [str(len(x)), "3"]
            assert result.get_response(as_json=True)["model_name"] == "probe"
        else:
            assert isinstance(response, dict)
            by_name = {o["name"]: o for o in response["outputs"]}
            assert by_name["y"]["shape"] == [len(x), 3]
            assert by_name["y"]["data"] == (x * 2).ravel().tolist()
            assert by_name["text"]["data"] == [f"{v:g}" for v in x.sum(axis=1)]
            assert result.get_output("text")["shape"] == [len(x), 1]


def test_calls_that_cannot_merge_go_separately(aio: AsyncLoop, probe_runner: Runner, gates: Gates) -> None:
    model = probe_runner.probe
    calls: dict[str, Callable[[], Awaitable[InferResult]]] = {
        "width3_a": lambda: model.async_run(rows(1, 3, seed=1)),
        "width4": lambda: model.async_run(rows(2, 4, seed=2)),  # other non-batch dimensions
        "width3_b": lambda: model.async_run(rows(2, 3, seed=3)),
        "only_y": lambda: model.async_run(rows(1, 3, seed=4), outputs=["y"]),  # other outputs
        "priority": lambda: model.async_run(rows(1, 3, seed=5), priority=1),  # per-call options
        "request_id": lambda: model.async_run(rows(1, 3, seed=6), request_id="mine"),
        "parameters": lambda: model.async_run(rows(1, 3, seed=7), parameters={"k": 1}),
        "width3_c": lambda: model.async_run(rows(1, 3, seed=8)),
    }

    async def scenario() -> list[Any]:
        # Calls with options go straight out: only the other five wait.
        _, results = await behind_a_gate(probe_runner, gates, list(calls.values()), queued=5)
        return results

    results = dict(zip(calls, aio.run(scenario())))
    batch = {name: int(r.as_numpy("batch")[0, 0]) for name, r in results.items() if name != "only_y"}
    assert batch == {
        "width3_a": 4,
        "width3_b": 4,
        "width3_c": 4,  # the three width-3 calls, one request of 1 + 2 + 1 rows
        "width4": 2,
        "priority": 1,
        "request_id": 1,
        "parameters": 1,
    }
    assert results["only_y"].output_names == ("y",)
    assert results["request_id"].get_response(as_json=True)["id"] == "mine"


def test_an_error_reaches_every_caller_of_its_batch(
    aio: AsyncLoop, probe_runner: Runner, gates: Gates
) -> None:
    bad = rows(1, seed=1)
    bad[0, 1] = -1.0
    model = probe_runner.probe
    calls = [
        lambda: model.async_run(rows(2, seed=0)),
        lambda: model.async_run(bad),
        lambda: model.async_run(rows(1, seed=2)),
        lambda: model.async_run(rows(1, 4, seed=3)),  # another shape: another request
    ]

    async def scenario() -> list[Any]:
        _, results = await behind_a_gate(probe_runner, gates, calls)
        return results

    first, second, third, other = aio.run(scenario())
    for error in (first, second, third):
        assert isinstance(error, TritonError)
        assert "probe refuses negative values" in str(error)
    assert first is not second  # each caller raises its own exception
    assert isinstance(other, InferResult)
    assert int(other.as_numpy("batch")[0, 0]) == 1


def test_a_cancelled_caller_leaves_the_others_their_answers(
    aio: AsyncLoop, probe_runner: Runner, gates: Gates
) -> None:
    model = probe_runner.probe
    inner_gate = gates.new()
    gated = rows(1, seed=0)
    gated[0, 0] = inner_gate
    inputs = [gated, rows(2, seed=1), rows(1, seed=2), rows(1, seed=3)]

    async def scenario() -> tuple[list[Any], int]:
        held, outer_gate, batcher = await hold(probe_runner, gates)
        tasks = [asyncio.ensure_future(model.async_run(x)) for x in inputs]
        await wait_for(lambda: len(batcher._waiting) == 4, "four waiting")
        tasks[3].cancel()  # cancelled while waiting: it never goes out
        await wait_for(lambda: len(batcher._waiting) == 3, "the cancelled call gone from the queue")
        gates.release(outer_gate)
        await held
        # The three others went out as one request, which the inner gate now holds in the model.
        await wait_for(lambda: gates.entered(inner_gate), "the batch in the model")
        tasks[2].cancel()  # cancelled while its batch is in flight
        gates.release(inner_gate)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        after = await model.async_run(rows(1, seed=4))  # the batcher still works
        return results, int(after.as_numpy("batch")[0, 0])

    results, after_batch = aio.run(scenario())
    assert isinstance(results[2], asyncio.CancelledError)
    assert isinstance(results[3], asyncio.CancelledError)
    for x, result in zip(inputs[:2], results[:2]):
        assert isinstance(result, InferResult)
        np.testing.assert_array_equal(result.as_numpy("y"), x * 2)
        assert int(result.as_numpy("batch")[0, 0]) == 4  # 1 + 2 + 1 rows: the cancelled one's too
    assert after_batch == 1


def test_a_full_batch_goes_out_without_waiting_for_a_free_slot(
    aio: AsyncLoop, probe_grpc_runner: Runner, gates: Gates
) -> None:
    model = probe_grpc_runner.probe

    async def scenario() -> tuple[list[InferResult], int, int]:
        held, gate, batcher = await hold(probe_grpc_runner, gates)
        # 16 rows (the model's max_batch_size) and then one more call
        tasks = [asyncio.ensure_future(model.async_run(rows(4, seed=i))) for i in range(4)]
        await wait_for(lambda: batcher.inflight == 2, "the full batch sent at once")
        waiting_after_full = len(batcher._waiting)
        tasks.append(asyncio.ensure_future(model.async_run(rows(1, seed=9))))
        await wait_for(lambda: len(batcher._waiting) == 1, "the next call waiting")
        gates.release(gate)
        await held
        results = await asyncio.gather(*tasks)
        return results, waiting_after_full, len(batcher._waiting)

    results, waiting_after_full, waiting_at_end = aio.run(scenario())
    assert waiting_after_full == 0
    assert [int(r.as_numpy("batch")[0, 0]) for r in results] == [16, 16, 16, 16, 1]
    assert waiting_at_end == 0


def test_sequential_calls_go_straight_out(aio: AsyncLoop, probe_runner: Runner) -> None:
    async def scenario() -> tuple[list[InferResult], tuple[int, int], tuple[int, int]]:
        before = await inference_counts(probe_runner, "probe")
        results = [await probe_runner.probe.async_run(rows(2, seed=i)) for i in range(3)]
        return results, before, await counts_after(probe_runner, (before[0] + 3, before[1]))

    results, before, after = aio.run(scenario())
    assert after == (before[0] + 3, before[1])
    assert all(type(r) is InferResult and int(r.as_numpy("batch")[0, 0]) == 2 for r in results)


# -- settings --------------------------------------------------------------------------------------


def test_micro_batching_off_sends_every_call_alone(aio: AsyncLoop, probe_grpc_runner: Runner) -> None:
    with Runner("probe_off", url=probe_grpc_runner.addresses["grpc"], micro_batching=False) as runner:

        async def many() -> list[InferResult]:
            return await asyncio.gather(*(runner.probe.async_run(rows(1, seed=i)) for i in range(12)))

        results = aio.run(many())
    assert all(int(r.as_numpy("batch")[0, 0]) == 1 for r in results)
    assert not any(isinstance(r, CoalescedInferResult) for r in results)


def test_asking_to_micro_batch_a_model_without_batches_is_a_warning(
    aio: AsyncLoop, probe_grpc_runner: Runner, caplog: pytest.LogCaptureFixture
) -> None:
    asked = {"plain": True, "probe": False}
    with Runner("probe_asked", url=probe_grpc_runner.addresses["grpc"], micro_batching=asked) as runner:

        async def many() -> list[InferResult]:
            x = np.array([1.0, 2.0], dtype=np.float32)
            return await asyncio.gather(*(runner.plain.async_run(x * i) for i in range(4)))

        with caplog.at_level("WARNING", logger="runnerkit.triton"):
            results = aio.run(many())
        decided = dict(runner._batchers)
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result.as_numpy("y"), [i, 2 * i])
    warnings = [r.getMessage() for r in caplog.records if "micro_batching" in r.getMessage()]
    assert len(warnings) == 1
    assert "'plain'" in warnings[0] and "max_batch_size > 0" in warnings[0]
    assert decided and all(batcher is None for batcher in decided.values())  # calls went out alone


def spec(text: str) -> ModelSpec:
    return ModelSpec.from_text(text, "m")


BATCHED = 'name: "m" max_batch_size: 8 input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]'
DYNAMIC = BATCHED + " dynamic_batching {}"
RAGGED = DYNAMIC.replace("dims: [ 2 ]", "dims: [ 2 ] allow_ragged_batch: true")
UNBATCHED = 'name: "m" max_batch_size: 0 input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]'


@pytest.mark.parametrize(
    ("option", "config", "expected"),
    [
        (None, DYNAMIC, MicroBatching()),  # automatic: Triton may merge its requests anyway
        (None, BATCHED, None),  # automatic, no dynamic batching: left alone
        (True, BATCHED, MicroBatching()),
        (MicroBatching(max_inflight=3), BATCHED, MicroBatching(max_inflight=3)),
        (False, DYNAMIC, None),
        (True, UNBATCHED, None),  # no batch dimension to concatenate along
        (True, RAGGED, None),
        ({"m": False}, DYNAMIC, None),
        ({"other": False}, DYNAMIC, MicroBatching()),
        ({"m": MicroBatching(max_batch_size=4)}, BATCHED, MicroBatching(max_batch_size=4)),
    ],
)
def test_which_models_are_micro_batched(option: Any, config: str, expected: MicroBatching | None) -> None:
    assert settings_for(option, spec(config)) == expected


@pytest.mark.parametrize(
    ("api_workers", "expected"), [(None, 2), ("1", 2), ("2", 1), ("8", 1), ("none", 2), ("0", 2)]
)
def test_default_requests_in_flight_follow_the_api_workers(
    monkeypatch: pytest.MonkeyPatch, api_workers: str | None, expected: int
) -> None:
    # Several production API workers share one tritonserver: each keeps one request in flight.
    if api_workers is None:
        monkeypatch.delenv(ENV_API_WORKERS, raising=False)
    else:
        monkeypatch.setenv(ENV_API_WORKERS, api_workers)
    assert default_max_inflight() == expected


@pytest.mark.parametrize("bad", [{"max_inflight": 0}, {"max_batch_size": -1}, {"max_inflight": 1.5}])
def test_micro_batching_settings_are_checked(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        MicroBatching(**bad)


@pytest.mark.parametrize("bad", ["yes", 2, {"probe": "on"}])
def test_runner_rejects_an_unknown_micro_batching_setting(bad: Any) -> None:
    with pytest.raises(TypeError, match="micro_batching"):
        Runner("r", url="127.0.0.1:9", micro_batching=bad)
