"""Testing helpers: run a service with its real Triton and call its APIs from a test.

- `serve_in_process(svc)`: real uvicorn on a free loopback port in a background thread; yields
  an `httpx.Client` once the service is ready (its runners' tritonservers up).
- `serve_in_process_async(svc)`: the ASGI app driven directly, lifespan included; yields an
  `httpx.AsyncClient`.
- `ServeProcess("file.py:svc")`: `runnerkit serve` itself as a child process (for tests of the
  command, signals and reload).
- `wait_http(url, timeout=...)`: bounded polling until an endpoint answers 200.
"""

from __future__ import annotations

from runnerkit.testing._in_process import serve_in_process, serve_in_process_async
from runnerkit.testing._process import ServeProcess
from runnerkit.testing._wait import ServiceNotReadyError, wait_http

__all__ = ["ServeProcess", "ServiceNotReadyError", "serve_in_process", "serve_in_process_async", "wait_http"]
