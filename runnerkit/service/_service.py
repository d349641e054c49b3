"""Service: runners plus typed APIs, served over HTTP."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from runnerkit._settings import TRUE_WORDS
from runnerkit.io._base import IODescriptor
from runnerkit.triton._runner import Runner

if TYPE_CHECKING:
    from starlette.applications import Starlette

logger = logging.getLogger("runnerkit.service")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
ENV_MAX_REQUEST_BYTES = "RUNNERKIT_MAX_REQUEST_BYTES"
ENV_EXPOSE_TRITON = "RUNNERKIT_EXPOSE_TRITON"
_ROUTE = re.compile(r"^/[A-Za-z0-9_\-./{}]*$")
_RESERVED_ROUTES = frozenset({"/", "/livez", "/readyz", "/healthz", "/metrics", "/docs", "/openapi.json"})
_RESERVED_PREFIXES = ("/v2/", "/docs/")


def _reserved_prefix(route: str) -> bool:
    return route == "/v2" or route.startswith(_RESERVED_PREFIXES)


def _expose_setting(value: bool | str | None) -> bool | str:
    """expose_triton as given, else from RUNNERKIT_EXPOSE_TRITON: a flag word or a runner name."""
    if value is None:
        raw = os.environ.get(ENV_EXPOSE_TRITON, "").strip()
        if raw.lower() in ("", "0", "false", "no", "off"):
            return False
        return True if raw.lower() in TRUE_WORDS else raw
    if isinstance(value, str) and not value:
        raise ValueError("expose_triton takes True, False, or a runner name")
    return value


@attrs.frozen
class API:
    """One HTTP endpoint of a service: POST `route`, input and output descriptors, the function."""

    name: str
    route: str
    func: Callable[..., Any]
    input: IODescriptor
    output: IODescriptor
    is_async: bool
    doc: str = ""
    tags: tuple[str, ...] = ("inference",)

    def to_spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "route": self.route,
            "input": self.input.to_spec(),
            "output": self.output.to_spec(),
            "tags": list(self.tags),
        }


class Service:
    """`Service("digits", runners=[triton_runner])`, with `@svc.api(input=..., output=...)`.

    `expose_triton=True` also serves Triton's KServe v2 endpoints under `/v2` (health, server
    and model metadata, model config, infer; never the repository or load/unload endpoints), as
    Azure ML's Triton deployments do. They go to the first runner's tritonserver; with several
    runners, name the one to expose: `expose_triton="runner_name"`. Default: the environment
    variable RUNNERKIT_EXPOSE_TRITON (`1`/`true`, or a runner name), as `runnerkit serve
    --expose-triton` sets it. The proxy uses the runner's Triton HTTP address, which owned and
    supervised servers always have; a runner attached with `url=` has one only with
    `tritonserver_type="http"`.

    `max_request_bytes` (default RUNNERKIT_MAX_REQUEST_BYTES, else 32 MiB) bounds request
    bodies: larger ones get 413 before they are read.
    """

    def __init__(
        self,
        name: str,
        runners: Iterable[Runner] = (),
        *,
        expose_triton: bool | str | None = None,
        max_request_bytes: int | None = None,
    ) -> None:
        if not re.fullmatch(r"[a-z0-9]([a-z0-9_.\-]*[a-z0-9])?", name):
            raise ValueError(f"service name must be lowercase letters, digits, '-', '_' or '.', got {name!r}")
        self.name = name
        self.runners: list[Runner] = list(runners)
        names = [r.name for r in self.runners]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"service {name!r}: runner names must be unique, repeated: {duplicates}")
        self.expose_triton: bool | str = _expose_setting(expose_triton)
        # Resolved now, so a wrong runner name fails at definition time, not on the first call.
        self.triton_proxy_runner: Runner | None = self._proxy_runner()
        if max_request_bytes is None:
            raw = os.environ.get(ENV_MAX_REQUEST_BYTES) or str(DEFAULT_MAX_REQUEST_BYTES)
            if not raw.strip().isdigit():
                raise ValueError(f"{ENV_MAX_REQUEST_BYTES} must be a number of bytes, got {raw!r}")
            max_request_bytes = int(raw)
        if max_request_bytes <= 0:
            raise ValueError(f"max_request_bytes must be positive, got {max_request_bytes}")
        self.max_request_bytes = max_request_bytes
        self.apis: dict[str, API] = {}
        self._app: Starlette | None = None
        self._start_task: asyncio.Task[None] | None = None
        self.startup_error: BaseException | None = None

    def _proxy_runner(self) -> Runner | None:
        setting = self.expose_triton
        if setting is False:
            return None
        if not self.runners:
            raise ValueError(f"service {self.name!r}: expose_triton needs a runner, and the service has none")
        if setting is True:
            return self.runners[0]
        for runner in self.runners:
            if runner.name == setting:
                return runner
        raise ValueError(
            f"service {self.name!r}: expose_triton={setting!r} names no runner; runners: "
            f"{[r.name for r in self.runners]}"
        )

    def api(
        self,
        input: IODescriptor,
        output: IODescriptor,
        *,
        route: str | None = None,
        name: str | None = None,
        tags: Iterable[str] = ("inference",),
    ) -> Callable[[F], F]:
        """Register a function (sync or async) as a POST endpoint at `route` (default `/<name>`)."""
        for role, descriptor in (("input", input), ("output", output)):
            if not isinstance(descriptor, IODescriptor):
                raise TypeError(
                    f"{role}= takes an IO descriptor such as runnerkit.io.JSON(), got {descriptor!r}"
                )

        tag_list = (tags,) if isinstance(tags, str) else tuple(tags)

        def register(func: F) -> F:
            api_name = name or func.__name__
            api_route = route or f"/{api_name}"
            if not api_route.startswith("/"):
                api_route = "/" + api_route
            if not _ROUTE.match(api_route) or api_route in _RESERVED_ROUTES or _reserved_prefix(api_route):
                raise ValueError(f"API {api_name!r}: route {api_route!r} is invalid or reserved")
            if api_name in self.apis:
                raise ValueError(f"service {self.name!r} already has an API named {api_name!r}")
            clash = next((a.name for a in self.apis.values() if a.route == api_route), None)
            if clash is not None:
                raise ValueError(f"API {api_name!r}: route {api_route} is already used by API {clash!r}")
            if self._app is not None:
                raise RuntimeError("APIs must be defined before the service's app is built")
            self.apis[api_name] = API(
                name=api_name,
                route=api_route,
                func=func,
                input=input,
                output=output,
                is_async=inspect.iscoroutinefunction(func),
                doc=inspect.getdoc(func) or "",
                tags=tag_list,
            )
            return func

        return register

    # -- lifecycle (the ASGI lifespan calls these) ----------------------------------------------

    @property
    def is_ready(self) -> bool:
        return all(r.is_started for r in self.runners) and self.startup_error is None

    async def start_runners(self) -> None:
        """Start every runner concurrently; remember a failure for /readyz and the log."""
        try:
            await asyncio.gather(*(r.start() for r in self.runners))
        except Exception as exc:
            self.startup_error = exc
            logger.error("service %r: a runner failed to start: %s", self.name, exc)
            raise

    def begin_startup(self) -> None:
        """Start runners in the background so /livez and /readyz answer while Triton boots."""
        self.startup_error = None

        self._start_task = asyncio.get_running_loop().create_task(self.start_runners())
        # The failure is logged and kept in startup_error; reading it here marks it handled.
        self._start_task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def settle_supervised(self, timeout: float) -> None:
        """When every runner attaches to a tritonserver its supervisor already has ready
        (production workers), wait up to `timeout` for that: a new or replacement worker then
        takes requests attached, rather than answering 503 "starting" for its first moments."""
        task = self._start_task
        if task is None or not self.runners or not all(r.is_supervised for r in self.runners):
            return
        await asyncio.wait({task}, timeout=timeout)

    async def wait_ready(self, timeout: float | None = None) -> None:
        if self._start_task is None:
            raise RuntimeError("the service has not begun starting")
        await asyncio.wait_for(asyncio.shield(self._start_task), timeout)

    async def shutdown(self) -> None:
        if self._start_task is not None and not self._start_task.done():
            self._start_task.cancel()
            try:
                await self._start_task
            except (asyncio.CancelledError, Exception):
                pass
        results = await asyncio.gather(*(r.stop() for r in self.runners), return_exceptions=True)
        for runner, result in zip(self.runners, results):
            if isinstance(result, BaseException):
                logger.error("runner %r did not stop cleanly: %s", runner.name, result)

    # -- ASGI -------------------------------------------------------------------------------------

    @property
    def asgi_app(self) -> Starlette:
        if self._app is None:
            from runnerkit.service._app import build_app

            self._app = build_app(self)
        return self._app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """A Service is itself an ASGI app: `uvicorn services.digits:svc`."""
        await self.asgi_app(scope, receive, send)

    def to_spec(self) -> dict[str, Any]:
        return {"name": self.name, "apis": [a.to_spec() for a in self.apis.values()]}

    def __repr__(self) -> str:
        return f"Service({self.name!r}, runners={[r.name for r in self.runners]}, apis={list(self.apis)})"
