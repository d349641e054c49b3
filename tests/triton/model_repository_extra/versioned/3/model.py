"""versioned: answers with the version Triton loaded it as (the same file in every version)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.version = int(args["model_version"])

    def execute(self, requests):
        version = pb_utils.Tensor("version", np.array([self.version], dtype=np.int64))
        return [pb_utils.InferenceResponse(output_tensors=[version]) for _ in requests]
