"""Triton data types <-> numpy dtypes, in one place."""

from __future__ import annotations

import numpy as np
from tritonclient.utils import triton_to_np_dtype

# Triton's wire names (KServe v2 "datatype") keyed by model-config enum name.
CONFIG_TO_WIRE: dict[str, str] = {
    "TYPE_BOOL": "BOOL",
    "TYPE_UINT8": "UINT8",
    "TYPE_UINT16": "UINT16",
    "TYPE_UINT32": "UINT32",
    "TYPE_UINT64": "UINT64",
    "TYPE_INT8": "INT8",
    "TYPE_INT16": "INT16",
    "TYPE_INT32": "INT32",
    "TYPE_INT64": "INT64",
    "TYPE_FP16": "FP16",
    "TYPE_FP32": "FP32",
    "TYPE_FP64": "FP64",
    "TYPE_STRING": "BYTES",
    "TYPE_BF16": "BF16",
}

WIRE_TO_NUMPY: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(np.object_),
    # numpy has no bfloat16 of its own: follow the installed tritonclient (ml_dtypes.bfloat16
    # since 2.71, float32 before), so results and requests agree with its as_numpy.
    "BF16": np.dtype(triton_to_np_dtype("BF16")),
}


def wire_dtype(config_type: str) -> str:
    """`TYPE_FP32` -> `FP32`; wire names pass through unchanged."""
    if config_type in WIRE_TO_NUMPY:
        return config_type
    try:
        return CONFIG_TO_WIRE[config_type]
    except KeyError:
        raise ValueError(f"unknown Triton data type {config_type!r}") from None


def numpy_dtype(wire: str) -> np.dtype:
    return WIRE_TO_NUMPY[wire]
