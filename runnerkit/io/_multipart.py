"""multipart/form-data with one descriptor per field; the API gets (and returns) a dict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image as PILImage
from starlette.requests import Request
from starlette.responses import Response
from urllib3.fields import RequestField
from urllib3.filepost import encode_multipart_formdata

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import MULTIPART, IODescriptor, check_content_type, read_form
from runnerkit.io._file import File
from runnerkit.io._image import Image
from runnerkit.io._json import JSON
from runnerkit.io._numpy import NumpyNdarray
from runnerkit.io._text import Text


def descriptor_for_sample(sample: Any) -> IODescriptor:
    """The descriptor a sample value suggests: arrays, images, text, bytes, or JSON."""
    if isinstance(sample, IODescriptor):
        return sample
    if isinstance(sample, np.ndarray):
        return NumpyNdarray.from_sample(sample)
    if isinstance(sample, PILImage.Image):
        return Image.from_sample(sample)
    if isinstance(sample, str):
        return Text.from_sample(sample)
    if isinstance(sample, (bytes, bytearray)):
        return File.from_sample(bytes(sample))
    return JSON.from_sample(sample)


def _is_textual(media_type: str) -> bool:
    return media_type.startswith("text/") or media_type.startswith("application/json")


class Multipart(IODescriptor):
    """`Multipart(image=Image(), meta=JSON())`: a multipart/form-data body whose fields are read
    by their own descriptors; the API gets `{"image": <PIL image>, "meta": {...}}`. Every field
    is required and no other field is accepted. As an output, a dict with the same keys is
    written as multipart/form-data, each part encoded by its field's descriptor."""

    type_name = "Multipart"
    media_type = MULTIPART

    def __init__(self, **fields: IODescriptor) -> None:
        if not fields:
            raise ValueError(
                "Multipart(...) needs at least one field, e.g. Multipart(image=Image(), meta=JSON())"
            )
        for name, field in fields.items():
            if not isinstance(field, IODescriptor) or isinstance(field, Multipart):
                raise TypeError(
                    f"Multipart field {name!r} must be an IO descriptor other than Multipart, got {field!r}"
                )
        self.fields: dict[str, IODescriptor] = dict(fields)

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> Multipart:
        """`sample` maps field names to sample values (or descriptors); each field's descriptor
        is inferred from its value: ndarray -> NumpyNdarray, PIL image -> Image, str -> Text,
        bytes -> File, anything else -> JSON. Fields given as keyword arguments win."""
        if not isinstance(sample, Mapping):
            raise TypeError(
                f"Multipart.from_sample takes a mapping of field -> sample, got {type(sample).__name__}"
            )
        fields = {str(k): descriptor_for_sample(v) for k, v in sample.items()} | kwargs
        descriptor = cls(**fields)
        descriptor.sample = dict(sample)
        return descriptor

    async def from_http_request(self, request: Request) -> dict[str, Any]:
        check_content_type(request, (MULTIPART,), "Multipart input")
        form = await read_form(request)
        names = list(form.keys())
        missing = [f for f in self.fields if f not in names]
        unexpected = sorted({n for n in names if n not in self.fields})
        repeated = sorted({n for n in names if names.count(n) > 1})
        if missing or unexpected or repeated:
            problems = [
                f"{label} {items}"
                for label, items in (("missing", missing), ("unexpected", unexpected), ("repeated", repeated))
                if items
            ]
            raise BadRequestError(
                f"Multipart input: expected fields {list(self.fields)}; {', '.join(problems)}"
            )
        values: dict[str, Any] = {}
        for name, field in self.fields.items():
            item = form[name]
            if isinstance(item, str):
                data, declared = item.encode("utf-8"), None
            else:
                data, declared = await item.read(), item.content_type
            try:
                values[name] = await field.from_bytes(data, declared)
            except BadRequestError as exc:
                raise BadRequestError(f"Multipart field {name!r}: {exc}") from None
        return values

    async def from_bytes(self, data: bytes, media_type: str | None) -> Any:
        raise TypeError("a Multipart descriptor reads whole requests only; it cannot be a field itself")

    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        if not isinstance(value, Mapping):
            raise TypeError(
                f"a Multipart output must be a dict of {list(self.fields)}, got {type(value).__name__}"
            )
        if set(value) != set(self.fields):
            raise ValueError(
                f"a Multipart output must have the fields {list(self.fields)}, got {list(value)}"
            )
        parts = []
        for name, field in self.fields.items():
            body, media_type = field.to_bytes(value[name])
            part = RequestField(name=name, data=body, filename=None if _is_textual(media_type) else name)
            part.make_multipart(content_type=media_type)
            parts.append(part)
        body, content_type = encode_multipart_formdata(parts)
        return body, content_type

    def to_http_response(self, value: Any) -> Response:
        body, content_type = self.to_bytes(value)
        return Response(body, headers={"content-type": content_type})

    def openapi_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {name: field.openapi_schema() for name, field in self.fields.items()},
            "required": list(self.fields),
        }

    def openapi_example(self) -> Any:
        examples = {name: field.openapi_example() for name, field in self.fields.items()}
        examples = {k: v for k, v in examples.items() if v is not None}
        return examples or None

    def openapi_components(self) -> dict[str, Any]:
        components: dict[str, Any] = {}
        for field in self.fields.values():
            components.update(field.openapi_components())
        return components

    def _openapi_content(self) -> dict[str, Any]:
        content = super()._openapi_content()
        content["encoding"] = {name: {"contentType": field.media_type} for name, field in self.fields.items()}
        return content

    def to_spec(self) -> dict[str, Any]:
        return {"type": self.type_name, "fields": {k: f.to_spec() for k, f in self.fields.items()}}

    def __repr__(self) -> str:
        return f"Multipart({', '.join(f'{k}={f!r}' for k, f in self.fields.items())})"
