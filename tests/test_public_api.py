"""The public surface, pinned: a change here is a change users see (add, never silently drop)."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "runnerkit": [
        "InferResult", "InvalidInputError", "ModelNotFoundError", "Runner", "RunnerNotStartedError",
        "RunnerkitError", "Service", "TritonError", "TritonServerNotFoundError", "TritonStartError",
        "TritonUnavailableError", "__version__", "bentos", "exceptions", "io", "triton",
    ],
    "runnerkit.io": ["File", "IODescriptor", "Image", "JSON", "Multipart", "NumpyNdarray", "Text"],
    "runnerkit.triton": [
        "InferResult", "MicroBatching", "Model", "ModelRepositoryError", "ModelSpec", "Runner",
        "S3ModelRepository", "S3RepositoryError", "TensorSpec", "TritonServerBinary",
        "download_model_repository", "locate_tritonserver", "upload_model_repository",
    ],
    "runnerkit.exceptions": [
        "BadRequestError", "InvalidInputError", "ModelNotFoundError", "PayloadTooLargeError",
        "RunnerNotStartedError", "RunnerkitError", "TritonError", "TritonServerNotFoundError",
        "TritonStartError", "TritonUnavailableError",
    ],
    "runnerkit.testing": [
        "ServeProcess", "ServiceNotReadyError", "serve_in_process", "serve_in_process_async", "wait_http",
    ],
}  # fmt: skip


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_public_names_are_exactly_the_pinned_ones(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(PUBLIC[module_name])
    for name in module.__all__:
        assert hasattr(module, name), f"{module_name}.{name} is listed in __all__ but missing"


def test_builder_api_of_the_guide_is_there() -> None:
    # BentoML's Triton guide drives builds from Python: runnerkit.bentos.build(...) and friends.
    import runnerkit

    for name in ("build", "containerize", "get", "list_bentos", "delete", "export_bento", "import_bento"):
        assert callable(getattr(runnerkit.bentos, name))


def test_every_error_runnerkit_raises_on_purpose_is_a_runnerkit_error() -> None:
    import runnerkit.exceptions as exceptions

    for name in exceptions.__all__:
        assert issubclass(getattr(exceptions, name), exceptions.RunnerkitError)
    # Validation errors stay ValueErrors, a missing model stays an AttributeError (hasattr works).
    assert issubclass(exceptions.InvalidInputError, ValueError)
    assert issubclass(exceptions.ModelNotFoundError, AttributeError)
