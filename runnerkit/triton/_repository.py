"""Model repositories: what models a repository holds, read without a running server."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

import attrs
from google.protobuf import text_format

from runnerkit.exceptions import RunnerkitError
from runnerkit.triton._model_config import ModelSpec


class ModelRepositoryError(RunnerkitError):
    """A model repository that cannot be read, or a model in it with a broken configuration."""


@attrs.frozen
class RepositoryModel:
    """One model folder of a repository."""

    name: str
    spec: ModelSpec | None  # None when the folder has no config.pbtxt (Triton auto-completes it)
    versions: tuple[int, ...]
    path: Path | None  # local folder; None for remote repositories
    files: tuple[str, ...] = ()  # relative paths of the files in the model folder


class ModelRepository(Protocol):
    """Anything that can say which models it holds and give Triton a location to load from."""

    @property
    def uri(self) -> str: ...

    def list_models(self) -> dict[str, RepositoryModel]: ...

    def server_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment of the tritonserver that reads this repository (`base` plus access)."""
        ...


@attrs.frozen
class LocalModelRepository:
    path: Path = attrs.field(converter=lambda p: Path(p).expanduser().resolve())

    @property
    def uri(self) -> str:
        return str(self.path)

    def server_env(self, base: Mapping[str, str]) -> dict[str, str]:
        return dict(base)

    def list_models(self) -> dict[str, RepositoryModel]:
        if not self.path.is_dir():
            raise ModelRepositoryError(
                f"model repository {str(self.path)!r} is not a directory; expected a folder "
                "with one sub-folder per model (model/config.pbtxt, model/1/...)"
            )
        models: dict[str, RepositoryModel] = {}
        for entry in sorted(self.path.iterdir()):
            if not entry.is_dir() or entry.name.startswith("."):
                continue
            models[entry.name] = read_local_model(entry)
        return models


def read_local_model(folder: Path) -> RepositoryModel:
    config_file = folder / "config.pbtxt"
    spec = None
    if config_file.is_file():
        try:
            spec = ModelSpec.from_text(config_file.read_text(), folder.name)
        except text_format.ParseError as exc:
            raise ModelRepositoryError(f"{config_file}: invalid model configuration: {exc}") from exc
    versions = tuple(sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()))
    files = tuple(
        sorted(
            os.path.relpath(os.path.join(root, f), folder)
            for root, _, names in os.walk(folder)
            for f in names
            if "__pycache__" not in root
        )
    )
    return RepositoryModel(folder.name, spec, versions, folder, files)


def loaded_versions(model: RepositoryModel) -> tuple[int, ...]:
    """The versions of `model` that Triton loads under its version policy (the latest by default)."""
    policy = model.spec.config.version_policy if model.spec is not None else None
    choice = policy.WhichOneof("policy_choice") if policy is not None else None
    if policy is None or choice is None:
        return model.versions[-1:]
    if choice == "all":
        return model.versions
    if choice == "specific":
        wanted = set(policy.specific.versions)
        return tuple(v for v in model.versions if v in wanted)
    return model.versions[-max(1, policy.latest.num_versions) :]


def missing_model_files(model: RepositoryModel) -> list[str]:
    """The model files of a python-backend model that Triton would load but cannot find.

    tritonserver 2.51 does not fail such a model: it logs the python stub's error and waits for
    the model forever, so these are looked for before it is asked to load one."""
    spec = model.spec
    if spec is None or spec.required_backend != "python":
        return []
    filename = spec.config.default_model_filename or "model.py"
    present = set(model.files)
    return [f"{v}/{filename}" for v in loaded_versions(model) if f"{v}/{filename}" not in present]


def check_model_files(models: Iterable[RepositoryModel], repository: str) -> None:
    """ModelRepositoryError naming every model file Triton would wait for in vain."""
    problems = [
        f"{model.name!r} lacks {', '.join(missing)}"
        for model in models
        if (missing := missing_model_files(model))
    ]
    if problems:
        raise ModelRepositoryError(
            f"model repository {repository}: python-backend model {'; '.join(problems)}. The python "
            "backend runs <model>/<version>/model.py (or the config's default_model_filename) for "
            "every version it loads (the latest unless version_policy says otherwise); without it "
            "tritonserver would wait for the model forever"
        )


def open_repository(location: str | os.PathLike[str]) -> ModelRepository:
    """A repository object for a local path or an `s3://` URL."""
    text = os.fspath(location)
    if text.startswith("s3://"):
        from runnerkit.triton._s3 import S3ModelRepository

        return S3ModelRepository.from_url(text)
    return LocalModelRepository(Path(text))
