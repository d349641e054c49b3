"""The IO descriptor protocol: how an API's argument is read from HTTP and its result written."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from starlette.requests import Request
from starlette.responses import Response

from runnerkit.exceptions import BadRequestError

MULTIPART = "multipart/form-data"
BINARY_SCHEMA: dict[str, Any] = {"type": "string", "format": "binary"}


class IODescriptor(abc.ABC):
    """Reads one API argument from a request, writes one API result as a response.

    A descriptor decodes bytes (`from_bytes`) and encodes values (`to_bytes`); reading a whole
    request body and being one field of a `Multipart` are both built on those two. Subclasses
    describe themselves for OpenAPI (`openapi_schema`, `openapi_example`, `media_type`) and
    for bento.yaml (`to_spec`). `from_sample` builds a descriptor whose settings are inferred
    from a sample value; the sample becomes the OpenAPI example.
    """

    type_name: ClassVar[str]
    # The media type of the bodies this descriptor writes, and the one documented first.
    media_type: ClassVar[str] = "application/octet-stream"

    sample: Any = None

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> IODescriptor:
        """A descriptor with `sample` as its documented example (subclasses infer settings)."""
        descriptor = cls(**kwargs)
        descriptor.sample = sample
        return descriptor

    # -- reading and writing -------------------------------------------------------------------

    async def from_http_request(self, request: Request) -> Any:
        """The API argument; raises BadRequestError naming what was wrong and what was expected."""
        media_type = request_media_type(request)
        return await self.from_bytes(await request.body(), media_type or None)

    @abc.abstractmethod
    async def from_bytes(self, data: bytes, media_type: str | None) -> Any:
        """Decode one body (or one multipart part) declared as `media_type` (None: undeclared)."""

    @abc.abstractmethod
    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        """Encode an API result: the body and its media type. Raise TypeError for a wrong value."""

    def to_http_response(self, value: Any) -> Response:
        body, media_type = self.to_bytes(value)
        return Response(body, media_type=media_type)

    # -- description -------------------------------------------------------------------------

    def openapi_schema(self) -> dict[str, Any]:
        return dict(BINARY_SCHEMA)

    def openapi_example(self) -> Any:
        """A JSON-able example for the OpenAPI document (None: binary bodies have none)."""
        return None

    def openapi_components(self) -> dict[str, Any]:
        """Named schemas that `openapi_schema` refers to (`#/components/schemas/<name>`)."""
        return {}

    def openapi_request_body(self) -> dict[str, Any]:
        return {"required": True, "content": {self.media_type: self._openapi_content()}}

    def openapi_response(self) -> dict[str, Any]:
        return {"description": "Successful Response", "content": {self.media_type: self._openapi_content()}}

    def _openapi_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {"schema": self.openapi_schema()}
        example = self.openapi_example()
        if example is not None:
            content["example"] = example
        return content

    def to_spec(self) -> dict[str, Any]:
        """A plain description for bento.yaml."""
        return {"type": self.type_name}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def request_media_type(request: Request) -> str:
    """The request's media type without parameters, lower case ('' when there is none)."""
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def check_content_type(request: Request, accepted: tuple[str, ...], what: str) -> str:
    """The request's media type, or BadRequestError if it is not one of `accepted`."""
    media_type = request_media_type(request)
    if media_type not in accepted:
        raise BadRequestError(
            f"{what}: expected Content-Type {' or '.join(accepted)}, got {media_type or 'none'}"
        )
    return media_type


async def read_form(request: Request) -> Any:
    """The parsed multipart form; the app's body limit already bounds its size."""
    # Starlette caps non-file parts at 1 MiB by default; the service's own limit applies instead.
    return await request.form(max_part_size=2**31 - 1)


async def read_file_field(request: Request, field: str, what: str) -> tuple[bytes, str | None]:
    """The bytes and declared type of the file in multipart field `field`."""
    form = await read_form(request)
    upload = form.get(field)
    if upload is None or isinstance(upload, str):
        raise BadRequestError(
            f"multipart {what}: expected a file in field {field!r}, got fields {sorted(form.keys())}"
        )
    return await upload.read(), upload.content_type
