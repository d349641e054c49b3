"""arith: out = (x - y) * n, per row of the batch."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            y = pb_utils.get_input_tensor_by_name(request, "y").as_numpy()
            n = pb_utils.get_input_tensor_by_name(request, "n").as_numpy()
            out = ((x - y) * n.astype(np.float32)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("out", out)]))
        return responses
