"""Reading a local model repository without a server, and the model files a python-backend model
needs before tritonserver is asked to load it (tritonserver 2.51 would wait for a missing one
forever)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from runnerkit.triton import Runner
from runnerkit.triton._repository import (
    LocalModelRepository,
    ModelRepositoryError,
    check_model_files,
    loaded_versions,
    missing_model_files,
    read_local_model,
)
from runnerkit.triton._runner import models_loaded_at_start
from tests.triton.conftest import EXTRA_REPOSITORY, make_repository

PYTHON_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
{policy}
input [{{ name: "x", data_type: TYPE_FP32, dims: [ 1 ] }}]
output [{{ name: "y", data_type: TYPE_FP32, dims: [ 1 ] }}]
"""


def python_model(root: Path, name: str, versions: dict[int, bool], policy: str = "") -> Path:
    """A python-backend model folder; `versions` says which version folders get a model.py."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.pbtxt").write_text(PYTHON_CONFIG.format(name=name, policy=policy))
    for version, has_file in versions.items():
        (folder / str(version)).mkdir()
        if has_file:
            (folder / str(version) / "model.py").write_text("class TritonPythonModel: pass\n")
    return folder


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("", (3,)),
        ("version_policy: { latest { num_versions: 2 } }", (2, 3)),
        ("version_policy: { all { } }", (1, 2, 3)),
        ("version_policy: { specific { versions: [ 1, 3, 7 ] } }", (1, 3)),
    ],
)
def test_loaded_versions_follow_the_version_policy(
    tmp_path: Path, policy: str, expected: tuple[int, ...]
) -> None:
    model = read_local_model(python_model(tmp_path, "m", {1: True, 2: True, 3: True}, policy))
    assert loaded_versions(model) == expected


def test_only_loaded_versions_of_python_models_need_their_model_file(tmp_path: Path) -> None:
    older_broken = read_local_model(python_model(tmp_path, "older_broken", {1: False, 2: True}))
    assert missing_model_files(older_broken) == []
    all_versions = "version_policy: { all { } }"
    every = read_local_model(python_model(tmp_path, "every", {1: False, 2: True}, all_versions))
    assert missing_model_files(every) == ["1/model.py"]
    named = python_model(tmp_path, "named", {1: True})
    config = named / "config.pbtxt"
    config.write_text(config.read_text() + 'default_model_filename: "serve.py"\n')
    assert missing_model_files(read_local_model(named)) == ["1/serve.py"]
    # other backends keep their own rules (Triton fails those loads itself)
    assert missing_model_files(read_local_model(EXTRA_REPOSITORY / "echo")) == []


def test_the_error_names_each_model_and_file(tmp_path: Path) -> None:
    python_model(tmp_path, "a", {1: False})
    python_model(tmp_path, "b", {1: True})
    python_model(tmp_path, "c", {2: False}, "version_policy: { all { } }")
    models = LocalModelRepository(tmp_path).list_models()
    with pytest.raises(ModelRepositoryError) as caught:
        check_model_files(models.values(), str(tmp_path))
    message = str(caught.value)
    assert f"model repository {tmp_path}" in message
    assert "'a' lacks 1/model.py" in message and "'c' lacks 2/model.py" in message
    assert "'b'" not in message
    assert "would wait for the model forever" in message


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([], ["a", "b", "c"]),
        (["--model-control-mode=poll"], ["a", "b", "c"]),
        (["--model-control-mode=explicit"], []),
        (["--model-control-mode=explicit", "--load-model=b"], ["b"]),
        (["--model-control-mode=explicit", "--load-model=*"], ["a", "b", "c"]),
        (
            ["--load-model=c", "--model-control-mode=explicit", "--load-model=a", "--load-model=zz"],
            ["a", "c"],
        ),
    ],
)
def test_models_loaded_at_start_follow_the_model_control_options(
    arguments: list[str], expected: list[str]
) -> None:
    assert models_loaded_at_start(["a", "b", "c"], arguments) == expected


def test_a_runner_refuses_to_start_on_a_python_model_without_its_file(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "models", "echo")
    python_model(repository, "broken", {1: False})
    before = tritonserver_children()  # the session's servers, started by other tests
    with pytest.raises(ModelRepositoryError, match=r"'broken' lacks 1/model\.py"):
        Runner("broken", model_repository=repository).start_sync()
    assert tritonserver_children() == before  # refused before any tritonserver started

    # not loaded at start in explicit mode: the runner starts; loading it is refused (test_model_control)
    runner = Runner(
        "partial",
        model_repository=repository,
        cli_args=["--model-control-mode=explicit", "--load-model=echo"],
    )
    with runner:
        assert runner.echo.run([1.0, 2.0]).as_numpy("y").tolist() == [1.0, 2.0]
    shutil.rmtree(repository)


def tritonserver_children() -> set[int]:
    """tritonserver processes whose parent is this test process."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"tritonserver" in command:
            found.add(int(entry.name))
    return found
