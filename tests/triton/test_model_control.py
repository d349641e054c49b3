"""Explicit model control: load and unload over the management API (gRPC and HTTP), and the
runner's cached model configurations following along."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runnerkit.exceptions import InvalidInputError, TritonError
from runnerkit.triton import ModelRepositoryError, Runner
from runnerkit.triton._client import TritonClient
from tests.conftest import SAMPLES, AsyncLoop
from tests.triton.conftest import make_repository

PIPELINE_MODELS = ("digits_onnx", "digits_preprocess", "digits_postprocess", "digits_pipeline")
ECHO_CONFIG_3 = {
    "name": "echo",
    "backend": "python",
    "max_batch_size": 0,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3]}],
    "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [-1]}],
}


@pytest.fixture(scope="module")
def control_repository(tmp_path_factory: pytest.TempPathFactory, example_repository: Path) -> Path:
    root = make_repository(tmp_path_factory.mktemp("explicit") / "models", "echo")
    for name in PIPELINE_MODELS:
        (root / name).symlink_to(example_repository / name, target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def control_cli_args() -> list[str]:
    # both spellings tritonserver accepts: `--key value` and `--key=value`
    return ["--model-control-mode", "explicit", "--log-verbose=0"]


@pytest.fixture(scope="module")
def control_grpc_runner(
    aio: AsyncLoop, control_repository: Path, control_cli_args: list[str]
) -> Iterator[Runner]:
    with Runner("explicit", model_repository=control_repository, cli_args=control_cli_args) as runner:
        yield runner


@pytest.fixture(scope="module")
def control_http_runner(aio: AsyncLoop, control_grpc_runner: Runner) -> Iterator[Runner]:
    url = control_grpc_runner.addresses["http"]
    with Runner("explicit_http", url=url, tritonserver_type="http") as runner:
        yield runner


@pytest.fixture(params=["grpc", "http"])
def control(request: pytest.FixtureRequest, aio: AsyncLoop) -> Iterator[Runner]:
    """A runner on an explicit-mode server; whatever a test loads is unloaded after it."""
    runner: Runner = request.getfixturevalue(f"control_{request.param}_runner")
    yield runner
    for name in ("echo", *PIPELINE_MODELS):
        aio.run(runner.unload_model(name))
    wait_until(aio, runner, lambda states: not any(states.values()), "everything unloaded")


def ready_states(aio: AsyncLoop, runner: Runner) -> dict[str, bool]:
    rows = aio.run(runner.model_index())
    return {row["name"]: row["state"] == "READY" for row in rows}


def wait_until(aio: AsyncLoop, runner: Runner, check: Any, what: str, timeout: float = 30) -> None:
    """Triton changes model states in the background: poll its index, bounded."""
    deadline = time.monotonic() + timeout
    while not check(states := ready_states(aio, runner)):
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} within {timeout} s: {states}")
        time.sleep(0.05)


def test_cli_args_reach_tritonserver_and_are_not_mutated(
    aio: AsyncLoop, control_grpc_runner: Runner, control_cli_args: list[str]
) -> None:
    assert control_cli_args == ["--model-control-mode", "explicit", "--log-verbose=0"]
    assert control_grpc_runner.cli_args == ("--model-control-mode=explicit", "--log-verbose=0")
    # explicit mode took effect: the server started with nothing loaded
    states = ready_states(aio, control_grpc_runner)
    assert set(states) == {"echo", *PIPELINE_MODELS}
    assert not any(states.values())


def test_models_are_attributes_before_they_are_loaded(control: Runner) -> None:
    assert {"echo", *PIPELINE_MODELS} <= set(dir(control))


def test_calling_a_model_that_is_not_loaded_is_triton_error(control: Runner) -> None:
    with pytest.raises(TritonError) as caught:
        control.echo.run(np.zeros(2, dtype=np.float32))
    assert caught.value.status in ("NOT_FOUND", "404")
    assert "'echo'" in caught.value.message


def test_load_then_unload(aio: AsyncLoop, control: Runner) -> None:
    aio.run(control.load_model("echo"))
    assert aio.run(control.is_model_ready("echo"))
    assert ready_states(aio, control)["echo"]
    x = np.array([1.5, -2.0], dtype=np.float32)
    np.testing.assert_array_equal(control.echo.run(x).as_numpy("y"), x)

    aio.run(control.unload_model("echo"))
    wait_until(aio, control, lambda states: not states["echo"], "echo unloaded")
    assert not aio.run(control.is_model_ready("echo"))
    with pytest.raises(TritonError):
        control.echo.run(x)


def test_cached_config_is_refreshed_after_load_and_unload(
    aio: AsyncLoop, control: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[str] = []
    original = TritonClient.call

    async def counting_call(self: TritonClient, method: str, *args: Any, **kwargs: Any) -> Any:
        fetched.append(method)
        return await original(self, method, *args, **kwargs)

    monkeypatch.setattr(TritonClient, "call", counting_call)

    aio.run(control.load_model("echo"))
    fetched.clear()
    two, three = np.ones(2, dtype=np.float32), np.ones(3, dtype=np.float32)
    for _ in range(3):
        control.echo.run(two)
    with pytest.raises(InvalidInputError, match=r"expected shape \[2\], got \[3\]"):
        control.echo.run(three)
    # the configuration is fetched once, not per call
    assert fetched.count("get_model_config") == 1

    # reloaded with another configuration: the runner checks against the new one
    aio.run(control.load_model("echo", config=json.dumps(ECHO_CONFIG_3)))
    fetched.clear()
    np.testing.assert_array_equal(control.echo.run(three).as_numpy("y"), three)
    with pytest.raises(InvalidInputError, match=r"expected shape \[3\], got \[2\]"):
        control.echo.run(two)
    assert fetched.count("get_model_config") == 1

    # unloaded, then loaded from the repository: back to the file's configuration
    aio.run(control.unload_model("echo"))
    wait_until(aio, control, lambda states: not states["echo"], "echo unloaded")
    aio.run(control.load_model("echo"))
    np.testing.assert_array_equal(control.echo.run(two).as_numpy("y"), two)


def test_loading_the_ensemble_loads_its_steps(aio: AsyncLoop, control: Runner) -> None:
    aio.run(control.load_model("digits_pipeline"))
    states = ready_states(aio, control)
    assert all(states[name] for name in PIPELINE_MODELS), states
    assert not states["echo"]
    index = json.loads((SAMPLES / "index.json").read_text())
    name = sorted(index)[3]
    result = control.digits_pipeline.run(np.array([[(SAMPLES / name).read_bytes()]], dtype=object))
    assert result.as_numpy("label").item() == index[name]["label"]


def test_loading_a_model_the_repository_lacks_is_triton_error(aio: AsyncLoop, control: Runner) -> None:
    with pytest.raises(TritonError) as caught:
        aio.run(control.load_model("no_such_model"))
    assert caught.value.status in ("INTERNAL", "500")
    assert "no_such_model" in caught.value.message


def test_loading_a_python_model_without_its_file_is_refused_before_triton_waits_for_it(
    aio: AsyncLoop, control_grpc_runner: Runner, control_repository: Path
) -> None:
    model_file = control_repository / "echo" / "1" / "model.py"
    aside = model_file.with_name("model.py.aside")
    model_file.rename(aside)
    try:
        with pytest.raises(ModelRepositoryError, match=r"'echo' lacks 1/model\.py"):
            aio.run(control_grpc_runner.load_model("echo"))
    finally:
        aside.rename(model_file)
    assert not ready_states(aio, control_grpc_runner)["echo"]
    # fixed on disk: the folder is read again, and the load goes through
    aio.run(control_grpc_runner.load_model("echo"))
    x = np.array([0.5, 4.0], dtype=np.float32)
    np.testing.assert_array_equal(control_grpc_runner.echo.run(x).as_numpy("y"), x)
    aio.run(control_grpc_runner.unload_model("echo"))
    wait_until(aio, control_grpc_runner, lambda states: not states["echo"], "echo unloaded")
