"""Serving a bento: which service to import, from where, and with which environment.

`runnerkit serve` accepts a bento directory (holding bento.yaml) or a tag from the store
(`digits`, `digits:latest`, `digits:<version>`). The runners find the model repositories bundled
in the bento through `RUNNERKIT_MODEL_REPOSITORIES` ({runner name: path}), which replaces the
path the service's code gives (a path on the build machine, or relative to another directory).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

import attrs

from runnerkit.bentos._bento import BENTO_YAML, Bento
from runnerkit.bentos._errors import BentoNotFoundError
from runnerkit.bentos._store import BentoStore
from runnerkit.bentos._tag import InvalidTagError, Tag
from runnerkit.triton._runner import ENV_MODEL_REPOSITORIES


@attrs.frozen
class BentoServeTarget:
    bento: Bento
    service: str  # "module:svc" or "path/file.py:svc", relative to working_dir
    working_dir: Path  # the bento's src/
    env: Mapping[str, str]  # to set before the service is imported (and for its workers)

    def apply_env(self, environ: MutableMapping[str, str] | None = None) -> None:
        """Set the bento's environment: the repository mapping always, its `envs` unless the
        environment already sets them (`docker run -e NAME=...` wins over the bento)."""
        environ = os.environ if environ is None else environ
        for key, value in self.env.items():
            if key == ENV_MODEL_REPOSITORIES:
                environ[key] = value
            else:
                environ.setdefault(key, value)


def serve_target(bento: Bento) -> BentoServeTarget:
    env = {str(k): str(v) for k, v in (bento.info.get("envs") or {}).items()}
    repositories = {name: str(path) for name, path in bento.bundled_repositories().items()}
    env[ENV_MODEL_REPOSITORIES] = json.dumps(repositories)
    return BentoServeTarget(bento, bento.service, bento.src_dir, env)


def resolve_bento(
    target: str, *, base: Path | None = None, store: BentoStore | None = None
) -> BentoServeTarget | None:
    """The bento `target` names (a bento directory, or a tag in the store), or None.

    None means "not a bento": the caller treats `target` as module:svc, file.py:svc or a
    directory with bentofile.yaml. A tag is only looked up when it cannot be a module path.
    """
    directory = (base or Path.cwd()) / target
    if directory.is_dir():
        return serve_target(Bento.from_path(directory)) if (directory / BENTO_YAML).is_file() else None
    module_part, _, _ = target.partition(":")
    if "/" in module_part or module_part.endswith(".py"):
        return None
    try:
        tag = Tag.from_str(target)
    except InvalidTagError:
        return None
    try:
        return serve_target((store or BentoStore()).get(tag))
    except BentoNotFoundError:
        return None
