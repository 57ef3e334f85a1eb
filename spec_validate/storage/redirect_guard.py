"""A forwarding proxy on loopback for one plain-HTTP store, so that a redirect is followed only inside the store.

obstore's HTTP client (reqwest) follows a redirect by itself, and no option of obstore's stops it; the refusing proxy
of `objectstore` keeps it on the store's host, but a document answering 302 to another path of that host was read
as the document (and its content shown in the report). So every request of a plain-HTTP store is sent through this
proxy, which forwards it to the store's host and reads each answer's head before passing it on: a redirect whose
target lies outside the store's prefix, or on another host, is answered with status 421 instead, and what it named
is kept for the store to say (`refused`). A redirect inside the store (a folder's URL without its final "/", which
servers answer with the folder's own URL) is passed on and followed. A request for a folder's listing says so
(FOLDER_HEADER) and is sent as the folder's own URL: object_store drops the final "/" of every path, and without it
each folder listed would cost the server's redirect and a second request.

Each client connection has its upstream connection, kept while the server keeps it; bodies are relayed as they
come (framed by Content-Length, chunked, or the connection's end), never held whole. An upstream that cannot be
reached is answered with 421 too, its error kept (`refused`), so that the store reports it as it would without the
proxy. Every guard of the process runs on one event loop, on a thread of its own: one thread however many
connections (under `--memory-limit` each thread's stack counts). HTTPS cannot be read on its way (TLS): an
`https://` store is not sent through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import threading
from urllib.parse import unquote, urljoin, urlsplit

# The most bytes of a request's or a response's head (its status line and headers): real ones hold a few hundred.
MOST_HEAD_BYTES = 64 * 2**10
PIECE = 256 * 2**10  # bytes relayed at a time
# Sent by the store with a folder's listing request: the proxy asks for the folder's own URL, its final "/" restored.
# A "Proxy-" header, so that no server ever receives it (the proxy passes none of those on).
FOLDER_HEADER = "Proxy-Spec-Validate-Folder"
REFUSED_STATUS = 421  # answered for a refused redirect or an upstream not reached; never retried by the client
# Upstream reads wait this much longer than the client's own read timeout: the client's fires first, and says
# "timed out" as it would without the proxy.
TIMEOUT_MARGIN = 5.0


class Refusal(Exception):
    """A redirect refused: out of the store's prefix, or to another host."""


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _guard_loop() -> asyncio.AbstractEventLoop:
    """The event loop every guard of the process runs on, on a daemon thread of its own (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="spec-validate-redirect-guard", daemon=True).start()
            _loop = loop
        return _loop


def _forget_loop() -> None:
    """In a forked child: the parent's loop thread is not there."""
    global _loop, _loop_lock
    _loop, _loop_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop)


class RedirectGuard:
    """The proxy for the store at `prefix` (an `http://` URL: the store's root, or the file itself), listening on
    loopback until `close()`; `url` is its address as a proxy URL."""

    def __init__(self, prefix: str, connect_timeout: float, read_timeout: float) -> None:
        parts = urlsplit(prefix)
        self.host, self.port = (parts.hostname or "").lower(), parts.port or 80
        self.prefix = _normalized(parts.path).rstrip("/")
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout + TIMEOUT_MARGIN
        # request path -> why it was answered with REFUSED_STATUS: a Refusal, or the upstream's connection error
        self._refused: dict[str, Exception] = {}
        self._lock = threading.Lock()
        # Whether the store's server ended its connection after an answer (an HTTP/1.0 server such as python's
        # http.server), as the proxy saw it before the client got the answer; None until one came. The client's
        # own connections to the proxy are kept whatever the server does, so only the proxy can tell the request
        # gate (request_gate: such a server's listen backlog is what the gate protects).
        self.server_closes: bool | None = None
        self._loop = _guard_loop()
        start = asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256, limit=MOST_HEAD_BYTES)
        self._server = asyncio.run_coroutine_threadsafe(start, self._loop).result()
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def refused(self, url: str) -> Exception | None:
        """Why the request for `url` (as the store asked for it) was refused, once (a Refusal, or the error that
        reaching the store's host met); None where it was not."""
        with self._lock:
            return self._refused.pop(_normalized(urlsplit(url).path), None)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop is gone (a forked child's): nothing to stop
            self._loop.call_soon_threadsafe(self._server.close)

    # --- the proxy ------------------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = _Upstream(self.host, self.port, self.connect_timeout, self.read_timeout)
        try:
            while (head := await _read_head(reader)) is not None and await self._exchange(writer, head, link):
                pass
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            return  # a connection ended, a head that is no HTTP, or a stalled server: the client's connection ends
        finally:
            link.close()
            writer.close()

    async def _exchange(self, client: asyncio.StreamWriter, head: bytes, link: _Upstream) -> bool:
        """One request of the client and its answer; False when the connection is done with."""
        method, target, headers = _request(head)
        parts = urlsplit(target)
        path = parts.path or "/"
        if (parts.hostname or "").lower() != self.host or (parts.port or 80) != self.port:
            # Only a redirect leads the client to another host (the store names none).
            await self._refuse(client, path, Refusal("redirected to another host; not followed"))
            return True
        if not path.endswith("/") and _header(headers, FOLDER_HEADER.lower()) is not None:
            path += "/"  # a folder's listing: its own URL, not the redirect to it and a second request
        line = f"{method} {path}{'?' + parts.query if parts.query else ''} HTTP/1.1\r\n"
        kept = "".join(f"{k}: {v}\r\n" for k, v in headers if not k.lower().startswith("proxy-"))
        try:
            answer = await link.ask((line + kept + "\r\n").encode("latin-1"))  # a GET or a HEAD: no body
        except OSError as exc:
            await self._refuse(client, path, _unreached(exc))
            return True
        if answer is None:
            return False  # the upstream hung up: so does the proxy, and the client says so
        status, answer_headers = _response(answer)
        closes = self.server_closes = _closes(answer, answer_headers)
        location = _header(answer_headers, "location")
        if 300 <= status < 400 and location is not None:
            why = self._outside(urljoin(target, location.strip()))
            if why is not None:
                await self._refuse(client, path, Refusal(why))
                link.close()  # the redirect's body is not wanted: a fresh connection for the next request
                return True
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            client.write(answer)
        else:
            length = _header(answer_headers, "content-length")
            if length is None and "chunked" not in (_header(answer_headers, "transfer-encoding") or "").lower():
                client.write(answer)
                await link.relay_until_closed(client)
                return False
            if length is not None and length.isdigit() and int(length) <= PIECE:
                # A small body (a metadata document, a listing) goes with its head in one write: a send on loopback
                # costs about what the rest of the exchange does. A larger one's head goes first, so that the client
                # can refuse a body past its bound before any of it comes.
                await link.relay_body(client, length, answer)
            else:
                client.write(answer)
                await link.relay_body(client, length)
        await client.drain()
        if closes:
            link.close()
            return False  # the client is told its connection ends, as the server told the proxy
        return True

    def _outside(self, url: str) -> str | None:
        """Why a redirect to `url` is not followed (outside the store, or on another host), or None."""
        parts = urlsplit(url)
        if parts.scheme != "http" or (parts.hostname or "").lower() != self.host or (parts.port or 80) != self.port:
            return "redirected to another host; not followed"
        path = _normalized(parts.path)
        if path == self.prefix or path.startswith(self.prefix + "/"):
            return None
        return f"redirected to {path}, outside the store ({self.prefix or '/'}); not followed"

    async def _refuse(self, client: asyncio.StreamWriter, path: str, why: Exception) -> None:
        with self._lock:
            self._refused[_normalized(path)] = why
        client.write(f"HTTP/1.1 {REFUSED_STATUS} Misdirected Request\r\nContent-Length: 0\r\n\r\n".encode("ascii"))
        await client.drain()


class _Upstream:
    """The connection to the store's host that one client connection's requests go on, made when first needed."""

    def __init__(self, host: str, port: int, connect_timeout: float, read_timeout: float) -> None:
        self.address, self.connect_timeout, self.read_timeout = (host, port), connect_timeout, read_timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ask(self, request: bytes) -> bytes | None:
        """Send `request` and read its answer's head (None: the server hung up); a kept connection the server has
        closed meanwhile is made again, and the request sent on it once more."""
        for attempt in (0, 1):
            fresh = self.writer is None
            if self.reader is None or self.writer is None:
                opening = asyncio.open_connection(*self.address, limit=MOST_HEAD_BYTES)
                self.reader, self.writer = await asyncio.wait_for(opening, self.connect_timeout)
            try:
                self.writer.write(request)
                await self.writer.drain()
                head = await self._timed(_read_head(self.reader))
            except (ConnectionResetError, BrokenPipeError):
                head = None
            if head is not None or fresh or attempt:
                return head
            self.close()
        return None

    async def relay_body(self, client: asyncio.StreamWriter, length: str | None, head: bytes = b"") -> None:
        """Relay a body framed by `length` (a Content-Length), or by chunks where it is None; `head`, the answer's
        head not yet sent, with its first bytes."""
        assert self.reader is not None
        if length is not None:
            await self._relay_bytes(client, int(length), head)
            return
        client.write(head)
        while True:
            size_line = await self._timed(self.reader.readline())
            if not size_line:
                raise ValueError("the connection ended inside a chunked body")
            client.write(size_line)
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:  # the last chunk: its trailers, if any, then a blank line
                while (line := await self._timed(self.reader.readline())) not in (b"\r\n", b""):
                    client.write(line)
                client.write(b"\r\n")
                return
            await self._relay_bytes(client, size + 2)  # the chunk and its line end

    async def _relay_bytes(self, client: asyncio.StreamWriter, count: int, head: bytes = b"") -> None:
        """Relay `count` bytes of a body, `head` (an answer's head not yet sent) with the first piece."""
        assert self.reader is not None
        while count > 0:
            piece = await self._timed(self.reader.read(min(PIECE, count)))  # what has come, as it comes
            if not piece:
                raise ValueError("the connection ended inside a body")
            client.write(head + piece if head else piece)
            head = b""
            await client.drain()
            count -= len(piece)
        if head:  # an empty body
            client.write(head)

    async def relay_until_closed(self, client: asyncio.StreamWriter) -> None:
        assert self.reader is not None
        while piece := await self._timed(self.reader.read(PIECE)):
            client.write(piece)
            await client.drain()

    async def _timed(self, read):  # type: ignore[no-untyped-def]
        # asyncio.timeout, not wait_for: wait_for makes a task of every read (two or three a request).
        async with asyncio.timeout(self.read_timeout):
            return await read

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def _closes(head: bytes, headers: list[tuple[str, str]]) -> bool:
    """Whether the server ends its connection after this answer: it says so, or answers as HTTP/1.0 without
    keep-alive (python's own http.server)."""
    connection = (_header(headers, "connection") or "").lower()
    return "close" in connection or (head.startswith(b"HTTP/1.0") and "keep-alive" not in connection)


def _unreached(exc: OSError) -> Exception:
    """The error the client would have met reaching the host itself, as the store reports it."""
    if isinstance(exc, TimeoutError):
        return TimeoutError("timed out")
    if isinstance(exc, ConnectionRefusedError):
        return ConnectionError("connection refused")
    return ConnectionError(str(exc))


def _normalized(path: str) -> str:
    """A URL's path as the server resolves it: percent-decoded, its dot segments removed."""
    path = unquote(path or "/")
    out = posixpath.normpath(path) if path not in ("", "/") else "/"
    return "/" + out.lstrip("/") if out != "." else "/"


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    """A request's or response's head, up to its blank line; None where the connection ended before one began."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ValueError("the connection ended inside a head") from None
        return None


def _fields(head: bytes) -> tuple[str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return lines[0], headers


def _request(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    first, headers = _fields(head)
    method, target, _ = first.split(" ", 2)
    return method, target, headers


def _response(head: bytes) -> tuple[int, list[tuple[str, str]]]:
    first, headers = _fields(head)
    return int(first.split(" ", 2)[1]), headers


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)
