"""`/v2`: Triton's KServe v2 inference endpoints proxied to a runner's tritonserver.

Only health, server metadata, model metadata/readiness, model config and infer (also per
version) are passed on, as Azure ML's Triton deployments offer them; the repository index,
load/unload, shared memory, logging and trace endpoints are not routed and answer 404.
Responses stream back as Triton writes them; a Triton that is down gives 503 at once.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from runnerkit.exceptions import RunnerNotStartedError, TritonUnavailableError
from runnerkit.io._json import JSONResponse
from runnerkit.service._body import read_limited
from runnerkit.service._errors import error_body, error_response
from runnerkit.service._metrics import ServiceMetrics
from runnerkit.service._service import Service
from runnerkit.triton._runner import Runner

PROXY_API = "triton_proxy"  # the `api` label of proxied requests in /metrics
CONNECT_TIMEOUT = 2.0
POOL_TIMEOUT = 5.0
# Passed through in both directions; hop-by-hop headers (connection, transfer-encoding) are not.
_REQUEST_HEADERS = frozenset(
    {"content-type", "content-encoding", "accept", "accept-encoding", "inference-header-content-length"}
)
_RESPONSE_HEADERS = frozenset(
    {"content-type", "content-length", "content-encoding", "inference-header-content-length"}
)

# (path, methods): KServe v2 routes; {version:int} keeps versions numeric as Triton's are.
PROXIED_ROUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("/v2", ("GET",)),
    ("/v2/health/live", ("GET",)),
    ("/v2/health/ready", ("GET",)),
    ("/v2/models/{model}", ("GET",)),
    ("/v2/models/{model}/versions/{version:int}", ("GET",)),
    ("/v2/models/{model}/ready", ("GET",)),
    ("/v2/models/{model}/versions/{version:int}/ready", ("GET",)),
    ("/v2/models/{model}/config", ("GET",)),
    ("/v2/models/{model}/versions/{version:int}/config", ("GET",)),
    ("/v2/models/{model}/infer", ("POST",)),
    ("/v2/models/{model}/versions/{version:int}/infer", ("POST",)),
)


class TritonProxy:
    """Forwards requests to one runner's Triton HTTP endpoint with a shared httpx client."""

    def __init__(self, service: Service, runner: Runner, metrics: ServiceMetrics) -> None:
        self.service = service
        self.runner = runner
        self.metrics = metrics
        self._client: httpx.AsyncClient | None = None

    def client(self) -> httpx.AsyncClient:
        # Made on first use, inside the server's event loop; closed by the app's lifespan.
        if self._client is None:
            read = self.runner.timeout if self.runner.timeout is not None else 60.0
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(read, connect=CONNECT_TIMEOUT, pool=POOL_TIMEOUT),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def upstream(self) -> str:
        runner = self.runner
        if not runner.is_started:
            raise RunnerNotStartedError(f"runner {runner.name!r}: Triton is not ready yet (starting)")
        address = runner.addresses.get("http")
        if address is None:
            raise TritonUnavailableError(
                f"runner {runner.name!r} has no Triton HTTP address to proxy /v2 to (it is attached "
                "over gRPC with url=); attach with tritonserver_type='http'"
            )
        return address if address.startswith(("http://", "https://")) else f"http://{address}"

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        response = await self.forward(request)
        self.metrics.observe(PROXY_API, response.status_code, time.perf_counter() - started)
        return response

    async def forward(self, request: Request) -> Response:
        try:
            base = self.upstream()
            body = b""
            if request.method == "POST":
                body = await read_limited(request, self.service.max_request_bytes)
        except Exception as exc:
            return error_response(exc, api=PROXY_API)
        headers = {k: v for k, v in request.headers.items() if k in _REQUEST_HEADERS}
        url = base + request.url.path + (f"?{request.url.query}" if request.url.query else "")
        client = self.client()
        try:
            upstream = await client.send(
                client.build_request(request.method, url, content=body, headers=headers), stream=True
            )
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            return self._unavailable(base, exc, 503)
        except httpx.TimeoutException as exc:  # read or write: Triton took the request, then stalled
            return self._unavailable(base, exc, 504)
        except httpx.TransportError as exc:  # refused, reset, closed
            return self._unavailable(base, exc, 503)
        passed = {k: v for k, v in upstream.headers.items() if k.lower() in _RESPONSE_HEADERS}
        return StreamingResponse(
            upstream.aiter_raw(),
            status_code=upstream.status_code,
            headers=passed,
            background=BackgroundTask(upstream.aclose),
        )

    def _unavailable(self, base: str, exc: Exception, status: int) -> Response:
        what = "did not answer in time" if status == 504 else "cannot be reached"
        message = f"runner {self.runner.name!r}: Triton at {base} {what}: {type(exc).__name__}: {exc}"
        headers = {"retry-after": "1"} if status == 503 else None
        body = error_body(message, "TritonUnavailableError")
        return JSONResponse(body, status_code=status, headers=headers)


def triton_proxy_routes(service: Service, metrics: ServiceMetrics) -> tuple[list[BaseRoute], TritonProxy]:
    runner = service.triton_proxy_runner
    assert runner is not None, "the service does not expose Triton"
    proxy = TritonProxy(service, runner, metrics)
    routes: list[BaseRoute] = [Route(p, proxy.handle, methods=list(m)) for p, m in PROXIED_ROUTES]
    return routes, proxy


def openapi_paths(runner_name: str) -> dict[str, Any]:
    """The proxied endpoints for the OpenAPI document, tagged `triton`."""
    model = {"name": "model", "in": "path", "required": True, "schema": {"type": "string"}}
    version = {"name": "version", "in": "path", "required": True, "schema": {"type": "integer"}}
    json_object = {"application/json": {"schema": {"type": "object"}}}
    summaries = {
        "/v2": "Server metadata",
        "/v2/health/live": "Triton liveness",
        "/v2/health/ready": "Triton readiness",
        "/v2/models/{model}": "Model metadata",
        "/v2/models/{model}/ready": "Model readiness",
        "/v2/models/{model}/config": "Model configuration",
        "/v2/models/{model}/infer": "Inference (KServe v2 JSON or binary tensor extension)",
    }
    paths: dict[str, Any] = {}
    for path, methods in PROXIED_ROUTES:
        openapi_path = path.replace("{version:int}", "{version}")
        base = openapi_path.replace("/versions/{version}", "")
        params = ([model] if "{model}" in path else []) + ([version] if "{version" in path else [])
        for method in methods:
            operation: dict[str, Any] = {
                "tags": ["triton"],
                "summary": summaries[base] + (" (one version)" if "{version" in path else ""),
                "description": f"Proxied to the tritonserver of runner {runner_name!r}.",
                "operationId": "triton_"
                + base.strip("/").replace("/", "_").replace("{", "").replace("}", "")
                + ("_version" if "{version" in path else ""),
                "responses": {
                    "200": {"description": "Triton's answer", "content": json_object},
                    "503": {"description": "Triton unavailable"},
                },
            }
            if params:
                operation["parameters"] = params
            if method == "POST":
                operation["requestBody"] = {"required": True, "content": json_object}
            paths.setdefault(openapi_path, {})[method.lower()] = operation
    return paths
