"""Resolving what `runnerkit serve TARGET` names into a Service and an import string."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import attrs
import yaml

from runnerkit.exceptions import RunnerkitError
from runnerkit.service._service import Service


class ServiceTargetError(RunnerkitError, ValueError):
    """A serve target that does not name a service."""


@attrs.frozen
class ServiceTarget:
    service: Service
    import_string: str  # "module:attr", importable with `app_dir` on sys.path
    app_dir: Path  # put first on sys.path (workers and the reloader import from here)
    watch_dirs: tuple[Path, ...]


def load_service(target: str, *, working_dir: Path | None = None) -> ServiceTarget:
    """`module:svc`, `path/to/file.py:svc`, a directory holding bentofile.yaml, or a bento
    (a directory holding bento.yaml, or a tag in the store such as `digits:latest`)."""
    base = working_dir or Path.cwd()
    # A bento (its directory, or a tag in the store) serves the service it packages, with the
    # model repositories it bundles. Imported here: the bentos package builds on this module's.
    from runnerkit.bentos._serving import resolve_bento

    bento = resolve_bento(target, base=base)
    if bento is not None:
        bento.apply_env()
        return load_service(bento.service, working_dir=bento.working_dir)
    candidate = base / target
    if ":" not in target and candidate.is_dir():
        bentofile = candidate / "bentofile.yaml"
        if not bentofile.is_file():
            raise ServiceTargetError(f"{candidate} is a directory without bentofile.yaml")
        data = yaml.safe_load(bentofile.read_text()) or {}
        if not isinstance(data, dict) or not isinstance(data.get("service"), str):
            raise ServiceTargetError(f"{bentofile}: expected a `service:` key such as 'service:svc'")
        return load_service(data["service"], working_dir=candidate.resolve())
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise ServiceTargetError(
            f"serve target {target!r}: expected 'module:svc', 'path/to/file.py:svc' or a directory "
            "with bentofile.yaml"
        )
    if module_part.endswith(".py") or "/" in module_part:
        path = (base / module_part).resolve()
        if not path.is_file():
            raise ServiceTargetError(f"serve target {target!r}: no such file {path}")
        app_dir = path.parent
        module_name = path.stem
    else:
        app_dir = base.resolve()
        module_name = module_part
    if str(app_dir) not in sys.path:
        sys.path.insert(0, str(app_dir))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise ServiceTargetError(
                f"serve target {target!r}: no module {module_name!r} in {app_dir}"
            ) from None
        raise
    service = getattr(module, attr, None)
    if not isinstance(service, Service):
        raise ServiceTargetError(
            f"serve target {target!r}: {module_name}.{attr} is a {type(service).__name__}, "
            "not a runnerkit.Service"
        )
    return ServiceTarget(service, f"{module_name}:{attr}", app_dir, (app_dir,))
