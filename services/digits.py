"""The example service: classify handwritten digits with the models of ./model_repository.

Serve it with `runnerkit serve services/digits.py:svc`, then:
    curl -s -X POST -H 'Content-Type: image/png' --data-binary @samples/digit_3.png \
        http://127.0.0.1:3000/classify
The API docs are at http://127.0.0.1:3000/docs.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import runnerkit
from runnerkit import io as rio
from runnerkit.exceptions import BadRequestError, ModelNotFoundError

ROOT = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = ROOT / "model_repository"
SAMPLE_IMAGE = ROOT / "samples" / "digit_3.png"

# Explicit model control (every model loaded at start) lets the management APIs load and unload.
# digits_onnx and digits_torchscript enable dynamic batching, so the runner coalesces concurrent
# calls to them into batched requests (micro-batching; see runnerkit.triton.MicroBatching).
triton_runner = runnerkit.triton.Runner(
    "triton_runner",
    model_repository=MODEL_REPOSITORY,
    cli_args=["--model-control-mode=explicit", "--load-model=*"],
)
svc = runnerkit.Service("digits", runners=[triton_runner])

# The sample shows in the docs; a copy of the service without samples/ (a bento that leaves
# them out) still serves.
image_input = rio.Image.from_sample(SAMPLE_IMAGE) if SAMPLE_IMAGE.is_file() else rio.Image()
encoded_input = (
    rio.File.from_sample(SAMPLE_IMAGE, mime_types=("image/png", "image/jpeg"))
    if SAMPLE_IMAGE.is_file()
    else rio.File(mime_types=("image/png", "image/jpeg"))
)
prediction_output = rio.JSON.from_sample({"label": 3, "probability": 0.98, "probabilities": [0.002] * 10})


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


@svc.api(input=image_input, output=prediction_output)
async def classify(image: Image.Image) -> dict[str, Any]:
    """Classify a digit image (PNG or JPEG, bright ink on a dark background) with digits_onnx."""
    result = await triton_runner.digits_onnx.async_run(preprocess(image))
    return postprocess(result.as_numpy("logits"))


@svc.api(input=image_input, output=prediction_output)
def classify_torchscript(image: Image.Image) -> dict[str, Any]:
    """The same through the TorchScript model (a sync API: it runs in the thread pool)."""
    result = triton_runner.digits_torchscript.run(preprocess(image))
    return postprocess(result.as_numpy("OUTPUT__0"))


@svc.api(input=encoded_input, output=rio.JSON.from_sample({"label": 3, "probability": 0.98}))
async def classify_pipeline(data: bytes) -> dict[str, Any]:
    """The encoded image sent as-is through the digits_pipeline ensemble (pre/post in Triton)."""
    try:
        Image.open(io.BytesIO(data))  # reads the header only: refuse non-images here with 400
    except Exception as exc:
        raise BadRequestError(f"expected a PNG or JPEG image: {exc}") from None
    result = await triton_runner.digits_pipeline.async_run(image=np.array([[data]], dtype=object))
    return {
        "label": int(result.as_numpy("label")[0, 0]),
        "probability": float(result.as_numpy("probability")[0, 0]),
    }


@svc.api(input=image_input, output=prediction_output)
async def classify_v1(image: Image.Image) -> dict[str, Any]:
    """Pinned to version 1 of digits_onnx (both versions are served)."""
    result = await triton_runner.digits_onnx.with_version(1).async_run(preprocess(image))
    return postprocess(result.as_numpy("logits")) | {"model_version": result.model_version}


# -- management APIs, as in BentoML's Triton example: under /admin, tagged "management" --------

model_name_input = rio.Text.from_sample("digits_onnx")


def _model_name(text: str) -> str:
    name = text.strip()
    if not name:
        raise BadRequestError("expected a model name as the text body, e.g. digits_onnx")
    return name


@svc.api(input=rio.Text(), output=rio.JSON(), route="/admin/list_models", tags=["management"])
async def list_models(_: str) -> list[dict[str, str]]:
    """The repository index: every model with its versions and state (the body is ignored)."""
    return await triton_runner.model_index()


@svc.api(input=model_name_input, output=rio.JSON(), route="/admin/model_config", tags=["management"])
async def model_config(model_name: str) -> dict[str, Any]:
    """A model's configuration as Triton reports it."""
    name = _model_name(model_name)
    models = triton_runner.models
    if name not in models:
        raise ModelNotFoundError(f"no model {name!r}; the repository has {sorted(models)}")
    return (await models[name].config()).to_dict()


@svc.api(input=model_name_input, output=rio.JSON(), route="/admin/load_model", tags=["management"])
async def load_model(model_name: str) -> dict[str, Any]:
    """Load (or reload) a model of the repository."""
    name = _model_name(model_name)
    await triton_runner.load_model(name)
    return {"loaded": name}


@svc.api(input=model_name_input, output=rio.JSON(), route="/admin/unload_model", tags=["management"])
async def unload_model(model_name: str) -> dict[str, Any]:
    """Unload a model; its inference APIs answer with Triton's error until it is loaded again."""
    name = _model_name(model_name)
    await triton_runner.unload_model(name)
    return {"unloaded": name}
