"""The Triton integration: runners, their models, and tritonserver processes."""

from __future__ import annotations

from runnerkit.triton._batching import MicroBatching
from runnerkit.triton._model import Model
from runnerkit.triton._model_config import ModelSpec, TensorSpec
from runnerkit.triton._repository import ModelRepositoryError
from runnerkit.triton._result import InferResult
from runnerkit.triton._runner import Runner
from runnerkit.triton._s3 import S3ModelRepository, S3RepositoryError, download_model_repository
from runnerkit.triton._s3_upload import upload_model_repository
from runnerkit.triton._server_binary import TritonServerBinary, locate_tritonserver

__all__ = [
    "InferResult",
    "MicroBatching",
    "Model",
    "ModelRepositoryError",
    "ModelSpec",
    "Runner",
    "S3ModelRepository",
    "S3RepositoryError",
    "TensorSpec",
    "TritonServerBinary",
    "download_model_repository",
    "locate_tritonserver",
    "upload_model_repository",
]
