"""HTTP(S) stores read on asyncio connections: what a remote store asks of a file system, without fsspec and aiohttp.

Importing fsspec's HTTP file system and aiohttp cost a remote run 0.13-0.15 s before its first request (aiohttp
builds two TLS contexts at import, loading the system's certificates, even for `http://`): about half of what a
5e7-value Zarr store takes locally. A store needs little of HTTP: GET of a whole key or of a byte range, HEAD, and
the links of a directory page, over connections kept alive (`http_wire`: a body of known length is written by the
socket straight into the buffer handed back), within the bounds a hostile server calls for. So
`http://` and `https://` URLs are read here, through the proxy the environment names (`http_proxy`, `https_proxy`,
`no_proxy`: `http_proxy.py`), a plain-HTTP one or a tunnel (CONNECT) for `https://`; fsspec (with aiohttp) only
where fsspec options for HTTP are configured (see `remote.filesystem`).

The bounds, as `remote` documents them for any HTTP client: connect and read timeouts; redirects followed on the
URL's host only, at most MAX_REDIRECTS; bodies taken as sent (`Accept-Encoding: identity` asked, no encoding ever
undone: no gzip bomb); no body larger than the request's bound, declared or not; headers of at most
MAX_HEADER_BYTES. Each answer's timing is told to the request's gate (`request_gate.CURRENT`).

The interface is the subset of fsspec's asynchronous file systems that `remote` uses (`_cat_file`, `_ls`, `ls`,
`info`, `open`, `loop`, `async_impl`), so the store reads either kind alike.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import io
import os
import re
import socket
import threading
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from spec_validate.storage import keyvalue, request_gate
from spec_validate.storage.http_proxy import Proxy, proxy_for
from spec_validate.storage.http_wire import Wire

MAX_REDIRECTS = 10
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADER_LINES = 200
# An error answer's body is read (so that its connection is kept) only when it declares at most this many bytes.
MAX_ERROR_BODY_BYTES = 64 * 1024
# A connection's own buffer (`http_wire.Wire`): at most this many bytes held before reading pauses; a head or line
# longer than this is refused. A body of known length bypasses it, written into its own buffer by the socket.
STREAM_BUFFER_BYTES = 2**20
# A body is filled a piece of at most this many bytes at a time (the piece zeroed, so resident, when it is made).
BODY_PIECE_BYTES = 2**20
USER_AGENT = "spec-validate"

_STATUS_LINE = re.compile(rb"HTTP/(\d)\.(\d) (\d{3})(?: ([^\r\n]*))?")
# An interim answer (100 Continue, 103 Early Hints) comes before the real one; 101 (a protocol switch) is final.
_INFORMATIONAL = re.compile(rb"HTTP/\d\.\d 1(?!01)\d\d")
_HREF = re.compile(r"""<a\s(?:[^>]*?\s)?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.IGNORECASE)
# What a host or a host:port may hold (an IPv6 literal in brackets included): nothing that ends a header line.
_HOST = re.compile(r"[A-Za-z0-9.\-_~%:\[\]]+")
# A '%' that does not begin an escape: quoted as %25, as a browser (and yarl) would.
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PATH_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/%")
_QUERY_SAFE = _PATH_SAFE | frozenset(b"?")
# A Content-Length and a chunk size: ASCII digits only (int() would also take signs, underscores, other scripts'
# digits, and a negative size would read to the end of the stream).
_LENGTH = re.compile(r"[0-9]{1,19}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_CONTENT_RANGE = re.compile(r"bytes ([0-9]{1,19})-[0-9]{1,19}/(?:[0-9]{1,19}|\*)", re.IGNORECASE)


class HTTPStatusError(Exception):
    """An error answer (other than 404, which is FileNotFoundError), with `status` and `message` as aiohttp gives them."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status} {message}".rstrip())
        self.status = status
        self.message = message


class RefusedResponse(Exception):
    """A response this tool does not take: a redirect to another host, or a body larger than any key may hold."""


class ResponseTooLarge(RefusedResponse):
    """A response body larger than the bound of its request (MAX_VALUE_BYTES, or a batch's own)."""


class BadResponse(Exception):
    """An answer that is not HTTP, or breaks off: a malformed status line, header or chunk, a body cut short."""


# The bound on one response's body in the running task: MAX_VALUE_BYTES, or what a batched fetch asks for its keys
# (a metadata document, a chunk), so that many responses in flight are each no larger than what is read of them.
RESPONSE_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("response_limit", default=None)


def response_limit() -> int:
    """The most bytes the running request may receive: MAX_VALUE_BYTES (looked up now: tests lower it), or less."""
    most = keyvalue.MAX_VALUE_BYTES
    return min(most, RESPONSE_LIMIT.get() or most)


# --- the event loop ---------------------------------------------------------------------------------------------

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def event_loop() -> asyncio.AbstractEventLoop:
    """The process's loop for HTTP requests, running on a daemon thread of its own (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="spec-validate-http", daemon=True).start()
            _loop = loop
        return _loop


def _forget_loop() -> None:
    """In a forked child (a run under --timeout): the parent's loop thread is not there; a new one is started."""
    global _loop, _loop_lock
    _loop, _loop_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop)


def sync(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run `coroutine` on `loop` (running on another thread) and return its result, or raise its exception."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coroutine.close()
        raise RuntimeError("sync() called from the HTTP loop's own thread")
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


# --- requests -----------------------------------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    reason: str
    version: tuple[int, int]
    headers: dict[str, str]  # names lower-cased; a repeated header's values joined with ", "
    body: bytes
    complete: bool = True  # False where only the first bytes of the body were read (`prefix`)

    def keeps_connection(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        return connection != "close" and (self.version >= (1, 1) or connection == "keep-alive")


class _Connection:
    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.reused = False

    def close(self) -> None:
        self.wire.close()


@dataclass(frozen=True)
class _Target:
    """Where a request goes: the Host header, the request line's target, and the proxy it goes through, if any."""

    scheme: str
    host: str
    port: int
    host_header: str
    path: str
    proxy: Proxy | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """The connections a request may reuse: the origin's, or a plain-HTTP proxy's (a tunnel serves one origin)."""
        if self.proxy is not None and self.scheme == "http":
            return ("http-proxy", self.proxy.host, self.proxy.port)
        return (self.scheme, self.host, self.port)

    @property
    def request_target(self) -> str:
        """The request line's target: the path, or through a plain-HTTP proxy the whole URL (absolute form)."""
        if self.proxy is not None and self.scheme == "http":
            return f"http://{self.host_header}{self.path}"
        return self.path

    @property
    def authority(self) -> str:
        """host:port, as CONNECT names the origin."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _target(url: str, proxies: dict[tuple[str, str, int], Proxy | None]) -> _Target:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise RefusedResponse(f"not an HTTP URL ({scheme}://); not followed")
    host_header = parts.netloc.rpartition("@")[2]
    host = parts.hostname or ""
    if not host or not _HOST.fullmatch(host_header):
        raise BadResponse(f"not a host name: {host_header!r}")
    port = parts.port or (443 if scheme == "https" else 80)  # ValueError for a port out of range
    path = _quote(parts.path or "/", _PATH_SAFE)
    if parts.query:
        path += "?" + _quote(parts.query, _QUERY_SAFE)
    origin = (scheme, host, port)
    if origin not in proxies:
        proxies[origin] = proxy_for(scheme, host, port)
    return _Target(scheme, host, port, host_header, path, proxies[origin])


def _quote(text: str, safe: frozenset[int]) -> str:
    """`text` percent-encoded as UTF-8 where a request line may not carry it; escapes already there are kept."""
    raw = _LONE_PERCENT.sub("%25", text).encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in safe else f"%{b:02X}" for b in raw)


def _basic_auth(url: str, login: tuple[str, str] | None) -> str | None:
    """The Authorization header's value: the URL's user and password (percent-decoded), else `login` (netrc)."""
    parts = urlsplit(url)
    if parts.username is not None:
        user, password = unquote(parts.username), unquote(parts.password or "")
    elif login is not None:
        user, password = login
    else:
        return None
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class HTTPFileSystem:
    """HTTP(S) reads on kept-alive connections (a pool per host), on the process's HTTP loop.

    `login` is the (user, password) sent where a URL names none (the host's ~/.netrc entry).
    """

    async_impl = True

    def __init__(self, connect_timeout: float, read_timeout: float, login: tuple[str, str] | None = None) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._login = login
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._tls: Any = None
        self._sizes: dict[str, int | None] = {}
        self._proxies: dict[tuple[str, str, int], Proxy | None] = {}  # each origin's, as the environment names it

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return event_loop()

    # --- what a store asks for ----------------------------------------------------------------------------------

    async def _cat_file(self, url: str, start: int | None = None, end: int | None = None) -> bytes:
        """The body at `url` (bytes `start` to `end` where given); FileNotFoundError for a 404, HTTPStatusError for
        any other error answer."""
        span = None if start is None else (start, end)
        response = await self.request("GET", url, span=span)
        _raise_for_status(response, url)
        return response.body

    async def _ls(self, url: str, detail: bool = True) -> list[dict[str, Any]]:
        """The links of the directory page at `url`, as fsspec's HTTP file system gives them: absolute URLs, type
        "directory" for those ending in "/"."""
        response = await self.request("GET", url)
        _raise_for_status(response, url)
        mimetype = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        links = page_links(response.body.decode("utf-8", "replace"), url) if mimetype in ("", "text/html") else []
        return [{"name": link, "size": None, "type": "directory" if link.endswith("/") else "file"} for link in links]

    def ls(self, url: str, detail: bool = True) -> list[dict[str, Any]]:
        return sync(self.loop, self._ls(url, detail))

    def info(self, url: str) -> dict[str, Any]:
        """{"name", "size" (None where the server gives none), "type": "file"}; FileNotFoundError for any failure,
        with the reason as its cause (as fsspec's HTTP file system reports it)."""
        try:
            response = sync(self.loop, self.request("HEAD", url))
            if response.status >= 400 or "content-length" not in response.headers:
                # No HEAD here (405), one a signed URL does not cover (403: signed for GET), or no size in it: the
                # headers of a GET, its body left unread.
                response = sync(self.loop, self.request("GET", url, prefix=0))
            _raise_for_status(response, url)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise FileNotFoundError(url) from exc
        length = response.headers.get("content-length", "")
        size = int(length) if _LENGTH.fullmatch(length) and response.status == 200 else None
        self._sizes[url] = size
        return {"name": url, "size": size, "type": "file"}

    def open(self, url: str, mode: str = "rb", block_size: int = 2**22, **_: Any) -> RemoteFile:
        """A seekable binary file over `url`'s bytes, read in blocks of `block_size` (16 kept); `block_size` 0: the
        first bytes only, streamed (for a server that gives no size)."""
        if mode != "rb":
            raise ValueError("HTTP files are read-only")
        size = self._sizes[url] if url in self._sizes else self.info(url)["size"]
        return RemoteFile(self, url, size, block_size)

    def close(self) -> None:
        """Close the kept connections (a later request opens new ones)."""
        idle, self._idle = self._idle, {}
        connections = [c for pool in idle.values() for c in pool]
        if connections and _loop is not None and not _loop.is_closed():
            _loop.call_soon_threadsafe(lambda: [c.close() for c in connections])

    # --- one request --------------------------------------------------------------------------------------------

    async def request(
        self, method: str, url: str, span: tuple[int, int | None] | None = None, prefix: int | None = None
    ) -> Response:
        """The answer to `method` at `url`, redirects on its host followed; `span` asks for bytes [start, end);
        `prefix` reads no more than that many bytes of the body (and drops the connection if there are more)."""
        host = (urlsplit(url).hostname or "").lower()
        authorization = _basic_auth(url, self._login)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._exchange(method, url, authorization, span, prefix)
            location = response.headers.get("location")
            if response.status not in REDIRECT_STATUSES or location is None:
                if span is not None and response.status == 206:
                    _check_range(response, span[0])
                return response
            url = urljoin(url, location)
            target = urlsplit(url)
            if target.scheme.lower() not in ("http", "https"):
                raise RefusedResponse(f"redirected to a {target.scheme}: URL; not followed")
            if (target.hostname or "").lower() != host:
                raise RefusedResponse(f"redirected to another host ({target.hostname}); not followed")
        raise RefusedResponse(f"more than {MAX_REDIRECTS} redirects; not followed")

    async def _exchange(
        self, method: str, url: str, authorization: str | None, span: tuple[int, int | None] | None, prefix: int | None
    ) -> Response:
        target = _target(url, self._proxies)
        lines = [f"{method} {target.request_target} HTTP/1.1", f"Host: {target.host_header}", f"User-Agent: {USER_AGENT}"]
        lines += ["Accept-Encoding: identity", "Connection: keep-alive"]
        if authorization:
            lines.append(f"Authorization: {authorization}")
        if target.proxy is not None and target.proxy.authorization and target.scheme == "http":
            lines.append(f"Proxy-Authorization: {target.proxy.authorization}")
        if span is not None:
            start, end = span
            lines.append(f"Range: bytes={start}-{'' if end is None else end - 1}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        loop = asyncio.get_running_loop()
        started = loop.time()
        connection = self._idle_connection(target.key)
        try:
            try:
                if connection is None:
                    connection = await self._connect(target)
                head = await self._send(connection, request)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                if connection is None or not connection.reused or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                    raise
                # A kept connection the server has closed since: the request is asked again on a new one.
                connection.close()
                connection = await self._connect(target)
                head = await self._send(connection, request)
            response = _parse_head(head)
        except BaseException as exc:
            _answered(loop.time() - started, None)
            if connection is not None:
                connection.close()
            if isinstance(exc, asyncio.IncompleteReadError):
                raise BadResponse("the server closed the connection before its answer") from None
            raise
        _answered(loop.time() - started, response.keeps_connection() if response.status < 400 else None)
        try:
            response.body, response.complete = await self._body(connection, method, response, prefix)
        except BaseException:
            connection.close()
            raise
        if response.complete and response.keeps_connection():
            connection.reused = True
            self._idle.setdefault(target.key, []).append(connection)
        else:
            connection.close()
        return response

    def _idle_connection(self, key: tuple[str, str, int]) -> _Connection | None:
        pool = self._idle.get(key)
        while pool:
            connection = pool.pop()
            if not connection.wire.at_eof() and not connection.wire.transport.is_closing():
                return connection
            connection.close()
        return None

    async def _connect(self, target: _Target) -> _Connection:
        """A new connection for `target`: to its origin, to its plain-HTTP proxy, or through its proxy's tunnel
        (CONNECT) with TLS to the origin inside it."""
        tls = self._tls_context() if target.scheme == "https" else None
        proxy = target.proxy
        loop = asyncio.get_running_loop()

        def wire() -> Wire:
            return Wire(STREAM_BUFFER_BYTES)

        if proxy is None:
            opening = loop.create_connection(
                wire, target.host, target.port, ssl=tls, server_hostname=target.host if tls else None
            )
        elif tls is None:
            opening = loop.create_connection(wire, proxy.host, proxy.port)
        else:
            tunnel = await asyncio.wait_for(self._tunnel(target, proxy), self.connect_timeout)
            opening = loop.create_connection(wire, sock=tunnel, ssl=tls, server_hostname=target.host)
        _, connected = await asyncio.wait_for(opening, self.connect_timeout)
        return _Connection(connected)

    async def _tunnel(self, target: _Target, proxy: Proxy) -> socket.socket:
        """A socket to `proxy` on which it has opened a tunnel to the target's origin (its 2xx answer to CONNECT)."""
        loop = asyncio.get_running_loop()
        failure: OSError | None = None
        for family, kind, protocol, _, address in await loop.getaddrinfo(proxy.host, proxy.port, type=socket.SOCK_STREAM):
            sock = socket.socket(family, kind, protocol)
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, address)
                break
            except OSError as exc:
                sock.close()
                failure = exc
        else:
            raise failure or OSError(f"cannot connect to the proxy {proxy.shown}")
        try:
            lines = [f"CONNECT {target.authority} HTTP/1.1", f"Host: {target.authority}", f"User-Agent: {USER_AGENT}"]
            if proxy.authorization:
                lines.append(f"Proxy-Authorization: {proxy.authorization}")
            await loop.sock_sendall(sock, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            head = b""
            while b"\r\n\r\n" not in head:
                if len(head) > MAX_HEADER_BYTES:
                    raise BadResponse(f"the proxy's answer's headers are longer than {MAX_HEADER_BYTES} bytes")
                piece = await loop.sock_recv(sock, 65536)
                if not piece:
                    raise BadResponse(f"the proxy {proxy.shown} closed the connection before its answer")
                head += piece
            if not head.endswith(b"\r\n\r\n"):
                raise BadResponse(f"the proxy {proxy.shown} sent bytes past its answer to CONNECT")
            answer = _parse_head(head)
            if not 200 <= answer.status < 300:
                raise HTTPStatusError(answer.status, f"{answer.reason} (the proxy {proxy.shown}, asked for a tunnel)".lstrip())
            return sock
        except BaseException:
            sock.close()
            raise

    def _tls_context(self) -> Any:
        if self._tls is None:
            import ssl

            self._tls = ssl.create_default_context()
        return self._tls

    async def _send(self, connection: _Connection, request: bytes) -> bytes:
        """Write the request; the answer's status line and headers (1xx answers skipped)."""
        connection.wire.write(request)
        await asyncio.wait_for(connection.wire.drain(), self.read_timeout)
        while True:
            try:
                head = await asyncio.wait_for(connection.wire.readuntil(b"\r\n\r\n"), self.read_timeout)
            except asyncio.LimitOverrunError:
                raise BadResponse(f"the answer's headers are longer than {MAX_HEADER_BYTES} bytes") from None
            if len(head) > MAX_HEADER_BYTES:
                raise BadResponse(f"the answer's headers are longer than {MAX_HEADER_BYTES} bytes")
            if not _INFORMATIONAL.match(head):
                return head

    async def _body(self, connection: _Connection, method: str, response: Response, prefix: int | None) -> tuple[bytes, bool]:
        """(body, whether it was read to its end); raises ResponseTooLarge past the request's bound."""
        status = response.status
        if status < 200:  # 101: a switch of protocols, never asked for
            raise BadResponse(f"an answer of status {status} where a final one was due")
        if method == "HEAD" or status in (204, 304):
            return b"", True
        headers = response.headers
        declared = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if status >= 300:  # an error page or a redirect: read only to keep a connection, never kept in memory long
            if not chunked and declared is not None and _LENGTH.fullmatch(declared) and int(declared) <= MAX_ERROR_BODY_BYTES:
                await self._exactly(connection, int(declared))
                return b"", True
            return b"", False
        limit = response_limit()
        if prefix is not None:
            limit = prefix
        if chunked:
            return await self._chunked(connection, limit, prefix is not None)
        if declared is not None:
            if not _LENGTH.fullmatch(declared):
                raise BadResponse(f"a Content-Length that is not a number: {declared[:40]!r}")
            size = int(declared)
            if size > limit and prefix is None:
                raise ResponseTooLarge(f"the response holds {size} bytes, more than the {limit} read from one URL")
            return await self._exactly(connection, min(size, limit)), size <= limit
        # No length: the body ends when the server closes the connection.
        body = await self._upto(connection, limit + 1)
        if len(body) > limit:
            if prefix is not None:
                return body[:limit], False
            raise ResponseTooLarge(f"the response holds more than the {limit} bytes read from one URL")
        return body, False

    async def _exactly(self, connection: _Connection, size: int) -> bytearray:
        """The next `size` bytes, written by the socket into buffers of at most BODY_PIECE_BYTES (see `http_wire`),
        each made when the one before is full: memory follows the bytes received, never a length a server only
        declares. A body of one piece is returned as it was filled; a longer one is joined (one copy)."""
        pieces, left = [], size
        while left:
            piece = bytearray(min(left, BODY_PIECE_BYTES))
            with memoryview(piece) as view:
                got = await connection.wire.fill(view, self.read_timeout)
            if got < len(piece):
                raise BadResponse(f"the connection closed {left - got} bytes before the answer's end")
            pieces.append(piece)
            left -= got
        return pieces[0] if len(pieces) == 1 else bytearray().join(pieces)

    async def _upto(self, connection: _Connection, most: int) -> bytes:
        """The bytes until the server closes the connection, or the first `most`."""
        pieces, total = [], 0
        while total < most:
            piece = await asyncio.wait_for(connection.wire.read(min(most - total, STREAM_BUFFER_BYTES)), self.read_timeout)
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
        return b"".join(pieces)

    async def _chunked(self, connection: _Connection, limit: int, cut: bool) -> tuple[bytes, bool]:
        """A body in chunked transfer coding; `cut`: stop (incomplete) at `limit` bytes instead of refusing more."""
        pieces, total = [], 0
        while True:
            digits = (await self._line(connection)).split(b";", 1)[0].strip()
            if not _CHUNK_SIZE.fullmatch(digits):
                raise BadResponse("a malformed chunk size in a chunked answer")
            size = int(digits, 16)
            if size == 0:
                break
            if total + size > limit:
                if cut:
                    pieces.append(await self._exactly(connection, limit - total))
                    return b"".join(pieces), False
                raise ResponseTooLarge(f"the response holds more than the {limit} bytes read from one URL")
            pieces.append(await self._exactly(connection, size))
            total += size
            if await self._exactly(connection, 2) != b"\r\n":
                raise BadResponse("a chunk of a chunked answer does not end where its size says")
        for _ in range(MAX_HEADER_LINES):  # trailers, up to the empty line
            if await self._line(connection) == b"\r\n":
                return b"".join(pieces), True
        raise BadResponse("a chunked answer's trailer does not end")

    async def _line(self, connection: _Connection) -> bytes:
        try:
            line = await asyncio.wait_for(connection.wire.readuntil(b"\r\n"), self.read_timeout)
        except asyncio.LimitOverrunError:
            raise BadResponse("a line of the answer is too long") from None
        if len(line) > MAX_HEADER_BYTES:
            raise BadResponse("a line of the answer is too long")
        return line


def _parse_head(head: bytes) -> Response:
    """The status, reason, version and headers of an answer's head (status line and header lines, CRLF-ended)."""
    lines = head[:-4].split(b"\r\n")
    match = _STATUS_LINE.fullmatch(lines[0])
    if match is None:
        raise BadResponse("not an HTTP answer")
    if len(lines) > MAX_HEADER_LINES:
        raise BadResponse(f"an answer with more than {MAX_HEADER_LINES} header lines")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name or name != name.strip():
            raise BadResponse("a malformed header line")
        name, value = name.lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    version = (int(match[1]), int(match[2]))
    return Response(int(match[3]), (match[4] or b"").decode("latin-1").strip(), version, headers, b"")


def _check_range(response: Response, start: int) -> None:
    """BadResponse where a partial answer says its bytes begin elsewhere than the range asked for (a body of the
    right length from the wrong place would be read as the right bytes)."""
    match = _CONTENT_RANGE.fullmatch(response.headers.get("content-range", "").strip())
    if match is not None and int(match[1]) != start:
        raise BadResponse(f"the server sent bytes from {match[1]} for a range from {start}")


def _raise_for_status(response: Response, url: str) -> None:
    """FileNotFoundError for a 404; HTTPStatusError for any other answer that is not a success (a redirect left
    unfollowed, without a Location, included)."""
    if response.status == 404:
        raise FileNotFoundError(url)
    if response.status >= 300:
        raise HTTPStatusError(response.status, response.reason)


def _answered(seconds: float, keeps_connection: bool | None) -> None:
    """Tell the request's gate how long its answer took and whether the server keeps the connection."""
    current = request_gate.CURRENT.get()
    if current is not None:
        gate, in_flight = current
        gate.answered(seconds, in_flight, keeps_connection)


def page_links(html: str, url: str) -> list[str]:
    """The absolute URLs, without query or fragment, that a directory page's `<a href>` links name."""
    links = []
    for match in _HREF.finditer(html):
        href = next(g for g in match.groups() if g is not None)
        href = unescape(href).strip()
        if not href or href.startswith(("#", "?", "javascript:", "mailto:", "data:")):
            continue
        try:
            link = urljoin(url, href)
        except ValueError:  # "http://[::1" and the like: no link to any key
            continue
        links.append(link.split("#", 1)[0].split("?", 1)[0])
    return list(dict.fromkeys(links))


# --- a file over HTTP ---------------------------------------------------------------------------------------------

# Blocks of a remote file kept at once (least recently used dropped): the bound on its memory (a single read
# larger than that keeps its own blocks until it is done); and blocks asked for at once by one read.
MAX_BLOCKS = 16
MAX_BLOCKS_IN_FLIGHT = 8


class RemoteFile(io.RawIOBase):
    """A read-only, seekable view of a file behind a URL, read a block at a time (MAX_BLOCKS of them kept).

    A server that ignores Range requests answers with the whole file: its first block is taken from the start of
    that answer (so a file of one block is read from any server); a later block then cannot be read (ValueError, as
    fsspec raises it). `block_size` 0 streams the first bytes of the body, for a server that gives no size.
    """

    def __init__(self, fs: HTTPFileSystem, url: str, size: int | None, block_size: int) -> None:
        super().__init__()
        self._fs, self._url, self.size = fs, url, size
        self._block_size = block_size
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.size is not None

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            if self.size is None:
                raise OSError("the server gives no size: this file cannot be read from its end")
            offset += self.size
        elif whence == io.SEEK_CUR:
            offset += self._position
        if offset < 0:
            raise ValueError("negative seek position")
        self._position = offset
        return offset

    def close(self) -> None:
        self._blocks.clear()
        self._fs.close()  # the file's tree is done with the server (its scan's reads too)
        super().close()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._block_size == 0 or self.size is None:
            data = sync(self._fs.loop, self._prefix(self._position + len(view)))[self._position :]
        else:
            data = self._read(self._position, min(len(view), max(0, self.size - self._position)))
        view[: len(data)] = data
        self._position += len(data)
        return len(data)

    def _read(self, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        first, last = start // self._block_size, (start + length - 1) // self._block_size
        missing = [i for i in range(first, last + 1) if i not in self._blocks]
        if missing:
            blocks = sync(self._fs.loop, self._fetch_blocks(missing))
            for index, block in zip(missing, blocks, strict=True):
                self._blocks[index] = block
        pieces = []
        for index in range(first, last + 1):
            self._blocks.move_to_end(index)
            pieces.append(self._blocks[index])
        while len(self._blocks) > max(MAX_BLOCKS, last - first + 1):
            self._blocks.popitem(last=False)
        offset = start - first * self._block_size
        return b"".join(pieces)[offset : offset + length]

    async def _fetch_blocks(self, indexes: list[int]) -> list[bytes]:
        """The blocks of one read, fetched together, at most MAX_BLOCKS_IN_FLIGHT at a time."""
        bound = asyncio.Semaphore(MAX_BLOCKS_IN_FLIGHT)

        async def one(index: int) -> bytes:
            async with bound:
                return await self._block(index)

        return list(await asyncio.gather(*(one(i) for i in indexes)))

    async def _block(self, index: int) -> bytes:
        assert self.size is not None
        start = index * self._block_size
        end = min(start + self._block_size, self.size)
        # Read no further than the block: a server ignoring the range sends the whole file, and its first block
        # is the start of that answer.
        response = await self._fs.request("GET", self._url, span=(start, end), prefix=end - start)
        _raise_for_status(response, self._url)
        if response.status != 206 and start:
            raise ValueError("The HTTP server doesn't appear to support range requests")
        if response.status == 206 and not response.complete:
            raise BadResponse(f"the server sent more than the range of {end - start} bytes asked for")
        if len(response.body) != end - start:
            raise BadResponse(f"the server sent {len(response.body)} bytes for a range of {end - start}")
        return response.body

    async def _prefix(self, size: int) -> bytes:
        response = await self._fs.request("GET", self._url, prefix=size)
        _raise_for_status(response, self._url)
        return response.body

    def _fetch_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end), asked for as a range; ValueError where the server answers with the whole file."""

        async def fetch() -> bytes:
            response = await self._fs.request("GET", self._url, span=(start, end), prefix=end - start)
            _raise_for_status(response, self._url)
            if response.status != 206:
                raise ValueError("The HTTP server doesn't appear to support range requests")
            return response.body

        return sync(self._fs.loop, fetch())
