"""The local CPU stand-in for nvcr.io/nvidia/tritonserver:<yy.mm>-py3."""

from __future__ import annotations

import time

import pytest

from runnerkit.containers import (
    CPU_STANDIN_IMAGE,
    DockerEngine,
    PodmanEngine,
    ensure_cpu_base_image,
    verify_cpu_base_image,
)

pytestmark = [pytest.mark.container, pytest.mark.timeout(1500)]  # first run builds the image


def test_standin_runs_tritonserver_help(podman_engine: PodmanEngine, cpu_base_image: str) -> None:
    assert cpu_base_image == CPU_STANDIN_IMAGE
    result = podman_engine.run(cpu_base_image, ["tritonserver", "--help"], timeout=120)
    assert "Usage: tritonserver" in result.output
    assert "--model-repository" in result.output
    # Triton's --help exits 1 (the NGC image's does too): callers check the text, not the status
    assert result.exit_code in (0, 1)


def test_standin_has_the_ngc_layout(podman_engine: PodmanEngine, cpu_base_image: str) -> None:
    script = (
        "set -e; command -v tritonserver; echo LD=$LD_LIBRARY_PATH; pwd; "
        "ls /opt/tritonserver/backends/python /opt/tritonserver/caches/local; "
        "test -f /opt/tritonserver/lib/$(cd /opt/tritonserver/lib && ls | grep libtritonserver); "
        "echo TRITON=$TRITON_SERVER_VERSION NGC=$NVIDIA_TRITON_SERVER_VERSION; "
        "python3 -c 'import numpy, sys; print(\"numpy\", numpy.__version__, sys.version_info[:2])'; "
        "id triton-server; "
        "test -f /usr/lib/python3.11/EXTERNALLY-MANAGED && echo PEP668-marker; "
        "python3 -m pip install --dry-run --no-index six >/dev/null 2>&1 || echo bare-pip-refused"
    )
    result = podman_engine.run(cpu_base_image, ["bash", "-c", script], timeout=120)
    out = result.output
    assert result.ok, out
    assert "/opt/tritonserver/bin/tritonserver" in out
    assert "LD=/opt/tritonserver/lib" in out
    assert "/opt/tritonserver\n" in out  # WORKDIR
    for name in ("triton_python_backend_stub", "libtriton_python.so", "triton_python_backend_utils.py"):
        assert name in out
    assert "libtritoncache_local.so" in out
    assert "TRITON=2.51.0 NGC=24.10" in out
    assert "numpy 1." in out and "(3, 11)" in out  # numpy<2: numpy 2 breaks this python backend
    assert "uid=1000(triton-server)" in out
    assert "PEP668-marker" in out and "bare-pip-refused" in out


def test_standin_serves_a_python_backend_model(podman_engine: PodmanEngine, cpu_base_image: str) -> None:
    output = verify_cpu_base_image(podman_engine, cpu_base_image, serve=True, timeout=180)
    assert "READY INFER OK" in output


def test_standin_is_visible_through_the_docker_api(docker_engine: DockerEngine, cpu_base_image: str) -> None:
    assert docker_engine.image_exists(cpu_base_image)
    result = docker_engine.run(cpu_base_image, ["tritonserver", "--help"], timeout=120)
    assert "Usage: tritonserver" in result.output


def test_ensure_is_a_no_op_once_built(podman_engine: PodmanEngine, cpu_base_image: str) -> None:
    started = time.monotonic()
    assert ensure_cpu_base_image(podman_engine) == cpu_base_image
    assert time.monotonic() - started < 15
