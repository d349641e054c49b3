"""/docs in a real headless Chromium (Debian's package): every API of the example service shows.

The browser may reach 127.0.0.1 only, so a page that needed a CDN would render nothing. The
screenshot is kept as test-artifacts/docs-page.png.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from runnerkit.testing import ServeProcess
from tests.service.stack import REPO_ROOT

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO_ROOT / "test-artifacts"


def chromium(user_data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/install-system-deps.sh installs Debian's package)")
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={user_data}",
        # Only loopback resolves: the page must work with the assets the service serves itself.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--virtual-time-budget=15000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def test_docs_page_lists_every_api(digits_server: ServeProcess, tmp_path: Path) -> None:
    url = f"{digits_server.url}/docs"
    document = httpx.get(f"{digits_server.url}/openapi.json", timeout=30).json()
    expected = {path for path, item in document["paths"].items() for _ in item}
    assert {"/classify", "/classify_pipeline", "/admin/unload_model"} <= expected

    dom = chromium(tmp_path / "profile-dom", "--dump-dom", url).stdout
    rendered = {
        html.unescape(p) for p in re.findall(r'class="opblock-summary-path" data-path="([^"]+)"', dom)
    }
    assert rendered == expected
    sections = [html.unescape(t) for t in re.findall(r'<h3 class="opblock-tag"[^>]*data-tag="([^"]+)"', dom)]
    assert sections[:2] == ["inference", "management"], sections
    assert "Classify a digit image" in dom  # the API's docstring as its summary

    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "docs-page.png"
    screenshot.unlink(missing_ok=True)
    chromium(
        tmp_path / "profile-shot",
        "--hide-scrollbars",
        "--window-size=1280,2200",
        f"--screenshot={screenshot}",
        url,
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000  # a rendered page, not a blank one
