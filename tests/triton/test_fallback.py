"""Backend fallback: ONNX and TorchScript models served through generated python-backend models
when the tritonserver (here the nvidia-pytriton build, python backend only) lacks the backend."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from runnerkit.triton import ModelSpec, Runner, TritonServerBinary, locate_tritonserver
from runnerkit.triton._fallback import build_shadow_repository, plan_fallback
from runnerkit.triton._repository import LocalModelRepository
from tests.conftest import AsyncLoop, repository_snapshot
from tests.triton.conftest import digits, make_repository, onnx_logits

FALLBACK_MODELS = {"digits_onnx": "onnxruntime", "digits_torchscript": "pytorch"}
EXECUTOR = Path(__file__).resolve().parents[2] / "runnerkit" / "triton" / "_fallback_model.py"


def served_spec(aio: AsyncLoop, runner: Runner, model: str) -> ModelSpec:
    config = aio.run(runner.get_model_config(model))
    if runner.tritonserver_type == "grpc":
        return ModelSpec.from_proto(config.config)
    return ModelSpec.from_json(config)


@pytest.mark.parametrize("model", list(FALLBACK_MODELS))
def test_served_config_keeps_everything_but_the_backend(
    aio: AsyncLoop, triton_runner: Runner, example_repository: Path, model: str
) -> None:
    original = ModelSpec.from_text((example_repository / model / "config.pbtxt").read_text(), model)
    served = served_spec(aio, triton_runner, model)
    assert original.required_backend == FALLBACK_MODELS[model]
    assert served.backend == "python"
    assert served.name == model
    assert (served.inputs, served.outputs) == (original.inputs, original.outputs)
    assert served.max_batch_size == original.max_batch_size == 64
    assert served.config.HasField("dynamic_batching")
    if original.config.HasField("version_policy"):
        assert served.config.version_policy == original.config.version_policy
    else:  # Triton's default, filled in by the server
        assert served.config.version_policy.latest.num_versions == 1
    counts = [(g.count, g.kind) for g in original.config.instance_group]
    assert [(g.count, g.kind) for g in served.config.instance_group] == counts


def test_both_onnx_versions_match_onnxruntime_on_the_files(
    triton_runner: Runner, example_repository: Path
) -> None:
    x = digits(8, seed=11)
    for version in (1, 2):
        served = triton_runner.digits_onnx.with_version(version).run(x).as_numpy("logits")
        np.testing.assert_allclose(served, onnx_logits(example_repository, version, x), rtol=1e-5, atol=1e-5)


def test_torchscript_matches_torch_on_the_file(triton_runner: Runner, example_repository: Path) -> None:
    x = digits(8, seed=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit is what the file needs
        module = torch.jit.load(str(example_repository / "digits_torchscript" / "1" / "model.pt"))
    with torch.inference_mode():
        expected = module(torch.from_numpy(x)).numpy()
    served = triton_runner.digits_torchscript.run(x).as_numpy("OUTPUT__0")
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-5)


def test_the_users_repository_is_untouched(
    triton_grpc_runner: Runner, example_repository: Path, example_repository_snapshot: dict[str, bytes]
) -> None:
    # The server runs from a shadow repository; the user's holds exactly what it held before.
    assert triton_grpc_runner._shadow_dir is not None
    assert example_repository not in triton_grpc_runner._shadow_dir.parents
    assert repository_snapshot(example_repository) == example_repository_snapshot


def test_plan_logs_the_reason_once_per_model(
    example_repository: Path, caplog: pytest.LogCaptureFixture
) -> None:
    models = LocalModelRepository(example_repository).list_models()
    binary = locate_tritonserver()
    assert binary.available_backends == frozenset({"python"})
    with caplog.at_level(logging.INFO, logger="runnerkit.triton"):
        plan = plan_fallback(models, binary)
    assert set(plan) == set(FALLBACK_MODELS)
    for model, backend in FALLBACK_MODELS.items():
        records = [r.getMessage() for r in caplog.records if f"model {model!r}" in r.getMessage()]
        assert len(records) == 1, records
        assert f"has no {backend!r} backend" in records[0]
        assert "through the python backend" in records[0]


@pytest.mark.parametrize(
    "backends",
    [frozenset({"python", "onnxruntime", "pytorch"}), None],
    ids=["native-backends", "unknown-backends"],
)
def test_nothing_is_rewritten_when_the_build_has_the_backend(
    example_repository: Path, backends: frozenset[str] | None, caplog: pytest.LogCaptureFixture
) -> None:
    models = LocalModelRepository(example_repository).list_models()
    binary = TritonServerBinary(Path("/opt/x/tritonserver"), "test", available_backends=backends)
    with caplog.at_level(logging.INFO, logger="runnerkit.triton"):
        assert plan_fallback(models, binary) == {}
    assert caplog.records == []


def test_shadow_repository_links_untouched_models_and_generates_the_others(
    example_repository: Path, tmp_path: Path
) -> None:
    before = repository_snapshot(example_repository)
    models = LocalModelRepository(example_repository).list_models()
    shadow = build_shadow_repository(models, dict.fromkeys(FALLBACK_MODELS, "test"), tmp_path / "shadow")
    for name in models:
        if name in FALLBACK_MODELS:
            assert not (shadow / name).is_symlink()
            spec = ModelSpec.from_text((shadow / name / "config.pbtxt").read_text(), name)
            assert spec.backend == "python" and spec.platform == ""
            for version in models[name].versions:
                folder = shadow / name / str(version)
                assert (folder / "model.py").read_bytes() == EXECUTOR.read_bytes()
                model_file = next(p for p in folder.iterdir() if p.name != "model.py")
                assert model_file.is_symlink()
                assert model_file.resolve() == (example_repository / name / str(version) / model_file.name)
        elif models[name].files and (example_repository / name / "1" / "model.py").is_file():
            # real folders of linked files: the python backend's bytecode cache stays in the shadow
            assert not (shadow / name).is_symlink()
            files = [p for p in (shadow / name).rglob("*") if not p.is_dir()]
            assert files and all(p.is_symlink() for p in files)
            originals = {p.resolve() for p in files}
            expected = {example_repository / name / f for f in models[name].files}
            assert originals == {p.resolve() for p in expected}
        else:
            assert (shadow / name).is_symlink()
            assert (shadow / name).resolve() == (example_repository / name).resolve()
    assert {n for n in models if (shadow / n).is_symlink()} == {"digits_pipeline"}
    assert repository_snapshot(example_repository) == before


def test_a_launch_logs_the_fallback_once_and_removes_its_shadow(
    example_repository: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repository = make_repository(tmp_path / "models", "echo")
    (repository / "digits_onnx").symlink_to(example_repository / "digits_onnx", target_is_directory=True)
    before = repository_snapshot(repository)
    runner = Runner("fallback_once", model_repository=repository)
    with caplog.at_level(logging.INFO, logger="runnerkit.triton"), runner:
        shadow = runner._shadow_dir
        assert shadow is not None and shadow.is_dir()
        x = digits(2, seed=13)
        np.testing.assert_allclose(
            runner.digits_onnx.run(x).as_numpy("logits"), onnx_logits(example_repository, 2, x), atol=1e-5
        )
        np.testing.assert_array_equal(runner.echo.run(np.ones(2, np.float32)).as_numpy("y"), [1.0, 1.0])
        # the python backend cached the echo model's bytecode: in the shadow
        assert list((shadow / "models" / "echo").rglob("__pycache__"))
    assert not list(repository.rglob("__pycache__"))
    assert repository_snapshot(repository) == before
    messages = [r.getMessage() for r in caplog.records]
    fallback_lines = [m for m in messages if "through the python backend" in m]
    assert fallback_lines == [
        "model 'digits_onnx': tritonserver (from the nvidia-pytriton wheel) has no 'onnxruntime' backend; "
        "serving it through the python backend with onnxruntime"
    ]
    assert not shadow.exists()
    assert sorted(p.name for p in repository.iterdir()) == ["digits_onnx", "echo"]
