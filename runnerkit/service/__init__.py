"""Services: runners composed with typed pre/post-processing APIs, served over HTTP."""

from __future__ import annotations

from runnerkit.service._service import API, Service

__all__ = ["API", "Service"]
