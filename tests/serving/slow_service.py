"""The example service's APIs plus `slow_classify`, which holds a request in flight on purpose.

For the shutdown tests: each slow request drops a file in $SLOW_MARKER_DIR when it has arrived,
so a test knows that its requests are in flight before it sends SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from PIL import Image

import runnerkit
from runnerkit import io as rio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "services"))
import digits

svc = runnerkit.Service("digits-slow", runners=[digits.triton_runner])
for api in digits.svc.apis.values():
    svc.api(input=api.input, output=api.output, route=api.route, name=api.name, tags=api.tags)(api.func)


@svc.api(input=rio.Image(), output=rio.JSON())
async def slow_classify(image: Image.Image) -> dict[str, Any]:
    """classify, after $SLOW_SECONDS seconds."""
    marker_dir = os.environ.get("SLOW_MARKER_DIR")
    if marker_dir:
        Path(marker_dir, uuid.uuid4().hex).touch()
    await asyncio.sleep(float(os.environ.get("SLOW_SECONDS", "3")))
    result: dict[str, Any] = await digits.classify(image)
    return result
