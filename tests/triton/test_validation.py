"""Inputs are checked against the model configuration before anything is sent.

Each case proves "before the network" twice: runnerkit's protocol client never got the request
(a spy that counts and passes calls through), and Triton's own statistics for the model did not
move. A valid call afterwards moves both by one, so neither check can pass vacuously.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from runnerkit.exceptions import InvalidInputError
from runnerkit.triton import Runner
from runnerkit.triton._client import GrpcClient, HttpClient
from tests.conftest import AsyncLoop
from tests.triton.conftest import inference_counts

ONE_ROW = np.zeros((1, 64), dtype=np.float32)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Names of the models whose requests reached runnerkit's protocol clients."""
    calls: list[str] = []
    for cls in (GrpcClient, HttpClient):

        async def spy(self: Any, model: str, *args: Any, __original: Any = cls.infer, **kwargs: Any) -> Any:
            calls.append(model)
            return await __original(self, model, *args, **kwargs)

        monkeypatch.setattr(cls, "infer", spy)
    yield calls


def assert_rejected_before_sending(
    aio: AsyncLoop,
    runner: Runner,
    sent: list[str],
    model: str,
    bad_call: Callable[[], object],
    good_call: Callable[[], object],
    *fragments: str,
    input_name: str | None,
) -> None:
    before = aio.run(inference_counts(runner, model))
    with pytest.raises(InvalidInputError) as caught:
        bad_call()
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert f"model {model!r}" in message
    assert caught.value.model == model
    assert caught.value.input_name == input_name
    if input_name is not None:
        assert f"input {input_name!r}" in message
    for fragment in fragments:
        assert fragment in message
    assert sent == []
    assert aio.run(inference_counts(runner, model)) == before

    good_call()
    assert sent == [model]
    # Triton updates its statistics just after it answers: poll briefly.
    expected = (before[0] + 1, before[1])
    deadline = time.monotonic() + 10
    while (counts := aio.run(inference_counts(runner, model))) != expected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert counts == expected


CLASSIFIER_CASES: dict[str, tuple[Callable[[Runner], object], tuple[str, ...], str | None]] = {
    "float64-array": (
        lambda r: r.digits_onnx.run(np.zeros((1, 64))),
        ("expected dtype FP32", "got float64", ".astype(np.float32)"),
        "input",
    ),
    "wrong-dim": (
        lambda r: r.digits_onnx.run(np.zeros((1, 63), dtype=np.float32)),
        ("expected shape [batch (1..64), 64], got [1, 63]",),
        "input",
    ),
    "no-batch-dim": (
        lambda r: r.digits_onnx.run(np.zeros(64, dtype=np.float32)),
        ("expected shape [batch (1..64), 64], got [64]",),
        "input",
    ),
    "batch-over-max": (
        lambda r: r.digits_onnx.run(np.zeros((65, 64), dtype=np.float32)),
        ("got [65, 64]",),
        "input",
    ),
    "empty-batch": (
        lambda r: r.digits_onnx.run(np.zeros((0, 64), dtype=np.float32)),
        ("got [0, 64]",),
        "input",
    ),
    "too-many-positional": (
        lambda r: r.digits_onnx.run(ONE_ROW, ONE_ROW),
        ("expected 1 input(s) ['input'], got 2 positional value(s)",),
        None,
    ),
    "no-inputs": (lambda r: r.digits_onnx.run(), ("missing input(s) ['input']",), None),
    "unknown-keyword": (
        lambda r: r.digits_onnx.run(image=ONE_ROW),
        ("unknown input(s) ['image']", "the model's inputs are ['input']"),
        None,
    ),
    "text-for-fp32": (
        lambda r: r.digits_onnx.run([["a"] * 64]),
        ("expected FP32 values (numpy float32)",),
        "input",
    ),
}


@pytest.mark.parametrize("case", list(CLASSIFIER_CASES))
def test_classifier_inputs_are_checked(
    aio: AsyncLoop, triton_runner: Runner, sent: list[str], case: str
) -> None:
    bad_call, fragments, input_name = CLASSIFIER_CASES[case]
    assert_rejected_before_sending(
        aio,
        triton_runner,
        sent,
        "digits_onnx",
        lambda: bad_call(triton_runner),
        lambda: triton_runner.digits_onnx.run(ONE_ROW),
        *fragments,
        input_name=input_name,
    )


def _types_inputs(**overrides: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "half": np.zeros(2, dtype=np.float16),
        "count": np.array([1], dtype=np.int64),
        "flag": np.array([True]),
        "text": np.array(["a"], dtype=object),
    }
    return inputs | overrides


def _arith_inputs(**overrides: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "x": np.zeros((1, 2), dtype=np.float32),
        "y": np.zeros((1, 2), dtype=np.float32),
        "n": np.ones((1, 1), dtype=np.int64),
    }
    return inputs | overrides


EXTRA_CASES: dict[str, tuple[str, dict[str, Any], tuple[str, ...], str | None]] = {
    "float-array-for-int64": ("arith", _arith_inputs(n=np.ones((1, 1))), ("expected dtype INT64",), "n"),
    "float-list-for-int64": ("arith", _arith_inputs(n=[[1.5]]), ("expected INT64 values",), "n"),
    "missing-keyword": ("arith", {"x": _arith_inputs()["x"], "y": _arith_inputs()["y"]}, ("['n']",), None),
    "batch-mismatch-rank": ("arith", _arith_inputs(x=np.zeros(2, np.float32)), ("got [2]",), "x"),
    "float32-for-fp16": (
        "types",
        _types_inputs(half=np.zeros(2, np.float32)),
        ("expected dtype FP16", "got float32"),
        "half",
    ),
    "ints-for-bool": ("types", _types_inputs(flag=[0, 1]), ("expected BOOL values",), "flag"),
    "numbers-for-bytes": (
        "types",
        _types_inputs(text=np.array([1, 2])),
        ("expected BYTES (str or bytes), got dtype int64",),
        "text",
    ),
    "fixed-dim-not-batched": (
        "types",
        _types_inputs(count=np.array([1, 2], dtype=np.int64)),
        ("expected shape [1], got [2]",),
        "count",
    ),
    "extra-rank-not-batched": (
        "types",
        _types_inputs(half=np.zeros((1, 2), np.float16)),
        ("expected shape [any], got [1, 2]",),
        "half",
    ),
    "ints-for-bf16": ("bf16_echo", {"x": np.array([1, 2])}, ("expected BF16",), "x"),
}

GOOD_EXTRA_INPUTS = {
    "arith": _arith_inputs(),
    "types": _types_inputs(),
    "bf16_echo": {"x": np.array([1.0], dtype=np.float32)},
}


@pytest.mark.parametrize("case", list(EXTRA_CASES))
def test_inputs_of_other_data_types_are_checked(
    aio: AsyncLoop, extra_runner: Runner, sent: list[str], case: str
) -> None:
    model, inputs, fragments, input_name = EXTRA_CASES[case]
    handle = getattr(extra_runner, model)
    assert_rejected_before_sending(
        aio,
        extra_runner,
        sent,
        model,
        lambda: handle.run(**inputs),
        lambda: handle.run(**GOOD_EXTRA_INPUTS[model]),
        *fragments,
        input_name=input_name,
    )


def test_mixing_positional_and_keyword_is_rejected_before_sending(
    aio: AsyncLoop, extra_runner: Runner, sent: list[str]
) -> None:
    before = aio.run(inference_counts(extra_runner, "arith"))
    inputs = _arith_inputs()
    with pytest.raises(TypeError):
        extra_runner.arith.run(inputs["x"], y=inputs["y"], n=inputs["n"])
    assert sent == []
    assert aio.run(inference_counts(extra_runner, "arith")) == before


def test_async_run_checks_inputs_too(aio: AsyncLoop, triton_runner: Runner, sent: list[str]) -> None:
    with pytest.raises(InvalidInputError, match="expected dtype FP32"):
        aio.run(triton_runner.digits_onnx.async_run(np.zeros((1, 64), dtype=np.float64)))
    assert sent == []
