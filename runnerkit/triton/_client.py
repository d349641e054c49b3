"""The protocol boundary: one async client per event loop, over gRPC or HTTP.

Everything that talks to Triton goes through `TritonClient`; errors come out as runnerkit's.
"""

from __future__ import annotations

import abc
import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

import attrs
import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcclient_aio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpclient_aio
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException, serialize_byte_tensor

from runnerkit.exceptions import TritonError, TritonUnavailableError
from runnerkit.triton._result import InferResult
from runnerkit.triton._validation import PreparedInput

PROTOCOLS = ("grpc", "http")
_UNLIMITED = 2**31 - 1
_GRPC_OPTIONS = [
    ("grpc.max_send_message_length", _UNLIMITED),
    ("grpc.max_receive_message_length", _UNLIMITED),
    # gRPC's default reconnect backoff grows to 120 s: after a supervised tritonserver restarts
    # on the same ports, clients would keep failing long after it is back. Triton is local.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 250),
]


@attrs.frozen
class InferOptions:
    """Per-call options that pass through to Triton."""

    request_id: str = ""
    sequence_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout_us: int | None = None  # Triton's own request timeout, in microseconds
    parameters: dict[str, Any] | None = None


DEFAULT_OPTIONS = InferOptions()


def bf16_from_float32(array: np.ndarray) -> bytes:
    """BF16 wire bytes of a float32 array (the upper half of each value, as tritonclient < 2.71
    sent them; newer ones hand ml_dtypes.bfloat16 arrays, which need no conversion)."""
    return (np.ascontiguousarray(array, dtype="<f4").view("<u4") >> 16).astype("<u2").tobytes()


def _is_unavailable_status(status: str | None) -> bool:
    return status is not None and ("UNAVAILABLE" in status or status == "503")


def translate_error(exc: BaseException, url: str) -> TritonError:
    """Triton's and the transports' errors as runnerkit exceptions with Triton's status."""
    if isinstance(exc, TritonError):
        return exc
    if isinstance(exc, grpc.aio.AioRpcError):
        status, message = exc.code().name, exc.details() or ""
    elif isinstance(exc, InferenceServerException):
        status = exc.status()
        message = exc.message() or str(exc)
        if status and status.startswith("StatusCode."):
            status = status[len("StatusCode.") :]
    elif isinstance(exc, (OSError, asyncio.TimeoutError)) or _is_aiohttp_connection_error(exc):
        return TritonUnavailableError(
            f"cannot reach Triton at {url}: {exc or type(exc).__name__}",
            status="UNAVAILABLE",
            url=url,
        )
    else:
        return TritonError(f"{type(exc).__name__}: {exc}", url=url)
    if _is_unavailable_status(status):
        return TritonUnavailableError(f"Triton at {url} is unavailable: {message}", status=status, url=url)
    return TritonError(message, status=status, url=url)


def _is_aiohttp_connection_error(exc: BaseException) -> bool:
    import aiohttp

    return isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ServerDisconnectedError))


class TritonClient(abc.ABC):
    """An async connection to one Triton server; create and use it on a single event loop."""

    protocol: str

    def __init__(self, url: str, timeout: float | None) -> None:
        self.url = url
        self.timeout = timeout
        self.management: Any = None

    @abc.abstractmethod
    async def infer(
        self,
        model: str,
        version: str,
        inputs: Sequence[PreparedInput],
        outputs: Sequence[str] | None,
        options: InferOptions = DEFAULT_OPTIONS,
    ) -> InferResult: ...

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call one of tritonclient's own client methods, with Triton's errors translated."""
        try:
            result = getattr(self.management, method)(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result
        except (
            InferenceServerException,
            grpc.aio.AioRpcError,
            OSError,
            asyncio.TimeoutError,
        ) as exc:
            raise translate_error(exc, self.url) from exc
        except Exception as exc:
            if _is_aiohttp_connection_error(exc):
                raise translate_error(exc, self.url) from exc
            raise

    async def is_server_ready(self) -> bool:
        return bool(await self.call("is_server_ready"))

    @abc.abstractmethod
    async def close(self) -> None: ...


class GrpcClient(TritonClient):
    protocol = "grpc"

    def __init__(self, url: str, timeout: float | None) -> None:
        super().__init__(url, timeout)
        self.management = grpcclient_aio.InferenceServerClient(url, channel_args=_GRPC_OPTIONS)
        # Inference goes straight to the stub with a request built here: the same wire message
        # tritonclient would build, without its per-call InferInput objects.
        self._channel = grpc.aio.insecure_channel(url, options=_GRPC_OPTIONS)
        self._stub = service_pb2_grpc.GRPCInferenceServiceStub(self._channel)

    @staticmethod
    def build_request(
        model: str,
        version: str,
        inputs: Sequence[PreparedInput],
        outputs: Sequence[str] | None,
        options: InferOptions,
    ) -> service_pb2.ModelInferRequest:
        request = service_pb2.ModelInferRequest(model_name=model, model_version=version)
        if options.request_id:
            request.id = options.request_id
        contents = request.raw_input_contents
        for item in inputs:
            array = item.array
            request.inputs.add(name=item.name, datatype=item.datatype, shape=array.shape)
            if item.datatype == "BYTES":
                serialized = serialize_byte_tensor(array)
                contents.append(serialized.item() if serialized.size else b"")
            elif item.datatype == "BF16" and array.dtype.itemsize == 4:
                contents.append(bf16_from_float32(array))
            else:
                contents.append(array.tobytes())
        for name in outputs or ():
            request.outputs.add(name=name)
        params = request.parameters
        if options.sequence_id:
            if isinstance(options.sequence_id, str):
                params["sequence_id"].string_param = options.sequence_id
            else:
                params["sequence_id"].int64_param = options.sequence_id
            params["sequence_start"].bool_param = options.sequence_start
            params["sequence_end"].bool_param = options.sequence_end
        if options.priority:
            params["priority"].uint64_param = options.priority
        if options.timeout_us is not None:
            params["timeout"].int64_param = options.timeout_us
        for key, value in (options.parameters or {}).items():
            if isinstance(value, bool):
                params[key].bool_param = value
            elif isinstance(value, int):
                params[key].int64_param = value
            elif isinstance(value, float):
                params[key].double_param = value
            else:
                params[key].string_param = str(value)
        return request

    async def infer(
        self,
        model: str,
        version: str,
        inputs: Sequence[PreparedInput],
        outputs: Sequence[str] | None,
        options: InferOptions = DEFAULT_OPTIONS,
    ) -> InferResult:
        request = self.build_request(model, version, inputs, outputs, options)
        try:
            response = await self._stub.ModelInfer(request, timeout=self.timeout)
        except grpc.aio.AioRpcError as exc:
            raise translate_error(exc, self.url) from exc
        return InferResult(grpcclient.InferResult(response), "grpc")

    async def is_server_ready(self) -> bool:
        # Over the inference channel, not the management client's: ready means inference calls
        # connect too (after a tritonserver restart each channel reconnects on its own).
        try:
            response = await self._stub.ServerReady(service_pb2.ServerReadyRequest(), timeout=self.timeout)
        except grpc.aio.AioRpcError as exc:
            raise translate_error(exc, self.url) from exc
        return bool(response.ready)

    async def close(self) -> None:
        await self._channel.close()
        await self.management.close()


class HttpClient(TritonClient):
    protocol = "http"

    def __init__(self, url: str, timeout: float | None) -> None:
        super().__init__(url, timeout)
        self.management = httpclient_aio.InferenceServerClient(
            url, conn_timeout=timeout if timeout is not None else 60.0
        )

    async def infer(
        self,
        model: str,
        version: str,
        inputs: Sequence[PreparedInput],
        outputs: Sequence[str] | None,
        options: InferOptions = DEFAULT_OPTIONS,
    ) -> InferResult:
        infer_inputs = []
        for item in inputs:
            infer_input = httpclient.InferInput(item.name, list(item.array.shape), item.datatype)
            infer_input.set_data_from_numpy(item.array, binary_data=True)
            infer_inputs.append(infer_input)
        requested = [httpclient.InferRequestedOutput(n, binary_data=True) for n in outputs or ()]
        result = await self.call(
            "infer",
            model,
            infer_inputs,
            model_version=version,
            outputs=requested or None,
            request_id=options.request_id,
            sequence_id=options.sequence_id,
            sequence_start=options.sequence_start,
            sequence_end=options.sequence_end,
            priority=options.priority,
            timeout=options.timeout_us,
            parameters=options.parameters,
        )
        return InferResult(result, "http")

    async def close(self) -> None:
        await self.management.close()


def make_client(protocol: str, url: str, timeout: float | None) -> TritonClient:
    if protocol == "grpc":
        return GrpcClient(url, timeout)
    if protocol == "http":
        return HttpClient(url, timeout)
    raise ValueError(f"tritonserver_type must be one of {PROTOCOLS}, got {protocol!r}")
