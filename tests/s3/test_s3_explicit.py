"""Explicit model control on an S3 repository, with credentials from a shared-credentials profile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runnerkit.exceptions import TritonError
from runnerkit.triton import Runner
from tests.conftest import AsyncLoop
from tests.s3.conftest import SAMPLES, MotoS3, process_environ, tritonservers_reading


def ready_models(runner: Runner, aio: AsyncLoop) -> set[str]:
    return {row["name"] for row in aio.run(runner.model_index()) if row["state"] == "READY"}


def test_explicit_model_control_with_a_profile(
    moto_s3: MotoS3, digits_url: str, aio: AsyncLoop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[models-admin]\n"
        f"aws_access_key_id = {moto_s3.admin.access_key}\n"
        f"aws_secret_access_key = {moto_s3.admin.secret_key}\n"
    )
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "models-admin")

    runner = Runner(
        "explicit",
        model_repository=digits_url,
        cli_args=["--model-control-mode=explicit", "--load-model=digits_preprocess"],
    )
    with runner:
        (pid,) = tritonservers_reading(digits_url, "--model-control-mode=explicit")
        environ = process_environ(pid)
        # The profile was resolved by runnerkit and handed over as plain variables.
        assert environ["AWS_ACCESS_KEY_ID"] == moto_s3.admin.access_key
        assert "AWS_PROFILE" not in environ

        assert ready_models(runner, aio) == {"digits_preprocess"}
        png = (SAMPLES / "digit_3.png").read_bytes()
        pixels = runner.digits_preprocess.run(image=np.array([[png]], dtype=object)).as_numpy("input")
        assert pixels.shape == (1, 64)
        with pytest.raises(TritonError):
            runner.digits_pipeline.run(image=np.array([[png]], dtype=object))  # not loaded yet

        # Loading the ensemble loads its composing models, the fallback one included, from S3.
        aio.run(runner.load_model("digits_pipeline"))
        assert ready_models(runner, aio) >= {"digits_pipeline", "digits_onnx", "digits_postprocess"}
        via_pipeline = runner.digits_pipeline.run(image=np.array([[png]], dtype=object)).as_numpy("label")
        logits = runner.digits_onnx.run(pixels).as_numpy("logits")
        assert int(via_pipeline[0, 0]) == int(logits.argmax())

        aio.run(runner.unload_model("digits_pipeline"))
        assert "digits_pipeline" not in ready_models(runner, aio)
