"""The benchmark's and remote tests' server (latency_server.py): it answers as a file server does, and a special
file or a looping link among what it serves never stops it answering (one asyncio loop serves every request)."""

from __future__ import annotations

import os
import socket
import time
import urllib.error
import urllib.request

import pytest
from latency_server import LatencyServer  # tests/ is on the path (conftest)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # our loopback server
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_files_ranges_and_listings(tmp_path):
    (tmp_path / "store.zarr" / "a").mkdir(parents=True)
    (tmp_path / "store.zarr" / ".zgroup").write_bytes(b'{"zarr_format": 2}')
    (tmp_path / "store.zarr" / "a" / "0").write_bytes(bytes(range(100)))
    with LatencyServer(tmp_path) as server:
        assert get(f"{server.url}/store.zarr/.zgroup") == (200, b'{"zarr_format": 2}')
        assert get(f"{server.url}/store.zarr/a/0", {"Range": "bytes=10-19"}) == (206, bytes(range(10, 20)))
        status, page = get(f"{server.url}/store.zarr/")
        assert status == 200 and b'href="a/"' in page and b'href=".zgroup"' in page
        assert get(f"{server.url}/store.zarr/missing")[0] == 404
        assert get(f"{server.url}/../outside")[0] == 404
        assert server.counts == {"listing": 1, "document": 1, "range": 1, "other": 2}
    with LatencyServer(tmp_path, listings=False, ranges=False) as server:
        assert get(f"{server.url}/store.zarr/")[0] == 403
        assert get(f"{server.url}/store.zarr/a/0", {"Range": "bytes=10-19"}) == (200, bytes(range(100)))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_looping_link_does_not_stop_the_server(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "file").write_bytes(b"x")
    with LatencyServer(tmp_path) as server:
        started = time.monotonic()
        assert get(f"{server.url}/fifo")[0] == 404
        status, page = get(f"{server.url}/")
        assert status == 200 and b'href="loop"' in page
        assert get(f"{server.url}/loop")[0] == 404
        assert get(f"{server.url}/file") == (200, b"x")
        assert time.monotonic() - started < 5


def test_an_answer_takes_its_latency_not_a_delayed_acknowledgement(tmp_path):
    # Nagle's algorithm off: an answer's head and body, written apart, leave at once. With it on, the body waited
    # for the client's acknowledgement of the head, which Linux delays by at least 40 ms: every request took 40 ms
    # more. Not a speed target: a protocol stall of a fixed length, 100 times the time of an answer without it, so
    # the median of 40 requests on one connection tells them apart on any machine (the first ones are acknowledged
    # at once, as a connection starts: they are not counted).
    (tmp_path / "file").write_bytes(b"x" * 100)
    with LatencyServer(tmp_path) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = connection.makefile("rb")
            times = []
            for _ in range(60):
                started = time.monotonic()
                connection.sendall(b"GET /file HTTP/1.1\r\nHost: x\r\n\r\n")
                while reader.readline() not in (b"\r\n", b""):
                    pass
                assert reader.read(100) == b"x" * 100
                times.append(time.monotonic() - started)
    later = sorted(times[20:])
    assert later[len(later) // 2] < 0.02
