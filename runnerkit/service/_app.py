"""The Starlette application of a service: API routes, health probes, metrics, docs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeAlias

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from runnerkit.exceptions import RunnerNotStartedError
from runnerkit.io._base import IODescriptor
from runnerkit.io._json import JSONResponse
from runnerkit.service._body import read_body
from runnerkit.service._errors import error_body, error_response
from runnerkit.service._metrics import ServiceMetrics
from runnerkit.service._service import API, Service

_READY_CHECK_TIMEOUT = 2.0
# How long a production worker waits to attach to its supervisor's tritonservers before it takes
# requests anyway (they answer 503 until it has attached; /readyz says so).
_SUPERVISED_ATTACH_WAIT = 10.0


# An API's answer: a body and its media type (the output descriptor's own encoding), or a Response.
Answer: TypeAlias = "Response | tuple[bytes, str]"


def api_caller(service: Service, api: API) -> Callable[[Request], Awaitable[Answer]]:
    """Reads the request, calls the API function, encodes its result; errors as JSON answers."""
    limit = service.max_request_bytes
    func, is_async, input_, output = api.func, api.is_async, api.input, api.output
    # Descriptors that only encode bytes are answered without a Response object (the fast path).
    plain = type(output).to_http_response is IODescriptor.to_http_response

    async def call(request: Request) -> Answer:
        try:
            request = await read_body(request, limit)
            argument = await input_.from_http_request(request)
            result = await func(argument) if is_async else await run_in_threadpool(func, argument)
            return output.to_bytes(result) if plain else output.to_http_response(result)
        except Exception as exc:
            return error_response(
                _while_starting(service, exc), api=api.name, request_id=request.headers.get("x-request-id")
            )

    return call


def api_endpoint(service: Service, api: API, metrics: ServiceMetrics) -> Any:
    """The API as a Starlette endpoint."""
    call = api_caller(service, api)
    observe = metrics.observer(api.name)

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        answer = await call(request)
        response = answer if isinstance(answer, Response) else Response(answer[0], media_type=answer[1])
        observe(response.status_code, time.perf_counter() - started)
        return response

    endpoint.__name__ = api.name
    return endpoint


def api_asgi_app(service: Service, api: API, metrics: ServiceMetrics) -> ASGIApp:
    """The API as a plain ASGI app: what ServiceApp calls for a POST to the API's route."""
    call = api_caller(service, api)
    observe = metrics.observer(api.name)
    content_types: dict[str, bytes] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        answer = await call(Request(scope, receive))
        if isinstance(answer, Response):
            observe(answer.status_code, time.perf_counter() - started)
            await answer(scope, receive, send)
            return
        body, media_type = answer
        content_type = content_types.get(media_type)
        if content_type is None:
            content_type = content_types[media_type] = (
                Response(b"", media_type=media_type).headers["content-type"].encode("latin-1")
            )
        observe(200, time.perf_counter() - started)
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode("latin-1"))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


class ServiceApp(Starlette):
    """The service's Starlette app, with a fast path: a POST to an API's (fixed) route goes
    straight to the API, past Starlette's middleware and routing layers, which cost about as much
    per request as all of uvicorn's HTTP handling. Anything else, and everything once middleware
    has been added to the app, takes the usual way."""

    def __init__(self, api_apps: dict[str, ASGIApp], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.api_apps = api_apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            app = self.api_apps.get(scope["path"])
            if app is not None and not self.user_middleware:
                scope["app"] = self
                await app(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _while_starting(service: Service, exc: Exception) -> Exception:
    """Inside a running service, "called before the runner started" means Triton is still
    starting (or unreachable): say that, rather than the runner's advice for import-time calls."""
    starting = [r.name for r in service.runners if not r.is_started]
    if isinstance(exc, RunnerNotStartedError) and starting:
        return RunnerNotStartedError(
            f"runners {starting} have not started yet (Triton is starting or unreachable); retry shortly"
        )
    return exc


async def _runner_states(service: Service) -> dict[str, str]:
    async def state(runner: Any) -> str:
        if not runner.is_started:
            return "starting"
        try:
            ready = await asyncio.wait_for(runner.is_server_ready(), _READY_CHECK_TIMEOUT)
        except Exception:
            return "unavailable"
        return "ready" if ready else "not ready"

    states = await asyncio.gather(*(state(r) for r in service.runners))
    return {r.name: s for r, s in zip(service.runners, states)}


def health_routes(service: Service) -> list[BaseRoute]:
    async def livez(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        if service.startup_error is not None:
            body = {"status": "failed", "error": str(service.startup_error)}
            return JSONResponse(body, status_code=503)
        states = await _runner_states(service)
        ready = all(s == "ready" for s in states.values())
        return JSONResponse(
            {"status": "ready" if ready else "not ready", "runners": states},
            status_code=200 if ready else 503,
        )

    return [
        Route("/livez", livez, methods=["GET", "HEAD"]),
        Route("/healthz", livez, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
    ]


def build_app(service: Service) -> ServiceApp:
    from runnerkit.service._docs import docs_routes
    from runnerkit.service._openapi import openapi_document

    metrics = ServiceMetrics(service.name)
    document: dict[str, Any] | None = None

    async def openapi(request: Request) -> Response:
        nonlocal document
        if document is None:
            document = openapi_document(service)
        return JSONResponse(document)

    async def metrics_endpoint(request: Request) -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    async def index(request: Request) -> Response:
        return RedirectResponse(request.scope.get("root_path", "").rstrip("/") + "/docs")

    routes: list[BaseRoute] = [
        Route(api.route, api_endpoint(service, api, metrics), methods=["POST"], name=api.name)
        for api in service.apis.values()
    ]
    routes += health_routes(service)
    routes += [
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/", index, methods=["GET"]),
    ]
    routes += docs_routes(f"{service.name} API")
    proxy: Any = None
    if service.triton_proxy_runner is not None:
        from runnerkit.service._triton_proxy import triton_proxy_routes

        proxy_routes, proxy = triton_proxy_routes(service, metrics)
        routes += proxy_routes

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.begin_startup()
        await service.settle_supervised(_SUPERVISED_ATTACH_WAIT)
        try:
            yield
        finally:
            if proxy is not None:
                await proxy.aclose()
            await service.shutdown()

    async def http_error(request: Request, exc: Exception) -> Response:
        # 404 / 405 from routing, as JSON like every other error of the service.
        assert isinstance(exc, HTTPException)
        body = error_body(f"{request.method} {request.url.path}: {exc.detail}", "HTTPException")
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    async def unexpected_error(request: Request, exc: Exception) -> Response:
        # Anything that escaped an endpoint: JSON with a request id, the traceback to the log.
        return error_response(exc, api=request.url.path, request_id=request.headers.get("x-request-id"))

    handlers = {HTTPException: http_error, Exception: unexpected_error}
    fixed_routes = [api for api in service.apis.values() if "{" not in api.route]
    api_apps = {api.route: api_asgi_app(service, api, metrics) for api in fixed_routes}
    app = ServiceApp(api_apps, routes=routes, lifespan=lifespan, exception_handlers=handlers)
    app.state.service = service
    app.state.metrics = metrics
    return app
