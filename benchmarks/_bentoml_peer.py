"""BentoML 1.4's legacy Triton runner as a peer: its own virtualenv and a `tritonserver` on PATH.

BentoML cannot share runnerkit's environment (it pins other versions of half of it), so it gets
a virtualenv under .state/. Installing it here needs three workarounds (docs/benchmarks.md):
bentoml itself with --no-deps because it requires a certifi newer than any reachable release;
its other requirements read from its own metadata; tritonclient[all]==2.41.1 (newer releases
break its runner) and numpy<2.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import attrs
from packaging.markers import default_environment
from packaging.requirements import Requirement

from runnerkit.triton._server_binary import TritonServerBinary, locate_tritonserver

REPO_ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = REPO_ROOT / ".state"
VENV_DIR = STATE_DIR / "bentoml-venv"
WRAPPER_DIR = STATE_DIR / "bentoml-peer" / "bin"
SERVICE_DIR = Path(__file__).resolve().parent / "bentoml_peer"

BENTOML_VERSION = "1.4.40"
# Requirements of bentoml's metadata that cannot be met here, replaced by these.
OVERRIDES = {
    "certifi": "certifi",  # bentoml wants >=2026.10.19; the newest reachable release is older
    "numpy": "numpy<2",  # the python backend stub fails every inference with numpy 2
}
EXTRA_REQUIREMENTS = (
    "tritonclient[all]==2.41.1",  # >=2.42 lacks tritonclient.grpc.aio.np_to_triton_dtype
    "pillow",  # the peer service decodes PNGs (bentoml's io-image extra)
)
_STAMP = ".runnerkit-bench-installed"
# The wrapper lets the harness choose the python backend's shared-memory prefix, so it can
# remove what a killed server leaves in /dev/shm.
ENV_SHM_PREFIX = "RUNNERKIT_BENCH_SHM_PREFIX"


class PeerSetupError(RuntimeError):
    """The BentoML peer could not be installed or prepared."""


@attrs.frozen
class BentoPeer:
    """A ready BentoML installation and the directory whose `tritonserver` it will launch."""

    venv: Path
    wrapper_dir: Path
    service_dir: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def bentoml(self) -> Path:
        return self.venv / "bin" / "bentoml"

    def version(self) -> str:
        out = subprocess.run(
            [
                str(self.python),
                "-c",
                "import bentoml, tritonclient, numpy; print(bentoml.__version__, numpy.__version__)",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise PeerSetupError(f"{what} failed (exit {proc.returncode}): {shlex.join(cmd)}\n{tail}")
    return proc.stdout


def _spec_key() -> str:
    spec = {"bentoml": BENTOML_VERSION, "overrides": OVERRIDES, "extra": EXTRA_REQUIREMENTS}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def bentoml_requirements(venv: Path) -> list[str]:
    """bentoml's own install requirements (from its metadata), with OVERRIDES applied."""
    script = "import importlib.metadata as m, json; print(json.dumps(m.requires('bentoml') or []))"
    raw: list[str] = json.loads(_run([str(venv / "bin" / "python"), "-c", script], "reading metadata"))
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    env["extra"] = ""  # the base requirements, no extras
    wanted: list[str] = []
    for text in raw:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        wanted.append(OVERRIDES.get(req.name.lower(), str(req).split(";")[0].strip()))
    return wanted


def ensure_venv(venv: Path = VENV_DIR, *, python: str = sys.executable) -> Path:
    """Create (once) the virtualenv with bentoml; a stamp makes repeated calls free."""
    stamp = venv / _STAMP
    if stamp.is_file() and stamp.read_text().strip() == _spec_key():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not (venv / "bin" / "python").exists():
        _run([python, "-m", "venv", str(venv)], "creating the virtualenv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--progress-bar", "off"]
    _run([*pip, "--upgrade", "pip"], "upgrading pip")
    _run([*pip, "--no-deps", f"bentoml=={BENTOML_VERSION}"], "installing bentoml")
    _run([*pip, *bentoml_requirements(venv), *EXTRA_REQUIREMENTS], "installing bentoml's requirements")
    # bentoml's import must work: a missing requirement surfaces here, not mid-benchmark.
    _run([str(venv / "bin" / "python"), "-c", "import bentoml.legacy, bentoml.triton"], "importing bentoml")
    stamp.write_text(_spec_key() + "\n")
    return venv


def write_tritonserver_wrapper(
    directory: Path = WRAPPER_DIR, binary: TritonServerBinary | None = None
) -> Path:
    """`directory/tritonserver`: the same build runnerkit launches, ready to run from PATH.

    BentoML starts `tritonserver` from PATH with only its own options. The wrapper adds what the
    nvidia-pytriton build needs (libraries, backends, the Python the stub runs with) and what
    BentoML leaves out: gRPC on loopback (BentoML binds 0.0.0.0) and no metrics port (BentoML
    leaves 8002 unmanaged, which clashes with any other tritonserver on the machine).
    """
    binary = binary or locate_tritonserver()
    env = binary.launch_env({})  # only the variables runnerkit sets, nothing of ours
    lines = [
        "#!/usr/bin/env bash",
        "# Generated by benchmarks/_bentoml_peer.py; rewritten on every benchmark run.",
        "set -euo pipefail",
    ]
    for key in ("LD_LIBRARY_PATH", "PATH"):
        if key in env:
            lines.append(f'export {key}={shlex.quote(env[key])}"${{{key}:+:${key}}}"')
    for key, value in env.items():
        if key not in ("LD_LIBRARY_PATH", "PATH"):
            lines.append(f"export {key}={shlex.quote(value)}")
    extra = ["--grpc-address=127.0.0.1", "--allow-metrics=false"]
    if binary.backend_directory is not None:
        extra.append(f"--backend-directory={binary.backend_directory}")
    if binary.cache_directory is not None:
        extra.append(f"--cache-directory={binary.cache_directory}")
    lines.append(f'prefix="${{{ENV_SHM_PREFIX}:-bentoml_peer_$$_}}"')
    # Triton keeps the last value of a repeated option, so these override BentoML's.
    lines.append(
        f'exec {shlex.quote(str(binary.executable))} "$@" {shlex.join(extra)} '
        '"--backend-config=python,shm-region-prefix-name=${prefix}"'
    )
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = directory / "tritonserver"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    return wrapper


def prepare_peer(binary: TritonServerBinary | None = None) -> BentoPeer:
    """The virtualenv (created once) and a fresh wrapper for the current tritonserver."""
    venv = ensure_venv()
    write_tritonserver_wrapper(WRAPPER_DIR, binary)
    return BentoPeer(venv, WRAPPER_DIR, SERVICE_DIR)


def peer_env(peer: BentoPeer, shm_prefix: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `bentoml serve` runs with: the wrapper first on PATH, nothing of ours."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(peer.wrapper_dir), str(peer.venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(peer.venv)
    env[ENV_SHM_PREFIX] = shm_prefix
    env["BENTOML_DO_NOT_TRACK"] = "True"  # no usage analytics calls from a benchmark
    env.update(extra or {})
    return env


if __name__ == "__main__":
    peer = prepare_peer()
    print(f"bentoml peer ready: {peer.venv} ({peer.version()}); tritonserver wrapper in {peer.wrapper_dir}")
