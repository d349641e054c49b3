"""Model configurations: parsed once from `config.pbtxt` or from the server, then read-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs
import numpy as np
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from runnerkit.triton._dtypes import numpy_dtype, wire_dtype

# Generated protobuf classes carry no type information; the alias documents intent.
ModelConfigProto: TypeAlias = Any
_ModelConfig = model_config_pb2.ModelConfig

# The backend each platform name runs on (Triton's own mapping).
_PLATFORM_BACKENDS = {
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "tensorrt_plan": "tensorrt",
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "openvino": "openvino",
    "ensemble": "",
}

# Default file names Triton looks for when a config gives none, by backend.
DEFAULT_MODEL_FILENAMES = {
    "onnxruntime": "model.onnx",
    "pytorch": "model.pt",
    "tensorrt": "model.plan",
    "python": "model.py",
    "openvino": "model.xml",
}


@attrs.frozen
class TensorSpec:
    """One input or output of a model, as its configuration declares it."""

    name: str
    datatype: str  # Triton wire name: FP32, INT64, BYTES, ...
    dims: tuple[int, ...]
    optional: bool = False

    @property
    def numpy_dtype(self) -> np.dtype:
        return numpy_dtype(self.datatype)


@attrs.frozen
class ModelSpec:
    """What runnerkit needs to know of a model to validate calls and to rewrite it."""

    name: str
    platform: str
    backend: str
    max_batch_size: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    config: ModelConfigProto = attrs.field(eq=False, repr=False)

    @property
    def required_backend(self) -> str:
        """The backend library the model needs ('' for ensembles, which Triton runs itself)."""
        if self.backend:
            return self.backend
        return _PLATFORM_BACKENDS.get(self.platform, self.platform)

    @property
    def is_ensemble(self) -> bool:
        return self.platform == "ensemble"

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.outputs)

    def to_dict(self) -> dict[str, Any]:
        """The full configuration as JSON-ready data (Triton's field names)."""
        return dict(json_format.MessageToDict(self.config, preserving_proto_field_name=True))

    @classmethod
    def from_proto(cls, config: ModelConfigProto, name: str | None = None) -> ModelSpec:
        def tensor(t: Any) -> TensorSpec:
            dtype = model_config_pb2.DataType.Name(t.data_type)
            optional = bool(getattr(t, "optional", False))
            return TensorSpec(t.name, wire_dtype(dtype), tuple(int(d) for d in t.dims), optional)

        return cls(
            name=name or config.name,
            platform=config.platform,
            backend=config.backend,
            max_batch_size=int(config.max_batch_size),
            inputs=tuple(tensor(t) for t in config.input),
            outputs=tuple(tensor(t) for t in config.output),
            config=config,
        )

    @classmethod
    def from_text(cls, text: str, name: str) -> ModelSpec:
        return cls.from_proto(parse_config_text(text), name)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelSpec:
        """From the JSON form Triton's HTTP endpoint returns (`GET /v2/models/X/config`)."""
        config = json_format.ParseDict(dict(data), _ModelConfig(), ignore_unknown_fields=True)
        return cls.from_proto(config)


def parse_config_text(text: str) -> ModelConfigProto:
    config = _ModelConfig()
    text_format.Parse(text, config)
    return config


def config_to_text(config: ModelConfigProto) -> str:
    return text_format.MessageToString(config)
