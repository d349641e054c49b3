"""Fixtures of the service tests: the shared servers (see stack.py) and small helpers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runnerkit.testing import ServeProcess
from tests.service.stack import SAMPLES, Stack, shared_stack


@pytest.fixture(scope="session")
def stack(pytestconfig: pytest.Config) -> Stack:
    return shared_stack(pytestconfig)


@pytest.fixture(scope="session")
def digits_server(stack: Stack) -> ServeProcess:
    """`runnerkit serve services/digits.py:svc --expose-triton`, ready."""
    return stack.digits()


@pytest.fixture(scope="session")
def echo_server(stack: Stack) -> ServeProcess:
    """`runnerkit serve tests/service/echo_service.py:svc` (64 KiB body limit), ready."""
    return stack.echo()


@pytest.fixture(scope="session")
def digits(digits_server: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=digits_server.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="session")
def echo(echo_server: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=echo_server.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="session")
def sample_labels() -> dict[str, int]:
    """The true digit of each sample image (from the dataset, samples/index.json)."""
    index = json.loads((SAMPLES / "index.json").read_text())
    return {name: int(entry["label"]) for name, entry in index.items()}


def sample_png(name: str = "digit_3.png") -> bytes:
    return Path(SAMPLES / name).read_bytes()
