"""One HTTP connection's bytes: an asyncio protocol that keeps what an answer's head and lines need in a buffer of
its own and has the socket write a body of known length straight into the buffer that is handed back.

asyncio's streams copy every byte received three times before a caller has it (the transport's `recv` into a new
bytes object, that appended to the reader's buffer, a read taken out of it), and a body read in pieces is joined
once more: each copy a fresh allocation, so a fresh set of pages for the kernel to fault in. Fetching the 65 MB of
chunks of a 5e7-value Zarr store that way cost 0.12 s of CPU; written into one buffer per body, 0.065 s.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Bytes a connection reads at a time when no body is being filled (heads, lines, chunked pieces): kept per
# connection, so small (a store keeps up to 64 connections open).
SCRATCH_BYTES = 64 * 1024


class Wire(asyncio.BufferedProtocol):
    """The receiving and sending side of one connection (TCP or TLS), for one request at a time.

    `readuntil` and `read` take bytes from the connection's own buffer (at most `limit` held before reading pauses);
    `fill` has the socket write into the caller's buffer. Each raises the error that ended the connection, if one
    did; a connection that ended cleanly reads as the end of its bytes (`IncompleteReadError`, a short `fill`).
    """

    def __init__(self, limit: int) -> None:
        self.transport: Any = None
        self._limit = limit
        self._buffer = bytearray()  # received, not yet taken
        # A view, not the bytearray: the TLS transport writes into slices of what `get_buffer` gives, and a slice of
        # a bytearray is a copy.
        self._scratch = memoryview(bytearray(SCRATCH_BYTES))
        self._target: memoryview | None = None  # the body being filled, and how much of it is
        self._filled = 0
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._lost = False
        self._error: BaseException | None = None
        self._paused = False
        self._writing_paused = False
        self._drained: asyncio.Future[None] | None = None
        self._last_received = 0.0

    # --- the transport's calls ----------------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> Any:
        target = self._target
        if target is not None and self._filled < len(target):
            return target[self._filled :]
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        self._last_received = asyncio.get_running_loop().time()
        target = self._target
        if target is not None and self._filled < len(target):
            self._filled += nbytes
            if self._filled < len(target):
                return  # woken only when the body is whole: not once per read of the socket
        else:
            self._buffer += self._scratch[:nbytes]
            if len(self._buffer) > self._limit and not self._paused:
                self._paused = True
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # the transport closes itself: nothing is sent after the server's end

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = self._lost = True
        if exc is not None:
            self._error = exc
        self._wake()
        self._writing_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # --- sending ------------------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Send `data`; ConnectionResetError on a connection already ended (a kept one the server closed)."""
        if self.transport.is_closing():
            raise ConnectionResetError("Connection lost")
        self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the transport takes more; ConnectionResetError when the connection has ended."""
        while self._writing_paused:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        if self._lost:
            raise ConnectionResetError("Connection lost")

    # --- receiving ----------------------------------------------------------------------------------------------

    def at_eof(self) -> bool:
        """True when the connection has ended and every byte received has been taken."""
        return self._eof and not self._buffer

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def readuntil(self, separator: bytes) -> bytes:
        """The bytes up to and including `separator`. LimitOverrunError when more than `limit` bytes come without it;
        IncompleteReadError (with the bytes received) when the connection ends first."""
        searched = 0
        while True:
            if self._error is not None:
                raise self._error
            found = self._buffer.find(separator, searched)
            if found >= 0:
                return self._take(found + len(separator))
            if len(self._buffer) > self._limit:
                raise asyncio.LimitOverrunError("the separator is not found within the limit", len(self._buffer))
            if self._eof:
                partial = self._take(len(self._buffer))
                raise asyncio.IncompleteReadError(partial, None)
            searched = max(0, len(self._buffer) - len(separator) + 1)
            await self._wait()

    async def read(self, most: int) -> bytes:
        """Up to `most` bytes as they come; b"" once the connection has ended."""
        while True:
            if self._error is not None:
                raise self._error
            if self._buffer:
                return self._take(min(most, len(self._buffer)))
            if self._eof:
                return b""
            await self._wait()

    async def fill(self, view: memoryview, timeout: float) -> int:
        """Write the next bytes into `view` until it is full or the connection ends; how many were written.

        TimeoutError when no byte comes for `timeout` seconds (a slow body that keeps coming is waited for)."""
        taken = min(len(self._buffer), len(view))
        if taken:
            with memoryview(self._buffer) as held:
                view[:taken] = held[:taken]
            del self._buffer[:taken]
            self._resume()
        if taken == len(view):
            return taken
        loop = asyncio.get_running_loop()
        self._target, self._filled = view, taken
        self._last_received = loop.time()
        try:
            while self._filled < len(view) and not self._eof:
                self._resume()
                try:
                    await asyncio.wait_for(self._wait(), timeout)
                except asyncio.TimeoutError:
                    if loop.time() - self._last_received >= timeout:
                        raise
            filled = self._filled
        finally:
            self._target = None
        if filled < len(view) and self._error is not None:
            raise self._error
        return filled

    def _take(self, size: int) -> bytes:
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        self._resume()
        return taken

    def _resume(self) -> None:
        if self._paused and len(self._buffer) <= self._limit:
            self._paused = False
            self.transport.resume_reading()

    def _wait(self) -> asyncio.Future[None]:
        if self._paused:
            self._resume()
        self._waiter = asyncio.get_running_loop().create_future()
        return self._waiter

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
