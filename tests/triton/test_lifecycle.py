"""The Runner's lifecycle: construction, `with` / `async with`, attaching, and calls made at the
wrong time."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import numpy as np
import pytest

from runnerkit.exceptions import RunnerNotStartedError, TritonUnavailableError
from runnerkit.triton import Runner
from runnerkit.triton._runner import ENV_SUPERVISED_ADDRESSES, ENV_USE_HTTP
from tests.triton.conftest import EXTRA_REPOSITORY, alive, make_repository, process_group, server_pid


def test_calls_before_start_raise_runner_not_started() -> None:
    runner = Runner("not_started", model_repository=EXTRA_REPOSITORY)
    x = np.zeros(2, dtype=np.float32)
    with pytest.raises(
        RunnerNotStartedError, match=r"model 'echo' of runner 'not_started' was called before"
    ):
        runner.echo.run(x)
    with pytest.raises(RunnerNotStartedError, match=r"with runner:"):
        asyncio.run(runner.echo.async_run(x))
    with pytest.raises(RunnerNotStartedError):
        asyncio.run(runner.get_server_metadata())
    assert isinstance(RunnerNotStartedError("x"), RuntimeError)


def test_models_are_known_from_the_repository_before_start() -> None:
    runner = Runner("offline", model_repository=EXTRA_REPOSITORY)
    assert {"arith", "echo", "types", "sequence_sum", "bf16_echo", "versioned"} <= set(dir(runner))
    assert not runner.is_started


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "not an identifier", "model_repository": "x"}, "a Python identifier"),
        ({"name": "nowhere"}, "give model_repository="),
        ({"name": "bad_type", "url": "127.0.0.1:1", "tritonserver_type": "grpcs"}, "tritonserver_type"),
    ],
)
def test_bad_construction_is_value_error(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Runner(**kwargs)  # type: ignore[arg-type]


def test_http_by_environment_and_the_argument_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Runner("default", url="127.0.0.1:1").tritonserver_type == "grpc"
    monkeypatch.setenv(ENV_USE_HTTP, "1")
    assert Runner("from_env", url="127.0.0.1:1").tritonserver_type == "http"
    assert Runner("explicit", url="127.0.0.1:1", tritonserver_type="grpc").tritonserver_type == "grpc"
    monkeypatch.setenv(ENV_USE_HTTP, "0")
    assert Runner("off", url="127.0.0.1:1").tritonserver_type == "grpc"


def test_with_runner_over_http_and_nothing_is_left_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ENV_USE_HTTP, "true")
    cli_args = ["--log-verbose=0", "--http-port=1", "--grpc-address=0.0.0.0", "--metrics-port", "2"]
    given = list(cli_args)
    runner = Runner(
        "owned_http", model_repository=make_repository(tmp_path / "models", "echo"), cli_args=cli_args
    )
    with caplog.at_level(logging.WARNING, logger="runnerkit.triton"), runner:
        assert runner.is_started and runner.owns_server
        pid = server_pid(runner)
        members = process_group(pid)
        assert len(members) >= 2  # tritonserver and the echo model's python stub
        result = runner.echo.run(np.array([3.0, 4.0], dtype=np.float32))
        assert result.protocol == "http"
        np.testing.assert_array_equal(result.as_numpy("y"), [3.0, 4.0])
        # runnerkit owns the listening options: the port and address asked for were not used
        assert runner.addresses["http"].startswith("127.0.0.1:") and runner.addresses["http"] != "127.0.0.1:1"
    assert cli_args == given
    assert not runner.is_started
    assert alive(members) == set()
    ignored = [r.getMessage() for r in caplog.records if "ignoring tritonserver option" in r.getMessage()]
    assert len(ignored) == 3
    for option in ("'--http-port=1'", "'--grpc-address=0.0.0.0'", "'--metrics-port=2'"):
        assert any(option in m for m in ignored), ignored
    assert runner.addresses["metrics"] != "http://127.0.0.1:2/metrics"


def test_async_with_runner_and_nothing_is_left_after_it(tmp_path: Path) -> None:
    runner = Runner("owned_async", model_repository=make_repository(tmp_path / "models", "arith"))

    async def use() -> tuple[set[int], np.ndarray]:
        async with runner:
            members = process_group(server_pid(runner))
            x = np.ones((2, 2), dtype=np.float32)
            results = await asyncio.gather(
                *(
                    runner.arith.async_run(x=x * i, y=x, n=np.full((2, 1), 2, dtype=np.int64))
                    for i in range(4)
                )
            )
            return members, np.stack([r.as_numpy("out") for r in results])

    members, outs = asyncio.run(use())
    np.testing.assert_array_equal(outs, [(np.ones((2, 2)) * i - 1) * 2 for i in range(4)])
    assert not runner.is_started
    assert len(members) >= 2
    assert alive(members) == set()


def test_an_exception_inside_with_still_stops_everything(tmp_path: Path) -> None:
    runner = Runner("raises_inside", model_repository=make_repository(tmp_path / "models", "echo"))
    with pytest.raises(KeyError), runner:
        members = process_group(server_pid(runner))
        raise KeyError("boom")
    assert alive(members) == set()
    assert runner._shadow_dir is None


def test_a_runner_named_by_the_supervisor_attaches_instead_of_launching(
    extra_grpc_runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        ENV_SUPERVISED_ADDRESSES, json.dumps({"supervised": dict(extra_grpc_runner.addresses)})
    )
    runner = Runner("supervised", model_repository=EXTRA_REPOSITORY)
    other = Runner("not_listed", model_repository=EXTRA_REPOSITORY)
    assert not runner.owns_server
    assert other.owns_server
    with runner:
        assert runner._server is None
        assert runner.addresses == dict(extra_grpc_runner.addresses)
        np.testing.assert_array_equal(runner.echo.run(np.ones(2, np.float32)).as_numpy("y"), [1.0, 1.0])
    # detaching leaves the supervisor's server running
    assert extra_grpc_runner.echo.run(np.ones(2, np.float32)).as_numpy("y").tolist() == [1.0, 1.0]


def test_start_and_stop_are_idempotent(extra_grpc_runner: Runner) -> None:
    runner = Runner("twice", url=extra_grpc_runner.addresses["grpc"])
    runner.start_sync()
    runner.start_sync()
    assert runner.is_started
    runner.stop_sync()
    runner.stop_sync()
    assert not runner.is_started
    with pytest.raises(RunnerNotStartedError):
        runner.echo.run(np.ones(2, np.float32))


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (["--model-control-mode", "explicit"], ("--model-control-mode=explicit",)),
        (["--load-model=a", "--load-model", "b"], ("--load-model=a", "--load-model=b")),
        (["--strict-readiness=false", "--log-verbose", "1"], ("--strict-readiness=false", "--log-verbose=1")),
        (["--exit-on-error", "--http-port", "1"], ("--exit-on-error", "--http-port=1")),
    ],
)
def test_cli_args_are_copied_with_values_joined(given: list[str], kept: tuple[str, ...]) -> None:
    before = list(given)
    runner = Runner("options", url="127.0.0.1:1", cli_args=given)
    assert runner.cli_args == kept
    assert given == before


def test_repr_names_the_runner() -> None:
    assert repr(Runner("shown", url="127.0.0.1:1", tritonserver_type="http")) == (
        "Runner('shown', url='127.0.0.1:1', tritonserver_type='http')"
    )


def test_a_server_that_went_away_is_unavailable_error_naming_it(tmp_path: Path) -> None:
    owner = Runner("goes_away", model_repository=make_repository(tmp_path / "models", "echo"))
    x = np.ones(2, dtype=np.float32)
    with owner:
        watchers = [
            Runner(f"watch_{p}", url=owner.addresses[p], tritonserver_type=p) for p in ("grpc", "http")
        ]
        try:
            for watcher in watchers:
                watcher.start_sync()
                watcher.echo.run(x)  # configuration cached: the next call goes straight to infer
            assert owner._server is not None
            owner._server.kill()  # the server crashes
            for watcher in watchers:
                started = time.monotonic()
                with pytest.raises(TritonUnavailableError) as caught:
                    watcher.echo.run(x)
                assert time.monotonic() - started < 30
                assert watcher.url is not None and watcher.url in str(caught.value)
                assert caught.value.url == watcher.url
        finally:
            for watcher in watchers:
                watcher.stop_sync()
