"""Readiness before and after Triton is up, and 503 (fast, never hanging) while it is down."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from runnerkit.testing import ServeProcess, wait_http
from runnerkit.triton._server import ServerAddresses, TritonServerProcess, free_ports
from runnerkit.triton._server_binary import locate_tritonserver
from tests.service.stack import REPO_ROOT, TINY_REPOSITORY

FAST = 3.0  # seconds: a 503 must come at once, not after a client timeout


@pytest.fixture
def later_triton() -> Iterator[TritonServerProcess]:
    """A tritonserver for the tiny repository on ports chosen now, launched only when a test
    calls `restart()` (launch on the recorded addresses)."""
    server = TritonServerProcess(locate_tritonserver(), [str(TINY_REPOSITORY)], log_prefix="later-triton")
    server.addresses = ServerAddresses(*free_ports(3))
    try:
        yield server
    finally:
        server.stop()


def timed_post(client: httpx.Client, path: str, payload: object) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = client.post(path, json=payload)
    return response, time.monotonic() - started


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_readiness_follows_triton(later_triton: TritonServerProcess, protocol: str) -> None:
    addresses = later_triton.addresses
    assert addresses is not None
    url = addresses.http_url if protocol == "http" else addresses.grpc_url
    env = {"RUNNERKIT_TEST_TINY_URL": url, "RUNNERKIT_TEST_TINY_PROTOCOL": protocol}
    # /v2 goes to Triton's HTTP port; a runner attached by a gRPC url= has none to offer.
    v2_up = 200 if protocol == "http" else 503
    served = ServeProcess("tests/service/attached_service.py:svc", cwd=REPO_ROOT, env=env | _inherited())
    served.start(wait_for="livez", timeout=120)
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            # 1. Triton not started yet: alive, not ready, APIs and /v2 answer 503 at once.
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json() == {"status": "not ready", "runners": {"tiny": "starting"}}
            response, elapsed = timed_post(client, "/scale", [1, 2])
            assert response.status_code == 503 and elapsed < FAST
            assert response.json()["type"] == "RunnerNotStartedError"
            assert "have not started yet" in response.json()["error"]
            assert response.headers["retry-after"] == "1"
            assert client.get("/v2/health/ready").status_code == 503

            # 2. Triton comes up: the runner connects, the service becomes ready.
            later_triton.restart()
            later_triton.wait_ready(120, relocate_on_conflict=False)
            wait_http(f"{served.url}/readyz", timeout=120)
            response, _ = timed_post(client, "/scale", [1, 2.5])
            assert response.status_code == 200 and response.json() == [2.0, 5.0]
            assert client.get("/v2/health/ready").status_code == v2_up

            # 3. Triton goes away (killed, as in a crash): 503 fast, and readiness says so.
            later_triton.kill()
            response, elapsed = timed_post(client, "/scale", [1])
            assert response.status_code == 503 and elapsed < FAST, response.text
            assert response.json()["type"] == "TritonUnavailableError"
            assert url in response.json()["error"]
            ready = client.get("/readyz")
            assert ready.status_code == 503 and ready.json()["runners"] == {"tiny": "unavailable"}
            started = time.monotonic()
            proxied = client.get("/v2/health/ready")
            assert proxied.status_code == 503 and time.monotonic() - started < FAST
            assert proxied.json()["type"] == "TritonUnavailableError"
            if protocol == "grpc":
                assert "has no Triton HTTP address" in proxied.json()["error"]

            # 4. Triton is back on the same address: the service recovers without a restart.
            later_triton.restart()
            later_triton.wait_ready(120, relocate_on_conflict=False)
            wait_http(f"{served.url}/readyz", timeout=60)
            response, _ = timed_post(client, "/scale", [3])
            assert response.status_code == 200 and response.json() == [6.0]
    finally:
        served.stop()


def _inherited() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "RUNNERKIT_TRITON_ADDRESSES"}
