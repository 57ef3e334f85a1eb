"""LZF decompression (liblzf's format, as h5py's `lzf` HDF5 filter writes chunks), bounded by the size it must yield.

HDF5's own LZF filter retries with ever larger buffers until the stream decodes, so a chunk is never handed to it.
Here a chunk is decoded into exactly the bytes it must yield: by liblzf's `lzf_decompress`, which h5py builds into
its `h5z` module and which never writes past the buffer it is given (it fails with E2BIG instead), called through
ctypes (the GIL released, so scan threads decode in parallel); or, where that symbol is not there, by the same
algorithm in Python (about 10 MB/s), which stops at the first byte that would go past them.

The format is a sequence of tokens. A control byte below 32 starts a literal run of control + 1 bytes copied from
the input. Any other is a back-reference: its top 3 bits are the length - 2 (7 meaning a length byte follows, added
to it), its low 5 bits and the next byte the distance - 1 back into the output. A reference may overlap the bytes
it copies (distance 1 repeats one byte): that run is the repeated period, not a byte loop.
"""

from __future__ import annotations

import ctypes
import errno
import functools
from collections.abc import Callable


class LZFError(ValueError):
    """A stream that is no LZF, or that does not decode to exactly the size asked for."""


@functools.cache
def native() -> Callable[..., int] | None:
    """liblzf's `lzf_decompress(in, in_len, out, out_len)` from h5py's `h5z` module, or None where it is not exported."""
    try:
        from h5py import h5z

        function = ctypes.CDLL(h5z.__file__, use_errno=True).lzf_decompress
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_uint]
    function.restype = ctypes.c_uint
    return function


def decompress(data: bytes | bytearray | memoryview, size: int, exact: bool = True) -> bytearray:
    """The `size` bytes the LZF stream `data` decodes to (at most `size` when not `exact`); LZFError when it decodes
    to another size or is corrupt.

    Never holds more than `size` bytes of output: a token that would write past them stops the decoding.
    """
    src = bytes(data)
    function = native()
    if function is not None and len(src) < 2**32 and size < 2**32:
        return _native(function, src, size, exact)
    return _python(src, size, exact)


def _native(function: Callable[..., int], src: bytes, size: int, exact: bool) -> bytearray:
    """`decompress` by liblzf: it checks every run against the input's end and the output's, and every reference
    against the output's start (an empty stream, which it would read one byte past, is not handed to it)."""
    out = bytearray(size)
    if not src:
        got = 0
    else:
        buffer = (ctypes.c_char * size).from_buffer(out) if size else None
        got = function(src, len(src), buffer, size)
        del buffer  # the bytearray cannot be resized while a ctypes view of it exists
        if got == 0:
            if ctypes.get_errno() == errno.E2BIG:
                raise LZFError(f"decodes to more than {size} bytes")
            raise LZFError("not an LZF stream (a literal run past its end, or a back-reference before the start)")
    if exact and got != size:
        raise LZFError(f"decodes to {got} bytes, expected {size}")
    del out[got:]
    return out


def _python(src: bytes, size: int, exact: bool) -> bytearray:
    """`decompress` in Python: token by token, each checked before it writes."""
    out = bytearray(size)  # written in place: no growing, never more than asked for
    at, end, pos = 0, len(src), 0
    try:
        while at < end:
            control = src[at]
            at += 1
            if control < 32:  # a literal run
                stop = at + control + 1
                if stop > end:
                    raise LZFError(f"a literal run of {control + 1} bytes at byte {at - 1} passes the end of the stream")
                if pos + control + 1 > size:
                    raise LZFError(f"decodes to more than {size} bytes")
                out[pos : pos + control + 1] = src[at:stop]
                pos += control + 1
                at = stop
                continue
            length = control >> 5
            if length == 7:
                length += src[at]  # IndexError past the end: the stream ends inside the reference
                at += 1
            start = pos - ((control & 31) << 8 | src[at]) - 1
            at += 1
            length += 2
            if start < 0:
                raise LZFError(f"a back-reference at byte {at - 2} reaches {-start} bytes before the start of the output")
            if pos + length > size:
                raise LZFError(f"decodes to more than {size} bytes")
            if start + length <= pos:
                out[pos : pos + length] = out[start : start + length]
            else:  # overlapping: the last pos - start bytes repeat
                period = out[start:pos]
                out[pos : pos + length] = (period * (length // len(period) + 1))[:length]
            pos += length
    except IndexError:
        raise LZFError("the stream ends inside a back-reference") from None
    if exact and pos != size:
        raise LZFError(f"decodes to {pos} bytes, expected {size}")
    del out[pos:]
    return out
