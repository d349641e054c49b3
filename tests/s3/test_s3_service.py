"""The example service (services/digits.py, unchanged) with its runner's repository on S3.

`runnerkit serve` runs as a child process. Its runner's repository is redirected to the S3 URL
the way a bento redirects it (RUNNERKIT_MODEL_REPOSITORIES), and it attaches to the package's
tritonserver, which serves that same S3 repository (RUNNERKIT_TRITON_ADDRESSES, as
`runnerkit serve` does for its workers): the API process reads the S3 index itself (boto3, with
the credentials of the environment) to validate inputs.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import httpx
import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image

from runnerkit.testing import ServeProcess
from runnerkit.triton import Runner
from runnerkit.triton._runner import ENV_MODEL_REPOSITORIES, ENV_SUPERVISED_ADDRESSES
from tests.s3.conftest import REPO_ROOT, SAMPLES


@pytest.fixture(scope="module")
def digits_from_s3(s3_runner: Runner, digits_url: str) -> Iterator[httpx.Client]:
    served = ServeProcess("services/digits.py:svc", cwd=REPO_ROOT)
    served.env[ENV_MODEL_REPOSITORIES] = json.dumps({s3_runner.name: digits_url})
    served.env[ENV_SUPERVISED_ADDRESSES] = json.dumps({s3_runner.name: dict(s3_runner.addresses)})
    with served, httpx.Client(base_url=served.url, timeout=60) as client:
        yield client


def expected_label(png: bytes, version: int = 2) -> int:
    with Image.open(io.BytesIO(png)) as image:
        gray = image.convert("L").resize((8, 8), Image.Resampling.BOX)
    x = (np.asarray(gray, dtype=np.float32) / np.float32(255.0)).reshape(1, 64)
    model = REPO_ROOT / "model_repository" / "digits_onnx" / str(version) / "model.onnx"
    logits = ort.InferenceSession(str(model)).run(["logits"], {"input": x})[0]
    return int(np.argmax(logits))


@pytest.mark.parametrize("sample", ["digit_3.png", "digit_7.png"])
def test_classify_through_fallback_and_ensemble(digits_from_s3: httpx.Client, sample: str) -> None:
    png = (SAMPLES / sample).read_bytes()
    expected = expected_label(png)
    headers = {"content-type": "image/png"}
    onnx = digits_from_s3.post("/classify", content=png, headers=headers)
    assert onnx.status_code == 200, onnx.text
    assert onnx.json()["label"] == expected
    pipeline = digits_from_s3.post("/classify_pipeline", content=png, headers=headers)
    assert pipeline.status_code == 200, pipeline.text
    assert pipeline.json()["label"] == expected
    torchscript = digits_from_s3.post("/classify_torchscript", content=png, headers=headers)
    assert torchscript.status_code == 200, torchscript.text
    assert torchscript.json()["label"] == expected
    pinned = digits_from_s3.post("/classify_v1", content=png, headers=headers)
    assert pinned.status_code == 200, pinned.text
    assert pinned.json()["model_version"] == "1"
    assert pinned.json()["label"] == expected_label(png, version=1)
