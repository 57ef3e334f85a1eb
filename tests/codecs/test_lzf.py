"""The LZF decoder (spec_validate/codecs/lzf.py): what h5py's lzf filter writes decodes to the values, and no stream
decodes to more bytes than asked for, reads past its end, or refers before the start of its output."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from spec_validate.codecs import lzf
from spec_validate.codecs.lzf import LZFError, decompress


@pytest.fixture(params=["liblzf", "python"], autouse=True)
def decoder(request, monkeypatch):
    """Every test runs with both decoders: liblzf from h5py's h5z module, and the Python one."""
    if request.param == "python":
        monkeypatch.setattr(lzf, "native", lambda: None)
    elif lzf.native() is None:
        pytest.skip("this h5py does not export lzf_decompress")
    return request.param


RNG = np.random.default_rng(7)
VALUES = {
    "zeros": np.zeros(5000, "<i4"),  # long runs: overlapping back-references of distance 1 to 4
    "ramp": np.arange(6000, dtype="<i8"),
    "few-values": RNG.integers(0, 5, 9000).astype("<i2"),
    "random-floats": RNG.normal(size=3000).astype("<f4"),  # incompressible: stored unfiltered, the mask says so
    "sparse": np.where(RNG.random(8000) < 0.05, RNG.integers(1, 9, 8000), 0).astype("<f8"),
    "text": np.frombuffer(b"the quick brown fox jumps over the lazy dog " * 300, "u1"),
}


def lzf_chunks(tmp_path, values: np.ndarray, chunk: int) -> list[tuple[bytes, bytes]]:
    """(stored bytes, the chunk's values as bytes) for every chunk h5py's lzf filter compressed."""
    path = tmp_path / "lzf.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values, chunks=(chunk,), compression="lzf")
    out = []
    with h5py.File(path, "r") as f:
        ds = f["x"]
        for i in range(ds.id.get_num_chunks()):
            offset = ds.id.get_chunk_info(i).chunk_offset
            mask, raw = ds.id.read_direct_chunk(offset)
            if mask & 1:
                continue  # the filter did not shrink it: stored as is
            want = np.zeros(chunk, values.dtype)
            part = values[offset[0] : offset[0] + chunk]
            want[: len(part)] = part
            out.append((raw, want.tobytes()))
    return out


@pytest.mark.parametrize("name", [n for n in VALUES if n != "random-floats"])
def test_lzf_passes_what_h5py_wrote(tmp_path, name):
    chunks = lzf_chunks(tmp_path, VALUES[name], 1024)
    assert chunks, "h5py compressed at least one chunk: the comparison is not vacuous"
    for raw, want in chunks:
        assert bytes(decompress(raw, len(want))) == want


def test_lzf_passes_literal_run_and_back_reference_by_hand():
    # "abc" as a literal run (control 2), then 6 bytes from 3 back (control (6 - 2) << 5, distance byte 2): abcabcabc.
    assert decompress(bytes([2]) + b"abc" + bytes([4 << 5, 2]), 9) == bytearray(b"abcabcabc")
    # A long reference: length 7 + 20 + 2 bytes of the one byte before.
    assert decompress(bytes([0]) + b"z" + bytes([7 << 5, 20, 0]), 30) == bytearray(b"z" * 30)


CORRUPT = "|not an LZF stream"  # liblzf says only that; the Python decoder says where


@pytest.mark.parametrize(
    "stream,size,message",
    [
        pytest.param(bytes([5]) + b"ab", 6, "passes the end of the stream" + CORRUPT, id="literal-past-the-end"),
        pytest.param(bytes([0]) + b"a" + bytes([1 << 5, 4]), 10, "before the start" + CORRUPT, id="reference-before-start"),
        pytest.param(bytes([0]) + b"a" + bytes([7 << 5]), 10, "ends inside a back-reference" + CORRUPT, id="truncated-length"),
        pytest.param(bytes([0]) + b"a" + bytes([1 << 5]), 10, "ends inside a back-reference" + CORRUPT, id="truncated-distance"),
        pytest.param(bytes([3]) + b"abcd", 3, "more than 3 bytes", id="longer-than-asked"),
        pytest.param(bytes([3]) + b"abcd", 5, "decodes to 4 bytes, expected 5", id="shorter-than-asked"),
    ],
)
def test_lzf_fails_corrupt_stream_in_one_line(stream, size, message):
    with pytest.raises(LZFError, match=message):
        decompress(stream, size)


def test_lzf_fails_bomb_stops_at_the_size_asked_for():
    # Every 3 bytes ask for 264 more: 300 KB of stream would make 26 MB. It stops once past the 1,000 bytes asked.
    bomb = bytes([0]) + b"x" + bytes([7 << 5, 255, 0]) * 100_000
    with pytest.raises(LZFError, match="more than 1000 bytes"):
        decompress(bomb, 1000)


def test_lzf_passes_a_bound_that_is_not_exact():
    assert decompress(bytes([2]) + b"abc", 10, exact=False) == bytearray(b"abc")


def test_lzf_passes_an_empty_stream_as_nothing():
    assert decompress(b"", 0) == bytearray()
    with pytest.raises(LZFError, match="decodes to 0 bytes, expected 4"):
        decompress(b"", 4)
