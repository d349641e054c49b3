"""Every IO descriptor in and out through a real server (tests/service/echo_service.py)."""

from __future__ import annotations

import io as stdio
import json
from email.parser import BytesParser
from email.policy import HTTP

import httpx
import numpy as np
from PIL import Image, ImageOps

from tests.service.conftest import sample_png


def test_json_any_value(echo: httpx.Client) -> None:
    response = echo.post("/echo_json", json=[1, {"a": None}])
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"received": [1, {"a": None}]}


def test_json_attrs_model(echo: httpx.Client) -> None:
    response = echo.post("/point", json={"x": 1, "y": 5})
    assert response.json() == {"x": 5, "y": 1, "label": None}
    bad = echo.post("/point", json={"x": "one", "y": 5})
    assert bad.status_code == 400
    assert bad.json() == {
        "error": "JSON input does not match Point: invalid value for type, expected int @ body.x",
        "type": "BadRequestError",
    }


def test_json_pydantic_model(echo: httpx.Client) -> None:
    response = echo.post("/order", json={"item": "pen", "quantity": 2})
    assert response.json() == {"item": "pen", "quantity": 20, "note": None}
    bad = echo.post("/order", json={"item": "pen", "quantity": 0})
    assert bad.status_code == 400
    assert "quantity: Input should be greater than 0" in bad.json()["error"]


def test_numpy_enforced(echo: httpx.Client) -> None:
    response = echo.post("/double_strict", json=[[1, 2, 3, 4.5]])
    assert response.status_code == 200
    assert response.json() == [[2.0, 4.0, 6.0, 9.0]]
    wrong_shape = echo.post("/double_strict", json=[1, 2, 3, 4])
    assert wrong_shape.status_code == 400
    assert "expected shape (-1, 4) (-1: any size), got (4,)" in wrong_shape.json()["error"]
    wrong_type = echo.post("/double_strict", json=[["a", "b", "c", "d"]])
    assert wrong_type.status_code == 400
    assert "expected numbers (dtype float32), got strings" in wrong_type.json()["error"]


def test_numpy_lenient_converts(echo: httpx.Client) -> None:
    response = echo.post("/describe_array", json=[[1.9, 2], [3, 4]])
    assert response.json() == {"dtype": "int64", "shape": [2, 2], "sum": 10}


def test_text(echo: httpx.Client) -> None:
    response = echo.post("/shout", content="héllo".encode(), headers={"content-type": "text/plain"})
    assert response.text == "HÉLLO!"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    latin = echo.post(
        "/shout", content="é".encode("latin-1"), headers={"content-type": "text/plain; charset=latin-1"}
    )
    assert latin.text == "É!"
    bad = echo.post("/shout", content=b"\xff\xfe", headers={"content-type": "text/plain"})
    assert bad.status_code == 400 and "not valid utf-8" in bad.json()["error"]


def test_file_body_and_multipart(echo: httpx.Client) -> None:
    body = echo.post("/reverse_bytes", content=b"abc", headers={"content-type": "application/octet-stream"})
    assert body.content == b"cba"
    assert body.headers["content-type"] == "application/octet-stream"
    form = echo.post("/reverse_bytes", files={"file": ("x.bin", b"\x00\x01", "application/octet-stream")})
    assert form.content == b"\x01\x00"
    wrong_type = echo.post("/reverse_bytes", content=b"abc", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 400
    assert (
        "expected Content-Type application/octet-stream or multipart/form-data, got text/plain"
        in (wrong_type.json()["error"])
    )
    wrong_field = echo.post("/reverse_bytes", files={"upload": ("x.bin", b"1", "application/octet-stream")})
    assert wrong_field.status_code == 400
    assert "expected a file in field 'file', got fields ['upload']" in wrong_field.json()["error"]


def test_image_in_and_out(echo: httpx.Client) -> None:
    source = Image.open(stdio.BytesIO(sample_png()))
    response = echo.post("/invert", content=sample_png(), headers={"content-type": "image/png"})
    assert response.headers["content-type"] == "image/png"
    result = Image.open(stdio.BytesIO(response.content))
    assert np.array_equal(np.asarray(result), np.asarray(ImageOps.invert(source.convert("L"))))
    jpeg = echo.post("/to_jpeg", files={"file": ("d.png", sample_png(), "image/png")})
    assert jpeg.headers["content-type"] == "image/jpeg"
    assert Image.open(stdio.BytesIO(jpeg.content)).format == "JPEG"


def test_image_refusals(echo: httpx.Client) -> None:
    cases = {
        (
            "image/gif",
            sample_png(),
        ): "expected Content-Type image/png or image/jpeg or multipart/form-data, got image/gif",
        ("image/png", b"not a png"): "cannot decode the body declared as image/png",
        ("image/png", b""): "the body is empty",
    }
    for (media_type, body), message in cases.items():
        response = echo.post("/invert", content=body, headers={"content-type": media_type})
        assert response.status_code == 400
        assert message in response.json()["error"], response.json()
    no_type = echo.post("/invert", content=sample_png(), headers={"content-type": ""})
    assert no_type.status_code == 400 and "got none" in no_type.json()["error"]


def test_multipart_in_and_out(echo: httpx.Client) -> None:
    response = echo.post(
        "/annotate",
        data={"meta": json.dumps({"x": 3, "y": 4}), "values": "[1.5, 2.5]"},
        files={"image": ("d.png", sample_png(), "image/png")},
    )
    assert response.status_code == 200, response.text
    content_type = response.headers["content-type"]
    assert content_type.startswith("multipart/form-data; boundary=")
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + response.content
    )
    parts = {p.get_param("name", header="content-disposition"): p for p in message.iter_parts()}
    assert json.loads(parts["size"].get_payload(decode=True)) == list(
        Image.open(stdio.BytesIO(sample_png())).size
    )
    assert parts["caption"].get_payload(decode=True) == b"point 3,4"
    assert json.loads(parts["values"].get_payload(decode=True)) == [2.5, 3.5]
    assert Image.open(stdio.BytesIO(parts["thumbnail"].get_payload(decode=True))).size == (4, 4)


def test_multipart_refusals(echo: httpx.Client) -> None:
    missing = echo.post(
        "/annotate", data={"meta": "{}", "other": "1"}, files={"image": ("d.png", sample_png())}
    )
    assert missing.status_code == 400
    assert missing.json()["error"] == (
        "Multipart input: expected fields ['image', 'meta', 'values']; "
        "missing ['values'], unexpected ['other']"
    )
    bad_field = echo.post(
        "/annotate",
        data={"meta": json.dumps({"x": 1}), "values": "[1]"},
        files={"image": ("d.png", sample_png())},
    )
    assert bad_field.status_code == 400
    assert bad_field.json()["error"].startswith("Multipart field 'meta': JSON input does not match Point")
    not_multipart = echo.post("/annotate", json={"image": 1})
    assert not_multipart.status_code == 400
    assert "expected Content-Type multipart/form-data, got application/json" in not_multipart.json()["error"]
