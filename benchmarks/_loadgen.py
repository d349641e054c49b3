"""The load generator: closed-loop clients in a process apart from the systems measured.

Two front ends, one result type:

- `http_load(url, body, ...)`: wrk (C, epoll; Debian's `wrk` package) with benchmarks/loadgen.lua,
  which checks every answer's label. One wrk thread drives all connections: it keeps the
  generator's share of the 2 cores small (`LoadResult.client_cpu` reports it for every run).
- `grpc_load(mode, grpc_url, tensor, ...)`: a Python asyncio process (`python -m
  benchmarks._loadgen`) whose tasks call Triton with `tritonclient.grpc.aio` (mode "raw") or with
  a runnerkit Runner attached to the server (mode "runner"). Here the client is the system measured.

Both run `concurrency` clients, each sending its next request when its answer arrives, for
`duration` seconds after `warmup` seconds, and count transport errors, error statuses and wrong
labels separately.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import numpy as np

LUA_SCRIPT = Path(__file__).with_name("loadgen.lua")
WRK_MARKER = "WRK_RESULT "
GRPC_MARKER = "GRPC_RESULT "
GRPC_MODES = ("raw", "runner")


class LoadGeneratorError(RuntimeError):
    """The load generator could not run or did not report."""


@attrs.frozen
class LoadResult:
    """One closed-loop run: what came back in `duration_s` seconds at `concurrency`."""

    concurrency: int
    requests: int  # answers received in the window (errors included)
    duration_s: float
    errors: int  # transport errors, timeouts and non-2xx statuses
    wrong: int  # successful answers whose label is not the sample's
    p50_ms: float
    p95_ms: float
    p99_ms: float
    client_cpu: float  # the load generator's CPU time per wall second (1.0 = one core)

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self) | {"rps": self.rps}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wrk_executable() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise LoadGeneratorError(
            "wrk is not installed: the benchmark's HTTP load generator is Debian's `wrk` package "
            "(`apt-get install wrk`, or `make system-deps`)"
        )
    return found


def wrk_version() -> str:
    proc = subprocess.run([wrk_executable(), "--version"], capture_output=True, text=True)
    match = re.search(r"wrk\s+(\S+)", proc.stdout + proc.stderr)
    return match.group(1) if match else "unknown"


def _whole_seconds(seconds: float) -> int:
    # wrk's -d takes whole seconds
    return max(1, round(seconds))


def http_load(
    url: str,
    body: bytes,
    content_type: str,
    *,
    concurrency: int,
    duration: float,
    expected_label: int,
    check: str = "label",
    warmup: float = 0.0,
    timeout: float = 10.0,
) -> LoadResult:
    """POST `body` to `url` from `concurrency` keep-alive connections with wrk.

    `check` is "label" (a JSON answer with a "label" field) or "triton-logits" (Triton's v2 JSON
    infer response: the label is the argmax of the first output).
    """
    if check not in ("label", "triton-logits"):
        raise ValueError(f"check must be 'label' or 'triton-logits', got {check!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    with tempfile.TemporaryDirectory(prefix="runnerkit-bench-") as tmp:
        body_file = Path(tmp) / "body"
        body_file.write_bytes(body)
        if warmup > 0:
            _run_wrk(
                url,
                body_file,
                content_type,
                concurrency,
                _whole_seconds(warmup),
                expected_label,
                check,
                timeout,
            )
        before = _children_cpu()
        started = time.perf_counter()
        report = _run_wrk(
            url,
            body_file,
            content_type,
            concurrency,
            _whole_seconds(duration),
            expected_label,
            check,
            timeout,
        )
        wall = time.perf_counter() - started
        cpu = _children_cpu() - before
    errors = sum(int(report[k]) for k in report if k.startswith("errors_"))
    return LoadResult(
        concurrency=concurrency,
        requests=int(report["requests"]),
        duration_s=report["duration_us"] / 1e6,
        errors=errors,
        wrong=int(report["wrong"]),
        p50_ms=report["p50_us"] / 1e3,
        p95_ms=report["p95_us"] / 1e3,
        p99_ms=report["p99_us"] / 1e3,
        client_cpu=cpu / wall if wall > 0 else 0.0,
    )


def _run_wrk(
    url: str,
    body_file: Path,
    content_type: str,
    concurrency: int,
    seconds: int,
    expected_label: int,
    check: str,
    timeout: float,
) -> dict[str, Any]:
    cmd = [
        wrk_executable(),
        "-t1",
        f"-c{concurrency}",
        f"-d{seconds}s",
        f"--timeout={timeout:g}s",
        "-s",
        str(LUA_SCRIPT),
        url,
        "--",
        str(body_file),
        content_type,
        check,
        str(expected_label),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + timeout + 30)
    except subprocess.TimeoutExpired as exc:
        raise LoadGeneratorError(f"wrk did not finish: {' '.join(cmd)}") from exc
    for line in proc.stdout.splitlines():
        if line.startswith(WRK_MARKER):
            return dict(json.loads(line[len(WRK_MARKER) :]))
    raise LoadGeneratorError(
        f"wrk reported no result (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    )


def grpc_load(
    mode: str,
    grpc_url: str,
    tensor: np.ndarray,
    *,
    concurrency: int,
    duration: float,
    expected_label: int,
    warmup: float = 0.0,
    model: str = "digits_onnx",
    input_name: str = "input",
    output_name: str = "logits",
    timeout: float = 10.0,
) -> LoadResult:
    """Call `model` at `grpc_url` from `concurrency` asyncio tasks in a separate Python process.

    mode "raw": tritonclient.grpc.aio, one InferInput built per call (what any Python layer must
    do at least); mode "runner": `await runner.<model>.async_run(tensor)` of a runnerkit Runner
    attached to the same server.
    """
    if mode not in GRPC_MODES:
        raise ValueError(f"mode must be one of {GRPC_MODES}, got {mode!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    with tempfile.TemporaryDirectory(prefix="runnerkit-bench-") as tmp:
        tensor_file = Path(tmp) / "tensor.npy"
        np.save(tensor_file, tensor)
        cmd = [
            sys.executable,
            "-m",
            "benchmarks._loadgen",
            mode,
            grpc_url,
            str(tensor_file),
            "--concurrency",
            str(concurrency),
            "--duration",
            str(duration),
            "--warmup",
            str(warmup),
            "--expected-label",
            str(expected_label),
            "--model",
            model,
            "--input",
            input_name,
            "--output",
            output_name,
            "--timeout",
            str(timeout),
        ]
        env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, env=env, timeout=warmup + duration + timeout + 120
            )
        except subprocess.TimeoutExpired as exc:
            raise LoadGeneratorError(f"the gRPC load generator did not finish: {' '.join(cmd)}") from exc
    for line in proc.stdout.splitlines():
        if line.startswith(GRPC_MARKER):
            return LoadResult(**json.loads(line[len(GRPC_MARKER) :]))
    raise LoadGeneratorError(
        f"the gRPC load generator reported no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    )


# -- the gRPC load generator process -------------------------------------------------------------


async def _grpc_main(args: argparse.Namespace) -> dict[str, Any]:
    tensor = np.load(args.tensor)
    call, close = await _make_call(args, tensor)
    try:
        await call()  # connect and, for the runner, fetch the model's configuration
        return await _closed_loop(call, args)
    finally:
        await close()


async def _make_call(args: argparse.Namespace, tensor: np.ndarray) -> tuple[Any, Any]:
    if args.mode == "raw":
        import tritonclient.grpc.aio as grpcclient

        client = grpcclient.InferenceServerClient(args.url)
        datatype = "FP32" if tensor.dtype == np.float32 else "FP64"

        async def raw_call() -> np.ndarray:
            infer_input = grpcclient.InferInput(args.input, list(tensor.shape), datatype)
            infer_input.set_data_from_numpy(tensor)
            result = await client.infer(args.model, [infer_input], client_timeout=args.timeout)
            return result.as_numpy(args.output)

        return raw_call, client.close

    from runnerkit.triton import Runner

    runner = Runner("bench", url=args.url, timeout=args.timeout)
    await runner.start()
    model = runner.models[args.model]

    async def runner_call() -> np.ndarray:
        output = (await model.async_run(tensor)).as_numpy(args.output)
        if output is None:
            raise LoadGeneratorError(f"the answer has no output {args.output!r}")
        return output

    return runner_call, runner.stop


async def _closed_loop(call: Any, args: argparse.Namespace) -> dict[str, Any]:
    loop_start = time.perf_counter()
    start = loop_start + args.warmup
    end = start + args.duration
    latencies: list[float] = []
    counts = {"errors": 0, "wrong": 0}

    async def client() -> None:
        while True:
            sent = time.perf_counter()
            if sent >= end:
                return
            error = wrong = False
            try:
                output = await call()
                wrong = int(np.argmax(output[0])) != args.expected_label
            except Exception:
                error = True
            received = time.perf_counter()
            if sent >= start and received < end:
                latencies.append(received - sent)
                counts["errors"] += error
                counts["wrong"] += wrong

    async def meter() -> float:
        # the generator's own CPU (all its threads) over the measured window only
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        cpu_start = time.process_time()
        await asyncio.sleep(max(0.0, end - time.perf_counter()))
        return (time.process_time() - cpu_start) / args.duration

    *_, client_cpu = await asyncio.gather(*(client() for _ in range(args.concurrency)), meter())
    ms = np.asarray(latencies) * 1e3 if latencies else np.zeros(1)
    p50, p95, p99 = (float(v) for v in np.percentile(ms, [50, 95, 99]))
    return {
        "concurrency": args.concurrency,
        "requests": len(latencies),
        "duration_s": args.duration,
        "errors": counts["errors"],
        "wrong": counts["wrong"],
        "p50_ms": p50,
        "p95_ms": p95,
        "p99_ms": p99,
        "client_cpu": client_cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._loadgen", description=__doc__)
    parser.add_argument("mode", choices=GRPC_MODES)
    parser.add_argument("url", help="Triton's gRPC address, host:port")
    parser.add_argument("tensor", help=".npy file with the input batch")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--warmup", type=float, default=0.0)
    parser.add_argument("--expected-label", type=int, required=True)
    parser.add_argument("--model", default="digits_onnx")
    parser.add_argument("--input", default="input")
    parser.add_argument("--output", default="logits")
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args(argv)
    report = asyncio.run(_grpc_main(args))
    print(GRPC_MARKER + json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
