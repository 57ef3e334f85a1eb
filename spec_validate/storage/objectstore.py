"""HTTP(S) stores read through obstore (the binding of Rust's object_store), with the bounds a hostile server calls for.

The interface is the subset of fsspec's asynchronous file systems that `remote` uses (`_cat_file`, `_ls`, `ls`,
`info`, `open`, `loop`, `async_impl`), so a store reads either kind alike. How each bound is held:

- Body sizes: object_store reads a body only of a declared length (it refuses one without Content-Length), and
  hyper reads no byte past it; a declared length above the request's bound is refused before the body is read.
  A range is asked for with `get_range`, which refuses an answer that is not the range (a server ignoring Range).
- Redirects: followed by the library on any host (reqwest's policy, which no option of obstore's sets). A
  plain-HTTP store's requests all go through a proxy of this process (`redirect_guard`), which passes on a redirect
  only inside the store's prefix and refuses any other (to another path of the host, or another host). An HTTPS
  store's requests to another host than its own go to a proxy that refuses them (a socket of this process, bound
  and never listening; the store's own host excluded from it): a redirect off the store's host fails; one to
  another path of its host is followed (TLS hides it from any proxy). Each refusal is reported as such. Where the
  environment names a proxy for the store's host, that proxy is used, and a redirect is followed through it
  (reqwest drops the credentials on a hop to another host).
- Timeouts: obstore's `connect_timeout` and `read_timeout` (between two reads of a body); a few retries.
- Compression: none asked for, none undone (object_store is built without it): no gzip bomb.
- Credentials: a URL's user and password (or the host's ~/.netrc entry) are sent as a Basic Authorization header,
  never in a request line; every message from the library has its URLs redacted by `remote.describe_error`.
- Directory pages are fetched as any key is; object_store drops a path's final "/". Through the redirect guard
  (plain HTTP) a listing's request says it is one (`redirect_guard.FOLDER_HEADER`) and the guard asks for the
  folder's own URL: one request per folder listed. Over HTTPS the server's redirect to the folder's own URL (same
  host) is followed: two. (A store rooted at the folder's own URL keeps the "/", one request, but each store made
  costs about 10 ms of CPU and its own connections: some 17 s for the 1,684 folders of a 1,000-column Zarr v2
  store, where the redirects cost one more round trip a level.)
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
from html import unescape
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from spec_validate.storage import keyvalue, request_gate
from spec_validate.storage.redirect_guard import FOLDER_HEADER, RedirectGuard, Refusal


class HTTPStatusError(Exception):
    """An error answer (other than 404, which is FileNotFoundError), with `status` and `message`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status} {message}".rstrip())
        self.status = status
        self.message = message


class RefusedResponse(Exception):
    """A response this tool does not take: a redirect to another host, or a body larger than any key may hold."""


class ResponseTooLarge(RefusedResponse):
    """A response body larger than the bound of its request (MAX_VALUE_BYTES, or a batch's own)."""


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
    """The process's loop for remote requests, running on a daemon thread of its own (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="spec-validate-http", daemon=True).start()
            _loop = loop
        return _loop


def _forget_loop() -> None:
    """In a forked child (a run under --timeout): the parent's loop thread is not there; a new one is started."""
    global _loop, _loop_lock, _refusing_proxy
    _loop, _loop_lock, _refusing_proxy = None, threading.Lock(), None


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


# --- the refusing proxy -------------------------------------------------------------------------------------------

_refusing_proxy: socket.socket | None = None


def _refusing_proxy_url() -> str:
    """A proxy URL on loopback where nothing listens (a port this process holds, bound, never listening): every
    connection to it is refused at once."""
    global _refusing_proxy
    with _loop_lock:
        if _refusing_proxy is None:
            _refusing_proxy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            _refusing_proxy.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{_refusing_proxy.getsockname()[1]}"


def _environment_proxy(scheme: str, host: str) -> str | None:
    """The proxy the environment names for `scheme://host` (http_proxy, https_proxy, all_proxy; no_proxy), as
    urllib reads it; None where none applies."""
    import urllib.request

    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy


# --- errors -------------------------------------------------------------------------------------------------------

_STATUS = re.compile(r"non-2xx status code: (\d{3})\s*([^:\n]*)")


def _error(exc: BaseException, refusing: str | None) -> BaseException:
    """The error a failed obstore call stands for, as `remote.describe_error` reads errors."""
    if isinstance(exc, (RefusedResponse, HTTPStatusError)):
        return exc
    text = str(exc)
    status = _STATUS.search(text)
    if status is not None:
        # obstore says "not found" for some other statuses too (a HEAD answered 405): the status decides.
        code = int(status[1])
        if code == 404:
            return FileNotFoundError("not found")
        return HTTPStatusError(code, status[2].strip())
    if isinstance(exc, FileNotFoundError):
        return exc
    if refusing is not None and refusing.rpartition("/")[2] in text:
        return RefusedResponse("redirected to another host; not followed")
    if "Content-Length Header missing" in text:
        return RefusedResponse("the server sends a body of no declared length (no Content-Length); not read")
    if "RangeNotSupported" in text or "Range request not supported" in text or "non-partial response" in text:
        return ValueError("The HTTP server doesn't appear to support range requests")
    if "TimedOut" in text or "timed out" in text:
        return TimeoutError("timed out")
    if "ConnectionRefused" in text or "tcp connect error" in text:
        return ConnectionError("connection refused")
    if "dns error" in text or "failed to lookup address" in text:
        return ConnectionError(f"cannot resolve the host name ({text.splitlines()[0]})")
    if "certificate" in text.lower() or "InvalidCertificate" in text:
        return ConnectionError("the server's TLS certificate is not trusted")
    return exc


# --- the file system ------------------------------------------------------------------------------------------------

_HREF = re.compile(r"""<a\s(?:[^>]*?\s)?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.IGNORECASE)


def _basic_auth(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class ObjectStoreFileSystem:
    """HTTP(S) reads through obstore's HTTPStore: one per origin (and query), its client kept for the run.

    `login` is the (user, password) sent where a URL names none (the host's ~/.netrc entry).
    """

    async_impl = True

    def __init__(
        self, connect_timeout: float, read_timeout: float, login: tuple[str, str] | None = None, within: str | None = None
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._login = login
        # The URL of the input (a store's root, or a file): a plain-HTTP store's redirects are followed only below it.
        self._within = within
        self._stores: dict[tuple[str, str, str, bool], tuple[Any, str | None]] = {}
        self._guards: dict[tuple[str, str], RedirectGuard] = {}
        self._sizes: dict[str, int | None] = {}

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return event_loop()

    def _store(self, url: str, folder: bool = False) -> tuple[Any, str, str | None]:
        """(obstore store, path in it, the refusing proxy's URL or None) for `url`; with `folder`, the store whose
        requests tell the redirect guard that they list a folder (where there is no guard, the store of any key)."""
        try:
            from obstore.store import HTTPStore
        except ImportError:
            raise RefusedResponse("reading http(s):// URLs needs obstore: pip install 'spec-validate[remote]'") from None
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.netloc.rpartition("@")[2]
        key = (scheme, host, parts.query, folder)
        if key not in self._stores:
            proxy = _environment_proxy(scheme, parts.hostname or "")
            guard = self._guard_for(scheme, host) if proxy is None else None
            if folder and guard is None:
                # No guard to restore a folder URL's final "/": the store of every other key, the redirect followed.
                plain, _, refusing = self._store(url)
                self._stores[key] = (plain, refusing)
                return plain, unquote(parts.path).strip("/"), refusing
            headers = {}
            if parts.username is not None:
                headers["Authorization"] = _basic_auth(unquote(parts.username), unquote(parts.password or ""))
            elif self._login is not None:
                headers["Authorization"] = _basic_auth(*self._login)
            if folder:
                headers[FOLDER_HEADER] = "1"
            options: dict[str, Any] = {
                "allow_http": True,
                "connect_timeout": f"{int(self.connect_timeout * 1000)}ms",
                "read_timeout": f"{int(self.read_timeout * 1000)}ms",
                "timeout": "1d",  # the whole request: bounded by the read timeout between reads instead
                "user_agent": "spec-validate",
            }
            if headers:
                options["default_headers"] = headers
            refusing = None
            if proxy is not None:
                options["proxy_url"] = proxy
            elif guard is not None:
                options["proxy_url"] = guard.url  # it refuses what leaves the store, other hosts included
            else:
                refusing = options["proxy_url"] = _refusing_proxy_url()
                options["proxy_excludes"] = parts.hostname or ""
            base = urlunsplit((scheme, host, "/", parts.query, ""))
            store = HTTPStore(base, client_options=options, retry_config={"max_retries": 2})
            self._stores[key] = (store, refusing)
        store, refusing = self._stores[key]
        return store, unquote(parts.path).strip("/"), refusing

    def _guard_for(self, scheme: str, host: str) -> RedirectGuard | None:
        """The redirect guard of a plain-HTTP store on `host` (the input's own: `within`); None for any other (HTTPS
        cannot be read on its way: its redirects are kept on the host by the refusing proxy alone)."""
        if scheme != "http" or self._within is None:
            return None
        parts = urlsplit(self._within)
        if parts.scheme.lower() != "http" or parts.netloc.rpartition("@")[2] != host:
            return None
        if (scheme, host) not in self._guards:
            prefix = urlunsplit(("http", host, parts.path, "", ""))
            self._guards[(scheme, host)] = RedirectGuard(prefix, self.connect_timeout, self.read_timeout)
        return self._guards[(scheme, host)]

    async def _call(self, url: str, call: Any, folder: bool = False) -> Any:
        """`call(store, path)` for `url` (a folder's listing: `folder`), timed for the request's gate; errors as
        `_error` gives them."""
        store, path, refusing = self._store(url, folder=True) if folder else self._store(url)  # (S3's store: no folder)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            result = await call(store, path)
        except Exception as exc:
            _answered(loop.time() - started, None)
            parts = urlsplit(url)
            guard = self._guards.get((parts.scheme.lower(), parts.netloc.rpartition("@")[2]))
            refused = guard.refused(url) if guard is not None else None
            if refused is not None:  # the guard's answer: the redirect it refused, or why the host was not reached
                raise (RefusedResponse(str(refused)) if isinstance(refused, Refusal) else refused) from None
            raise self._error(exc, refusing) from None
        # A pooled client keeps its connections: an answer opens the gate (a stall closes it again), unless the
        # redirect guard between them saw the store's server end its connection (then it keeps the gate narrow).
        parts = urlsplit(url)
        guard = self._guards.get((parts.scheme.lower(), parts.netloc.rpartition("@")[2]))
        _answered(loop.time() - started, not (guard is not None and guard.server_closes))
        return result

    def _error(self, exc: BaseException, refusing: str | None) -> BaseException:
        return _error(exc, refusing)

    async def _cat_file(self, url: str, start: int | None = None, end: int | None = None) -> bytes:
        """The body at `url` (bytes `start` to `end` where given); FileNotFoundError for a 404, HTTPStatusError for
        any other error answer, ResponseTooLarge past the request's bound."""
        import obstore

        limit = response_limit()
        if start is not None:
            stop = end if end is not None else start + limit
            if stop - start > limit:
                raise ResponseTooLarge(f"a range of {stop - start} bytes, more than the {limit} read from one URL")
            data = await self._call(url, lambda s, p: obstore.get_range_async(s, p, start=start, end=stop))
            if len(data) > stop - start:
                raise ResponseTooLarge(f"the server sent more than the range of {stop - start} bytes asked for")
            return bytes(data)

        async def whole(store: Any, path: str) -> bytes:
            result = await obstore.get_async(store, path)
            size = result.meta["size"]
            if size > limit:
                raise ResponseTooLarge(f"the response holds {size} bytes, more than the {limit} read from one URL")
            return bytes(await result.bytes_async())

        return await self._call(url, whole)

    async def _first_bytes(self, url: str, most: int) -> bytes:
        """At most the first `most` bytes of the body at `url`, asked for whole (a server without ranges): the rest
        is never read (the connection is dropped)."""
        import obstore

        async def first(store: Any, path: str) -> bytes:
            result = await obstore.get_async(store, path)
            out = b""
            async for piece in result.stream(min_chunk_size=most):
                out += piece
                if len(out) >= most:
                    break
            return out[:most]

        return await self._call(url, first)

    async def _ls(self, url: str, detail: bool = True) -> list[dict[str, Any]]:
        """The links of the directory page at `url`, as fsspec's HTTP file system gives them: absolute URLs, type
        "directory" for those ending in "/"."""
        import obstore

        async def page(store: Any, path: str) -> tuple[bytes, str]:
            result = await obstore.get_async(store, path)
            limit = min(keyvalue.MAX_DOCUMENT_BYTES, response_limit())
            if result.meta["size"] > limit:
                raise ResponseTooLarge(f"the response holds {result.meta['size']} bytes, more than the {limit} read from one URL")
            return bytes(await result.bytes_async()), str(result.attributes.get("Content-Type", ""))

        body, content_type = await self._call(url, page, folder=True)
        mimetype = content_type.partition(";")[0].strip().lower()
        links = page_links(body.decode("utf-8", "replace"), url) if mimetype in ("", "text/html") else []
        return [{"name": link, "size": None, "type": "directory" if link.endswith("/") else "file"} for link in links]

    def ls(self, url: str, detail: bool = True) -> list[dict[str, Any]]:
        return sync(self.loop, self._ls(url, detail))

    def info(self, url: str) -> dict[str, Any]:
        """{"name", "size", "type": "file"}; FileNotFoundError for any failure, with the reason as its cause (as
        fsspec's HTTP file system reports it)."""
        import obstore

        try:
            try:
                meta = sync(self.loop, self._call(url, obstore.head_async))
            except HTTPStatusError:
                # No HEAD here (405), or one a signed URL does not cover (403: signed for GET): the size a range's
                # answer gives.
                meta = sync(self.loop, self._call(url, lambda s, p: _range_meta(s, p)))
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise FileNotFoundError(url) from exc
        size = int(meta["size"])
        self._sizes[url] = size
        return {"name": url, "size": size, "type": "file"}

    def open(self, url: str, mode: str = "rb", block_size: int = 2**22, **_: Any) -> RemoteFile:
        """A seekable binary file over `url`'s bytes, read in blocks of `block_size` (16 kept); `block_size` 0: the
        first bytes only, streamed."""
        if mode != "rb":
            raise ValueError("HTTP files are read-only")
        size = self._sizes[url] if url in self._sizes else self.info(url)["size"]
        return RemoteFile(self, url, size, block_size)

    def close(self) -> None:
        """Drop the stores (their clients close their connections) and stop their redirect guards."""
        self._stores.clear()
        for guard in self._guards.values():
            guard.close()
        self._guards.clear()


async def _range_meta(store: Any, path: str) -> dict[str, Any]:
    import obstore

    result = await obstore.get_async(store, path, options={"range": (0, 1)})
    return dict(result.meta)


def _answered(seconds: float, keeps_connection: bool | None) -> None:
    """Tell the request's gate how long its answer took and whether the connection is kept."""
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

    A file of one block is asked for whole (so it is read from a server that ignores ranges too); a later block is
    a range, and a server that ignores ranges fails it (ValueError, as fsspec raises it). `block_size` 0 streams the
    first bytes of the body.
    """

    def __init__(self, fs: ObjectStoreFileSystem, url: str, size: int | None, block_size: int) -> None:
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
        super().close()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._block_size == 0 or self.size is None:
            data = sync(self._fs.loop, self._fs._first_bytes(self._url, self._position + len(view)))[self._position :]
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
        if index == 0 and end == self.size:
            data = await self._fs._first_bytes(self._url, end)  # the whole file, from any server
        else:
            data = await self._fs._cat_file(self._url, start=start, end=end)
        if len(data) != end - start:
            raise ValueError(f"the server sent {len(data)} bytes for a range of {end - start}")
        return data

    def _fetch_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end), asked for as a range; ValueError where the server answers with the whole file."""
        return sync(self._fs.loop, self._fs._cat_file(self._url, start=start, end=end))
