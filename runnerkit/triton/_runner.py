"""The Triton runner: owns (or attaches to) a tritonserver and exposes its models as attributes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from runnerkit._leftovers import owned_tempdir
from runnerkit._leftovers import sweep as sweep_leftovers
from runnerkit._settings import env_flag
from runnerkit.exceptions import (
    ModelNotFoundError,
    RunnerNotStartedError,
    TritonError,
    TritonUnavailableError,
)
from runnerkit.triton._batching import MicroBatcher, MicroBatchingOption, check_option, settings_for
from runnerkit.triton._client import PROTOCOLS, TritonClient, make_client
from runnerkit.triton._fallback import build_shadow_repository, plan_fallback
from runnerkit.triton._fallback_backends import remote_fallback
from runnerkit.triton._loop_thread import LoopThread
from runnerkit.triton._model import Model
from runnerkit.triton._model_config import ModelSpec
from runnerkit.triton._repository import (
    LocalModelRepository,
    ModelRepository,
    RepositoryModel,
    check_model_files,
    open_repository,
    read_local_model,
)
from runnerkit.triton._server import OWNED_OPTIONS, ServerAddresses, TritonServerProcess
from runnerkit.triton._server_binary import locate_tritonserver
from runnerkit.triton._validation import InputValidator

logger = logging.getLogger("runnerkit.triton")
T = TypeVar("T")

ENV_USE_HTTP = "RUNNERKIT_USE_HTTP_TRITONSERVER"
# Set by `runnerkit serve` for its API workers: the tritonservers it launched and supervises,
# as JSON {runner name: {"grpc": "host:port", "http": "host:port", "metrics": "url"}}.
ENV_SUPERVISED_ADDRESSES = "RUNNERKIT_TRITON_ADDRESSES"
# Set when a bento is served: JSON {runner name: path of the model repository bundled in the
# bento}. It replaces the path the service's code gives, which pointed at the build machine.
ENV_MODEL_REPOSITORIES = "RUNNERKIT_MODEL_REPOSITORIES"
DEFAULT_STARTUP_TIMEOUT = 120.0
DEFAULT_REQUEST_TIMEOUT = 60.0


def bundled_repository(name: str, given: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """The repository a runner named `name` uses: its bento's bundled copy when one is mapped."""
    mapping = os.environ.get(ENV_MODEL_REPOSITORIES)
    if not mapping:
        return given
    bundled = json.loads(mapping).get(name)
    return given if bundled is None else str(bundled)


def option_key(arg: str) -> str:
    """`--load-model=a` -> `load-model`."""
    return arg.lstrip("-").split("=", 1)[0]


def option_values(arguments: Iterable[str], key: str) -> list[str]:
    """The values given to option `key` (`--key=value` form), in order."""
    return [arg.split("=", 1)[1] for arg in arguments if option_key(arg) == key and "=" in arg]


def join_option_values(cli_args: Iterable[str]) -> tuple[str, ...]:
    """`["--http-port", "8000"]` as `("--http-port=8000",)`: tritonserver accepts both forms, and
    an option runnerkit drops or replaces must not leave its value behind as a stray argument."""
    joined: list[str] = []
    for arg in cli_args:
        previous = joined[-1] if joined else ""
        if not arg.startswith("-") and previous.startswith("--") and "=" not in previous:
            joined[-1] = f"{previous}={arg}"
        else:
            joined.append(arg)
    return tuple(joined)


def split_owned_options(cli_args: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split tritonserver arguments into those runnerkit lets through and those it owns."""
    kept: list[str] = []
    dropped: list[str] = []
    for arg in cli_args:
        (dropped if option_key(arg) in OWNED_OPTIONS else kept).append(arg)
    return kept, dropped


def override_options(base: Iterable[str], overrides: Iterable[str]) -> tuple[list[str], list[str]]:
    """`base` with every option that `overrides` sets replaced, and what was replaced.

    A repeated option is replaced as a whole: `--load-model=a` given at deploy time replaces a
    runner's `--load-model=*`, rather than adding to it.
    """
    overrides = list(overrides)
    keys = {option_key(arg) for arg in overrides}
    replaced = [arg for arg in base if option_key(arg) in keys]
    return [arg for arg in base if option_key(arg) not in keys] + overrides, replaced


def models_loaded_at_start(models: Iterable[str], arguments: Iterable[str]) -> list[str]:
    """The models of `models` that a tritonserver started with `arguments` loads at start: all of
    them, unless --model-control-mode=explicit names some with --load-model."""
    arguments = list(arguments)
    named = option_values(arguments, "load-model")
    if not is_explicit(arguments) or "*" in named:
        return list(models)
    return [name for name in models if name in named]


def is_explicit(arguments: Iterable[str]) -> bool:
    """Whether tritonserver runs in explicit model-control mode (its last --model-control-mode)."""
    return option_values(arguments, "model-control-mode")[-1:] == ["explicit"]


class Runner:
    """`Runner("triton_runner", model_repository="./model_repository")`.

    Every model of the repository is an attribute with `run` and `async_run`. Use it inside a
    Service (which starts and stops it), or standalone with `with runner:` / `async with runner:`.
    Pass `url="host:port"` to attach to a tritonserver that is already running instead.

    `micro_batching` coalesces concurrent calls to a model into one batched request (see
    `MicroBatching`): None (the default) does so for models whose configuration has
    `dynamic_batching`; True or `MicroBatching(max_inflight=..., max_batch_size=...)` for every
    model with `max_batch_size > 0`; False never; a mapping {model name: setting} per model.
    """

    def __init__(
        self,
        name: str,
        model_repository: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        tritonserver_type: str | None = None,
        cli_args: Iterable[str] = (),
        tritonserver_path: str | os.PathLike[str] | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        micro_batching: MicroBatchingOption = None,
    ) -> None:
        if not name.isidentifier():
            raise ValueError(f"runner name must be a Python identifier, got {name!r}")
        if model_repository is None and url is None:
            raise ValueError(
                f"runner {name!r}: give model_repository= (runnerkit launches tritonserver) "
                "or url= (attach to a running one)"
            )
        protocol = tritonserver_type or ("http" if env_flag(ENV_USE_HTTP) else "grpc")
        if protocol not in PROTOCOLS:
            raise ValueError(f"tritonserver_type must be one of {PROTOCOLS}, got {protocol!r}")
        if model_repository is not None:
            model_repository = bundled_repository(name, model_repository)
        self.name = name
        self.tritonserver_type = protocol
        self.model_repository = None if model_repository is None else os.fspath(model_repository)
        # a copy (the caller's list is never touched), with `--key value` pairs as `--key=value`
        self.cli_args: tuple[str, ...] = join_option_values(cli_args)
        self.url = url
        self.tritonserver_path = tritonserver_path
        self.startup_timeout = startup_timeout
        self.timeout = timeout
        self.micro_batching = check_option(micro_batching)
        self._repository: ModelRepository | None = (
            None if model_repository is None else open_repository(model_repository)
        )
        self._repository_models: dict[str, RepositoryModel] | None = None
        self._server: TritonServerProcess | None = None
        self._shadow_dir: Path | None = None
        self._addresses: dict[str, str] = {}
        self._started = False
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, TritonClient] = (
            weakref.WeakKeyDictionary()
        )
        self._last_client: tuple[asyncio.AbstractEventLoop | None, TritonClient | None] = (
            None,
            None,
        )
        self._sync_loop: LoopThread | None = None
        self._server_models: tuple[str, ...] = ()
        self._validators: dict[str, InputValidator] = {}
        self._handles: dict[str, Model] = {}
        # per event loop (its client), model and version; None: that model's calls go straight out
        self._batchers: dict[tuple[TritonClient, str, str], MicroBatcher | None] = {}

    # -- models as attributes ---------------------------------------------------------------

    @property
    def repository_models(self) -> Mapping[str, RepositoryModel]:
        """The models of the repository, read once (without a server)."""
        if self._repository_models is None:
            self._repository_models = {} if self._repository is None else self._repository.list_models()
        return self._repository_models

    @property
    def model_names(self) -> list[str]:
        return sorted(set(self.repository_models) | set(self._server_models))

    def __getattr__(self, name: str) -> Model:
        if name.startswith("_"):
            raise AttributeError(name)
        handle = self._handles.get(name)
        if handle is not None:
            return handle
        names = self.model_names
        if name not in names:
            if self._repository is None and not self._started:
                # Attached without a repository: the model list is only known once connected.
                raise self._not_started_error(name)
            where = self.model_repository or self.url
            raise ModelNotFoundError(
                f"runner {self.name!r} has no model {name!r}; models in {where}: {names}"
            )
        handle = self._handles[name] = Model(self, name)
        return handle

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.model_names))

    @property
    def models(self) -> Mapping[str, Model]:
        """Every model by name (also those whose names clash with a runner method)."""
        return {name: self._handles.get(name) or Model(self, name) for name in self.model_names}

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def is_started(self) -> bool:
        return self._started

    @property
    def addresses(self) -> Mapping[str, str]:
        """Where the server answers: `grpc`, `http` and `metrics` for an owned server."""
        return dict(self._addresses)

    def _launch(self) -> TritonServerProcess:
        server = self.prepare_server()
        self._set_addresses(server.start())
        return server

    def prepare_server(
        self,
        extra_args: Iterable[str] = (),
        *,
        on_log_line: Callable[[str], None] | None = None,
        log_lines: int = 400,
    ) -> TritonServerProcess:
        """The tritonserver this runner launches, prepared but not started.

        The binary is located, options runnerkit owns are dropped with a warning, and models
        this build cannot run get their fallback (shadow) repository. `extra_args` (such as
        `--triton-options`) replace the runner's own `cli_args` of the same name. For
        supervisors (`runnerkit serve --production`) that start, watch and restart the server
        themselves; `stop_sync()` stops it and removes the shadow repository.
        """
        if self.model_repository is None:
            raise ValueError(f"runner {self.name!r} attaches to {self.url}; it has no server to launch")
        self._cleanup_server()
        sweep_leftovers()  # of runnerkit processes that were killed: shadow repositories, shared memory
        binary = locate_tritonserver(self.tritonserver_path)
        arguments, replaced = override_options(self.cli_args, extra_args)
        if replaced:
            logger.info("runner %r: tritonserver options %s replaced by %s", self.name, replaced, extra_args)
        kept, dropped = split_owned_options(arguments)
        for arg in dropped:
            logger.warning(
                "runner %r: ignoring tritonserver option %r: runnerkit sets it (ports bind to "
                "127.0.0.1, chosen at start)", self.name, arg,
            )  # fmt: skip
        repository = self.model_repository if self._repository is None else self._repository.uri
        models = self.repository_models if self._repository is not None else {}
        check_model_files((models[name] for name in models_loaded_at_start(models, kept)), repository)
        fallback = plan_fallback(models, binary)
        if fallback and any(models[name].path is None for name in fallback):
            # A remote repository (S3) is served where it is, fallback models included.
            binary = remote_fallback(binary, models, fallback)
        elif fallback:
            self._shadow_dir = owned_tempdir(self.name)
            repository = str(build_shadow_repository(models, fallback, self._shadow_dir / "models"))
        self._server = TritonServerProcess(
            binary,
            [repository],
            kept,
            # S3 credentials reach tritonserver through its environment only
            env=None if self._repository is None else self._repository.server_env(os.environ),
            log_prefix=f"{self.name}/tritonserver",
            on_log_line=on_log_line,
            log_lines=log_lines,
        )
        return self._server

    def _set_addresses(self, addresses: ServerAddresses) -> None:
        self._addresses = {
            "grpc": addresses.grpc_url,
            "http": addresses.http_url,
            "metrics": addresses.metrics_url,
        }

    def _wait_owned_server(self) -> None:
        server = self._server
        assert server is not None
        try:
            server.wait_ready(self.startup_timeout)
        except BaseException:
            self._cleanup_server()
            raise
        # a relaunch after a port race moves the server
        assert server.addresses is not None
        self._set_addresses(server.addresses)

    def _attach_addresses(self) -> dict[str, str] | None:
        """Where to attach instead of launching: `url=`, or the supervisor's server for us."""
        if self.url is not None:
            return {self.tritonserver_type: self.url}
        supervised = os.environ.get(ENV_SUPERVISED_ADDRESSES)
        if supervised:
            entry = json.loads(supervised).get(self.name)
            if entry:
                return {str(k): str(v) for k, v in entry.items()}
        return None

    @property
    def owns_server(self) -> bool:
        """Whether start() launches a tritonserver (rather than attaching to one)."""
        return self._attach_addresses() is None

    @property
    def is_supervised(self) -> bool:
        """Whether start() attaches to the tritonserver a `serve --production` supervisor launched
        for this runner (and waited for) rather than launching one or following `url=`."""
        return self.url is None and self._attach_addresses() is not None

    async def start(self) -> None:
        """Launch (or attach to) tritonserver, wait until it is ready, and learn its models."""
        if self._started:
            return
        attach = self._attach_addresses()
        if self._repository_models is None:
            # Listing a remote (S3) repository blocks: keep it off the event loop.
            await asyncio.get_running_loop().run_in_executor(None, lambda: self.repository_models)
        try:
            if attach is None:
                self._launch()
                await asyncio.get_running_loop().run_in_executor(None, self._wait_owned_server)
            else:
                self._addresses = attach
            await self._connect(attached=attach is not None)
        except BaseException:
            await self.stop()  # also when cancelled: a server that never became usable must not stay
            raise

    def start_sync(self) -> None:
        if self._started:
            return
        attach = self._attach_addresses()
        if attach is None:
            self._launch()  # in the calling thread: the server's parent-death signal follows it
            self._wait_owned_server()
        else:
            self._addresses = attach
        try:
            self._loop_thread().run(self._connect(attached=attach is not None))
        except BaseException:
            self.stop_sync()
            raise

    async def _connect(self, attached: bool) -> None:
        url = self._addresses[self.tritonserver_type]
        client = self._get_or_make_client(asyncio.get_running_loop())
        deadline = time.monotonic() + (self.startup_timeout if attached else 10.0)
        last_error: Exception | None = None
        while True:
            try:
                if await client.is_server_ready():
                    break
                last_error = None
            except TritonError as exc:
                last_error = exc
            if time.monotonic() > deadline:
                why = f": {last_error}" if last_error else " (it answers but is not ready)"
                raise TritonUnavailableError(
                    f"runner {self.name!r}: Triton at {url} ({self.tritonserver_type}) did not "
                    f"become ready{why}",
                    url=url,
                )
            await asyncio.sleep(0.1)
        self._started = True
        await self.refresh_models()
        logger.info("runner %r ready: Triton at %s (%s)", self.name, url, self.tritonserver_type)

    async def refresh_models(self) -> None:
        """Re-read the server's repository index and drop cached model configurations."""
        index = await self.get_model_repository_index()
        self._server_models = tuple(_index_names(index))
        self._validators.clear()
        self._batchers.clear()

    async def stop(self) -> None:
        """Close connections and stop the owned tritonserver; no process is left behind."""
        self._started = False
        loop = asyncio.get_running_loop()
        await self._close_clients(loop)
        # Blocking work (other loops' clients, the server's exit) off this loop.
        await loop.run_in_executor(None, self._release)

    def stop_sync(self) -> None:
        self._started = False
        self._release()

    def _release(self) -> None:
        self._batchers.clear()
        self._stop_sync_loop()
        self._close_other_loops_clients()
        self._cleanup_server()

    def _stop_sync_loop(self) -> None:
        sync_loop = self._sync_loop
        if sync_loop is None:
            return
        self._sync_loop = None
        if not sync_loop.loop.is_closed():
            try:
                sync_loop.run(self._close_clients(sync_loop.loop), timeout=10)
            finally:
                sync_loop.stop()

    def _close_other_loops_clients(self) -> None:
        """Close the clients made on other event loops (each on its own loop, while it runs)."""
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop in list(self._clients):
            client = self._clients.pop(loop, None)
            # A loop that has ended took its connections with it; the caller's own loop cannot
            # be waited on from here.
            if client is None or loop is current or loop.is_closed() or not loop.is_running():
                continue
            future = asyncio.run_coroutine_threadsafe(self._close_client(client), loop)
            try:
                future.result(timeout=10)
            except Exception:
                logger.debug("closing a Triton client on another event loop failed", exc_info=True)
        self._last_client = (None, None)

    async def _close_clients(self, loop: asyncio.AbstractEventLoop) -> None:
        client = self._clients.pop(loop, None)
        self._last_client = (None, None)
        if client is not None:
            await self._close_client(client)

    @staticmethod
    async def _close_client(client: TritonClient) -> None:
        try:
            await client.close()
        except Exception:  # closing a dead connection must not stop the shutdown
            logger.debug("closing the Triton client failed", exc_info=True)

    def _cleanup_server(self) -> None:
        # Taken before stopping: a failed wait in the executor may clean up concurrently.
        server, self._server = self._server, None
        shadow, self._shadow_dir = self._shadow_dir, None
        if server is not None:
            server.stop()
        if shadow is not None:
            shutil.rmtree(shadow, ignore_errors=True)

    def __enter__(self) -> Runner:
        self.start_sync()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_sync()

    async def __aenter__(self) -> Runner:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- clients, one per event loop -----------------------------------------------------------

    def _get_or_make_client(self, loop: asyncio.AbstractEventLoop) -> TritonClient:
        client = self._clients.get(loop)
        if client is None:
            url = self._addresses[self.tritonserver_type]
            client = self._clients[loop] = make_client(self.tritonserver_type, url, self.timeout)
        self._last_client = (loop, client)
        return client

    def _client_for_running_loop(self, model: str | None = None) -> TritonClient:
        loop = asyncio.get_running_loop()
        last_loop, last_client = self._last_client
        if last_loop is loop and last_client is not None and self._started:
            return last_client
        if not self._started:
            raise self._not_started_error(model)
        return self._get_or_make_client(loop)

    def _loop_thread(self) -> LoopThread:
        if self._sync_loop is None:
            self._sync_loop = LoopThread(f"runnerkit-{self.name}-sync")
        return self._sync_loop

    def _run_sync(self, model: str | None, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                f"runner {self.name!r}: `run` blocks, and this thread runs an event loop; use "
                "`await runner.<model>.async_run(...)` here"
            )
        if not self._started:
            raise self._not_started_error(model)
        return self._loop_thread().run(make())

    def _make_batcher(
        self, client: TritonClient, model: str, version: str, validator: InputValidator
    ) -> MicroBatcher | None:
        settings = settings_for(self.micro_batching, validator.spec)
        batcher = None
        asked = self.micro_batching.get(model) if isinstance(self.micro_batching, Mapping) else None
        if settings is None and asked not in (None, False):
            logger.warning(
                "runner %r: micro_batching for model %r is ignored: it needs a batch dimension "
                "(max_batch_size > 0) and no ragged inputs",
                self.name, model,
            )  # fmt: skip
        if settings is not None:
            batcher = MicroBatcher(client, model, version, settings, validator.spec.max_batch_size)
        self._batchers[(client, model, version)] = batcher
        return batcher

    def _not_started_error(self, model: str | None) -> RunnerNotStartedError:
        what = f"model {model!r} of runner {self.name!r}" if model else f"runner {self.name!r}"
        return RunnerNotStartedError(
            f"{what} was called before the runner started: runners are available only while "
            "their service runs (call them inside API functions, not at import time), or "
            "inside `with runner:` / `async with runner:` when used standalone"
        )

    # -- model configurations (fetched once, cached until load/unload) -------------------------

    async def _load_validator(self, model: str) -> InputValidator:
        validator = self._validators.get(model)
        if validator is not None:
            return validator
        if model not in self.model_names:
            getattr(self, model)  # raises ModelNotFoundError with the list of models
        try:
            spec = await self._fetch_spec(model)
        except TritonUnavailableError:
            raise
        except TritonError:
            local = self.repository_models.get(model)
            if local is None or local.spec is None:
                raise
            # Not loaded (explicit mode): check against the repository's file, and let Triton
            # say so on infer. Not cached: a later load may bring another configuration.
            return InputValidator(local.spec)
        validator = self._validators[model] = InputValidator(spec)
        return validator

    async def _fetch_spec(self, model: str) -> ModelSpec:
        client = self._client_for_running_loop(model)
        if client.protocol == "grpc":
            response = await client.call("get_model_config", model)
            return ModelSpec.from_proto(response.config, model)
        return ModelSpec.from_json(await client.call("get_model_config", model))

    async def model_index(self) -> list[dict[str, str]]:
        """The repository index as plain dicts (name, version, state, reason), for either protocol."""
        index = await self.get_model_repository_index()
        if hasattr(index, "models"):
            rows = [
                {"name": m.name, "version": m.version, "state": m.state, "reason": m.reason}
                for m in index.models
            ]
        else:
            rows = [{k: str(m.get(k, "")) for k in ("name", "version", "state", "reason")} for m in index]
        return sorted(rows, key=lambda r: (r["name"], r["version"]))

    # -- tritonclient's API, async, with Triton's errors as runnerkit exceptions ----------------

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await self._client_for_running_loop().call(method, *args, **kwargs)

    async def load_model(self, model_name: str, *args: Any, **kwargs: Any) -> None:
        if self._repository is not None and not args and not kwargs:  # no config/files override
            loop = asyncio.get_running_loop()
            model = await loop.run_in_executor(None, self._repository_model_now, model_name)
            if model is not None:
                check_model_files([model], self._repository.uri)
        await self._call("load_model", model_name, *args, **kwargs)
        await self.refresh_models()

    def _repository_model_now(self, name: str) -> RepositoryModel | None:
        """The model folder as it is now (a local one is read again: it may have been fixed)."""
        if isinstance(self._repository, LocalModelRepository):
            folder = self._repository.path / name
            return read_local_model(folder) if folder.is_dir() else None
        return self.repository_models.get(name)

    async def unload_model(self, model_name: str, *args: Any, **kwargs: Any) -> None:
        await self._call("unload_model", model_name, *args, **kwargs)
        await self.refresh_models()

    async def get_model_repository_index(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_model_repository_index", *args, **kwargs)

    async def get_model_config(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_model_config", *args, **kwargs)

    async def get_model_metadata(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_model_metadata", *args, **kwargs)

    async def is_model_ready(self, *args: Any, **kwargs: Any) -> bool:
        return bool(await self._call("is_model_ready", *args, **kwargs))

    async def is_server_live(self, *args: Any, **kwargs: Any) -> bool:
        return bool(await self._call("is_server_live", *args, **kwargs))

    async def is_server_ready(self, *args: Any, **kwargs: Any) -> bool:
        if args or kwargs:  # tritonclient's headers= / client_timeout=
            return bool(await self._call("is_server_ready", *args, **kwargs))
        return await self._client_for_running_loop().is_server_ready()

    async def infer(self, *args: Any, **kwargs: Any) -> Any:
        """tritonclient's own `infer` (InferInput objects), for callers who build requests."""
        return await self._call("infer", *args, **kwargs)

    def stream_infer(self, *args: Any, **kwargs: Any) -> Any:
        """tritonclient.grpc.aio's `stream_infer` (gRPC only): an async iterator of results."""
        client = self._client_for_running_loop()
        if client.protocol != "grpc":
            raise TritonError("stream_infer needs tritonserver_type='grpc'", status="UNSUPPORTED")
        return client.management.stream_infer(*args, **kwargs)

    async def get_inference_statistics(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_inference_statistics", *args, **kwargs)

    async def get_server_metadata(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_server_metadata", *args, **kwargs)

    async def get_log_settings(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_log_settings", *args, **kwargs)

    async def update_log_settings(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("update_log_settings", *args, **kwargs)

    async def get_trace_settings(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_trace_settings", *args, **kwargs)

    async def update_trace_settings(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("update_trace_settings", *args, **kwargs)

    async def get_system_shared_memory_status(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_system_shared_memory_status", *args, **kwargs)

    async def register_system_shared_memory(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("register_system_shared_memory", *args, **kwargs)

    async def unregister_system_shared_memory(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("unregister_system_shared_memory", *args, **kwargs)

    async def get_cuda_shared_memory_status(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get_cuda_shared_memory_status", *args, **kwargs)

    async def register_cuda_shared_memory(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("register_cuda_shared_memory", *args, **kwargs)

    async def unregister_cuda_shared_memory(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("unregister_cuda_shared_memory", *args, **kwargs)

    def __repr__(self) -> str:
        where = f"url={self.url!r}" if self.url else f"model_repository={self.model_repository!r}"
        return f"Runner({self.name!r}, {where}, tritonserver_type={self.tritonserver_type!r})"


def _index_names(index: Any) -> list[str]:
    """Model names from a repository index, as gRPC (protobuf) or HTTP (list of dicts) returns it."""
    if hasattr(index, "models"):
        return sorted({m.name for m in index.models})
    return sorted({m["name"] for m in index})
