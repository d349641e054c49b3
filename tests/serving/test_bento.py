"""`runnerkit serve <bento> --production`: a built bento, by tag and by directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from runnerkit.bentos import Bento, BentoStore, build_bentofile

from .conftest import PNG, REPO_ROOT, Sample, production_server

# Only the model the API needs: the test is about where the service comes from, not Triton.
FAST = ["--triton-options", "model-control-mode=explicit", "--triton-options", "load-model=digits_onnx"]


@pytest.fixture(scope="module")
def bento(tmp_path_factory: pytest.TempPathFactory) -> Bento:
    store = BentoStore(tmp_path_factory.mktemp("bento-home") / "bentos")
    return build_bentofile(REPO_ROOT / "bentofile.yaml", build_ctx=REPO_ROOT, store=store, quiet=True)


@pytest.mark.parametrize("form", ["tag", "directory"])
def test_a_bento_is_served_in_production(
    form: str, bento: Bento, samples: Sequence[Sample], tmp_path: Path
) -> None:
    target = str(bento.tag) if form == "tag" else str(bento.path)
    home = bento.path.parents[2]  # <home>/bentos/<name>/<version>
    # From an unrelated directory: everything (code, model repository) comes from the bento.
    env = {"RUNNERKIT_HOME": str(home)}
    with production_server(target, FAST, tmp_path / "serve.log", env, cwd=tmp_path) as server:
        server.wait_ready()
        for sample in samples[:4]:
            response = httpx.post(f"{server.url}/classify", content=sample.png, headers=PNG, timeout=30)
            assert response.status_code == 200, response.text
            assert response.json()["label"] == sample.label
        assert server.terminate() == 0
    assert "serving 'digits'" in server.log_path.read_text()
