"""Exceptions -> JSON error responses `{"error": ..., "type": ...}` with the right status."""

from __future__ import annotations

import logging
import uuid

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
    (TritonError, 502),
)


def status_for(exc: BaseException) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def error_response(exc: BaseException, *, api: str, request_id: str | None = None) -> Response:
    status = status_for(exc)
    if status == 500:
        request_id = request_id or uuid.uuid4().hex
        logger.error("API %r failed (request id %s)", api, request_id, exc_info=exc)
        body = {
            "error": f"internal server error; see the service log for request id {request_id}",
            "type": "InternalServerError",
            "request_id": request_id,
        }
        return JSONResponse(body, status_code=500, headers={"x-request-id": request_id})
    if status >= 502:
        logger.warning("API %r: %s", api, exc)
    headers = {"retry-after": "1"} if status == 503 else None
    return JSONResponse({"error": str(exc), "type": type(exc).__name__}, status_code=status, headers=headers)
