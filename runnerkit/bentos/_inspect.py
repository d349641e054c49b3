"""Importing a service to learn what to package, in a fresh interpreter.

The build runs :func:`main` (``TARGET OUT.json``) in a child Python with the build context as
working directory: the service's module is imported as it will be when the bento is served (a
clean interpreter, relative paths against the context), and nothing it imports or creates stays
in the process that builds (``sys.modules``, runners, threads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs

from runnerkit.bentos._errors import BentoBuildError

INSPECT_TIMEOUT = 300.0
# `-c` rather than `-m`: this module is already imported by runnerkit.bentos (runpy warns).
_CHILD = "import sys; from runnerkit.bentos._inspect import main; sys.exit(main(sys.argv[1:]))"


@attrs.frozen
class RunnerInfo:
    name: str
    tritonserver_type: str
    cli_args: tuple[str, ...]
    url: str | None
    model_repository: str | None  # an absolute local path, or an s3:// URL
    models: tuple[dict[str, Any], ...]

    @property
    def is_local(self) -> bool:
        return self.model_repository is not None and not self.model_repository.startswith("s3://")


@attrs.frozen
class ServiceInfo:
    """What the build needs to know of a service: its name, runners, APIs and OpenAPI document."""

    name: str
    runners: tuple[RunnerInfo, ...]
    apis: tuple[dict[str, Any], ...]
    openapi: dict[str, Any]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServiceInfo:
        runners = tuple(
            RunnerInfo(
                name=r["name"],
                tritonserver_type=r["tritonserver_type"],
                cli_args=tuple(r["cli_args"]),
                url=r["url"],
                model_repository=r["model_repository"],
                models=tuple(r["models"]),
            )
            for r in data["runners"]
        )
        return cls(data["name"], runners, tuple(data["apis"]), data["openapi"])


def inspect_service(service: str, build_ctx: Path, out_file: Path) -> ServiceInfo:
    """Import `service` (module:svc or file.py:svc) from `build_ctx` in a child interpreter."""
    env = dict(os.environ)
    # A bundled-repository mapping of an outer bento must not redirect the service's runners.
    env.pop("RUNNERKIT_MODEL_REPOSITORIES", None)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, service, str(out_file)],
            cwd=build_ctx,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=INSPECT_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise BentoBuildError(
            f"importing service {service!r} from {build_ctx} took longer than {INSPECT_TIMEOUT:.0f}s"
        ) from exc
    if proc.returncode != 0 or not out_file.is_file():
        output = (proc.stderr or proc.stdout).strip()
        raise BentoBuildError(
            f"could not import service {service!r} from {build_ctx} (exit {proc.returncode}):\n"
            + "\n".join(output.splitlines()[-25:])
        )
    return ServiceInfo.from_dict(json.loads(out_file.read_text(encoding="utf-8")))


def _describe(target: str) -> dict[str, Any]:
    from runnerkit.service._openapi import openapi_document
    from runnerkit.serving._target import load_service
    from runnerkit.triton._repository import LocalModelRepository

    service = load_service(target).service
    runners = []
    for runner in service.runners:
        repository = runner.model_repository
        models: list[dict[str, Any]] = []
        if repository is not None and not repository.startswith("s3://"):
            local = LocalModelRepository(Path(repository))
            repository = str(local.path)
            # a missing folder is reported by the build, which knows what to say about it
            for model in local.list_models().values() if local.path.is_dir() else ():
                models.append(
                    {
                        "name": model.name,
                        "versions": list(model.versions),
                        "platform": model.spec.platform if model.spec else "",
                        "backend": model.spec.backend if model.spec else "",
                    }
                )
        runners.append(
            {
                "name": runner.name,
                "tritonserver_type": runner.tritonserver_type,
                "cli_args": list(runner.cli_args),
                "url": runner.url,
                "model_repository": repository,
                "models": models,
            }
        )
    return {
        "name": service.name,
        "runners": runners,
        "apis": [api.to_spec() for api in service.apis.values()],
        "openapi": openapi_document(service),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m runnerkit.bentos._inspect SERVICE OUT.json", file=sys.stderr)
        return 2
    target, out = argv
    from runnerkit.exceptions import RunnerkitError

    try:
        described = _describe(target)
    except RunnerkitError as exc:  # runnerkit's own errors say what is wrong; no traceback needed
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    Path(out).write_text(json.dumps(described, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
