"""Read 1-D numeric Zarr arrays chunk by chunk through the store's keys, decoded here with numcodecs.

zarr-python runs every read on its own event loop: each call pays for the round trip, and reads from several
scan threads queue behind one another there. For the arrays that dominate real stores (1-D, fixed-size numeric
dtypes, a few well-known codecs), the metadata is enough: chunk i is fetched with `kv.get` and decoded by
numcodecs, whose blosc, zstd, lz4 and zlib decoders release the GIL, so scan threads decode in parallel, each
whole chunk straight into the block's own buffer where the codec can. Anything else (N-D arrays, strings and
objects, sharding, codecs off the allow-list, a fill value we cannot read, metadata zarr-python might read
differently) returns no plan and the caller reads through zarr-python.

No codec that can build objects (pickle, json, msgpack, vlen-*, categorize) is ever constructed here. A chunk
is checked against the size the metadata implies before a byte of it is used: a truncated or oversized chunk
is a NodeError naming its key, never garbage values.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from validator.nodes.base import NodeError
from validator.nodes.keyvalue import DirectoryStore, KeyValueStore, ZipStore

# numcodecs is imported inside the functions that need it: a run that reads no array values never loads it.

DTYPE_KINDS = "biuf"
# Fixed-size numeric codecs only. Anything else (pickle, json, msgpack, vlen-*, categorize, astype, quantize, ...)
# is not constructed here at all: such arrays go through zarr-python and its own refusals.
V2_CODECS = frozenset({"blosc", "zstd", "lz4", "gzip", "zlib", "bz2", "lzma", "shuffle", "delta"})
V3_BYTES_CODECS = frozenset({"zstd", "gzip", "blosc", "crc32c"})
# Decoded here with the standard library's decompressors (which release the GIL), stopped one byte past the
# expected size: a chunk that would inflate to gigabytes is an error, not an allocation.
STDLIB_CODECS = frozenset({"zlib", "gzip", "bz2", "lzma"})
V3_NUMERIC_TYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                              "float16", "float32", "float64"})
# zarr.json keys this reader understands; any other key may change how chunks are read (must_understand).
V3_KEYS = frozenset({"zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding",
                     "fill_value", "codecs", "attributes", "dimension_names", "storage_transformers"})
FLOAT_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
BLOSC_HEADER = 16
ZSTD_MAGIC = 0xFD2FB528
CRC32C_BYTES = 4


class Step(NamedTuple):
    """One decoding step, in decode order: `name` as the metadata writes it; `codec` for the generic steps."""

    name: str
    codec: Any = None  # a numcodecs codec (shuffle, delta); the configuration of a stdlib one (lzma); else None
    expected: int | None = None  # bytes this step must produce, where the metadata fixes it

    def decode(self, data: np.ndarray, out: np.ndarray | None, where: str) -> np.ndarray:
        """`data` decoded: into `out` when given and the codec can (then `out` is returned), else a new array."""
        if self.name == "blosc":
            return _blosc(data, self.expected, out, where)
        if self.name == "zstd":
            return _zstd(data, self.expected, out, where)
        if self.name == "lz4":
            return _lz4(data, self.expected, out, where)
        if self.name == "crc32c":
            return _crc32c(data, where)
        if self.name in STDLIB_CODECS:
            return _stdlib(self.name, self.codec, data, self.expected, where)
        try:
            return _bytes_of(self.codec.decode(data))
        except Exception as exc:
            raise NodeError(f"{where} does not decode with {self.name} ({type(exc).__name__}: {exc})") from None


class DirectPlan(NamedTuple):
    """How to read a 1-D array's chunks without zarr-python."""

    dtype: np.dtype  # as stored (byte order included)
    length: int
    chunk_len: int
    key_prefix: str  # chunk i is at key_prefix + str(i)
    fill: Any  # a scalar of `dtype`: the value of every element of a chunk that is not stored
    steps: tuple[Step, ...]  # decode order: the reverse of the order they were applied in when writing

    @property
    def chunk_bytes(self) -> int:
        return self.chunk_len * self.dtype.itemsize


def plan(metadata: Mapping[str, Any], zarr_format: int, prefix: str, dtype: np.dtype | None) -> DirectPlan | None:
    """A plan for reading the array `metadata` describes (stored below `prefix`) directly, or None.

    None sends the read to zarr-python, which decides what the array holds or why it cannot be read.
    """
    try:
        if dtype is None or dtype.kind not in DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None:
            return None
        return _plan_v3(metadata, prefix, dtype) if zarr_format == 3 else _plan_v2(metadata, prefix, dtype)
    except Exception:  # metadata of an unexpected shape: zarr-python reports what is wrong with it
        return None


def _plan_v2(meta: Mapping[str, Any], prefix: str, dtype: np.dtype) -> DirectPlan | None:
    if meta.get("zarr_format") != 2 or not isinstance(meta.get("dtype"), str) or meta.get("order") not in ("C", "F"):
        return None
    if meta.get("dimension_separator", ".") not in (".", "/"):
        return None
    length, chunk_len = _one_dimension(meta.get("shape"), meta.get("chunks"))
    if length is None or chunk_len is None:
        return None
    fill = _fill_value(meta.get("fill_value"), dtype, hex_floats=False)
    if fill is None:
        return None
    filters = meta.get("filters") or []
    compressor = meta.get("compressor")
    if not isinstance(filters, list) or not (compressor is None or isinstance(compressor, dict)):
        return None
    # Written: filters in order, then the compressor; read: the compressor, then the filters in reverse.
    configs = ([compressor] if compressor is not None else []) + list(reversed(filters))
    codecs = [_v2_codec(c, dtype) for c in configs]
    if any(c is None for c in codecs):
        return None
    chunk_bytes = chunk_len * dtype.itemsize
    # Every allowed filter keeps the size, so each step yields exactly one chunk's bytes.
    steps = tuple(Step(name, codec, chunk_bytes) for name, codec in codecs)  # type: ignore[misc]
    return DirectPlan(dtype, length, chunk_len, f"{prefix}/" if prefix else "", fill, steps)


def _v2_codec(config: Any, dtype: np.dtype) -> tuple[str, Any] | None:
    if not isinstance(config, dict) or config.get("id") not in V2_CODECS:
        return None
    name = config["id"]
    if name == "delta":
        # Only a delta over the array's own dtype keeps the chunk's size and values; others go to zarr-python.
        if np.dtype(config.get("dtype")) != dtype or np.dtype(config.get("astype", config.get("dtype"))) != dtype:
            return None
    if name == "shuffle" and config.get("elementsize", dtype.itemsize) != dtype.itemsize:
        return None
    import numcodecs

    codec = numcodecs.get_codec(dict(config))  # constructing checks the configuration, as zarr-python would
    if name == "lzma":
        _lzma_decompressor(config)  # the format and filters must make a decompressor
        return name, dict(config)
    return name, codec if name in ("shuffle", "delta") else None


def _plan_v3(meta: Mapping[str, Any], prefix: str, dtype: np.dtype) -> DirectPlan | None:
    if meta.get("zarr_format") != 3 or meta.get("node_type") != "array" or set(meta) - V3_KEYS:
        return None
    if meta.get("data_type") not in V3_NUMERIC_TYPES or meta.get("storage_transformers") not in (None, []):
        return None
    grid = meta.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("name") != "regular" or not isinstance(grid.get("configuration"), dict):
        return None
    length, chunk_len = _one_dimension(meta.get("shape"), grid["configuration"].get("chunk_shape"))
    if length is None or chunk_len is None:
        return None
    key_prefix = _v3_key_prefix(meta.get("chunk_key_encoding"))
    if key_prefix is None:
        return None
    fill = _fill_value(meta.get("fill_value"), dtype, hex_floats=True)
    if fill is None:
        return None
    bytes_codecs = _v3_bytes_codecs(meta.get("codecs"), dtype)
    if bytes_codecs is None:
        return None
    # Written: bytes, then each bytes-to-bytes codec in order; read: those in reverse. Sizes are known backwards
    # from the chunk's: crc32c adds its 4 bytes; a compressor's input size is not fixed.
    expected: int | None = chunk_len * dtype.itemsize
    steps: list[Step] = []
    for name, codec in bytes_codecs:
        steps.append(Step(name, codec, expected))
        expected = expected + CRC32C_BYTES if name == "crc32c" and expected is not None else None
    steps.reverse()
    return DirectPlan(dtype, length, chunk_len, f"{prefix}/{key_prefix}" if prefix else key_prefix, fill, tuple(steps))


def _v3_key_prefix(encoding: Any) -> str | None:
    """The chunk key of chunk i, minus `i`, for a 1-D array: `c/` (default), `c.` (default with "."), `` (v2)."""
    if not isinstance(encoding, dict):  # absent (the field is required) or unusable: zarr-python decides
        return None
    config = encoding.get("configuration", {})
    if not isinstance(config, dict):
        return None
    if encoding.get("name") == "default" and config.get("separator", "/") in ("/", "."):
        return "c" + config.get("separator", "/")
    if encoding.get("name") == "v2" and config.get("separator", ".") in ("/", "."):
        return ""
    return None


def _v3_bytes_codecs(codecs: Any, dtype: np.dtype) -> list[tuple[str, Any]] | None:
    """The bytes-to-bytes codecs after `bytes`, in the order they were applied; None for any other chain."""
    if not isinstance(codecs, list) or not all(isinstance(c, dict) and isinstance(c.get("configuration", {}), dict)
                                               for c in codecs):
        return None
    names = [c.get("name") for c in codecs]
    if names.count("bytes") != 1:
        return None
    at = names.index("bytes")
    # Array-to-array codecs before `bytes`: only a transpose, which is the identity on one dimension.
    if any(n != "transpose" or c.get("configuration", {}).get("order") not in ([0], None)
           for n, c in zip(names[:at], codecs[:at])):
        return None
    endian = codecs[at].get("configuration", {}).get("endian")
    if dtype.itemsize > 1 and {"little": "<", "big": ">"}.get(endian) != _byteorder(dtype):
        return None
    import numcodecs
    from numcodecs.checksum32 import crc32c_checksum

    out: list[tuple[str, Any]] = []
    for name, codec in zip(names[at + 1:], codecs[at + 1:]):
        if name not in V3_BYTES_CODECS:
            return None
        if name == "crc32c" and crc32c_checksum is None:
            return None
        if name == "gzip":
            numcodecs.get_codec({"id": "gzip", **codec.get("configuration", {})})  # checks the configuration
        out.append((name, None))
    return out


def _byteorder(dtype: np.dtype) -> str:
    order = dtype.byteorder
    if order == "=":
        return "<" if np.little_endian else ">"
    return order


def _one_dimension(shape: Any, chunks: Any) -> tuple[int | None, int | None]:
    def count(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if not (isinstance(shape, list) and isinstance(chunks, list) and len(shape) == len(chunks) == 1):
        return None, None
    if not (count(shape[0]) and count(chunks[0]) and shape[0] >= 0 and chunks[0] > 0):
        return None, None
    return shape[0], chunks[0]


def _fill_value(value: Any, dtype: np.dtype, hex_floats: bool) -> Any:
    """The fill value as a scalar of `dtype`, or None where it is not a plain number of that dtype (null included)."""
    if dtype.kind == "b":
        return np.bool_(value) if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if dtype.kind in "iu":
        if not isinstance(value, int):
            return None
        info = np.iinfo(dtype)
        return dtype.type(value) if info.min <= value <= info.max else None
    if isinstance(value, str) and value in FLOAT_NAMES:
        return dtype.type(FLOAT_NAMES[value])
    if isinstance(value, str) and hex_floats and value.startswith("0x"):
        bits = int(value, 16)
        if bits >> (8 * dtype.itemsize):
            return None
        return np.array(bits, dtype=f"<u{dtype.itemsize}").view(f"<f{dtype.itemsize}").astype(dtype)[()]
    if isinstance(value, (int, float)):
        with np.errstate(over="ignore"):
            converted = dtype.type(value)
        # A finite value that the dtype cannot hold: zarr-python decides what that means.
        return converted if not math.isfinite(value) or np.isfinite(converted) else None
    return None


# --- reading ------------------------------------------------------------------------------------------------


def read_rows(kv: KeyValueStore, plan: DirectPlan, start: int, stop: int, path: str) -> np.ndarray:
    """Elements [start, stop) of the array, each chunk fetched with `kv.get` and decoded here. Thread-safe."""
    start, stop = max(0, start), min(stop, plan.length)  # as slicing would
    out = np.empty(max(0, stop - start), dtype=plan.dtype)
    if stop <= start:
        return out
    view = out.view(np.uint8)
    itemsize, n = plan.dtype.itemsize, plan.chunk_len
    for i in range(start // n, (stop - 1) // n + 1):
        lo, hi = max(start, i * n), min(stop, (i + 1) * n)
        key = f"{plan.key_prefix}{i}"
        raw = _get(kv, key, path)
        if raw is None:
            out[lo - start:hi - start] = plan.fill
            continue
        target = view[(lo - start) * itemsize:(hi - start) * itemsize]
        # A whole chunk is decoded straight into the block; the array's last chunk is stored full-size and sliced.
        whole = lo == i * n and hi == (i + 1) * n
        decoded = _decode(plan, _bytes_of(raw), f"{path}: chunk {key}", target if whole else None)
        if decoded is not target:
            skip = (lo - i * n) * itemsize
            target[:] = decoded[skip:skip + len(target)]
    return out


def _decode(plan: DirectPlan, data: np.ndarray, where: str, out: np.ndarray | None) -> np.ndarray:
    last = len(plan.steps) - 1
    for j, step in enumerate(plan.steps):
        data = step.decode(data, out if j == last else None, where)
    if data.nbytes != plan.chunk_bytes:
        raise NodeError(f"{where} decodes to {data.nbytes} bytes, expected {plan.chunk_bytes}")
    return data


def _get(kv: KeyValueStore, key: str, path: str) -> bytes | None:
    """The chunk's stored bytes; None only when the chunk is not stored (it then reads as the fill value)."""
    try:
        raw = kv.get(key)
    except Exception as exc:  # a remote store's failure (its message carries no credentials)
        raise NodeError(f"{path}: cannot read chunk {key} ({exc})") from None
    if raw is not None:
        return raw
    # `get` answers None for keys it would not read, too: those must not pass for unstored chunks.
    if isinstance(kv, DirectoryStore):
        full = kv.resolve(key)
        if full is None:
            raise NodeError(f"{path}: chunk {key} leads outside the store; not read")
        if os.path.lexists(full):
            raise NodeError(f"{path}: chunk {key} exists but cannot be read")
    elif isinstance(kv, ZipStore) and key in kv._entries:
        raise NodeError(f"{path}: chunk {key} exists in the zip file but cannot be read")
    return None


def _bytes_of(data: Any) -> np.ndarray:
    """The bytes of `data` (bytes, memoryview, ndarray of any dtype) as a flat uint8 array, without copying."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def _wrong_size(where: str, got: int, expected: int) -> NodeError:
    return NodeError(f"{where} decodes to {got} bytes, expected {expected}")


def _blosc(data: np.ndarray, expected: int | None, out: np.ndarray | None, where: str) -> np.ndarray:
    # c-blosc trusts the header's sizes: checked here first, so a truncated chunk is never read past its end.
    if len(data) < BLOSC_HEADER:
        raise NodeError(f"{where} is {len(data)} bytes, shorter than a Blosc header (truncated)")
    nbytes, cbytes = (int(x) for x in data[:BLOSC_HEADER].view("<u4")[[1, 3]])
    if cbytes < BLOSC_HEADER or cbytes > len(data):
        raise NodeError(f"{where} holds {len(data)} bytes, but its Blosc header says {cbytes} (truncated)")
    if expected is not None and nbytes != expected:
        raise _wrong_size(where, nbytes, expected)
    from numcodecs import blosc

    return _decompress_into(blosc.decompress, "blosc", data, nbytes, out, where)


def _zstd(data: np.ndarray, expected: int | None, out: np.ndarray | None, where: str) -> np.ndarray:
    declared = _zstd_content_size(data)
    if expected is not None and isinstance(declared, int) and declared > expected:
        raise _wrong_size(where, declared, expected)  # checked before decoding: no oversized allocation
    # numcodecs fills only the declared size of a larger `dest` and says nothing: `dest` is used only when the
    # declared size is exactly the expected one, or absent (then the decoder must fill `dest` exactly).
    into = expected is not None and (declared == expected or declared is None)
    dest = (out if out is not None else np.empty(expected, dtype=np.uint8)) if into else None
    from numcodecs import zstd

    try:
        decoded = zstd.decompress(data, dest)
    except Exception as exc:
        raise NodeError(f"{where} does not decode with zstd ({exc})") from None
    return dest if dest is not None else _bytes_of(decoded)


def _zstd_content_size(data: np.ndarray) -> int | None | str:
    """The first frame's declared content size; None when it declares none; "other" for no standard frame."""
    if len(data) < 6 or int(data[:4].view("<u4")[0]) != ZSTD_MAGIC:
        return "other"
    descriptor = int(data[4])
    size_flag, single_segment, dict_flag = descriptor >> 6, descriptor >> 5 & 1, descriptor & 3
    at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if width == 0:
        return None
    if len(data) < at + width:
        return "other"
    size = int.from_bytes(bytes(data[at:at + width]), "little")
    return size + 256 if width == 2 else size


def _lz4(data: np.ndarray, expected: int | None, out: np.ndarray | None, where: str) -> np.ndarray:
    # numcodecs' LZ4 stores the decoded size in 4 little-endian bytes before the block.
    if len(data) < 4:
        raise NodeError(f"{where} is {len(data)} bytes, shorter than an LZ4 header (truncated)")
    nbytes = int(data[:4].view("<u4")[0])
    if expected is not None and nbytes != expected:
        raise _wrong_size(where, nbytes, expected)
    from numcodecs import lz4

    return _decompress_into(lz4.decompress, "lz4", data, nbytes, out, where)


def _decompress_into(decompress: Any, codec: str, data: np.ndarray, nbytes: int, out: np.ndarray | None,
                     where: str) -> np.ndarray:
    """Run a numcodecs decompressor into `out` (or a new buffer of `nbytes`); a failure names the chunk."""
    dest = out if out is not None else np.empty(nbytes, dtype=np.uint8)
    try:
        decompress(data, dest)
    except Exception as exc:
        raise NodeError(f"{where} does not decode with {codec} ({exc})") from None
    return dest


def _crc32c(data: np.ndarray, where: str) -> np.ndarray:
    """The payload, once the CRC-32C of it matches the 4 little-endian bytes stored after it."""
    if len(data) < CRC32C_BYTES:
        raise NodeError(f"{where} is {len(data)} bytes, too short to hold its crc32c checksum")
    from numcodecs.checksum32 import crc32c_checksum

    payload = data[:-CRC32C_BYTES]
    stored = int.from_bytes(bytes(data[-CRC32C_BYTES:]), "little")
    computed = crc32c_checksum(payload) & 0xFFFFFFFF  # type: ignore[misc]
    if stored != computed:
        raise NodeError(f"{where} fails its crc32c check (stored {stored:#010x}, computed {computed:#010x})")
    return payload


def _lzma_decompressor(config: Mapping[str, Any]) -> Any:
    import lzma

    return lzma.LZMADecompressor(format=config.get("format", lzma.FORMAT_AUTO), filters=config.get("filters"))


def _stdlib(name: str, config: Any, data: np.ndarray, expected: int | None, where: str) -> np.ndarray:
    """`data` inflated by zlib, gzip, bz2 or lzma, member after member, never past one byte over `expected`.

    Concatenated members are read as numcodecs reads them (gzip, bz2 and lzma read every member; zlib one
    stream, ignoring what follows); trailing bytes that are no member are ignored after the first one, except
    non-zero bytes after gzip members, which Python's gzip reader refuses.
    """
    import zlib

    def fresh() -> Any:
        if name == "zlib":
            return zlib.decompressobj()
        if name == "gzip":
            return zlib.decompressobj(31)
        if name == "bz2":
            import bz2

            return bz2.BZ2Decompressor()
        return _lzma_decompressor(config)

    bound = -1 if expected is None else expected + 1
    pieces: list[bytes] = []
    total, rest = 0, data  # then each member's unused_data (bytes)
    while True:
        decompressor = fresh()
        # Unbounded is max_length 0 for zlib's decompressors, -1 for bz2's and lzma's.
        limit = bound - total if bound > 0 else (0 if name in ("zlib", "gzip") else -1)
        try:
            piece = decompressor.decompress(rest, limit)
        except Exception as exc:  # zlib.error, OSError, LZMAError: the codec's own words
            if pieces and name in ("bz2", "lzma"):
                break  # bytes after the last member that are not one: ignored, as bz2/lzma.decompress do
            raise NodeError(f"{where} does not decode with {name} ({type(exc).__name__}: {exc})") from None
        total += len(piece)
        pieces.append(piece)
        if expected is not None and total > expected:
            raise NodeError(f"{where} decodes to more than {expected} bytes, expected {expected}")
        if not decompressor.eof:
            raise NodeError(f"{where} does not decode with {name} (the stream is truncated)")
        rest = decompressor.unused_data
        if name == "zlib" or not rest or (name == "gzip" and not rest.strip(b"\0")):
            break
    return _bytes_of(pieces[0] if len(pieces) == 1 else b"".join(pieces))
