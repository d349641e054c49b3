"""InferResult: tritonclient's result for the protocol in use, plus a plain `outputs` mapping."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from google.protobuf.json_format import MessageToJson
from tritonclient.grpc import service_pb2
from tritonclient.utils import serialize_byte_tensor


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
            outputs = {}
            for name in self.output_names:
                array = self.as_numpy(name)
                if array is not None:
                    outputs[name] = array
            self._outputs = outputs
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

    def leading_dims(self) -> dict[str, int | None]:
        """Each output's first dimension (None for a scalar output), read without decoding data."""
        response = self.raw.get_response()
        if self.protocol == "grpc":
            return {o.name: (int(o.shape[0]) if o.shape else None) for o in response.outputs}
        outputs = response.get("outputs", ())
        return {o["name"]: (int(o["shape"][0]) if o.get("shape") else None) for o in outputs}

    def __repr__(self) -> str:
        shapes = {name: tuple(array.shape) for name, array in self.outputs.items()}
        return f"InferResult(model={self.model_name!r}, version={self.model_version!r}, {shapes})"


class SharedOutputs:
    """The decoded outputs of one coalesced request, decoded once for all its callers."""

    __slots__ = ("_arrays", "raw")

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._arrays: dict[str, np.ndarray | None] = {}

    def array(self, name: str) -> np.ndarray | None:
        try:
            return self._arrays[name]
        except KeyError:
            array = self._arrays[name] = self.raw.as_numpy(name)
            return array


class CoalescedInferResult(InferResult):
    """One caller's rows of a request that the runner's micro-batcher coalesced from several calls.

    `as_numpy`, `outputs`, `get_output` and `get_response` show this caller's rows only, as if
    its call had gone to Triton alone (gRPC: a ModelInferResponse holding just these rows; HTTP:
    the response dict with these rows' data inline as JSON lists). `raw` is tritonclient's result
    for the whole coalesced request. Arrays are read-only views of the shared answer, as
    tritonclient's own `as_numpy` arrays are read-only.
    """

    __slots__ = ("_response", "_rows", "_shared", "_start", "_stop")

    def __init__(self, shared: SharedOutputs, protocol: str, start: int, stop: int, rows: int) -> None:
        super().__init__(shared.raw, protocol)
        self._shared = shared
        self._start = start
        self._stop = stop
        self._rows = rows  # of the whole coalesced request
        self._response: Any = None

    def as_numpy(self, name: str) -> np.ndarray | None:
        array = self._shared.array(name)
        return None if array is None else array[self._start : self._stop]

    def get_output(self, name: str, as_json: bool = False) -> Any:
        response = self.get_response()
        if self.protocol != "grpc":
            return next((o for o in response.get("outputs", ()) if o.get("name") == name), None)
        output = next((o for o in response.outputs if o.name == name), None)
        if output is None or not as_json:
            return output
        return json.loads(MessageToJson(output, preserving_proto_field_name=True))

    def get_response(self, as_json: bool = False) -> Any:
        if self._response is None:
            self._response = self._grpc_response() if self.protocol == "grpc" else self._http_response()
        if as_json and self.protocol == "grpc":
            return json.loads(MessageToJson(self._response, preserving_proto_field_name=True))
        return self._response

    def _grpc_response(self) -> Any:
        full = self.raw.get_response()
        response = service_pb2.ModelInferResponse()
        response.CopyFrom(full)
        del response.raw_output_contents[:]
        start, stop = self._start, self._stop
        for index, output in enumerate(response.outputs):
            if output.shape:
                output.shape[0] = stop - start
            if index >= len(full.raw_output_contents):
                continue
            if output.datatype == "BYTES":
                array = self.as_numpy(output.name)
                serialized = serialize_byte_tensor(array) if array is not None else None
                part = serialized.item() if serialized is not None and serialized.size else b""
            else:
                contents = full.raw_output_contents[index]
                per_row = len(contents) // self._rows
                part = contents[start * per_row : stop * per_row]
            response.raw_output_contents.append(part)
        return response

    def _http_response(self) -> dict[str, Any]:
        full = self.raw.get_response()
        response = {key: value for key, value in full.items() if key != "outputs"}
        outputs = []
        for output in full.get("outputs", ()):
            item = {k: v for k, v in output.items() if k not in ("shape", "parameters", "data")}
            shape = list(output.get("shape", ()))
            if shape:
                shape[0] = self._stop - self._start
            item["shape"] = shape
            parameters = {k: v for k, v in output.get("parameters", {}).items() if k != "binary_data_size"}
            if parameters:
                item["parameters"] = parameters
            array = self.as_numpy(output["name"])
            if array is not None:
                values = array.ravel().tolist()
                item["data"] = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values]
            outputs.append(item)
        response["outputs"] = outputs
        return response
