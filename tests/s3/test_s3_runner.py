"""A runner serving the example repository straight from S3: python models natively, ONNX and
TorchScript through the fallback, the ensemble and BLS across both, credentials only in the
tritonserver's environment."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image

from runnerkit.exceptions import InvalidInputError
from runnerkit.triton import Runner
from tests.conftest import AsyncLoop
from tests.s3.conftest import SAMPLES, MotoS3, process_environ, tritonservers_reading


def features(png: bytes) -> np.ndarray:
    """docs/CONTRACTS.md's pre-processing, computed here: 8-bit gray, BOX 8x8, / 255."""
    with Image.open(io.BytesIO(png)) as image:
        gray = image.convert("L").resize((8, 8), Image.Resampling.BOX)
    return (np.asarray(gray, dtype=np.float32) / np.float32(255.0)).reshape(1, 64)


def onnx_logits(repository: Path, version: int, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(repository / "digits_onnx" / str(version) / "model.onnx"))
    return np.asarray(session.run(["logits"], {"input": x})[0])


@pytest.fixture(scope="module")
def samples() -> list[tuple[bytes, int]]:
    index = json.loads((SAMPLES / "index.json").read_text())
    return [((SAMPLES / name).read_bytes(), int(entry["label"])) for name, entry in sorted(index.items())]


def test_models_are_attributes(s3_runner: Runner, example_repository: Path) -> None:
    expected = {p.name for p in example_repository.iterdir() if (p / "config.pbtxt").is_file()}
    assert set(s3_runner.model_names) == expected
    assert expected <= set(dir(s3_runner))
    assert s3_runner.digits_onnx.name == "digits_onnx"


def test_python_model_served_natively(s3_runner: Runner, samples: list[tuple[bytes, int]]) -> None:
    png, _ = samples[3]
    result = s3_runner.digits_preprocess.run(image=np.array([[png]], dtype=object))
    np.testing.assert_allclose(result.as_numpy("input"), features(png), rtol=0, atol=1e-6)


@pytest.mark.parametrize("version", [1, 2])
def test_onnx_model_through_the_fallback(
    s3_runner: Runner, example_repository: Path, samples: list[tuple[bytes, int]], version: int
) -> None:
    x = np.concatenate([features(png) for png, _ in samples])
    result = s3_runner.digits_onnx.with_version(version).run(x)
    assert result.model_version == str(version)
    np.testing.assert_allclose(
        result.as_numpy("logits"), onnx_logits(example_repository, version, x), atol=1e-4
    )


def test_torchscript_model_through_the_fallback(s3_runner: Runner, samples: list[tuple[bytes, int]]) -> None:
    # docs/CONTRACTS.md: digits_torchscript carries the weights of digits_onnx version 2.
    x = np.concatenate([features(png) for png, _ in samples])
    torchscript = s3_runner.digits_torchscript.run(x).as_numpy("OUTPUT__0")
    onnx = s3_runner.digits_onnx.with_version(2).run(x).as_numpy("logits")
    np.testing.assert_allclose(torchscript, onnx, atol=1e-4)


def test_ensemble_and_bls_span_native_and_fallback_models(
    s3_runner: Runner, example_repository: Path, samples: list[tuple[bytes, int]]
) -> None:
    images = np.array([[png] for png, _ in samples], dtype=object)
    result = s3_runner.digits_pipeline.run(image=images)
    x = np.concatenate([features(png) for png, _ in samples])
    expected = onnx_logits(example_repository, 2, x).argmax(axis=1)
    np.testing.assert_array_equal(result.as_numpy("label").reshape(-1), expected)
    bls = s3_runner.digits_bls.run(x)
    np.testing.assert_array_equal(bls.as_numpy("label").reshape(-1), expected)
    # the classifier is good: most held-out samples are right
    assert sum(int(p == label) for p, (_, label) in zip(expected, samples)) >= len(samples) - 1


def test_inputs_validated_against_the_config_read_from_s3(s3_runner: Runner) -> None:
    with pytest.raises(InvalidInputError, match="digits_onnx") as info:
        s3_runner.digits_onnx.run(np.zeros((1, 63), dtype=np.float32))
    assert "64" in str(info.value)


def test_every_model_ready(s3_runner: Runner, aio: AsyncLoop) -> None:
    index = aio.run(s3_runner.model_index())
    states = {(row["name"], row["version"]): row["state"] for row in index}
    assert states[("digits_onnx", "1")] == states[("digits_onnx", "2")] == "READY"
    assert all(state == "READY" for state in states.values()), index


def test_served_from_s3_with_credentials_in_its_environment_only(
    s3_runner: Runner, digits_url: str, moto_s3: MotoS3
) -> None:
    pids = tritonservers_reading(digits_url)
    assert len(pids) == 1  # tritonserver reads the bucket itself: no local copy, no shadow
    cmdline = Path(f"/proc/{pids[0]}/cmdline").read_bytes().split(b"\0")
    environ = process_environ(pids[0])
    assert environ["AWS_ACCESS_KEY_ID"] == moto_s3.admin.access_key
    assert environ["AWS_SECRET_ACCESS_KEY"] == moto_s3.admin.secret_key
    assert environ["AWS_DEFAULT_REGION"] == "us-east-1"
    secret = moto_s3.admin.secret_key.encode()
    assert not any(secret in arg for arg in cmdline)
    # The fallback models run through python-based backends in runnerkit's backend directory.
    backend_dir = Path(
        next(a for a in cmdline if a.startswith(b"--backend-directory=")).decode().split("=", 1)[1]
    )
    assert (backend_dir / "onnxruntime" / "model.py").is_file()
    assert (backend_dir / "pytorch" / "model.py").is_file()
    assert not any(
        secret in path.read_bytes()
        for path in backend_dir.rglob("*")
        if path.is_file() and not path.is_symlink()
    )
