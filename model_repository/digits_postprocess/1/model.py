"""digits_postprocess: logits [10] -> label INT64 [1] and its softmax probability FP32 [1]."""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils


def postprocess_logits(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arg-max label and softmax probability of that label for a [B, 10] batch of logits."""
    logits = np.asarray(logits, dtype=np.float32).reshape(len(logits), -1)
    # Subtract the row maximum so exp() cannot overflow.
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = exp / exp.sum(axis=1, keepdims=True)
    labels = logits.argmax(axis=1)
    probability = np.take_along_axis(probabilities, labels[:, None], axis=1)
    return labels.astype(np.int64).reshape(-1, 1), probability.astype(np.float32)


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "logits").as_numpy()
            labels, probability = postprocess_logits(logits)
            outputs = [pb_utils.Tensor("label", labels), pb_utils.Tensor("probability", probability)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
