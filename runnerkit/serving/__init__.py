"""Process supervision: tritonservers and API workers, in development and production."""

from __future__ import annotations

from runnerkit.serving._options import TritonOption, TritonOptionsError, triton_arguments
from runnerkit.serving._production import (
    ProductionSettings,
    ServeConfigError,
    resolve_workers,
    serve_production,
)
from runnerkit.serving._supervisor import TritonSupervisor
from runnerkit.serving._target import ServiceTarget, load_service

__all__ = [
    "ProductionSettings",
    "ServeConfigError",
    "ServiceTarget",
    "TritonOption",
    "TritonOptionsError",
    "TritonSupervisor",
    "load_service",
    "resolve_workers",
    "serve_production",
    "triton_arguments",
]
