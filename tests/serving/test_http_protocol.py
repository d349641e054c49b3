"""Writes made in one turn of the event loop leave in one send; big ones at once; close sends
what is pending, abort drops it; uvicorn with the protocol answers keep-alive and pipelined
requests as HTTP/1.1 wants."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeAlias

import httpx
import pytest
import uvicorn
import uvloop
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from runnerkit.serving._http_protocol import _COALESCE_LIMIT, CoalescingTransport, HttpProtocol

TIMEOUT = 10.0

Runner: TypeAlias = Callable[[Coroutine[Any, Any, None]], None]


class Peer:
    """The far end of a real socket pair, read without blocking."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        sock.setblocking(False)

    def available(self) -> bytes:
        """What has arrived so far (one recv: the bytes the kernel holds for us)."""
        try:
            return self.sock.recv(1 << 20)
        except BlockingIOError:
            return b""

    async def read_exactly(self, size: int) -> bytes:
        loop = asyncio.get_running_loop()
        data = b""
        async with asyncio.timeout(TIMEOUT):
            while len(data) < size:
                data += await loop.sock_recv(self.sock, size - len(data))
        return data


@asynccontextmanager
async def coalescing_pair() -> AsyncIterator[tuple[CoalescingTransport, Peer]]:
    pair = await transport_pair()
    try:
        yield pair[0], pair[2]
    finally:
        pair[1].abort()
        pair[2].sock.close()


async def transport_pair() -> tuple[CoalescingTransport, asyncio.Transport, Peer]:
    """A CoalescingTransport over the loop's own transport of one end of a socket pair."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
    return CoalescingTransport(transport, loop), transport, Peer(theirs)


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, None]], None]:
    """Runs a scenario on asyncio's event loop and on uvloop's (what uvicorn uses in production)."""
    factory = uvloop.new_event_loop if request.param == "uvloop" else asyncio.new_event_loop

    def run(scenario: Coroutine[Any, Any, None]) -> None:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(scenario)

    return run


def test_writes_of_one_turn_leave_together_at_its_end(run: Runner) -> None:
    async def scenario() -> None:
        async with coalescing_pair() as (transport, peer):
            transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
            transport.write(bytearray(b"hello"))
            assert peer.available() == b""  # held until the turn ends
            assert transport.get_write_buffer_size() == 43
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert peer.available() == b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"
            assert transport.get_write_buffer_size() == 0

    run(scenario())


def test_a_big_write_or_a_big_turn_goes_out_at_once(run: Runner) -> None:
    async def scenario() -> None:
        async with coalescing_pair() as (transport, peer):
            big = b"x" * _COALESCE_LIMIT
            transport.write(big)  # nothing pending: straight to the socket
            assert await peer.read_exactly(len(big)) == big

            transport.write(b"head")
            transport.write(big)  # the turn's writes reach the limit: sent now, in order
            assert await peer.read_exactly(4 + len(big)) == b"head" + big
            assert transport.get_write_buffer_size() == 0

    run(scenario())


def test_close_sends_what_is_pending_and_abort_drops_it(run: Runner) -> None:
    async def scenario() -> None:
        async with coalescing_pair() as (transport, peer):
            transport.write(b"last words")
            transport.close()
            assert transport.is_closing()
            assert await peer.read_exactly(10) == b"last words"

        async with coalescing_pair() as (transport, peer):
            transport.write(b"never sent")
            transport.abort()
            await asyncio.sleep(0)
            loop = asyncio.get_running_loop()
            async with asyncio.timeout(TIMEOUT):
                assert await loop.sock_recv(peer.sock, 100) == b""  # the end of the stream, nothing before

    run(scenario())


def test_what_is_pending_when_the_connection_closes_under_it_is_dropped(run: Runner) -> None:
    async def scenario() -> None:
        transport, underlying, peer = await transport_pair()
        transport.write(b"pending")
        underlying.close()  # the connection ends before the turn does
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert transport.is_closing() and transport.get_write_buffer_size() == 0
        async with asyncio.timeout(TIMEOUT):
            ended = await asyncio.get_running_loop().sock_recv(peer.sock, 100)
        assert ended == b""  # the end of the stream, nothing before it
        peer.sock.close()

    run(scenario())


# -- uvicorn with the protocol ----------------------------------------------------------------------


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":

        async def parts() -> AsyncIterator[bytes]:
            for part in (b"one,", b"two,", b"three"):
                yield part
                await asyncio.sleep(0)

        response: Response = StreamingResponse(parts(), media_type="text/plain")
    else:
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        response = Response(scope["path"].encode() + b":" + body, media_type="text/plain")
    await response(scope, receive, send)


async def with_server(test: Callable[[int], Awaitable[None]]) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, http=HttpProtocol, lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT):
            while not server.started:
                await asyncio.sleep(0.01)
        await test(port)
    finally:
        server.should_exit = True
        async with asyncio.timeout(TIMEOUT):
            await serving
        sock.close()


def test_uvicorn_with_the_protocol_answers_keep_alive_streamed_and_pipelined_requests() -> None:
    async def requests(port: int) -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT) as client:
            for i in range(3):  # one keep-alive connection
                answer = await client.post("/echo", content=f"body {i}".encode())
                assert answer.status_code == 200 and answer.text == f"/echo:body {i}"
            streamed = await client.get("/stream")
            assert streamed.text == "one,two,three"
            assert streamed.headers["transfer-encoding"] == "chunked"

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\n1"
            b"POST /b HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\n2"
        )
        await writer.drain()
        async with asyncio.timeout(TIMEOUT):
            first = await reader.readuntil(b"/a:1")
            second = await reader.readuntil(b"/b:2")
        assert first.startswith(b"HTTP/1.1 200 OK") and b"content-length: 4" in first
        assert second.startswith(b"HTTP/1.1 200 OK")
        writer.close()

    asyncio.run(with_server(requests))


@pytest.mark.parametrize("size", [10, _COALESCE_LIMIT * 3])
def test_answers_small_and_big_arrive_whole(size: int) -> None:
    async def requests(port: int) -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT) as client:
            answer = await client.post("/big", content=b"y" * size)
        assert answer.content == b"/big:" + b"y" * size

    asyncio.run(with_server(requests))
