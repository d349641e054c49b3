"""Calling a pinned version of a model. digits_onnx keeps versions 1 and 2 (version_policy: all):
`triton_runner.digits_onnx` calls the latest, `triton_runner.digits_onnx.with_version(1)` version 1.

    runnerkit serve snippets/service_model_version_1.py:svc
    curl -s -X POST -H 'Content-Type: image/png' --data-binary @samples/digit_3.png \\
        http://127.0.0.1:3000/classify_v1
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import runnerkit
from runnerkit import io as rio

triton_runner = runnerkit.triton.Runner(
    "triton_runner",
    model_repository=Path(__file__).resolve().parent.parent / "model_repository",
    cli_args=["--model-control-mode=explicit", "--load-model=digits_onnx"],
)
svc = runnerkit.Service("digits-versions", runners=[triton_runner])


def preprocess(image: Image.Image) -> np.ndarray:
    pixels = np.asarray(image.convert("L").resize((8, 8), Image.Resampling.BOX), dtype=np.float32)
    return (pixels / 255.0).reshape(1, 64)


@svc.api(input=rio.Image(), output=rio.JSON())
async def classify_v1(image: Image.Image) -> dict[str, Any]:
    """digits_onnx, version 1."""
    result = await triton_runner.digits_onnx.with_version(1).async_run(preprocess(image))
    return {"label": int(result.as_numpy("logits")[0].argmax()), "model_version": result.model_version}


@svc.api(input=rio.Image(), output=rio.JSON())
async def classify_latest(image: Image.Image) -> dict[str, Any]:
    """digits_onnx, its latest version."""
    result = await triton_runner.digits_onnx.async_run(preprocess(image))
    return {"label": int(result.as_numpy("logits")[0].argmax()), "model_version": result.model_version}
