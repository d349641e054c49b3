"""Bounded polling of a service's readiness probe."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from runnerkit.exceptions import RunnerkitError


class ServiceNotReadyError(RunnerkitError, TimeoutError):
    """A service did not become ready in time (or its process ended first)."""


def wait_http(
    url: str,
    *,
    timeout: float,
    ok: Callable[[httpx.Response], bool] = lambda r: r.status_code == 200,
    alive: Callable[[], str | None] = lambda: None,
) -> httpx.Response:
    """GET `url` until `ok(response)`; raise ServiceNotReadyError after `timeout` seconds, or as
    soon as `alive()` returns a reason (for example "the server process exited with code 1")."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    last = "no answer yet"
    with httpx.Client(timeout=5.0) as client:
        while True:
            reason = alive()
            if reason is not None:
                raise ServiceNotReadyError(f"{url}: {reason}")
            try:
                response = client.get(url)
                if ok(response):
                    return response
                last = f"HTTP {response.status_code}: {response.text[:500]}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > deadline:
                raise ServiceNotReadyError(f"{url} was not ready within {timeout:.0f} s; last answer: {last}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
