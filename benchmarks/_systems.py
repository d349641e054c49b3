"""The systems under test, each started once per benchmark run and measured in turns.

- `TritonUnderTest`: the tritonserver the harness launches for the raw and runner cases, from
  the same binary runnerkit picks and the repository runnerkit would serve (its shadow repository
  when models need the python-backend fallback; BentoML serves that same folder).
- `RawTriton` / `RunnerDirect` / `TritonHttp`: clients of that server (gRPC raw, runnerkit Runner,
  and wrk over Triton's own HTTP front end, the load generator's ceiling check).
- `RunnerkitService` / `BentoService`: `/classify` served over HTTP by each stack, which launches
  its own tritonserver as its users' deployments would.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from benchmarks import _bentoml_peer as peer_setup
from benchmarks._loadgen import LoadResult, grpc_load, http_load
from benchmarks._workload import MODEL, MODEL_INPUT, MODEL_OUTPUT, REPO_ROOT, Sample
from runnerkit.triton._fallback import build_shadow_repository, plan_fallback
from runnerkit.triton._repository import LocalModelRepository
from runnerkit.triton._runner import ENV_SUPERVISED_ADDRESSES
from runnerkit.triton._server import LOOPBACK, ServerAddresses, TritonServerProcess, free_port
from runnerkit.triton._server_binary import TritonServerBinary

READY_TIMEOUT = 240.0
CLASSIFY_RETRY_SECONDS = 60.0
STOP_GRACE = 30.0


class SystemStartError(RuntimeError):
    """A system under test did not come up; carries the end of its log."""


# -- processes -------------------------------------------------------------------------------------


def stop_process_tree(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> None:
    """SIGTERM the root, give it `grace` to stop its children, then kill whatever is left.

    The tree is read before the signal: servers like BentoML's circus start children in sessions
    of their own, which a process-group kill would miss.
    """
    try:
        tree = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    _, alive = psutil.wait_procs(tree, timeout=grace)
    for child in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs(alive, timeout=10)


class ServiceProcess:
    """An HTTP server started as a command, ready when `ready_path` answers 200."""

    def __init__(
        self,
        name: str,
        cmd: Sequence[str],
        *,
        port: int,
        env: dict[str, str],
        cwd: Path,
        log_dir: Path,
        ready_path: str = "/readyz",
    ) -> None:
        self.name = name
        self.cmd = list(cmd)
        self.port = port
        self.env = env
        self.cwd = cwd
        self.log_path = log_dir / f"{name}.log"
        self.ready_path = ready_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = READY_TIMEOUT) -> None:
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                self.cmd,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        delay = 0.1
        with httpx.Client(timeout=2.0) as client:
            while True:
                code = self._proc.poll()
                if code is not None:
                    raise SystemStartError(
                        f"{self.name} exited with code {code} before it was ready:\n{self.log_tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(self.base_url + self.ready_path).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    self.stop()
                    raise SystemStartError(
                        f"{self.name} was not ready within {timeout:.0f} s:\n{self.log_tail()}"
                    )
                time.sleep(delay)
                delay = min(delay * 1.5, 1.0)

    def stop(self) -> None:
        if self._proc is not None:
            stop_process_tree(self._proc)
            self._proc = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


# -- the harness's tritonserver ---------------------------------------------------------------------


class TritonUnderTest:
    """One tritonserver for the raw and runner cases, and the repository folder every stack serves."""

    def __init__(self, binary: TritonServerBinary, model_repository: Path, work_dir: Path) -> None:
        self.binary = binary
        self.model_repository = model_repository
        models = LocalModelRepository(model_repository).list_models()
        self.fallback = plan_fallback(models, binary)
        if self.fallback:
            self.served_repository = build_shadow_repository(models, self.fallback, work_dir / "shadow")
        else:
            self.served_repository = model_repository.resolve()
        self._server = TritonServerProcess(binary, [str(self.served_repository)], log_prefix="bench/triton")
        self.addresses: ServerAddresses | None = None

    def start(self, timeout: float = READY_TIMEOUT) -> None:
        self._server.start()
        self._server.wait_ready(timeout)
        self.addresses = self._server.addresses

    def stop(self) -> None:
        self._server.stop()

    def server_version(self) -> str:
        assert self.addresses is not None
        response = httpx.get(f"http://{self.addresses.http_url}/v2", timeout=5)
        return str(response.json().get("version", "unknown"))

    def supervised_env(self) -> str:
        """RUNNERKIT_TRITON_ADDRESSES for a runnerkit service that should attach to this server."""
        assert self.addresses is not None
        entry = {
            "grpc": self.addresses.grpc_url,
            "http": self.addresses.http_url,
            "metrics": self.addresses.metrics_url,
        }
        return json.dumps({"triton_runner": entry})


# -- systems ----------------------------------------------------------------------------------------


class System(abc.ABC):
    """Something measured: started once, checked on every sample, then loaded in turns."""

    key: str
    label: str
    workers: int | None = None

    def start(self) -> None:  # noqa: B027 - clients of the shared server have nothing to start
        pass

    def stop(self) -> None:  # noqa: B027
        pass

    @abc.abstractmethod
    def classify(self, samples: Sequence[Sample]) -> list[int]:
        """One answer per sample, sequentially: the correctness check before any load."""

    @abc.abstractmethod
    def measure(self, sample: Sample, *, concurrency: int, duration: float, warmup: float) -> LoadResult:
        """Closed-loop load with `sample`."""

    def describe(self) -> str:
        return self.label


class RawTriton(System):
    key = "raw"
    label = "raw Triton (gRPC aio)"

    def __init__(self, triton: TritonUnderTest) -> None:
        self.triton = triton

    def describe(self) -> str:
        return (
            f"`tritonclient.grpc.aio` straight to `{MODEL}` with the preprocessed tensor, "
            "one InferInput per call; the limit for any Python layer"
        )

    def classify(self, samples: Sequence[Sample]) -> list[int]:
        import tritonclient.grpc as grpcclient

        assert self.triton.addresses is not None
        client = grpcclient.InferenceServerClient(self.triton.addresses.grpc_url)
        labels = []
        try:
            for sample in samples:
                tensor = sample.tensor
                infer_input = grpcclient.InferInput(MODEL_INPUT, list(tensor.shape), "FP32")
                infer_input.set_data_from_numpy(tensor)
                logits = client.infer(MODEL, [infer_input]).as_numpy(MODEL_OUTPUT)
                labels.append(int(np.argmax(logits[0])))
        finally:
            client.close()
        return labels

    def measure(self, sample: Sample, *, concurrency: int, duration: float, warmup: float) -> LoadResult:
        assert self.triton.addresses is not None
        return grpc_load(
            "raw",
            self.triton.addresses.grpc_url,
            sample.tensor,
            concurrency=concurrency,
            duration=duration,
            warmup=warmup,
            expected_label=sample.label,
        )


class RunnerDirect(System):
    key = "runner"
    label = "runnerkit runner"

    def __init__(self, triton: TritonUnderTest) -> None:
        self.triton = triton

    def describe(self) -> str:
        return (
            f"`await runner.{MODEL}.async_run(x)` in a loop (a Runner attached to the same server), no HTTP; "
            f"{MODEL} has dynamic batching, so the runner coalesces concurrent calls into batched "
            "requests (micro-batching, its default for such models)"
        )

    def classify(self, samples: Sequence[Sample]) -> list[int]:
        from runnerkit.triton import Runner

        assert self.triton.addresses is not None
        with Runner("bench", url=self.triton.addresses.grpc_url) as runner:
            model = runner.models[MODEL]
            outputs = [model.run(s.tensor).as_numpy(MODEL_OUTPUT) for s in samples]
        return [-1 if out is None else int(np.argmax(out[0])) for out in outputs]

    def measure(self, sample: Sample, *, concurrency: int, duration: float, warmup: float) -> LoadResult:
        assert self.triton.addresses is not None
        return grpc_load(
            "runner",
            self.triton.addresses.grpc_url,
            sample.tensor,
            concurrency=concurrency,
            duration=duration,
            warmup=warmup,
            expected_label=sample.label,
        )


def triton_json_request(tensor: np.ndarray) -> bytes:
    payload = {
        "inputs": [
            {
                "name": MODEL_INPUT,
                "shape": list(tensor.shape),
                "datatype": "FP32",
                "data": tensor.ravel().tolist(),
            }
        ]
    }
    return json.dumps(payload).encode()


class TritonHttp(System):
    """wrk against Triton's own C++ HTTP front end: how fast the load generator can go."""

    key = "triton-http"
    label = "raw Triton (HTTP/JSON, wrk)"

    def __init__(self, triton: TritonUnderTest) -> None:
        self.triton = triton

    def describe(self) -> str:
        return (
            "the load generator (wrk) against Triton's own HTTP/JSON endpoint with the "
            "preprocessed tensor: the ceiling check for the HTTP systems"
        )

    @property
    def url(self) -> str:
        assert self.triton.addresses is not None
        return f"http://{self.triton.addresses.http_url}/v2/models/{MODEL}/infer"

    def classify(self, samples: Sequence[Sample]) -> list[int]:
        labels = []
        with httpx.Client(timeout=10) as client:
            for sample in samples:
                response = client.post(self.url, content=triton_json_request(sample.tensor))
                response.raise_for_status()
                labels.append(int(np.argmax(response.json()["outputs"][0]["data"])))
        return labels

    def measure(self, sample: Sample, *, concurrency: int, duration: float, warmup: float) -> LoadResult:
        return http_load(
            self.url,
            triton_json_request(sample.tensor),
            "application/json",
            concurrency=concurrency,
            duration=duration,
            warmup=warmup,
            expected_label=sample.label,
            check="triton-logits",
        )


class HttpService(System):
    """`POST /classify` with the sample's PNG; the answer is JSON with a "label"."""

    route = "/classify"

    def __init__(self, process: ServiceProcess) -> None:
        self.process = process

    def start(self) -> None:
        self.process.start()

    def stop(self) -> None:
        self.process.stop()

    def classify(self, samples: Sequence[Sample]) -> list[int]:
        labels = []
        # A server may answer /readyz before every one of its workers serves (BentoML's second
        # API worker did): server errors are retried until this deadline, then raised.
        deadline = time.monotonic() + CLASSIFY_RETRY_SECONDS
        with httpx.Client(timeout=30) as client:
            for sample in samples:
                while True:
                    response = client.post(
                        self.process.base_url + self.route,
                        content=sample.png,
                        headers={"Content-Type": "image/png"},
                    )
                    if response.status_code < 500 or time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
                response.raise_for_status()
                labels.append(int(response.json()["label"]))
        return labels

    def measure(self, sample: Sample, *, concurrency: int, duration: float, warmup: float) -> LoadResult:
        return http_load(
            self.process.base_url + self.route,
            sample.png,
            "image/png",
            concurrency=concurrency,
            duration=duration,
            warmup=warmup,
            expected_label=sample.label,
        )


def runnerkit_executable() -> str:
    beside = Path(sys.executable).parent / "runnerkit"
    found = str(beside) if beside.is_file() else shutil.which("runnerkit")
    if found is None:
        raise SystemStartError("the `runnerkit` command is not installed in this environment")
    return found


def runnerkit_serve_options() -> set[str]:
    """The options `runnerkit serve` accepts, read from its --help (production serving is newer)."""
    proc = subprocess.run([runnerkit_executable(), "serve", "--help"], capture_output=True, text=True)
    return {word.rstrip(",") for word in proc.stdout.split() if word.startswith("--")}


class RunnerkitService(HttpService):
    def __init__(
        self,
        workers: int,
        *,
        production: bool,
        log_dir: Path,
        access_log_option: bool = False,
        target: str = "services/digits.py:svc",
        attach_to: TritonUnderTest | None = None,
    ) -> None:
        self.workers = workers
        self.production = production
        self.key = f"runnerkit-w{workers}"
        mode = "production" if production else "dev serve"
        self.label = f"runnerkit service, {workers} worker{'s' if workers > 1 else ''} ({mode})"
        port = free_port()
        cmd = [runnerkit_executable(), "serve", target, "--host", LOOPBACK, "--port", str(port)]
        if production:
            cmd += ["--production", "--workers", str(workers)]
        elif workers != 1:
            raise ValueError("without production serving, runnerkit serves with one worker only")
        self.access_log = not access_log_option
        if access_log_option:
            cmd.append("--no-access-log")  # BentoML's access log is off too
        env = {k: v for k, v in os.environ.items() if k != ENV_SUPERVISED_ADDRESSES}
        self.attached = attach_to is not None
        if attach_to is not None:
            # quick mode: attach to the harness's server instead of launching a second one
            env[ENV_SUPERVISED_ADDRESSES] = attach_to.supervised_env()
        super().__init__(ServiceProcess(self.key, cmd, port=port, env=env, cwd=REPO_ROOT, log_dir=log_dir))

    def describe(self) -> str:
        how = "`runnerkit serve services/digits.py:svc" + (
            f" --production --workers {self.workers}`" if self.production else "` (development serving)"
        )
        triton = "attached to the harness's tritonserver" if self.attached else "its own tritonserver"
        access = "access log on" if self.access_log else "access log off"
        return f"`/classify` (PNG in, JSON out) under {how}, {triton}, {access}"


BENTOML_CONFIG = """\
version: 1
api_server:
  logging:
    access:
      enabled: false
"""


class BentoService(HttpService):
    def __init__(
        self, workers: int, *, peer: peer_setup.BentoPeer, triton: TritonUnderTest, log_dir: Path
    ) -> None:
        self.workers = workers
        self.key = f"bentoml-w{workers}"
        self.label = f"BentoML legacy runner, {workers} worker{'s' if workers > 1 else ''}"
        self.shm_prefix = f"bench_bentoml_{os.getpid()}_{workers}_"
        port = free_port()
        config = log_dir / "bentoml_configuration.yaml"
        config.write_text(BENTOML_CONFIG)
        env = peer_setup.peer_env(
            peer,
            self.shm_prefix,
            {
                "RUNNERKIT_BENCH_MODEL_REPOSITORY": str(triton.served_repository),
                "BENTOML_HOME": str(peer_setup.STATE_DIR / "bentoml-home"),
                "BENTOML_CONFIG": str(config),
            },
        )
        cmd = [
            str(peer.bentoml),
            "serve",
            "--production",
            "service:svc",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--api-workers",
            str(workers),
        ]
        super().__init__(
            ServiceProcess(self.key, cmd, port=port, env=env, cwd=peer.service_dir, log_dir=log_dir)
        )

    def describe(self) -> str:
        return (
            f"`bentoml serve --production --api-workers {self.workers}` of a `bentoml.legacy.Service` "
            "with `bentoml.triton.Runner` (benchmarks/bentoml_peer/service.py), access log off"
        )

    def stop(self) -> None:
        super().stop()
        for leftover in Path("/dev/shm").glob(self.shm_prefix + "*"):
            with contextlib.suppress(OSError):
                leftover.unlink()


def make_work_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="runnerkit-bench-"))


def versions_of(python: Path, modules: Sequence[str]) -> dict[str, Any]:
    """Installed versions of distributions in another environment (the BentoML virtualenv)."""
    script = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try: out[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: out[name] = None\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([str(python), "-c", script, *modules], capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout))
