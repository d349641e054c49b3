"""`runnerkit build`: a build context and its bentofile -> a versioned bento in the store."""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml
from rich.console import Console

import runnerkit
from runnerkit.bentos._bento import BENTO_YAML, SRC_DIR, Bento
from runnerkit.bentos._bentofile import BentoBuildConfig, BentofileError, load_bentofile
from runnerkit.bentos._dockerfile import (
    SETUP_SCRIPT,
    DockerfileContext,
    render_dockerfile,
    render_entrypoint,
)
from runnerkit.bentos._errors import BentoBuildError, BentoError
from runnerkit.bentos._files import collect_files
from runnerkit.bentos._inspect import RunnerInfo, ServiceInfo, inspect_service
from runnerkit.bentos._python_env import PythonEnvironment, runnerkit_wheel, write_python_env
from runnerkit.bentos._store import BentoStore
from runnerkit.bentos._tag import LATEST, Tag, generate_version, validate_name, validate_version
from runnerkit.triton._repository import LocalModelRepository, ModelRepositoryError
from runnerkit.triton._s3 import download_model_repository

BUNDLED_REPOSITORIES_DIR = "model_repositories"
_REPOSITORY_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".DS_Store")


class _Progress:
    """One line per finished build step (with its duration); a spinner meanwhile on a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.console = Console(stderr=True, quiet=quiet, highlight=False)

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[None]:
        started = time.monotonic()
        with self.console.status(f"{title}..."):
            yield
        self.console.print(f"[green]✓[/green] {title} [dim]({time.monotonic() - started:.1f}s)[/dim]")

    def note(self, text: str) -> None:
        self.console.print(f"  {text}")

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]![/yellow] {text}")


def build(
    service: str,
    *,
    name: str | None = None,
    description: str | None = None,
    labels: Mapping[str, str] | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    python: Mapping[str, Any] | None = None,
    docker: Mapping[str, Any] | None = None,
    envs: Mapping[str, str] | Sequence[Mapping[str, str]] | None = None,
    bundle_models: bool | None = None,
    version: str | None = None,
    build_ctx: str | os.PathLike[str] | None = None,
    store: BentoStore | None = None,
    quiet: bool = False,
) -> Bento:
    """Build a bento from keyword options (the keys of bentofile.yaml) and return it.

    `runnerkit.bentos.build("service.py:svc", include=["*.py"], docker={"base_image": ...})`.
    Options are validated exactly as a bentofile is.
    """
    options: dict[str, Any] = {
        "service": service,
        "name": name,
        "description": description,
        "labels": dict(labels) if labels is not None else None,
        "include": list(include) if include is not None else None,
        "exclude": list(exclude) if exclude is not None else None,
        "python": dict(python) if python is not None else None,
        "docker": dict(docker) if docker is not None else None,
        "envs": envs if not isinstance(envs, Mapping) else dict(envs),
        "bundle_models": bundle_models,
    }
    config = BentoBuildConfig.from_dict(
        {k: v for k, v in options.items() if v is not None}, "runnerkit.bentos.build()"
    )
    return build_config(config, build_ctx=build_ctx, version=version, store=store, quiet=quiet)


def build_bentofile(
    bentofile: str | os.PathLike[str] = "bentofile.yaml",
    *,
    build_ctx: str | os.PathLike[str] | None = None,
    version: str | None = None,
    store: BentoStore | None = None,
    quiet: bool = False,
    bundle_models: bool | None = None,
) -> Bento:
    """Build from a bentofile (relative paths are taken from the build context).

    `bundle_models=True` (`runnerkit build --bundle-models`) copies S3 model repositories into
    the bento whatever the bentofile's `bundle_models:` says.
    """
    ctx = Path(build_ctx or ".").resolve()
    path = Path(bentofile)
    path = path if path.is_absolute() else ctx / path
    config = load_bentofile(path)
    if bundle_models is not None:
        config = attrs.evolve(config, bundle_models=bundle_models)
    return build_config(config, build_ctx=ctx, version=version, store=store, quiet=quiet, source=str(path))


def build_config(
    config: BentoBuildConfig,
    *,
    build_ctx: str | os.PathLike[str] | None = None,
    version: str | None = None,
    store: BentoStore | None = None,
    quiet: bool = False,
    source: str = "runnerkit.bentos.build()",
) -> Bento:
    ctx = Path(build_ctx or ".").resolve()
    if not ctx.is_dir():
        raise BentoBuildError(f"build context {ctx} is not a directory")
    if version is not None:
        if version.lower() == LATEST:
            raise BentoError("'latest' names the newest build; it cannot be a version")
        validate_version(version)
    store = store or BentoStore()
    progress = _Progress(quiet)
    with store.staging_dir() as staging:
        bento_dir = staging / "bento"
        bento_dir.mkdir()
        with progress.step(f"Importing service {config.service}"):
            info = inspect_service(config.service, ctx, staging / "service.json")
        name = validate_name(config.name or info.name, "bento name (from `name:` or the service's name)")
        tag = Tag(name, version or generate_version())
        if store.exists(tag):
            raise BentoError(f"bento {str(tag)!r} already exists in {store.root}; pick another --version")

        src = bento_dir / SRC_DIR
        with progress.step("Copying the build context"):
            count = _copy_files(config, ctx, src, skip=[store.root])
        progress.note(f"{count} files from {ctx}")

        with progress.step("Bundling model repositories"):
            runners = _bundle_repositories(info.runners, ctx, src, source, bundle_s3=config.bundle_models)
        for runner in runners:
            repository = runner["model_repository"]
            if repository is None:
                progress.note(f"runner {runner['name']}: attaches to {runner['url']}")
            elif repository["kind"] == "bundled":
                origin = f" from {repository['source']}" if repository["source"].startswith("s3://") else ""
                progress.note(f"runner {runner['name']}: {SRC_DIR}/{repository['path']} (bundled{origin})")
            else:
                progress.note(f"runner {runner['name']}: {repository['url']} (referenced, not copied)")

        with progress.step("Building the runnerkit wheel"):
            wheel = runnerkit_wheel()
        with progress.step("Pinning Python requirements"):
            python_env = write_python_env(
                config.python, ctx, bento_dir / "env" / "python", source=source, runnerkit_wheel=wheel
            )
        for line in python_env.unpinned:
            progress.warn(f"{line}: not installed here, left unpinned")

        with progress.step("Writing the Dockerfile"):
            _write_docker(config, tag, ctx, bento_dir, python_env, source)
        _write_docs(config, info, tag, ctx, bento_dir, source)
        bento_info = _bento_yaml(config, info, tag, runners, python_env)
        (bento_dir / BENTO_YAML).write_text(yaml.safe_dump(bento_info, sort_keys=False), encoding="utf-8")

        with progress.step("Saving to the store"):
            bento = store.commit(bento_dir, tag)
    progress.note(f"{bento.path}")
    return bento


def _copy_files(config: BentoBuildConfig, ctx: Path, src: Path, skip: Sequence[Path]) -> int:
    src.mkdir(parents=True, exist_ok=True)
    count = 0
    for rel in collect_files(ctx, config.include, config.exclude, skip_dirs=skip):
        dest = src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ctx / rel, dest)
        count += 1
    return count


def _bundle_repositories(
    runners: Sequence[RunnerInfo], ctx: Path, src: Path, source: str, *, bundle_s3: bool = False
) -> list[dict[str, Any]]:
    """Copy each runner's local model repository under `src/` (once per repository).

    A repository inside the build context keeps its relative place, so code that finds it
    relative to its own file still does; one outside goes to `model_repositories/<runner>`.
    An S3 repository is referenced by its URL (the container reads it with the credentials of
    its environment), or downloaded to `model_repositories/<runner>` when `bundle_s3`.
    """
    placed: dict[Path | str, str] = {}
    recorded: list[dict[str, Any]] = []
    for runner in runners:
        entry: dict[str, Any] = {
            "name": runner.name,
            "tritonserver_type": runner.tritonserver_type,
            "cli_args": list(runner.cli_args),
            "url": runner.url,
            "models": [dict(m) for m in runner.models],
        }
        if runner.model_repository is None:
            entry["model_repository"] = None
        elif not runner.is_local:
            if "@" in runner.model_repository.split("/", 3)[2]:
                raise BentofileError(
                    source, "service", f"runner {runner.name!r}: the repository URL carries credentials; "
                    "give them to the runtime environment (AWS_* variables), not the URL",
                )  # fmt: skip
            url = runner.model_repository
            if bundle_s3:
                rel = placed.get(url)
                if rel is None:
                    rel = placed[url] = f"{BUNDLED_REPOSITORIES_DIR}/{runner.name}"
                    try:  # with the build machine's AWS credentials; none of them is written
                        download_model_repository(url, src / rel)
                    except ModelRepositoryError as exc:
                        raise BentoBuildError(f"runner {runner.name!r}: cannot bundle {url}: {exc}") from exc
                entry["model_repository"] = {"kind": "bundled", "path": rel, "source": url}
                entry["models"] = _describe_models(src / rel)
            else:
                entry["model_repository"] = {"kind": "s3", "url": url}
        else:
            path = Path(runner.model_repository).resolve()
            if not path.is_dir():
                raise BentoBuildError(f"runner {runner.name!r}: model repository {path} is not a directory")
            rel = placed.get(path)
            if rel is None:
                inside = path != ctx and path.is_relative_to(ctx)
                rel = (
                    path.relative_to(ctx).as_posix()
                    if inside
                    else f"{BUNDLED_REPOSITORIES_DIR}/{runner.name}"
                )
                shutil.copytree(path, src / rel, ignore=_REPOSITORY_IGNORE, dirs_exist_ok=True)
                placed[path] = rel
            entry["model_repository"] = {"kind": "bundled", "path": rel, "source": str(path)}
        recorded.append(entry)
    return recorded


def _describe_models(repository: Path) -> list[dict[str, Any]]:
    """The models of a bundled copy, as the service inspection describes local ones."""
    return [
        {
            "name": model.name,
            "versions": list(model.versions),
            "platform": model.spec.platform if model.spec else "",
            "backend": model.spec.backend if model.spec else "",
        }
        for model in LocalModelRepository(repository).list_models().values()
    ]


def _write_docker(
    config: BentoBuildConfig, tag: Tag, ctx: Path, bento_dir: Path, python_env: PythonEnvironment, source: str
) -> None:
    docker_dir = bento_dir / "env" / "docker"
    docker_dir.mkdir(parents=True, exist_ok=True)
    setup_script: str | None = None
    if config.docker.setup_script:
        script = (ctx / config.docker.setup_script).resolve()
        if not script.is_file():
            raise BentofileError(source, "docker.setup_script", f"no such file {script}")
        shutil.copy2(script, bento_dir / SETUP_SCRIPT)
        setup_script = SETUP_SCRIPT
    template_file = None
    if config.docker.dockerfile_template:
        template_file = (ctx / config.docker.dockerfile_template).resolve()
    context = DockerfileContext(
        tag=str(tag),
        service=config.service,
        runnerkit_version=runnerkit.__version__,
        docker=config.docker,
        envs=config.envs,
        labels=config.labels,
        constraints=bool(python_env.constraints),
        setup_script=setup_script,
    )
    (docker_dir / "Dockerfile").write_text(render_dockerfile(context, template_file, source=source))
    entrypoint = docker_dir / "entrypoint.sh"
    entrypoint.write_text(render_entrypoint(context))
    entrypoint.chmod(0o755)


def _write_docs(
    config: BentoBuildConfig, info: ServiceInfo, tag: Tag, ctx: Path, bento_dir: Path, source: str
) -> None:
    apis_dir = bento_dir / "apis"
    apis_dir.mkdir()
    (apis_dir / "openapi.yaml").write_text(yaml.safe_dump(info.openapi, sort_keys=False), encoding="utf-8")
    description = config.description
    if description and description.startswith("file:"):
        file = (ctx / description[len("file:") :].strip()).resolve()
        if not file.is_file():
            raise BentofileError(source, "description", f"no such file {file}")
        readme = file.read_text(encoding="utf-8")
    else:
        lines = [f"# {tag.name}", "", description or f"The `{info.name}` service, packaged by runnerkit.", ""]
        lines += ["## APIs", "", "| route | input | output |", "|---|---|---|"]
        for api in info.apis:
            lines.append(f"| POST {api['route']} | {_io_name(api['input'])} | {_io_name(api['output'])} |")
        lines += [
            "",
            "## Run it",
            "",
            f"    runnerkit serve {tag} --production",
            f"    runnerkit containerize {tag} && docker run --rm -p 3000:3000 {tag} serve --production",
            "",
        ]
        referenced = [r for r in info.runners if r.model_repository and not r.is_local]
        if referenced and not config.bundle_models:
            lines += [
                "## Model repositories on S3",
                "",
                "Read at run time: " + ", ".join(f"`{r.model_repository}`" for r in referenced) + ". The "
                "bento holds no credential; give them to the container's environment:",
                "",
                "    docker run --rm -p 3000:3000 -e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY "
                f"-e AWS_DEFAULT_REGION {tag} serve --production",
                "",
            ]
        readme = "\n".join(lines)
    (bento_dir / "README.md").write_text(readme, encoding="utf-8")


def _io_name(spec: Any) -> str:
    return str(spec.get("type", spec)) if isinstance(spec, Mapping) else str(spec)


def _bento_yaml(
    config: BentoBuildConfig,
    info: ServiceInfo,
    tag: Tag,
    runners: list[dict[str, Any]],
    python_env: PythonEnvironment,
) -> dict[str, Any]:
    return {
        "service": config.service,
        "name": tag.name,
        "version": tag.version,
        "runnerkit_version": runnerkit.__version__,
        "creation_time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "description": config.description,
        "labels": dict(config.labels),
        "envs": dict(config.envs),
        "runners": runners,
        "apis": [dict(a) for a in info.apis],
        "python": {
            **config.python.to_dict(),
            "version": python_env.python_version,
            "requirements": list(python_env.requirements),
            "wheels": list(python_env.wheels),
        },
        "docker": config.docker.to_dict(),
    }
