"""A loopback HTTP file server for remote-store tests and the benchmark: injected latency, request counting.

    with LatencyServer(directory, latency=0.02) as server:
        validate(f"{server.url}/store.zarr")
        server.counts    # {"listing": 0, "document": 3359, "chunk": 333, "other": 2}

Serves `directory` on 127.0.0.1 only, from a thread per request (as a real server answers requests
concurrently), with single-range requests (`Range: bytes=a-b`, as every real file server has). Options:
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
import functools
import json
import os
import re
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

try:
    from loopback import LoopbackServer
except ImportError:  # run as a script (the benchmark): tests/ is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from loopback import LoopbackServer

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


class Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections kept alive, as real servers keep them: no TCP handshake per request
    latency = 0.0
    listings = True
    ranges = True
    counter: Counter

    def log_message(self, *args) -> None:
        pass

    def end_headers(self) -> None:
        if self.ranges:
            self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def do_GET(self) -> None:
        if self.path in ("/__counts__", "/__reset__"):
            if self.path == "/__reset__":
                self.counter.reset()
            return self._json(self.counter.snapshot())
        path = self.translate_path(self.path)
        self.counter.start(self._kind(path), self.path)
        try:
            if self.latency:
                time.sleep(self.latency)
            self._answer(path)
        finally:
            self.counter.stop()

    def do_HEAD(self) -> None:
        self.counter.start("other", self.path)
        try:
            if self.latency:
                time.sleep(self.latency)
            super().do_HEAD()
        finally:
            self.counter.stop()

    def _kind(self, path: str) -> str:
        if os.path.isdir(path):
            return "listing"
        if os.path.basename(path) in DOCUMENTS:
            return "document"
        return "range" if self.ranges and self.headers.get("Range") else "other"

    def _answer(self, path: str) -> None:
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match is None or not self.ranges or not os.path.isfile(path):
            return super().do_GET()
        with open(path, "rb") as fh:  # only the range: a range of a large file costs what it holds
            size = os.fstat(fh.fileno()).st_size
            start = int(match[1])
            stop = min(int(match[2]) + 1 if match[2] else size, size)
            fh.seek(start)
            body = fh.read(max(0, stop - start))
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def list_directory(self, path):
        if not self.listings:
            self.send_error(403)
            return None
        return super().list_directory(path)

    def _json(self, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


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
        handler = type(
            "BoundHandler", (Handler,), {"latency": latency, "listings": listings, "ranges": ranges, "counter": self.counter}
        )
        self._server = LoopbackServer(("127.0.0.1", 0), functools.partial(handler, directory=str(directory)))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._timer = threading.Timer(lifetime, self.stop)  # stops by itself if a test never gets to stop it
        self._timer.daemon = True

    @property
    def counts(self) -> dict[str, int]:
        return self.counter.snapshot()["counts"]

    def start(self) -> LatencyServer:
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LatencyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._thread.join(timeout=5)


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
