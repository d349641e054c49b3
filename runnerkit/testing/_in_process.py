"""A service run inside the test process: with real uvicorn on a free port, or on ASGI directly."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import uvicorn

from runnerkit.service._service import Service
from runnerkit.serving._http_protocol import HttpProtocol
from runnerkit.testing._wait import ServiceNotReadyError, wait_http

DEFAULT_READY_TIMEOUT = 180.0
LOOPBACK = "127.0.0.1"


def _failure(service: Service) -> str | None:
    error = service.startup_error
    return None if error is None else f"a runner failed to start: {error}"


@contextlib.contextmanager
def serve_in_process(
    service: Service,
    *,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    client_timeout: float = 60.0,
    log_level: str = "warning",
) -> Iterator[httpx.Client]:
    """Serve `service` with real uvicorn on a free loopback port, in a background thread.

    The service's lifespan runs as under `runnerkit serve`: its runners start (their
    tritonservers launch, or attach to `url=`) and stop again on exit, with no process left.
    Yields an `httpx.Client` whose base URL is the server, once `/readyz` answers 200::

        from runnerkit.testing import serve_in_process
        from services.digits import svc

        def test_classify():
            with serve_in_process(svc) as client:
                response = client.post("/classify", content=png, headers={"content-type": "image/png"})
                assert response.json()["label"] == 3

    Raises ServiceNotReadyError (with the runner's error) if the service does not become ready
    within `ready_timeout` seconds.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Bound here and handed to uvicorn: no other process can take the port in between.
    sock.bind((LOOPBACK, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(service, lifespan="on", log_level=log_level, http=HttpProtocol)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"runnerkit-{service.name}-server", daemon=True
    )
    base_url = f"http://{LOOPBACK}:{port}"
    thread.start()
    try:

        def alive() -> str | None:
            if not thread.is_alive():
                return "the server thread ended (see the log)"
            return _failure(service)

        wait_http(f"{base_url}/readyz", timeout=ready_timeout, alive=alive)
        with httpx.Client(base_url=base_url, timeout=client_timeout) as client:
            yield client
    finally:
        server.should_exit = True
        # The lifespan's shutdown stops tritonserver (up to its own grace period).
        thread.join(timeout=60)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=10)
        sock.close()


@contextlib.asynccontextmanager
async def serve_in_process_async(
    service: Service,
    *,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    client_timeout: float = 60.0,
) -> AsyncIterator[httpx.AsyncClient]:
    """The service's ASGI app driven directly, no sockets: an `httpx.AsyncClient` on it.

    The app's lifespan (runners start and stop) runs around the block, as under a server::

        async with serve_in_process_async(svc) as client:
            response = await client.post("/classify", ...)
    """
    app = service.asgi_app
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://runnerkit.test", timeout=client_timeout
        ) as client:
            deadline = time.monotonic() + ready_timeout
            while True:
                failure = _failure(service)
                if failure is not None:
                    raise ServiceNotReadyError(f"service {service.name!r}: {failure}")
                response = await client.get("/readyz")
                if response.status_code == 200:
                    break
                if time.monotonic() > deadline:
                    raise ServiceNotReadyError(
                        f"service {service.name!r} was not ready within {ready_timeout:.0f} s: "
                        f"{response.text}"
                    )
                await asyncio.sleep(0.1)
            yield client
