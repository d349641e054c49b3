"""Exceptions -> JSON error responses `{"error": ..., "type": ...}` with the right status.

| cause                                              | status |
|----------------------------------------------------|--------|
| bad input (descriptor), runner input validation    | 400    |
| Triton refused the request as invalid              | 400    |
| unknown model                                      | 404    |
| body over the service's limit                      | 413    |
| Triton answered with another error                 | 502    |
| Triton unreachable, or the runner not started yet  | 503    |
| Triton's deadline passed                           | 504    |
| anything else (a bug in the API)                   | 500    |

A 500 answer carries a request id (the request's X-Request-ID, else a new one) and no
traceback; the traceback goes to the service log under that id.
"""

from __future__ import annotations

import logging
import uuid

from starlette.exceptions import HTTPException
from starlette.responses import Response

from runnerkit.exceptions import (
    BadRequestError,
    InvalidInputError,
    ModelNotFoundError,
    PayloadTooLargeError,
    RunnerNotStartedError,
    TritonError,
    TritonUnavailableError,
)
from runnerkit.io._json import JSONResponse

logger = logging.getLogger("runnerkit.service")

# Most specific first: TritonUnavailableError is a TritonError.
_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (BadRequestError, 400),
    (InvalidInputError, 400),
    (PayloadTooLargeError, 413),
    (ModelNotFoundError, 404),
    (TritonUnavailableError, 503),
    (RunnerNotStartedError, 503),
)
# Triton's own status (gRPC code name or HTTP status) for errors it answered with.
_TRITON_STATUS = {
    "INVALID_ARGUMENT": 400,
    "400": 400,
    "NOT_FOUND": 404,
    "404": 404,
    "DEADLINE_EXCEEDED": 504,
    "RESOURCE_EXHAUSTED": 503,
}


def status_for(exc: BaseException) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    if isinstance(exc, TritonError):
        return _TRITON_STATUS.get(exc.status or "", 502)
    if isinstance(exc, HTTPException):
        return exc.status_code
    return 500


def error_body(message: str, kind: str, request_id: str | None = None) -> dict[str, str]:
    body = {"error": message, "type": kind}
    if request_id:
        body["request_id"] = request_id
    return body


def error_response(exc: BaseException, *, api: str, request_id: str | None = None) -> Response:
    status = status_for(exc)
    if status == 500:
        request_id = request_id or uuid.uuid4().hex
        logger.error("API %r failed (request id %s)", api, request_id, exc_info=exc)
        body = error_body(
            f"internal server error; see the service log for request id {request_id}",
            "InternalServerError",
            request_id,
        )
        return JSONResponse(body, status_code=500, headers={"x-request-id": request_id})
    if status >= 502:
        logger.warning("API %r: %s", api, exc)
    headers = {"retry-after": "1"} if status == 503 else None
    if isinstance(exc, HTTPException):
        return JSONResponse(error_body(str(exc.detail), "HTTPException"), status_code=status, headers=headers)
    return JSONResponse(error_body(str(exc), type(exc).__name__), status_code=status, headers=headers)
