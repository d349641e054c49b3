"""The example service: classify handwritten digits with the models of ./model_repository.

Serve it with `runnerkit serve services/digits.py:svc`, then:
    curl -s -X POST -H 'Content-Type: image/png' --data-binary @samples/digit_3.png \
        http://127.0.0.1:3000/classify
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
from PIL import Image

import runnerkit
from runnerkit import io as rio

MODEL_REPOSITORY = Path(__file__).resolve().parent.parent / "model_repository"

triton_runner = runnerkit.triton.Runner("triton_runner", model_repository=MODEL_REPOSITORY)
svc = runnerkit.Service("digits", runners=[triton_runner])


def preprocess(image: Image.Image) -> np.ndarray:
    """8-bit grayscale, 8x8 box-resized, scaled to [0, 1]: a batch of one 64-value row."""
    pixels = np.asarray(image.convert("L").resize((8, 8), Image.Resampling.BOX), dtype=np.float32)
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


@svc.api(input=rio.Image(), output=rio.JSON())
async def classify(image: Image.Image) -> dict[str, Any]:
    """Classify a digit image (PNG or JPEG, bright ink on a dark background) with digits_onnx."""
    result = await triton_runner.digits_onnx.async_run(preprocess(image))
    return postprocess(result.as_numpy("logits"))


@svc.api(input=rio.Image(), output=rio.JSON())
def classify_torchscript(image: Image.Image) -> dict[str, Any]:
    """The same through the TorchScript model (a sync API: it runs in the thread pool)."""
    result = triton_runner.digits_torchscript.run(preprocess(image))
    return postprocess(result.as_numpy("OUTPUT__0"))


@svc.api(input=rio.File(mime_types=("image/png", "image/jpeg")), output=rio.JSON())
async def classify_pipeline(data: bytes) -> dict[str, Any]:
    """The encoded image sent as-is through the digits_pipeline ensemble (pre/post in Triton)."""
    result = await triton_runner.digits_pipeline.async_run(image=np.array([[data]], dtype=object))
    return {
        "label": int(result.as_numpy("label")[0, 0]),
        "probability": float(result.as_numpy("probability")[0, 0]),
    }


@svc.api(input=rio.Image(), output=rio.JSON())
async def classify_v1(image: Image.Image) -> dict[str, Any]:
    """Pinned to version 1 of digits_onnx (both versions are served)."""
    result = await triton_runner.digits_onnx.with_version(1).async_run(preprocess(image))
    return postprocess(result.as_numpy("logits")) | {"model_version": result.model_version}


# -- management APIs, kept apart under /admin and tagged "management" ------------------------


@attrs.frozen
class ModelName:
    model_name: str


@svc.api(input=rio.JSON(), output=rio.JSON(), route="/admin/models", tags=["management"])
async def list_models(_: Any) -> list[dict[str, str]]:
    """The repository index: every model with its versions and state."""
    return await triton_runner.model_index()


@svc.api(input=rio.JSON(model=ModelName), output=rio.JSON(), route="/admin/model_config", tags=["management"])
async def model_config(request: ModelName) -> dict[str, Any]:
    """A model's configuration as Triton reports it."""
    return (await getattr(triton_runner, request.model_name).config()).to_dict()


@svc.api(input=rio.JSON(model=ModelName), output=rio.JSON(), route="/admin/load", tags=["management"])
async def load_model(request: ModelName) -> dict[str, Any]:
    """Load (or reload) a model; needs tritonserver's model-control-mode=explicit."""
    await triton_runner.load_model(request.model_name)
    return {"loaded": request.model_name}


@svc.api(input=rio.JSON(model=ModelName), output=rio.JSON(), route="/admin/unload", tags=["management"])
async def unload_model(request: ModelName) -> dict[str, Any]:
    """Unload a model; needs tritonserver's model-control-mode=explicit."""
    await triton_runner.unload_model(request.model_name)
    return {"unloaded": request.model_name}
