"""A service whose runner attaches to a tritonserver by URL (RUNNERKIT_TEST_TINY_URL, over
RUNNERKIT_TEST_TINY_PROTOCOL), which the readiness tests start, stop and restart under it."""

from __future__ import annotations

import os

import numpy as np

import runnerkit
from runnerkit import io

tiny = runnerkit.triton.Runner(
    "tiny",
    url=os.environ["RUNNERKIT_TEST_TINY_URL"],
    tritonserver_type=os.environ.get("RUNNERKIT_TEST_TINY_PROTOCOL", "http"),
    startup_timeout=300,
    timeout=10,
)
svc = runnerkit.Service("attached", runners=[tiny], expose_triton=True)


@svc.api(input=io.NumpyNdarray(dtype="float32"), output=io.NumpyNdarray())
async def scale(x: np.ndarray) -> np.ndarray:
    return (await tiny.scale.async_run(x)).as_numpy("y")
