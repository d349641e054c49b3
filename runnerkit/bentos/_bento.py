"""A built bento on disk: a directory with `bento.yaml`, `src/`, `env/`, `apis/` and a README."""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from runnerkit.bentos._errors import BentoError
from runnerkit.bentos._tag import Tag

BENTO_YAML = "bento.yaml"
SRC_DIR = "src"
DOCKERFILE = "env/docker/Dockerfile"


@attrs.frozen(repr=False)
class Bento:
    """A bento directory and what its `bento.yaml` says."""

    path: Path
    info: Mapping[str, Any] = attrs.field(eq=False)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Bento:
        directory = Path(path).resolve()
        file = directory / BENTO_YAML
        if not file.is_file():
            raise BentoError(f"{directory} is not a bento (no {BENTO_YAML})")
        try:
            info = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise BentoError(f"{file}: not valid YAML: {exc}") from exc
        if not isinstance(info, dict) or not {"name", "version", "service"} <= set(info):
            raise BentoError(f"{file}: expected name, version and service keys")
        return cls(directory, info)

    @property
    def tag(self) -> Tag:
        return Tag(str(self.info["name"]), str(self.info["version"]))

    @property
    def name(self) -> str:
        return str(self.info["name"])

    @property
    def version(self) -> str:
        return str(self.info["version"])

    @property
    def service(self) -> str:
        return str(self.info["service"])

    @property
    def src_dir(self) -> Path:
        return self.path / SRC_DIR

    @property
    def dockerfile(self) -> Path:
        return self.path / DOCKERFILE

    @property
    def creation_time(self) -> datetime.datetime:
        value = self.info.get("creation_time")
        if isinstance(value, datetime.datetime):
            moment = value
        else:
            try:
                moment = datetime.datetime.fromisoformat(str(value))
            except ValueError:
                return datetime.datetime.fromtimestamp(0, datetime.timezone.utc)
        return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.info.get("labels") or {})

    @property
    def runners(self) -> list[dict[str, Any]]:
        return list(self.info.get("runners") or [])

    def bundled_repositories(self) -> dict[str, Path]:
        """{runner name: absolute path} of the model repositories bundled under `src/`."""
        bundled: dict[str, Path] = {}
        for runner in self.runners:
            repository = runner.get("model_repository") or {}
            if repository.get("kind") == "bundled":
                bundled[str(runner["name"])] = self.src_dir / str(repository["path"])
        return bundled

    def size_bytes(self) -> int:
        return sum((Path(root) / f).stat().st_size for root, _, files in os.walk(self.path) for f in files)

    def to_dict(self) -> dict[str, Any]:
        return {"tag": str(self.tag), "path": str(self.path), **dict(self.info)}

    def __repr__(self) -> str:
        return f'Bento(tag="{self.tag}")'

    __str__ = __repr__
