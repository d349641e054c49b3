"""The whole chain, for real: bento -> image (podman, and the docker SDK on podman's API socket)
-> `serve --production` in a container -> /classify.

The image is built once per session, by the containerize_bento.py snippet, on the local CPU
stand-in for the NGC image (runnerkit.containers). Layers are cached in runnerkit's podman
storage, so a later session with unchanged requirements reuses the pip layer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from runnerkit.bentos import Bento, BentoStore, containerize
from runnerkit.containers import DockerEngine, PodmanEngine

from .conftest import REPO_ROOT, SAMPLES, free_port, wait_ready

pytestmark = [pytest.mark.container, pytest.mark.timeout(2400)]

BUILD_TIMEOUT_S = 1800
SERVE_ARGS = [
    "serve",
    "--production",
    "--triton-options",
    "model-control-mode=explicit",
    "--triton-options",
    "load-model=digits_onnx",
]


def artifacts() -> Path:
    path = REPO_ROOT / "test-artifacts" / "containers"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def podman_image(
    example_bento: Bento, example_store: BentoStore, podman_engine: PodmanEngine, cpu_base_image: str
) -> Iterator[str]:
    """`python snippets/containerize_bento.py TAG --backend podman --base-image <stand-in>`."""
    tag = f"localhost/runnerkit-test-digits:{example_bento.version}"
    log = artifacts() / "containerize-podman.log"
    # the snippet's podman reads the same (managed) configuration through CONTAINERS_* variables
    env = {**os.environ, **podman_engine.env_overrides, "RUNNERKIT_HOME": str(example_store.root.parent)}
    with open(log, "w") as out:
        proc = subprocess.run(
            [sys.executable, "snippets/containerize_bento.py", str(example_bento.tag), "--backend", "podman",
             "--base-image", cpu_base_image, "-t", tag],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
    output = log.read_text(errors="replace")
    assert proc.returncode == 0, output[-5000:]
    assert f"Successfully built image {tag}" in output
    assert "STEP 1/" in output  # the build log streamed through
    try:
        yield tag
    finally:
        podman_engine.remove_image(tag, force=True)


def inspect_image(engine: PodmanEngine, tag: str) -> dict[str, Any]:
    proc = subprocess.run(
        ["podman", "image", "inspect", tag], env=engine.full_env(), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    [info] = json.loads(proc.stdout)
    assert isinstance(info, dict)
    return info


def test_image_answers_tritonserver_help(podman_engine: PodmanEngine, podman_image: str) -> None:
    result = podman_engine.run(podman_image, ["tritonserver", "--help"], timeout=120)
    assert "Usage: tritonserver" in result.output and "--model-control-mode" in result.output


def test_image_serves_the_bento_in_production_mode(podman_engine: PodmanEngine, podman_image: str) -> None:
    labels = json.loads((SAMPLES / "index.json").read_text())
    port = free_port()
    container = podman_engine.start(podman_image, SERVE_ARGS, ports={3000: port})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(f"{url}/readyz", 300, container.is_running, container.logs)
        for sample in ("digit_3.png", "digit_8.png"):
            response = httpx.post(
                f"{url}/classify",
                content=(SAMPLES / sample).read_bytes(),
                headers={"Content-Type": "image/png"},
                timeout=60,
            )
            assert response.status_code == 200, response.text
            assert response.json()["label"] == labels[sample]["label"]
        # explicit model control loaded digits_onnx only
        loaded = httpx.post(
            f"{url}/admin/list_models", content=b"", headers={"Content-Type": "text/plain"}, timeout=30
        )
        assert loaded.status_code == 200, loaded.text
        ready = {m["name"] for m in loaded.json() if m.get("state") == "READY"}
        assert ready == {"digits_onnx"}
    finally:
        (artifacts() / "serve-production.log").write_text(container.logs())
        container.stop()


def test_image_metadata(podman_engine: PodmanEngine, podman_image: str, example_bento: Bento) -> None:
    info = inspect_image(podman_engine, podman_image)
    config = info["Config"]
    assert config["User"] == "runnerkit"
    assert "3000/tcp" in config["ExposedPorts"]
    assert config["Entrypoint"] == ["/home/runnerkit/bento/env/docker/entrypoint.sh"]
    assert config["Cmd"] == ["serve", "--production"]  # the default command: production serving
    assert "/readyz" in " ".join(info["Healthcheck"]["Test"])  # kept: built in Docker's format
    assert config["Labels"]["ai.runnerkit.bento"] == str(example_bento.tag)
    assert not [e for e in config["Env"] if e.startswith(("AWS_", "PIP_INDEX_URL"))]


def test_image_runs_as_a_non_root_user(podman_engine: PodmanEngine, podman_image: str) -> None:
    result = podman_engine.run(
        podman_image, ["sh", "-c", "id -u; id -un; touch $BENTO_PATH/x 2>/dev/null || echo read-only"]
    )
    assert result.output.split()[-3:] == ["1034", "runnerkit", "read-only"], result.output


def test_docker_backend_on_podmans_api_socket(
    docker_engine: DockerEngine,
    example_bento: Bento,
    example_store: BentoStore,
    cpu_base_image: str,
    podman_image: str,  # built first: its layers are in the same storage
) -> None:
    tag = f"localhost/runnerkit-test-digits-docker:{example_bento.version}"
    lines: list[str] = []
    try:
        image = containerize(
            example_bento.tag,
            engine=docker_engine,
            base_image=cpu_base_image,
            image_tag=tag,
            store=example_store,
            on_log=lines.append,
            timeout=BUILD_TIMEOUT_S,
        )
        (artifacts() / "containerize-docker.log").write_text("\n".join(lines))
        assert image.backend == "docker" and image.image_id.startswith("sha256:")
        assert docker_engine.image_exists(tag)
        assert lines  # the build log streamed through the SDK
        result = docker_engine.run(tag, ["tritonserver", "--help"], timeout=120)
        assert "Usage: tritonserver" in result.output
    finally:
        docker_engine.remove_image(tag, force=True)
