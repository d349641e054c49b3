"""The example service (services/digits.py) over HTTP, on its real tritonserver."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.service.conftest import sample_png
from tests.service.stack import SAMPLES

PNG = {"content-type": "image/png"}
IMAGE_APIS = ("classify", "classify_torchscript", "classify_v1")


def test_classify_every_sample(digits: httpx.Client, sample_labels: dict[str, int]) -> None:
    predictions = {}
    for name in sample_labels:
        response = digits.post("/classify", content=sample_png(name), headers=PNG)
        assert response.status_code == 200, response.text
        body = response.json()
        probabilities = np.array(body["probabilities"])
        assert probabilities.shape == (10,)
        assert abs(probabilities.sum() - 1) < 1e-3
        assert body["label"] == int(probabilities.argmax())
        predictions[name] = body["label"]
    correct = sum(predictions[n] == label for n, label in sample_labels.items())
    # A small model on 8x8 digits: nearly all samples right, and the README's digit_3 for sure.
    assert correct >= 9, predictions
    assert predictions["digit_3.png"] == 3


@pytest.mark.parametrize("api", [*IMAGE_APIS, "classify_pipeline"])
def test_every_inference_api_agrees_on_the_samples(
    digits: httpx.Client, sample_labels: dict[str, int], api: str
) -> None:
    for name in sample_labels:
        response = digits.post(f"/{api}", content=sample_png(name), headers=PNG)
        assert response.status_code == 200, response.text
        reference = digits.post("/classify", content=sample_png(name), headers=PNG).json()
        if api != "classify_v1":  # version 1 is another model: only its own answer is checked
            assert response.json()["label"] == reference["label"], (api, name)
        assert 0 < response.json()["probability"] <= 1


def test_classify_v1_reports_version_1_and_differs_from_latest(digits: httpx.Client) -> None:
    v1 = digits.post("/classify_v1", content=sample_png(), headers=PNG).json()
    latest = digits.post("/classify", content=sample_png(), headers=PNG).json()
    assert v1["model_version"] == "1"
    assert v1["probabilities"] != latest["probabilities"]


def test_classify_accepts_jpeg_and_multipart(digits: httpx.Client, tmp_path) -> None:
    jpeg = tmp_path / "digit.jpg"
    Image.open(SAMPLES / "digit_3.png").convert("L").save(jpeg, quality=95)
    as_jpeg = digits.post("/classify", content=jpeg.read_bytes(), headers={"content-type": "image/jpeg"})
    assert as_jpeg.status_code == 200, as_jpeg.text
    as_form = digits.post("/classify", files={"file": ("digit_3.png", sample_png(), "image/png")})
    assert as_form.status_code == 200, as_form.text
    assert as_form.json()["label"] == 3


def test_classify_pipeline_refuses_non_images_with_400(digits: httpx.Client) -> None:
    response = digits.post("/classify_pipeline", content=b"not an image", headers=PNG)
    assert response.status_code == 400
    assert "PNG or JPEG" in response.json()["error"]


def test_management_apis(digits: httpx.Client) -> None:
    models = digits.post("/admin/list_models").json()
    names = {m["name"] for m in models}
    assert {"digits_onnx", "digits_torchscript", "digits_pipeline", "digits_bls"} <= names
    assert {m["version"] for m in models if m["name"] == "digits_onnx"} == {"1", "2"}

    config = digits.post("/admin/model_config", content=b"digits_onnx")
    assert config.status_code == 200, config.text
    assert config.json()["max_batch_size"] == 64
    assert [i["name"] for i in config.json()["input"]] == ["input"]

    unknown = digits.post("/admin/model_config", content=b"no_such_model")
    assert unknown.status_code == 404
    assert "digits_onnx" in unknown.json()["error"]  # names what there is

    empty = digits.post("/admin/model_config", content=b"  ")
    assert empty.status_code == 400


def model_state(client: httpx.Client, name: str) -> str:
    return {m["name"]: m["state"] for m in client.post("/admin/list_models").json()}[name]


def test_unload_then_load_a_model(digits: httpx.Client) -> None:
    try:
        unloaded = digits.post("/admin/unload_model", content=b"digits_torchscript")
        assert unloaded.status_code == 200, unloaded.text
        # Triton finishes an unload in the background: UNLOADING, then UNAVAILABLE.
        deadline = time.monotonic() + 60
        while (state := model_state(digits, "digits_torchscript")) != "UNAVAILABLE":
            assert state == "UNLOADING" and time.monotonic() < deadline, state
            time.sleep(0.1)
        failed = digits.post("/classify_torchscript", content=sample_png(), headers=PNG)
        assert failed.status_code >= 400
        assert "digits_torchscript" in failed.json()["error"]
        # the other models keep serving
        assert digits.post("/classify", content=sample_png(), headers=PNG).status_code == 200
    finally:
        loaded = digits.post("/admin/load_model", content=b"digits_torchscript")
    assert loaded.status_code == 200, loaded.text
    again = digits.post("/classify_torchscript", content=sample_png(), headers=PNG)
    assert again.status_code == 200, again.text
    assert again.json()["label"] == 3
