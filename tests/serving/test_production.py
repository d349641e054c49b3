"""`runnerkit serve services/digits.py:svc --production --workers 2`: load, metrics, failures.

One server for the module (tritonserver with the example's models takes a while to start); each
test leaves it serving.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator, Sequence

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from .conftest import (
    EXAMPLE,
    LoadStats,
    ProductionServer,
    Sample,
    alive,
    production_server,
    run_load,
    triton_ports,
    wait_until,
)

LOAD_SECONDS = 20.0
CONCURRENCY = 32


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProductionServer]:
    log = tmp_path_factory.mktemp("production") / "serve.log"
    with production_server(EXAMPLE, ["--workers", "2"], log) as server:
        server.wait_ready()
        yield server


def classify(url: str, sample: Sample, timeout: float = 30.0) -> httpx.Response:
    return httpx.post(
        f"{url}/classify", content=sample.png, headers={"Content-Type": "image/png"}, timeout=timeout
    )


def assert_all_right(stats: LoadStats) -> None:
    assert stats.wrong == [], stats.wrong[:5]
    assert stats.statuses == {}, stats.statuses
    assert stats.transport_errors == [], stats.transport_errors[:5]
    assert stats.ok == stats.total > 0


def test_two_workers_serve_32_concurrent_clients_without_an_error(
    server: ProductionServer, samples: Sequence[Sample]
) -> None:
    workers = server.worker_pids()
    assert len(workers) == 2, server.tree()
    assert len(server.triton_pids()) == 1  # one tritonserver for the runner, not one per worker
    log_before = server.log_path.stat().st_size

    stats = run_load(f"{server.url}/classify", samples, concurrency=CONCURRENCY, duration=LOAD_SECONDS)

    assert_all_right(stats)
    print(f"\n{stats.ok} answers in {LOAD_SECONDS:.0f} s from {CONCURRENCY} clients, all right")
    # One log stream: each access line names the worker that served it, and both served.
    new_log = server.log_path.read_bytes()[log_before:].decode(errors="replace")
    for pid in workers:
        assert re.search(rf"\[worker {pid}\] uvicorn\.access: .*POST /classify", new_log), pid


def _api_count(text: str, api: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "runnerkit_requests_total" and sample.labels.get("api") == api:
                if sample.labels.get("status") == "200":
                    total += sample.value
    return total


def _triton_count(text: str, model: str) -> float:
    # Inferences (rows), not requests: the runner may coalesce concurrent calls into one request.
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        if family.name == "nv_inference_count"
        for s in family.samples
        if s.labels.get("model") == model
    )


def test_metrics_sum_over_workers_and_include_tritonservers(
    server: ProductionServer, samples: Sequence[Sample]
) -> None:
    before = httpx.get(f"{server.url}/metrics", timeout=30).text
    log_before = server.log_path.stat().st_size
    requests = 40

    def send(batch: Sequence[Sample]) -> None:
        # a client (and connection) per thread: the kernel hands connections to both workers
        with httpx.Client(timeout=30) as client:
            for sample in batch:
                response = client.post(
                    f"{server.url}/classify", content=sample.png, headers={"Content-Type": "image/png"}
                )
                assert response.status_code == 200 and response.json()["label"] == sample.label

    batches = [[samples[(i + j) % len(samples)] for j in range(requests // 8)] for i in range(8)]
    threads = [threading.Thread(target=send, args=(batch,)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    new_log = server.log_path.read_bytes()[log_before:].decode(errors="replace")
    served_by = set(re.findall(r"\[worker (\d+)\] uvicorn\.access: .*POST /classify", new_log))
    assert len(served_by) == 2, "the requests did not reach both workers; the sum would prove nothing"

    # Several scrapes, on new connections (so either worker answers): each sees every request.
    for _ in range(4):
        after = httpx.get(f"{server.url}/metrics", timeout=30).text
        assert _api_count(after, "classify") - _api_count(before, "classify") == requests
        assert _triton_count(after, "digits_onnx") - _triton_count(before, "digits_onnx") == requests
        assert re.search(r'^nv_inference_request_success\{runner="triton_runner",', after, re.M)


def test_a_dead_api_worker_is_replaced(server: ProductionServer, samples: Sequence[Sample]) -> None:
    old = server.worker_pids()
    assert len(old) == 2
    os.kill(old[0], signal.SIGKILL)
    wait_until(lambda: not alive(old[0]), 10, "the worker to die")
    wait_until(lambda: len(set(server.worker_pids()) - set(old)) == 1, 60, "a new worker")
    assert len(server.worker_pids()) == 2
    [new] = set(server.worker_pids()) - set(old)
    wait_until(lambda: new in server.started_workers(), 60, "the new worker to take requests")
    for sample in samples:
        response = classify(server.url, sample)
        assert response.status_code == 200 and response.json()["label"] == sample.label
    for pid in server.worker_pids():
        assert_attached_before_taking_requests(server.log_path.read_text(), pid)


def assert_attached_before_taking_requests(log: str, worker: int) -> None:
    """A worker attaches to the supervisor's tritonserver before uvicorn lets it take
    requests: it never answers 503 "starting" while its supervisor's server is up."""
    lines = [line for line in log.splitlines() if f"[worker {worker}]" in line]
    attached = next(i for i, line in enumerate(lines) if "runner 'triton_runner' ready: Triton at" in line)
    accepting = next(i for i, line in enumerate(lines) if "Application startup complete" in line)
    assert attached < accepting, lines[: accepting + 2]


def test_killed_tritonserver_is_restarted_while_requests_fail_fast(
    server: ProductionServer, samples: Sequence[Sample]
) -> None:
    [triton] = server.triton_pids()
    ports = triton_ports(triton)
    stats = LoadStats()
    stop_load = threading.Event()
    timeout = 10.0  # a request that hangs shows up as a transport error (a timeout)

    def load() -> None:
        while not stop_load.is_set():
            part = run_load(f"{server.url}/classify", samples, concurrency=16, duration=1.0, timeout=timeout)
            stats.ok += part.ok
            stats.wrong += part.wrong
            stats.transport_errors += part.transport_errors
            stats.timeline += part.timeline
            for status, count in part.statuses.items():
                stats.statuses[status] = stats.statuses.get(status, 0) + count
            stats.max_latency = max(stats.max_latency, part.max_latency)

    loader = threading.Thread(target=load)
    loader.start()
    try:
        wait_until(lambda: stats.ok > 50, 60, "traffic before the kill")
        killed_at = time.monotonic()
        os.kill(triton, signal.SIGKILL)
        readyz_statuses: set[int] = set()

        def recovered() -> bool:
            try:
                status = httpx.get(f"{server.url}/readyz", timeout=5).status_code
            except httpx.HTTPError:
                return False
            readyz_statuses.add(status)
            return status == 200 and any(t > killed_at and s == 200 for t, s in stats.timeline)

        wait_until(recovered, 180, "traffic to recover after the kill", interval=0.2)
        wait_until(
            lambda: sum(1 for t, s in stats.timeline if t > killed_at and s == 200) >= 100,
            60,
            "100 answers after recovery",
        )
    finally:
        stop_load.set()
        loader.join(timeout=60)

    first_ok = min(t for t, s in stats.timeline if t > killed_at and s == 200)
    print(f"\ntritonserver killed: traffic recovered after {first_ok - killed_at:.1f} s")
    assert stats.wrong == [], stats.wrong[:5]
    assert stats.transport_errors == [], stats.transport_errors[:5]  # nothing hung, nothing dropped
    assert set(stats.statuses) == {503}, stats.statuses  # during the restart: 503 and only 503
    assert 503 in readyz_statuses  # /readyz said so while tritonserver was away
    assert stats.max_latency < timeout
    [restarted] = server.triton_pids()
    assert restarted != triton and triton_ports(restarted) == ports  # same ports: clients reconnected
    for sample in samples:
        response = classify(server.url, sample)
        assert response.status_code == 200 and response.json()["label"] == sample.label
