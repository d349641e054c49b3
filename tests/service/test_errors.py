"""Error statuses as JSON `{"error", "type"}`: 400, 404, 405, 413, 500 (503 is in test_readiness)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import numpy as np

from runnerkit.testing import ServeProcess
from tests.service.stack import ECHO_MAX_REQUEST_BYTES


def test_bad_input_is_400_naming_what_was_expected(echo: httpx.Client) -> None:
    response = echo.post("/echo_json", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "BadRequestError"
    assert body["error"].startswith("JSON input: the body is not valid JSON: Expecting property name")


def test_runner_input_validation_is_400(echo: httpx.Client) -> None:
    good = echo.post("/logits", json=np.zeros((2, 64)).tolist())
    assert good.status_code == 200, good.text
    assert np.array(good.json()["logits"]).shape == (2, 10)
    # The descriptor does not enforce the shape; the runner checks it against the model config.
    response = echo.post("/logits", json=np.zeros((1, 63)).tolist())
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "InvalidInputError"
    assert "digits_onnx" in body["error"] and "'input'" in body["error"]
    assert "64" in body["error"] and "63" in body["error"]


def test_payload_over_the_limit_is_413(echo: httpx.Client) -> None:
    fits = echo.post("/reverse_bytes", content=b"x" * ECHO_MAX_REQUEST_BYTES,
                     headers={"content-type": "application/octet-stream"})  # fmt: skip
    assert fits.status_code == 200
    declared = echo.post("/reverse_bytes", content=b"x" * (ECHO_MAX_REQUEST_BYTES + 1),
                         headers={"content-type": "application/octet-stream"})  # fmt: skip
    assert declared.status_code == 413
    assert declared.json()["type"] == "PayloadTooLargeError"
    assert f"over the limit of {ECHO_MAX_REQUEST_BYTES} bytes" in declared.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
        for _ in range(ECHO_MAX_REQUEST_BYTES // 1024 + 8):
            yield b"y" * 1024

    streamed = echo.post(
        "/reverse_bytes", content=chunks(), headers={"content-type": "application/octet-stream"}
    )
    assert streamed.status_code == 413
    assert streamed.json()["type"] == "PayloadTooLargeError"


def test_unexpected_exception_is_500_with_request_id_and_the_traceback_in_the_log(
    echo: httpx.Client, echo_server: ServeProcess
) -> None:
    response = echo.post("/boom", json={}, headers={"x-request-id": "req-4711"})
    assert response.status_code == 500
    body = response.json()
    assert body == {
        "error": "internal server error; see the service log for request id req-4711",
        "type": "InternalServerError",
        "request_id": "req-4711",
    }
    assert response.headers["x-request-id"] == "req-4711"
    assert "secret detail" not in response.text and "Traceback" not in response.text

    generated = echo.post("/boom", json={})
    request_id = generated.json()["request_id"]
    assert len(request_id) == 32 and request_id in generated.json()["error"]

    deadline = time.monotonic() + 10
    while "RuntimeError: secret detail" not in echo_server.log_text():
        assert time.monotonic() < deadline, "the traceback never reached the log"
        time.sleep(0.05)
    log = echo_server.log_text()
    assert "request id req-4711" in log and "Traceback (most recent call last)" in log


def test_wrong_output_type_is_500(echo: httpx.Client) -> None:
    response = echo.post("/wrong_output", json={})
    assert response.status_code == 500
    assert response.json()["type"] == "InternalServerError"


def test_unknown_route_and_method_are_json(echo: httpx.Client) -> None:
    missing = echo.post("/no_such_api", json={})
    assert missing.status_code == 404
    assert missing.json() == {"error": "POST /no_such_api: Not Found", "type": "HTTPException"}
    wrong_method = echo.get("/echo_json")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"] == "GET /echo_json: Method Not Allowed"
