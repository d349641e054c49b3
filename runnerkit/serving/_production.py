"""`runnerkit serve --production`: supervised tritonservers and N uvicorn API workers.

This process (the supervisor) launches one tritonserver per runner that owns one, on free
127.0.0.1 ports, and waits until each is ready (a failure stops here, before the API listens).
Its API workers are uvicorn's own multiprocess workers sharing one listening socket (a dead
worker is replaced); their runners attach to the supervisor's servers through
RUNNERKIT_TRITON_ADDRESSES. A tritonserver that dies is restarted on the same ports. SIGTERM or
SIGINT: the workers stop accepting and finish in-flight requests within the grace period, then
the tritonservers stop.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import math
import multiprocessing.connection
import os
import shutil
import signal
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess

from runnerkit._leftovers import owned_tempdir
from runnerkit._leftovers import sweep as sweep_leftovers
from runnerkit.exceptions import RunnerkitError
from runnerkit.serving._http_protocol import HttpProtocol
from runnerkit.serving._logging import ENV_SUPERVISOR_PID, log_config
from runnerkit.serving._options import triton_arguments
from runnerkit.serving._supervisor import TritonSupervisor
from runnerkit.serving._target import ServiceTarget
from runnerkit.serving._worker import ENV_WORKER_TARGET
from runnerkit.triton._batching import ENV_API_WORKERS
from runnerkit.triton._runner import ENV_SUPERVISED_ADDRESSES

logger = logging.getLogger("runnerkit.serve")

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 3000
DEFAULT_GRACE_PERIOD = 30.0
# Where the worker count comes from when --workers is not given, in this order (WORKER_COUNT is
# Azure ML's name for it).
WORKER_ENV_VARS = ("RUNNERKIT_WORKERS", "WORKER_COUNT")
ENV_PROMETHEUS_DIR = "PROMETHEUS_MULTIPROC_DIR"
# uvicorn pings each worker over a pipe and replaces one that does not answer in time; under a
# full CPU its 5 s default mistakes a busy worker for a hung one.
_WORKER_HEALTHCHECK_TIMEOUT = 30
_WORKER_APP = "runnerkit.serving._worker:create_app"


class ServeConfigError(RunnerkitError, ValueError):
    """Production serving settings that cannot work (a bad worker count, a taken port)."""


def resolve_workers(value: int | None, environ: Mapping[str, str] | None = None) -> int:
    """--workers, else $RUNNERKIT_WORKERS, else $WORKER_COUNT, else 1."""
    environ = os.environ if environ is None else environ
    source = "--workers"
    raw: str | int | None = value
    if raw is None:
        for name in WORKER_ENV_VARS:
            if environ.get(name, "").strip():
                source, raw = f"${name}", environ[name].strip()
                break
    if raw is None:
        return 1
    try:
        workers = int(raw)
    except ValueError:
        workers = 0
    if workers < 1:
        raise ServeConfigError(f"{source} is {raw!r}: expected a whole number of API workers, 1 or more")
    return workers


@attrs.frozen
class ProductionSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workers: int = 1
    triton_options: tuple[str, ...] = ()
    grace_period: float = DEFAULT_GRACE_PERIOD
    access_log: bool = True


def serve_production(target: ServiceTarget, settings: ProductionSettings) -> int:
    """Serve until SIGTERM/SIGINT; the exit code (non-zero when nothing could be served)."""
    service = target.service
    owned = [r for r in service.runners if r.owns_server]
    arguments = triton_arguments(settings.triton_options, [r.name for r in owned])
    sock = _listen_socket(settings.host, settings.port)
    _configure_logging()
    sweep_leftovers()
    metrics_dir = str(owned_tempdir("metrics"))
    supervisor = TritonSupervisor(owned, arguments)
    # Until uvicorn's supervisor takes SIGTERM over, it stops start-up as Ctrl-C does (cleaning up).
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        addresses = supervisor.start()
        supervisor.watch()
        existing = json.loads(os.environ.get(ENV_SUPERVISED_ADDRESSES) or "{}")
        env = {
            ENV_SUPERVISED_ADDRESSES: json.dumps(existing | addresses),
            ENV_PROMETHEUS_DIR: metrics_dir,
            ENV_SUPERVISOR_PID: str(os.getpid()),
            ENV_API_WORKERS: str(settings.workers),
            ENV_WORKER_TARGET: json.dumps(
                {"import_string": target.import_string, "app_dir": str(target.app_dir)}
            ),
        }
        with _environ(env):
            return _run_workers(target, settings, sock)
    finally:
        sock.close()
        supervisor.stop()
        shutil.rmtree(metrics_dir, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
        logger.info("stopped")


def _run_workers(target: ServiceTarget, settings: ProductionSettings, sock: socket.socket) -> int:
    options: dict[str, Any] = {
        "factory": True,
        "host": settings.host,
        "port": settings.port,
        "workers": settings.workers,
        "log_config": log_config(logging.getLogger().getEffectiveLevel()),
        "use_colors": False,
        "access_log": settings.access_log,
        "lifespan": "on",
        "http": HttpProtocol,
        "timeout_graceful_shutdown": math.ceil(settings.grace_period),
    }
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:  # uvicorn >= 0.37
        options["timeout_worker_healthcheck"] = _WORKER_HEALTHCHECK_TIMEOUT
    config = uvicorn.Config(_WORKER_APP, **options)
    if "target" in inspect.signature(Multiprocess).parameters:  # older uvicorn takes the target
        workers = Multiprocess(config, target=uvicorn.Server(config).run, sockets=[sock])  # type: ignore[call-arg,unused-ignore]
    else:
        workers = Multiprocess(config, sockets=[sock])
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    logger.info(
        "serving %r at http://%s:%d with %d API worker(s) (docs: /docs, metrics: /metrics)",
        target.service.name, host, settings.port, settings.workers,
    )  # fmt: skip
    threading.Thread(
        target=_shut_down, args=(workers, sock, settings.grace_period), name="runnerkit-shutdown", daemon=True
    ).start()
    workers.run()
    if any(p.exitcode == STARTUP_FAILURE for p in workers.processes):
        raise RunnerkitError("an API worker failed to start (see its log above); nothing is served")
    return 0


def _shut_down(workers: Multiprocess, sock: socket.socket, grace_period: float) -> None:
    """Once shutdown begins: stop accepting, and give the workers the grace period (and some)."""
    workers.should_exit.wait()
    # The workers close their copies of the listening socket; while this process holds one, the
    # kernel would still queue new connections that nobody accepts (clients would hang).
    sock.close()
    deadline = time.monotonic() + grace_period + 15.0
    # Sentinels tell when a worker has ended without reaping it (uvicorn's join does that).
    pending = {p.process.sentinel: p for p in list(workers.processes)}
    while pending and (left := deadline - time.monotonic()) > 0:
        for ended in multiprocessing.connection.wait(list(pending), timeout=left):
            pending.pop(ended)  # type: ignore[arg-type]
    for process in pending.values():
        logger.error("API worker %s did not stop within the grace period; killing it", process.pid)
        with contextlib.suppress(ProcessLookupError, TypeError):
            os.kill(process.pid, signal.SIGKILL)  # type: ignore[arg-type]


def _configure_logging() -> None:
    import logging.config

    logging.config.dictConfig(log_config(logging.getLogger().getEffectiveLevel()))


def _listen_socket(host: str, port: int) -> socket.socket:
    """The API socket, bound before anything is launched (workers listen on it once they run)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeConfigError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set for the workers to inherit; restored afterwards."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
