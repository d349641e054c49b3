"""Reading a request body once, under the service's size limit (413 beyond it)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import Message

from runnerkit.exceptions import PayloadTooLargeError


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, refusing more than `limit` bytes without reading them all first."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(
            f"request body of {declared} bytes is over the limit of {limit} bytes "
            "(the service's max_request_bytes / RUNNERKIT_MAX_REQUEST_BYTES)"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(
                f"request body is over the limit of {limit} bytes "
                "(the service's max_request_bytes / RUNNERKIT_MAX_REQUEST_BYTES)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def read_body(request: Request, limit: int) -> Request:
    """The request with its body read once (under `limit`), replayable by descriptors."""
    body = await read_limited(request, limit)
    replayed = False

    async def receive() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return Request(request.scope, receive)
