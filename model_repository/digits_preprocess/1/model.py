"""digits_preprocess: encoded image bytes -> 64 float32 pixels in [0, 1] (docs/CONTRACTS.md)."""

from __future__ import annotations

import io

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image


def preprocess_image(data: bytes) -> np.ndarray:
    """Decode, 8-bit grayscale, BOX-resize to 8x8, scale to [0, 1], flatten row-major."""
    with Image.open(io.BytesIO(data)) as image:
        gray = image.convert("L").resize((8, 8), Image.Resampling.BOX)
    return (np.asarray(gray, dtype=np.float32) / np.float32(255.0)).reshape(64)


class TritonPythonModel:
    def execute(self, requests: list[pb_utils.InferenceRequest]) -> list[pb_utils.InferenceResponse]:
        responses = []
        for request in requests:
            images = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            try:
                # One row per image: the batch dimension of this request, [B, 1] -> [B, 64].
                pixels = np.stack([preprocess_image(bytes(item)) for item in images.reshape(-1)])
            except (OSError, ValueError) as exc:
                # A bad image fails only its own request, not the others batched with it.
                error = pb_utils.TritonError(f"cannot decode image: {exc}")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            output = pb_utils.Tensor("input", pixels.astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[output]))
        return responses
