"""The backend fallback for repositories runnerkit cannot rewrite (S3): python-based backends.

tritonserver (2.35 and later) runs a backend folder that holds only a `model.py` through its
python backend, for every model whose configuration names that backend ("python-based
backends"). runnerkit gives tritonserver a backend directory of its own: links to the real
backends, plus `onnxruntime/` and `pytorch/` folders holding the fallback executor. Models keep
their names, configurations and location, so a repository on S3 is served from S3 as it is: no
shadow copy, which could not coexist with it anyway (tritonserver refuses a model name found in
two repositories, also under explicit model control).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from runnerkit._settings import cache_dir
from runnerkit.triton._fallback import FALLBACK_RUNTIMES
from runnerkit.triton._repository import RepositoryModel
from runnerkit.triton._server_binary import TritonServerBinary

logger = logging.getLogger("runnerkit.triton")

_EXECUTOR = Path(__file__).with_name("_fallback_model.py")
_PYTHON_BASED_RUNTIME = "model.py"


def with_fallback_backends(binary: TritonServerBinary, backends: Iterable[str]) -> TritonServerBinary:
    """`binary` with python-based stand-ins for the `backends` it lacks (onnxruntime, pytorch)."""
    wanted = sorted(b for b in set(backends) if b in FALLBACK_RUNTIMES and not binary.has_backend(b))
    if not wanted:
        return binary
    base = binary.backend_directory
    if base is None:  # unknown backends: plan_fallback plans nothing for such a binary
        raise ValueError(f"tritonserver {binary.executable} has no known backend directory to extend")
    executor = _EXECUTOR.read_bytes()
    fingerprint = hashlib.sha256(
        "\0".join([str(base.resolve()), *wanted]).encode() + b"\0" + executor
    ).hexdigest()[:16]
    target = cache_dir("triton-backends") / fingerprint
    if not all((target / name / _PYTHON_BASED_RUNTIME).is_file() for name in wanted):
        _assemble(base, wanted, executor, target)
    available = (binary.available_backends or frozenset()) | frozenset(wanted)
    return attrs.evolve(binary, backend_directory=target, available_backends=available)


def _assemble(base: Path, wanted: list[str], executor: bytes, target: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    try:
        for entry in base.iterdir():
            if entry.name not in wanted:
                (staging / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
        for name in wanted:
            (staging / name).mkdir()
            (staging / name / _PYTHON_BASED_RUNTIME).write_bytes(executor)
        try:
            os.rename(staging, target)
        except OSError:  # another process assembled it first (or a stale, incomplete one is there)
            if not all((target / name / _PYTHON_BASED_RUNTIME).is_file() for name in wanted):
                shutil.rmtree(target, ignore_errors=True)
                os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def remote_fallback(
    binary: TritonServerBinary, models: Mapping[str, RepositoryModel], fallback: Mapping[str, str]
) -> TritonServerBinary:
    """The binary that serves a remote repository's fallback models where they are."""
    gpu = Path("/dev/nvidiactl").exists()
    backends: set[str] = set()
    for name in fallback:
        spec = models[name].spec
        assert spec is not None  # plan_fallback plans only models with a configuration
        backends.add(spec.required_backend)
        if not gpu and any(g.kind == g.KIND_GPU for g in spec.config.instance_group):
            # A local repository's fallback rewrites this to KIND_CPU; a remote one is not rewritten.
            logger.warning(
                "model %r asks for KIND_GPU instances and this machine has no GPU; Triton will not "
                "load it: use KIND_CPU (or no instance_group) in its config.pbtxt",
                name,
            )
    return with_fallback_backends(binary, backends)
