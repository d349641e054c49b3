"""/metrics: Prometheus text with request counts and latency per API and status code."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, values
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from runnerkit.service._metrics import use_cached_pid_in_multiprocess_metrics


def samples(client: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def key(name: str, api: str, status: str, **extra: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    labels = {"service": "echo", "api": api, "status": status, **extra}
    return name, tuple(sorted(labels.items()))


def test_requests_and_latency_are_counted_per_api_and_status(echo: httpx.Client) -> None:
    before = samples(echo)
    for _ in range(3):
        assert echo.post("/shout", content=b"a").status_code == 200
    for _ in range(2):
        assert echo.post("/point", json={"x": "bad"}).status_code == 400
    after = samples(echo)

    def delta(name: str, api: str, status: str, **extra: str) -> float:
        k = key(name, api, status, **extra)
        return after.get(k, 0.0) - before.get(k, 0.0)

    assert delta("runnerkit_requests_total", "shout", "200") == 3
    assert delta("runnerkit_requests_total", "point", "400") == 2
    assert delta("runnerkit_requests_total", "point", "200") == 0
    assert delta("runnerkit_request_duration_seconds_count", "shout", "200") == 3
    assert delta("runnerkit_request_duration_seconds_bucket", "shout", "200", le="+Inf") == 3
    assert delta("runnerkit_request_duration_seconds_sum", "shout", "200") > 0


def test_multiprocess_metrics_with_the_cached_pid_keep_a_forked_childs_numbers_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)  # restored after the test
    use_cached_pid_in_multiprocess_metrics()
    registry = CollectorRegistry()
    counter = Counter("forked", "incremented in two processes", registry=registry)
    counter.inc()
    child = os.fork()
    if child == 0:  # the child: its own file under its own pid, then gone without cleanup
        try:
            counter.inc(2)
        finally:
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"counter_{os.getpid()}.db", f"counter_{child}.db"]
    )
    merged = CollectorRegistry()
    MultiProcessCollector(merged)
    assert merged.get_sample_value("forked_total") == 3.0
    counter.inc()  # the parent still writes to its own file
    merged_again = CollectorRegistry()
    MultiProcessCollector(merged_again)
    assert merged_again.get_sample_value("forked_total") == 4.0
