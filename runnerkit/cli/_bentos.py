"""`runnerkit build | list | get | delete | export | import | containerize`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from runnerkit.bentos import (
    BentoError,
    BentoStore,
    build_bentofile,
    containerize,
    export_bento,
    import_bento,
)
from runnerkit.bentos._containerize import BACKENDS


def register(commands: Any) -> None:
    build = commands.add_parser("build", help="build a bento from bentofile.yaml")
    build.add_argument("build_ctx", nargs="?", default=".", help="the build context (default: .)")
    build.add_argument(
        "-f",
        "--bentofile",
        default="bentofile.yaml",
        help="relative to the build context (default: bentofile.yaml)",
    )
    build.add_argument(
        "--version", dest="bento_version", help="the bento's version (default: the build time)"
    )
    build.add_argument(
        "--bundle-models",
        action="store_true",
        default=None,
        help="copy S3 model repositories into the bento (default: reference them by URL; "
        "also the bentofile key bundle_models: true)",
    )
    build.add_argument("-q", "--quiet", action="store_true", help="print only the result")
    build.set_defaults(handler=run_build)

    listing = commands.add_parser("list", help="list the bentos in the store")
    listing.add_argument("name", nargs="?", help="only bentos of this name")
    listing.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    listing.set_defaults(handler=run_list)

    get = commands.add_parser("get", help="show a bento (NAME, NAME:latest or NAME:VERSION)")
    get.add_argument("tag")
    get.add_argument("-o", "--output", choices=("json", "yaml"), default="yaml")
    get.set_defaults(handler=run_get)

    delete = commands.add_parser("delete", help="delete a bento from the store")
    delete.add_argument("tag")
    delete.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    delete.set_defaults(handler=run_delete)

    export = commands.add_parser("export", help="write a bento to a .tar.gz archive")
    export.add_argument("tag")
    export.add_argument("path", help="the archive to write (a directory gets NAME-VERSION.tar.gz)")
    export.set_defaults(handler=run_export)

    importing = commands.add_parser("import", help="add a bento archive to the store")
    importing.add_argument("path")
    importing.set_defaults(handler=run_import)

    image = commands.add_parser("containerize", help="build a container image of a bento")
    image.add_argument("tag")
    image.add_argument("-t", "--image-tag", help="the image's name:tag (default: NAME:VERSION of the bento)")
    image.add_argument(
        "--backend",
        choices=BACKENDS,
        default="docker",
        help="docker: the docker SDK on DOCKER_HOST (any Docker-compatible API); podman: the podman CLI",
    )
    image.add_argument("--platform", help="target platform, e.g. linux/amd64")
    image.add_argument(
        "--build-arg", action="append", default=[], metavar="KEY=VALUE", help="a Dockerfile build argument"
    )
    image.add_argument(
        "--base-image",
        help="replace the bento's docker.base_image (any image with tritonserver and Python>=3.10)",
    )
    image.set_defaults(handler=run_containerize)


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def run_build(args: argparse.Namespace) -> int:
    bento = build_bentofile(
        args.bentofile,
        build_ctx=args.build_ctx,
        version=args.bento_version,
        quiet=args.quiet,
        bundle_models=args.bundle_models,
    )
    print(f"Successfully built {bento}")
    return 0


def _summary(bento: Any) -> dict[str, Any]:
    return {
        "tag": str(bento.tag),
        "service": bento.service,
        "creation_time": bento.creation_time.isoformat(),
        "size_bytes": bento.size_bytes(),
        "path": str(bento.path),
    }


def _human_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def run_list(args: argparse.Namespace) -> int:
    bentos = BentoStore().bentos(args.name)
    summaries = [_summary(b) for b in bentos]
    if args.output == "json":
        print(json.dumps(summaries, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(summaries, sort_keys=False), end="")
    else:
        table = Table("Tag", "Service", "Size", "Created (UTC)", box=None)
        for summary in summaries:
            table.add_row(
                summary["tag"],
                summary["service"],
                _human_size(summary["size_bytes"]),
                summary["creation_time"][:19].replace("T", " "),
            )
        _out().print(table if summaries else f"no bentos in {BentoStore().root}")
    return 0


def run_get(args: argparse.Namespace) -> int:
    bento = BentoStore().get(args.tag)
    data = bento.to_dict()
    if args.output == "json":
        print(json.dumps(data, indent=2, default=str))
    else:
        print(yaml.safe_dump(data, sort_keys=False), end="")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    store = BentoStore()
    bento = store.get(args.tag)
    if not args.yes:
        if not sys.stdin.isatty():
            raise BentoError(f"refusing to delete {bento.tag} without confirmation: add -y")
        answer = input(f"Delete bento {bento.tag} ({bento.path})? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Not deleted.")
            return 1
    store.delete(bento.tag)
    print(f"Deleted {bento}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    path = export_bento(args.tag, args.path)
    print(f"Exported {BentoStore().get(args.tag)} to {path}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    bento = import_bento(Path(args.path))
    print(f"Imported {bento}")
    return 0


def _build_args(values: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for value in values:
        key, sep, item = value.partition("=")
        if not sep or not key:
            raise BentoError(f"--build-arg {value!r}: expected KEY=VALUE")
        result[key] = item
    return result


def run_containerize(args: argparse.Namespace) -> int:
    image = containerize(
        args.tag,
        image_tag=args.image_tag,
        backend=args.backend,
        platform=args.platform,
        build_args=_build_args(args.build_arg),
        base_image=args.base_image,
        on_log=lambda line: print(line, flush=True),
    )
    print(f"Successfully built image {image.tag} ({image.image_id[:19]}) of {image.bento}")
    engine = "podman" if image.backend == "podman" else "docker"
    print(f"Run it: {engine} run --rm -p 3000:3000 {image.tag} serve --production")
    return 0
