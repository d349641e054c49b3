"""runnerkit: serve NVIDIA Triton Inference Server model repositories behind Python services."""

from __future__ import annotations

from runnerkit import bentos, exceptions, io, triton
from runnerkit.exceptions import (
    InvalidInputError,
    ModelNotFoundError,
    RunnerkitError,
    RunnerNotStartedError,
    TritonError,
    TritonServerNotFoundError,
    TritonStartError,
    TritonUnavailableError,
)
from runnerkit.service import Service
from runnerkit.triton import InferResult, Runner

__version__ = "0.1.0"

__all__ = [
    "InferResult",
    "InvalidInputError",
    "ModelNotFoundError",
    "Runner",
    "RunnerNotStartedError",
    "RunnerkitError",
    "Service",
    "TritonError",
    "TritonServerNotFoundError",
    "TritonStartError",
    "TritonUnavailableError",
    "__version__",
    "bentos",
    "exceptions",
    "io",
    "triton",
]
