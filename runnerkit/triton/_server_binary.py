"""Finding a tritonserver to launch, and making the one inside nvidia-pytriton usable."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path

import attrs

from runnerkit._settings import cache_dir
from runnerkit.exceptions import TritonServerNotFoundError

logger = logging.getLogger("runnerkit.triton")

NGC_TRITONSERVER = Path("/opt/tritonserver/bin/tritonserver")
ENV_TRITONSERVER = "RUNNERKIT_TRITONSERVER"


@attrs.frozen
class TritonServerBinary:
    """A tritonserver executable and what it takes to launch it."""

    executable: Path
    source: str  # how it was chosen, for the log and for error messages
    backend_directory: Path | None = None
    cache_directory: Path | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    # None means unknown: assume every backend is there and rewrite nothing.
    available_backends: frozenset[str] | None = None

    def has_backend(self, backend: str) -> bool:
        return self.available_backends is None or backend in self.available_backends

    def launch_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        # Python models are imported from the user's repository: never write __pycache__ there.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for key, value in self.env.items():
            if key in ("PATH", "LD_LIBRARY_PATH") and env.get(key):
                env[key] = value + os.pathsep + env[key]
            else:
                env[key] = value
        return env


def locate_tritonserver(explicit: str | os.PathLike[str] | None = None) -> TritonServerBinary:
    """Pick the tritonserver to launch, in this order, and log which one was chosen:

    1. `explicit` (the Runner's `tritonserver_path=`), else `$RUNNERKIT_TRITONSERVER`;
    2. `tritonserver` on PATH, else `/opt/tritonserver/bin/tritonserver` (the NGC image layout);
    3. the build inside the `nvidia-pytriton` wheel, prepared for the running Python.
    """
    tried: list[str] = []
    chosen = explicit if explicit is not None else os.environ.get(ENV_TRITONSERVER)
    if chosen:
        origin = "tritonserver_path=" if explicit is not None else f"${ENV_TRITONSERVER}"
        path = Path(chosen).expanduser()
        resolved = shutil.which(str(path)) if path.parent == Path(".") else str(path)
        if resolved and os.access(resolved, os.X_OK) and Path(resolved).is_file():
            return _announce(_plain_binary(Path(resolved), origin))
        raise TritonServerNotFoundError(
            f"{origin} points to {str(chosen)!r}, which is not an executable file"
        )
    tried.append(f"${ENV_TRITONSERVER} (not set)")

    on_path = shutil.which("tritonserver")
    if on_path:
        return _announce(_plain_binary(Path(on_path), "PATH"))
    tried.append("`tritonserver` on PATH (not found)")

    if os.access(NGC_TRITONSERVER, os.X_OK):
        return _announce(_plain_binary(NGC_TRITONSERVER, "the NGC image layout"))
    tried.append(f"{NGC_TRITONSERVER} (not found)")

    bundled = _pytriton_binary()
    if bundled is not None:
        return _announce(bundled)
    tried.append("the nvidia-pytriton wheel (not installed in this Python environment)")

    raise TritonServerNotFoundError(
        "no tritonserver to launch; tried:\n  - "
        + "\n  - ".join(tried)
        + "\nInstall one: `pip install 'runnerkit[local]'` (brings nvidia-pytriton, a CPU-capable "
        "tritonserver), use the NGC image nvcr.io/nvidia/tritonserver:<yy.mm>-py3, set "
        f"${ENV_TRITONSERVER}=/path/to/tritonserver, or attach to a running server with "
        "Runner(name, url='host:port')."
    )


def _announce(binary: TritonServerBinary) -> TritonServerBinary:
    backends = "unknown" if binary.available_backends is None else sorted(binary.available_backends)
    logger.info("using tritonserver %s (from %s; backends: %s)", binary.executable, binary.source, backends)
    return binary


def _plain_binary(executable: Path, source: str) -> TritonServerBinary:
    # The NGC layout keeps backends next to bin/; a bare wrapper script may know its own.
    backends = executable.resolve().parent.parent / "backends"
    if backends.is_dir():
        return TritonServerBinary(
            executable,
            source,
            backend_directory=backends,
            available_backends=_backends_in(backends),
        )
    return TritonServerBinary(executable, source)


def _backends_in(directory: Path) -> frozenset[str]:
    return frozenset(p.name for p in directory.iterdir() if p.is_dir() and any(p.iterdir()))


def _pytriton_binary() -> TritonServerBinary | None:
    try:
        import pytriton
    except ImportError:
        return None
    site = Path(pytriton.__file__).resolve().parent.parent
    server_root = site / "pytriton" / "tritonserver"
    executable = server_root / "bin" / "tritonserver"
    libs = site / "nvidia_pytriton.libs"
    if not executable.is_file():
        return None
    prepared = _prepare_pytriton_tree(server_root)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    # Trap 1 of the platform notes: the python backend stub links libpython by name and finds
    # its site-packages from PATH; point both at the interpreter running runnerkit.
    lib_path = os.pathsep.join(p for p in (str(libs), libdir) if p)
    env = {"LD_LIBRARY_PATH": lib_path, "PATH": str(Path(sys.executable).parent)}
    return TritonServerBinary(
        executable,
        "the nvidia-pytriton wheel",
        backend_directory=prepared / "backends",
        cache_directory=prepared / "caches",
        env=env,
        available_backends=_backends_in(prepared / "backends"),
    )


def _prepare_pytriton_tree(server_root: Path) -> Path:
    """A private copy of the wheel's backends with the stub for this Python (never site-packages)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = server_root / "python_backend_stubs" / py / "triton_python_backend_stub"
    if not stub.is_file():
        raise TritonServerNotFoundError(
            f"nvidia-pytriton has no python backend stub for Python {py} (looked for {stub})"
        )
    key = f"{stub.stat().st_size}-{int(stub.stat().st_mtime)}-py{py}"
    target = cache_dir("tritonserver") / key
    if (target / "backends" / "python" / "triton_python_backend_stub").is_file():
        return target
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    shutil.copytree(server_root / "backends", staging / "backends")
    shutil.copytree(server_root / "caches", staging / "caches")
    shutil.copy2(stub, staging / "backends" / "python" / "triton_python_backend_stub")
    try:
        staging.rename(target)
    except OSError:  # another process prepared it first
        shutil.rmtree(staging, ignore_errors=True)
    return target
