"""JSON schemas for OpenAPI 3.0: from attrs classes, and pydantic's (JSON Schema 2020-12) made fit.

The bundled Swagger UI renders OpenAPI 3.0, whose schema objects lack `$defs`, `const`,
`type: "null"` and `examples`; pydantic emits those, so they are rewritten here.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

import attrs

REF_PREFIX = "#/components/schemas/"

_SCALARS: dict[Any, dict[str, Any]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    bytes: {"type": "string", "format": "byte"},
}


def attrs_schema(model: type, components: dict[str, Any]) -> dict[str, Any]:
    """A `$ref` to the schema of attrs class `model`, added (with nested classes) to `components`."""
    name = model.__name__
    if name not in components:
        components[name] = {}  # placeholder: recursive classes refer to themselves
        fields = attrs.fields(attrs.resolve_types(model))
        properties = {f.alias or f.name: type_schema(f.type, components) for f in fields if f.init}
        required = [f.alias or f.name for f in fields if f.init and f.default is attrs.NOTHING]
        schema: dict[str, Any] = {"type": "object", "title": name, "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        components[name] = schema
    return {"$ref": REF_PREFIX + name}


def type_schema(tp: Any, components: dict[str, Any]) -> dict[str, Any]:
    """The schema of a type annotation; anything unknown is `{}` (any value)."""
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    if isinstance(tp, type) and attrs.has(tp):
        return attrs_schema(tp, components)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        inner = (
            type_schema(options[0], components)
            if len(options) == 1
            else {"anyOf": [type_schema(a, components) for a in options]}
        )
        if len(options) < len(args):
            inner = {"allOf": [inner], "nullable": True} if "$ref" in inner else {**inner, "nullable": True}
        return inner
    if origin in (list, set, frozenset, collections.abc.Sequence) or tp in (list, tuple, set, frozenset):
        return {"type": "array", "items": type_schema(args[0], components) if args else {}}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], components)}
        items = [type_schema(a, components) for a in args]
        schema: dict[str, Any] = {"type": "array", "items": {"anyOf": items} if items else {}}
        return schema | {"minItems": len(args), "maxItems": len(args)}
    if origin is dict or tp is dict:
        values = type_schema(args[1], components) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": values}
    if origin is typing.Literal:
        return {"enum": list(args)}
    return {}


def pydantic_schema(model: Any, components: dict[str, Any]) -> dict[str, Any]:
    """A `$ref` to pydantic model `model`'s schema, rewritten for OpenAPI 3.0, in `components`."""
    schema = model.model_json_schema(ref_template=REF_PREFIX + "{model}")
    for name, definition in schema.pop("$defs", {}).items():
        components[name] = to_openapi30(definition)
    components[model.__name__] = to_openapi30(schema)
    return {"$ref": REF_PREFIX + model.__name__}


def to_openapi30(schema: Any) -> Any:
    """JSON Schema 2020-12 (as pydantic writes it) as an OpenAPI 3.0 schema object."""
    if isinstance(schema, list):
        return [to_openapi30(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$schema", "$defs", "$id"):
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "examples" and isinstance(value, list):
            if value:
                out["example"] = value[0]
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if len(kinds) < len(value):
                out["nullable"] = True
            if len(kinds) == 1:
                out["type"] = kinds[0]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            # 2020-12's bound is a number; OpenAPI 3.0's is a flag on minimum / maximum
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            options = [to_openapi30(v) for v in value if v != {"type": "null"}]
            if len(options) < len(value):
                out["nullable"] = True
            if len(options) != 1:
                out[key] = options
            elif "$ref" in options[0]:
                out["allOf"] = options
            else:
                out |= {k: v for k, v in options[0].items() if k not in out}
        elif key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: to_openapi30(v) for name, v in value.items()}
        elif key == "prefixItems":
            out["items"] = {"anyOf": to_openapi30(value)} if value else {}
        else:
            out[key] = to_openapi30(value)
    if "$ref" in out and len(out) > 1:
        # OpenAPI 3.0 ignores siblings of $ref; keep them by wrapping the reference.
        out = {"allOf": [{"$ref": out.pop("$ref")}], **out}
    return out
