"""types: transforms each input so a test can tell the server received it intact, and echoes
the request's parameters (as Triton's python backend sees them) as JSON."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def upper(item):
    """Upper-case UTF-8 text; other bytes get ASCII upper-casing only."""
    data = bytes(item)
    try:
        return data.decode("utf-8").upper().encode("utf-8")
    except UnicodeDecodeError:
        return data.upper()


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            half = pb_utils.get_input_tensor_by_name(request, "half").as_numpy()
            count = pb_utils.get_input_tensor_by_name(request, "count").as_numpy()
            flag = pb_utils.get_input_tensor_by_name(request, "flag").as_numpy()
            text = pb_utils.get_input_tensor_by_name(request, "text").as_numpy()
            uppered = np.array([upper(t) for t in text], dtype=np.object_)
            parameters = json.loads(request.parameters())
            outputs = [
                pb_utils.Tensor("half_doubled", (half * np.float16(2)).astype(np.float16)),
                pb_utils.Tensor("count_plus_one", (count + 1).astype(np.int64)),
                pb_utils.Tensor("flag_not", np.logical_not(flag)),
                pb_utils.Tensor("text_upper", uppered),
                pb_utils.Tensor("parameters", np.array([json.dumps(parameters).encode()], dtype=np.object_)),
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
