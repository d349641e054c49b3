"""Bentos: a service, its model repositories and its environment, built into a versioned
directory (`runnerkit build`), kept in a store, exported and imported as archives, and turned
into container images on the NGC tritonserver base (`runnerkit containerize`)."""

from __future__ import annotations

from runnerkit.bentos._archive import export_bento, import_bento
from runnerkit.bentos._bento import Bento
from runnerkit.bentos._bentofile import (
    DEFAULT_BASE_IMAGE,
    BentoBuildConfig,
    BentofileError,
    DockerOptions,
    PythonOptions,
    load_bentofile,
)
from runnerkit.bentos._build import build, build_bentofile, build_config
from runnerkit.bentos._containerize import ContainerImage, containerize
from runnerkit.bentos._errors import BentoArchiveError, BentoBuildError, BentoError, BentoNotFoundError
from runnerkit.bentos._serving import BentoServeTarget, resolve_bento, serve_target
from runnerkit.bentos._store import BentoStore
from runnerkit.bentos._tag import InvalidTagError, Tag, generate_version

__all__ = [
    "DEFAULT_BASE_IMAGE",
    "Bento",
    "BentoArchiveError",
    "BentoBuildConfig",
    "BentoBuildError",
    "BentoError",
    "BentoNotFoundError",
    "BentoServeTarget",
    "BentoStore",
    "BentofileError",
    "ContainerImage",
    "DockerOptions",
    "InvalidTagError",
    "PythonOptions",
    "Tag",
    "build",
    "build_bentofile",
    "build_config",
    "containerize",
    "delete",
    "export_bento",
    "generate_version",
    "get",
    "import_bento",
    "list_bentos",
    "load_bentofile",
    "resolve_bento",
    "serve_target",
]


def get(tag: Tag | str, *, store: BentoStore | None = None) -> Bento:
    """The bento with this tag (`name` or `name:latest`: the newest)."""
    return (store or BentoStore()).get(tag)


def list_bentos(name: str | None = None, *, store: BentoStore | None = None) -> list[Bento]:
    """Every bento in the store (of `name`), newest first."""
    return (store or BentoStore()).bentos(name)


def delete(tag: Tag | str, *, store: BentoStore | None = None) -> Bento:
    return (store or BentoStore()).delete(tag)
