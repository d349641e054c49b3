"""`runnerkit serve TARGET`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from runnerkit.service._service import ENV_EXPOSE_TRITON
from runnerkit.serving._dev import serve_development
from runnerkit.serving._production import (
    DEFAULT_GRACE_PERIOD,
    DEFAULT_HOST,
    ProductionSettings,
    ServeConfigError,
    resolve_workers,
    serve_production,
)
from runnerkit.serving._target import load_service

_DEV_HOST = "127.0.0.1"
_PRODUCTION_ONLY = ("workers", "triton_options", "grace_period", "no_access_log")


class _ServeParser(argparse.ArgumentParser):
    """Lets `--triton-options --key=value` through: argparse would read `--key=value` as an
    option of its own and stop with "expected one argument"."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        joined: list[str] = []
        pending = False
        for arg in args or ():
            if pending and arg.startswith("-"):
                joined[-1] = f"--triton-options={arg}"
            else:
                joined.append(arg)
            pending = arg == "--triton-options"
        return super().parse_known_args(joined, namespace)


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve", help="serve a service (module:svc, file.py:svc, or a directory with bentofile.yaml)"
    )
    parser.add_argument("target", help="module:svc, path/to/file.py:svc, or a directory with bentofile.yaml")
    parser.__class__ = _ServeParser
    parser.add_argument(
        "--host", help=f"address to bind (default {_DEV_HOST}, with --production {DEFAULT_HOST})"
    )
    parser.add_argument("--port", type=int, default=3000, help="port to bind (default 3000)")
    parser.add_argument("--reload", action="store_true", help="restart the API when its files change")
    production = parser.add_argument_group("production (--production)")
    production.add_argument(
        "--production",
        action="store_true",
        help="supervised tritonservers and several API workers (what runs in a container)",
    )
    production.add_argument(
        "--workers",
        type=int,
        help="API worker processes (default $RUNNERKIT_WORKERS, else $WORKER_COUNT, else 1)",
    )
    production.add_argument(
        "--triton-options",
        action="append",
        metavar="[RUNNER.]KEY=VALUE",
        help="a tritonserver option (repeatable): key=value or --key=value for every runner, "
        "runner_name.key=value for one (it replaces the options for every runner with that key); "
        "e.g. model-control-mode=explicit, load-model=NAME",
    )
    production.add_argument(
        "--no-access-log", action="store_true", default=None, help="no log line per request (access log)"
    )
    production.add_argument(
        "--grace-period",
        type=float,
        metavar="SECONDS",
        help=f"on SIGTERM/SIGINT, how long in-flight requests may take (default {DEFAULT_GRACE_PERIOD:.0f})",
    )
    parser.add_argument(
        "--expose-triton",
        nargs="?",
        const="1",
        metavar="RUNNER",
        help="also proxy Triton's KServe v2 endpoints under /v2 (of the first runner, or of RUNNER)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.expose_triton:
        # Services read it when they are built, here and in every worker this process starts.
        os.environ[ENV_EXPOSE_TRITON] = args.expose_triton
    if args.production:
        if args.reload:
            raise ServeConfigError("--reload is for development; leave it out with --production")
        settings = ProductionSettings(
            host=args.host or DEFAULT_HOST,
            port=args.port,
            workers=resolve_workers(args.workers),
            triton_options=tuple(args.triton_options or ()),
            grace_period=DEFAULT_GRACE_PERIOD if args.grace_period is None else args.grace_period,
            access_log=not args.no_access_log,
        )
        return serve_production(load_service(args.target), settings)
    # Their defaults are None, so that anything given shows (even --workers 0).
    given = [f"--{name.replace('_', '-')}" for name in _PRODUCTION_ONLY if getattr(args, name) is not None]
    if given:
        raise ServeConfigError(f"{', '.join(given)} only apply with --production")
    target = load_service(args.target)
    serve_development(target, host=args.host or _DEV_HOST, port=args.port, reload=args.reload)
    return 0
