"""/classify over HTTP versus the same preprocessed tensor sent straight to Triton.

    .venv/bin/python benchmarks/service_vs_triton.py            # 32 clients, 20 s per side
    .venv/bin/python benchmarks/service_vs_triton.py --quick    # a few seconds: does it work

One tritonserver on the example repository (launched here, as `runnerkit serve` does) serves
both sides:
- service: `runnerkit serve services/digits.py:svc --production --workers N --no-access-log`
  (N = --workers, default 1) attached to it; clients POST samples/digit_3.png to /classify
  (decode, preprocess, digits_onnx, postprocess, JSON);
- triton: clients call digits_onnx with tritonclient.grpc.aio, sending the tensor the service's
  own `preprocess` makes of the same image (the limit the service can approach).
Each side's load comes from a separate process (`--loadgen`) of closed-loop asyncio clients
(aiohttp for HTTP); its own CPU use is reported so that a saturated generator shows. Every
answer's label is checked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = REPO_ROOT / "samples" / "digit_3.png"
SAMPLE_LABEL = 3
RESULT_MARKER = "LOADGEN_RESULT "


# -- the load generator (runs in its own process) ------------------------------------------------


async def _closed_loop(call: Any, concurrency: int, warmup: float, duration: float) -> dict[str, Any]:
    """`concurrency` clients, each sending its next request when its answer arrives."""
    latencies: list[float] = []
    counts = {"errors": 0, "wrong": 0}
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + duration

    async def client() -> None:
        while (now := time.perf_counter()) < stop_at:
            try:
                ok = await call()
            except Exception:
                ok = None
            done = time.perf_counter()
            if now >= measure_from:
                latencies.append(done - now)
                if ok is None:
                    counts["errors"] += 1
                elif not ok:
                    counts["wrong"] += 1

    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(client() for _ in range(concurrency)))
    usage_after = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - start
    cpu = (usage_after.ru_utime + usage_after.ru_stime) - (usage_before.ru_utime + usage_before.ru_stime)
    ms = np.array(latencies) * 1000 if latencies else np.zeros(1)
    return {
        "requests": len(latencies),
        "rps": len(latencies) / duration,
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "errors": counts["errors"],
        "wrong": counts["wrong"],
        "client_cpu": cpu / wall,
        "concurrency": concurrency,
        "duration_s": duration,
    }


async def _http_load(args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    body = SAMPLE.read_bytes()
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def call() -> bool | None:
            async with session.post(args.url, data=body, headers={"content-type": "image/png"}) as response:
                if response.status != 200:
                    await response.read()
                    return None
                return bool((await response.json())["label"] == SAMPLE_LABEL)

        return await _closed_loop(call, args.concurrency, args.warmup, args.duration)


async def _grpc_load(args: argparse.Namespace) -> dict[str, Any]:
    import tritonclient.grpc.aio as grpc_aio
    from tritonclient.grpc import InferInput, InferRequestedOutput

    tensor = np.load(args.tensor)
    client = grpc_aio.InferenceServerClient(args.url)
    try:

        async def call() -> bool:
            infer_input = InferInput("input", list(tensor.shape), "FP32")
            infer_input.set_data_from_numpy(tensor)
            result = await client.infer(
                "digits_onnx", [infer_input], outputs=[InferRequestedOutput("logits")]
            )
            return int(result.as_numpy("logits")[0].argmax()) == SAMPLE_LABEL

        return await _closed_loop(call, args.concurrency, args.warmup, args.duration)
    finally:
        await client.close()


def loadgen_main(args: argparse.Namespace) -> int:
    run = _http_load if args.loadgen == "http" else _grpc_load
    result = asyncio.run(run(args))
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


def run_loadgen(kind: str, url: str, args: argparse.Namespace, tensor: Path | None = None) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--loadgen",
        kind,
        "--url",
        url,
        "--concurrency",
        str(args.concurrency),
        "--warmup",
        str(args.warmup),
        "--duration",
        str(args.duration),
    ]
    if tensor is not None:
        command += ["--tensor", str(tensor)]
    limit = args.warmup + args.duration + 120
    done = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARKER):
            return dict(json.loads(line[len(RESULT_MARKER) :]))
    raise RuntimeError(f"the {kind} load generator failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


# -- the benchmark ----------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(REPO_ROOT))
    from PIL import Image

    from runnerkit.serving import load_service
    from runnerkit.testing import ServeProcess
    from runnerkit.triton._runner import ENV_SUPERVISED_ADDRESSES

    target = load_service("services/digits.py:svc", working_dir=REPO_ROOT)
    runner = target.service.runners[0]
    preprocess = sys.modules[target.import_string.split(":")[0]].preprocess
    tensor_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"runnerkit-bench-{os.getpid()}.npy"
    np.save(tensor_path, preprocess(Image.open(SAMPLE)))
    runner.start_sync()
    try:
        env = dict(os.environ) | {ENV_SUPERVISED_ADDRESSES: json.dumps({runner.name: dict(runner.addresses)})}
        serve_args = ["--production", "--workers", str(args.workers), "--no-access-log"]
        serve_args += ["--host", "127.0.0.1"]
        with ServeProcess("services/digits.py:svc", *serve_args, cwd=REPO_ROOT, env=env) as served:
            service = run_loadgen("http", f"{served.url}/classify", args)
        triton = run_loadgen("grpc", runner.addresses["grpc"], args, tensor_path)
    finally:
        runner.stop_sync()
        tensor_path.unlink(missing_ok=True)
    return {
        "service": service,
        "triton": triton,
        "throughput_ratio": service["rps"] / triton["rps"] if triton["rps"] else 0.0,
        "p50_ratio": service["p50_ms"] / triton["p50_ms"] if triton["p50_ms"] else 0.0,
        "cpus": os.cpu_count(),
        "workers": args.workers,
    }


def report(results: dict[str, Any]) -> str:
    rows = [f"{'':26} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7} {'wrong':>6} {'client CPU':>11}"]
    names = {"service": "service /classify (HTTP)", "triton": "Triton direct (gRPC)"}
    for key, name in names.items():
        r = results[key]
        rows.append(
            f"{name:26} {r['rps']:9.1f} {r['p50_ms']:9.2f} {r['p99_ms']:9.2f} {r['errors']:7d} "
            f"{r['wrong']:6d} {r['client_cpu']:10.0%}"
        )
    concurrency = results["service"]["concurrency"]
    rows.append(
        f"service / Triton: throughput {results['throughput_ratio']:.2f}x, p50 latency "
        f"{results['p50_ratio']:.2f}x (concurrency {concurrency}, {results['workers']} API worker(s), "
        f"{results['cpus']} CPUs)"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a short run that only shows it works")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="the service's API workers (default 1)")
    parser.add_argument("--duration", type=float, default=None, help="measured seconds per side (default 20)")
    parser.add_argument("--warmup", type=float, default=None, help="unmeasured seconds first (default 3)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--loadgen", choices=("http", "grpc"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tensor", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 2.0 if args.quick else 20.0
    if args.warmup is None:
        args.warmup = 0.5 if args.quick else 3.0
    if args.loadgen:
        return loadgen_main(args)
    results = measure(args)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
