"""The /v2 proxy of Triton's KServe v2 endpoints (`--expose-triton`, `expose_triton=True`)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import numpy as np
import pytest
import tritonclient.http as triton_http

from runnerkit.testing import ServeProcess
from tests.service.stack import ECHO_MAX_REQUEST_BYTES, Stack

BATCH = np.random.default_rng(7).random((3, 64), dtype=np.float32)


@pytest.fixture(scope="module")
def triton(stack: Stack) -> Iterator[httpx.Client]:
    """Straight to the tritonserver behind the services, to compare with."""
    with httpx.Client(base_url=f"http://{stack.digits_runner().addresses['http']}", timeout=30) as client:
        yield client


def infer_body(batch: np.ndarray) -> dict:
    return {
        "inputs": [
            {"name": "input", "shape": list(batch.shape), "datatype": "FP32", "data": batch.ravel().tolist()}
        ]
    }


def test_health_as_azure_ml_offers_it(digits: httpx.Client) -> None:
    assert digits.get("/v2/health/ready").status_code == 200
    assert digits.get("/v2/health/live").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/v2",
        "/v2/models/digits_onnx",
        "/v2/models/digits_onnx/versions/1",
        "/v2/models/digits_onnx/config",
        "/v2/models/digits_onnx/versions/2/config",
        "/v2/models/digits_pipeline",
    ],
)
def test_metadata_and_config_are_tritons(digits: httpx.Client, triton: httpx.Client, path: str) -> None:
    proxied = digits.get(path)
    assert proxied.status_code == 200, proxied.text
    assert proxied.headers["content-type"].startswith("application/json")
    assert proxied.json() == triton.get(path).json()


def test_model_readiness(digits: httpx.Client) -> None:
    assert digits.get("/v2/models/digits_onnx/ready").status_code == 200
    assert digits.get("/v2/models/digits_onnx/versions/1/ready").status_code == 200
    assert digits.get("/v2/models/digits_onnx/versions/9/ready").status_code != 200
    unknown = digits.get("/v2/models/no_such_model")
    assert unknown.status_code in (400, 404)
    assert "no_such_model" in unknown.json()["error"]  # Triton's own error, passed through


def test_json_infer_matches_triton_per_version(digits: httpx.Client, triton: httpx.Client) -> None:
    outputs = {}
    for path in ("/v2/models/digits_onnx/infer", "/v2/models/digits_onnx/versions/1/infer"):
        proxied = digits.post(path, json=infer_body(BATCH))
        assert proxied.status_code == 200, proxied.text
        direct = triton.post(path, json=infer_body(BATCH)).json()
        logits = next(o for o in proxied.json()["outputs"] if o["name"] == "logits")
        expected = next(o for o in direct["outputs"] if o["name"] == "logits")
        assert logits["shape"] == [3, 10]
        np.testing.assert_allclose(logits["data"], expected["data"], rtol=1e-6)
        outputs[path] = np.array(logits["data"])
    assert not np.allclose(*outputs.values()), "versions 1 and 2 should be different models"


def test_tritonclient_binary_infer_through_the_proxy(digits_server: ServeProcess, stack: Stack) -> None:
    """tritonclient's HTTP client, pointed at the service, uses the binary tensor extension."""
    proxied = triton_http.InferenceServerClient(urlsplit(digits_server.url).netloc)
    direct = triton_http.InferenceServerClient(stack.digits_runner().addresses["http"])
    try:
        assert proxied.is_server_ready()
        results = []
        for client in (proxied, direct):
            infer_input = triton_http.InferInput("input", list(BATCH.shape), "FP32")
            infer_input.set_data_from_numpy(BATCH, binary_data=True)
            output = triton_http.InferRequestedOutput("logits", binary_data=True)
            results.append(client.infer("digits_onnx", [infer_input], outputs=[output]).as_numpy("logits"))
        np.testing.assert_array_equal(results[0], results[1])
        assert results[0].shape == (3, 10)
    finally:
        proxied.close()
        direct.close()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v2/repository/index"),
        ("POST", "/v2/repository/models/digits_onnx/load"),
        ("POST", "/v2/repository/models/digits_onnx/unload"),
        ("GET", "/v2/models/digits_onnx/stats"),
        ("GET", "/v2/logging"),
        ("GET", "/v2/trace/setting"),
        ("GET", "/v2/systemsharedmemory/status"),
        ("GET", "/v2/cudasharedmemory/status"),
    ],
)
def test_repository_and_control_endpoints_are_not_proxied(
    digits: httpx.Client, triton: httpx.Client, method: str, path: str
) -> None:
    response = digits.request(method, path, json={})
    assert response.status_code == 404
    assert response.json()["type"] == "HTTPException"
    assert triton.get("/v2/models/digits_onnx/ready").status_code == 200  # nothing was unloaded


def test_proxy_in_code_and_body_limit(echo: httpx.Client) -> None:
    assert echo.get("/v2/health/ready").status_code == 200
    big = np.random.default_rng(1).random((64, 64), dtype=np.float32)  # ~80 KiB as JSON
    response = echo.post("/v2/models/digits_onnx/infer", json=infer_body(big))
    assert len(response.request.content) > ECHO_MAX_REQUEST_BYTES
    assert response.status_code == 413
    assert response.json()["type"] == "PayloadTooLargeError"


def test_proxied_requests_are_counted(digits: httpx.Client) -> None:
    def count() -> float:
        for line in digits.get("/metrics").text.splitlines():
            if (
                line.startswith("runnerkit_requests_total{")
                and 'api="triton_proxy"' in line
                and 'status="200"' in line
            ):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = count()
    digits.get("/v2/health/ready")
    assert count() == before + 1
