# Two entry points (see README): `make serve` and `make test`. Every other target is set-up.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint typecheck pytest setup system-deps benchmark clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar off --config-settings editable_mode=compat -e '.[dev]'
	touch $(STAMP)

# apt packages the tests drive for real: podman (container builds), chromium (the /docs page).
system-deps:
	bash scripts/install-system-deps.sh

serve: setup
	$(BIN)/runnerkit serve services/digits.py:svc

lint: setup
	$(BIN)/ruff check runnerkit tests services snippets scripts benchmarks
	$(BIN)/ruff format --check runnerkit tests

typecheck: setup
	$(BIN)/mypy

pytest: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: setup system-deps lint typecheck pytest

benchmark: setup
	$(BIN)/python benchmarks/compare.py

clean:
	rm -rf $(VENV) .state build dist *.egg-info
