"""API requests take a fast path past Starlette's middleware and routing: the same answers as the
usual way, which still serves them once middleware is added or under a root path."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

import runnerkit
from runnerkit import io
from runnerkit.testing import serve_in_process_async


def make_service() -> runnerkit.Service:
    svc = runnerkit.Service("fastpath", max_request_bytes=1024)

    @svc.api(input=io.JSON(), output=io.JSON())
    async def echo(value: Any) -> Any:
        return {"received": value}

    @svc.api(input=io.Text(), output=io.Text())
    def shout(text: str) -> str:  # a sync API: it runs in the thread pool
        return text.upper()

    @svc.api(input=io.JSON(), output=io.JSON())
    async def broken(value: Any) -> Any:
        raise RuntimeError("a bug in the API")

    @svc.api(input=io.Text(), output=io.Multipart(text=io.Text(), data=io.JSON()))
    async def both(text: str) -> dict[str, Any]:  # an output that builds its own Response
        return {"text": text, "data": {"length": len(text)}}

    return svc


class PassThrough:
    """User middleware that only counts what it sees."""

    seen: list[str] = []

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            PassThrough.seen.append(scope["path"])
        await self.app(scope, receive, send)


REQUESTS: list[tuple[str, str, bytes]] = [
    ("/echo", "application/json", b'{"a": [1, 2]}'),
    ("/echo", "application/json", b"{not json"),  # 400
    ("/echo", "application/json", b"[" + b"1," * 600 + b"1]"),  # 413: over 1024 bytes
    ("/shout", "text/plain", "héllo".encode()),
    ("/broken", "application/json", b"{}"),  # 500
    ("/both", "text/plain", b"abc"),
]


async def answers(svc: runnerkit.Service, root_path: str = "") -> list[tuple[int, str, bytes]]:
    """Status, content type and body of each of REQUESTS; the API metrics counted them."""
    got = []
    async with serve_in_process_async(svc) as client:
        transport = httpx.ASGITransport(app=svc.asgi_app, root_path=root_path)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as prefixed:
            for path, content_type, body in REQUESTS:
                headers = {"content-type": content_type, "x-request-id": "r1"}
                response = await prefixed.post(root_path + path, content=body, headers=headers)
                got.append((response.status_code, response.headers["content-type"], response.content))
        metrics = (await client.get("/metrics")).text
    for api, status in (("echo", 200), ("echo", 400), ("echo", 413), ("shout", 200), ("broken", 500)):
        line = f'runnerkit_requests_total{{api="{api}",service="fastpath",status="{status}"}} 1.0'
        assert line in metrics
    return got


def comparable(answer: tuple[int, str, bytes]) -> tuple[int, str, bytes]:
    status, content_type, body = answer
    if content_type.startswith("multipart/"):  # its boundary is random
        boundary = content_type.split("boundary=")[1].encode()
        return status, content_type.split(";")[0], body.replace(boundary, b"B")
    return answer


@pytest.fixture
def starlette_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths of the requests that went through Starlette's own entry point."""
    calls: list[str] = []
    original: Callable[..., Any] = Starlette.__call__

    async def spy(self: Starlette, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            calls.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(Starlette, "__call__", spy)
    return calls


def test_the_fast_path_answers_as_the_starlette_way(starlette_calls: list[str]) -> None:
    fast = asyncio.run(answers(make_service()))
    assert not [p for p in starlette_calls if p in {path for path, _, _ in REQUESTS}]

    with_middleware = make_service()
    with_middleware.asgi_app.add_middleware(PassThrough)
    PassThrough.seen = []
    usual = asyncio.run(answers(with_middleware))
    assert [p for p in PassThrough.seen if p != "/readyz" and p != "/metrics"] == [p for p, _, _ in REQUESTS]

    assert [comparable(a) for a in fast] == [comparable(a) for a in usual]
    statuses = [status for status, _, _ in fast]
    assert statuses == [200, 400, 413, 200, 500, 200]
    assert fast[0][1] == "application/json" and fast[0][2] == b'{"received":{"a":[1,2]}}'
    assert fast[3][1] == "text/plain; charset=utf-8" and fast[3][2] == "HÉLLO".encode()
    assert b"request id r1" in fast[4][2]


def test_under_a_root_path_apis_are_served_the_usual_way(starlette_calls: list[str]) -> None:
    got = asyncio.run(answers(make_service(), root_path="/prefix"))
    assert [status for status, _, _ in got] == [200, 400, 413, 200, 500, 200]
    assert "/prefix/echo" in starlette_calls
