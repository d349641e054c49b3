"""Python-backend model that runs an ONNX or TorchScript file for a tritonserver that lacks the
native backend. runnerkit copies this file as `model.py` into a shadow repository (local
repositories) or into a python-based backend folder (remote ones, see _fallback_backends); it runs inside
Triton's python backend stub, so it must stay importable on Python 3.10 with only numpy and the
runtime it uses.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils  # provided by the python backend

_TORCH_INDEX = re.compile(r"__(\d+)$")
_BACKEND_RUNTIMES = {"onnxruntime": "onnxruntime", "pytorch": "torchscript"}
_DEFAULT_FILES = {"onnxruntime": "model.onnx", "torchscript": "model.pt"}


class TritonPythonModel:
    def initialize(self, args: dict[str, Any]) -> None:
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        # A shadow repository's rewritten config names runtime and file; as a python-based backend
        # (backends/onnxruntime/model.py, for remote repositories) the config is the model's own.
        backend = config.get("backend", "")
        self.runtime = params.get("RUNNERKIT_FALLBACK_RUNTIME") or _BACKEND_RUNTIMES.get(backend, backend)
        file_name = (
            params.get("RUNNERKIT_FALLBACK_FILE")
            or config.get("default_model_filename")
            or _DEFAULT_FILES.get(self.runtime, "")
        )
        model_file = "/".join((args["model_repository"], args["model_version"], file_name))
        self.batched = int(config.get("max_batch_size", 0)) > 0
        self.input_names = [t["name"] for t in config["input"]]
        self.outputs = [
            (t["name"], pb_utils.triton_string_to_numpy(t["data_type"])) for t in config["output"]
        ]
        on_gpu = args.get("model_instance_kind") == "GPU"
        device_id = int(args.get("model_instance_device_id", 0))
        if self.runtime == "onnxruntime":
            self._load_onnx(model_file, on_gpu, device_id, params)
        elif self.runtime == "torchscript":
            self._load_torchscript(model_file, on_gpu, device_id)
        else:
            raise pb_utils.TritonModelException(f"unknown fallback runtime {self.runtime!r}")

    def _load_onnx(self, model_file: str, on_gpu: bool, device_id: int, params: dict[str, str]) -> None:
        import onnxruntime as ort

        providers: list[Any] = ["CPUExecutionProvider"]
        if on_gpu:
            providers.insert(0, ("CUDAExecutionProvider", {"device_id": device_id}))
        options = ort.SessionOptions()
        # By default onnxruntime's idle pool threads spin after every run: on a CPU shared with
        # tritonserver and the API workers that burnt most of a core for a small model.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        # The thread counts Triton's own onnxruntime backend takes from the same parameters.
        for key, attribute in (
            ("intra_op_thread_count", "intra_op_num_threads"),
            ("inter_op_thread_count", "inter_op_num_threads"),
        ):
            value = params.get(key, "").strip()
            if value.isdigit() and int(value) > 0:
                setattr(options, attribute, int(value))
        self.session = ort.InferenceSession(model_file, sess_options=options, providers=providers)

    def _load_torchscript(self, model_file: str, on_gpu: bool, device_id: int) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(f"cuda:{device_id}" if on_gpu else "cpu")
        self.module = torch.jit.load(model_file, map_location=self.device).eval()

        def position(name: str, default: int) -> int:
            # Triton's libtorch convention: INPUT__0, INPUT__1, ... give the argument order.
            match = _TORCH_INDEX.search(name)
            return int(match.group(1)) if match else default

        self.input_order = sorted(
            range(len(self.input_names)), key=lambda i: position(self.input_names[i], i)
        )
        self.output_positions = [position(name, i) for i, (name, _) in enumerate(self.outputs)]

    def _run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if self.runtime == "onnxruntime":
            feed = dict(zip(self.input_names, inputs))
            return list(self.session.run([name for name, _ in self.outputs], feed))
        torch = self.torch
        with torch.inference_mode():
            tensors = [torch.from_numpy(inputs[i]).to(self.device) for i in self.input_order]
            result = self.module(*tensors)
        if isinstance(result, torch.Tensor):
            result = (result,)
        return [result[p].detach().cpu().numpy() for p in self.output_positions]

    def execute(self, requests: list[Any]) -> list[Any]:
        per_request = [
            [pb_utils.get_input_tensor_by_name(r, name).as_numpy() for name in self.input_names]
            for r in requests
        ]
        if self.batched and len(requests) > 1:
            # Dynamic batching handed us several requests: run them as one batch, then split.
            sizes = [inputs[0].shape[0] for inputs in per_request]
            stacked = [
                np.concatenate([inputs[i] for inputs in per_request]) for i in range(len(self.input_names))
            ]
            merged = self._run(stacked)
            bounds = np.cumsum(sizes)[:-1]
            results = list(zip(*[np.split(out, bounds) for out in merged]))
        else:
            results = [self._run(inputs) for inputs in per_request]
        return [
            pb_utils.InferenceResponse(
                output_tensors=[
                    pb_utils.Tensor(name, np.ascontiguousarray(value, dtype=dtype))
                    for (name, dtype), value in zip(self.outputs, values)
                ]
            )
            for values in results
        ]
