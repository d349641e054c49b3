"""runner.<model>.run / async_run against real tritonservers, over gRPC and HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from runnerkit.exceptions import ModelNotFoundError, RunnerNotStartedError, TritonError
from runnerkit.triton import InferResult, Model, Runner
from tests.conftest import SAMPLES, AsyncLoop
from tests.triton.conftest import digits, onnx_logits

EXAMPLE_MODELS = [
    "digits_bls",
    "digits_onnx",
    "digits_pipeline",
    "digits_postprocess",
    "digits_preprocess",
    "digits_torchscript",
]


# -- models as attributes ----------------------------------------------------------------------


def test_every_model_is_an_attribute_and_listed_by_dir(triton_runner: Runner) -> None:
    for name in EXAMPLE_MODELS:
        model = getattr(triton_runner, name)
        assert isinstance(model, Model)
        assert model.name == name
        assert name in dir(triton_runner)
    assert set(EXAMPLE_MODELS) <= set(triton_runner.models)


def test_unknown_model_raises_attribute_error_listing_the_models(triton_runner: Runner) -> None:
    with pytest.raises(AttributeError) as caught:
        _ = triton_runner.digits_onxn
    assert isinstance(caught.value, ModelNotFoundError)
    message = str(caught.value)
    assert "'digits_onxn'" in message
    for name in EXAMPLE_MODELS:
        assert name in message
    assert not hasattr(triton_runner, "no_such_model")


def test_attached_runner_learns_its_models_from_the_server(triton_http_runner: Runner) -> None:
    # This runner was given only a URL: its models come from Triton's repository index.
    assert triton_http_runner.model_repository is None
    assert set(EXAMPLE_MODELS) <= set(triton_http_runner.model_names)


def test_attached_runner_before_start_says_it_is_not_started() -> None:
    # Nothing listens there and nothing is contacted: the model list is unknown until start.
    runner = Runner("attached", url="127.0.0.1:9", tritonserver_type="grpc")
    with pytest.raises(RunnerNotStartedError, match=r"model 'digits_onnx' of runner 'attached'"):
        _ = runner.digits_onnx


# -- inputs: positional or keyword, matched by name ---------------------------------------------


def test_positional_inputs_follow_the_config_order(extra_runner: Runner) -> None:
    x = np.array([[5.0, 1.0]], dtype=np.float32)
    y = np.array([[2.0, 4.0]], dtype=np.float32)
    n = np.array([[3]], dtype=np.int64)
    result = extra_runner.arith.run(x, y, n)
    np.testing.assert_array_equal(result.as_numpy("out"), (x - y) * 3)


def test_keyword_inputs_are_matched_by_name_in_any_order(extra_runner: Runner) -> None:
    x = np.array([[5.0, 1.0], [0.5, 0.25]], dtype=np.float32)
    y = np.array([[2.0, 4.0], [1.0, 1.0]], dtype=np.float32)
    n = np.array([[3], [-2]], dtype=np.int64)
    reversed_order = extra_runner.arith.run(n=n, y=y, x=x)
    config_order = extra_runner.arith.run(x=x, y=y, n=n)
    expected = (x - y) * n.astype(np.float32)
    np.testing.assert_array_equal(reversed_order.as_numpy("out"), expected)
    np.testing.assert_array_equal(config_order.as_numpy("out"), expected)


def test_mixing_positional_and_keyword_inputs_is_a_type_error(extra_runner: Runner) -> None:
    x = np.zeros((1, 2), dtype=np.float32)
    with pytest.raises(TypeError, match=r"either all positionally .* or all by keyword") as caught:
        extra_runner.arith.run(x, y=x, n=np.ones((1, 1), dtype=np.int64))
    assert "'arith'" in str(caught.value)
    assert "['x', 'y', 'n']" in str(caught.value)


def test_lists_are_accepted_and_converted_to_the_input_dtype(extra_runner: Runner) -> None:
    result = extra_runner.arith.run(x=[[1, 2]], y=[[0.5, 0.5]], n=[[2]])
    out = result.as_numpy("out")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[1.0, 3.0]])


# -- data types ---------------------------------------------------------------------------------


def test_fp16_int64_bool_and_bytes_inputs_arrive_intact(extra_runner: Runner) -> None:
    half = np.array([1.5, -0.25, 1024.0], dtype=np.float16)
    flag = np.array([True, False, True, True])
    text = np.array(["héllo", "world"], dtype=object)
    result = extra_runner.types.run(half, np.array([41], dtype=np.int64), flag, text)
    doubled = result.as_numpy("half_doubled")
    assert doubled.dtype == np.float16
    np.testing.assert_array_equal(doubled, half * np.float16(2))
    np.testing.assert_array_equal(result.as_numpy("count_plus_one"), [42])
    np.testing.assert_array_equal(result.as_numpy("flag_not"), ~flag)
    assert [t.decode() for t in result.as_numpy("text_upper")] == ["HÉLLO", "WORLD"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ([b"raw \x00\xff bytes", b"x"], [b"RAW \x00\xff BYTES", b"X"]),
        (np.array([b"ab", b"cd"]), [b"AB", b"CD"]),  # numpy fixed-width bytes (dtype S)
        (np.array(["ab", "cd"]), [b"AB", b"CD"]),  # numpy unicode (dtype U)
        (["ünï"], ["ÜNÏ".encode()]),  # str is sent as UTF-8
    ],
    ids=["list-of-bytes", "numpy-S", "numpy-U", "list-of-str"],
)
def test_bytes_inputs_accept_str_and_bytes(extra_runner: Runner, text: object, expected: list[bytes]) -> None:
    result = extra_runner.types.run(half=np.zeros(1, dtype=np.float16), count=[0], flag=[True], text=text)
    assert list(result.as_numpy("text_upper")) == expected


def test_bf16_inputs_travel_as_bfloat16(extra_runner: Runner) -> None:
    # Values exactly representable in bfloat16 come back unchanged after widening to float32.
    values = np.array([1.5, -2.0, 0.0078125, 256.0], dtype=np.float32)
    result = extra_runner.bf16_echo.run(values)
    np.testing.assert_array_equal(result.as_numpy("as_fp32"), values)


# -- outputs, results -----------------------------------------------------------------------------


def test_all_outputs_by_default_and_a_selection_on_request(triton_runner: Runner) -> None:
    x = digits(3)
    everything = triton_runner.digits_bls.run(x)
    assert set(everything.outputs) == {"label", "logits"}
    only_label = triton_runner.digits_bls.run(x, outputs=["label"])
    assert set(only_label.outputs) == {"label"}
    assert only_label.as_numpy("logits") is None
    np.testing.assert_array_equal(only_label.as_numpy("label"), everything.as_numpy("label"))


def test_unknown_output_name_is_triton_error(triton_runner: Runner) -> None:
    with pytest.raises(TritonError) as caught:
        triton_runner.digits_onnx.run(digits(1), outputs=["no_such_output"])
    assert caught.value.status is not None
    assert "no_such_output" in caught.value.message


# -- versions -------------------------------------------------------------------------------------


def test_default_version_is_the_policys_latest(triton_runner: Runner, example_repository: Path) -> None:
    x = digits(4, seed=1)
    result = triton_runner.digits_onnx.run(x)
    assert result.model_version == "2"
    np.testing.assert_allclose(result.as_numpy("logits"), onnx_logits(example_repository, 2, x), atol=1e-4)


def test_with_version_pins_a_version(triton_runner: Runner, example_repository: Path) -> None:
    x = digits(4, seed=2)
    v1 = triton_runner.digits_onnx.with_version(1).run(x)
    v2 = triton_runner.digits_onnx.with_version("2").run(x)
    assert (v1.model_version, v2.model_version) == ("1", "2")
    np.testing.assert_allclose(v1.as_numpy("logits"), onnx_logits(example_repository, 1, x), atol=1e-4)
    np.testing.assert_allclose(v2.as_numpy("logits"), onnx_logits(example_repository, 2, x), atol=1e-4)
    assert not np.allclose(v1.as_numpy("logits"), v2.as_numpy("logits"), atol=1e-2)


def test_a_version_the_policy_does_not_serve_is_triton_error(triton_runner: Runner) -> None:
    with pytest.raises(TritonError) as caught:
        triton_runner.digits_onnx.with_version(7).run(digits(1))
    assert caught.value.status is not None
    assert "digits_onnx" in caught.value.message


def test_with_version_under_a_specific_version_policy(extra_runner: Runner) -> None:
    # versions 1, 2 and 3 on disk; the policy serves 1 and 3
    default = extra_runner.versioned.run([1.0])
    assert default.model_version == "3" and default.as_numpy("version").item() == 3
    pinned = extra_runner.versioned.with_version(1).run([1.0])
    assert pinned.model_version == "1" and pinned.as_numpy("version").item() == 1
    with pytest.raises(TritonError) as caught:
        extra_runner.versioned.with_version(2).run([1.0])
    assert caught.value.status is not None and "versioned" in caught.value.message


@pytest.mark.parametrize("version", ["latest", "-1", 1.5, ""])
def test_with_version_rejects_what_is_not_a_version_number(triton_runner: Runner, version: object) -> None:
    with pytest.raises(ValueError, match="a version is a positive integer"):
        triton_runner.digits_onnx.with_version(version)  # type: ignore[arg-type]


# -- the ensemble and the BLS model ---------------------------------------------------------------


def test_ensemble_pipeline_classifies_the_sample_images(triton_runner: Runner) -> None:
    index = json.loads((SAMPLES / "index.json").read_text())
    names = sorted(index)
    images = np.array([[(SAMPLES / name).read_bytes()] for name in names], dtype=object)
    result = triton_runner.digits_pipeline.run(images)
    labels = result.as_numpy("label").reshape(-1).tolist()
    assert labels == [index[name]["label"] for name in names]
    probability = result.as_numpy("probability")
    assert probability.shape == (len(names), 1)
    assert np.all((probability > 0) & (probability <= 1))


def test_bls_model_returns_the_classifiers_logits_and_label(triton_runner: Runner) -> None:
    x = digits(5, seed=3)
    bls = triton_runner.digits_bls.run(x)
    direct = triton_runner.digits_onnx.run(x)
    np.testing.assert_allclose(bls.as_numpy("logits"), direct.as_numpy("logits"), atol=1e-5)
    np.testing.assert_array_equal(bls.as_numpy("label").reshape(-1), direct.as_numpy("logits").argmax(axis=1))


# -- sequences and request options ----------------------------------------------------------------


def test_sequence_id_start_and_end_pass_through(extra_runner: Runner) -> None:
    # Two interleaved sequences: the model keeps a running total per correlation id.
    sequence_id = 1000 + (1 if extra_runner.tritonserver_type == "http" else 0)
    other = sequence_id + 100
    seq = extra_runner.sequence_sum
    first = seq.run([[5]], sequence_id=sequence_id, sequence_start=True)
    seq.run([[1000]], sequence_id=other, sequence_start=True)
    second = seq.run([[7]], sequence_id=sequence_id)
    last = seq.run([[11]], sequence_id=sequence_id, sequence_end=True)
    other_last = seq.run([[1]], sequence_id=other, sequence_end=True)
    assert [r.as_numpy("total").item() for r in (first, second, last)] == [5, 12, 23]
    assert other_last.as_numpy("total").item() == 1001
    assert {r.as_numpy("corrid").item() for r in (first, second, last)} == {sequence_id}
    assert [r.as_numpy("flags").tolist() for r in (first, second, last)] == [[[1, 0]], [[0, 0]], [[0, 1]]]
    # after the end, the same id starts afresh
    again = seq.run([[2]], sequence_id=sequence_id, sequence_start=True, sequence_end=True)
    assert again.as_numpy("total").item() == 2


def test_a_sequence_model_without_a_sequence_id_is_triton_error(extra_runner: Runner) -> None:
    with pytest.raises(TritonError) as caught:
        extra_runner.sequence_sum.run([[1]])
    assert caught.value.status is not None
    assert "correlation ID" in caught.value.message


def test_parameters_and_request_id_reach_triton(extra_runner: Runner) -> None:
    result = extra_runner.types.run(
        half=np.zeros(1, dtype=np.float16),
        count=[1],
        flag=[False],
        text=["a"],
        request_id="req-42",
        priority=1,
        parameters={"label": "blue", "limit": 3, "ratio": 0.5, "strict": True},
    )
    seen = json.loads(result.as_numpy("parameters")[0])
    assert {k: seen[k] for k in ("label", "limit", "ratio", "strict")} == {
        "label": "blue",
        "limit": 3,
        "ratio": 0.5,
        "strict": True,
    }
    response = result.get_response()
    assert (response.id if result.protocol == "grpc" else response["id"]) == "req-42"


# -- concurrency and calling contexts -------------------------------------------------------------


def test_run_from_worker_threads(extra_runner: Runner) -> None:
    def call(i: int) -> tuple[int, np.ndarray, str]:
        x = np.array([[i, 2 * i]], dtype=np.float32)
        out = extra_runner.arith.run(x=x, y=np.ones_like(x), n=[[i % 5]]).as_numpy("out")
        return i, out, threading.current_thread().name

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(call, range(48)))
    for i, out, _ in results:
        np.testing.assert_array_equal(out, [[(i - 1) * (i % 5), (2 * i - 1) * (i % 5)]])
    assert len({thread for *_, thread in results}) > 1


def test_async_run_concurrently_in_an_event_loop(aio: AsyncLoop, triton_runner: Runner) -> None:
    rows = [digits(1, seed=s) for s in range(16)]

    async def many() -> list[InferResult]:
        return await asyncio.gather(*(triton_runner.digits_onnx.async_run(x) for x in rows))

    results = aio.run(many())
    batch = triton_runner.digits_onnx.run(np.concatenate(rows))
    got = np.concatenate([r.as_numpy("logits") for r in results])
    np.testing.assert_allclose(got, batch.as_numpy("logits"), atol=1e-5)


def test_run_inside_an_event_loop_is_a_clear_error(aio: AsyncLoop, triton_runner: Runner) -> None:
    async def blocking_call() -> None:
        triton_runner.digits_onnx.run(digits(1))

    with pytest.raises(RuntimeError, match=r"await runner\.<model>\.async_run"):
        aio.run(blocking_call())


def test_async_run_on_a_fresh_event_loop(triton_runner: Runner) -> None:
    # asyncio.run makes a new loop: the runner makes a client for it.
    result = asyncio.run(triton_runner.digits_onnx.async_run(digits(2)))
    assert result.as_numpy("logits").shape == (2, 10)


def test_model_handles_expose_config_and_metadata(aio: AsyncLoop, triton_runner: Runner) -> None:
    spec = aio.run(triton_runner.digits_onnx.config())
    assert spec.input_names == ("input",) and spec.output_names == ("logits",)
    assert spec.max_batch_size == 64
    pinned = triton_runner.digits_onnx.with_version(1)
    assert repr(pinned) == f"<Model 'digits_onnx' of runner {triton_runner.name!r}, version=1>"
    metadata = aio.run(pinned.metadata())
    versions = metadata["versions"] if isinstance(metadata, dict) else list(metadata.versions)
    assert versions == ["1"]
