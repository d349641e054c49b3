"""tritonclient's management API on the runner, async, over gRPC and HTTP, with Triton's errors
as runnerkit exceptions carrying Triton's status."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm

from runnerkit.exceptions import TritonError, TritonUnavailableError
from runnerkit.triton import Runner
from tests.conftest import AsyncLoop
from tests.triton.conftest import digits


def field(response: Any, name: str) -> Any:
    """A field of a management response: protobuf (gRPC) or dict (HTTP)."""
    return response[name] if isinstance(response, dict) else getattr(response, name)


def test_server_health_and_metadata(aio: AsyncLoop, triton_runner: Runner) -> None:
    assert aio.run(triton_runner.is_server_live()) is True
    assert aio.run(triton_runner.is_server_ready()) is True
    metadata = aio.run(triton_runner.get_server_metadata())
    assert field(metadata, "name") == "triton"
    assert "model_repository" in list(field(metadata, "extensions"))


def test_model_readiness_metadata_and_config(aio: AsyncLoop, triton_runner: Runner) -> None:
    assert aio.run(triton_runner.is_model_ready("digits_onnx")) is True
    assert aio.run(triton_runner.is_model_ready("digits_onnx", "1")) is True
    assert aio.run(triton_runner.is_model_ready("digits_onnx", "9")) is False
    assert aio.run(triton_runner.is_model_ready("no_such_model")) is False
    metadata = aio.run(triton_runner.get_model_metadata("digits_onnx"))
    assert sorted(field(metadata, "versions")) == ["1", "2"]
    assert [field(t, "name") for t in field(metadata, "inputs")] == ["input"]
    config = aio.run(triton_runner.get_model_config("digits_pipeline"))
    config = config if isinstance(config, dict) else config.config
    assert field(config, "platform") == "ensemble"


def test_repository_index_and_statistics(aio: AsyncLoop, triton_runner: Runner) -> None:
    rows = aio.run(triton_runner.model_index())
    ready = {(r["name"], r["version"]) for r in rows if r["state"] == "READY"}
    assert {("digits_onnx", "1"), ("digits_onnx", "2"), ("digits_pipeline", "1")} <= ready
    triton_runner.digits_postprocess.run(np.zeros((1, 10), dtype=np.float32))
    stats = aio.run(triton_runner.get_inference_statistics("digits_postprocess"))
    (model_stats,) = field(stats, "model_stats")
    assert field(model_stats, "name") == "digits_postprocess"
    assert int(field(model_stats, "inference_count")) >= 1


def test_log_settings(aio: AsyncLoop, triton_runner: Runner) -> None:
    settings = aio.run(triton_runner.get_log_settings())
    updated = aio.run(triton_runner.update_log_settings({"log_verbose_level": 0}))
    if isinstance(settings, dict):
        assert updated["log_verbose_level"] == 0 and "log_info" in settings
    else:
        assert updated.settings["log_verbose_level"].uint32_param == 0 and "log_info" in settings.settings


def test_trace_settings(aio: AsyncLoop, triton_runner: Runner) -> None:
    aio.run(triton_runner.get_trace_settings())
    updated = aio.run(
        triton_runner.update_trace_settings(
            model_name="digits_postprocess", settings={"trace_level": ["OFF"]}
        )
    )
    if isinstance(updated, dict):
        assert updated["trace_level"] == ["OFF"]
    else:
        assert list(updated.settings["trace_level"].value) == ["OFF"]


def test_system_shared_memory_register_and_unregister(aio: AsyncLoop, triton_runner: Runner) -> None:
    name = f"rk_{triton_runner.tritonserver_type}_{uuid.uuid4().hex[:8]}"
    region = shm.create_shared_memory_region(name, f"/{name}", 256)
    try:
        aio.run(triton_runner.register_system_shared_memory(name, f"/{name}", 256))
        status = aio.run(triton_runner.get_system_shared_memory_status())
        names = [r["name"] for r in status] if isinstance(status, list) else list(status.regions)
        assert name in names
        aio.run(triton_runner.unregister_system_shared_memory(name))
        status = aio.run(triton_runner.get_system_shared_memory_status())
        names = [r["name"] for r in status] if isinstance(status, list) else list(status.regions)
        assert name not in names
    finally:
        shm.destroy_shared_memory_region(region)


def test_cuda_shared_memory_without_a_gpu(aio: AsyncLoop, triton_runner: Runner) -> None:
    status = aio.run(triton_runner.get_cuda_shared_memory_status())
    assert len(status if isinstance(status, list) else status.regions) == 0
    aio.run(triton_runner.unregister_cuda_shared_memory())
    # This build has no CUDA: registering a region is refused by Triton, as a runnerkit error.
    with pytest.raises(TritonError) as caught:
        aio.run(triton_runner.register_cuda_shared_memory("gpu_region", base64.b64encode(bytes(64)), 0, 64))
    assert caught.value.status is not None


def test_tritonclients_own_infer(aio: AsyncLoop, triton_runner: Runner) -> None:
    module: Any = grpcclient if triton_runner.tritonserver_type == "grpc" else httpclient
    x = digits(2, seed=31)
    infer_input = module.InferInput("input", [2, 64], "FP32")
    infer_input.set_data_from_numpy(x)
    raw = aio.run(triton_runner.infer("digits_onnx", [infer_input], model_version="1"))
    expected = triton_runner.digits_onnx.with_version(1).run(x).as_numpy("logits")
    np.testing.assert_allclose(raw.as_numpy("logits"), expected, atol=1e-6)


def test_stream_infer_over_grpc(aio: AsyncLoop, triton_grpc_runner: Runner) -> None:
    x = digits(1, seed=32)

    async def stream() -> list[np.ndarray]:
        infer_input = grpcclient.InferInput("input", [1, 64], "FP32")
        infer_input.set_data_from_numpy(x)

        async def requests() -> Any:
            for i in range(3):
                yield {"model_name": "digits_onnx", "inputs": [infer_input], "request_id": str(i)}

        got = []
        async for result, error in triton_grpc_runner.stream_infer(requests()):
            assert error is None
            got.append(result.as_numpy("logits"))
            if len(got) == 3:
                break
        return got

    results = aio.run(stream())
    expected = triton_grpc_runner.digits_onnx.run(x).as_numpy("logits")
    assert len(results) == 3
    for logits in results:
        np.testing.assert_allclose(logits, expected, atol=1e-6)


def test_stream_infer_needs_grpc(aio: AsyncLoop, triton_http_runner: Runner) -> None:
    async def stream() -> Any:
        return triton_http_runner.stream_infer(iter(()))

    with pytest.raises(TritonError, match="needs tritonserver_type='grpc'") as caught:
        aio.run(stream())
    assert caught.value.status == "UNSUPPORTED"


@pytest.mark.parametrize("method", ["get_model_config", "get_model_metadata", "get_inference_statistics"])
def test_triton_errors_become_runnerkit_errors_with_status(
    aio: AsyncLoop, triton_runner: Runner, method: str
) -> None:
    with pytest.raises(TritonError) as caught:
        aio.run(getattr(triton_runner, method)("no_such_model"))
    error = caught.value
    assert not isinstance(error, TritonUnavailableError)
    assert error.status in {"NOT_FOUND", "INVALID_ARGUMENT", "400", "404"}
    assert "no_such_model" in error.message
    assert str(error).startswith(f"[{error.status}] ")
    assert error.url == triton_runner.addresses[triton_runner.tritonserver_type]
