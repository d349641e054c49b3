"""digits_bls: business-logic scripting model that calls digits_onnx from Python.

input FP32 [64] -> label INT64 [1] and the classifier's logits FP32 [10].
"""

from __future__ import annotations

import json

import numpy as np
import triton_python_backend_utils as pb_utils

CLASSIFIER = "digits_onnx"


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.max_batch_size = int(config["max_batch_size"])

    def _classify(self, features: np.ndarray) -> np.ndarray:
        logits = []
        # Chunks keep each call within the classifier's max_batch_size (same as ours).
        for start in range(0, len(features), self.max_batch_size):
            chunk = features[start : start + self.max_batch_size]
            request = pb_utils.InferenceRequest(
                model_name=CLASSIFIER,
                requested_output_names=["logits"],
                inputs=[pb_utils.Tensor("input", chunk)],
            )
            response = request.exec()
            if response.has_error():
                raise pb_utils.TritonModelException(response.error().message())
            logits.append(pb_utils.get_output_tensor_by_name(response, "logits").as_numpy())
        return np.concatenate(logits).astype(np.float32)

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        batches = [
            pb_utils.get_input_tensor_by_name(request, "input").as_numpy().astype(np.float32)
            for request in requests
        ]
        try:
            # One call for all requests of a dynamic batch, then split the rows back per request.
            logits = self._classify(np.concatenate(batches))
        except pb_utils.TritonModelException as exc:
            error = pb_utils.TritonError(f"{CLASSIFIER} failed: {exc}")
            return [pb_utils.InferenceResponse(error=error) for _ in requests]
        responses = []
        offsets = np.cumsum([len(batch) for batch in batches])[:-1]
        for request_logits in np.split(logits, offsets):
            labels = request_logits.argmax(axis=1).astype(np.int64).reshape(-1, 1)
            outputs = [pb_utils.Tensor("label", labels), pb_utils.Tensor("logits", request_logits)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
