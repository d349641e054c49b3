"""The BentoML peer: services/digits.py's /classify on BentoML 1.4's legacy Triton runner.

Runs inside the BentoML virtualenv (.state/bentoml-venv), never in runnerkit's: serve it with
`bentoml serve --production service:svc` from this folder, with the benchmark's `tritonserver`
wrapper first on PATH and RUNNERKIT_BENCH_MODEL_REPOSITORY naming the repository to serve.
The pre- and post-processing are copied from services/digits.py (this environment cannot import
runnerkit), so both stacks do the same work per request.
"""

from __future__ import annotations

import os
from typing import Any

import bentoml
import numpy as np
from bentoml.io import JSON
from bentoml.io import Image as ImageIO
from PIL import Image

MODEL_REPOSITORY = os.environ["RUNNERKIT_BENCH_MODEL_REPOSITORY"]

triton_runner = bentoml.triton.Runner("triton_runner", model_repository=MODEL_REPOSITORY)
svc = bentoml.legacy.Service("digits_bentoml", runners=[triton_runner])


def preprocess(image: Image.Image) -> np.ndarray:
    """8-bit grayscale, 8x8 box-resized, scaled to [0, 1]: a batch of one 64-value row."""
    if image.mode != "L":
        image = image.convert("L")
    small = image.resize((8, 8), Image.Resampling.BOX)
    # The bytes numpy's array interface to PIL would give, without its overhead per call.
    pixels = np.frombuffer(small.tobytes(), dtype=np.uint8).astype(np.float32)
    return (pixels / 255.0).reshape(1, 64)


def postprocess(logits: np.ndarray) -> dict[str, Any]:
    row = logits[0].astype(np.float64)
    probabilities = np.exp(row - row.max())
    probabilities /= probabilities.sum()
    label = int(probabilities.argmax())
    return {
        "label": label,
        "probability": float(probabilities[label]),
        "probabilities": probabilities.round(6).tolist(),
    }


@svc.api(input=ImageIO(), output=JSON())
async def classify(image: Image.Image) -> dict[str, Any]:
    result = await triton_runner.digits_onnx.async_run(preprocess(image))
    return postprocess(result.as_numpy("logits"))
