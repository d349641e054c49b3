"""Production serving, measured: throughput and p99 of /classify with 1 and 2 API workers, and
how long traffic takes to recover after tritonserver is killed (kill -9).

    python benchmarks/production.py            # 15 s per case, 3 kills a minute apart (about 6 minutes)
    python benchmarks/production.py --quick    # a few seconds per case, 1 kill (proves it works)

Each case runs `runnerkit serve services/digits.py:svc --production --workers N --no-access-log`
as its users would (its own tritonserver); wrk drives `concurrency` keep-alive connections, one
sample per run, every answer's label checked. The recovery runs asyncio clients (one connection
each) against the 2-worker server, kills its tritonserver, and times the first right answer after
the kill; every answer in between must be a 503 that came back at once. The machine is shared:
figures are one run's, not a promise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `runnerkit` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attrs
import httpx
import psutil

from benchmarks._loadgen import LoadResult, http_load, wrk_executable
from benchmarks._systems import LOOPBACK, ServiceProcess, free_port, make_work_dir, runnerkit_executable
from benchmarks._workload import REPO_ROOT, Sample, load_samples

DEFAULT_OUTPUT = REPO_ROOT / ".state" / "benchmarks" / "production.md"
QUICK_OUTPUT = REPO_ROOT / ".state" / "benchmarks-production-quick" / "production.md"
TARGET = "services/digits.py:svc"
# Quick mode loads only the model /classify calls: it starts (and restarts) in half the time.
ONLY_CLASSIFY = ["--triton-options=model-control-mode=explicit", "--triton-options=load-model=digits_onnx"]
PNG = {"Content-Type": "image/png"}
RECOVERY_CLIENTS = 8
RECOVERY_TIMEOUT = 180.0
SETTLE_S = 5.0
REQUEST_TIMEOUT = 10.0  # a request that hangs shows up as a timeout


def log(message: str) -> None:
    print(f"[production-bench] {message}", file=sys.stderr, flush=True)


@attrs.frozen
class Recovery:
    """One kill -9 of tritonserver under load, seen from the clients."""

    first_ok_s: float  # kill -> first right answer
    last_failure_s: float  # kill -> the last failed answer (every worker has reconnected after it)
    readyz_s: float  # kill -> /readyz 200 again
    restart_s: float | None  # what the supervisor reported (kill -> tritonserver ready again)
    restart_delay_s: float | None  # of which its backoff before relaunching
    statuses: dict[str, int]  # the failed answers after the kill, by status
    transport_errors: int  # timeouts, refused or dropped connections (none expected)
    slowest_failure_ms: float  # the slowest of the failed requests: failing fast means small
    wrong: int

    @property
    def clean(self) -> bool:
        return self.transport_errors == 0 and self.wrong == 0 and set(self.statuses) <= {"503"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/production.py",
        description="Production serving: throughput and p99 with 1 and 2 workers, recovery after kill -9",
    )
    parser.add_argument("--quick", action="store_true", help="seconds per case, one kill")
    parser.add_argument("--output", type=Path, default=None, help="the Markdown report (.json next to it)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--duration", type=float, default=None, help="seconds per case (default 15; quick 2)")
    parser.add_argument("--warmup", type=float, default=None, help="seconds before each (default 3; quick 0)")
    parser.add_argument("--kills", type=int, default=None, help="tritonserver kills (default 3; quick 1)")
    parser.add_argument(
        "--kill-interval",
        type=float,
        default=65.0,
        help="seconds between kills (default 65: the supervisor backs off restarts of a server that "
        "died within a minute of its last recovery; spaced out, each kill measures a first restart)",
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    args.output = (args.output or (QUICK_OUTPUT if args.quick else DEFAULT_OUTPUT)).resolve()
    args.duration = args.duration if args.duration is not None else (2.0 if args.quick else 15.0)
    args.warmup = args.warmup if args.warmup is not None else (0.0 if args.quick else 3.0)
    args.kills = args.kills if args.kills is not None else (1 if args.quick else 3)
    if args.concurrency < 1 or args.duration <= 0 or args.kills < 0 or min(args.workers) < 1:
        parser.error("--concurrency, --duration and --workers must be positive, --kills >= 0")
    return args


def start_server(workers: int, quick: bool, work_dir: Path) -> ServiceProcess:
    port = free_port()
    cmd = [runnerkit_executable(), "serve", TARGET, "--production", "--workers", str(workers),
           "--no-access-log", "--host", LOOPBACK, "--port", str(port)]  # fmt: skip
    if quick:
        cmd += ONLY_CLASSIFY
    env = {k: v for k, v in os.environ.items() if k != "RUNNERKIT_TRITON_ADDRESSES"}
    name = f"production-w{workers}"
    server = ServiceProcess(name, cmd, port=port, env=env, cwd=REPO_ROOT, log_dir=work_dir)
    server.start()
    return server


def check_answers(server: ServiceProcess, samples: Sequence[Sample]) -> None:
    for sample in samples:
        response = httpx.post(f"{server.base_url}/classify", content=sample.png, headers=PNG, timeout=60)
        if response.status_code != 200 or response.json().get("label") != sample.label:
            raise RuntimeError(f"{sample.name}: {response.status_code} {response.text[:200]}")


def the_tritonserver() -> psutil.Process:
    """The tritonserver of the one server running (a grandchild of this process)."""
    found = [p for p in psutil.Process().children(recursive=True) if p.name() == "tritonserver"]
    if len(found) != 1:
        raise RuntimeError(f"expected one tritonserver under the server, found {found}")
    return found[0]


async def _recover(url: str, samples: Sequence[Sample], triton: psutil.Process) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    errors = wrong = 0
    slowest_failure = 0.0
    first_ok: float | None = None
    last_failure = 0.0
    ready_at: float | None = None
    killed_at = 0.0
    done = asyncio.Event()
    limits = httpx.Limits(max_connections=RECOVERY_CLIENTS + 1)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, limits=limits) as client:

        async def one_client(index: int) -> None:
            nonlocal errors, wrong, slowest_failure, first_ok, last_failure
            n = index
            while not done.is_set():
                sample = samples[n % len(samples)]
                n += 1
                started = time.monotonic()
                try:
                    response = await client.post(f"{url}/classify", content=sample.png, headers=PNG)
                except httpx.HTTPError:
                    errors += 1
                    await asyncio.sleep(0.05)
                    continue
                ok = response.status_code == 200
                if ok and response.json().get("label") != sample.label:
                    wrong += 1
                if killed_at and started > killed_at:
                    if ok and first_ok is None:
                        first_ok = time.monotonic()
                    elif not ok:
                        last_failure = time.monotonic()
                        statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
                if not ok:
                    slowest_failure = max(slowest_failure, time.monotonic() - started)
                    await asyncio.sleep(0.05)  # told 503: a client backs off, it does not spin

        async def readyz() -> None:
            nonlocal ready_at
            while ready_at is None:
                await asyncio.sleep(0.1)
                if killed_at and time.monotonic() > killed_at + 0.5:
                    try:
                        if (await client.get(f"{url}/readyz")).status_code == 200:
                            ready_at = time.monotonic()
                    except httpx.HTTPError:
                        pass

        tasks = [asyncio.create_task(one_client(i)) for i in range(RECOVERY_CLIENTS)]
        tasks.append(asyncio.create_task(readyz()))
        await asyncio.sleep(2.0)  # traffic flows before the kill
        killed_at = time.monotonic()
        triton.send_signal(signal.SIGKILL)
        deadline = killed_at + RECOVERY_TIMEOUT
        while (first_ok is None or ready_at is None) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        # Each worker reconnects on its own (within a second): keep the traffic on to see the last
        # failure, once every worker is back.
        settled = time.monotonic() + SETTLE_S
        while time.monotonic() < min(settled, deadline):
            await asyncio.sleep(0.1)
        done.set()
        await asyncio.gather(*tasks[:-1])
        tasks[-1].cancel()
    if first_ok is None or ready_at is None:
        raise RuntimeError(f"traffic did not recover within {RECOVERY_TIMEOUT:.0f} s of the kill")
    return {
        "first_ok_s": first_ok - killed_at,
        "last_failure_s": max(last_failure - killed_at, 0.0),
        "readyz_s": ready_at - killed_at,
        "statuses": statuses,
        "transport_errors": errors,
        "slowest_failure_ms": slowest_failure * 1000,
        "wrong": wrong,
    }


def measure_recovery(server: ServiceProcess, samples: Sequence[Sample]) -> Recovery:
    triton = the_tritonserver()
    reported_before = len(_restart_reports(server))
    seen = asyncio.run(_recover(server.base_url, samples, triton))
    deadline = time.monotonic() + 30
    while len(_restart_reports(server)) <= reported_before and time.monotonic() < deadline:
        time.sleep(0.2)
    reports = _restart_reports(server)
    restart = reports[-1] if len(reports) > reported_before else None
    text = server.log_path.read_text(errors="replace")
    delays = re.findall(r"restarting it on the same ports in ([\d.]+) s", text)
    return Recovery(restart_s=restart, restart_delay_s=float(delays[-1]) if delays else None, **seen)


def _restart_reports(server: ServiceProcess) -> list[float]:
    text = server.log_path.read_text(errors="replace")
    return [float(m) for m in re.findall(r"tritonserver is back \(pid \d+\) ([\d.]+) s after it died", text)]


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {
        "cpu": cpu,
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "load average at start": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def render(data: dict[str, Any]) -> str:
    lines = [
        "# Production serving benchmark",
        "",
        f"`python benchmarks/production.py{' --quick' if data['quick'] else ''}` on {data['started']}; "
        f"{data['machine']['cpus']} CPUs ({data['machine']['cpu']}), load average at start "
        f"{data['machine']['load average at start']}. The machine is shared: one run's figures.",
        "",
        f"`/classify` (PNG in, JSON out) at concurrency {data['concurrency']}, {data['duration']:g} s "
        "per case after a warm-up, wrk with every answer's label checked; access log off.",
        "",
        "| API workers | req/s | p50 ms | p99 ms | errors | wrong answers | load generator CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in data["throughput"]:
        lines.append(
            f"| {row['workers']} | {row['rps']:.0f} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | "
            f"{row['errors']} | {row['wrong']} | {row['client_cpu']:.2f} |"
        )
    if data["recoveries"]:
        lines += [
            "",
            f"Recovery after `kill -9` of tritonserver ({data['recovery_workers']} workers, "
            f"{RECOVERY_CLIENTS} clients):",
            "",
            "| kill | tritonserver back after (supervisor) | first right answer after | /readyz 200 after "
            "| last failure after | failed answers | slowest failure | timeouts/dropped |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for i, r in enumerate(data["recoveries"], 1):
            restart = "?" if r["restart_s"] is None else f"{r['restart_s']:.1f} s"
            if r["restart_delay_s"] is not None:
                restart += f" ({r['restart_delay_s']:.1f} s backoff)"
            statuses = ", ".join(f"{n}x {s}" for s, n in sorted(r["statuses"].items()))
            lines.append(
                f"| {i} | {restart} | {r['first_ok_s']:.1f} s | {r['readyz_s']:.1f} s | "
                f"{r['last_failure_s']:.1f} s | {statuses} | "
                f"{r['slowest_failure_ms']:.0f} ms | {r['transport_errors']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wrk_executable()  # fail before anything starts when the load generator is missing
    samples = load_samples()
    probe = next(s for s in samples if s.label == 3)
    work_dir = make_work_dir()
    data: dict[str, Any] = {
        "quick": args.quick,
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine(),
        "concurrency": args.concurrency,
        "duration": args.duration,
        "throughput": [],
        "recoveries": [],
        "recovery_workers": max(args.workers),
    }
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    try:
        for workers in args.workers:
            log(f"starting the production server with {workers} worker(s)")
            server = start_server(workers, args.quick, work_dir)
            try:
                check_answers(server, samples)
                result: LoadResult = http_load(
                    f"{server.base_url}/classify",
                    probe.png,
                    "image/png",
                    concurrency=args.concurrency,
                    duration=args.duration,
                    warmup=args.warmup,
                    expected_label=probe.label,
                )
                data["throughput"].append({"workers": workers, **result.to_dict()})
                log(f"{workers} worker(s): {result.rps:.0f} req/s, p99 {result.p99_ms:.1f} ms")
                if workers == max(args.workers):
                    for kill in range(args.kills):
                        if kill:
                            log(f"waiting {args.kill_interval:.0f} s before the next kill")
                            time.sleep(args.kill_interval)
                        recovery = measure_recovery(server, samples)
                        data["recoveries"].append(attrs.asdict(recovery) | {"clean": recovery.clean})
                        log(f"kill {kill + 1}: first right answer {recovery.first_ok_s:.1f} s after the kill")
                        check_answers(server, samples)
            except BaseException:
                log(f"the server's log ends with:\n{server.log_tail()}")
                raise
            finally:
                server.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(work_dir, ignore_errors=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(data))
    args.output.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    print(render(data))
    log(f"wrote {args.output} and {args.output.with_suffix('.json').name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
