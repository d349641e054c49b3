"""The browser tests use the service tests' shared servers (tests/service/stack.py)."""

from __future__ import annotations

import pytest

from runnerkit.testing import ServeProcess
from tests.service.stack import Stack, shared_stack


@pytest.fixture(scope="session")
def digits_server(pytestconfig: pytest.Config) -> ServeProcess:
    stack: Stack = shared_stack(pytestconfig)
    return stack.digits()
