"""IO descriptors: how an API's input is read from HTTP and its output written."""

from __future__ import annotations

from runnerkit.io._base import IODescriptor
from runnerkit.io._file import File
from runnerkit.io._image import Image
from runnerkit.io._json import JSON

__all__ = ["JSON", "File", "IODescriptor", "Image"]
