"""uvicorn's httptools protocol, with an answer's writes leaving the worker in one send.

An ASGI app answers with two messages, the status line and headers, then the body, and uvicorn
writes each to the socket as it comes: two sends per answer, each of which wakes the client (on
loopback the kernel does the client's receive work inside the sender's send). For small answers,
the bulk of an inference API's, that second send is a tenth of an API worker's time. Here writes
made in one turn of the event loop are joined and sent at the end of that turn; big writes go out
at once, so uvicorn's flow control still sees a full socket when there is one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# A write this big (or a turn's writes adding up to it) is sent at once: holding it back would
# buy nothing and would hide a slow reader from flow control.
_COALESCE_LIMIT = 64 * 1024


class CoalescingTransport(asyncio.Transport):
    """A transport whose writes in one turn of the event loop leave in one `write` of `transport`."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._pending_size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            if len(data) >= _COALESCE_LIMIT:
                self._transport.write(data)
                return
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))
        self._pending_size += len(data)
        if self._pending_size >= _COALESCE_LIMIT:
            self.flush()

    def flush(self) -> None:
        """Send what this turn wrote (the event loop calls this at the end of the turn)."""
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending = []
        self._pending_size = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._pending_size = 0
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._pending_size

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.flush()  # an upgraded connection's new protocol writes after what was written here
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a `CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))
