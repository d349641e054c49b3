"""sequence_sum: a running total per correlation id, reset by the sequence's start flag.

The sequence batcher hands over each request with a batch of one: inputs and outputs are [1, ...].
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.totals = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            value = int(pb_utils.get_input_tensor_by_name(request, "value").as_numpy().reshape(-1)[0])
            start = int(pb_utils.get_input_tensor_by_name(request, "START").as_numpy().reshape(-1)[0])
            end = int(pb_utils.get_input_tensor_by_name(request, "END").as_numpy().reshape(-1)[0])
            corrid = int(pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy().reshape(-1)[0])
            total = value + (0 if start else self.totals.get(corrid, 0))
            if end:
                self.totals.pop(corrid, None)
            else:
                self.totals[corrid] = total
            outputs = [
                pb_utils.Tensor("total", np.array([[total]], dtype=np.int64)),
                pb_utils.Tensor("corrid", np.array([[corrid]], dtype=np.uint64)),
                pb_utils.Tensor("flags", np.array([[start, end]], dtype=np.int32)),
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
