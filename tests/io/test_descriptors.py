"""IO descriptors on their own: settings inferred from samples, decoding, encoding, schemas.

(Over HTTP, through a real server, in tests/service/test_descriptors_http.py.)
"""

from __future__ import annotations

import asyncio
import io as stdio
import json
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np
import pydantic
import pytest
from openapi_spec_validator import validate
from PIL import Image

from runnerkit import io
from runnerkit.exceptions import BadRequestError


def decode(descriptor: io.IODescriptor, data: bytes, media_type: str | None = None) -> Any:
    return asyncio.run(descriptor.from_bytes(data, media_type))


def png(size: tuple[int, int] = (8, 8), mode: str = "L", color: int | tuple[int, ...] = 0) -> bytes:
    buffer = stdio.BytesIO()
    Image.new(mode, size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def schema_is_valid(descriptor: io.IODescriptor) -> None:
    """The descriptor's request body and response fit in a valid OpenAPI 3.0 document."""
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {
                "post": {
                    "requestBody": descriptor.openapi_request_body(),
                    "responses": {"200": descriptor.openapi_response()},
                }
            }
        },
        "components": {"schemas": descriptor.openapi_components()},
    }
    validate(json.loads(json.dumps(document)))


# -- NumpyNdarray --------------------------------------------------------------------------


def test_numpy_from_sample_infers_dtype_shape_and_example() -> None:
    descriptor = io.NumpyNdarray.from_sample(np.zeros((1, 64), np.float32))
    assert descriptor.dtype == np.float32
    assert descriptor.shape == (1, 64)
    assert descriptor.openapi_example() == [[0.0] * 64]
    schema = descriptor.openapi_schema()
    assert schema["type"] == "array" and schema["items"]["type"] == "array"
    assert schema["items"]["items"] == {"type": "number", "format": "float"}
    schema_is_valid(descriptor)


def test_numpy_converts_json_to_the_dtype() -> None:
    array = decode(io.NumpyNdarray(dtype="float32"), b"[[1, 2.5], [3, 4]]")
    assert array.dtype == np.float32
    np.testing.assert_array_equal(array, np.array([[1, 2.5], [3, 4]], np.float32))


def test_numpy_enforced_dtype_refuses_unsafe_values() -> None:
    ints = io.NumpyNdarray(dtype="int64", enforce_dtype=True)
    with pytest.raises(BadRequestError, match=r"expected integers \(dtype int64\), got numbers"):
        decode(ints, b"[1.5, 2]")
    assert decode(ints, b"[1, 2]").dtype == np.int64
    floats = io.NumpyNdarray(dtype="float32", enforce_dtype=True)
    assert decode(floats, b"[1, 2]").dtype == np.float32  # ints fit a float dtype
    with pytest.raises(BadRequestError, match="got strings"):
        decode(floats, b'["a"]')


def test_numpy_lenient_dtype_converts_or_says_why_not() -> None:
    lenient = io.NumpyNdarray(dtype="int64")
    assert decode(lenient, b"[1.7, 2.2]").tolist() == [1, 2]
    with pytest.raises(BadRequestError, match="cannot convert the values to dtype int64"):
        decode(lenient, b'["x"]')


def test_numpy_enforced_shape_names_expected_and_got() -> None:
    descriptor = io.NumpyNdarray(shape=(-1, 3), enforce_shape=True)
    assert decode(descriptor, b"[[1,2,3],[4,5,6]]").shape == (2, 3)
    with pytest.raises(BadRequestError) as caught:
        decode(descriptor, b"[[1,2],[3,4]]")
    assert "expected shape (-1, 3) (-1: any size), got (2, 2)" in str(caught.value)
    schema = descriptor.openapi_schema()
    assert schema["items"]["minItems"] == schema["items"]["maxItems"] == 3
    assert "minItems" not in schema


def test_numpy_refuses_ragged_and_non_numeric_json() -> None:
    descriptor = io.NumpyNdarray()
    with pytest.raises(BadRequestError, match="ragged"):
        decode(descriptor, b"[[1, 2], [3]]")
    with pytest.raises(BadRequestError, match="null or objects"):
        decode(descriptor, b'[{"a": 1}]')
    with pytest.raises(BadRequestError, match="not valid JSON"):
        decode(descriptor, b"[1, 2")
    with pytest.raises(BadRequestError, match="empty"):
        decode(descriptor, b"")


def test_numpy_output_is_a_nested_list_of_the_dtype() -> None:
    body, media_type = io.NumpyNdarray(dtype="int32").to_bytes(np.array([[1.9, 2.1]]))
    assert media_type == "application/json"
    assert json.loads(body) == [[1, 2]]
    strict = io.NumpyNdarray(dtype="float32", shape=(2,), enforce_dtype=True, enforce_shape=True)
    with pytest.raises(TypeError, match="dtype float64"):
        strict.to_bytes(np.zeros(2, np.float64))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        strict.to_bytes(np.zeros(3, np.float32))


def test_numpy_settings_are_checked_at_definition() -> None:
    with pytest.raises(ValueError, match="needs dtype"):
        io.NumpyNdarray(enforce_dtype=True)
    with pytest.raises(ValueError, match="needs shape"):
        io.NumpyNdarray(enforce_shape=True)
    with pytest.raises(ValueError, match="JSON holds"):
        io.NumpyNdarray(dtype="complex64")


# -- JSON ----------------------------------------------------------------------------------


@attrs.frozen
class Inner:
    depth: float


@attrs.frozen
class Record:
    name: str
    count: int = 1
    tags: list[str] = attrs.Factory(list)
    inner: Inner | None = None


class Part(pydantic.BaseModel):
    name: str
    kind: Literal["a", "b"] = "a"


class Item(pydantic.BaseModel):
    name: str
    kind: Literal["a", "b"] = "a"
    size: int | None = pydantic.Field(default=None, gt=0, lt=100)
    children: list[Part] = []


def test_json_attrs_model_validates_with_paths_in_errors() -> None:
    descriptor = io.JSON(model=Record)
    record = decode(descriptor, b'{"name": "n", "inner": {"depth": 2}}')
    assert record == Record("n", inner=Inner(2))
    cases = {
        b'{"name": 5}': "expected str @ body.name",
        b'{"count": 2}': "required field missing @ body.name",
        b'{"name": "n", "extra": 1}': "extra fields found (extra)",
        b'{"name": "n", "inner": {"depth": "deep"}}': "@ body.inner.depth",
        b'{"name": "n", "count": "3"}': "expected int @ body.count",
        b"[1]": "expected an object for Record, got list",
    }
    for body, message in cases.items():
        with pytest.raises(BadRequestError) as caught:
            decode(descriptor, body)
        assert message in str(caught.value), (body, str(caught.value))


def test_json_pydantic_model_validates() -> None:
    descriptor = io.JSON(model=Item)
    item = decode(descriptor, b'{"name": "x", "children": [{"name": "y", "kind": "b"}]}')
    assert isinstance(item, Item) and item.children[0].kind == "b"
    with pytest.raises(
        BadRequestError, match=r"JSON input does not match Item: kind: Input should be 'a' or 'b'"
    ):
        decode(descriptor, b'{"name": "x", "kind": "c"}')


def test_json_schemas_are_openapi_30() -> None:
    for descriptor in (io.JSON(), io.JSON(model=Record), io.JSON(model=Item)):
        schema_is_valid(descriptor)
    components = io.JSON(model=Record).openapi_components()
    assert components["Record"]["required"] == ["name"]
    assert components["Record"]["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert components["Record"]["properties"]["inner"]["nullable"] is True
    item = io.JSON(model=Item).openapi_components()["Item"]
    size = item["properties"]["size"]  # pydantic: anyOf [int with exclusive bounds, null]
    assert size["nullable"] is True and size["type"] == "integer"
    assert (size["minimum"], size["exclusiveMinimum"], size["maximum"], size["exclusiveMaximum"]) == (
        0,
        True,
        100,
        True,
    )
    assert "$defs" not in json.dumps(item)
    assert item["properties"]["children"]["items"] == {"$ref": "#/components/schemas/Part"}


def test_json_from_sample_sets_model_and_example() -> None:
    descriptor = io.JSON.from_sample(Record("r", 2))
    assert descriptor.model is Record
    assert descriptor.openapi_example() == {"name": "r", "count": 2, "tags": [], "inner": None}
    plain = io.JSON.from_sample({"a": np.float32(1.5), "b": np.arange(2)})
    assert plain.model is None and plain.openapi_example() == {"a": 1.5, "b": [0, 1]}


def test_json_output_writes_numpy_attrs_and_pydantic() -> None:
    body, _ = io.JSON().to_bytes({"a": np.arange(3), "r": Record("x"), "i": Item(name="y")})
    assert json.loads(body) == {
        "a": [0, 1, 2],
        "r": {"name": "x", "count": 1, "tags": [], "inner": None},
        "i": {"name": "y", "kind": "a", "size": None, "children": []},
    }


# -- Text, File, Image -----------------------------------------------------------------------


def test_text_round_trip_and_bad_encoding() -> None:
    descriptor = io.Text.from_sample("hello")
    assert descriptor.openapi_example() == "hello"
    assert decode(descriptor, "grüße".encode()) == "grüße"
    assert descriptor.to_bytes("é") == ("é".encode(), "text/plain; charset=utf-8")
    with pytest.raises(BadRequestError, match="not valid utf-8"):
        decode(descriptor, b"\xff\xfe\xfa")
    with pytest.raises(TypeError, match="must be a str"):
        descriptor.to_bytes(3)


def test_file_from_sample_takes_the_media_type_of_the_path(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(b"%PDF-1.4")
    descriptor = io.File.from_sample(path)
    assert descriptor.mime_types == ("application/pdf",)
    assert descriptor.sample == b"%PDF-1.4"
    assert descriptor.to_bytes(b"x") == (b"x", "application/pdf")
    schema_is_valid(descriptor)


def test_image_decodes_checks_the_real_format_and_encodes() -> None:
    descriptor = io.Image(mime_types=("image/png",))
    image = decode(descriptor, png((5, 3)))
    assert image.size == (5, 3)
    jpeg = stdio.BytesIO()
    Image.new("RGB", (4, 4)).save(jpeg, format="JPEG")
    with pytest.raises(BadRequestError, match="expected an image of type image/png, got image/jpeg"):
        decode(descriptor, jpeg.getvalue())
    with pytest.raises(BadRequestError, match="cannot decode"):
        decode(descriptor, b"GIF89a nonsense")
    body, media_type = io.Image(mime_types=("image/jpeg",)).to_bytes(Image.new("RGBA", (4, 4)))
    assert media_type == "image/jpeg" and Image.open(stdio.BytesIO(body)).format == "JPEG"


def test_image_from_sample_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.png"
    path.write_bytes(png((7, 9)))
    descriptor = io.Image.from_sample(path)
    assert descriptor.sample.size == (7, 9)
    assert "7x9" in descriptor.openapi_schema()["description"]
    with pytest.raises(ValueError, match="refuses"):
        io.Image.from_sample(path, mime_types=("image/jpeg",))


# -- Multipart -------------------------------------------------------------------------------


def test_multipart_from_sample_infers_a_descriptor_per_field() -> None:
    descriptor = io.Multipart.from_sample(
        {"image": Image.new("L", (2, 2)), "meta": {"k": 1}, "values": np.ones(3, np.int64), "note": "hi"}
    )
    kinds = {name: type(field).__name__ for name, field in descriptor.fields.items()}
    assert kinds == {"image": "Image", "meta": "JSON", "values": "NumpyNdarray", "note": "Text"}
    assert descriptor.openapi_example() == {"meta": {"k": 1}, "values": [1, 1, 1], "note": "hi"}
    schema_is_valid(descriptor)


def test_multipart_output_parts_are_encoded_by_their_descriptors() -> None:
    descriptor = io.Multipart(meta=io.JSON(), picture=io.Image(), note=io.Text())
    body, content_type = descriptor.to_bytes(
        {"meta": {"a": 1}, "picture": Image.new("L", (3, 3)), "note": "done"}
    )
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    parts = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
    assert json.loads(parts["meta"].get_payload(decode=True)) == {"a": 1}
    assert parts["picture"].get_content_type() == "image/png"
    assert Image.open(stdio.BytesIO(parts["picture"].get_payload(decode=True))).size == (3, 3)
    assert parts["note"].get_payload(decode=True) == b"done"
    with pytest.raises(ValueError, match="must have the fields"):
        descriptor.to_bytes({"meta": {}})


def test_multipart_fields_must_be_plain_descriptors() -> None:
    with pytest.raises(TypeError, match="other than Multipart"):
        io.Multipart(inner=io.Multipart(a=io.Text()))
    with pytest.raises(TypeError, match="must be an IO descriptor"):
        io.Multipart(a="text")  # type: ignore[arg-type]
