"""`runnerkit serve TARGET`."""

from __future__ import annotations

import argparse
from typing import Any

from runnerkit.serving._dev import serve_development
from runnerkit.serving._target import load_service


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve", help="serve a service (module:svc, file.py:svc, or a directory with bentofile.yaml)"
    )
    parser.add_argument("target", help="module:svc, path/to/file.py:svc, or a directory with bentofile.yaml")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000, help="port to bind (default 3000)")
    parser.add_argument("--reload", action="store_true", help="restart the API when its files change")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    target = load_service(args.target)
    serve_development(target, host=args.host, port=args.port, reload=args.reload)
    return 0
