"""Plain text in and out (UTF-8 unless the request declares another charset)."""

from __future__ import annotations

import codecs
from typing import Any

from starlette.requests import Request

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import IODescriptor


def _charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


class Text(IODescriptor):
    """A text body given to the API as `str`; as an output, a `str` written as UTF-8 text/plain."""

    type_name = "Text"
    media_type = "text/plain"

    def __init__(self) -> None:
        pass

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> Text:
        if not isinstance(sample, str):
            raise TypeError(f"Text.from_sample takes a str, got {type(sample).__name__}")
        descriptor = cls(**kwargs)
        descriptor.sample = sample
        return descriptor

    async def from_http_request(self, request: Request) -> str:
        return self.decode(await request.body(), _charset(request.headers.get("content-type", "")))

    async def from_bytes(self, data: bytes, media_type: str | None) -> str:
        return self.decode(data, "utf-8")

    @staticmethod
    def decode(data: bytes, charset: str) -> str:
        try:
            codecs.lookup(charset)
        except LookupError:
            raise BadRequestError(f"Text input: unknown charset {charset!r}; expected utf-8") from None
        try:
            return data.decode(charset)
        except UnicodeDecodeError as exc:
            raise BadRequestError(f"Text input: the body is not valid {charset} text: {exc}") from None

    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        if not isinstance(value, str):
            raise TypeError(f"a Text output must be a str, got {type(value).__name__}")
        return value.encode("utf-8"), "text/plain; charset=utf-8"

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def openapi_example(self) -> Any:
        return self.sample
