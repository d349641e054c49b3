"""A service with one API per IO descriptor (in and out) and APIs that fail on purpose.

Served by the tests with `runnerkit serve tests/service/echo_service.py:svc`; its runner
attaches to the session's tritonserver on the example repository (RUNNERKIT_TRITON_ADDRESSES).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pydantic
from PIL import Image, ImageOps

import runnerkit
from runnerkit import io

REPO_ROOT = Path(__file__).resolve().parents[2]

triton_runner = runnerkit.triton.Runner("triton_runner", model_repository=REPO_ROOT / "model_repository")
svc = runnerkit.Service("echo", runners=[triton_runner], expose_triton=True)


@attrs.frozen
class Point:
    x: int
    y: int
    label: str | None = None


class Order(pydantic.BaseModel):
    item: str
    quantity: int = pydantic.Field(gt=0)
    note: str | None = None


@svc.api(input=io.JSON(), output=io.JSON())
def echo_json(value: Any) -> Any:
    return {"received": value}


@svc.api(input=io.JSON.from_sample(Point(1, 2, "a")), output=io.JSON())
def point(value: Point) -> Point:
    assert isinstance(value, Point)
    return Point(value.y, value.x, value.label)


@svc.api(input=io.JSON(model=Order), output=io.JSON())
def order(value: Order) -> Order:
    assert isinstance(value, Order)
    return value.model_copy(update={"quantity": value.quantity * 10})


@svc.api(
    input=io.NumpyNdarray(dtype="float32", shape=(-1, 4), enforce_dtype=True, enforce_shape=True),
    output=io.NumpyNdarray(dtype="float32"),
)
def double_strict(array: np.ndarray) -> np.ndarray:
    assert array.dtype == np.float32
    return array * 2


@svc.api(input=io.NumpyNdarray(dtype="int64"), output=io.JSON())
def describe_array(array: np.ndarray) -> dict[str, Any]:
    return {"dtype": str(array.dtype), "shape": list(array.shape), "sum": int(array.sum())}


@svc.api(input=io.Text.from_sample("hello"), output=io.Text())
def shout(text: str) -> str:
    return text.upper() + "!"


@svc.api(input=io.File(), output=io.File())
def reverse_bytes(data: bytes) -> bytes:
    return data[::-1]


@svc.api(input=io.Image(), output=io.Image())
def invert(image: Image.Image) -> Image.Image:
    return ImageOps.invert(image.convert("L"))


@svc.api(input=io.Image(), output=io.Image(mime_types=("image/jpeg",)))
def to_jpeg(image: Image.Image) -> Image.Image:
    return image


@svc.api(
    input=io.Multipart(image=io.Image(), meta=io.JSON(model=Point), values=io.NumpyNdarray(dtype="float32")),
    output=io.Multipart(size=io.JSON(), caption=io.Text(), values=io.NumpyNdarray(), thumbnail=io.Image()),
)
def annotate(parts: dict[str, Any]) -> dict[str, Any]:
    image: Image.Image = parts["image"]
    meta: Point = parts["meta"]
    return {
        "size": [image.width, image.height],
        "caption": f"point {meta.x},{meta.y}",
        "values": parts["values"] + 1,
        "thumbnail": image.resize((4, 4)),
    }


@svc.api(input=io.NumpyNdarray.from_sample(np.zeros((1, 64), np.float32)), output=io.JSON())
async def logits(x: np.ndarray) -> dict[str, Any]:
    """digits_onnx on a preprocessed batch; the runner checks the shape against the model."""
    result = await triton_runner.digits_onnx.async_run(x)
    return {"logits": result.as_numpy("logits").tolist()}


@svc.api(input=io.JSON(), output=io.JSON())
def boom(_: Any) -> Any:
    raise RuntimeError("secret detail that must stay in the log")


@svc.api(input=io.JSON(), output=io.Text())
def wrong_output(_: Any) -> Any:
    return {"not": "text"}
