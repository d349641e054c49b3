"""Images: a PNG or JPEG body (or a multipart file field) in, a PIL image to the API; PNG out."""

from __future__ import annotations

import io
from typing import Any

from PIL import Image as PILImage
from PIL import UnidentifiedImageError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import MULTIPART as _MULTIPART
from runnerkit.io._base import IODescriptor, check_content_type, read_file_field

_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/jpg": "JPEG"}
# Decoding a small image costs less than a hop to the thread pool; big ones leave the event loop.
_INLINE_DECODE_BYTES = 64 * 1024


def decode_image(data: bytes, allowed: tuple[str, ...], declared: str | None = None) -> PILImage.Image:
    try:
        image = PILImage.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        what = f"declared as {declared}" if declared else "the image"
        raise BadRequestError(f"cannot decode {what}: {exc}") from None
    found = PILImage.MIME.get(image.format or "", "unknown")
    if found not in allowed:
        raise BadRequestError(f"expected an image of type {' or '.join(allowed)}, got {found}")
    return image


class Image(IODescriptor):
    type_name = "Image"
    media_type = "image/png"

    def __init__(self, mime_types: tuple[str, ...] = ("image/png", "image/jpeg"), field: str = "file"):
        unknown = [m for m in mime_types if m not in _FORMATS]
        if unknown:
            raise ValueError(f"Image(mime_types=...) supports {sorted(_FORMATS)}, got {unknown}")
        self.mime_types = tuple(mime_types)
        self.field = field

    async def from_http_request(self, request: Request) -> PILImage.Image:
        media_type = check_content_type(request, (*self.mime_types, _MULTIPART), "Image input")
        if media_type == _MULTIPART:
            data, declared = await read_file_field(request, self.field, "Image input")
        else:
            data = await request.body()
            declared = media_type
        return await self.decode(data, declared)

    async def decode(self, data: bytes, declared: str | None) -> PILImage.Image:
        if not data:
            raise BadRequestError("Image input: the request body is empty")
        if len(data) <= _INLINE_DECODE_BYTES:
            return decode_image(data, self.mime_types, declared)
        return await run_in_threadpool(decode_image, data, self.mime_types, declared)

    def to_http_response(self, value: Any) -> Response:
        if not isinstance(value, PILImage.Image):
            raise TypeError(f"an Image output must be a PIL.Image.Image, got {type(value).__name__}")
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return Response(buffer.getvalue(), media_type="image/png")

    def openapi_request_body(self) -> dict[str, Any]:
        binary = {"schema": {"type": "string", "format": "binary"}}
        content: dict[str, Any] = {m: dict(binary) for m in self.mime_types}
        content[_MULTIPART] = {"schema": {"type": "object", "properties": {self.field: binary["schema"]}}}
        return {"required": True, "content": content}

    def to_spec(self) -> dict[str, Any]:
        return {"type": self.type_name, "mime_types": list(self.mime_types)}
