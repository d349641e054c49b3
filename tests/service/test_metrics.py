"""/metrics: Prometheus text with request counts and latency per API and status code."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


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
