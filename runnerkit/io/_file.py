"""Raw bytes in (a body of an accepted type, or a multipart file field) and out."""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from typing import Any

from starlette.requests import Request

from runnerkit.io._base import (
    BINARY_SCHEMA,
    MULTIPART,
    IODescriptor,
    check_content_type,
    read_file_field,
    request_media_type,
)

ANY_TYPE = "*/*"
_DEFAULT_TYPE = "application/octet-stream"


class File(IODescriptor):
    """Bytes: a body whose Content-Type is one of `mime_types` (`*/*` accepts any), or the file
    in multipart field `field`. As an output, bytes written with the first of `mime_types`."""

    type_name = "File"
    media_type = _DEFAULT_TYPE

    def __init__(self, mime_types: tuple[str, ...] = (_DEFAULT_TYPE,), field: str = "file") -> None:
        if isinstance(mime_types, str):
            mime_types = (mime_types,)
        if not mime_types:
            raise ValueError("File(mime_types=...) needs at least one media type (or '*/*')")
        self.mime_types = tuple(m.lower() for m in mime_types)
        self.field = field

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> File:
        """`sample` is bytes or a path; a path's media type (from its suffix) becomes `mime_types`."""
        if isinstance(sample, (str, os.PathLike)):
            path = Path(sample)
            if "mime_types" not in kwargs:
                guessed = mimetypes.guess_type(path.name)[0]
                kwargs["mime_types"] = (guessed or _DEFAULT_TYPE,)
            sample = path.read_bytes()
        if not isinstance(sample, (bytes, bytearray)):
            raise TypeError(f"File.from_sample takes bytes or a path, got {type(sample).__name__}")
        descriptor = cls(**kwargs)
        descriptor.sample = bytes(sample)
        return descriptor

    @property
    def response_type(self) -> str:
        first = self.mime_types[0]
        return _DEFAULT_TYPE if first == ANY_TYPE else first

    async def from_http_request(self, request: Request) -> bytes:
        if ANY_TYPE in self.mime_types:
            media_type = request_media_type(request)
        else:
            media_type = check_content_type(request, (*self.mime_types, MULTIPART), "File input")
        if media_type != MULTIPART:
            return await request.body()
        data, _ = await read_file_field(request, self.field, "File input")
        return data

    async def from_bytes(self, data: bytes, media_type: str | None) -> bytes:
        return data

    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"a File output must be bytes, got {type(value).__name__}")
        return bytes(value), self.response_type

    def openapi_request_body(self) -> dict[str, Any]:
        content: dict[str, Any] = {m: {"schema": dict(BINARY_SCHEMA)} for m in self.mime_types}
        content[MULTIPART] = {
            "schema": {
                "type": "object",
                "properties": {self.field: dict(BINARY_SCHEMA)},
                "required": [self.field],
            }
        }
        return {"required": True, "content": content}

    def openapi_response(self) -> dict[str, Any]:
        content = {self.response_type: {"schema": dict(BINARY_SCHEMA)}}
        return {"description": "Successful Response", "content": content}

    def to_spec(self) -> dict[str, Any]:
        return {"type": self.type_name, "mime_types": list(self.mime_types)}

    def __repr__(self) -> str:
        return f"File(mime_types={self.mime_types!r})"
