"""Checking a call's inputs against the model configuration before anything is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from runnerkit.exceptions import InvalidInputError
from runnerkit.triton._model_config import ModelSpec, TensorSpec

_TEXT_KINDS = frozenset("OUS")  # object, unicode, bytes: all acceptable for BYTES tensors


@attrs.frozen
class PreparedInput:
    name: str
    array: np.ndarray
    datatype: str


def _describe_shape(dims: Sequence[int], batched: bool, max_batch: int) -> str:
    parts = [f"batch (1..{max_batch})"] if batched else []
    parts += ["any" if d < 0 else str(d) for d in dims]
    return "[" + ", ".join(parts) + "]"


class InputValidator:
    """Precomputed per model so each call only does the checks, not the lookups."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.inputs = spec.inputs
        self.by_name: dict[str, TensorSpec] = {t.name: t for t in spec.inputs}
        self.required = tuple(t.name for t in spec.inputs if not t.optional)
        self.batched = spec.max_batch_size > 0

    def prepare(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[PreparedInput]:
        model = self.spec.name
        if args and kwargs:
            raise TypeError(
                f"model {model!r}: pass inputs either all positionally (in the order "
                f"{list(self.spec.input_names)}) or all by keyword, not both; got "
                f"{len(args)} positional and keyword {sorted(kwargs)}"
            )
        if args:
            if len(args) > len(self.inputs) or len(args) < len(self.required):
                raise InvalidInputError(
                    model,
                    f"expected {len(self.required)} input(s) {list(self.spec.input_names)}, "
                    f"got {len(args)} positional value(s)",
                )
            pairs = list(zip(self.inputs, args))
        else:
            unknown = sorted(set(kwargs) - set(self.by_name))
            if unknown:
                raise InvalidInputError(
                    model,
                    f"unknown input(s) {unknown}; the model's inputs are {list(self.spec.input_names)}",
                )
            missing = [name for name in self.required if name not in kwargs]
            if missing:
                raise InvalidInputError(
                    model, f"missing input(s) {missing}; expected {list(self.spec.input_names)}"
                )
            pairs = [(self.by_name[name], value) for name, value in kwargs.items()]
        return [PreparedInput(t.name, self._check(t, v), t.datatype) for t, v in pairs]

    def _check(self, tensor: TensorSpec, value: Any) -> np.ndarray:
        expected = tensor.numpy_dtype
        if tensor.datatype == "BYTES":
            array = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
            if array.dtype.kind not in _TEXT_KINDS:
                raise self._error(tensor, f"expected BYTES (str or bytes), got dtype {array.dtype}")
            if array.dtype.kind != "O":
                array = array.astype(object)
        elif tensor.datatype == "BF16":
            # numpy users rarely hold bfloat16 arrays: any floating data is narrowed to BF16.
            array = np.asarray(value)
            if array.dtype != expected:
                if array.dtype.kind != "f":
                    raise self._error(
                        tensor, f"expected BF16 (floating point values), got dtype {array.dtype}"
                    )
                array = array.astype(expected)
        elif isinstance(value, np.ndarray):
            array = value
            if array.dtype != expected:
                raise self._error(
                    tensor,
                    f"expected dtype {tensor.datatype} (numpy {expected}), got {array.dtype}; "
                    f"convert it with .astype(np.{expected})",
                )
        else:
            # Lists and scalars have no dtype of their own: convert within the same kind.
            array = np.asarray(value)
            if not np.can_cast(array.dtype, expected, casting="same_kind"):
                raise self._error(
                    tensor,
                    f"expected {tensor.datatype} values (numpy {expected}), got {array.dtype} data",
                )
            array = array.astype(expected, copy=False)
        self._check_shape(tensor, array.shape)
        return array

    def _check_shape(self, tensor: TensorSpec, shape: tuple[int, ...]) -> None:
        dims = tensor.dims
        expected_rank = len(dims) + (1 if self.batched else 0)
        ok = len(shape) == expected_rank
        if ok and self.batched:
            ok = 1 <= shape[0] <= self.spec.max_batch_size
            shape_rest = shape[1:]
        else:
            shape_rest = shape
        if ok:
            ok = all(d < 0 or d == s for d, s in zip(dims, shape_rest))
        if not ok:
            raise self._error(
                tensor,
                f"expected shape {_describe_shape(dims, self.batched, self.spec.max_batch_size)}"
                f", got {list(shape)}",
            )

    def _error(self, tensor: TensorSpec, message: str) -> InvalidInputError:
        return InvalidInputError(self.spec.name, message, input_name=tensor.name)
