"""Prometheus metrics of a service: request count and latency per API and status code."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def use_cached_pid_in_multiprocess_metrics() -> None:
    """Multiprocess metrics ask the kernel for the process id on every update (glibc no longer
    caches getpid), three times per request; here they get a copy, renewed in a forked child.
    Call it before the first metric value is made (a worker does, before importing the service)."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return
    pid = os.getpid()

    def renew() -> None:
        nonlocal pid
        pid = os.getpid()

    os.register_at_fork(after_in_child=renew)
    values.ValueClass = values.MultiProcessValue(process_identifier=lambda: pid)


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

    def observer(self, api: str) -> Callable[[int, float], None]:
        """`observe` for one API, with each status's labelled metrics looked up once."""
        children: dict[int, tuple[Any, Any]] = {}

        def observe(status: int, seconds: float) -> None:
            pair = children.get(status)
            if pair is None:
                code = str(status)
                labels = (self.service, api, code)
                pair = children[status] = (self.requests.labels(*labels), self.latency.labels(*labels))
            pair[0].inc()
            pair[1].observe(seconds)

        return observe

    def render(self) -> bytes:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            # Several API worker processes (`runnerkit serve --production`): each writes its
            # numbers to that directory, and any of them answers /metrics with the sum of all.
            registry = CollectorRegistry()
            MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)
