"""The IO descriptor protocol: how an API's argument is read from HTTP and its result written."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from starlette.requests import Request
from starlette.responses import Response

from runnerkit.exceptions import BadRequestError


class IODescriptor(abc.ABC):
    """Reads one API argument from a request, writes one API result as a response.

    Subclasses describe themselves for OpenAPI (`openapi_schema`, `media_type`) and for
    bento.yaml (`to_spec`). `from_sample` builds a descriptor whose sample becomes the OpenAPI
    example.
    """

    type_name: ClassVar[str]
    media_type: ClassVar[str] = "application/octet-stream"

    sample: Any = None

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> IODescriptor:
        descriptor = cls(**kwargs)
        descriptor.sample = sample
        return descriptor

    @abc.abstractmethod
    async def from_http_request(self, request: Request) -> Any:
        """The API argument; raise BadRequestError naming what was wrong and what was expected."""

    @abc.abstractmethod
    def to_http_response(self, value: Any) -> Response:
        """The API result as a response."""

    # -- description -------------------------------------------------------------------------

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "binary"}

    def openapi_example(self) -> Any:
        return None

    def openapi_request_body(self) -> dict[str, Any]:
        content: dict[str, Any] = {"schema": self.openapi_schema()}
        example = self.openapi_example()
        if example is not None:
            content["example"] = example
        return {"required": True, "content": {self.media_type: content}}

    def openapi_response(self) -> dict[str, Any]:
        content: dict[str, Any] = {"schema": self.openapi_schema()}
        return {"description": "Successful Response", "content": {self.media_type: content}}

    def to_spec(self) -> dict[str, Any]:
        """A plain description for bento.yaml."""
        return {"type": self.type_name}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_content_type(request: Request, accepted: tuple[str, ...], what: str) -> str:
    """The request's media type, or BadRequestError if it is not one of `accepted`."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type not in accepted:
        raise BadRequestError(
            f"{what}: expected Content-Type {' or '.join(accepted)}, got {media_type or 'none'}"
        )
    return media_type


MULTIPART = "multipart/form-data"


async def read_file_field(request: Request, field: str, what: str) -> tuple[bytes, str | None]:
    """The bytes and declared type of the file in multipart field `field`."""
    form = await request.form()
    upload = form.get(field)
    if upload is None or isinstance(upload, str):
        raise BadRequestError(
            f"multipart {what}: expected a file in field {field!r}, got fields {sorted(form.keys())}"
        )
    return await upload.read(), upload.content_type
