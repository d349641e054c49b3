"""Images: a PNG or JPEG body (or a multipart file field) in, a PIL image to the API; PNG out."""

from __future__ import annotations

import functools
import io
import os
from pathlib import Path
from typing import Any

from PIL import Image as PILImage
from PIL import UnidentifiedImageError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import BINARY_SCHEMA, MULTIPART, IODescriptor, check_content_type, read_file_field

_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/jpg": "JPEG"}
# Decoding a small image costs less than a hop to the thread pool; big ones leave the event loop.
_INLINE_DECODE_BYTES = 64 * 1024


@functools.cache
def _pil_formats(allowed: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({_FORMATS[m] for m in allowed if m in _FORMATS}))


def decode_image(data: bytes, allowed: tuple[str, ...], declared: str | None = None) -> PILImage.Image:
    try:
        try:
            # The plugins of the accepted formats first: faster than asking every plugin.
            image = PILImage.open(io.BytesIO(data), formats=_pil_formats(allowed))
        except UnidentifiedImageError:
            image = PILImage.open(io.BytesIO(data))  # any format, to say below which one it is
        image.load()
    except (UnidentifiedImageError, OSError, ValueError, PILImage.DecompressionBombError) as exc:
        what = f"the body declared as {declared}" if declared else "the image"
        raise BadRequestError(f"Image input: cannot decode {what} as {' or '.join(allowed)}: {exc}") from None
    found = PILImage.MIME.get(image.format or "", "unknown")
    if found not in allowed:
        raise BadRequestError(f"Image input: expected an image of type {' or '.join(allowed)}, got {found}")
    return image


class Image(IODescriptor):
    """A PNG or JPEG body (Content-Type one of `mime_types`) or the file in multipart field
    `field`, given to the API as a `PIL.Image.Image`; the actual format is checked too. As an
    output, a PIL image encoded as the first of `mime_types` (PNG by default)."""

    type_name = "Image"
    media_type = "image/png"

    def __init__(self, mime_types: tuple[str, ...] = ("image/png", "image/jpeg"), field: str = "file"):
        if isinstance(mime_types, str):
            mime_types = (mime_types,)
        unknown = [m for m in mime_types if m not in _FORMATS]
        if unknown or not mime_types:
            raise ValueError(f"Image(mime_types=...) supports {sorted(_FORMATS)}, got {list(mime_types)}")
        self.mime_types = tuple(mime_types)
        self.field = field

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> Image:
        """`sample` is a PIL image, encoded bytes, or a path to a PNG/JPEG file."""
        if isinstance(sample, (str, os.PathLike)):
            sample = Path(sample).read_bytes()
        if isinstance(sample, (bytes, bytearray)):
            sample = decode_image(bytes(sample), tuple(_FORMATS))
        if not isinstance(sample, PILImage.Image):
            raise TypeError(
                f"Image.from_sample takes a PIL image, bytes or a path, got {type(sample).__name__}"
            )
        descriptor = cls(**kwargs)
        found = PILImage.MIME.get(sample.format or "")
        if found is not None and found not in descriptor.mime_types:
            raise ValueError(
                f"Image.from_sample: the sample is {found}, which mime_types={descriptor.mime_types} refuses"
            )
        descriptor.sample = sample
        return descriptor

    async def from_http_request(self, request: Request) -> PILImage.Image:
        media_type = check_content_type(request, (*self.mime_types, MULTIPART), "Image input")
        if media_type == MULTIPART:
            data, declared = await read_file_field(request, self.field, "Image input")
        else:
            data, declared = await request.body(), media_type
        return await self.from_bytes(data, declared)

    async def from_bytes(self, data: bytes, media_type: str | None) -> PILImage.Image:
        if not data:
            raise BadRequestError("Image input: the body is empty; expected a PNG or JPEG image")
        if len(data) <= _INLINE_DECODE_BYTES:
            return decode_image(data, self.mime_types, media_type)
        return await run_in_threadpool(decode_image, data, self.mime_types, media_type)

    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        if not isinstance(value, PILImage.Image):
            raise TypeError(f"an Image output must be a PIL.Image.Image, got {type(value).__name__}")
        kind = self.mime_types[0]
        if _FORMATS[kind] == "JPEG" and value.mode not in ("RGB", "L", "CMYK"):
            value = value.convert("RGB")  # JPEG has no alpha channel
        buffer = io.BytesIO()
        value.save(buffer, format=_FORMATS[kind])
        return buffer.getvalue(), "image/jpeg" if kind == "image/jpg" else kind

    def openapi_schema(self) -> dict[str, Any]:
        schema = dict(BINARY_SCHEMA)
        if isinstance(self.sample, PILImage.Image):
            sample = self.sample
            kind = sample.format or ""
            schema["description"] = f"for example a {sample.width}x{sample.height} {kind} image"
        return schema

    def openapi_request_body(self) -> dict[str, Any]:
        content: dict[str, Any] = {m: {"schema": self.openapi_schema()} for m in self.mime_types}
        content[MULTIPART] = {
            "schema": {
                "type": "object",
                "properties": {self.field: self.openapi_schema()},
                "required": [self.field],
            }
        }
        return {"required": True, "content": content}

    def openapi_response(self) -> dict[str, Any]:
        kind = "image/jpeg" if self.mime_types[0] == "image/jpg" else self.mime_types[0]
        return {"description": "Successful Response", "content": {kind: {"schema": self.openapi_schema()}}}

    def to_spec(self) -> dict[str, Any]:
        return {"type": self.type_name, "mime_types": list(self.mime_types)}

    def __repr__(self) -> str:
        return f"Image(mime_types={self.mime_types!r})"
