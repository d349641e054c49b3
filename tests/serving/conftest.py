"""`runnerkit serve --production` as a real process tree, and what the tests need to watch it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import attrs
import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES_DIR = REPO_ROOT / "samples"
EXAMPLE = "services/digits.py:svc"
SLOW_SERVICE = "tests/serving/slow_service.py:svc"
RUNNERKIT = str(Path(sys.executable).with_name("runnerkit"))
STARTUP_TIMEOUT = 240.0
PNG = {"Content-Type": "image/png"}  # tritonserver with the example's models, on a busy 2-core machine


@attrs.frozen
class Sample:
    name: str
    png: bytes = attrs.field(repr=False)
    label: int  # the dataset's label from samples/index.json, not a model's answer


def load_samples() -> list[Sample]:
    index = json.loads((SAMPLES_DIR / "index.json").read_text())
    return [Sample(n, (SAMPLES_DIR / n).read_bytes(), int(e["label"])) for n, e in sorted(index.items())]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- processes, read from /proc --------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(comm, ppid, session id) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has ended; only its parent has not reaped it yet
        return None
    return comm, int(fields[1]), int(fields[3])


def alive(pid: int) -> bool:
    return _stat(pid) is not None


def comm(pid: int) -> str:
    stat = _stat(pid)
    return stat[0] if stat else ""


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> set[int]:
    seen: set[int] = set()
    stack = [pid]
    while stack:
        for child in children(stack.pop()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def session_members(sessions: set[int]) -> set[int]:
    members: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[2] in sessions:
                members.add(int(entry.name))
    return members


def triton_ports(pid: int) -> dict[str, int]:
    """The ports a tritonserver was launched with ({"grpc": ..., "http": ..., "metrics": ...})."""
    ports = {}
    for arg in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0"):
        for kind in ("grpc", "http", "metrics"):
            if arg.startswith(f"--{kind}-port="):
                ports[kind] = int(arg.split("=", 1)[1])
    return ports


def wait_until(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# -- the server ------------------------------------------------------------------------------------


_STARTED = re.compile(r"\[worker (\d+)\] uvicorn\.error: Application startup complete")


class ProductionServer:
    """`runnerkit serve TARGET --production ...` in its own session, its log in a file."""

    def __init__(
        self,
        target: str,
        args: Sequence[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path = REPO_ROOT,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.command = [RUNNERKIT, "serve", target, "--production", "--port", str(self.port), *args]
        full_env = os.environ | {"PYTHONUNBUFFERED": "1"} | (env or {})
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            self.command,
            cwd=cwd,
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.pid = self.process.pid
        self.seen: set[int] = set()  # every process of the tree seen so far (for the final check)

    def log(self, lines: int = 80) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def tree(self) -> set[int]:
        """The supervisor's descendants and every process in the sessions they lead."""
        found = descendants(self.pid)
        found |= session_members({self.pid} | {p for p in found if comm(p) == "tritonserver"})
        self.seen |= found
        return found

    def triton_pids(self) -> list[int]:
        return [p for p in children(self.pid) if comm(p) == "tritonserver"]

    def worker_pids(self) -> list[int]:
        """uvicorn's workers (multiprocessing spawns them; its resource tracker is not one)."""
        workers = []
        for pid in children(self.pid):
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"spawn_main" in cmdline and alive(pid):
                    workers.append(pid)
        return workers

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """/readyz answers 200 and every API worker takes requests (one ready worker answers
        /readyz while another may still be starting)."""
        deadline = time.monotonic() + timeout
        while not (self.ready() and len(self.started_workers()) >= self.workers):
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the server was not ready within {timeout:.0f} s:\n{self.log()}")
            time.sleep(0.25)
        self.tree()

    @property
    def workers(self) -> int:
        """The API workers asked for on the command line (1 unless --workers says otherwise)."""
        args = self.command
        return int(args[args.index("--workers") + 1]) if "--workers" in args else 1

    def started_workers(self) -> set[int]:
        """Live API workers whose application startup is complete (they accept connections)."""
        text = self.log_path.read_text(errors="replace")
        started = {int(pid) for pid in _STARTED.findall(text)}
        return started & set(self.worker_pids())

    def terminate(self, timeout: float = 90.0) -> int:
        self.tree()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not stop within {timeout:.0f} s:\n{self.log()}") from None

    def kill_everything(self) -> None:
        """The fixture's last resort: whatever is left of the tree, by the pids recorded."""
        leftovers = (self.tree() | self.seen) - {os.getpid()}
        for pid in leftovers | {self.pid}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._log.close()


@contextlib.contextmanager
def production_server(
    target: str,
    args: Sequence[str],
    log_path: Path,
    env: dict[str, str] | None = None,
    cwd: Path = REPO_ROOT,
) -> Iterator[ProductionServer]:
    server = ProductionServer(target, args, log_path, env, cwd)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            with contextlib.suppress(AssertionError):
                server.terminate(timeout=60)
        server.kill_everything()


@pytest.fixture(scope="session")
def samples() -> list[Sample]:
    return load_samples()


# -- clients ---------------------------------------------------------------------------------------


@attrs.define
class LoadStats:
    ok: int = 0
    wrong: list[str] = attrs.field(factory=list)  # 200s whose label is not the sample's
    statuses: dict[int, int] = attrs.field(factory=dict)  # non-200 answers by status
    transport_errors: list[str] = attrs.field(factory=list)  # timeouts, refused or dropped connections
    timeline: list[tuple[float, int]] = attrs.field(factory=list)  # (monotonic start, status; 0: no answer)
    max_latency: float = 0.0

    @property
    def total(self) -> int:
        return self.ok + len(self.wrong) + sum(self.statuses.values()) + len(self.transport_errors)


async def _load(
    url: str, samples: Sequence[Sample], concurrency: int, duration: float, timeout: float, stats: LoadStats
) -> None:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        deadline = time.monotonic() + duration

        async def one_client(index: int) -> None:
            n = index
            while time.monotonic() < deadline:
                sample = samples[n % len(samples)]
                n += 1
                started = time.monotonic()
                status = 0
                try:
                    response = await client.post(url, content=sample.png, headers=PNG)
                    status = response.status_code
                    if status == 200:
                        label = response.json()["label"]
                        if label == sample.label:
                            stats.ok += 1
                        else:
                            stats.wrong.append(f"{sample.name}: answered {label}")
                    else:
                        stats.statuses[status] = stats.statuses.get(status, 0) + 1
                        await asyncio.sleep(0.05)  # a client that was told 503 retries, not spins
                except httpx.HTTPError as exc:
                    stats.transport_errors.append(f"{type(exc).__name__}: {exc}")
                    await asyncio.sleep(0.05)
                stats.max_latency = max(stats.max_latency, time.monotonic() - started)
                stats.timeline.append((started, status))

        await asyncio.gather(*(one_client(i) for i in range(concurrency)))


def run_load(
    url: str, samples: Sequence[Sample], *, concurrency: int, duration: float, timeout: float = 30.0
) -> LoadStats:
    """`concurrency` closed-loop clients for `duration` seconds; every answer checked."""
    stats = LoadStats()
    asyncio.run(_load(url, samples, concurrency, duration, timeout, stats))
    return stats
