"""The bento's Python environment: unversioned packages pinned to this environment's versions."""

from __future__ import annotations

import importlib.metadata
import zipfile
from pathlib import Path

import pytest

from runnerkit._settings import cache_dir
from runnerkit.bentos import BentofileError, PythonOptions
from runnerkit.bentos._python_env import dependency_closure, runnerkit_wheel, write_python_env


def version(name: str) -> str:
    return importlib.metadata.version(name)


@pytest.fixture(scope="module")
def wheel() -> Path:
    return runnerkit_wheel()


def test_pins_unversioned_and_keeps_specified(tmp_path: Path, wheel: Path) -> None:
    (tmp_path / "requirements.txt").write_text("# comment\nPyYAML\nrich>=13  # inline comment\n\n--pre\n")
    options = PythonOptions(
        packages=("numpy", "pillow>=10", "uvicorn[standard]", "surely-not-installed-pkg"),
        requirements_txt="requirements.txt",
        index_url="https://pypi.example/simple",
    )
    env = write_python_env(options, tmp_path, tmp_path / "out", source="test", runnerkit_wheel=wheel)
    lines = (tmp_path / "out" / "requirements.txt").read_text().splitlines()
    assert lines[0] == "--index-url https://pypi.example/simple"
    assert "--pre" in lines
    assert f"numpy=={version('numpy')}" in lines
    assert "pillow>=10" in lines
    assert f"uvicorn[standard]=={version('uvicorn')}" in lines
    assert f"PyYAML=={version('PyYAML')}" in lines
    assert "rich>=13" in lines
    assert "surely-not-installed-pkg" in lines  # left as is, and reported
    assert env.unpinned == ("surely-not-installed-pkg",)
    assert (tmp_path / "out" / "wheels" / wheel.name).is_file()
    assert not (tmp_path / "out" / "constraints.txt").exists()


def test_lock_packages_pins_the_dependency_closure(tmp_path: Path, wheel: Path) -> None:
    options = PythonOptions(packages=("httpx",), lock_packages=True)
    write_python_env(options, tmp_path, tmp_path / "out", source="test", runnerkit_wheel=wheel)
    constraints = (tmp_path / "out" / "constraints.txt").read_text().splitlines()
    # httpx needs httpcore, which needs h11; runnerkit needs starlette: all pinned as installed here
    for name in ("httpx", "httpcore", "h11", "starlette", "tritonclient"):
        assert f"{name}=={version(name)}" in constraints
    assert not any(line.startswith("runnerkit==") for line in constraints)


def test_closure_follows_extras() -> None:
    with_extras = dependency_closure(["uvicorn[standard]"])
    plain = dependency_closure(["uvicorn"])
    assert "httptools" in with_extras and "httptools" not in plain


def test_bad_requirement_names_the_key(tmp_path: Path, wheel: Path) -> None:
    options = PythonOptions(packages=("numpy", "not a requirement!"))
    with pytest.raises(BentofileError, match=r"^bentofile.yaml: python.packages\[1\]: 'not a requirement!'"):
        write_python_env(options, tmp_path, tmp_path / "out", source="bentofile.yaml", runnerkit_wheel=wheel)


def test_nested_requirement_files_are_refused(tmp_path: Path, wheel: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r other.txt\n")
    options = PythonOptions(requirements_txt="requirements.txt")
    with pytest.raises(BentofileError, match=r"python.requirements_txt: .*'-r other.txt' is not supported"):
        write_python_env(options, tmp_path, tmp_path / "out", source="bentofile.yaml", runnerkit_wheel=wheel)


def test_runnerkit_wheel_holds_this_runnerkit(wheel: Path) -> None:
    import runnerkit

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
        source = archive.read("runnerkit/bentos/_python_env.py")
    assert "Name: runnerkit" in text and f"Version: {runnerkit.__version__}" in text
    assert "runnerkit/bentos/templates/Dockerfile.j2" in names  # package data travels too
    assert source == (Path(runnerkit.__file__).parent / "bentos" / "_python_env.py").read_bytes()
    # cached by the hash of the sources, under runnerkit's cache
    assert wheel.parent.parent == cache_dir("wheels") and len(wheel.parent.name) == 16
