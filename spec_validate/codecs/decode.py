"""Decode stored chunks (Zarr v2/v3, HDF5 filters) through an allow-list of codecs, every step bounded.

The one place bytes become values. A codec is run only if it is on the allow-list below; anything else
(msgpack, categorize, entry-point codecs, ...) is never constructed: its array is `NotDecoded`. Pickle (numcodecs'
Pickle, hdmf-zarr's default object codec) is never unpickled: `pickled` reads its opcodes as data, and builds the
object array numpy's pickle describes only while the stream calls nothing but numpy's own array reconstruction;
a chunk whose pickle calls or constructs anything else (hdmf_zarr.utils.ZarrReference, os.system) is
`PickleNotRebuilt` (a `NotDecoded` naming the global: the chunk is whole, only not read, and the Zarr reader lists
it so), and a pickle that is malformed is a `ChunkError`.
Every step stops at the size the metadata fixes for it (a chunk's bytes; a compressed stream's bound inside
nested compression; `MAX_VARIABLE_BYTES` before an object codec), and says so in one line: a chunk of a few
kilobytes that would inflate to gigabytes (nested zlib, a zstd frame without a declared size, bz2 members, a
vlen header declaring 2**31 items) is a `ChunkError`, never an allocation.

numcodecs is imported inside the functions that need it (through `load_numcodecs`): a run that reads no array
values never loads it.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from spec_validate.codecs import pickled
from spec_validate.errors import NodeError, NotDecoded

# Set by the command's own process (`cli.console`): numcodecs is then imported without its scan of installed
# packages for plugin codecs, which imports `importlib.metadata` (email, zipfile, csv, ...) and reads every
# package's entry points: 20-25 ms, a tenth of a small Zarr store's run. Nothing is lost there: no plugin codec is
# on the allow-list, and the built-in ids `_numcodec` asks for are registered by numcodecs' own modules. A process
# that imports spec-validate as a library gets numcodecs as numcodecs imports itself, plugins and all.
SKIP_CODEC_PLUGIN_SCAN = False
_IMPORTING = threading.Lock()


class _NoPlugins:
    """What numcodecs' registry reads at import in place of `importlib.metadata.entry_points()`: no entry point."""

    EntryPoints = tuple

    @staticmethod
    def entry_points(**_: Any) -> _NoPlugins:
        return _NoPlugins()

    def select(self, **_: Any) -> tuple[()]:
        return ()


def _entry_points(**selection: Any) -> Any:
    # numcodecs' registry scans with this when asked again (`run_entrypoints()`): the real scan, imported then.
    from importlib.metadata import entry_points

    return entry_points(**selection)


_LOADED: list[Any] = []  # numcodecs, once its import has finished


def load_numcodecs() -> Any:
    """numcodecs, imported on first use (see SKIP_CODEC_PLUGIN_SCAN); every import of it here goes through this.

    Scan threads decode at once: none may go on before the import has finished (a module is in `sys.modules`
    while it is still being imported, and a thread importing one of its submodules then gets it half made).
    """
    if _LOADED:
        return _LOADED[0]
    with _IMPORTING:
        if not _LOADED:
            _LOADED.append(_import_numcodecs())
    return _LOADED[0]


def _import_numcodecs() -> Any:
    if SKIP_CODEC_PLUGIN_SCAN and "numcodecs" not in sys.modules:
        loaded = _import_without_plugin_scan()
        if loaded is not None:
            return loaded
    import numcodecs

    return numcodecs


def _import_without_plugin_scan() -> Any | None:
    """numcodecs, its registry handed a module that finds no entry point for the time of the import (it does
    `from importlib.metadata import EntryPoints, entry_points` and scans at once); None, the half-made import
    forgotten, for a numcodecs that asks importlib.metadata for more than that."""
    real = sys.modules.get("importlib.metadata")
    sys.modules["importlib.metadata"] = _NoPlugins  # type: ignore[assignment]
    try:
        import numcodecs
        import numcodecs.registry
    except ImportError:
        for name in [m for m in sys.modules if m == "numcodecs" or m.startswith("numcodecs.")]:
            del sys.modules[name]
        return None
    finally:
        if real is None:
            del sys.modules["importlib.metadata"]
        else:
            sys.modules["importlib.metadata"] = real
    numcodecs.registry.entry_points = _entry_points
    return numcodecs


# Bytes an object codec (vlen-utf8, vlen-bytes, json2, pickle) may decode from one chunk. Its input has no size the
# metadata fixes, so it is capped here: a real chunk of strings is far smaller, and a chunk past this is
# reported, not decoded. Parsing json2 text of N bytes builds Python objects of a few times N.
MAX_VARIABLE_BYTES = 64 * 2**20
# The most bytes one chunk may decode to (a shard's codecs after `sharding_indexed`, the whole shard). Declared chunk
# shapes are not trusted: a chunk declared larger than this is not decoded (its array is `NotDecoded`), so neither a
# bomb nor a real chunk ever takes more memory than this while decoding.
MAX_CHUNK_BYTES = 256 * 2**20
# Inside nested compression (a compressor used as a filter), the inner compressed stream has no fixed size:
# it may be at most its decoded size plus an eighth plus this (every allowed compressor expands
# incompressible data by far less), and the outer decompression stops there.
COMPRESSED_SLACK = 1024
# The most codecs one chunk is decoded through: a Zarr v2 array's filters and compressor, or a Zarr v3 array's codecs
# with those of its shards' inner chunks and index. Each is a pass over the chunk, and the spec sets no number: a
# `.zarray` of 3 MB lists 200,000 checksum filters, and each of its chunks (800 KB stored) took 16 s to decode, a
# checksum over the whole chunk per filter. Writers use a handful (zarr-python: bytes, zstd, maybe crc32c); an
# array declaring more is not decoded, its value clauses not checked.
MAX_CODECS = 16
# The most memory liblzma may take for one stream (the dictionary a header declares): preset 9 needs 65 MiB.
LZMA_MEMORY_LIMIT = 256 * 2**20
# zlib, gzip, bz2 and lzma streams are decoded this much at a time, each piece copied into the chunk's buffer.
STREAM_PIECE = 2**20

COMPRESSORS = ("blosc", "zstd", "lz4", "gzip", "zlib", "bz2", "lzma")
V2_FILTERS = (
    "shuffle",
    "delta",
    "bitround",
    "fixedscaleoffset",
    "quantize",
    "astype",
    "adler32",
    "crc32",
    "fletcher32",
    "crc32c",
)
OBJECT_CODECS = ("vlen-utf8", "vlen-bytes", "json2", "pickle")
V2_ALLOWED = frozenset(COMPRESSORS + V2_FILTERS + OBJECT_CODECS)
V3_ARRAY_TO_BYTES = ("bytes", "vlen-utf8", "vlen-bytes", "sharding_indexed")
V3_BYTES_TO_BYTES = ("gzip", "blosc", "zstd", "crc32c")
V3_ALLOWED = frozenset(("transpose",) + V3_ARRAY_TO_BYTES + V3_BYTES_TO_BYTES)
STDLIB_COMPRESSORS = frozenset({"zlib", "gzip", "bz2", "lzma"})
# Compressors of HDF5 filters only (no Zarr codec has these ids): h5py's LZF filter.
HDF5_COMPRESSORS = ("lzf",)
CHECKSUMS = frozenset({"adler32", "crc32", "crc32c", "fletcher32"})
# Numeric filters: each maps n elements of its encoded dtype to n elements of its decoded dtype.
NUMERIC_FILTERS = {  # id -> (decoded-dtype key, encoded-dtype key) in its configuration
    "delta": ("dtype", "astype"),
    "fixedscaleoffset": ("dtype", "astype"),
    "quantize": ("dtype", "astype"),
    "astype": ("decode_dtype", "encode_dtype"),
    "bitround": (None, None),  # decoding is the identity
}
NUMERIC_KINDS = "biufcmM"
BLOSC_HEADER = 16
LZ4_HEADER = 4
ZSTD_MAGIC = 0xFD2FB528
CHECKSUM_BYTES = 4
VLEN_HEADER = 4
SHARD_EMPTY = 2**64 - 1  # offset and nbytes of an inner chunk that is not stored


class ChunkError(NodeError):
    """A stored chunk that does not decode: corrupt, truncated, of the wrong size, or past its bound."""


class PickleNotRebuilt(NotDecoded):
    """A chunk whose pickle calls or constructs something that is not rebuilt (its array's values are not read)."""

    def __init__(self, message: str, calls: str | None = None) -> None:
        super().__init__(message)
        self.calls = calls  # the global it calls ("hdmf_zarr.utils.ZarrReference"), where it names one

    def __reduce__(self) -> tuple[Any, ...]:  # kept whole across processes (a Dask worker's result)
        return (type(self), (str(self), self.calls))


class Step(NamedTuple):
    """One decoding step, in decode order, with the size of what it must yield."""

    name: str  # the codec id as the metadata writes it ("zlib", "shuffle", "crc32c", ...)
    config: Mapping[str, Any]
    exact: int | None  # bytes it must yield, where the metadata fixes them
    limit: int  # bytes it may yield at most (== exact when exact is known)

    def decode(self, data: np.ndarray, where: str, out: np.ndarray | None = None) -> np.ndarray:
        """`data` (uint8) decoded by this step, as uint8; into `out` (exactly `exact` bytes) where the codec can."""
        if self.name in ("blosc", "lz4"):
            decoded = _sized(self.name, data, self.exact, self.limit, out, where)
        elif self.name == "zstd":
            decoded = _zstd(data, self.exact, self.limit, out, where)
        elif self.name in STDLIB_COMPRESSORS:
            decoded = _stdlib(self.name, self.config, data, self.exact, self.limit, out, where)
        elif self.name == "lzf":
            decoded = _lzf(data, self.exact, self.limit, where)
        elif self.name in CHECKSUMS:
            decoded = _checksum(self.name, data, self.config.get("location"), where)
        elif self.name == "shuffle":
            decoded = unshuffle(data, int(self.config.get("elementsize", 4)))
        else:
            decoded = _numeric_filter(self.name, self.config, data, where)
        got = decoded.nbytes
        if self.exact is not None and got != self.exact:
            raise ChunkError(f"{where} decodes to {got} bytes, expected {self.exact}")
        if got > self.limit:
            raise ChunkError(f"{where} decodes to {got} bytes, at most {self.limit} expected")
        return decoded


class Sharding(NamedTuple):
    """A v3 `sharding_indexed` chunk (a shard): inner chunks, each decoded by `inner`, found through an index."""

    inner: ChunkCodec  # how one inner chunk decodes
    per_shard: tuple[int, ...]  # inner chunks along each axis of a shard
    index_steps: tuple[Step, ...]  # the index codecs after `bytes` (crc32c), in decode order
    index_dtype: np.dtype  # uint64 in the index's byte order
    at_start: bool  # index_location "start" (else "end")

    @property
    def index_bytes(self) -> int:
        """The encoded index's size: 16 bytes per inner chunk, plus 4 per checksum."""
        return 16 * math.prod(self.per_shard) + CHECKSUM_BYTES * len(self.index_steps)

    def index(self, shard: np.ndarray, where: str) -> np.ndarray:
        """The (offset, nbytes) pair of every inner chunk, C order of the inner grid, checked to lie in the shard."""
        size = self.index_bytes
        if shard.nbytes < size:
            raise ChunkError(f"{where} is {shard.nbytes} bytes, shorter than its {size}-byte shard index (truncated)")
        data = shard[:size] if self.at_start else shard[shard.nbytes - size :]
        for step in self.index_steps:
            data = step.decode(data, f"{where} (shard index)")
        pairs = data.view(self.index_dtype).reshape(-1, 2).astype(np.uint64)
        empty = (pairs[:, 0] == SHARD_EMPTY) & (pairs[:, 1] == SHARD_EMPTY)
        offsets, sizes = pairs[~empty, 0], pairs[~empty, 1]
        end = np.uint64(shard.nbytes)
        # offset + nbytes of a corrupt index may not fit in 64 bits: compared without adding them.
        if ((offsets > end) | (sizes > end - np.minimum(offsets, end))).any():
            raise ChunkError(f"{where}: its shard index points past the shard's {shard.nbytes} bytes (corrupt or truncated)")
        return pairs


class ChunkCodec(NamedTuple):
    """How one stored chunk decodes into its values."""

    steps: tuple[Step, ...]  # byte-level steps, in decode order
    dtype: np.dtype  # the values' dtype
    shape: tuple[int, ...]  # the chunk's shape as the array sees it
    stored_dtype: np.dtype  # the dtype of the bytes (byte order as stored)
    axes: tuple[int, ...] | None  # stored = values.transpose(axes) (order "F", v3 transpose); None: C order
    object_codec: str | None = None  # vlen-utf8, vlen-bytes, json2 or pickle: the bytes hold Python objects
    sharding: Sharding | None = None  # a shard: its inner chunks are decoded one by one (`inner`)
    stored_limit: int = 0  # the most bytes a stored chunk may hold, as its codecs can make it

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The decoded bytes of one chunk of a fixed-size dtype."""
        return self.elements * self.dtype.itemsize

    @property
    def writes_into(self) -> bool:
        """True when the decoded bytes are the values in C order, so they may be decoded straight into a block."""
        return self.object_codec is None and self.sharding is None and self.axes is None and self.stored_dtype == self.dtype


def decode_chunk(codec: ChunkCodec, raw: Any, where: str, out: np.ndarray | None = None) -> np.ndarray:
    """The chunk's values (shape `codec.shape`, C-order view), from its stored bytes `raw`.

    `out`, when given, is a C-contiguous uint8 buffer of exactly `codec.nbytes` (the chunk's place in a block,
    for a codec that `writes_into`); the values are then decoded into it where the codecs allow.
    Raises ChunkError naming `where` for a chunk that does not decode to exactly one chunk.
    """
    if codec.sharding is not None:
        raise NotDecoded(f"{where}: a shard is decoded inner chunk by inner chunk (shard_bytes), not whole")
    data = bytes_of(raw)
    last = len(codec.steps) - 1
    for i, step in enumerate(codec.steps):
        data = step.decode(data, where, out if i == last else None)
    if codec.object_codec is not None:
        if data.nbytes > MAX_VARIABLE_BYTES:  # stored uncompressed: the same cap as after a compressor
            raise ChunkError(
                f"{where} holds {data.nbytes} bytes of {codec.object_codec} data, more than the "
                f"{MAX_VARIABLE_BYTES} decoded at most"
            )
        flat = _decode_objects(codec.object_codec, data, codec.elements, where)
    else:
        if data.nbytes != codec.nbytes:  # no steps, or a chain whose last step fixes no size
            raise ChunkError(f"{where} decodes to {data.nbytes} bytes, expected {codec.nbytes}")
        if out is not None and data is not out:
            out[:] = data
            data = out
        flat = data.view(codec.stored_dtype)
        if codec.stored_dtype != codec.dtype:
            flat = flat.astype(codec.dtype)
    stored_shape = codec.shape if codec.axes is None else tuple(codec.shape[a] for a in codec.axes)
    values = flat.reshape(stored_shape)
    return values if codec.axes is None else values.transpose(np.argsort(codec.axes))


def shard_bytes(codec: ChunkCodec, raw: Any, where: str) -> np.ndarray:
    """A shard's bytes (inner chunks and index) from its stored bytes: the codecs after sharding_indexed undone."""
    data = bytes_of(raw)
    for step in codec.steps:
        data = step.decode(data, where)
    return data


# --- building codecs from metadata ----------------------------------------------------------------------------


def v2_codec(meta: Mapping[str, Any], dtype: np.dtype, chunk_shape: tuple[int, ...], where: str) -> ChunkCodec:
    """How a chunk of the Zarr v2 array `meta` decodes: compressor, then the filters in reverse.

    Raises NotDecoded (naming `where`) for a codec off the allow-list or a configuration that cannot be used.
    """
    order = meta.get("order", "C")
    if order not in ("C", "F"):
        raise NotDecoded(f'{where}: not decoded: order {order!r} is neither "C" nor "F"')
    filters = meta.get("filters") or []
    compressor = meta.get("compressor")
    if not isinstance(filters, list) or not (compressor is None or isinstance(compressor, dict)):
        raise NotDecoded(f"{where}: not decoded: filters or compressor are not codec configurations")
    written = list(filters) + ([compressor] if compressor is not None else [])
    _check_count(len(written), where)
    for config in written:
        name = config.get("id") if isinstance(config, dict) else None
        if name not in V2_ALLOWED:
            raise NotDecoded(f"{where}: not decoded: codec {name!r} is not on the allow-list ({', '.join(sorted(V2_ALLOWED))})")
    object_codec = None
    if dtype.hasobject:
        if not filters or filters[0]["id"] not in OBJECT_CODECS:
            raise NotDecoded(
                f"{where}: not decoded: an object array needs vlen-utf8, vlen-bytes, json2 or pickle as its first "
                f"filter (found {[c['id'] for c in written]})"
            )
        object_codec = filters[0]["id"]
        written = written[1:]
    # An object codec anywhere else yields Python objects where bytes are expected (zarr-python fails on it too).
    misplaced = [c["id"] for c in written if c["id"] in OBJECT_CODECS]
    if misplaced:
        raise NotDecoded(f"{where}: not decoded: object codec {misplaced[0]} where the array's bytes ({dtype}) are encoded")
    axes = tuple(reversed(range(len(chunk_shape)))) if order == "F" and len(chunk_shape) > 1 else None
    return _chain(written, dtype, dtype, chunk_shape, axes, object_codec, where)


def _chain(
    written: Sequence[Mapping[str, Any]],
    dtype: np.dtype,
    stored_dtype: np.dtype,
    shape: tuple[int, ...],
    axes: tuple[int, ...] | None,
    object_codec: str | None,
    where: str,
) -> ChunkCodec:
    """A codec whose byte-level steps undo `written` (v2-style configurations with "id", in the order applied)."""
    if object_codec in OBJECT_CODECS:
        exact, limit = None, MAX_VARIABLE_BYTES
    else:
        exact = limit = math.prod(shape) * stored_dtype.itemsize
        if exact > MAX_CHUNK_BYTES:
            raise NotDecoded(
                f"{where}: not decoded: a chunk of shape {list(shape)} holds {exact} bytes, more than the "
                f"{MAX_CHUNK_BYTES} this tool decodes at once"
            )
    steps, stored_limit = _steps(written, exact, limit, object_codec, where)
    return ChunkCodec(steps, dtype, shape, stored_dtype, axes, object_codec, None, stored_limit)


def _steps(
    written: Sequence[Mapping[str, Any]], exact: int | None, limit: int, object_codec: str | None, where: str
) -> tuple[tuple[Step, ...], int]:
    """The decode steps undoing `written`, each bounded, given what the last must yield; and the stored bytes' bound."""
    steps: list[Step] = []
    for config in written:
        name = config["id"]
        _check_config(name, config, where)
        steps.append(Step(name, config, exact, limit))
        # What this step decodes from: its input's size, known backwards from its output's.
        if name in COMPRESSORS or name in HDF5_COMPRESSORS:
            exact, limit = None, compressed_bound(limit)
        elif name in CHECKSUMS:
            exact, limit = None if exact is None else exact + CHECKSUM_BYTES, limit + CHECKSUM_BYTES
        elif name in NUMERIC_FILTERS:
            if object_codec is not None:
                raise NotDecoded(f"{where}: not decoded: the numeric filter {name} on an object array")
            exact, limit = _numeric_input(name, config, exact, limit, where)
    steps.reverse()
    return tuple(steps), limit


def compressed_bound(decoded: int) -> int:
    """The most bytes a compressed stream that decodes to `decoded` bytes may take (see COMPRESSED_SLACK)."""
    return decoded + decoded // 8 + COMPRESSED_SLACK


def _check_config(name: str, config: Mapping[str, Any], where: str) -> None:
    """Raise NotDecoded when an allow-listed codec's configuration cannot be used for decoding."""

    def bad(reason: str) -> NotDecoded:
        return NotDecoded(f"{where}: not decoded: {name} configuration {dict(config)} {reason}")

    if name == "shuffle":
        size = config.get("elementsize", 4)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise bad("has no positive elementsize")
    elif name in NUMERIC_FILTERS:
        _check_numeric_filter(name, config, bad)
    elif name == "lzma":
        _check_usable(lambda: _lzma_decompressor(config), bad)
    elif name in CHECKSUMS and config.get("location", "start") not in ("start", "end"):
        raise bad("has a location that is neither start nor end")
    elif name == "crc32c":
        load_numcodecs()
        from numcodecs.checksum32 import crc32c_checksum

        if crc32c_checksum is None:
            raise NotDecoded(f"{where}: not decoded: crc32c needs google-crc32c, which is not installed")


def _check_numeric_filter(name: str, config: Mapping[str, Any], bad: Callable[[str], NotDecoded]) -> None:
    """Raise bad(...) unless the filter's dtypes are numeric and numcodecs can build it."""
    for key in NUMERIC_FILTERS[name]:
        if key is None:
            continue
        value = config.get(key, config.get("dtype")) if key == "astype" else config.get(key)
        if _numeric_dtype(value) is None:
            raise bad(f"has {key} {value!r}, not a numeric dtype")
    if name in ("delta", "fixedscaleoffset", "quantize", "astype"):
        _check_usable(lambda: _numcodec(config), bad)


def _check_usable(build: Callable[[], Any], bad: Callable[[str], NotDecoded]) -> None:
    """Raise bad(...) when building the decoder from its configuration fails."""
    try:
        build()
    except Exception as exc:  # whatever numcodecs or lzma raise on a bad configuration
        raise bad(f"cannot be used ({type(exc).__name__}: {exc})") from None


def _numeric_dtype(spec: Any) -> np.dtype | None:
    try:
        dtype = np.dtype(spec)
    except (TypeError, ValueError):
        return None
    return dtype if dtype.kind in NUMERIC_KINDS and dtype.fields is None and dtype.subdtype is None else None


def _numeric_input(name: str, config: Mapping[str, Any], exact: int | None, limit: int, where: str) -> tuple[int | None, int]:
    """The byte size a numeric filter decodes from, given the size it must decode to (n elements either way)."""
    decoded_key, encoded_key = NUMERIC_FILTERS[name]
    if decoded_key is None:
        return exact, limit
    decoded = np.dtype(config[decoded_key])
    encoded = np.dtype(config.get(encoded_key, config[decoded_key]) if encoded_key == "astype" else config[encoded_key])
    if exact is not None and exact % decoded.itemsize:
        raise NotDecoded(f"{where}: not decoded: {name} decodes to {decoded}, which does not divide {exact} bytes")
    return (
        None if exact is None else exact // decoded.itemsize * encoded.itemsize,
        -(-limit // decoded.itemsize) * encoded.itemsize,
    )


def v3_codec(codecs: Any, dtype: np.dtype, chunk_shape: tuple[int, ...], where: str, outer: int = 0) -> ChunkCodec:
    """How a chunk of a Zarr v3 array with the codec list `codecs` decodes (a shard, for `sharding_indexed`).

    Raises NotDecoded (naming `where`) for a codec off the allow-list, a chain of the wrong form, a configuration
    that cannot be used, or more than MAX_CODECS codecs with the `outer` ones of the shards that hold these chunks.
    """
    if not isinstance(codecs, list) or not codecs:
        raise NotDecoded(f"{where}: not decoded: codecs is not a non-empty list")
    _check_count(outer + len(codecs), where)
    named: list[tuple[str, dict[str, Any]]] = []
    for codec in codecs:
        codec = {"name": codec} if isinstance(codec, str) else codec
        name = codec.get("name") if isinstance(codec, dict) else None
        config = codec.get("configuration", {}) if isinstance(codec, dict) else None
        if name not in V3_ALLOWED:
            raise NotDecoded(f"{where}: not decoded: codec {name!r} is not on the allow-list ({', '.join(sorted(V3_ALLOWED))})")
        if not isinstance(config, dict):
            raise NotDecoded(f"{where}: not decoded: codec {name} has a configuration that is not an object")
        named.append((name, config))
    names = [n for n, _ in named]
    middle = [i for i, n in enumerate(names) if n in V3_ARRAY_TO_BYTES]
    if (
        len(middle) != 1
        or any(n != "transpose" for n in names[: middle[0]])
        or any(n not in V3_BYTES_TO_BYTES for n in names[middle[0] + 1 :])
    ):
        raise NotDecoded(
            f"{where}: not decoded: codecs {names} are not transpose..., one array-to-bytes codec, bytes-to-bytes codecs..."
        )
    at = middle[0]
    axes = _transpose_axes([c for _, c in named[:at]], len(chunk_shape), where)
    name, config = named[at]
    after = [{"id": n, **c, **({"location": "end"} if n == "crc32c" else {})} for n, c in named[at + 1 :]]
    if name == "sharding_indexed":
        if axes is not None:
            raise NotDecoded(f"{where}: not decoded: transpose before sharding_indexed ({names})")
        sharding = _sharding(config, dtype, chunk_shape, where, outer + len(codecs))
        # A shard holds its inner chunks (each at most their stored bound) and its index; codecs after
        # sharding_indexed (zarr-python adds zstd) decode the whole shard, bounded by that.
        shard = math.prod(sharding.per_shard) * sharding.inner.stored_limit + sharding.index_bytes
        # Decoding the whole shard is bounded like any chunk (a shard read as stored is bounded where it is read).
        steps, stored_limit = _steps(after, None, min(shard, MAX_CHUNK_BYTES) if after else shard, None, where)
        return ChunkCodec(steps, dtype, chunk_shape, dtype, None, None, sharding, stored_limit)
    if name in ("vlen-utf8", "vlen-bytes"):
        if not dtype.hasobject:
            raise NotDecoded(f"{where}: not decoded: {name} on an array of {dtype}")
        return _chain(after, dtype, dtype, chunk_shape, axes, name, where)
    if dtype.hasobject:
        raise NotDecoded(f"{where}: not decoded: a variable-length data type needs vlen-utf8 or vlen-bytes, not bytes")
    endian = config.get("endian")
    if endian not in (None, "little", "big"):
        raise NotDecoded(f"{where}: not decoded: bytes codec endian {endian!r}")
    stored = dtype if endian is None or dtype.itemsize == 1 else dtype.newbyteorder("<" if endian == "little" else ">")
    return _chain(after, dtype, stored, chunk_shape, axes, None, where)


def _transpose_axes(configs: list[dict[str, Any]], ndim: int, where: str) -> tuple[int, ...] | None:
    """The permutation the transpose codecs apply, composed; None for the identity."""
    axes = list(range(ndim))
    for config in configs:
        order = config.get("order")
        if not isinstance(order, list) or sorted(order) != list(range(ndim)) or any(isinstance(o, bool) for o in order):
            raise NotDecoded(f"{where}: not decoded: transpose order {order!r} is not a permutation of {ndim} axes")
        axes = [axes[o] for o in order]
    return None if axes == list(range(ndim)) else tuple(axes)


def _check_count(codecs: int, where: str) -> None:
    """NotDecoded for a chunk decoded through more than MAX_CODECS codecs."""
    if codecs > MAX_CODECS:
        raise NotDecoded(
            f"{where}: not decoded: its chunks pass through {codecs} codecs, more than the {MAX_CODECS} this tool applies"
        )


# The index codecs of a sharding_indexed configuration without `index_codecs` (zarr3.sharding.index-codecs reports
# it), as the readers measured on such a store decode the index: zarr-python 3 builds the codec with its defaults
# (`ShardingCodec(index_codecs=(BytesCodec(), Crc32cCodec()))`, the bytes codec little-endian), and zarrs (the
# zarrs-python codec pipeline) is given zarr-python's codec objects as JSON (`codec.to_dict()`), these filled in.
# With `index_location` absent too, both read the index at the shard's end (the spec's default).
DEFAULT_INDEX_CODECS: tuple[dict[str, Any], ...] = ({"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"})


def index_codecs(config: Mapping[str, Any]) -> Any:
    """A sharding configuration's index codecs as written, or DEFAULT_INDEX_CODECS where the member is absent."""
    return config["index_codecs"] if "index_codecs" in config else list(DEFAULT_INDEX_CODECS)


def _sharding(config: Mapping[str, Any], dtype: np.dtype, shard_shape: tuple[int, ...], where: str, outer: int) -> Sharding:
    """The shards of `config`; `outer`: the codecs around them (the shard's own, `sharding_indexed` among them)."""
    inner_shape = config.get("chunk_shape")
    if (
        not isinstance(inner_shape, list)
        or len(inner_shape) != len(shard_shape)
        or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in inner_shape)
        or any(s % c for s, c in zip(shard_shape, inner_shape, strict=False))
    ):
        raise NotDecoded(
            f"{where}: not decoded: sharding chunk_shape {inner_shape!r} does not divide the shard shape {list(shard_shape)}"
        )
    location = config.get("index_location", "end")
    if location not in ("start", "end"):
        raise NotDecoded(f"{where}: not decoded: sharding index_location {location!r}")
    index = index_codecs(config)
    _check_count(outer + (len(index) if isinstance(index, list) else 0), where)
    inner = v3_codec(config.get("codecs"), dtype, tuple(inner_shape), where, outer)
    names = [c.get("name") if isinstance(c, dict) else c for c in index] if isinstance(index, list) else None
    if not names or names[0] != "bytes" or any(n != "crc32c" for n in names[1:]):
        raise NotDecoded(f"{where}: not decoded: sharding index_codecs {names!r} are not bytes then crc32c")
    endian = (index[0].get("configuration") or {}).get("endian", "little") if isinstance(index[0], dict) else "little"
    if endian not in ("little", "big"):
        raise NotDecoded(f"{where}: not decoded: sharding index endian {endian!r}")
    per_shard = tuple(s // c for s, c in zip(shard_shape, inner_shape, strict=False))
    n = math.prod(per_shard)
    steps = tuple(
        Step("crc32c", {"location": "end"}, 16 * n + CHECKSUM_BYTES * i, 16 * n + CHECKSUM_BYTES * i)
        for i in range(len(names) - 1)
    )
    if steps:
        _check_config("crc32c", {}, where)
    return Sharding(inner, per_shard, steps, np.dtype("<u8" if endian == "little" else ">u8"), location == "start")


def hdf5_codec(
    filters: Sequence[int], dtype: np.dtype, chunk_shape: tuple[int, ...], element_size: int, where: str
) -> ChunkCodec:
    """How an HDF5 chunk decodes through the filters `filters` (deflate 1, shuffle 2, fletcher32 3, lzf 32000, in the
    order applied).

    `element_size` is the on-disk size of one element (the chunk decodes to chunk elements x it).
    """
    names = {
        1: {"id": "zlib"},
        2: {"id": "shuffle", "elementsize": element_size},
        3: {"id": "fletcher32"},
        32000: {"id": "lzf"},
    }
    written = [names[f] for f in filters]
    stored = dtype if dtype.itemsize == element_size and not dtype.hasobject else np.dtype(f"V{element_size}")
    return _chain(written, stored, stored, chunk_shape, None, None, where)


# --- decoders -------------------------------------------------------------------------------------------------


def bytes_of(data: Any) -> np.ndarray:
    """The bytes of `data` (bytes, memoryview, ndarray of any dtype) as a flat uint8 array, without copying."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def _too_big(where: str, exact: int | None, limit: int) -> ChunkError:
    expected = f"expected {exact}" if exact is not None else f"at most {limit} expected"
    return ChunkError(f"{where} decodes to more than {limit} bytes, {expected}")


def _sized(name: str, data: np.ndarray, exact: int | None, limit: int, out: np.ndarray | None, where: str) -> np.ndarray:
    """Blosc or numcodecs' LZ4: the header states the decoded size, checked before a byte is decoded."""
    if name == "blosc":
        # c-blosc trusts the header's sizes: checked here first, so a truncated chunk is never read past its end.
        if len(data) < BLOSC_HEADER:
            raise ChunkError(f"{where} is {len(data)} bytes, shorter than a Blosc header (truncated)")
        nbytes, blocksize, cbytes = (int(x) for x in data[:BLOSC_HEADER].view("<u4")[1:4])
        if cbytes < BLOSC_HEADER or cbytes > len(data):
            raise ChunkError(f"{where} holds {len(data)} bytes, but its Blosc header says {cbytes} (truncated)")
        if nbytes and not 0 < blocksize <= max(nbytes, BLOSC_HEADER) + BLOSC_HEADER:
            raise ChunkError(f"{where} has a Blosc header with block size {blocksize} for {nbytes} bytes (corrupt)")
    else:
        # numcodecs' LZ4 stores the decoded size in 4 little-endian bytes before the block.
        if len(data) < LZ4_HEADER:
            raise ChunkError(f"{where} is {len(data)} bytes, shorter than an LZ4 header (truncated)")
        nbytes = int(data[:LZ4_HEADER].view("<u4")[0])
    if exact is not None and nbytes != exact:
        raise ChunkError(f"{where} decodes to {nbytes} bytes, expected {exact}")
    if nbytes > limit:
        raise _too_big(where, exact, limit)
    load_numcodecs()
    if name == "blosc":
        from numcodecs.blosc import decompress
    else:
        from numcodecs.lz4 import decompress
    dest = out if out is not None and out.nbytes == nbytes else np.empty(nbytes, dtype=np.uint8)
    try:
        decompress(data, dest)
    except Exception as exc:
        raise ChunkError(f"{where} does not decode with {name} ({exc})") from None
    return dest


def _lzf(data: np.ndarray, exact: int | None, limit: int, where: str) -> np.ndarray:
    """LZF (h5py's HDF5 filter), decoded here and never by HDF5, whose filter grows its buffer until a stream fits."""
    from spec_validate.codecs import lzf

    try:
        decoded = lzf.decompress(data.tobytes(), exact if exact is not None else limit, exact=exact is not None)
    except lzf.LZFError as exc:
        raise ChunkError(f"{where} does not decode with lzf ({exc})") from None
    return np.frombuffer(decoded, dtype=np.uint8)


def zstd_content_size(data: np.ndarray) -> int | str | None:
    """The first Zstandard frame's declared content size; None when it declares none; "other" for no standard frame."""
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
    size = int.from_bytes(bytes(data[at : at + width]), "little")
    return size + 256 if width == 2 else size


def _zstd(data: np.ndarray, exact: int | None, limit: int, out: np.ndarray | None, where: str) -> np.ndarray:
    """Zstandard into a buffer of the size the frame declares or the chunk needs: never grown past `limit` + 1.

    numcodecs decodes a frame that declares no size by growing its output without bound; it is only ever
    given a destination here, which it must fill exactly or fail ("expected to decompress N, got M").
    """
    declared = zstd_content_size(data)
    if isinstance(declared, int):
        if exact is not None and declared != exact:
            raise ChunkError(f"{where} decodes to {declared} bytes, expected {exact}")  # checked before decoding
        if declared > limit:
            raise _too_big(where, exact, limit)
        size = declared
    else:
        size = exact if exact is not None else limit + 1
    dest = out if out is not None and out.nbytes == size else np.empty(size, dtype=np.uint8)
    load_numcodecs()
    from numcodecs import zstd

    try:
        zstd.decompress(data, dest)
    except Exception as exc:
        message = str(exc)
        if "too small" in message and exact is None and isinstance(declared, int):
            raise ChunkError(
                f"{where} does not decode with zstd (its frames hold more than the {declared} bytes its header declares)"
            ) from None
        if "too small" in message:
            raise _too_big(where, exact, limit) from None
        got = _zstd_got(message)
        if got is None:
            raise ChunkError(f"{where} does not decode with zstd ({exc})") from None
        if exact is not None or isinstance(declared, int):
            raise ChunkError(f"{where} decodes to {got} bytes, expected {size}") from None
        return dest[:got]  # a frame without a declared size, inside nested compression: what it held
    if exact is None and not isinstance(declared, int):
        raise _too_big(where, exact, limit)  # it filled limit + 1 bytes
    return dest


def _zstd_got(message: str) -> int | None:
    """M from numcodecs' "expected to decompress N, got M": the bytes the frame decoded to."""
    head, sep, tail = message.rpartition(", got ")
    return int(tail.strip()) if sep and "expected to decompress" in head and tail.strip().isdigit() else None


def _lzma_decompressor(config: Mapping[str, Any]) -> Any:
    import lzma

    fmt = config.get("format", lzma.FORMAT_AUTO)
    if fmt == lzma.FORMAT_RAW:  # liblzma takes no memory limit for raw streams
        return lzma.LZMADecompressor(format=fmt, filters=config.get("filters"))
    return lzma.LZMADecompressor(format=fmt, memlimit=LZMA_MEMORY_LIMIT, filters=config.get("filters"))


def _stdlib(
    name: str, config: Mapping[str, Any], data: np.ndarray, exact: int | None, limit: int, out: np.ndarray | None, where: str
) -> np.ndarray:
    """`data` inflated by zlib, gzip, bz2 or lzma, member after member, into one buffer of `limit` bytes.

    Decoded a piece at a time straight into the buffer (into `out`, the block, when given), so memory is what the
    stream really holds, never more than `limit` and a piece; one byte past `limit` stops it.
    Concatenated members are read as numcodecs reads them (gzip, bz2 and lzma read every member; zlib one
    stream, ignoring what follows); trailing bytes that are no member are ignored after the first one, except
    non-zero bytes after gzip members, which Python's gzip reader refuses.
    """
    dest = out if out is not None and out.nbytes == limit else np.empty(limit, dtype=np.uint8)  # pages unused stay free
    total, source, members = 0, memoryview(data).cast("B"), 0
    while True:
        decompressor = _fresh_decompressor(name, config)
        try:
            total, taken = _inflate_member(name, decompressor, source, dest, total, exact, where)
        except ChunkError:
            raise
        except Exception as exc:  # zlib.error, OSError, LZMAError: the codec's own words
            if members and name in ("bz2", "lzma"):
                break  # bytes after the last member that are not one: ignored, as bz2/lzma.decompress do
            raise ChunkError(f"{where} does not decode with {name} ({type(exc).__name__}: {exc})") from None
        members += 1
        rest = decompressor.unused_data + bytes(source[taken:])
        if name == "zlib" or not rest or (name == "gzip" and not rest.strip(b"\0")):
            break
        source = memoryview(rest)
    return dest if total == dest.nbytes else dest[:total]


def _fresh_decompressor(name: str, config: Mapping[str, Any]) -> Any:
    """A new streaming decompressor for one member of a zlib, gzip, bz2 or lzma stream."""
    import zlib

    if name == "zlib":
        return zlib.decompressobj()
    if name == "gzip":
        return zlib.decompressobj(31)
    if name == "bz2":
        import bz2

        return bz2.BZ2Decompressor()
    return _lzma_decompressor(config)


def _inflate_member(
    name: str, decompressor: Any, source: memoryview, dest: np.ndarray, total: int, exact: int | None, where: str
) -> tuple[int, int]:
    """Inflate one member of `source` into `dest` from byte `total` on: (the new total, the source bytes taken)."""
    limit = dest.nbytes
    taken, pending = 0, b""
    # Input goes in pieces too: zlib hands back what it has not taken (unconsumed_tail) as a new copy.
    stream_like = name in ("zlib", "gzip")
    while True:
        if not pending and taken < len(source) and (stream_like or decompressor.needs_input):
            pending = source[taken : taken + STREAM_PIECE]
            taken += len(pending)
        wanted = min(STREAM_PIECE, limit - total + 1)
        piece = decompressor.decompress(pending, wanted)
        if total + len(piece) > limit:
            raise _too_big(where, exact, limit)
        dest[total : total + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
        total += len(piece)
        if decompressor.eof:
            return total, taken
        pending = decompressor.unconsumed_tail if stream_like else b""
        starved = len(piece) < wanted if stream_like else decompressor.needs_input
        if not pending and taken >= len(source) and starved:
            raise ChunkError(f"{where} does not decode with {name} (the stream is truncated)")


def _checksum(name: str, data: np.ndarray, location: str | None, where: str) -> np.ndarray:
    """The payload, once its 32-bit checksum matches the 4 bytes stored before or after it (little-endian).

    numcodecs' adler32 and crc32 store it first by default, crc32c and fletcher32 (HDF5's) last.
    """
    if len(data) < CHECKSUM_BYTES:
        raise ChunkError(f"{where} is {len(data)} bytes, too short to hold its {name} checksum")
    if name == "fletcher32":
        load_numcodecs()
        from numcodecs.fletcher32 import Fletcher32

        try:
            return bytes_of(Fletcher32().decode(data))
        except Exception as exc:
            raise ChunkError(f"{where} fails its fletcher32 check ({exc})") from None
    at_start = (location or ("end" if name == "crc32c" else "start")) == "start"
    payload = data[CHECKSUM_BYTES:] if at_start else data[:-CHECKSUM_BYTES]
    stored = int.from_bytes(bytes(data[:CHECKSUM_BYTES] if at_start else data[-CHECKSUM_BYTES:]), "little")
    if name == "crc32c":
        load_numcodecs()
        from numcodecs.checksum32 import crc32c_checksum

        computed = crc32c_checksum(payload) & 0xFFFFFFFF  # type: ignore[misc]
    else:
        import zlib

        computed = (zlib.adler32 if name == "adler32" else zlib.crc32)(payload) & 0xFFFFFFFF
    if stored != computed:
        raise ChunkError(f"{where} fails its {name} check (stored {stored:#010x}, computed {computed:#010x})")
    return payload


def unshuffle(data: np.ndarray, itemsize: int) -> np.ndarray:
    """Undo the byte shuffle (HDF5's and numcodecs'): byte 0 of every element, then byte 1, ...; a remainder stays."""
    if itemsize <= 1:
        return data
    n = len(data) // itemsize
    out = np.empty(len(data), dtype=np.uint8)
    out[: n * itemsize].reshape(n, itemsize)[:] = data[: n * itemsize].reshape(itemsize, n).T
    out[n * itemsize :] = data[n * itemsize :]
    return out


def _numcodec(config: Mapping[str, Any]) -> Any:
    numcodecs = load_numcodecs()

    return numcodecs.get_codec(dict(config))  # only ever for ids on the allow-list


def _numeric_filter(name: str, config: Mapping[str, Any], data: np.ndarray, where: str) -> np.ndarray:
    """Delta, fixedscaleoffset, quantize or astype undone by numcodecs (bitround needs nothing undone)."""
    if name == "bitround":
        return data
    encoded = np.dtype(config["encode_dtype"] if name == "astype" else config.get("astype", config["dtype"]))
    if data.nbytes % encoded.itemsize:
        raise ChunkError(f"{where} holds {data.nbytes} bytes before {name}, not a whole number of {encoded} elements")
    try:
        return bytes_of(np.asarray(_numcodec(config).decode(data.view(encoded))))
    except Exception as exc:
        raise ChunkError(f"{where} does not decode with {name} ({type(exc).__name__}: {exc})") from None


def _decode_objects(name: str, data: np.ndarray, count: int, where: str) -> np.ndarray:
    """`count` Python objects (a flat object array) from vlen-utf8, vlen-bytes, json2 or pickle bytes."""
    if name == "json2":
        return _json2(data, count, where)
    if name == "pickle":
        return _pickle(data, count, where)
    # numcodecs allocates an array of as many items as the header declares: checked against the chunk first.
    if len(data) < VLEN_HEADER:
        raise ChunkError(f"{where} is {len(data)} bytes, too short for a {name} header")
    declared = int(data[:VLEN_HEADER].view("<u4")[0])
    if declared != count:
        raise ChunkError(f"{where}: its {name} header declares {declared} items, expected {count}")
    if VLEN_HEADER * (count + 1) > len(data):
        raise ChunkError(f"{where} is {len(data)} bytes, too short for {count} {name} items (truncated)")
    numcodecs = load_numcodecs()

    codec = numcodecs.VLenUTF8() if name == "vlen-utf8" else numcodecs.VLenBytes()
    try:
        values = codec.decode(data)
    except Exception as exc:
        raise ChunkError(f"{where} does not decode with {name} ({type(exc).__name__}: {exc})") from None
    return np.asarray(values, dtype=object).reshape(-1)


def _json2(data: np.ndarray, count: int, where: str) -> np.ndarray:
    """numcodecs' json2 layout, parsed with `json`: [item, ..., dtype, shape]; items nested as the shape says."""
    import json

    try:
        items = json.loads(data.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ChunkError(f"{where} is not json2 text ({type(exc).__name__}: {exc})") from None
    if (
        not isinstance(items, list)
        or len(items) < 3
        or not isinstance(items[-1], list)
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in items[-1])
    ):
        raise ChunkError(f"{where} is not json2 data (a list ending with a dtype and a shape)")
    shape = tuple(items[-1])
    if math.prod(shape) != count:
        raise ChunkError(f"{where}: its json2 shape {list(shape)} holds {math.prod(shape)} items, expected {count}")
    out = np.empty(shape, dtype=object)
    try:
        if not shape:
            out[()] = items[0]
        else:
            out[...] = _nested(items[:-2], shape)
    except (ValueError, TypeError, IndexError) as exc:
        raise ChunkError(f"{where}: its json2 items do not fill shape {list(shape)} ({exc})") from None
    return out.reshape(-1)


def _pickle(data: np.ndarray, count: int, where: str) -> np.ndarray:
    """A numcodecs Pickle chunk's elements, read as data by `pickled` (never unpickled).

    A pickle that calls anything but numpy's array reconstruction is not damaged, only not read: PickleNotRebuilt,
    naming the global (the array's value clauses are not checked). A malformed one, or one past a bound, is a
    ChunkError.
    """
    try:
        elements, shape = pickled.object_array(data.tobytes())
    except pickled.NotRebuilt as exc:
        raise PickleNotRebuilt(f"{where}: not decoded: its pickle {exc}", exc.calls) from None
    except pickled.Malformed as exc:
        raise ChunkError(f"{where} {exc}") from None
    if len(elements) != count:
        raise ChunkError(f"{where}: its pickle holds an array of shape {list(shape)}, {len(elements)} items, expected {count}")
    out = np.empty(count, dtype=object)
    for i, element in enumerate(elements):  # one by one: a list element must stay a list, not become an axis
        out[i] = element
    return out


def _nested(items: list[Any], shape: tuple[int, ...]) -> np.ndarray:
    """`items` (nested lists as numcodecs writes an N-D chunk) as an object array of `shape`, element by element."""
    out = np.empty(shape, dtype=object)
    if len(items) != shape[0]:
        raise ValueError(f"{len(items)} items along an axis of length {shape[0]}")
    for i, item in enumerate(items):
        if len(shape) == 1:
            out[i] = item
        elif isinstance(item, list):
            out[i] = _nested(item, shape[1:])
        else:
            raise ValueError("an item where a nested list belongs")
    return out
