"""`runnerkit build`: the bento's layout, bundled model repositories, versions, failed builds."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from runnerkit.bentos import (
    Bento,
    BentoBuildError,
    BentoError,
    BentofileError,
    BentoStore,
    build,
    build_bentofile,
)

from .conftest import REPO_ROOT, Project, write_repository


def files_under(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


# -- the example bento ----------------------------------------------------------------------------


def test_example_bento_yaml(example_bento: Bento) -> None:
    info = yaml.safe_load((example_bento.path / "bento.yaml").read_text())
    assert info["service"] == "services/digits.py:svc"
    assert info["name"] == "digits" and info["version"] == example_bento.version
    assert info["creation_time"].endswith("+00:00")
    assert info["labels"] == {"project": "runnerkit", "example": "digits"}
    assert info["envs"] == {"RUNNERKIT_MAX_REQUEST_BYTES": "8388608"}
    [runner] = info["runners"]
    assert runner["name"] == "triton_runner" and runner["tritonserver_type"] in ("grpc", "http")
    assert runner["model_repository"]["kind"] == "bundled"
    assert runner["model_repository"]["path"] == "model_repository"
    models = {m["name"]: m for m in runner["models"]}
    assert models["digits_onnx"]["versions"] == [1, 2]
    assert models["digits_pipeline"]["platform"] == "ensemble"
    apis = {a["name"]: a for a in info["apis"]}
    assert apis["classify"]["route"] == "/classify"
    assert apis["classify"]["input"]["type"] == "Image" and apis["classify"]["output"]["type"] == "JSON"
    assert info["docker"]["base_image"].startswith("nvcr.io/nvidia/tritonserver:")
    assert "numpy" in info["python"]["packages"]


def test_example_bento_bundles_the_whole_model_repository(example_bento: Bento) -> None:
    bundled = files_under(example_bento.src_dir / "model_repository")
    assert bundled == files_under(REPO_ROOT / "model_repository")
    assert (example_bento.src_dir / "services" / "digits.py").is_file()
    assert sorted(p.name for p in (example_bento.src_dir / "samples").glob("*.png")) == sorted(
        p.name for p in (REPO_ROOT / "samples").glob("*.png")
    )
    # only what `include` asks for (plus the bundled repository)
    assert sorted(p.name for p in example_bento.src_dir.iterdir()) == [
        "model_repository",
        "samples",
        "services",
    ]


def test_example_bento_environment(example_bento: Bento) -> None:
    requirements = (example_bento.path / "env" / "python" / "requirements.txt").read_text().splitlines()
    for name in ("numpy", "pillow", "onnxruntime"):
        assert f"{name}=={importlib.metadata.version(name)}" in requirements
    wheels = [p.name for p in (example_bento.path / "env" / "python" / "wheels").iterdir()]
    assert len(wheels) == 1 and wheels[0].startswith("runnerkit-") and wheels[0].endswith(".whl")
    dockerfile = (example_bento.path / "env" / "docker" / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=nvcr.io/nvidia/tritonserver:" in dockerfile
    entrypoint = example_bento.path / "env" / "docker" / "entrypoint.sh"
    assert os.access(entrypoint, os.X_OK)
    openapi = yaml.safe_load((example_bento.path / "apis" / "openapi.yaml").read_text())
    assert "/classify" in openapi["paths"] and openapi["openapi"].startswith("3.")
    readme = (example_bento.path / "README.md").read_text()
    assert readme.startswith("# digits") and "/classify" in readme


# -- bundling ------------------------------------------------------------------------------------


def test_only_the_repositories_in_use_are_bundled(
    make_project: Callable[..., Project], store: BentoStore
) -> None:
    project = make_project("./models")
    write_repository(project.root / "models", "identity")
    write_repository(project.root / "unused_models", "other")
    bento = build_bentofile(
        project.bentofile("include: ['/*.py']\n"), build_ctx=project.root, store=store, quiet=True
    )
    assert sorted(p.name for p in bento.src_dir.iterdir()) == sorted([f"{project.module}.py", "models"])
    assert files_under(bento.src_dir / "models") == files_under(project.root / "models")
    assert bento.runners[0]["model_repository"]["path"] == "models"


def test_repository_outside_the_context_is_bundled_by_runner(
    make_project: Callable[..., Project], store: BentoStore, tmp_path: Path
) -> None:
    outside = write_repository(tmp_path / "elsewhere" / "repo", "identity")
    project = make_project(str(outside))
    bento = build(project.service, build_ctx=project.root, store=store, quiet=True)
    assert bento.runners[0]["model_repository"] == {
        "kind": "bundled",
        "path": "model_repositories/tiny_runner",
        "source": str(outside),
    }
    assert files_under(bento.src_dir / "model_repositories" / "tiny_runner") == files_under(outside)


def test_s3_repositories_are_referenced_not_copied(
    make_project: Callable[..., Project], store: BentoStore
) -> None:
    project = make_project("s3://models-bucket/digits")
    bento = build(project.service, build_ctx=project.root, store=store, quiet=True)
    assert bento.runners[0]["model_repository"] == {"kind": "s3", "url": "s3://models-bucket/digits"}
    assert [p.name for p in bento.src_dir.iterdir()] == [f"{project.module}.py"]
    assert bento.bundled_repositories() == {}


# -- versions and the store ------------------------------------------------------------------------


def test_versions_sort_by_time_and_latest_is_newest(
    make_project: Callable[..., Project], store: BentoStore
) -> None:
    project = make_project("./models")
    write_repository(project.root / "models", "identity")
    first = build(project.service, build_ctx=project.root, store=store, quiet=True)
    second = build(project.service, build_ctx=project.root, store=store, quiet=True)
    assert first.name == second.name == "tiny"
    assert second.version > first.version
    assert store.get("tiny:latest") == second and store.get("tiny") == second
    named = build(project.service, build_ctx=project.root, version="v1", store=store, quiet=True)
    assert str(named.tag) == "tiny:v1"
    assert store.get("tiny:latest") == named  # newest by build time, whatever the version says
    assert [b.version for b in store.bentos("tiny")] == ["v1", second.version, first.version]
    with pytest.raises(BentoError, match="already exists"):
        build(project.service, build_ctx=project.root, version="v1", store=store, quiet=True)
    with pytest.raises(BentoError, match="'latest' names the newest build"):
        build(project.service, build_ctx=project.root, version="latest", store=store, quiet=True)


def test_name_from_bentofile_wins(make_project: Callable[..., Project], store: BentoStore) -> None:
    project = make_project("s3://bucket/prefix", service_name="tiny")
    bento = build_bentofile(
        project.bentofile("name: renamed\n"), build_ctx=project.root, store=store, quiet=True
    )
    assert bento.name == "renamed"


# -- failures leave nothing behind -----------------------------------------------------------------


def assert_store_empty(store: BentoStore) -> None:
    assert store.bentos() == []
    staging = store.root / ".staging"
    assert not staging.exists() or list(staging.iterdir()) == []


def test_import_error_fails_the_build_with_the_traceback(
    make_project: Callable[..., Project], store: BentoStore
) -> None:
    project = make_project("s3://bucket/prefix", extra="raise RuntimeError('boom at import')\n")
    with pytest.raises(BentoBuildError, match=r"could not import service .*\n(.|\n)*boom at import"):
        build(project.service, build_ctx=project.root, store=store, quiet=True)
    assert_store_empty(store)


def test_a_failure_after_copying_leaves_nothing(
    make_project: Callable[..., Project], store: BentoStore
) -> None:
    project = make_project("./models")
    write_repository(project.root / "models", "identity")
    bentofile = project.bentofile("python:\n  requirements_txt: missing-requirements.txt\n")
    with pytest.raises(BentofileError, match=r"python.requirements_txt: no such file"):
        build_bentofile(bentofile, build_ctx=project.root, store=store, quiet=True)
    assert_store_empty(store)


def test_a_missing_model_repository_is_reported(
    make_project: Callable[..., Project], store: BentoStore
) -> None:
    project = make_project("./no-such-repository")
    with pytest.raises(BentoBuildError, match=r"runner 'tiny_runner': model repository .*no-such-repository"):
        build(project.service, build_ctx=project.root, store=store, quiet=True)
    assert_store_empty(store)


def test_unknown_service_attribute(make_project: Callable[..., Project], store: BentoStore) -> None:
    project = make_project("s3://bucket/prefix")
    with pytest.raises(BentoBuildError, match=r"could not import service .*:nope"):
        build(f"{project.module}:nope", build_ctx=project.root, store=store, quiet=True)
    assert_store_empty(store)


# -- credentials and progress ----------------------------------------------------------------------


def test_credentials_in_the_build_environment_stay_out(
    make_project: Callable[..., Project], store: BentoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentinel = "sentinel-secret-5d1f0c"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", sentinel)
    monkeypatch.setenv("PIP_INDEX_URL", f"https://user:{sentinel}@pypi.example/simple")
    project = make_project("./models")
    write_repository(project.root / "models", "identity")
    bento = build(project.service, build_ctx=project.root, store=store, quiet=True)
    leaks = [rel for rel, data in files_under(bento.path).items() if sentinel.encode() in data]
    assert leaks == []


def test_build_shows_progress(
    make_project: Callable[..., Project], store: BentoStore, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project("s3://bucket/prefix")
    build(project.service, build_ctx=project.root, store=store)
    err = capsys.readouterr().err
    for step in ("Importing service", "Copying the build context", "Pinning Python requirements", "Saving"):
        assert step in err
    assert "s3://bucket/prefix (referenced, not copied)" in err
