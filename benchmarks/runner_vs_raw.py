"""`await runner.digits_onnx.async_run(x)` versus raw `tritonclient.grpc.aio` `infer` on the same input.

    .venv/bin/python benchmarks/runner_vs_raw.py            # 12 rounds x 2.5 s per side and concurrency
    .venv/bin/python benchmarks/runner_vs_raw.py --quick    # a few seconds: does the harness work
    .venv/bin/python benchmarks/runner_vs_raw.py --json out.json --rounds 10 --duration 3

One tritonserver (launched by the runner, on the example repository) serves both sides, in one
process and one event loop: the client is the thing measured. For each concurrency (1 and 16 by
default) the sides take turns in rounds, A B then B A, so drift on a busy machine hits both
alike. Each turn is a closed loop: `concurrency` tasks each send the next request when the
answer arrives; after a short warm-up, completed requests and their latencies are counted.

- runner: `runner.digits_onnx.async_run(x)` (validation against the cached config, request
  building, the result wrapped as an InferResult), with the runner's defaults: digits_onnx has
  dynamic batching, so concurrent calls are coalesced into batched requests (micro-batching);
- runner_unbatched: the same with `micro_batching=False`, one request per call as raw sends
  (the per-call cost of the runner's code against tritonclient's);
- raw: tritonclient.grpc.aio.InferenceServerClient.infer("digits_onnx", [InferInput]), an
  InferInput built per call as tritonclient's examples do.

Both ask for all outputs and both answers are compared once before any load. Prints both
throughputs, p50/p99 latencies, the client's own CPU time per request (this process: the cost of
the client code, less sensitive than throughput to other load on a shared machine) and the
ratio runner/raw (target: at least 0.95).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcclient_aio

from runnerkit.triton import Runner

REPO_ROOT = Path(__file__).resolve().parent.parent
MODEL = "digits_onnx"
SIDES = ("runner", "raw", "runner_unbatched")
TARGET_RATIO = 0.95

Call = Callable[[], Awaitable[np.ndarray]]


@attrs.frozen
class Turn:
    """One side's closed loop at one concurrency, in one round."""

    side: str
    concurrency: int
    round: int
    requests: int
    errors: int
    duration_s: float
    cpu_s: float  # this process's CPU time over the whole turn (warm-up included)
    completed: int  # requests answered over the whole turn (warm-up included)
    latencies_ms: tuple[float, ...] = attrs.field(repr=False)

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s


@attrs.frozen
class LoopResult:
    errors: int  # in the measured window
    latencies_ms: list[float]  # of the requests started in the measured window
    completed: int  # all answers, warm-up included
    cpu_s: float  # this process's CPU time for the whole loop


async def closed_loop(call: Call, concurrency: int, warmup: float, duration: float) -> LoopResult:
    """`concurrency` tasks, each sending its next request when its answer arrives."""
    latencies: list[float] = []
    errors = 0
    completed = 0
    cpu_start = time.process_time()
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + duration

    async def client() -> None:
        nonlocal errors, completed
        while (sent := time.perf_counter()) < stop_at:
            try:
                await call()
            except Exception:
                if sent >= measure_from:
                    errors += 1
                continue
            completed += 1
            if sent >= measure_from:
                latencies.append((time.perf_counter() - sent) * 1000)

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return LoopResult(errors, latencies, completed, time.process_time() - cpu_start)


def summarize(turns: Sequence[Turn]) -> dict[str, Any]:
    latencies = np.array([ms for t in turns for ms in t.latencies_ms]) if turns else np.zeros(0)
    requests = sum(t.requests for t in turns)
    duration = sum(t.duration_s for t in turns)
    completed = sum(t.completed for t in turns)
    return {
        "requests": requests,
        "errors": sum(t.errors for t in turns),
        "rps": requests / duration if duration else 0.0,
        "client_cpu_us": sum(t.cpu_s for t in turns) / completed * 1e6 if completed else None,
        "p50_ms": float(np.percentile(latencies, 50)) if latencies.size else None,
        "p99_ms": float(np.percentile(latencies, 99)) if latencies.size else None,
        "rounds": len(turns),
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    x = np.random.default_rng(0).random((1, 64), dtype=np.float32)
    load_before = os.getloadavg()
    async with Runner("bench", model_repository=args.model_repository, tritonserver_type="grpc") as runner:
        raw_client = grpcclient_aio.InferenceServerClient(runner.addresses["grpc"])
        unbatched = Runner("bench_unbatched", url=runner.addresses["grpc"], micro_batching=False)
        await unbatched.start()
        model = getattr(runner, MODEL)
        unbatched_model = getattr(unbatched, MODEL)
        try:

            async def runner_call() -> np.ndarray:
                return (await model.async_run(x)).as_numpy("logits")

            async def unbatched_call() -> np.ndarray:
                return (await unbatched_model.async_run(x)).as_numpy("logits")

            async def raw_call() -> np.ndarray:
                infer_input = grpcclient.InferInput("input", [1, 64], "FP32")
                infer_input.set_data_from_numpy(x)
                return (await raw_client.infer(MODEL, [infer_input])).as_numpy("logits")

            calls: dict[str, Call] = {
                "runner": runner_call,
                "raw": raw_call,
                "runner_unbatched": unbatched_call,
            }
            answers = {side: await call() for side, call in calls.items()}
            if any(not np.array_equal(answer, answers["raw"]) for answer in answers.values()):
                raise SystemExit(f"the sides disagree: {answers}")

            turns: list[Turn] = []
            for concurrency in args.concurrency:
                for round_ in range(args.rounds):
                    shift = round_ % len(SIDES)  # each side first in turn
                    order = SIDES[shift:] + SIDES[:shift]
                    for side in order:
                        loop = await closed_loop(calls[side], concurrency, args.warmup, args.duration)
                        turns.append(
                            Turn(
                                side,
                                concurrency,
                                round_,
                                len(loop.latencies_ms),
                                loop.errors,
                                args.duration,
                                loop.cpu_s,
                                loop.completed,
                                tuple(loop.latencies_ms),
                            )
                        )
        finally:
            await raw_client.close()
            await unbatched.stop()
    load_after = os.getloadavg()

    results = []
    for concurrency in args.concurrency:
        row: dict[str, Any] = {"concurrency": concurrency}
        for side in SIDES:
            row[side] = summarize([t for t in turns if t.side == side and t.concurrency == concurrency])
        row["ratio"] = row["runner"]["rps"] / row["raw"]["rps"] if row["raw"]["rps"] else None
        unbatched_rps = row["runner_unbatched"]["rps"]
        row["ratio_unbatched"] = unbatched_rps / row["raw"]["rps"] if row["raw"]["rps"] else None
        per_round = [
            runner_turn.rps / raw_turn.rps
            for runner_turn, raw_turn in zip(
                [t for t in turns if t.side == "runner" and t.concurrency == concurrency],
                [t for t in turns if t.side == "raw" and t.concurrency == concurrency],
            )
            if raw_turn.rps
        ]
        row["ratio_per_round"] = per_round
        row["ratio_median"] = statistics.median(per_round) if per_round else None
        results.append(row)
    return {
        "model": MODEL,
        "rounds": args.rounds,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "cpu_count": os.cpu_count(),
        "load_average_before": load_before[0],
        "load_average_after": load_after[0],
        "target_ratio": TARGET_RATIO,
        "results": results,
    }


def report(data: dict[str, Any]) -> str:
    lines = [
        f"runnerkit Runner vs raw tritonclient.grpc.aio on {data['model']} "
        f"({data['rounds']} rounds x {data['duration_s']} s per side and concurrency, "
        f"after {data['warmup_s']} s warm-up each)",
        "",
        "| concurrency | side | req/s | p50 ms | p99 ms | client CPU us/req | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in data["results"]:
        for side in SIDES:
            s = row[side]
            p50 = "-" if s["p50_ms"] is None else f"{s['p50_ms']:.2f}"
            p99 = "-" if s["p99_ms"] is None else f"{s['p99_ms']:.2f}"
            cpu = "-" if s["client_cpu_us"] is None else f"{s['client_cpu_us']:.0f}"
            lines.append(
                f"| {row['concurrency']} | {side} | {s['rps']:.0f} | {p50} | {p99} | {cpu} | {s['errors']} |"
            )
    lines.append("")
    for row in data["results"]:
        ratio = "n/a" if row["ratio"] is None else f"{row['ratio']:.3f}"
        median = "n/a" if row["ratio_median"] is None else f"{row['ratio_median']:.3f}"
        verdict = "" if row["ratio"] is None else (" (meets" if row["ratio"] >= TARGET_RATIO else " (below")
        verdict += f" the {TARGET_RATIO} target)" if verdict else ""
        unbatched = "n/a" if row["ratio_unbatched"] is None else f"{row['ratio_unbatched']:.3f}"
        lines.append(
            f"concurrency {row['concurrency']}: runner/raw throughput = {ratio}{verdict}; "
            f"median of per-round ratios {median}; without micro-batching {unbatched}"
        )
    cpus = data["cpu_count"] or 1
    busy = max(data["load_average_before"], data["load_average_after"]) > cpus / 2
    lines.append(
        f"load average {data['load_average_before']:.2f} -> {data['load_average_after']:.2f} on {cpus} CPUs"
        + (": the machine was busy, figures are noisy" if busy else "")
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 0.5 s: checks the harness")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per concurrency (default 12)")
    parser.add_argument(
        "--duration", type=float, default=None, help="measured seconds per turn (default 2.5)"
    )
    parser.add_argument("--warmup", type=float, default=None, help="warm-up seconds per turn (default 0.5)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--model-repository", type=Path, default=REPO_ROOT / "model_repository")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    quick = {"rounds": 2, "duration": 0.5, "warmup": 0.2}
    full = {"rounds": 12, "duration": 2.5, "warmup": 0.5}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.rounds < 1 or args.duration <= 0 or args.warmup < 0 or min(args.concurrency) < 1:
        parser.error("--rounds and --concurrency must be >= 1, --duration > 0, --warmup >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    data = asyncio.run(measure(args))
    print(report(data))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
