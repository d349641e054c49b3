"""The pieces of production serving that need no process: options, worker count, metrics text."""

from __future__ import annotations

import logging

import pytest
from prometheus_client.parser import text_string_to_metric_families

from runnerkit.cli import build_parser
from runnerkit.serving import TritonOption, TritonOptionsError, resolve_workers, triton_arguments
from runnerkit.serving._logging import TritonLogRelay
from runnerkit.serving._production import ServeConfigError
from runnerkit.serving._triton_metrics import merge
from runnerkit.triton._runner import override_options


@pytest.mark.parametrize(
    ("text", "key", "value", "runner"),
    [
        ("model-control-mode=explicit", "model-control-mode", "explicit", None),
        ("--model-control-mode=explicit", "model-control-mode", "explicit", None),
        ("backend-config=python,shm-default-byte-size=1048576", "backend-config",
         "python,shm-default-byte-size=1048576", None),
        ("triton_runner.load-model=digits_onnx", "load-model", "digits_onnx", "triton_runner"),
        ("--triton_runner.log-verbose=1", "log-verbose", "1", "triton_runner"),
        ("strict-readiness", "strict-readiness", None, None),
        ("rate-limit-resource=R1:10:0", "rate-limit-resource", "R1:10:0", None),
    ],
)  # fmt: skip
def test_option_forms(text: str, key: str, value: str | None, runner: str | None) -> None:
    option = TritonOption.parse(text)
    assert (option.key, option.value, option.runner) == (key, value, runner)
    assert option.argument == (f"--{key}" if value is None else f"--{key}={value}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected 'key=value'"),
        ("=explicit", "expected 'key=value'"),
        ("model control=explicit", "expected 'key=value'"),
        ("my-runner.load-model=x", "'my-runner' is not a runner name"),
    ],
)
def test_malformed_options_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(TritonOptionsError, match=message):
        TritonOption.parse(text)


def test_options_for_every_runner_or_one(caplog: pytest.LogCaptureFixture) -> None:
    values = [
        "model-control-mode=explicit",
        "vision.load-model=resnet",
        "--text.load-model=bert",
        "grpc-port=8001",
        "text.http-port=8000",
        "model-repository=/elsewhere",
    ]
    with caplog.at_level(logging.WARNING, logger="runnerkit.serve"):
        arguments = triton_arguments(values, ["vision", "text"])
    assert arguments == {
        "vision": ("--model-control-mode=explicit", "--load-model=resnet"),
        "text": ("--model-control-mode=explicit", "--load-model=bert"),
    }
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 3
    assert "ignoring --triton-options 'grpc-port=8001': runnerkit binds" in warnings[0]
    assert "'model-repository=/elsewhere': each runner's model_repository= sets it" in warnings[2]
    with pytest.raises(TritonOptionsError, match=r"'audio' launches .*runners that do: 'vision', 'text'"):
        triton_arguments(["audio.load-model=x"], ["vision", "text"])


def test_a_runners_own_option_replaces_the_one_for_every_runner() -> None:
    values = [
        "vision.load-model=*",  # before or after the option for all: the runner's own wins
        "model-control-mode=explicit",
        "load-model=a",
        "load-model=b",
        "text.load-model=c",
        "text.load-model=d",
        "log-verbose=1",
    ]
    assert triton_arguments(values, ["vision", "text", "audio"]) == {
        "vision": ("--model-control-mode=explicit", "--log-verbose=1", "--load-model=*"),
        "text": ("--model-control-mode=explicit", "--log-verbose=1", "--load-model=c", "--load-model=d"),
        "audio": ("--model-control-mode=explicit", "--load-model=a", "--load-model=b", "--log-verbose=1"),
    }


def test_deploy_time_options_replace_the_runners_own() -> None:
    runner_args = ["--model-control-mode=explicit", "--load-model=*", "--log-verbose=0"]
    merged, replaced = override_options(runner_args, ["--load-model=digits_onnx", "--load-model=other"])
    assert merged == ["--model-control-mode=explicit", "--log-verbose=0", "--load-model=digits_onnx",
                      "--load-model=other"]  # fmt: skip
    assert replaced == ["--load-model=*"]


def test_the_command_line_takes_every_form_of_triton_options() -> None:
    args = build_parser().parse_args(
        ["serve", "svc.py:svc", "--production", "--triton-options", "--model-control-mode=explicit",
         "--triton-options=--load-model=a", "--triton-options", "r.load-model=b", "--workers", "2"]
    )  # fmt: skip
    assert args.triton_options == ["--model-control-mode=explicit", "--load-model=a", "r.load-model=b"]
    assert args.production and args.workers == 2 and args.host is None and args.no_access_log is None


def test_worker_count_comes_from_the_flag_then_the_environment() -> None:
    assert resolve_workers(None, {}) == 1
    assert resolve_workers(None, {"WORKER_COUNT": "3"}) == 3
    assert resolve_workers(None, {"RUNNERKIT_WORKERS": "2", "WORKER_COUNT": "3"}) == 2
    assert resolve_workers(4, {"RUNNERKIT_WORKERS": "2"}) == 4
    with pytest.raises(ServeConfigError, match=r"\$RUNNERKIT_WORKERS is '-1'"):
        resolve_workers(None, {"RUNNERKIT_WORKERS": "-1"})


def test_metrics_of_several_tritonservers_merge_into_valid_text() -> None:
    def text(success: int) -> str:
        return (
            "# HELP nv_inference_request_success Number of successful inference requests\n"
            "# TYPE nv_inference_request_success counter\n"
            f'nv_inference_request_success{{model="m",version="1"}} {success}\n'
            "# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]\n"
            "# TYPE nv_cpu_utilization gauge\n"
            "nv_cpu_utilization 0.5\n"
        )

    merged = merge({"vision": text(3), "text": text(5)})
    assert merged.count("# TYPE nv_inference_request_success counter") == 1
    families = {f.name: f for f in text_string_to_metric_families(merged)}
    success = {s.labels["runner"]: s.value for s in families["nv_inference_request_success"].samples}
    assert success == {"vision": 3, "text": 5}
    cpu = families["nv_cpu_utilization"].samples
    assert [s.labels for s in cpu] == [{"runner": "vision"}, {"runner": "text"}]


def test_tritonservers_usage_text_is_left_out_of_its_failure() -> None:
    relay = TritonLogRelay("r")
    for line in ["Usage: tritonserver [options]", "  --help", "\tPrint usage", "", "Server:",
                 "  --id <string>", "", 'Bad option: "--model-control-mode".',
                 "invalid argument for --model-control-mode"]:  # fmt: skip
        relay(line)
    assert relay.recent() == 'Bad option: "--model-control-mode".\ninvalid argument for --model-control-mode'
