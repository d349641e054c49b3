"""Shared pytest set-up.

Container fixtures (``podman_engine``, ``cpu_base_image``, ``podman_api_service``,
``docker_engine``) come from the plugin below; see runnerkit/containers/testing.py.

Triton fixtures (defined here): ``triton_grpc_runner`` (one real tritonserver on the example
model repository for the whole session), ``triton_http_runner`` (the same server over HTTP,
attached by URL), ``triton_runner`` (parametrized over both), ``aio`` (a session event loop
to run coroutines on), ``example_repository``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from runnerkit.triton import Runner

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_REPOSITORY = REPO_ROOT / "model_repository"
SAMPLES = REPO_ROOT / "samples"

pytest_plugins = ["runnerkit.containers.testing"]


class AsyncLoop:
    """One event loop on its own thread for the whole session: tests `run` coroutines on it,
    so async clients made for this loop are reused across tests instead of one per test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="tests-aio", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


@pytest.fixture(scope="session")
def aio() -> Iterator[AsyncLoop]:
    loop = AsyncLoop()
    try:
        yield loop
    finally:
        loop.close()


@pytest.fixture(scope="session")
def example_repository() -> Path:
    """The example model repository (docs/CONTRACTS.md), committed in the repo."""
    if not (EXAMPLE_REPOSITORY / "digits_pipeline" / "config.pbtxt").is_file():
        pytest.fail(
            f"{EXAMPLE_REPOSITORY} is missing or incomplete; generate it with "
            "`.venv/bin/python scripts/make_model_repository.py`"
        )
    return EXAMPLE_REPOSITORY


def repository_snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a repository with its content, except the bytecode caches that Triton's
    python backend writes next to python models' model.py (its own doing, not runnerkit's)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="session")
def example_repository_snapshot(example_repository: Path) -> dict[str, bytes]:
    """The example repository as it was before any test launched a server on it."""
    return repository_snapshot(example_repository)


@pytest.fixture(scope="session")
def triton_grpc_runner(
    aio: AsyncLoop, example_repository: Path, example_repository_snapshot: dict[str, bytes]
) -> Iterator[Runner]:
    """One real tritonserver on the example repository for the whole session, over gRPC."""
    with Runner("triton_runner", model_repository=example_repository, tritonserver_type="grpc") as runner:
        yield runner


@pytest.fixture(scope="session")
def triton_http_runner(aio: AsyncLoop, triton_grpc_runner: Runner) -> Iterator[Runner]:
    """The same server over HTTP, through a runner that attaches to it by URL."""
    url = triton_grpc_runner.addresses["http"]
    with Runner("triton_http_runner", url=url, tritonserver_type="http") as runner:
        yield runner


@pytest.fixture(params=["grpc", "http"])
def triton_runner(request: pytest.FixtureRequest) -> Runner:
    """The example repository's runner, once per protocol."""
    runner: Runner = request.getfixturevalue(f"triton_{request.param}_runner")
    return runner
