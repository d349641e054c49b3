"""The application each production API worker runs (uvicorn imports `create_app` in the worker).

The worker imports the service the supervisor resolved, attaches its runners to the supervisor's
tritonservers (RUNNERKIT_TRITON_ADDRESSES), and adds tritonserver's metrics to /metrics.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import signal
import sys
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from runnerkit.service._metrics import use_cached_pid_in_multiprocess_metrics
from runnerkit.service._service import Service
from runnerkit.serving._logging import ENV_SUPERVISOR_PID
from runnerkit.serving._triton_metrics import triton_metrics
from runnerkit.triton._runner import ENV_SUPERVISED_ADDRESSES

# JSON {"import_string": "module:attr", "app_dir": "..."}: what the supervisor resolved TARGET to.
ENV_WORKER_TARGET = "RUNNERKIT_WORKER_TARGET"


class ProductionApp:
    """The service's ASGI app, with tritonserver's own metrics appended to /metrics."""

    def __init__(self, service: Service, triton_addresses: dict[str, dict[str, str]]) -> None:
        self.service = service
        self.app = service.asgi_app
        self.metrics_urls = {
            r.name: triton_addresses[r.name]["metrics"]
            for r in service.runners
            if "metrics" in triton_addresses.get(r.name, {})
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/metrics" and scope["method"] == "GET":
            await self._metrics(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _metrics(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        body = b"".join(chunks)
        if start.get("status") == 200:
            body += (await triton_metrics(self.metrics_urls)).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": start.get("status", 500), "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _die_with_supervisor() -> None:
    """SIGTERM this worker when the supervisor dies, even by SIGKILL (PR_SET_PDEATHSIG = 1)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    supervisor = os.environ.get(ENV_SUPERVISOR_PID)
    if supervisor and str(os.getppid()) != supervisor:  # it died before the line above ran
        os.kill(os.getpid(), signal.SIGTERM)


def create_app() -> Any:
    _die_with_supervisor()
    use_cached_pid_in_multiprocess_metrics()
    spec = json.loads(os.environ[ENV_WORKER_TARGET])
    module_name, _, attr = spec["import_string"].partition(":")
    if spec["app_dir"] not in sys.path:
        sys.path.insert(0, spec["app_dir"])
    service = getattr(importlib.import_module(module_name), attr)
    if not isinstance(service, Service):
        raise TypeError(f"{spec['import_string']} is a {type(service).__name__}, not a runnerkit.Service")
    addresses = json.loads(os.environ.get(ENV_SUPERVISED_ADDRESSES) or "{}")
    app = ProductionApp(service, addresses)
    # What importing the service made (modules, numpy, PIL, gRPC, ...) lives as long as the
    # worker: frozen, the garbage collector stops scanning those objects again and again while
    # requests are served (a full collection of them took tens of milliseconds).
    gc.collect()
    gc.freeze()
    return app
