"""bf16_echo: the BF16 input widened to float32 (through torch, which knows bfloat16)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        import torch  # only when a request comes: loading the model stays cheap

        responses = []
        for request in requests:
            tensor = torch.from_dlpack(pb_utils.get_input_tensor_by_name(request, "x").to_dlpack())
            widened = tensor.to(torch.float32).numpy()
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("as_fp32", widened)]))
        return responses
