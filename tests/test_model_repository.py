"""scripts/make_model_repository.py and the example repository it generates (docs/CONTRACTS.md).

The repository is regenerated into a temporary folder; every exported model is evaluated here
with its own runtime (onnxruntime, torch.jit.load), independently of the script's own report.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("onnx")
from google.protobuf import text_format  # noqa: E402
from PIL import Image  # noqa: E402
from tritonclient.grpc import model_config_pb2 as mc  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / "scripts" / "make_model_repository.py"
COMMITTED_REPOSITORY = REPO_ROOT / "model_repository"
COMMITTED_SAMPLES = REPO_ROOT / "samples"
MIN_ACCURACY = 0.95

EXPECTED_FILES = {
    "digits_onnx/config.pbtxt",
    "digits_onnx/1/model.onnx",
    "digits_onnx/2/model.onnx",
    "digits_torchscript/config.pbtxt",
    "digits_torchscript/1/model.pt",
    "digits_preprocess/config.pbtxt",
    "digits_preprocess/1/model.py",
    "digits_postprocess/config.pbtxt",
    "digits_postprocess/1/model.py",
    "digits_pipeline/config.pbtxt",
    "digits_pipeline/1/.gitkeep",
    "digits_bls/config.pbtxt",
    "digits_bls/1/model.py",
}

# (name, data type, dims) per docs/CONTRACTS.md
TABLE: dict[str, tuple[list[tuple[str, str, list[int]]], list[tuple[str, str, list[int]]]]] = {
    "digits_onnx": ([("input", "TYPE_FP32", [64])], [("logits", "TYPE_FP32", [10])]),
    "digits_torchscript": ([("INPUT__0", "TYPE_FP32", [64])], [("OUTPUT__0", "TYPE_FP32", [10])]),
    "digits_preprocess": ([("image", "TYPE_STRING", [1])], [("input", "TYPE_FP32", [64])]),
    "digits_postprocess": (
        [("logits", "TYPE_FP32", [10])],
        [("label", "TYPE_INT64", [1]), ("probability", "TYPE_FP32", [1])],
    ),
    "digits_pipeline": (
        [("image", "TYPE_STRING", [1])],
        [("label", "TYPE_INT64", [1]), ("probability", "TYPE_FP32", [1])],
    ),
    "digits_bls": (
        [("input", "TYPE_FP32", [64])],
        [("label", "TYPE_INT64", [1]), ("logits", "TYPE_FP32", [10])],
    ),
}


def _load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


def _load_python_model(monkeypatch: pytest.MonkeyPatch, repository: Path, model: str) -> ModuleType:
    # model.py imports Triton's utilities at the top; only its pure functions are used here.
    stub = types.ModuleType("triton_python_backend_utils")
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", stub)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return _load_module(f"_test_{model}_model", repository / model / "1" / "model.py")


def _files(root: Path) -> set[str]:
    # __pycache__ is what importing model.py (here or in Triton's python backend) leaves behind.
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _config(repository: Path, model: str) -> mc.ModelConfig:
    text = (repository / model / "config.pbtxt").read_text()
    return text_format.Parse(text, mc.ModelConfig())


def _onnx_logits(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["logits"], {"input": x})[0]


def _torchscript_logits(path: Path, x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit is deprecated, Triton's
        module = torch.jit.load(str(path), map_location="cpu")  # libtorch backend still uses it
    with torch.no_grad():
        return module(torch.from_numpy(x)).numpy()


@dataclass
class Built:
    repository: Path
    samples: Path
    accuracies: dict[str, float]


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return _load_module("_test_make_model_repository", SCRIPT)


@pytest.fixture(scope="module")
def split(script: ModuleType) -> Any:
    return script.load_split()


def _build_in_subprocesses(runs: list[tuple[Path, str]]) -> list[Built]:
    """Run build_model_repository once per (folder, PYTHONHASHSEED), each in a fresh interpreter.

    Fresh processes keep the builds independent of this one's sys.path (pytest puts tests/ on
    it, where tests/triton would pass for OpenAI's triton package inside torch); different hash
    seeds show whether the output depends on hash order. They run concurrently to save time.
    """
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        f"sys.path.insert(0, {str(SCRIPT.parent)!r})\n"
        "from make_model_repository import build_model_repository\n"
        "root = Path(sys.argv[1])\n"
        "accuracies = build_model_repository(root / 'model_repository', root / 'samples')\n"
        "print(json.dumps(accuracies))\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(root)],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for root, hash_seed in runs
    ]
    builds = []
    for (root, _), process in zip(runs, processes):
        stdout, stderr = process.communicate(timeout=240)
        assert process.returncode == 0, stderr[-4000:]
        accuracies = json.loads(stdout.strip().splitlines()[-1])
        builds.append(Built(root / "model_repository", root / "samples", accuracies))
    return builds


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> list[Built]:
    runs = [(tmp_path_factory.mktemp("first"), "1"), (tmp_path_factory.mktemp("second"), "2")]
    return _build_in_subprocesses(runs)


@pytest.fixture(scope="module")
def built(builds: list[Built]) -> Built:
    return builds[0]


def test_split_is_fixed_disjoint_and_complete(split: Any) -> None:
    train, held_out = set(split.train_indices.tolist()), set(split.held_out_indices.tolist())
    assert not train & held_out
    assert train | held_out == set(range(len(split.targets)))
    assert 0.2 <= len(held_out) / len(split.targets) <= 0.3
    assert set(split.y_held_out.tolist()) == set(range(10))
    assert split.features.dtype == np.float32
    np.testing.assert_array_equal(split.features, (split.raw / 16).astype(np.float32))


def test_generated_layout(built: Built) -> None:
    assert _files(built.repository) == EXPECTED_FILES
    for path in built.repository.rglob("*"):
        if path.is_file():
            assert path.stat().st_size < 100_000, path


def test_configs_follow_the_contract_table(built: Built) -> None:
    for model, (inputs, outputs) in TABLE.items():
        config = _config(built.repository, model)
        assert config.name == model
        assert config.max_batch_size == 64
        got_inputs = [(t.name, mc.DataType.Name(t.data_type), list(t.dims)) for t in config.input]
        got_outputs = [(t.name, mc.DataType.Name(t.data_type), list(t.dims)) for t in config.output]
        assert got_inputs == inputs, model
        assert got_outputs == outputs, model
        if model != "digits_pipeline":
            assert config.HasField("dynamic_batching"), model
            assert [g.kind for g in config.instance_group] == [mc.ModelInstanceGroup.KIND_CPU]

    assert _config(built.repository, "digits_onnx").platform == "onnxruntime_onnx"
    assert _config(built.repository, "digits_onnx").version_policy.HasField("all")
    assert _config(built.repository, "digits_torchscript").platform == "pytorch_libtorch"
    for model in ("digits_preprocess", "digits_postprocess", "digits_bls"):
        assert _config(built.repository, model).backend == "python"


def test_ensemble_steps_are_consistent(built: Built) -> None:
    """Every tensor an ensemble step reads is produced upstream with the same type and dims."""
    pipeline = _config(built.repository, "digits_pipeline")
    assert pipeline.platform == "ensemble"
    steps = pipeline.ensemble_scheduling.step
    assert [s.model_name for s in steps] == [
        "digits_preprocess",
        "digits_onnx",
        "digits_postprocess",
    ]
    available = {t.name: (t.data_type, list(t.dims)) for t in pipeline.input}
    for step in steps:
        step_config = _config(built.repository, step.model_name)
        # The ensemble batches, so every step must batch at least as much.
        assert step_config.max_batch_size >= pipeline.max_batch_size
        step_inputs = {t.name: (t.data_type, list(t.dims)) for t in step_config.input}
        step_outputs = {t.name: (t.data_type, list(t.dims)) for t in step_config.output}
        assert set(step.input_map) == set(step_inputs)
        for model_tensor, ensemble_tensor in step.input_map.items():
            assert available[ensemble_tensor] == step_inputs[model_tensor]
        for model_tensor, ensemble_tensor in step.output_map.items():
            available[ensemble_tensor] = step_outputs[model_tensor]
    for output in pipeline.output:
        assert available[output.name] == (output.data_type, list(output.dims))


def test_exported_models_are_accurate_on_held_out_data(built: Built, split: Any) -> None:
    x, y = split.x_held_out, split.y_held_out
    measured = {
        "digits_onnx/1": _onnx_logits(built.repository / "digits_onnx/1/model.onnx", x),
        "digits_onnx/2": _onnx_logits(built.repository / "digits_onnx/2/model.onnx", x),
        "digits_torchscript": _torchscript_logits(built.repository / "digits_torchscript/1/model.pt", x),
    }
    assert set(built.accuracies) == set(measured)
    for key, logits in measured.items():
        assert logits.shape == (len(y), 10) and logits.dtype == np.float32
        accuracy = float((logits.argmax(axis=1) == y).mean())
        assert accuracy >= MIN_ACCURACY, key
        assert built.accuracies[key] == pytest.approx(accuracy), key


def test_onnx_signature_has_dynamic_batch(built: Built, split: Any) -> None:
    for version in (1, 2):
        path = built.repository / f"digits_onnx/{version}/model.onnx"
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        (inp,) = session.get_inputs()
        (out,) = session.get_outputs()
        assert (inp.name, inp.type, inp.shape[1]) == ("input", "tensor(float)", 64)
        assert (out.name, out.type, out.shape[1]) == ("logits", "tensor(float)", 10)
        assert isinstance(inp.shape[0], str) and isinstance(out.shape[0], str)
        batch = split.x_held_out[:7]
        one_by_one = np.concatenate([_onnx_logits(path, row[None]) for row in batch])
        np.testing.assert_allclose(_onnx_logits(path, batch), one_by_one, rtol=1e-5, atol=1e-5)


def test_onnx_versions_are_observably_different(built: Built, split: Any) -> None:
    x = split.x_held_out
    v1 = _onnx_logits(built.repository / "digits_onnx/1/model.onnx", x)
    v2 = _onnx_logits(built.repository / "digits_onnx/2/model.onnx", x)
    assert np.abs(v1 - v2).mean() > 0.5
    assert np.abs(v1 - v2).max(axis=1).min() > 1e-3  # every single input tells them apart


def test_torchscript_matches_onnx_version_2(built: Built, split: Any) -> None:
    x = split.x_held_out
    np.testing.assert_allclose(
        _torchscript_logits(built.repository / "digits_torchscript/1/model.pt", x),
        _onnx_logits(built.repository / "digits_onnx/2/model.onnx", x),
        rtol=1e-4,
        atol=1e-4,
    )


def test_build_is_deterministic(builds: list[Built]) -> None:
    first, second = builds
    assert first.accuracies == second.accuracies
    for first_root, second_root in (
        (first.repository, second.repository),
        (first.samples, second.samples),
    ):
        assert _files(first_root) == _files(second_root)
        for name in sorted(_files(first_root)):
            first_bytes = (first_root / name).read_bytes()
            assert first_bytes == (second_root / name).read_bytes(), f"{name} differs"


@pytest.mark.parametrize("which", ["generated", "committed"])
def test_samples_preprocess_back_to_their_dataset_rows(
    which: str, built: Built, split: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = built.samples if which == "generated" else COMMITTED_SAMPLES
    repository = built.repository if which == "generated" else COMMITTED_REPOSITORY
    preprocess = _load_python_model(monkeypatch, repository, "digits_preprocess").preprocess_image
    index = json.loads((samples / "index.json").read_text())
    assert sorted(index) == [f"digit_{label}.png" for label in range(10)]
    held_out = set(split.held_out_indices.tolist())
    for name, entry in index.items():
        row = entry["dataset_index"]
        assert entry["label"] == split.targets[row] == int(name[len("digit_") : -len(".png")])
        assert row in held_out
        data = (samples / name).read_bytes()
        with Image.open(io.BytesIO(data)) as image:
            assert image.size == (32, 32)
        pixels = preprocess(data)
        assert pixels.shape == (64,) and pixels.dtype == np.float32
        # 0..16 stored as 8-bit 0..255: equal up to half a grey level.
        np.testing.assert_allclose(pixels, split.raw[row] / 16, rtol=0, atol=0.5 / 255 + 1e-6)


def test_preprocess_accepts_other_encodings_and_sizes(built: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _load_python_model(monkeypatch, built.repository, "digits_preprocess")
    preprocess = model.preprocess_image
    rgb = Image.new("RGB", (80, 80), (0, 0, 0))
    rgb.paste((255, 255, 255), (0, 0, 10, 10))  # top-left 10x10 white = one full 8x8 cell
    buffer = io.BytesIO()
    rgb.save(buffer, format="JPEG", quality=100)
    pixels = preprocess(buffer.getvalue()).reshape(8, 8)
    assert pixels[0, 0] > 0.9
    assert pixels[1:, 1:].max() < 0.1


def test_postprocess_label_and_probability(built: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _load_python_model(monkeypatch, built.repository, "digits_postprocess")
    postprocess = model.postprocess_logits
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=20, size=(9, 10)).astype(np.float32)
    logits[0] = 1000.0  # ties and huge values must not overflow
    labels, probability = postprocess(logits)
    assert labels.shape == (9, 1) and labels.dtype == np.int64
    assert probability.shape == (9, 1) and probability.dtype == np.float32
    wide = logits.astype(np.float64)
    expected = 1.0 / np.exp(wide - wide.max(axis=1, keepdims=True)).sum(axis=1)
    np.testing.assert_array_equal(labels[:, 0], wide.argmax(axis=1))
    np.testing.assert_allclose(probability[:, 0], expected, rtol=1e-5)
    assert probability[0, 0] == pytest.approx(0.1)


def test_committed_repository_is_the_generated_one(built: Built, split: Any) -> None:
    """The committed files come from the script: same layout, same text, accurate binaries.

    Binaries are checked by behaviour (a build on another CPU may round differently)."""
    assert _files(COMMITTED_REPOSITORY) == EXPECTED_FILES
    for name in sorted(EXPECTED_FILES):
        if name.endswith((".pbtxt", ".py")):
            committed = (COMMITTED_REPOSITORY / name).read_text()
            assert committed == (built.repository / name).read_text(), name
    x, y = split.x_held_out, split.y_held_out
    for logits in (
        _onnx_logits(COMMITTED_REPOSITORY / "digits_onnx/1/model.onnx", x),
        _onnx_logits(COMMITTED_REPOSITORY / "digits_onnx/2/model.onnx", x),
        _torchscript_logits(COMMITTED_REPOSITORY / "digits_torchscript/1/model.pt", x),
    ):
        assert float((logits.argmax(axis=1) == y).mean()) >= MIN_ACCURACY
