"""InferResult: tritonclient's result for the protocol in use, plus a plain `outputs` mapping."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from google.protobuf.json_format import MessageToJson


class InferResult:
    """The answer of one inference.

    `as_numpy`, `get_output` and `get_response` behave as tritonclient's InferResult for the
    protocol in use (gRPC: protobuf messages, or dicts with `as_json=True`; HTTP: dicts).
    """

    __slots__ = ("_outputs", "protocol", "raw")

    def __init__(self, raw: Any, protocol: str) -> None:
        self.raw = raw  # tritonclient.grpc.InferResult or tritonclient.http.InferResult
        self.protocol = protocol
        self._outputs: dict[str, np.ndarray] | None = None

    def as_numpy(self, name: str) -> np.ndarray | None:
        return self.raw.as_numpy(name)

    def get_output(self, name: str, as_json: bool = False) -> Any:
        if self.protocol != "grpc":
            return self.raw.get_output(name)
        output = self.raw.get_output(name)
        if output is None or not as_json:
            return output
        # tritonclient's gRPC get_output(as_json=True) returns None (a missing `return`): build
        # the dict as its get_response(as_json=True) does.
        return json.loads(MessageToJson(output, preserving_proto_field_name=True))

    def get_response(self, as_json: bool = False) -> Any:
        if self.protocol == "grpc":
            return self.raw.get_response(as_json=as_json)
        return self.raw.get_response()

    @property
    def output_names(self) -> tuple[str, ...]:
        if self.protocol == "grpc":
            return tuple(o.name for o in self.raw.get_response().outputs)
        return tuple(o["name"] for o in self.raw.get_response().get("outputs", ()))

    @property
    def outputs(self) -> Mapping[str, np.ndarray]:
        """Every output returned, by name."""
        if self._outputs is None:
            self._outputs = {name: self.raw.as_numpy(name) for name in self.output_names}
        return self._outputs

    @property
    def model_name(self) -> str:
        response = self.raw.get_response()
        return response.model_name if self.protocol == "grpc" else response.get("model_name", "")

    @property
    def model_version(self) -> str:
        response = self.raw.get_response()
        if self.protocol == "grpc":
            return response.model_version
        return response.get("model_version", "")

    def __repr__(self) -> str:
        shapes = {name: tuple(array.shape) for name, array in self.outputs.items()}
        return f"InferResult(model={self.model_name!r}, version={self.model_version!r}, {shapes})"
