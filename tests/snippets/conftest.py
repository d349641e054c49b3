"""The snippets run as the docs show them; fixtures shared with the bento tests."""

from __future__ import annotations

from ..bentos.conftest import runnerkit_wheel_file, serve_process

__all__ = ["runnerkit_wheel_file", "serve_process"]
