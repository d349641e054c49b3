"""``python -m runnerkit.containers``: the stand-in base image and podman's environment.

python -m runnerkit.containers base-image [--rebuild] [--verify] [--engine podman|docker]
python -m runnerkit.containers env        # export lines for runnerkit's podman storage
eval "$(python -m runnerkit.containers env)" && podman images
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence

from runnerkit.containers._base_image import (
    CPU_STANDIN_IMAGE,
    CpuBaseImage,
    ensure_cpu_base_image,
    verify_cpu_base_image,
)
from runnerkit.containers._docker import DockerEngine
from runnerkit.containers._engine import ContainerEngine
from runnerkit.containers._podman import PodmanEngine
from runnerkit.containers._podman_env import PodmanSettings, write_podman_config
from runnerkit.containers.errors import ContainerError


def _engine(name: str) -> ContainerEngine:
    return DockerEngine() if name == "docker" else PodmanEngine.managed()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runnerkit.containers")
    sub = parser.add_subparsers(dest="command", required=True)
    base = sub.add_parser("base-image", help=f"build the CPU stand-in ({CPU_STANDIN_IMAGE})")
    base.add_argument("--tag", default=CPU_STANDIN_IMAGE)
    base.add_argument("--rebuild", action="store_true", help="rebuild even if the image exists")
    base.add_argument(
        "--verify", action="store_true", help="then serve a python model inside it (about 10 s)"
    )
    base.add_argument(
        "--engine",
        choices=("podman", "docker"),
        default="podman",
        help="podman: runnerkit's managed podman storage (default); docker: DOCKER_HOST",
    )
    base.add_argument("--quiet", action="store_true", help="do not print build logs")
    sub.add_parser("env", help="print export lines for runnerkit's managed podman configuration")
    args = parser.parse_args(argv)

    if args.command == "env":
        for key, value in write_podman_config(PodmanSettings()).items():
            print(f"export {key}={shlex.quote(value)}")
        return 0

    engine = _engine(args.engine)
    started = time.monotonic()
    try:
        tag = ensure_cpu_base_image(
            engine,
            spec=CpuBaseImage(tag=args.tag),
            rebuild=args.rebuild,
            on_log=None if args.quiet else lambda line: print(line, flush=True),
        )
        print(f"{tag}: ready ({time.monotonic() - started:.1f}s) in {engine!r}", flush=True)
        if args.verify:
            output = verify_cpu_base_image(engine, tag)
            print(output.strip().splitlines()[-1] if output.strip() else "", flush=True)
            print(f"{tag}: verified (tritonserver --help, identity model served)", flush=True)
    except ContainerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
