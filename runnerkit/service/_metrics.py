"""Prometheus metrics of a service: request count and latency per API and status code."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ServiceMetrics:
    """One registry per service, so several services in one process never collide."""

    def __init__(self, service: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ("service", "api", "status")
        self.requests = Counter("runnerkit_requests", "API requests handled", labels, registry=self.registry)
        self.latency = Histogram(
            "runnerkit_request_duration_seconds",
            "API request latency",
            labels,
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.service = service

    def observe(self, api: str, status: int, seconds: float) -> None:
        code = str(status)
        self.requests.labels(self.service, api, code).inc()
        self.latency.labels(self.service, api, code).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
