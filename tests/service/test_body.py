"""A body is read once from the ASGI channel, chunk by chunk under the limit, and then given to
descriptors as often as they ask: as bytes, as a stream, as a form, as the channel itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope

from runnerkit.exceptions import PayloadTooLargeError
from runnerkit.service._body import BufferedRequest, read_body, read_limited


def http_scope(headers: Iterable[tuple[str, str]] = ()) -> Scope:
    return {
        "type": "http",
        "method": "POST",
        "path": "/api",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers],
    }


def channel(*messages: Message) -> Receive:
    """An ASGI receive channel that gives `messages` in order, as a server would."""
    pending = list(messages)

    async def receive() -> Message:
        return pending.pop(0)

    return receive


def chunks(*parts: bytes) -> list[Message]:
    return [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]


def test_a_body_in_chunks_is_joined() -> None:
    request = Request(http_scope(), channel(*chunks(b"ab", b"", b"cd", b"e")))
    assert asyncio.run(read_limited(request, limit=5)) == b"abcde"


def test_over_the_limit_stops_reading_at_the_chunk_that_crosses_it() -> None:
    receive = channel(*chunks(b"abc", b"def", b"never read"))
    with pytest.raises(PayloadTooLargeError, match="over the limit of 5 bytes"):
        asyncio.run(read_limited(Request(http_scope(), receive), limit=5))
    assert asyncio.run(receive())["body"] == b"never read"


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    receive = channel(*chunks(b"x" * 10))
    request = Request(http_scope([("content-length", "10")]), receive)
    with pytest.raises(PayloadTooLargeError, match="request body of 10 bytes is over the limit of 5 bytes"):
        asyncio.run(read_limited(request, limit=5))
    assert asyncio.run(receive())["body"] == b"x" * 10  # untouched


def test_a_client_gone_before_the_end_of_the_body_is_a_disconnect() -> None:
    receive = channel(*chunks(b"ab", b"cd")[:1], {"type": "http.disconnect"})
    with pytest.raises(ClientDisconnect):
        asyncio.run(read_limited(Request(http_scope(), receive), limit=100))


def test_the_buffered_request_gives_its_body_again_and_again() -> None:
    async def scenario() -> None:
        request = await read_body(Request(http_scope([("x-id", "7")]), channel(*chunks(b"he", b"llo"))), 100)
        assert isinstance(request, BufferedRequest)
        assert request.headers["x-id"] == "7"
        assert await request.body() == b"hello"
        assert await request.body() == b"hello"
        assert [c async for c in request.stream()] == [b"hello", b""]
        assert [c async for c in request.stream()] == [b"hello", b""]
        assert await request.receive() == {"type": "http.request", "body": b"hello", "more_body": False}
        assert await request.receive() == {"type": "http.disconnect"}

    asyncio.run(scenario())


def test_the_buffered_request_parses_a_form() -> None:
    body = (
        b'--B\r\nContent-Disposition: form-data; name="field"\r\n\r\nvalue\r\n'
        b'--B\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n\x00\x01\r\n--B--\r\n"
    )

    async def scenario() -> None:
        scope = http_scope([("content-type", "multipart/form-data; boundary=B")])
        async with BufferedRequest(scope, body).form() as form:
            assert form["field"] == "value"
            upload = form["file"]
            assert not isinstance(upload, str)
            assert await upload.read() == b"\x00\x01"

    asyncio.run(scenario())
