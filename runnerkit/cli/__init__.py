"""The `runnerkit` command line; each sub-command lives in its own module."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from runnerkit.cli import _bentos, _serve
from runnerkit.exceptions import RunnerkitError

COMMANDS = (_serve, _bentos)


def build_parser() -> argparse.ArgumentParser:
    import runnerkit

    parser = argparse.ArgumentParser(prog="runnerkit", description=runnerkit.__doc__)
    parser.add_argument("--version", action="version", version=f"runnerkit {runnerkit.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.handler(args) or 0)
    except RunnerkitError as exc:
        print(f"runnerkit: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
