"""What every system is asked: the sample digits of samples/ and their true labels."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs
import numpy as np
from PIL import Image

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = REPO_ROOT / "samples"
MODEL_REPOSITORY = REPO_ROOT / "model_repository"
# The model every system calls, with the names of its input and output (docs/CONTRACTS.md).
MODEL = "digits_onnx"
MODEL_INPUT = "input"
MODEL_OUTPUT = "logits"


@attrs.frozen
class Sample:
    name: str
    png: bytes = attrs.field(repr=False)
    label: int  # the dataset's label (samples/index.json), not a model's answer

    @property
    def tensor(self) -> np.ndarray:
        return preprocess_png(self.png)


def preprocess_png(data: bytes) -> np.ndarray:
    """docs/CONTRACTS.md's pre-processing: grayscale, 8x8 box resize, /255, one 64-value row."""
    with Image.open(io.BytesIO(data)) as image:
        pixels = np.asarray(image.convert("L").resize((8, 8), Image.Resampling.BOX), dtype=np.float32)
    return (pixels / 255.0).reshape(1, 64)


def load_samples(directory: Path = SAMPLES_DIR) -> list[Sample]:
    index_file = directory / "index.json"
    if not index_file.is_file():
        raise FileNotFoundError(
            f"{index_file} is missing: generate the samples with `python scripts/make_model_repository.py`"
        )
    index = json.loads(index_file.read_text())
    return [
        Sample(name, (directory / name).read_bytes(), int(entry["label"]))
        for name, entry in sorted(index.items())
    ]
