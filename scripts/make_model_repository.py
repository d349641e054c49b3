"""Generate the example Triton model repository described in docs/CONTRACTS.md.

Trains small MLP digit classifiers with PyTorch (CPU) on scikit-learn's bundled 8x8 digits,
exports them as ONNX and TorchScript, writes the python-backend, ensemble and BLS models, and
writes sample PNGs of held-out digits. Deterministic and offline: running it twice gives
byte-identical files. (TorchScript debug info records this script's path and line numbers:
a checkout elsewhere, or an edit of this file, gives model.pt other bytes, same weights.)

    python scripts/make_model_repository.py [--output model_repository] [--samples samples]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED = 0
HELD_OUT_FRACTION = 0.25
NUM_FEATURES = 64
NUM_CLASSES = 10
MAX_BATCH_SIZE = 64
ONNX_OPSET = 17
SAMPLE_SIZE = 32  # 8x8 digits upscaled 4x with nearest, so a BOX resize gives the 8x8 back
SAMPLES_INDEX = "index.json"


@dataclass(frozen=True)
class TrainingSpec:
    hidden_size: int
    epochs: int
    seed: int
    learning_rate: float = 1e-2
    batch_size: int = 32


# Version 1 is deliberately smaller and trained for less time than version 2, so the two
# versions of digits_onnx are observably different (different logits for the same input).
ONNX_VERSIONS: dict[int, TrainingSpec] = {
    1: TrainingSpec(hidden_size=24, epochs=12, seed=1),
    2: TrainingSpec(hidden_size=64, epochs=40, seed=2),
}
TORCHSCRIPT_VERSION_SOURCE = 2  # digits_torchscript carries the same weights as digits_onnx v2


@dataclass(frozen=True)
class DigitsSplit:
    """scikit-learn's digits as CONTRACTS.md model inputs (values / 16), with a fixed split."""

    features: np.ndarray  # float32 [N, 64] in [0, 1]
    targets: np.ndarray  # int64 [N]
    raw: np.ndarray  # the dataset's 0..16 values, float64 [N, 64]
    train_indices: np.ndarray
    held_out_indices: np.ndarray

    @property
    def x_train(self) -> np.ndarray:
        return self.features[self.train_indices]

    @property
    def y_train(self) -> np.ndarray:
        return self.targets[self.train_indices]

    @property
    def x_held_out(self) -> np.ndarray:
        return self.features[self.held_out_indices]

    @property
    def y_held_out(self) -> np.ndarray:
        return self.targets[self.held_out_indices]


def load_split() -> DigitsSplit:
    """The dataset (bundled with scikit-learn, no download) and its fixed stratified split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    raw = np.asarray(digits.data, dtype=np.float64)
    targets = np.asarray(digits.target, dtype=np.int64)
    train_indices, held_out_indices = train_test_split(
        np.arange(len(targets)),
        test_size=HELD_OUT_FRACTION,
        random_state=SEED,
        stratify=targets,
    )
    return DigitsSplit(
        features=(raw / 16.0).astype(np.float32),
        targets=targets,
        raw=raw,
        train_indices=np.sort(train_indices),
        held_out_indices=np.sort(held_out_indices),
    )


class DigitsMLP(torch.nn.Module):
    """64 -> hidden -> 10 MLP producing logits.

    Plain parameters and functional calls rather than nn.Linear: scripting nn.Linear writes its
    Final constants in hash-seed-dependent order, which makes the TorchScript file differ
    from run to run.
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        hidden = torch.nn.Linear(NUM_FEATURES, hidden_size)
        output = torch.nn.Linear(hidden_size, NUM_CLASSES)
        self.hidden_weight = torch.nn.Parameter(hidden.weight.detach().clone())
        self.hidden_bias = torch.nn.Parameter(hidden.bias.detach().clone())
        self.output_weight = torch.nn.Parameter(output.weight.detach().clone())
        self.output_bias = torch.nn.Parameter(output.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(torch.nn.functional.linear(x, self.hidden_weight, self.hidden_bias))
        return torch.nn.functional.linear(hidden, self.output_weight, self.output_bias)


# TorchScript names the class after its module; pin it so the file does not depend on whether
# this script runs as __main__ or is imported by the tests.
DigitsMLP.__module__ = "runnerkit_digits"


@contextlib.contextmanager
def _deterministic_torch() -> Iterator[None]:
    """Single-threaded deterministic kernels for the duration of a build, restored afterwards."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)


def train_mlp(spec: TrainingSpec, x: np.ndarray, y: np.ndarray) -> DigitsMLP:
    torch.manual_seed(spec.seed)
    model = DigitsMLP(spec.hidden_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=spec.learning_rate)
    generator = torch.Generator().manual_seed(spec.seed)
    inputs = torch.from_numpy(x)
    labels = torch.from_numpy(y)
    model.train()
    for _ in range(spec.epochs):
        order = torch.randperm(len(labels), generator=generator)
        for start in range(0, len(labels), spec.batch_size):
            batch = order[start : start + spec.batch_size]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs[batch]), labels[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    return model


def export_onnx(model: DigitsMLP, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # The TorchScript-based exporter is deprecated but needs no onnxscript and its output
        # is byte-for-byte reproducible.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model,
            (torch.zeros(1, NUM_FEATURES),),
            str(path),
            dynamo=False,
            input_names=["input"],
            output_names=["logits"],
            dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
            opset_version=ONNX_OPSET,
            do_constant_folding=True,
        )


def export_torchscript(model: DigitsMLP, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(model)
        torch.jit.save(scripted, str(path))


def onnx_logits(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {"input": x.astype(np.float32)})
    return np.asarray(logits)


def torchscript_logits(path: Path, x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(path), map_location="cpu")
    module.eval()
    with torch.no_grad():
        return module(torch.from_numpy(x.astype(np.float32))).numpy()


def _accuracy(logits: np.ndarray, targets: np.ndarray) -> float:
    return float((logits.argmax(axis=1) == targets).mean())


# --- Triton configuration -------------------------------------------------------------------


def _io(section: str, tensors: list[tuple[str, str, int]]) -> str:
    entries = ",\n".join(
        f'  {{\n    name: "{name}"\n    data_type: {dtype}\n    dims: [ {dim} ]\n  }}'
        for name, dtype, dim in tensors
    )
    return f"{section} [\n{entries}\n]\n"


_CPU_INSTANCES = "instance_group [\n  {\n    count: 1\n    kind: KIND_CPU\n  }\n]\n"
_DYNAMIC_BATCHING = "dynamic_batching {\n}\n"


def _config(
    name: str,
    engine: str,
    inputs: list[tuple[str, str, int]],
    outputs: list[tuple[str, str, int]],
    *extra: str,
) -> str:
    return (
        f'name: "{name}"\n{engine}\nmax_batch_size: {MAX_BATCH_SIZE}\n'
        + "".join(extra)
        + _io("input", inputs)
        + _io("output", outputs)
    )


def _model_configs() -> dict[str, str]:
    image = ("image", "TYPE_STRING", 1)
    features = ("input", "TYPE_FP32", NUM_FEATURES)
    logits = ("logits", "TYPE_FP32", NUM_CLASSES)
    label = ("label", "TYPE_INT64", 1)
    probability = ("probability", "TYPE_FP32", 1)
    batched_cpu = (_DYNAMIC_BATCHING, _CPU_INSTANCES)
    python = 'backend: "python"'
    pipeline = textwrap.dedent(
        """\
        ensemble_scheduling {
          step [
            {
              model_name: "digits_preprocess"
              model_version: -1
              input_map {
                key: "image"
                value: "image"
              }
              output_map {
                key: "input"
                value: "preprocessed"
              }
            },
            {
              model_name: "digits_onnx"
              model_version: -1
              input_map {
                key: "input"
                value: "preprocessed"
              }
              output_map {
                key: "logits"
                value: "classifier_logits"
              }
            },
            {
              model_name: "digits_postprocess"
              model_version: -1
              input_map {
                key: "logits"
                value: "classifier_logits"
              }
              output_map {
                key: "label"
                value: "label"
              }
              output_map {
                key: "probability"
                value: "probability"
              }
            }
          ]
        }
        """
    )
    return {
        "digits_onnx": _config(
            "digits_onnx",
            'platform: "onnxruntime_onnx"',
            [features],
            [logits],
            "version_policy: {\n  all {}\n}\n",
            *batched_cpu,
        ),
        "digits_torchscript": _config(
            "digits_torchscript",
            'platform: "pytorch_libtorch"',
            [("INPUT__0", "TYPE_FP32", NUM_FEATURES)],
            [("OUTPUT__0", "TYPE_FP32", NUM_CLASSES)],
            *batched_cpu,
        ),
        "digits_preprocess": _config("digits_preprocess", python, [image], [features], *batched_cpu),
        "digits_postprocess": _config(
            "digits_postprocess", python, [logits], [label, probability], *batched_cpu
        ),
        "digits_pipeline": _config("digits_pipeline", 'platform: "ensemble"', [image], [label, probability])
        + pipeline,
        "digits_bls": _config("digits_bls", python, [features], [label, logits], *batched_cpu),
    }


# --- python-backend models ------------------------------------------------------------------

_PREPROCESS_MODEL = '''\
"""digits_preprocess: encoded image bytes -> 64 float32 pixels in [0, 1] (docs/CONTRACTS.md)."""

from __future__ import annotations

import io

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image


def preprocess_image(data: bytes) -> np.ndarray:
    """Decode, 8-bit grayscale, BOX-resize to 8x8, scale to [0, 1], flatten row-major."""
    with Image.open(io.BytesIO(data)) as image:
        gray = image.convert("L").resize((8, 8), Image.Resampling.BOX)
    return (np.asarray(gray, dtype=np.float32) / np.float32(255.0)).reshape(64)


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            images = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            try:
                # One row per image: the batch dimension of this request, [B, 1] -> [B, 64].
                pixels = np.stack([preprocess_image(bytes(item)) for item in images.reshape(-1)])
            except (OSError, ValueError) as exc:
                # A bad image fails only its own request, not the others batched with it.
                error = pb_utils.TritonError(f"cannot decode image: {exc}")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            output = pb_utils.Tensor("input", pixels.astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[output]))
        return responses
'''

_POSTPROCESS_MODEL = '''\
"""digits_postprocess: logits [10] -> label INT64 [1] and its softmax probability FP32 [1]."""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils


def postprocess_logits(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arg-max label and softmax probability of that label for a [B, 10] batch of logits."""
    logits = np.asarray(logits, dtype=np.float32).reshape(len(logits), -1)
    # Subtract the row maximum so exp() cannot overflow.
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = exp / exp.sum(axis=1, keepdims=True)
    labels = logits.argmax(axis=1)
    probability = np.take_along_axis(probabilities, labels[:, None], axis=1)
    return labels.astype(np.int64).reshape(-1, 1), probability.astype(np.float32)


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "logits").as_numpy()
            labels, probability = postprocess_logits(logits)
            outputs = [pb_utils.Tensor("label", labels), pb_utils.Tensor("probability", probability)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
'''

_BLS_MODEL = '''\
"""digits_bls: business-logic scripting model that calls digits_onnx from Python.

input FP32 [64] -> label INT64 [1] and the classifier's logits FP32 [10].
"""

from __future__ import annotations

import json

import numpy as np
import triton_python_backend_utils as pb_utils

CLASSIFIER = "digits_onnx"


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.max_batch_size = int(config["max_batch_size"])

    def _classify(self, features: np.ndarray) -> np.ndarray:
        logits = []
        # Chunks keep each call within the classifier's max_batch_size (same as ours).
        for start in range(0, len(features), self.max_batch_size):
            chunk = features[start : start + self.max_batch_size]
            request = pb_utils.InferenceRequest(
                model_name=CLASSIFIER,
                requested_output_names=["logits"],
                inputs=[pb_utils.Tensor("input", chunk)],
            )
            response = request.exec()
            if response.has_error():
                raise pb_utils.TritonModelException(response.error().message())
            logits.append(pb_utils.get_output_tensor_by_name(response, "logits").as_numpy())
        return np.concatenate(logits).astype(np.float32)

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        batches = [
            pb_utils.get_input_tensor_by_name(request, "input").as_numpy().astype(np.float32)
            for request in requests
        ]
        try:
            # One call for all requests of a dynamic batch, then split the rows back per request.
            logits = self._classify(np.concatenate(batches))
        except pb_utils.TritonModelException as exc:
            error = pb_utils.TritonError(f"{CLASSIFIER} failed: {exc}")
            return [pb_utils.InferenceResponse(error=error) for _ in requests]
        responses = []
        offsets = np.cumsum([len(batch) for batch in batches])[:-1]
        for request_logits in np.split(logits, offsets):
            labels = request_logits.argmax(axis=1).astype(np.int64).reshape(-1, 1)
            outputs = [pb_utils.Tensor("label", labels), pb_utils.Tensor("logits", request_logits)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
'''

PYTHON_MODELS: dict[str, str] = {
    "digits_preprocess": _PREPROCESS_MODEL,
    "digits_postprocess": _POSTPROCESS_MODEL,
    "digits_bls": _BLS_MODEL,
}


# --- samples --------------------------------------------------------------------------------


def _sample_image(raw_row: np.ndarray) -> Image.Image:
    # The dataset's 0..16 map to 0..255 (ink bright on dark, as in the dataset).
    pixels = np.rint(raw_row.reshape(8, 8) * (255.0 / 16.0)).astype(np.uint8)
    return Image.fromarray(pixels).resize((SAMPLE_SIZE, SAMPLE_SIZE), Image.Resampling.NEAREST)


def write_samples(samples_dir: Path, split: DigitsSplit, correct: np.ndarray) -> dict[str, int]:
    """One held-out digit per label (the first one every exported model classifies correctly).

    Writes samples/digit_<label>.png and samples/index.json (file -> label, dataset row).
    """
    samples_dir.mkdir(parents=True, exist_ok=True)
    for stale in samples_dir.glob("digit_*.png"):
        stale.unlink()
    index: dict[str, dict[str, int]] = {}
    for label in range(NUM_CLASSES):
        candidates = split.held_out_indices[(split.y_held_out == label) & correct]
        if len(candidates) == 0:
            raise RuntimeError(f"no held-out {label} is classified correctly by every model")
        row = int(candidates[0])
        name = f"digit_{label}.png"
        _sample_image(split.raw[row]).save(samples_dir / name, format="PNG")
        index[name] = {"label": label, "dataset_index": row}
    (samples_dir / SAMPLES_INDEX).write_text(json.dumps(index, indent=2) + "\n")
    return {name: entry["dataset_index"] for name, entry in index.items()}


# --- build ----------------------------------------------------------------------------------


def build_model_repository(out_dir: Path, samples_dir: Path | None = None) -> dict[str, float]:
    """Write the model repository into out_dir (and samples into samples_dir, if given).

    Only the digits_* model folders are replaced; other content of out_dir is left alone.
    Returns the held-out accuracy of each exported model, measured by running the exported
    files (onnxruntime for ONNX, torch.jit.load for TorchScript), keyed "digits_onnx/1",
    "digits_onnx/2", "digits_torchscript".
    """
    out_dir = Path(out_dir)
    split = load_split()
    configs = _model_configs()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in configs:
        shutil.rmtree(out_dir / name, ignore_errors=True)
        (out_dir / name).mkdir()
        (out_dir / name / "config.pbtxt").write_text(configs[name])

    accuracies: dict[str, float] = {}
    correct = np.ones(len(split.held_out_indices), dtype=bool)
    with _deterministic_torch():
        models = {
            version: train_mlp(spec, split.x_train, split.y_train) for version, spec in ONNX_VERSIONS.items()
        }
        for version, model in models.items():
            path = out_dir / "digits_onnx" / str(version) / "model.onnx"
            export_onnx(model, path)
            logits = onnx_logits(path, split.x_held_out)
            accuracies[f"digits_onnx/{version}"] = _accuracy(logits, split.y_held_out)
            correct &= logits.argmax(axis=1) == split.y_held_out
        path = out_dir / "digits_torchscript" / "1" / "model.pt"
        export_torchscript(models[TORCHSCRIPT_VERSION_SOURCE], path)
        logits = torchscript_logits(path, split.x_held_out)
        accuracies["digits_torchscript"] = _accuracy(logits, split.y_held_out)
        correct &= logits.argmax(axis=1) == split.y_held_out

    for name, source in PYTHON_MODELS.items():
        (out_dir / name / "1").mkdir()
        (out_dir / name / "1" / "model.py").write_text(source)
    # Triton needs the (empty) version folder of an ensemble; the file keeps it in git.
    (out_dir / "digits_pipeline" / "1").mkdir()
    (out_dir / "digits_pipeline" / "1" / ".gitkeep").write_text("")

    if samples_dir is not None:
        write_samples(Path(samples_dir), split, correct)
    return accuracies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "model_repository")
    parser.add_argument("--samples", type=Path, default=REPO_ROOT / "samples")
    parser.add_argument("--no-samples", action="store_true", help="do not write sample images")
    args = parser.parse_args(argv)
    split = load_split()
    accuracies = build_model_repository(args.output, None if args.no_samples else args.samples)
    print(f"digits: {len(split.train_indices)} training rows, {len(split.held_out_indices)} held-out rows")
    for key, accuracy in accuracies.items():
        print(f"{key:<20} held-out accuracy {accuracy:.4f}")
    print(f"model repository written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
