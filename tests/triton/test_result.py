"""InferResult behaves as tritonclient's result for the protocol in use, plus `outputs`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2

from runnerkit.triton import InferResult, Runner
from tests.triton.conftest import digits


def raw_tritonclient_result(runner: Runner, x: np.ndarray) -> Any:
    """The same request made with tritonclient's own synchronous client."""
    module: Any = grpcclient if runner.tritonserver_type == "grpc" else httpclient
    client = module.InferenceServerClient(runner.addresses[runner.tritonserver_type])
    try:
        infer_input = module.InferInput("input", list(x.shape), "FP32")
        infer_input.set_data_from_numpy(x)
        return client.infer("digits_bls", [infer_input])
    finally:
        client.close()


@pytest.fixture
def x() -> np.ndarray:
    return digits(3, seed=21)


@pytest.fixture
def result(triton_runner: Runner, x: np.ndarray) -> InferResult:
    return triton_runner.digits_bls.run(x)


def test_outputs_maps_every_output_to_an_array(result: InferResult) -> None:
    assert isinstance(result.outputs, Mapping)
    assert set(result.outputs) == set(result.output_names) == {"label", "logits"}
    assert result.outputs["logits"].shape == (3, 10) and result.outputs["logits"].dtype == np.float32
    assert result.outputs["label"].shape == (3, 1) and result.outputs["label"].dtype == np.int64
    for name, array in result.outputs.items():
        np.testing.assert_array_equal(array, result.as_numpy(name))


def test_as_numpy_of_an_output_not_returned_is_none(result: InferResult) -> None:
    assert result.as_numpy("no_such_output") is None


def test_the_same_arrays_as_tritonclient(triton_runner: Runner, result: InferResult, x: np.ndarray) -> None:
    raw = raw_tritonclient_result(triton_runner, x)
    assert type(result.raw) is type(raw)
    for name in ("label", "logits"):
        np.testing.assert_array_equal(result.as_numpy(name), raw.as_numpy(name))


def test_model_name_and_version(result: InferResult) -> None:
    assert result.model_name == "digits_bls"
    assert result.model_version == "1"


def test_repr_shows_model_version_and_shapes(result: InferResult) -> None:
    text = repr(result)
    assert "digits_bls" in text and "'1'" in text
    assert "'logits': (3, 10)" in text and "'label': (3, 1)" in text


def test_grpc_results_are_protobuf_or_json(triton_grpc_runner: Runner, x: np.ndarray) -> None:
    result = triton_grpc_runner.digits_bls.run(x)
    assert result.protocol == "grpc"
    response = result.get_response()
    assert isinstance(response, service_pb2.ModelInferResponse)
    assert response.model_name == "digits_bls"
    output = result.get_output("logits")
    assert isinstance(output, service_pb2.ModelInferResponse.InferOutputTensor)
    assert (output.name, output.datatype, list(output.shape)) == ("logits", "FP32", [3, 10])
    as_json = result.get_output("logits", as_json=True)
    assert as_json["name"] == "logits" and as_json["datatype"] == "FP32"
    assert [int(d) for d in as_json["shape"]] == [3, 10]
    response_json = result.get_response(as_json=True)
    assert response_json["model_name"] == "digits_bls"
    assert {o["name"] for o in response_json["outputs"]} == {"label", "logits"}
    assert result.get_output("no_such_output") is None


def test_http_results_are_dicts(triton_http_runner: Runner, x: np.ndarray) -> None:
    result = triton_http_runner.digits_bls.run(x)
    assert result.protocol == "http"
    response = result.get_response()
    assert isinstance(response, dict)
    assert response["model_name"] == "digits_bls"
    output = result.get_output("logits")
    assert output is not None
    assert (output["name"], output["datatype"], output["shape"]) == ("logits", "FP32", [3, 10])
    # tritonclient's HTTP result has no JSON switch: as_json changes nothing there
    assert result.get_output("logits", as_json=True) == output
    assert result.get_response(as_json=True) == response
    assert result.get_output("no_such_output") is None


def test_responses_match_tritonclients_for_the_protocol(
    triton_runner: Runner, result: InferResult, x: np.ndarray
) -> None:
    raw = raw_tritonclient_result(triton_runner, x)
    if triton_runner.tritonserver_type == "grpc":
        ours, theirs = result.get_response(as_json=True), raw.get_response(as_json=True)
    else:
        ours, theirs = result.get_response(), raw.get_response()
    for key in ("model_name", "model_version"):
        assert ours[key] == theirs[key]
    assert _described(ours["outputs"]) == _described(theirs["outputs"])


def _described(outputs: list[dict[str, Any]]) -> list[tuple[str, str, list[int]]]:
    return sorted((o["name"], o["datatype"], [int(d) for d in o["shape"]]) for o in outputs)
