"""A loopback HTTP file server for remote-store tests and the benchmark: injected latency, request counting.

    with LatencyServer(directory, latency=0.02) as server:
        validate(f"{server.url}/store.zarr")
        server.counts    # {"listing": 0, "document": 3359, "chunk": 333, "other": 2}

Serves `directory` on 127.0.0.1 only, from one asyncio event loop in a thread of its own: requests answered
concurrently (as a real server answers them), connections kept open (HTTP/1.1), so that the server costs little of
the cores it shares with the client it serves (a thread per request, as python's http.server answers, took about
twice the CPU: a sixth of a remote benchmark run's). Single-range requests (`Range:
bytes=a-b`, as every real file server has); folders listed as http.server lists them. Options:
`latency` seconds slept before each answer (an object store's usual is 10-30 ms); `listings` False answers
directory URLs with 403, as static hosting and S3 websites do; `ranges` False ignores Range headers and
sends the whole file with 200, as some servers do. Every request is counted by kind: a directory listing, a
Zarr metadata document, a range request, or any other key (a chunk); `peak` is the most requests in flight
at once. The server stops when the `with` block ends, or by itself after `lifetime` seconds.

Run as a script for the benchmark (another process, so the counting costs the client nothing):
`python latency_server.py DIRECTORY [--latency 0.02] [--no-listings] [--no-ranges] [--lifetime 3600]` prints the port on its
first line and serves until stdin closes or the lifetime ends; `GET /__counts__` answers the counts as JSON
and `GET /__reset__` sets them to zero.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import os
import re
import socket
import stat
import sys
import threading
from http import HTTPStatus
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

DOCUMENTS = frozenset({".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"})
KINDS = ("listing", "document", "range", "other")


class Counter:
    """Requests by kind, and the most in flight at once; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = dict.fromkeys(KINDS, 0)
        self.keys: dict[str, int] = {}  # path -> requests for it
        self.in_flight = 0
        self.peak = 0

    def start(self, kind: str, path: str) -> None:
        with self._lock:
            self.counts[kind] += 1
            self.keys[path] = self.keys.get(path, 0) + 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def stop(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def reset(self) -> None:
        with self._lock:
            self.counts = dict.fromkeys(KINDS, 0)
            self.keys = {}
            self.peak = self.in_flight

    def snapshot(self) -> dict:
        with self._lock:
            return {
                "counts": dict(self.counts),
                "total": sum(self.counts.values()),
                "peak": self.peak,
                "repeated": sum(1 for n in self.keys.values() if n > 1),
            }


class Handler:
    """One connection's requests, in order (HTTP/1.1 keeps it open): answered after `latency` seconds each."""

    def __init__(self, root: Path, latency: float, listings: bool, ranges: bool, counter: Counter) -> None:
        self.root, self.latency, self.listings, self.ranges, self.counter = root, latency, listings, ranges, counter

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # An answer's head and body are two writes: with Nagle's algorithm the second waits for the client to
        # acknowledge the first, which it delays (40 ms on Linux): every request took about 40 ms more than its
        # latency. asyncio turns Nagle off only for sockets it made itself (proto IPPROTO_TCP); this one, from
        # socket.create_server, has proto 0, and so did python's http.server, which the benchmark used before.
        connection = writer.get_extra_info("socket")
        if connection is not None:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return  # the client hung up (or sent no request this server reads)
                request_line, *lines = head.decode("latin-1").split("\r\n")
                method, target, version = (request_line.split(" ") + ["", "", ""])[:3]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines if ":" in x)}
                keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                await self.answer(method, target, headers, writer, keep)
                if not keep:
                    return
        except ConnectionError:
            pass  # a client that hangs up mid-answer (it read the first bytes of a file sent whole, and had enough)
        finally:
            writer.close()

    async def answer(self, method: str, target: str, headers: dict[str, str], writer: asyncio.StreamWriter, keep: bool) -> None:
        url_path = urlsplit(target).path
        if url_path in ("/__counts__", "/__reset__"):
            if url_path == "/__reset__":
                self.counter.reset()
            body = json.dumps(self.counter.snapshot()).encode()
            return await self.send(writer, 200, {"Content-Type": "application/json"}, body, keep)
        path = self.translate(url_path)
        if method not in ("GET", "HEAD"):
            return await self.send(writer, 501, {}, b"", keep)
        kind = "other" if method == "HEAD" else self.kind(path, headers)
        self.counter.start(kind, target)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            if path is not None and os.path.isdir(path):
                return await self.directory(target, url_path, path, method, writer, keep)
            if path is None or not _regular(path):
                # Absent, or a FIFO or device: no object store holds one, and opening a FIFO would block the loop
                # (every later request with it).
                return await self.send(writer, 404, {"Content-Type": "text/html"}, b"<h1>404 File not found</h1>", keep)
            return await self.file(path, method, headers, writer, keep)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception:  # noqa: BLE001 (a file the server cannot read: the client is told, the loop goes on)
            return await self.send(writer, 500, {"Content-Type": "text/html"}, b"<h1>500 Server error</h1>", keep)
        finally:
            self.counter.stop()

    def translate(self, url_path: str) -> Path | None:
        """The file below the root that a URL path names (None for one that would step out of it)."""
        parts = [p for p in unquote(url_path).split("/") if p not in ("", ".")]
        if ".." in parts or any("\\" in p or "\x00" in p for p in parts):
            return None
        return self.root.joinpath(*parts)

    def kind(self, path: Path | None, headers: dict[str, str]) -> str:
        if path is not None and os.path.isdir(path):
            return "listing"
        if path is not None and path.name in DOCUMENTS:
            return "document"
        return "range" if self.ranges and headers.get("range") else "other"

    async def directory(
        self, target: str, url_path: str, path: Path, method: str, writer: asyncio.StreamWriter, keep: bool
    ) -> None:
        if not url_path.endswith("/"):  # as http.server: a folder's own URL ends in "/", so that its links resolve below it
            parts = urlsplit(target)
            location = urlunsplit(("", "", parts.path + "/", parts.query, parts.fragment))
            return await self.send(writer, 301, {"Location": location}, b"", keep)
        if not self.listings:
            return await self.send(writer, 403, {"Content-Type": "text/html"}, b"<h1>403 Forbidden</h1>", keep)
        rows = []
        for entry in sorted(os.scandir(path), key=lambda e: e.name.lower()):
            folder = os.path.isdir(entry.path)  # False for a link that loops, as http.server lists it
            link = entry.name + ("/" if folder else "")
            shown = entry.name + ("@" if os.path.islink(entry.path) else "/" if folder else "")
            rows.append(f'<li><a href="{quote(link, errors="surrogatepass")}">{html.escape(shown, quote=False)}</a></li>')
        title = html.escape(unquote(url_path), quote=False)
        page = f"<!DOCTYPE HTML>\n<html>\n<head><title>Directory listing for {title}</title></head>\n<body>\n<ul>\n"
        page += "\n".join(rows) + "\n</ul>\n</body>\n</html>\n"
        body = page.encode("utf-8", "surrogateescape")
        fields = {"Content-Type": "text/html; charset=utf-8"}
        await self.send(writer, 200, fields, body if method == "GET" else b"", keep, len(body))

    async def file(self, path: Path, method: str, headers: dict[str, str], writer: asyncio.StreamWriter, keep: bool) -> None:
        fields = {"Content-Type": "application/octet-stream"}
        if self.ranges:
            fields["Accept-Ranges"] = "bytes"
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", headers.get("range", ""))
        try:
            with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:  # never waits on a FIFO put in its place
                info = os.fstat(fh.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise IsADirectoryError(path)
                size = info.st_size
                start, stop, status = 0, size, 200
                if match is not None and self.ranges and method == "GET":
                    start = int(match[1])
                    stop = max(start, min(int(match[2]) + 1 if match[2] else size, size))
                    status = 206
                    fields["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
                body = os.pread(fh.fileno(), stop - start, start) if method == "GET" else b""
        except OSError:
            return await self.send(writer, 404, {"Content-Type": "text/html"}, b"<h1>404 File not found</h1>", keep)
        await self.send(writer, status, fields, body, keep, stop - start)

    async def send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        fields: dict[str, str],
        body: bytes,
        keep: bool,
        length: int | None = None,
    ) -> None:
        lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", *(f"{k}: {v}" for k, v in fields.items())]
        lines.append(f"Content-Length: {len(body) if length is None else length}")
        lines.append("Connection: keep-alive" if keep else "Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        writer.write(body)  # not joined to the head: a chunk is not copied once more
        await writer.drain()


class LatencyServer:
    """The server, on 127.0.0.1 and a free port, for the length of a `with` block (or `lifetime` seconds)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        latency: float = 0.0,
        listings: bool = True,
        ranges: bool = True,
        lifetime: float = 600.0,
    ) -> None:
        self.counter = Counter()
        self._handler = Handler(Path(directory).resolve(), latency, listings, ranges, self.counter)
        # A backlog for bursts of connections (socketserver's 5 drops their SYNs: see tests/loopback.py).
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self._timer = threading.Timer(lifetime, self.stop)  # stops by itself if a test never gets to stop it
        self._timer.daemon = True

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_quiet_on_cancel)
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._handler.serve, sock=self._socket)
        self._ready.set()
        async with server:
            await self._stopped.wait()

    @property
    def counts(self) -> dict[str, int]:
        return self.counter.snapshot()["counts"]

    def start(self) -> LatencyServer:
        self._thread.start()
        self._ready.wait(timeout=30)
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()
        if self._loop is not None and self._stopped is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                self._loop.call_soon_threadsafe(self._stopped.set)

    def __enter__(self) -> LatencyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._thread.join(timeout=5)


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _quiet_on_cancel(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The loop's error report, but for connections still open when the server stops: their handlers are cancelled,
    which asyncio's stream callback reports as an error."""
    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds slept before each answer")
    parser.add_argument("--no-listings", action="store_true", help="answer directory URLs with 403")
    parser.add_argument("--no-ranges", action="store_true", help="ignore Range headers: send whole files")
    parser.add_argument("--lifetime", type=float, default=3600.0, help="stop after this many seconds")
    args = parser.parse_args(argv)
    with LatencyServer(args.directory, args.latency, not args.no_listings, not args.no_ranges, args.lifetime) as server:
        print(server.url.rsplit(":", 1)[1], flush=True)
        sys.stdin.read()  # until the parent closes it (or exits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
