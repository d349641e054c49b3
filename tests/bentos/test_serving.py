"""Serving a bento: by directory or tag, with the model repositories it bundles."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from runnerkit.bentos import Bento, BentoStore, build, resolve_bento
from runnerkit.serving import load_service
from runnerkit.triton._runner import ENV_MODEL_REPOSITORIES

from .conftest import SAMPLES, Project, ServeProcess, write_repository


def test_targets_that_name_a_bento(make_project: Callable[..., Project], store: BentoStore) -> None:
    project = make_project("s3://bucket/prefix")
    (project.root / "bentofile.yaml").write_text(f"service: {project.service}\n")
    bento = build(project.service, build_ctx=project.root, version="v1", store=store, quiet=True)
    for target, base in ((str(bento.path), None), ("tiny:v1", None), ("tiny", None), ("tiny:latest", None),
                         ("v1", bento.path.parent)):  # fmt: skip
        resolved = resolve_bento(target, base=base, store=store)
        assert resolved is not None and resolved.bento == bento, target
        assert resolved.service == project.service and resolved.working_dir == bento.src_dir
    for target in (project.service, f"{project.module}.py:svc", "services/digits.py:svc", "tiny:v2"):
        assert resolve_bento(target, base=project.root, store=store) is None, target
    assert resolve_bento(str(project.root), store=store) is None  # a bentofile directory, not a bento


def test_runners_use_the_bundled_repository(
    make_project: Callable[..., Project], store: BentoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = write_repository(tmp_path / "build-machine" / "repo", "identity")
    project = make_project(str(outside))
    bento = build(
        project.service,
        build_ctx=project.root,
        envs={"TINY_MODE": "bento", "TINY_LEVEL": "1"},
        store=store,
        quiet=True,
    )
    shutil.rmtree(outside)  # the build machine's copy is gone: only the bento's can serve
    monkeypatch.delenv(ENV_MODEL_REPOSITORIES, raising=False)
    monkeypatch.delenv("TINY_MODE", raising=False)
    monkeypatch.setenv("TINY_LEVEL", "from-the-runtime")

    target = load_service(str(bento.path))

    [runner] = target.service.runners
    bundled = bento.src_dir / "model_repositories" / "tiny_runner"
    assert runner.model_repository == str(bundled)
    assert list(runner.repository_models) == ["identity"]
    assert json.loads(os.environ[ENV_MODEL_REPOSITORIES]) == {"tiny_runner": str(bundled)}
    assert os.environ["TINY_MODE"] == "bento"
    assert os.environ["TINY_LEVEL"] == "from-the-runtime"  # the runtime wins over the bento
    assert target.app_dir == bento.src_dir


def test_serve_the_example_bento_by_tag(
    example_bento: Bento,
    example_store: BentoStore,
    serve_process: Callable[..., ServeProcess],
    tmp_path: Path,
) -> None:
    """`runnerkit serve digits:<version>` from an unrelated directory: everything comes from the bento."""
    labels = json.loads((SAMPLES / "index.json").read_text())
    server = serve_process(
        [str(example_bento.tag)], cwd=tmp_path, env={"RUNNERKIT_HOME": str(example_store.root.parent)}
    )
    server.wait_ready(timeout=240)
    for sample in ("digit_3.png", "digit_7.png"):
        data = (SAMPLES / sample).read_bytes()
        response = httpx.post(
            f"{server.url}/classify", content=data, headers={"Content-Type": "image/png"}, timeout=60
        )
        assert response.status_code == 200, response.text
        assert response.json()["label"] == labels[sample]["label"]
        pipeline = httpx.post(
            f"{server.url}/classify_pipeline", content=data, headers={"Content-Type": "image/png"}, timeout=60
        )
        assert pipeline.status_code == 200, pipeline.text
        assert pipeline.json()["label"] == labels[sample]["label"]
