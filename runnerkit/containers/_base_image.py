"""A local CPU stand-in for ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3``.

No container registry is reachable on the project's machines, so the NGC image cannot be pulled.
:func:`ensure_cpu_base_image` builds, once, an image that has the NGC image's layout and really
serves, from two local ingredients:

1. a Debian bookworm root filesystem made with ``debootstrap --variant=minbase`` from the Debian
   mirror configured in ``/etc/apt`` (cached as a tarball in the state directory, and imported
   as ``localhost/runnerkit-debian-minbase:bookworm`` by a ``FROM scratch`` + ``ADD`` build,
   which works through any engine);
2. the real tritonserver 2.51.0 inside the ``nvidia-pytriton`` wheel, copied into the NGC layout.

The stand-in (``localhost/runnerkit-tritonserver-cpu:2.51.0`` for nvidia-pytriton 0.7.0, which
corresponds to NGC release 24.10) has:

- ``/opt/tritonserver/bin/tritonserver`` on ``PATH``; ``/opt/tritonserver/lib`` (the wheel's
  bundled libraries) on ``LD_LIBRARY_PATH``; ``WORKDIR /opt/tritonserver``;
- ``/opt/tritonserver/backends/python`` with ``libtriton_python.so``,
  ``triton_python_backend_utils.py`` and the Python 3.11 ``triton_python_backend_stub``;
- ``/opt/tritonserver/caches/local``;
- the system Python (Debian's ``python3`` 3.11, ``python3-pip``, ``python3-venv``,
  ``libpython3.11``) and ``numpy<2`` installed with pip into ``/usr/local/lib/python3.11/
  dist-packages`` (as NGC installs its Python packages with pip into the system Python);
- a ``triton-server`` user (uid 1000) as in NGC images; the default user stays root;
- ``TRITON_SERVER_VERSION``, ``NVIDIA_TRITON_SERVER_VERSION`` and ``RUNNERKIT_CPU_STANDIN=1``
  in the environment, and ``ai.runnerkit.*`` labels.

Differences from the NGC image that matter when writing a Dockerfile for both:

- no GPU, CUDA, TensorRT, or backends other than ``python``: ONNX/PyTorch/TensorRT models need
  the python-backend fallback; ``platform``/``backend`` onnxruntime models fail to load;
- Debian 12 and Python 3.11 (NGC 24.10: Ubuntu 22.04 and Python 3.10; NGC 25.x: Ubuntu 24.04
  and Python 3.12); no entrypoint script (NGC's ``nvidia_entrypoint.sh`` prints a banner and
  ``exec``s its arguments, so ``docker run IMAGE tritonserver ...`` behaves the same);
- PEP 668: Debian's Python carries the ``EXTERNALLY-MANAGED`` marker (as does Ubuntu 24.04's, in
  NGC 25.x; Ubuntu 22.04's pip 22.0, in NGC 24.10, has no marker and no
  ``--break-system-packages`` option). ``ENV PIP_BREAK_SYSTEM_PACKAGES=1`` (old pip ignores it)
  or a virtual environment works in all of them; a bare ``pip install`` fails here;
- the host's extra CA certificates (``/usr/local/share/ca-certificates/*.crt``, e.g. a
  TLS-intercepting egress proxy's) are installed into the image so that pip reaches PyPI from
  ``RUN`` steps: without them pip fails with ``CERTIFICATE_VERIFY_FAILED``;
- ``tritonserver --help`` exits with status 1 (in both): check its output, not its exit status.

From Python: ``ensure_cpu_base_image(PodmanEngine.managed())`` returns the tag (a no-op when the
image exists). From a shell: ``scripts/make-cpu-base-image.sh`` or
``python -m runnerkit.containers base-image``. Building needs root (debootstrap) and ``debootstrap``
installed; the first build takes a few minutes, later ones are a no-op.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import importlib.metadata
import importlib.util
import os
import platform as platform_module
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from runnerkit.containers._engine import ContainerEngine, LogCallback
from runnerkit.containers._podman import PodmanEngine
from runnerkit.containers._podman_env import default_state_dir
from runnerkit.containers._streaming import LineBuffer, stream_process
from runnerkit.containers.errors import ContainerError

__all__ = [
    "CPU_STANDIN_IMAGE",
    "DEBIAN_MINBASE_IMAGE",
    "NGC_RELEASE",
    "NGC_TRITON_IMAGE",
    "STANDIN_PYTHON",
    "TRITON_VERSION",
    "CpuBaseImage",
    "PytritonServer",
    "debian_mirror",
    "ensure_cpu_base_image",
    "ensure_debian_base_image",
    "find_pytriton_server",
    "make_rootfs_tarball",
    "verify_cpu_base_image",
    "write_identity_model_repository",
]

# nvidia-pytriton version -> (tritonserver version, NGC release that ships it)
_TRITON_BY_PYTRITON = {"0.7.0": ("2.51.0", "24.10")}
TRITON_VERSION, NGC_RELEASE = _TRITON_BY_PYTRITON["0.7.0"]
NGC_TRITON_IMAGE = f"nvcr.io/nvidia/tritonserver:{NGC_RELEASE}-py3"
CPU_STANDIN_IMAGE = f"localhost/runnerkit-tritonserver-cpu:{TRITON_VERSION}"
DEBIAN_SUITE = "bookworm"
DEBIAN_MINBASE_IMAGE = f"localhost/runnerkit-debian-minbase:{DEBIAN_SUITE}"
STANDIN_PYTHON = "3.11"  # Debian bookworm's python3
DEFAULT_MIRROR = "http://deb.debian.org/debian"
LABEL_PREFIX = "ai.runnerkit"


# --------------------------------------------------------------------------------------------
# ingredients
# --------------------------------------------------------------------------------------------


def _deb822_stanzas(text: str) -> Iterator[dict[str, str]]:
    stanza: dict[str, str] = {}
    key = ""
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if stanza:
                yield stanza
            stanza, key = {}, ""
        elif raw[0] in " \t" and key:
            stanza[key] += " " + raw.strip()
        elif ":" in raw:
            key, _, value = raw.partition(":")
            key = key.strip().lower()
            stanza[key] = value.strip()


def debian_mirror(suite: str = DEBIAN_SUITE, apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt uses for ``suite`` (``$RUNNERKIT_DEBIAN_MIRROR`` wins).

    Reads ``sources.list.d/*.sources`` (deb822) and ``*.list`` / ``sources.list`` (one-line
    format); falls back to ``http://deb.debian.org/debian``.
    """
    override = os.environ.get("RUNNERKIT_DEBIAN_MIRROR")
    if override:
        return override
    folder = apt_dir / "sources.list.d"
    deb822 = sorted(folder.glob("*.sources")) if folder.is_dir() else []
    one_line = ([apt_dir / "sources.list"] if (apt_dir / "sources.list").is_file() else []) + (
        sorted(folder.glob("*.list")) if folder.is_dir() else []
    )
    for path in deb822:
        with contextlib.suppress(OSError):
            for stanza in _deb822_stanzas(path.read_text()):
                if stanza.get("enabled", "yes").lower() == "no":
                    continue
                if "deb" not in stanza.get("types", "").split():
                    continue
                if suite in stanza.get("suites", "").split():
                    return stanza.get("uris", "").split()[0]
    for path in one_line:
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines():
                words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
                if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                    return words[1]
    return DEFAULT_MIRROR


@attrs.frozen
class PytritonServer:
    """Where the nvidia-pytriton wheel keeps its tritonserver build."""

    server_dir: Path  # .../site-packages/pytriton/tritonserver
    libs_dir: Path  # .../site-packages/nvidia_pytriton.libs
    pytriton_version: str

    @property
    def binary(self) -> Path:
        return self.server_dir / "bin" / "tritonserver"

    def stub(self, python: str = STANDIN_PYTHON) -> Path:
        return self.server_dir / "python_backend_stubs" / python / "triton_python_backend_stub"

    @property
    def triton_version(self) -> str:
        return _TRITON_BY_PYTRITON.get(self.pytriton_version, (f"pytriton{self.pytriton_version}",))[0]


def find_pytriton_server() -> PytritonServer:
    """Locate the tritonserver inside the installed nvidia-pytriton (``runnerkit[local]``)."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        raise ContainerError(
            "nvidia-pytriton is not installed; the CPU stand-in image copies its tritonserver: "
            "pip install 'runnerkit[local]' (nvidia-pytriton==0.7.0)"
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    server = PytritonServer(
        server_dir=package_dir / "tritonserver",
        libs_dir=package_dir.parent / "nvidia_pytriton.libs",
        pytriton_version=importlib.metadata.version("nvidia-pytriton"),
    )
    for needed in (server.binary, server.stub(), server.libs_dir):
        if not needed.exists():
            raise ContainerError(f"nvidia-pytriton install is incomplete: {needed} is missing")
    return server


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``, waiting at most ``timeout`` seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise ContainerError(
                        f"waited {timeout}s for {path} (another runnerkit process builds the base image)"
                    ) from exc
                time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_logged(cmd: list[str], on_log: LogCallback | None, timeout: float, what: str) -> None:
    sink = LineBuffer(on_log, keep=40)
    code, timed_out = stream_process(cmd, sink, timeout)
    if timed_out:
        raise ContainerError(f"{what} ran past {timeout}s and was stopped:\n" + "\n".join(sink.tail))
    if code != 0:
        raise ContainerError(f"{what} failed (exit {code}):\n" + "\n".join(sink.tail))


def make_rootfs_tarball(
    dest: Path,
    *,
    suite: str = DEBIAN_SUITE,
    mirror: str | None = None,
    on_log: LogCallback | None = None,
    timeout: float = 900.0,
) -> Path:
    """``debootstrap --variant=minbase`` into a temporary folder, tar it to ``dest`` (atomic).

    A no-op when ``dest`` exists. apt's package lists and caches and ``/dev`` are left out of
    the tarball (an image gets its own /dev; ``apt-get update`` comes first in any Dockerfile).
    Needs root and the ``debootstrap`` and ``tar`` commands.
    """
    if dest.is_file():
        return dest
    debootstrap = shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if os.access(p, os.X_OK)), None
    )
    if debootstrap is None:
        raise ContainerError(
            "debootstrap is not installed (needed once, to make the base image's root "
            "filesystem): apt-get install debootstrap, or run scripts/install-system-deps.sh"
        )
    if os.geteuid() != 0:
        raise ContainerError("debootstrap needs root to make the base image's root filesystem")
    mirror = mirror or debian_mirror(suite)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".rootfs-", dir=dest.parent))
    try:
        rootfs = work / "rootfs"
        _run_logged(
            [debootstrap, "--variant=minbase", suite, str(rootfs), mirror],
            on_log,
            timeout,
            f"debootstrap {suite} from {mirror}",
        )
        for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*", "dev/*", "tmp/*"):
            for path in rootfs.glob(pattern):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        (rootfs / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
        (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        tmp_tar = work / "rootfs.tar"
        _run_logged(
            ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tmp_tar), "."],
            on_log,
            300.0,
            "tar of the root filesystem",
        )
        os.replace(tmp_tar, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _link_tree(src: Path, dst: Path) -> None:
    for path in sorted(src.rglob("*")):
        if "__pycache__" in path.parts or path.is_dir():
            continue
        _link_or_copy(path, dst / path.relative_to(src))


# --------------------------------------------------------------------------------------------
# the images
# --------------------------------------------------------------------------------------------

_OS_CONTAINERFILE = """\
# runnerkit: Debian {suite} (debootstrap --variant=minbase, {mirror}) as a base image.
FROM scratch
ADD rootfs.tar /
LABEL {label}.debian-suite="{suite}" {label}.debian-mirror="{mirror}"
CMD ["/bin/bash"]
"""

_STANDIN_CONTAINERFILE = """\
# runnerkit: CPU stand-in for {ngc_image} (see runnerkit/containers/_base_image.py).
ARG OS_IMAGE={os_image}
FROM ${{OS_IMAGE}}
ARG NUMPY_SPEC="numpy<2"
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
# extra CA certificates of the machine that built this (egress proxies): pip needs them.
COPY ca/ /usr/local/share/ca-certificates/
RUN apt-get update \\
 && apt-get install -y --no-install-recommends \\
      ca-certificates python3 python3-pip python3-venv libpython{python} \\
 && update-ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m pip install --no-cache-dir --break-system-packages "$NUMPY_SPEC" \\
 && python3 -c "import numpy; print('numpy', numpy.__version__)"
RUN useradd --uid 1000 --create-home --shell /bin/bash triton-server
COPY tritonserver/ /opt/tritonserver/
ENV PATH=/opt/tritonserver/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    LD_LIBRARY_PATH=/opt/tritonserver/lib \\
    TRITON_SERVER_VERSION={triton_version} \\
    NVIDIA_TRITON_SERVER_VERSION={ngc_release} \\
    RUNNERKIT_CPU_STANDIN=1
WORKDIR /opt/tritonserver
RUN tritonserver --help 2>&1 | grep -q "Usage: tritonserver"
LABEL {label}.cpu-standin-for="{ngc_image}" {label}.triton-version="{triton_version}" \\
      {label}.python="{python}"
"""


@attrs.frozen
class CpuBaseImage:
    """How the CPU stand-in is built; the defaults are what ``ensure_cpu_base_image`` uses.

    ``extra_ca_certificates=None`` takes the host's ``/usr/local/share/ca-certificates/*.crt``.
    ``cache_dir=None`` means ``<containers state dir>/base-image`` (the rootfs tarball).
    """

    tag: str = CPU_STANDIN_IMAGE
    os_tag: str = DEBIAN_MINBASE_IMAGE
    suite: str = DEBIAN_SUITE
    mirror: str | None = None
    numpy_spec: str = "numpy<2"
    extra_ca_certificates: tuple[Path, ...] | None = None
    cache_dir: Path | None = None

    def resolved_cache_dir(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else default_state_dir() / "base-image"

    def ca_certificates(self) -> tuple[Path, ...]:
        if self.extra_ca_certificates is not None:
            return self.extra_ca_certificates
        return tuple(sorted(Path("/usr/local/share/ca-certificates").glob("**/*.crt")))

    def rootfs_tarball(self) -> Path:
        arch = platform_module.machine()
        return self.resolved_cache_dir() / f"debian-{self.suite}-minbase-{arch}.tar"


def _build_os_image(
    engine: ContainerEngine, spec: CpuBaseImage, on_log: LogCallback | None, timeout: float
) -> None:
    mirror = spec.mirror or debian_mirror(spec.suite)
    tarball = make_rootfs_tarball(
        spec.rootfs_tarball(), suite=spec.suite, mirror=mirror, on_log=on_log, timeout=timeout
    )
    with tempfile.TemporaryDirectory(prefix="os-ctx-", dir=spec.resolved_cache_dir()) as tmp:
        ctx = Path(tmp)
        _link_or_copy(tarball, ctx / "rootfs.tar")
        (ctx / "Containerfile").write_text(
            _OS_CONTAINERFILE.format(suite=spec.suite, mirror=mirror, label=LABEL_PREFIX)
        )
        engine.build(ctx, "Containerfile", spec.os_tag, on_log=on_log, timeout=timeout)


def _build_standin(
    engine: ContainerEngine, spec: CpuBaseImage, on_log: LogCallback | None, timeout: float
) -> str:
    server = find_pytriton_server()
    with tempfile.TemporaryDirectory(prefix="standin-ctx-", dir=spec.resolved_cache_dir()) as tmp:
        ctx = Path(tmp)
        opt = ctx / "tritonserver"
        _link_or_copy(server.binary, opt / "bin" / "tritonserver")
        _link_tree(server.server_dir / "backends", opt / "backends")
        _link_or_copy(server.stub(), opt / "backends" / "python" / "triton_python_backend_stub")
        _link_tree(server.server_dir / "caches", opt / "caches")
        _link_tree(server.libs_dir, opt / "lib")
        (ctx / "ca").mkdir()
        (ctx / "ca" / "README").write_text("extra CA certificates of the build machine\n")
        for index, cert in enumerate(spec.ca_certificates()):
            shutil.copyfile(cert, ctx / "ca" / f"runnerkit-host-{index}-{cert.name}")
        (ctx / "Containerfile").write_text(
            _STANDIN_CONTAINERFILE.format(
                ngc_image=NGC_TRITON_IMAGE,
                os_image=spec.os_tag,
                python=STANDIN_PYTHON,
                triton_version=server.triton_version,
                ngc_release=NGC_RELEASE,
                label=LABEL_PREFIX,
            )
        )
        return engine.build(
            ctx,
            "Containerfile",
            spec.tag,
            build_args={"OS_IMAGE": spec.os_tag, "NUMPY_SPEC": spec.numpy_spec},
            on_log=on_log,
            timeout=timeout,
        )


def ensure_debian_base_image(
    engine: ContainerEngine | None = None,
    *,
    spec: CpuBaseImage | None = None,
    on_log: LogCallback | None = None,
    timeout: float = 1800.0,
) -> str:
    """Build the plain Debian minbase image (``DEBIAN_MINBASE_IMAGE``) if missing; return its tag.

    It has ``/bin/sh`` and apt but no Python: a small, fast base for test Dockerfiles.
    """
    engine = engine if engine is not None else PodmanEngine.managed()
    spec = spec or CpuBaseImage()
    if engine.image_exists(spec.os_tag):
        return spec.os_tag
    cache = spec.resolved_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache / ".build.lock", timeout=timeout):
        if not engine.image_exists(spec.os_tag):
            _build_os_image(engine, spec, on_log, timeout)
    return spec.os_tag


def ensure_cpu_base_image(
    engine: ContainerEngine | None = None,
    *,
    spec: CpuBaseImage | None = None,
    rebuild: bool = False,
    on_log: LogCallback | None = None,
    timeout: float = 1800.0,
) -> str:
    """Build the CPU stand-in for the NGC tritonserver image if missing; return its tag.

    ``engine`` defaults to ``PodmanEngine.managed()`` (runnerkit's podman storage). A second
    call is a no-op (``image_exists``); ``rebuild=True`` rebuilds the stand-in layer (the Debian
    base image and rootfs tarball are kept). Concurrent callers wait on a file lock. ``timeout``
    bounds each of the long steps (debootstrap, each image build).
    """
    engine = engine if engine is not None else PodmanEngine.managed()
    spec = spec or CpuBaseImage()
    if not rebuild and engine.image_exists(spec.tag):
        return spec.tag
    cache = spec.resolved_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache / ".build.lock", timeout=timeout):
        if not rebuild and engine.image_exists(spec.tag):
            return spec.tag  # built by another process while we waited
        if not engine.image_exists(spec.os_tag):
            _build_os_image(engine, spec, on_log, timeout)
        _build_standin(engine, spec, on_log, timeout)
    return spec.tag


# --------------------------------------------------------------------------------------------
# verification
# --------------------------------------------------------------------------------------------

_IDENTITY_CONFIG = """\
name: "identity"
backend: "python"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
"""

_IDENTITY_MODEL = """\
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", (data * np.float32(1)).astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""

_CHECK_SCRIPT = """\
import json, subprocess, sys, time, urllib.request

server = subprocess.Popen(
    ["tritonserver", "--model-repository=/check/models", "--http-port=8000",
     "--grpc-port=8001", "--metrics-port=8002"],
    stdout=open("/tmp/tritonserver.log", "w"), stderr=subprocess.STDOUT)
deadline = time.monotonic() + float(sys.argv[1])
ready = False
while time.monotonic() < deadline and server.poll() is None:
    try:
        ready = urllib.request.urlopen("http://127.0.0.1:8000/v2/health/ready", timeout=2).status == 200
    except OSError:
        pass
    if ready:
        break
    time.sleep(0.25)
ok = False
if ready:
    body = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32",
                                   "data": [1.5, 2.0, 3.0, 4.0]}]}).encode()
    req = urllib.request.Request("http://127.0.0.1:8000/v2/models/identity/infer", data=body,
                                 headers={"Content-Type": "application/json"})
    out = json.load(urllib.request.urlopen(req, timeout=30))
    ok = out["outputs"][0]["data"] == [1.5, 2.0, 3.0, 4.0]
    print("INFER", json.dumps(out["outputs"][0]))
server.terminate()
try:
    server.wait(20)
except subprocess.TimeoutExpired:
    server.kill()
print(open("/tmp/tritonserver.log").read()[-4000:])
print("READY" if ready else "NOT READY", "INFER OK" if ok else "INFER FAILED")
sys.exit(0 if ready and ok else 1)
"""


def write_identity_model_repository(root: Path) -> Path:
    """A model repository with one python-backend model, ``identity`` (FP32 in -> out)."""
    model = root / "identity"
    (model / "1").mkdir(parents=True, exist_ok=True)
    (model / "config.pbtxt").write_text(_IDENTITY_CONFIG)
    (model / "1" / "model.py").write_text(_IDENTITY_MODEL)
    return root


def verify_cpu_base_image(
    engine: ContainerEngine,
    tag: str = CPU_STANDIN_IMAGE,
    *,
    serve: bool = True,
    timeout: float = 180.0,
) -> str:
    """Check the stand-in inside a container; return the output. Raises ``ContainerError``.

    Runs ``tritonserver --help`` (which exits 1 by design: the usage text is checked) and,
    with ``serve=True``, starts tritonserver on a python-backend identity model (numpy), waits
    until it is ready, and checks one HTTP inference.
    """
    result = engine.run(tag, ["tritonserver", "--help"], timeout=timeout)
    if "Usage: tritonserver" not in result.output:
        raise ContainerError(f"`tritonserver --help` in {tag} printed no usage:\n{result.output}")
    output = result.output
    if serve:
        with tempfile.TemporaryDirectory(prefix="runnerkit-verify-") as tmp:
            root = Path(tmp)
            write_identity_model_repository(root / "models")
            (root / "check.py").write_text(_CHECK_SCRIPT)
            run = engine.run(
                tag,
                ["python3", "/check/check.py", str(max(10.0, timeout - 30.0))],
                volumes={root: "/check"},
                timeout=timeout,
            )
            output = run.output
            if not run.ok:
                raise ContainerError(
                    f"tritonserver in {tag} did not serve the identity model "
                    f"(exit {run.exit_code}):\n{output[-6000:]}"
                )
    return output
