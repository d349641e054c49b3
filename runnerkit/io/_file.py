"""Raw bytes in (a body of an accepted type, or a multipart file field) and out."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from runnerkit.io._base import MULTIPART as _MULTIPART
from runnerkit.io._base import IODescriptor, check_content_type, read_file_field


class File(IODescriptor):
    type_name = "File"
    media_type = "application/octet-stream"

    def __init__(
        self, mime_types: tuple[str, ...] = ("application/octet-stream",), field: str = "file"
    ) -> None:
        self.mime_types = tuple(m.lower() for m in mime_types)
        self.field = field

    async def from_http_request(self, request: Request) -> bytes:
        media_type = check_content_type(request, (*self.mime_types, _MULTIPART), "File input")
        if media_type != _MULTIPART:
            return await request.body()
        data, _ = await read_file_field(request, self.field, "File input")
        return data

    def to_http_response(self, value: Any) -> Response:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"a File output must be bytes, got {type(value).__name__}")
        return Response(bytes(value), media_type=self.mime_types[0])

    def openapi_request_body(self) -> dict[str, Any]:
        binary = {"type": "string", "format": "binary"}
        content: dict[str, Any] = {m: {"schema": binary} for m in self.mime_types}
        content[_MULTIPART] = {"schema": {"type": "object", "properties": {self.field: binary}}}
        return {"required": True, "content": content}

    def to_spec(self) -> dict[str, Any]:
        return {"type": self.type_name, "mime_types": list(self.mime_types)}
