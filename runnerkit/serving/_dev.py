"""`runnerkit serve` in development: tritonservers launched here, one uvicorn process (or reload)."""

from __future__ import annotations

import json
import logging
import os
import signal

import uvicorn

from runnerkit.serving._http_protocol import HttpProtocol
from runnerkit.serving._target import ServiceTarget
from runnerkit.triton._runner import ENV_SUPERVISED_ADDRESSES

logger = logging.getLogger("runnerkit.serve")


def serve_development(target: ServiceTarget, *, host: str, port: int, reload: bool) -> None:
    service = target.service
    owned = [r for r in service.runners if r.owns_server]
    try:
        # Triton lives in this process, so a reload of the API code does not restart it.
        for runner in owned:
            runner.start_sync()
        addresses = {r.name: dict(r.addresses) for r in owned}
        existing = json.loads(os.environ.get(ENV_SUPERVISED_ADDRESSES) or "{}")
        os.environ[ENV_SUPERVISED_ADDRESSES] = json.dumps(existing | addresses)
        # uvicorn re-raises the signal that stopped it once it is done; by then the shutdown is
        # ours to finish (stopping tritonserver below), so that signal must not interrupt it.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: None)
        print(f"runnerkit: serving {service.name!r} at http://{host}:{port} (docs: /docs)", flush=True)
        uvicorn.run(
            target.import_string,
            host=host,
            port=port,
            reload=reload,
            reload_dirs=[str(d) for d in target.watch_dirs] if reload else None,
            app_dir=str(target.app_dir),
            log_level="info",
            lifespan="on",
            http=HttpProtocol,
        )
    finally:
        for runner in owned:
            runner.stop_sync()
