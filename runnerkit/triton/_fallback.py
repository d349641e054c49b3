"""Backend fallback: serve ONNX and TorchScript models through a generated python-backend model
when the chosen tritonserver lacks the native backend. The user's repository is never touched:
runnerkit builds a shadow repository of links plus the rewritten models.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from runnerkit.triton._model_config import (
    DEFAULT_MODEL_FILENAMES,
    ModelConfigProto,
    config_to_text,
)
from runnerkit.triton._repository import ModelRepositoryError, RepositoryModel
from runnerkit.triton._server_binary import TritonServerBinary

logger = logging.getLogger("runnerkit.triton")

# Native backend -> the runtime the generated python model executes the file with.
FALLBACK_RUNTIMES = {"onnxruntime": "onnxruntime", "pytorch": "torchscript"}
_EXECUTOR = Path(__file__).with_name("_fallback_model.py")


def plan_fallback(models: Mapping[str, RepositoryModel], binary: TritonServerBinary) -> dict[str, str]:
    """Which models need the fallback, each with the reason, logged once per model."""
    plan: dict[str, str] = {}
    if not binary.has_backend("python"):
        return plan
    for name, model in models.items():
        if model.spec is None:
            continue
        backend = model.spec.required_backend
        if not backend or binary.has_backend(backend):
            continue
        if backend not in FALLBACK_RUNTIMES:
            logger.warning(
                "model %r needs the %r backend, which tritonserver (from %s) lacks and runnerkit "
                "cannot stand in for; Triton will fail to load it",
                name, backend, binary.source,
            )  # fmt: skip
            continue
        plan[name] = (
            f"tritonserver (from {binary.source}) has no {backend!r} backend; serving it through "
            f"the python backend with {FALLBACK_RUNTIMES[backend]}"
        )
        logger.info("model %r: %s", name, plan[name])
    return plan


def _gpu_present() -> bool:
    return Path("/dev/nvidiactl").exists()


def fallback_config(model: RepositoryModel) -> ModelConfigProto:
    """The model's configuration rewritten for the python backend, everything else kept."""
    assert model.spec is not None
    backend = model.spec.required_backend
    config = model.spec.config.__class__()
    config.CopyFrom(model.spec.config)
    config.name = model.name
    model_file = config.default_model_filename or DEFAULT_MODEL_FILENAMES[backend]
    config.platform = ""
    config.backend = "python"
    config.default_model_filename = ""
    # Execution accelerators (TensorRT EP, ...) belong to the native backend only.
    config.ClearField("optimization")
    config.parameters["RUNNERKIT_FALLBACK_RUNTIME"].string_value = FALLBACK_RUNTIMES[backend]
    config.parameters["RUNNERKIT_FALLBACK_FILE"].string_value = model_file
    if not _gpu_present():
        for group in config.instance_group:
            if group.kind == group.KIND_GPU:
                group.kind = group.KIND_CPU
                del group.gpus[:]
    return config


def build_shadow_repository(
    models: Mapping[str, RepositoryModel], fallback: Mapping[str, str], destination: Path
) -> Path:
    """Links to every untouched model, generated folders for the fallback ones.

    Python models get real folders of linked files rather than one link: the python backend
    writes its bytecode cache next to model.py, which then lands in the shadow, not in the
    user's repository.
    """
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    for name, model in models.items():
        if model.path is None:
            raise ModelRepositoryError(f"model {name!r} has no local copy to build a shadow from")
        target = destination / name
        if name not in fallback:
            if model.spec is not None and model.spec.required_backend == "python":
                _mirror(model.path, target)
            else:
                target.symlink_to(model.path, target_is_directory=True)
            continue
        target.mkdir()
        (target / "config.pbtxt").write_text(config_to_text(fallback_config(model)))
        for version in model.versions:
            version_dir = target / str(version)
            version_dir.mkdir()
            for entry in (model.path / str(version)).iterdir():
                if entry.name != "model.py":  # a link there would let the copy below write through
                    os.symlink(entry, version_dir / entry.name)
            shutil.copyfile(_EXECUTOR, version_dir / "model.py")
    return destination


def _mirror(source: Path, target: Path) -> None:
    """`source`'s folders recreated under `target`, each file a link to the original."""
    for root, folders, files in os.walk(source, followlinks=True):
        folders[:] = [f for f in folders if f != "__pycache__"]
        here = target / os.path.relpath(root, source)
        here.mkdir(parents=True, exist_ok=True)
        for file in files:
            os.symlink(os.path.join(root, file), here / file)
