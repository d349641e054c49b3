"""Reading a request body once, under the service's size limit (413 beyond it)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Scope

from runnerkit.exceptions import PayloadTooLargeError


def _too_large(size: str | int, limit: int) -> PayloadTooLargeError:
    what = f"request body of {size} bytes is" if isinstance(size, str) else "request body is"
    return PayloadTooLargeError(
        f"{what} over the limit of {limit} bytes "
        "(the service's max_request_bytes / RUNNERKIT_MAX_REQUEST_BYTES)"
    )


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, refusing more than `limit` bytes without reading them all first."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(declared, limit)
    # Straight from the ASGI receive channel: Request.stream()'s async generator costs as much
    # as the rest of this function for the small bodies most inference calls send.
    receive = request.receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect()


class BufferedRequest(Request):
    """A request whose body has been read: `body()` and `stream()` give it again, as often as
    asked, and the ASGI channel once, so input descriptors (and a multipart parser) read it as
    they would any request."""

    def __init__(self, scope: Scope, body: bytes) -> None:
        replayed = False

        async def receive() -> Message:  # for code that reads the ASGI channel itself
            nonlocal replayed
            if replayed:
                return {"type": "http.disconnect"}
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        super().__init__(scope, receive)
        self._buffered = body

    async def body(self) -> bytes:
        return self._buffered

    async def stream(self) -> AsyncGenerator[bytes, None]:
        yield self._buffered
        yield b""


async def read_body(request: Request, limit: int) -> Request:
    """The request with its body read once (under `limit`), replayable by descriptors."""
    return BufferedRequest(request.scope, await read_limited(request, limit))
