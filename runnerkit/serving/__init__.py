"""Process supervision: tritonservers and API workers, in development and production."""

from __future__ import annotations

from runnerkit.serving._target import ServiceTarget, load_service

__all__ = ["ServiceTarget", "load_service"]
