"""JSON in and out, optionally validated against an attrs class or a pydantic model."""

from __future__ import annotations

import json
from typing import Any

import attrs
import cattrs
import numpy as np
from starlette.responses import Response

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import IODescriptor
from runnerkit.io._schema import attrs_schema, pydantic_schema


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


# One encoder for every answer: json.dumps with options would build a new one per call.
_ENCODER = json.JSONEncoder(default=_default, ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> bytes:
    return _ENCODER.encode(value).encode()


def loads(data: bytes, what: str) -> Any:
    """Parse a JSON body, or BadRequestError saying where it broke."""
    if not data.strip():
        raise BadRequestError(f"{what}: the body is empty; expected JSON")
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise BadRequestError(f"{what}: the body is not UTF-8 text: {exc}") from None
    except ValueError as exc:
        raise BadRequestError(f"{what}: the body is not valid JSON: {exc}") from None


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def _strict(kind: type) -> Any:
    """A cattrs hook that accepts only JSON values of `kind` (no "5" -> 5 coercion)."""
    accepted = (int, float) if kind is float else kind

    def structure(value: Any, _: Any) -> Any:
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, accepted):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return structure


def _attrs_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    for kind in (int, float, str, bool):
        converter.register_structure_hook(kind, _strict(kind))
    return converter


_CONVERTER = _attrs_converter()


class JSON(IODescriptor):
    """Any JSON value; with `model=` (an attrs class or a pydantic model) the body is validated
    and the API gets an instance. As an output, anything `json` can write, plus numpy arrays and
    scalars, attrs instances and pydantic models."""

    type_name = "JSON"
    media_type = "application/json"

    def __init__(self, model: type | None = None) -> None:
        if model is not None and not (attrs.has(model) or hasattr(model, "model_validate")):
            raise TypeError(f"JSON(model=...) takes an attrs class or a pydantic model, got {model!r}")
        self.model = model

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> JSON:
        """`sample` is any JSON-able value; an attrs or pydantic instance also sets `model=`."""
        if "model" not in kwargs and (attrs.has(type(sample)) or hasattr(sample, "model_validate")):
            kwargs["model"] = type(sample)
        descriptor = cls(**kwargs)
        dumps(sample)  # fails now, not when the docs are first read
        descriptor.sample = sample
        return descriptor

    async def from_bytes(self, data: bytes, media_type: str | None) -> Any:
        return self.validate(loads(data, "JSON input"))

    def validate(self, data: Any) -> Any:
        model = self.model
        if model is None:
            return data
        name = model.__name__
        if hasattr(model, "model_validate"):
            try:
                return model.model_validate(data)
            except ValueError as exc:  # pydantic.ValidationError
                errors = getattr(exc, "errors", None)
                detail = (
                    "; ".join(
                        f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in errors()
                    )
                    if callable(errors)
                    else str(exc)
                )
                raise BadRequestError(f"JSON input does not match {name}: {detail}") from None
        if not isinstance(data, dict):
            raise BadRequestError(f"JSON input: expected an object for {name}, got {type(data).__name__}")
        try:
            return _CONVERTER.structure(data, model)
        except Exception as exc:
            if isinstance(exc, cattrs.BaseValidationError):
                problems = cattrs.transform_error(exc, path="body")
            else:
                problems = [str(exc)]
            raise BadRequestError(f"JSON input does not match {name}: {'; '.join(problems)}") from None

    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        return dumps(value), self.media_type

    def openapi_components(self) -> dict[str, Any]:
        components: dict[str, Any] = {}
        self._schema(components)
        return components

    def openapi_schema(self) -> dict[str, Any]:
        return self._schema({})

    def _schema(self, components: dict[str, Any]) -> dict[str, Any]:
        model = self.model
        if model is None:
            return {}  # any JSON value
        if hasattr(model, "model_json_schema"):
            return pydantic_schema(model, components)
        return attrs_schema(model, components)

    def openapi_example(self) -> Any:
        return None if self.sample is None else json.loads(dumps(self.sample))

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": self.type_name}
        if self.model is not None:
            spec["model"] = f"{self.model.__module__}.{self.model.__qualname__}"
        return spec

    def __repr__(self) -> str:
        return "JSON()" if self.model is None else f"JSON(model={self.model.__name__})"
