"""JSON in and out, optionally validated against an attrs class or a pydantic model."""

from __future__ import annotations

import json
from typing import Any

import attrs
import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import IODescriptor


def _default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if attrs.has(type(value)):
        return attrs.asdict(value)
    if hasattr(value, "model_dump"):  # pydantic v2
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> bytes:
    return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":")).encode()


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


class JSON(IODescriptor):
    type_name = "JSON"
    media_type = "application/json"

    def __init__(self, model: type | None = None) -> None:
        if model is not None and not (attrs.has(model) or hasattr(model, "model_validate")):
            raise TypeError(f"JSON(model=...) takes an attrs class or a pydantic model, got {model!r}")
        self.model = model

    async def from_http_request(self, request: Request) -> Any:
        body = await request.body()
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise BadRequestError(f"request body is not valid JSON: {exc}") from None
        return self.validate(data)

    def validate(self, data: Any) -> Any:
        model = self.model
        if model is None:
            return data
        if hasattr(model, "model_validate"):
            try:
                return model.model_validate(data)
            except ValueError as exc:
                raise BadRequestError(f"JSON does not match {model.__name__}: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequestError(f"expected a JSON object for {model.__name__}, got {type(data).__name__}")
        try:
            return model(**data)
        except (TypeError, ValueError) as exc:
            raise BadRequestError(f"JSON does not match {model.__name__}: {exc}") from None

    def to_http_response(self, value: Any) -> Response:
        return JSONResponse(value)

    def openapi_schema(self) -> dict[str, Any]:
        model = self.model
        if model is not None and hasattr(model, "model_json_schema"):
            return dict(model.model_json_schema())
        if model is not None and attrs.has(model):
            return {
                "type": "object",
                "title": model.__name__,
                "properties": {f.name: {} for f in attrs.fields(model)},
            }
        return {"type": "object"}

    def openapi_example(self) -> Any:
        return None if self.sample is None else json.loads(dumps(self.sample))

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": self.type_name}
        if self.model is not None:
            spec["model"] = f"{self.model.__module__}.{self.model.__qualname__}"
        return spec
