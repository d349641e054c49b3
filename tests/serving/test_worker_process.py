"""What production API workers set up in their process: the objects importing the service made
are frozen (the garbage collector does not scan them again and again while requests are served),
and RUNNERKIT_API_WORKERS says how many workers share the tritonservers (micro-batching's default
requests in flight follows it)."""

from __future__ import annotations

from pathlib import Path

import httpx

from runnerkit.testing import ServeProcess

SERVICE = """
import gc
import os

import runnerkit
from runnerkit import io

svc = runnerkit.Service("gcprobe")


@svc.api(input=io.Text(), output=io.JSON())
def probe(_: str) -> dict:
    return {
        "frozen": gc.get_freeze_count(),
        "pid": os.getpid(),
        "api_workers": os.environ.get("RUNNERKIT_API_WORKERS"),
    }
"""


def test_production_workers_freeze_the_imported_objects_and_know_their_number(tmp_path: Path) -> None:
    (tmp_path / "gcprobe.py").write_text(SERVICE)
    args = ("--production", "--workers", "2", "--host", "127.0.0.1", "--no-access-log")
    with ServeProcess("gcprobe.py:svc", *args, cwd=tmp_path) as served:
        answer = httpx.post(f"{served.url}/probe", content=b"", headers={"content-type": "text/plain"}).json()
        supervisor = served.pid
    assert answer["pid"] != supervisor  # asked of an API worker
    # Everything the worker imported (runnerkit, Starlette, numpy, PIL, ...): tens of thousands.
    assert answer["frozen"] > 10_000
    assert answer["api_workers"] == "2"
