"""The bento commands of the `runnerkit` command line."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from runnerkit.bentos import BentoStore
from runnerkit.cli import main

from .conftest import Project


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runnerkit_wheel_file: Path) -> Path:
    path = tmp_path / "rk-home"
    monkeypatch.setenv("RUNNERKIT_HOME", str(path))
    monkeypatch.setenv("RUNNERKIT_WHEEL", str(runnerkit_wheel_file))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_build_list_get_export_import_delete(
    home: Path,
    make_project: Callable[..., Project],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = make_project("s3://bucket/prefix")
    project.bentofile("labels: {stage: test}\n", name="custom.yaml")
    code, out, err = run(capsys, "build", str(project.root), "-f", "custom.yaml", "--version", "c1")
    assert code == 0, err
    assert out.strip() == 'Successfully built Bento(tag="tiny:c1")'
    assert "Importing service" in err  # progress goes to stderr
    assert (home / "bentos" / "tiny" / "c1" / "bento.yaml").is_file()

    code, out, _ = run(capsys, "list", "-o", "json")
    [entry] = json.loads(out)
    assert entry["tag"] == "tiny:c1" and entry["service"] == project.service and entry["size_bytes"] > 0
    code, out, _ = run(capsys, "list")
    assert "tiny:c1" in out and project.service in out

    code, out, _ = run(capsys, "get", "tiny:latest")
    info = yaml.safe_load(out)
    assert info["tag"] == "tiny:c1" and info["labels"] == {"stage": "test"}
    code, out, _ = run(capsys, "get", "tiny", "-o", "json")
    assert json.loads(out)["runners"][0]["model_repository"]["url"] == "s3://bucket/prefix"

    archive = tmp_path / "tiny.tar.gz"
    code, out, _ = run(capsys, "export", "tiny:c1", str(archive))
    assert code == 0 and archive.is_file() and str(archive) in out

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: no prompt
    code, _, err = run(capsys, "delete", "tiny:c1")
    assert code == 1 and "add -y" in err
    code, out, _ = run(capsys, "delete", "tiny:c1", "-y")
    assert code == 0 and "Deleted" in out
    assert BentoStore(home / "bentos").bentos() == []

    code, out, _ = run(capsys, "import", str(archive))
    assert code == 0 and out.strip() == 'Imported Bento(tag="tiny:c1")'
    code, _, err = run(capsys, "get", "tiny:nope")
    assert code == 1 and "no bento 'tiny:nope'" in err and "have: tiny:c1" in err


def test_bad_bentofile_is_reported(
    home: Path, make_project: Callable[..., Project], capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project("s3://bucket/prefix")
    bentofile = project.bentofile("pyhton: {packages: [numpy]}\n")
    code, out, err = run(capsys, "build", str(project.root))
    assert code == 1 and out == ""
    assert f"runnerkit: error: {bentofile}: pyhton: unknown key; allowed at the top level:" in err


def test_containerize_with_an_unreachable_engine(
    home: Path,
    make_project: Callable[..., Project],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    project = make_project("s3://bucket/prefix")
    assert run(capsys, "build", str(project.root), "-f", str(project.bentofile()), "-q")[0] == 0
    socket = tmp_path / "no-docker.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{socket}")
    code, _, err = run(capsys, "containerize", "tiny:latest", "--backend", "docker")
    assert code == 1
    assert "docker engine unavailable" in err and str(socket) in err
    assert "how to fix" in err  # says how to start an engine

    code, _, err = run(capsys, "containerize", "tiny:latest", "--build-arg", "HF_TOKEN=abc")
    assert code == 1 and "looks like a credential" in err
    code, _, err = run(capsys, "containerize", "tiny:latest", "-t", "Bad Tag")
    assert code == 1 and "image tag 'Bad Tag' is invalid" in err
