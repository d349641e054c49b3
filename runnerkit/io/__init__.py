"""IO descriptors: how an API's input is read from HTTP and its output written.

`Image`, `NumpyNdarray`, `JSON`, `Text`, `File` and `Multipart(**fields)`; each can be built
`from_sample(...)`, which infers its settings from a sample and shows the sample in the docs.
"""

from __future__ import annotations

from runnerkit.io._base import IODescriptor
from runnerkit.io._file import File
from runnerkit.io._image import Image
from runnerkit.io._json import JSON
from runnerkit.io._multipart import Multipart
from runnerkit.io._numpy import NumpyNdarray
from runnerkit.io._text import Text

__all__ = ["JSON", "File", "IODescriptor", "Image", "Multipart", "NumpyNdarray", "Text"]
