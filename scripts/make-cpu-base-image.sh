#!/usr/bin/env bash
# Builds, once, the local CPU stand-in for nvcr.io/nvidia/tritonserver:<yy.mm>-py3
# (localhost/runnerkit-tritonserver-cpu:<triton version>) in runnerkit's podman storage
# ($RUNNERKIT_HOME/containers; `python -m runnerkit.containers env` prints its environment).
# A no-op when the image exists. Needs root, podman and debootstrap (scripts/install-system-deps.sh)
# and the dev virtualenv (make setup). Extra arguments: --rebuild, --verify, --quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
exec "$PYTHON" -m runnerkit.containers base-image "$@"
