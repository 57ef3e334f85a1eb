"""Decompression bombs for the decode-path tests: a few kilobytes of stored bytes that inflate past 4 GB.

Built by hand so no test ever compresses (or holds) gigabytes: a deflate stream of zeros is a literal 0 then
"repeat 258 bytes at distance 1" codes, 13 bits each in deflate's fixed Huffman code, so eight of them are 13
identical bytes; compressing that stream again (nesting) brings 27 MB down to kilobytes. A Zstandard frame
of RLE blocks declares no content size; bz2 streams may be concatenated.

`peak_rss_child` runs a read in a fresh process and reports its peak resident memory, so a test can assert
that a bomb was stopped without the allocation.
"""

from __future__ import annotations

import bz2
import functools
import json
import os
import subprocess
import sys
import zlib

PAST_4_GB = 4_300_000_000
BZ2_ZEROS_PER_STREAM = 45 * 2**20  # fits one bz2 block after its run-length step: one stream of ~40 bytes


class _Bits:
    """Deflate's bit order: fields LSB first; Huffman codes MSB first."""

    def __init__(self) -> None:
        self.acc, self.n, self.out = 0, 0, bytearray()

    def put(self, value: int, nbits: int) -> None:
        self.acc |= value << self.n
        self.n += nbits
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def code(self, code: int, nbits: int) -> None:
        self.put(int(format(code, f"0{nbits}b")[::-1], 2), nbits)

    def take(self) -> bytes:
        out = bytes(self.out)
        self.out.clear()
        return out


@functools.cache
def raw_deflate_zeros(at_least: int = PAST_4_GB) -> tuple[bytes, int]:
    """(a raw deflate stream, the number of zero bytes it inflates to: at least `at_least`)."""
    w = _Bits()
    w.put(1, 1)  # BFINAL
    w.put(1, 2)  # BTYPE 01: fixed Huffman codes
    w.code(0x30, 8)  # literal 0

    def group() -> bytes:
        for _ in range(8):
            w.code(0b11000101, 8)  # length symbol 285: 258 bytes
            w.code(0, 5)  # distance code 0: distance 1
        return w.take()

    first, repeat = group(), group()
    assert group() == repeat
    groups = -(-(at_least - 1) // (258 * 8))
    body = first + repeat * (groups - 1)
    w.code(0, 7)  # end of block
    tail = w.take() + (bytes([w.acc]) if w.n else b"")
    return body + tail, 1 + 258 * 8 * groups


@functools.cache
def zlib_zeros(at_least: int = PAST_4_GB) -> bytes:
    """A zlib stream that inflates to at least `at_least` zero bytes (its Adler-32 is that of those zeros)."""
    body, n = raw_deflate_zeros(at_least)
    return b"\x78\x01" + body + (((n % 65521) << 16) | 1).to_bytes(4, "big")


@functools.cache
def gzip_zeros(at_least: int = PAST_4_GB) -> bytes:
    """A gzip member of at least `at_least` zero bytes. Its CRC-32 is left 0: no bounded reader gets that far."""
    body, n = raw_deflate_zeros(at_least)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body + (0).to_bytes(4, "little") + (n % 2**32).to_bytes(4, "little")


def nested(stream: bytes, levels: int, wrap=zlib.compress) -> bytes:
    """`stream` compressed `levels` more times (zlib by default): 27 MB of deflate codes become a few hundred bytes."""
    for _ in range(levels):
        stream = wrap(stream, 9)
    return stream


def gzip_wrap(data: bytes, level: int = 9) -> bytes:
    import gzip

    return gzip.compress(data, level, mtime=0)


@functools.cache
def zstd_zeros(at_least: int = PAST_4_GB) -> bytes:
    """A Zstandard frame of RLE blocks (128 KiB of zeros each) that declares no content size: 4 bytes a block."""
    block = 128 * 1024
    count = -(-at_least // block)
    frame = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # magic; no content size, not single-segment; 128 KiB window
    header = ((1 << 1) | (block << 3)).to_bytes(3, "little") + b"\x00"  # RLE block of byte 0
    frame += header * (count - 1)
    frame += (1 | (1 << 1) | (block << 3)).to_bytes(3, "little") + b"\x00"  # the last block
    return bytes(frame)


@functools.cache
def bz2_zeros(at_least: int = PAST_4_GB) -> bytes:
    """Concatenated bz2 streams (bz2 and numcodecs read every one) inflating to at least `at_least` zero bytes."""
    one = bz2.compress(bytes(BZ2_ZEROS_PER_STREAM), 9)
    return one * -(-at_least // BZ2_ZEROS_PER_STREAM)


def vlen_header_bomb(items: int = 2**31) -> bytes:
    """A vlen-utf8/vlen-bytes chunk whose header declares `items` items (numcodecs would allocate them all)."""
    return items.to_bytes(4, "little") + (1).to_bytes(4, "little") + b"a" + bytes(1000)


# numcodecs' json2 layout with a shape declaring 2**40 items: numcodecs' decoder would np.empty() that shape.
JSON2_SHAPE_BOMB = b'["a","|O",[1099511627776]]'


CHILD = """
import json, resource, sys
from spec_validate.nodes.base import NodeError
from spec_validate.nodes.open import open_store

path, node_path, how = sys.argv[1:4]
result = {}
with open_store(path) as tree:
    node = tree.get(node_path)
    try:
        if how == "read_block":
            block = node.read_block(node.block_rows()[0])
            result["chunks"] = [list(c) for c in block.chunks]
            result["problem"] = block.problem()
        else:
            list(node.blocks())
            result["problem"] = None
    except NodeError as exc:
        result["error"] = str(exc)
result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
"""

# The child is started by a small launcher: Linux keeps ru_maxrss across fork and exec, so a child of the test
# process would report the test process's own peak.
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def peak_rss_child(path: str, node_path: str = "/", how: str = "read_block") -> dict:
    """Read `node_path` of the store at `path` in a fresh process: its chunk reads or error, and peak RSS in MB."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", LAUNCHER, sys.executable, "-c", CHILD, str(path), node_path, how],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
