"""The bento's Python environment: pinned requirements, bundled wheels, and runnerkit's own wheel."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import attrs
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from runnerkit._settings import cache_dir
from runnerkit.bentos._bentofile import BentofileError, PythonOptions
from runnerkit.bentos._errors import BentoBuildError

ENV_RUNNERKIT_WHEEL = "RUNNERKIT_WHEEL"
WHEEL_BUILD_TIMEOUT = 600.0


@attrs.frozen
class PythonEnvironment:
    """What `env/python/` of a bento holds, as written by :func:`write_python_env`."""

    requirements: tuple[str, ...]  # the lines of requirements.txt
    constraints: tuple[str, ...]  # lock_packages: every installed dependency, pinned
    wheels: tuple[str, ...]  # file names under env/python/wheels (runnerkit's included)
    runnerkit_wheel: str
    unpinned: tuple[str, ...]  # packages not installed here, left unpinned
    python_version: str  # of the build environment


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def pin_requirement(text: str, where: str, source: str) -> tuple[str, bool]:
    """`numpy` -> `numpy==1.26.4` (the build environment's version); (line, pinned?)."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise BentofileError(
            source, where, f"{text!r} is not a requirement (expected e.g. 'numpy' or 'numpy>=1.26'): {exc}"
        ) from None
    if requirement.specifier or requirement.url:
        return str(requirement), True
    version = installed_version(requirement.name)
    if version is None:
        return str(requirement), False
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    marker = f"; {requirement.marker}" if requirement.marker else ""
    return f"{requirement.name}{extras}=={version}{marker}", True


def _requirements_file_lines(path: Path, source: str, key: str) -> list[str]:
    if not path.is_file():
        raise BentofileError(source, key, f"no such file {path}")
    lines = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r", "-c", "--requirement", "--constraint", "-e", "--editable")):
            raise BentofileError(
                source, key, f"{path}:{number}: {line!r} is not supported in a bento's requirements "
                "(list the packages themselves)",
            )  # fmt: skip
        lines.append(line)
    return lines


def dependency_closure(names: Iterable[str]) -> dict[str, str]:
    """Every installed distribution the named ones (`name` or `name[extra]`) need, transitively:
    {name: version}.

    Markers are evaluated for this interpreter, and each requirement's extras are followed.
    """
    environment = {str(k): str(v) for k, v in default_environment().items()}
    pinned: dict[str, str] = {}
    roots = [Requirement(n) for n in names]
    todo: list[tuple[str, frozenset[str]]] = [(r.name, frozenset(r.extras)) for r in roots]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        key = (canonicalize_name(name), extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        pinned[canonicalize_name(dist.metadata["Name"])] = dist.version
        for text in dist.requires or ():
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is not None:
                applies = any(
                    requirement.marker.evaluate({**environment, "extra": extra}) for extra in extras or {""}
                )
                if not applies:
                    continue
            todo.append((requirement.name, frozenset(requirement.extras)))
    return pinned


def write_python_env(
    options: PythonOptions,
    build_ctx: Path,
    target: Path,
    *,
    source: str,
    runnerkit_wheel: Path,
) -> PythonEnvironment:
    """Write `requirements.txt`, `constraints.txt` (lock) and `wheels/` under `target`."""
    target.mkdir(parents=True, exist_ok=True)
    wheels_dir = target / "wheels"
    wheels_dir.mkdir()
    header: list[str] = []
    if options.index_url:
        header.append(f"--index-url {options.index_url}")
    header += [f"--extra-index-url {url}" for url in options.extra_index_url]
    header += [f"--find-links {link}" for link in options.find_links]

    entries: list[tuple[str, str]] = [
        (package, f"python.packages[{i}]") for i, package in enumerate(options.packages)
    ]
    if options.requirements_txt:
        path = (build_ctx / options.requirements_txt).resolve()
        entries += [
            (line, "python.requirements_txt")
            for line in _requirements_file_lines(path, source, "python.requirements_txt")
        ]
    requirements: list[str] = []
    unpinned: list[str] = []
    names: list[str] = []
    for text, where in entries:
        if text.startswith("-"):  # a pip option from requirements_txt (e.g. --pre)
            header.append(text)
            continue
        line, pinned = pin_requirement(text, where, source)
        if not pinned:
            unpinned.append(line)
        requirements.append(line)
        names.append(Requirement(line).name)

    wheels: list[str] = []
    for i, wheel in enumerate(options.wheels):
        path = (build_ctx / wheel).resolve()
        if not path.is_file() or path.suffix != ".whl":
            raise BentofileError(
                source, f"python.wheels[{i}]", f"{wheel!r} is not a .whl file in {build_ctx}"
            )
        shutil.copy2(path, wheels_dir / path.name)
        wheels.append(path.name)
    shutil.copy2(runnerkit_wheel, wheels_dir / runnerkit_wheel.name)
    wheels.append(runnerkit_wheel.name)

    (target / "requirements.txt").write_text("\n".join([*header, *requirements]) + "\n", encoding="utf-8")
    constraints: list[str] = []
    if options.lock_packages:
        closure = dependency_closure([*names, "runnerkit"])
        closure.pop("runnerkit", None)
        constraints = [f"{name}=={version}" for name, version in sorted(closure.items())]
        (target / "constraints.txt").write_text("\n".join(constraints) + "\n", encoding="utf-8")
    python_version = ".".join(map(str, sys.version_info[:3]))
    (target / "version.txt").write_text(python_version + "\n", encoding="utf-8")
    return PythonEnvironment(
        requirements=tuple([*header, *requirements]),
        constraints=tuple(constraints),
        wheels=tuple(wheels),
        runnerkit_wheel=runnerkit_wheel.name,
        unpinned=tuple(unpinned),
        python_version=python_version,
    )


# -- runnerkit's own wheel -------------------------------------------------------------------------


def _source_root() -> Path | None:
    """The project directory runnerkit is imported from (editable installs), if any."""
    import runnerkit

    root = Path(runnerkit.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and 'name = "runnerkit"' in pyproject.read_text(encoding="utf-8"):
        return root
    return None


def _source_files(root: Path) -> list[Path]:
    files = [root / "pyproject.toml"]
    for dirpath, dirnames, filenames in os.walk(root / "runnerkit"):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        files += [Path(dirpath) / f for f in sorted(filenames) if not f.endswith((".pyc", ".pyo"))]
    return files


def runnerkit_wheel() -> Path:
    """A wheel of the runnerkit that runs this build, so the image needs no index to install it.

    `$RUNNERKIT_WHEEL` names a ready wheel. Otherwise it is built from the source tree with
    `pip wheel` (no dependencies, no build isolation: no index needed) and cached by the hash
    of the sources, so an unchanged runnerkit is built once.
    """
    given = os.environ.get(ENV_RUNNERKIT_WHEEL)
    if given:
        path = Path(given).expanduser()
        if not path.is_file() or not path.name.startswith("runnerkit-") or path.suffix != ".whl":
            raise BentoBuildError(f"${ENV_RUNNERKIT_WHEEL}={given!r} is not a runnerkit-*.whl file")
        return path
    root = _source_root()
    if root is None:
        raise BentoBuildError(
            "cannot bundle runnerkit: it is not installed from a source tree; set "
            f"${ENV_RUNNERKIT_WHEEL} to a runnerkit wheel (e.g. the one it was installed from)"
        )
    files = _source_files(root)
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    key = digest.hexdigest()[:16]
    cached_dir = cache_dir("wheels", key)
    found = sorted(cached_dir.glob("runnerkit-*.whl"))
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(prefix="runnerkit-wheel-") as tmp:
        # Build from a copy: an in-tree build would write build/ and *.egg-info next to the
        # sources, racing any other build of the same tree.
        copy = Path(tmp) / "src"
        for file in files:
            dest = copy / file.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, dest)
        readme = root / "README.md"
        (copy / "README.md").write_text(
            readme.read_text(encoding="utf-8") if readme.is_file() else "runnerkit\n"
        )
        out = Path(tmp) / "out"
        cmd = [
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
            "--quiet", "--wheel-dir", str(out), str(copy),
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WHEEL_BUILD_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise BentoBuildError(
                f"building the runnerkit wheel took longer than {WHEEL_BUILD_TIMEOUT}s"
            ) from exc
        built = sorted(out.glob("runnerkit-*.whl"))
        if proc.returncode != 0 or not built:
            raise BentoBuildError(
                "building the runnerkit wheel failed (pip wheel needs setuptools and wheel in this "
                f"environment):\n{(proc.stderr or proc.stdout).strip()[-2000:]}"
            )
        staged = cached_dir / f".{built[0].name}.tmp"
        shutil.copy2(built[0], staged)
        final = cached_dir / built[0].name
        os.replace(staged, final)
        return final
