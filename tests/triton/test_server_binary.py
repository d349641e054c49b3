"""Which tritonserver runnerkit launches: tritonserver_path= or $RUNNERKIT_TRITONSERVER, then PATH
or the NGC layout, then the build inside nvidia-pytriton; and what it says when there is none."""

from __future__ import annotations

import logging
import os
import site
import sys
from pathlib import Path

import pytest

from runnerkit.exceptions import TritonServerNotFoundError, TritonStartError
from runnerkit.triton import Runner, locate_tritonserver
from runnerkit.triton._server_binary import ENV_TRITONSERVER, NGC_TRITONSERVER

# A stand-in that says how it was called and exits: enough to see which binary was launched.
FAKE_SERVER = """#!/bin/sh
echo "fake tritonserver $0 called with: $*"
exit 3
"""


def fake_server(folder: Path, name: str = "tritonserver", executable: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(FAKE_SERVER)
    path.chmod(0o755 if executable else 0o644)
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $RUNNERKIT_TRITONSERVER and a PATH holding only an empty folder (plus what is added)."""
    monkeypatch.delenv(ENV_TRITONSERVER, raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def test_explicit_path_comes_first(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = fake_server(tmp_path / "explicit")
    from_env = fake_server(tmp_path / "env")
    on_path = fake_server(tmp_path / "on-path")
    monkeypatch.setenv(ENV_TRITONSERVER, str(from_env))
    monkeypatch.setenv("PATH", str(on_path.parent))
    binary = locate_tritonserver(explicit)
    assert (binary.executable, binary.source) == (explicit, "tritonserver_path=")


def test_the_environment_variable_comes_before_path(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from_env = fake_server(tmp_path / "env")
    on_path = fake_server(tmp_path / "on-path")
    monkeypatch.setenv(ENV_TRITONSERVER, str(from_env))
    monkeypatch.setenv("PATH", str(on_path.parent))
    with caplog.at_level(logging.INFO, logger="runnerkit.triton"):
        binary = locate_tritonserver()
    assert (binary.executable, binary.source) == (from_env, f"${ENV_TRITONSERVER}")
    # it says which one it chose
    assert any(str(from_env) in r.getMessage() and ENV_TRITONSERVER in r.getMessage() for r in caplog.records)


def test_a_bare_name_in_the_variable_is_looked_up_on_path(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = fake_server(tmp_path / "bin", name="my-tritonserver")
    monkeypatch.setenv("PATH", str(wrapper.parent))
    monkeypatch.setenv(ENV_TRITONSERVER, "my-tritonserver")
    assert locate_tritonserver().executable == wrapper


def test_path_comes_before_the_bundled_build(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An NGC-like layout: bin/tritonserver with backends/ next to bin/.
    root = tmp_path / "opt-tritonserver"
    on_path = fake_server(root / "bin")
    (root / "backends" / "python").mkdir(parents=True)
    (root / "backends" / "python" / "libtriton_python.so").write_bytes(b"")
    (root / "backends" / "empty_dir").mkdir()
    monkeypatch.setenv("PATH", f"{clean_env}{os.pathsep}{on_path.parent}")
    binary = locate_tritonserver()
    assert (binary.executable, binary.source) == (on_path, "PATH")
    assert binary.backend_directory == root / "backends"
    assert binary.available_backends == frozenset({"python"})


def test_a_binary_without_a_backends_folder_is_assumed_complete(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(fake_server(tmp_path / "bin").parent))
    binary = locate_tritonserver()
    assert binary.backend_directory is None
    assert binary.available_backends is None
    assert binary.has_backend("onnxruntime")


def test_the_bundled_build_is_prepared_outside_site_packages(clean_env: Path) -> None:
    if NGC_TRITONSERVER.exists():
        pytest.skip(f"{NGC_TRITONSERVER} exists here and comes before the bundled build")
    binary = locate_tritonserver()
    assert binary.source == "the nvidia-pytriton wheel"
    assert binary.executable.is_file() and os.access(binary.executable, os.X_OK)
    assert binary.backend_directory is not None
    stub = binary.backend_directory / "python" / "triton_python_backend_stub"
    assert stub.is_file()
    site_packages = [Path(p).resolve() for p in site.getsitepackages()]
    assert not any(p in binary.backend_directory.resolve().parents for p in site_packages)
    assert binary.available_backends == frozenset({"python"})
    # the python backend's stub must find this interpreter's packages (platform notes, trap 1)
    assert binary.env["PATH"] == str(Path(sys.executable).parent)
    assert "nvidia_pytriton.libs" in binary.env["LD_LIBRARY_PATH"]


@pytest.mark.parametrize("kind", ["not-executable", "missing", "directory"])
def test_an_explicit_choice_that_cannot_run_is_a_clear_error(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    target = {
        "not-executable": fake_server(tmp_path / "bin", executable=False),
        "missing": tmp_path / "nowhere" / "tritonserver",
        "directory": tmp_path,
    }[kind]
    monkeypatch.setenv(ENV_TRITONSERVER, str(target))
    with pytest.raises(TritonServerNotFoundError) as caught:
        locate_tritonserver()
    assert isinstance(caught.value, FileNotFoundError)
    expected = f"${ENV_TRITONSERVER} points to {str(target)!r}, which is not an executable file"
    assert expected in str(caught.value)


def test_nothing_found_lists_what_was_tried_and_how_to_get_one(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if NGC_TRITONSERVER.exists():
        pytest.skip(f"{NGC_TRITONSERVER} exists here")
    monkeypatch.setitem(sys.modules, "pytriton", None)  # as if nvidia-pytriton were not installed
    with pytest.raises(TritonServerNotFoundError) as caught:
        locate_tritonserver()
    message = str(caught.value)
    for tried in (
        f"${ENV_TRITONSERVER} (not set)",
        "`tritonserver` on PATH (not found)",
        f"{NGC_TRITONSERVER} (not found)",
        "the nvidia-pytriton wheel (not installed",
    ):
        assert tried in message
    assert "pip install 'runnerkit[local]'" in message
    assert "nvcr.io/nvidia/tritonserver" in message
    assert "Runner(name, url='host:port')" in message


def test_the_runner_launches_the_binary_it_found(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = fake_server(tmp_path / "fake")
    monkeypatch.setenv(ENV_TRITONSERVER, str(fake))
    repository = tmp_path / "models"
    repository.mkdir()
    with pytest.raises(TritonStartError) as caught:
        Runner("fake", model_repository=repository).start_sync()
    assert caught.value.exit_code == 3
    called = caught.value.log_tail
    assert f"fake tritonserver {fake} called with:" in called
    assert f"--model-repository={repository}" in called
    assert "--grpc-address=127.0.0.1" in called and "--http-address=127.0.0.1" in called
