"""One HTTP connection's bytes (spec_validate.storage.http_wire): a body written by the socket into the buffer handed back,
whole whatever way it arrives (with the head, split, trickling, over TLS), and the connection's end or stall told."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import threading
import time
import tracemalloc

import pytest
from test_httpfs import ScriptedServer, TCPServer, read_head

from spec_validate.storage import http_wire, httpfs
from spec_validate.storage.httpfs import BadResponse, HTTPFileSystem


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for name in [k for k in os.environ if k.lower().endswith("_proxy") or k.upper().startswith("FSSPEC_HTTP")]:
        monkeypatch.delenv(name)


class PacedServer(ScriptedServer):
    """Answers every request with `body`, its head and body sent in pieces cut at `cuts`, `pause` seconds apart: all of
    them, the connection then kept; or, with `stop_after`, that many, the connection then closed."""

    def __init__(self, body: bytes, cuts: list[int], pause: float, stop_after: int | None = None) -> None:
        self.cuts, self.pause, self.stop_after = cuts, pause, stop_after
        answer = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        super().__init__(lambda head, number: (answer, stop_after is None))

    def send(self, connection: socket.socket, data: bytes) -> None:
        edges = [0, *self.cuts, len(data)] if self.stop_after is None else [0, *self.cuts[: self.stop_after]]
        for start, end in itertools.pairwise(edges):
            connection.sendall(data[start:end])
            time.sleep(self.pause)


def fetch(url: str, read_timeout: float = 5.0):
    fs = HTTPFileSystem(5.0, read_timeout)
    try:
        return httpfs.sync(fs.loop, fs._cat_file(url))
    finally:
        fs.close()


BODY = os.urandom(3 * http_wire.SCRATCH_BYTES + 17)


@pytest.mark.parametrize(
    "cuts",
    [[], [10], [60], [60 + http_wire.SCRATCH_BYTES], list(range(1000, len(BODY), 40_000))],
    ids=["at-once", "in-the-head", "head-and-some-body", "more-than-a-read-then-the-rest", "many-pieces"],
)
def test_a_body_is_whole_however_it_is_cut(cuts):
    server = PacedServer(BODY, cuts, 0.02)
    try:
        got = fetch(f"{server.url}/k")
    finally:
        server.close()
    assert bytes(got) == BODY


def test_a_body_that_keeps_coming_outlasts_the_read_timeout():
    # Nine pieces 0.1 s apart: 0.9 s in all, each gap well inside the 0.4 s allowed between two reads.
    server = PacedServer(BODY, list(range(100, len(BODY), len(BODY) // 8)), 0.1)
    try:
        started = time.monotonic()
        got = fetch(f"{server.url}/k", read_timeout=0.4)
    finally:
        server.close()
    assert bytes(got) == BODY
    assert time.monotonic() - started > 0.4


def test_a_body_that_stops_coming_ends_at_the_read_timeout():
    release = threading.Event()

    class Stalling(TCPServer):
        def handle(self, connection, number):
            with connection:
                if read_head(connection) is None:
                    return
                connection.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\n\r\n".encode() + BODY[:1000])
                release.wait(30)

    server = Stalling()
    try:
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            fetch(f"{server.url}/k", read_timeout=0.3)
    finally:
        release.set()
        server.close()


def test_a_body_cut_short_by_the_connection_closing_is_refused():
    server = PacedServer(BODY, [100, 5000], 0.02, stop_after=2)  # 5,000 bytes sent, head and body, then closed
    head = len(f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\n\r\n")
    try:
        with pytest.raises(BadResponse, match=f"closed {len(BODY) - (5000 - head)} bytes before"):
            fetch(f"{server.url}/k")
    finally:
        server.close()


def test_a_kept_connection_serves_the_next_body_from_where_the_last_ended():
    server = PacedServer(BODY, [60, 70_000], 0.01)
    fs = HTTPFileSystem(5.0, 5.0)
    try:
        bodies = [httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k{i}")) for i in range(3)]
    finally:
        fs.close()
        server.close()
    assert all(bytes(b) == BODY for b in bodies)
    assert server.connections == 1


def test_memory_follows_the_bytes_received_not_the_length_declared():
    # 900 MB declared (under the bound of any value), 100 bytes sent, then the connection closed: no more than a
    # piece of the body is ever allocated.
    class Declaring(TCPServer):
        def handle(self, connection, number):
            with connection:
                if read_head(connection) is not None:
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 900000000\r\n\r\n" + b"x" * 100)

    server = Declaring()
    tracemalloc.start()
    try:
        with pytest.raises(BadResponse, match="closed 899999900 bytes before"):
            fetch(f"{server.url}/k")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.close()
    assert peak < 8 * 2**20


def test_a_body_of_many_pieces_is_joined_whole():
    body = os.urandom(2 * httpfs.BODY_PIECE_BYTES + 3)
    server = PacedServer(body, [50, httpfs.BODY_PIECE_BYTES + 7], 0.01)
    try:
        got = fetch(f"{server.url}/k")
    finally:
        server.close()
    assert bytes(got) == body
