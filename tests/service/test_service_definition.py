"""Service and API definitions fail early, with messages that say what to do."""

from __future__ import annotations

import pytest

import runnerkit
from runnerkit import io
from runnerkit.service._service import ENV_EXPOSE_TRITON, ENV_MAX_REQUEST_BYTES
from tests.service.stack import TINY_REPOSITORY


def runner(name: str = "tiny") -> runnerkit.Runner:
    return runnerkit.triton.Runner(name, model_repository=TINY_REPOSITORY)


def test_duplicate_names_and_routes_fail_at_definition() -> None:
    svc = runnerkit.Service("defs")

    @svc.api(input=io.Text(), output=io.Text())
    def first(text: str) -> str:
        return text

    with pytest.raises(ValueError, match="already has an API named 'first'"):
        svc.api(input=io.Text(), output=io.Text())(first)
    with pytest.raises(ValueError, match="route /first is already used by API 'first'"):
        svc.api(input=io.Text(), output=io.Text(), name="second", route="/first")(first)
    for reserved in ("/readyz", "/docs", "/docs/x", "/v2/models/x/infer", "/metrics", "/"):
        with pytest.raises(ValueError, match="invalid or reserved"):
            svc.api(input=io.Text(), output=io.Text(), name="x", route=reserved)(first)
    with pytest.raises(TypeError, match=r"takes an IO descriptor such as runnerkit.io.JSON\(\)"):
        svc.api(input=io.JSON, output=io.JSON())  # type: ignore[arg-type]


def test_expose_triton_picks_a_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_EXPOSE_TRITON, raising=False)
    a, b = runner("a"), runner("b")
    assert runnerkit.Service("s", runners=[a, b]).triton_proxy_runner is None
    assert runnerkit.Service("s", runners=[a, b], expose_triton=True).triton_proxy_runner is a
    assert runnerkit.Service("s", runners=[a, b], expose_triton="b").triton_proxy_runner is b
    with pytest.raises(ValueError, match=r"expose_triton='c' names no runner; runners: \['a', 'b'\]"):
        runnerkit.Service("s", runners=[a, b], expose_triton="c")
    with pytest.raises(ValueError, match="needs a runner"):
        runnerkit.Service("s", expose_triton=True)


def test_expose_triton_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = runner("a"), runner("b")
    for value, expected in (("1", a), ("true", a), ("b", b), ("0", None), ("", None)):
        monkeypatch.setenv(ENV_EXPOSE_TRITON, value)
        assert runnerkit.Service("s", runners=[a, b]).triton_proxy_runner is expected, value
    monkeypatch.setenv(ENV_EXPOSE_TRITON, "1")
    assert runnerkit.Service("s", runners=[a], expose_triton=False).triton_proxy_runner is None


def test_request_limit_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MAX_REQUEST_BYTES, "1024")
    assert runnerkit.Service("s").max_request_bytes == 1024
    assert runnerkit.Service("s", max_request_bytes=10).max_request_bytes == 10
    monkeypatch.setenv(ENV_MAX_REQUEST_BYTES, "1MB")
    with pytest.raises(ValueError, match="must be a number of bytes, got '1MB'"):
        runnerkit.Service("s")


def test_runner_at_import_time_explains_itself() -> None:
    tiny = runner()
    with pytest.raises(runnerkit.RunnerNotStartedError, match="only while their service runs"):
        tiny.scale.run([1.0])
