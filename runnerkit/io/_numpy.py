"""numpy arrays as JSON nested lists, in and out, with optional dtype and shape checks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from runnerkit.exceptions import BadRequestError
from runnerkit.io._base import IODescriptor
from runnerkit.io._json import loads

_JSON_KINDS = "biufUS"  # bool, ints, floats, strings: what a JSON nested list can hold
_KIND_NAMES = {
    "b": "booleans",
    "i": "integers",
    "u": "integers",
    "f": "numbers",
    "U": "strings",
    "S": "strings",
}


def _item_schema(dtype: np.dtype[Any] | None) -> dict[str, Any]:
    if dtype is None:
        return {}
    if dtype.kind == "b":
        return {"type": "boolean"}
    if dtype.kind in "iu":
        schema: dict[str, Any] = {"type": "integer"}
        if dtype.itemsize in (4, 8) and dtype.kind == "i":
            schema["format"] = f"int{dtype.itemsize * 8}"
        return schema
    if dtype.kind == "f":
        return {"type": "number", "format": "float" if dtype.itemsize <= 4 else "double"}
    return {"type": "string"}


def _describe(dtype: np.dtype[Any]) -> str:
    return _KIND_NAMES.get(dtype.kind, f"values of dtype {dtype}")


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class NumpyNdarray(IODescriptor):
    """A numpy array from a JSON nested list (and back).

    `dtype=`: the array is converted to it (`enforce_dtype=True`: values that would need an
    unsafe conversion, such as numbers for an integer dtype, are refused with 400 instead).
    `shape=`: documents the shape; -1 means any size; `enforce_shape=True` refuses other shapes.
    Outputs are converted to `dtype` when given and checked when enforced (a mismatch is the
    API's bug: 500).
    """

    type_name = "NumpyNdarray"
    media_type = "application/json"

    def __init__(
        self,
        dtype: Any = None,
        shape: Sequence[int] | None = None,
        enforce_dtype: bool = False,
        enforce_shape: bool = False,
    ) -> None:
        self.dtype: np.dtype[Any] | None = None if dtype is None else np.dtype(dtype)
        if self.dtype is not None and self.dtype.kind not in _JSON_KINDS:
            raise ValueError(
                f"NumpyNdarray(dtype={self.dtype}): JSON holds booleans, numbers and strings only"
            )
        self.shape: tuple[int, ...] | None = None if shape is None else tuple(int(d) for d in shape)
        if self.shape is not None and any(d < -1 for d in self.shape):
            raise ValueError(f"NumpyNdarray(shape={shape}): dimensions are sizes >= 0, or -1 for any size")
        if enforce_dtype and self.dtype is None:
            raise ValueError("NumpyNdarray(enforce_dtype=True) needs dtype=")
        if enforce_shape and self.shape is None:
            raise ValueError("NumpyNdarray(enforce_shape=True) needs shape=")
        self.enforce_dtype = enforce_dtype
        self.enforce_shape = enforce_shape

    @classmethod
    def from_sample(cls, sample: Any, **kwargs: Any) -> NumpyNdarray:
        """dtype and shape from `sample` (explicit keyword arguments win)."""
        array = np.asarray(sample)
        kwargs.setdefault("dtype", array.dtype)
        kwargs.setdefault("shape", array.shape)
        descriptor = cls(**kwargs)
        descriptor.sample = array
        return descriptor

    # -- input -----------------------------------------------------------------------------------

    async def from_bytes(self, data: bytes, media_type: str | None) -> np.ndarray[Any, Any]:
        return self.to_array(loads(data, "NumpyNdarray input"))

    def to_array(self, data: Any) -> np.ndarray[Any, Any]:
        """A JSON value as an array of this descriptor's dtype and shape, or BadRequestError."""
        what = "NumpyNdarray input"
        try:
            array = np.array(data)
        except ValueError as exc:  # ragged lists
            raise BadRequestError(
                f"{what}: expected a nested list of equal-length rows{self._expected_shape()}, "
                f"got a ragged list ({exc})"
            ) from None
        if array.dtype.kind not in _JSON_KINDS:
            raise BadRequestError(
                f"{what}: expected a nested list of numbers, booleans or strings, "
                "got values such as null or objects"
            )
        if self.dtype is not None and array.dtype != self.dtype:
            if self.enforce_dtype and array.size and not np.can_cast(array.dtype, self.dtype, "same_kind"):
                raise BadRequestError(
                    f"{what}: expected {_describe(self.dtype)} (dtype {self.dtype}), "
                    f"got {_describe(array.dtype)}"
                )
            try:
                array = array.astype(self.dtype)
            except (ValueError, TypeError, OverflowError) as exc:
                raise BadRequestError(
                    f"{what}: cannot convert the values to dtype {self.dtype}: {exc}"
                ) from None
        if self.enforce_shape and not self._shape_matches(array.shape):
            raise BadRequestError(
                f"{what}: expected shape {self._shape_doc()}, got {_shape_text(array.shape)}"
            )
        return array

    def _shape_matches(self, shape: tuple[int, ...]) -> bool:
        assert self.shape is not None
        return len(shape) == len(self.shape) and all(e in (-1, g) for e, g in zip(self.shape, shape))

    def _shape_doc(self) -> str:
        assert self.shape is not None
        return _shape_text(self.shape) + (" (-1: any size)" if -1 in self.shape else "")

    def _expected_shape(self) -> str:
        return "" if self.shape is None else f" of shape {self._shape_doc()}"

    # -- output ----------------------------------------------------------------------------------

    def to_bytes(self, value: Any) -> tuple[bytes, str]:
        array = np.asarray(value)
        if self.dtype is not None and array.dtype != self.dtype:
            if self.enforce_dtype:
                raise TypeError(
                    f"the API returned an array of dtype {array.dtype}; its output is dtype {self.dtype}"
                )
            array = array.astype(self.dtype)
        if array.dtype.kind not in _JSON_KINDS:
            raise TypeError(f"a NumpyNdarray output cannot be written as JSON with dtype {array.dtype}")
        if self.enforce_shape and not self._shape_matches(array.shape):
            raise ValueError(
                f"the API returned shape {_shape_text(array.shape)}; its output is {self._shape_doc()}"
            )
        if array.dtype.kind == "S":
            array = np.char.decode(array, "utf-8")
        return json.dumps(array.tolist(), separators=(",", ":")).encode(), self.media_type

    # -- description -----------------------------------------------------------------------------

    def openapi_schema(self) -> dict[str, Any]:
        schema = _item_schema(self.dtype)
        if self.shape is None:
            return {"type": "array", "items": {}, "description": "a nested list (any number of dimensions)"}
        for size in reversed(self.shape):
            schema = {"type": "array", "items": schema}
            if self.enforce_shape and size >= 0:
                schema["minItems"] = schema["maxItems"] = size
        schema["description"] = f"a nested list of shape {self._shape_doc()}" + (
            f", dtype {self.dtype}" if self.dtype is not None else ""
        )
        return schema

    def openapi_example(self) -> Any:
        return None if self.sample is None else np.asarray(self.sample).tolist()

    def to_spec(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "dtype": None if self.dtype is None else str(self.dtype),
            "shape": None if self.shape is None else list(self.shape),
            "enforce_dtype": self.enforce_dtype,
            "enforce_shape": self.enforce_shape,
        }

    def __repr__(self) -> str:
        return f"NumpyNdarray(dtype={self.dtype!s}, shape={self.shape})"
