"""Read Zarr v2/v3 arrays chunk by chunk through the store's keys: the chunk layout; bytes decode in `codecs`.

Every array is read here, never through zarr-python: its metadata says where each chunk lies (chunk grid and
key encoding, shards and their index) and how it decodes (`codecs.v2_codec`/`v3_codec`, allow-listed and
bounded). A block is a run of rows along axis 0 covering whole chunks along axis 0 and every chunk along the
other axes; each stored chunk is fetched once with `kv.get`, decoded, and put in its place in the block (edge
chunks are stored full-size and cut). A chunk that is not stored is the fill value, allocated only as the
block's own elements. Blosc, zstd, lz4 and zlib release the GIL, so scan threads decode in parallel, a whole
chunk straight into the block's buffer where its layout allows.

A chunk that does not decode (corrupt, truncated, of the wrong size, a decompression bomb) does not stop the
block: it is listed with its problem in `Block.chunks`, its elements are the fill value. Neither does a defect of
the metadata that decoding the stored chunks does not depend on: a fill value that is no value of the dtype (chunks
not stored then read as a zero stand-in) or a Zarr v2 order other than "C" and "F" (chunks decoded as "C"): the
block's chunk records are exact, and `Block.values_problem` says why its values are not the array's. A chunk whose
pickle calls a class (hdmf_zarr.utils.ZarrReference) is whole but not read: listed with why (`ChunkRead.unread`)
and the global it calls (`ChunkRead.calls`), its elements the fill value. An array whose
codecs or layout this module does not read raises `NotDecoded`; a chunk key that leads outside the store, or a chunk
that exists but cannot be read, raises NodeError.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from spec_validate.codecs import decode
from spec_validate.codecs.decode import ChunkCodec, ChunkError, PickleNotRebuilt
from spec_validate.errors import NodeError, NotDecoded
from spec_validate.kernels.block import Block, ChunkRead, ShardIndex
from spec_validate.nodes.base import (
    MAX_CHUNKS_PER_BLOCK,
    check_block_size,
    check_chunk_count,
    element_bytes,
    linear_index,
    stored_in,
    uniform_block,
)
from spec_validate.nodes.zarr import v3 as zarr_v3
from spec_validate.storage.keyvalue import MAX_VALUE_BYTES, DirectoryStore, KeyValueStore, ValueTooLarge, ZipStore

# zarr.json keys this reader understands; any other key may change how chunks are read, unless it says
# `"must_understand": false`.
V3_KEYS = frozenset(
    {
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "dimension_names",
        "storage_transformers",
    }
)
# Stored chunks up to this size are always read and handed to the decoder (which bounds what they decode to).
CHUNK_READ_FLOOR = 64 * 2**20
FLOAT_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class Fill(NamedTuple):
    """The fill value as a scalar of the array's dtype, or why the stored one is not one."""

    value: Any
    problem: str | None = None  # the reason, when `value` is only the zero stand-in


class ArrayPlan(NamedTuple):
    """How to read an array's chunks: where each lies and how it decodes."""

    path: str  # the node path, for messages
    shape: tuple[int, ...]
    dtype: np.dtype  # as the values are returned (byte order as stored)
    chunk_shape: tuple[int, ...]  # the chunk grid's (a shard's, for a sharded array)
    codec: ChunkCodec
    fill: Fill
    key_prefix: str  # the array's own prefix in the store, "" or "a/b/"
    key_lead: str  # before the chunk indices: "c/" or "c." (v3 default encoding), "" (v2)
    separator: str  # between the indices: "." or "/"
    zero_d_key: str  # the key of a 0-d array's one chunk: "0" (v2) or "c" (v3 default)
    # Why the values of stored chunks are not the array's though they decode (a Zarr v2 order neither "C" nor "F" on
    # chunks of more than one dimension: decoded as "C"); None when they are.
    layout_problem: str | None = None

    def key(self, index: tuple[int, ...]) -> str:
        """The chunk key relative to the array, for the chunk at grid `index`."""
        if not index:
            return self.zero_d_key
        return self.key_lead + self.separator.join(str(i) for i in index)


def plan(metadata: Mapping[str, Any], zarr_format: int, prefix: str, dtype: np.dtype | None, path: str) -> ArrayPlan:
    """How to read the array `metadata` describes, stored below `prefix`.

    Raises NotDecoded for codecs, layouts or data types this module does not read (never a fallback to
    zarr-python), NodeError for metadata that does not describe a readable array.
    """
    if dtype is None:
        raise NotDecoded(f"{path}: not decoded: its data type is not one this tool reads")
    key_prefix = f"{prefix}/" if prefix else ""
    if zarr_format == 3:
        return _plan_v3(metadata, key_prefix, dtype, path)
    return _plan_v2(metadata, key_prefix, dtype, path)


def _plan_v2(meta: Mapping[str, Any], key_prefix: str, dtype: np.dtype, path: str) -> ArrayPlan:
    shape, chunks = _grid(meta.get("shape"), meta.get("chunks"), path)
    separator = meta.get("dimension_separator") or "."
    if separator not in (".", "/"):
        raise NotDecoded(f"{path}: not decoded: dimension_separator {separator!r}")
    # `order` lays out the bytes within a chunk; their number, and so what the codecs decode, does not depend on it.
    # Any other order (zarr.array.order reports it) is decoded as "C": exact for chunks of one dimension, where every
    # order is the same; otherwise the chunks' decoding is checked and their values are not read as the array's.
    order = meta.get("order", "C")
    layout_problem = None
    if order not in ("C", "F"):
        if len(chunks) > 1:
            layout_problem = f'{path}: order {order!r} is neither "C" nor "F": the chunk layout is unknown; values not read'
        meta = {**meta, "order": "C"}
    codec = decode.v2_codec(meta, dtype, chunks, path)
    fill = fill_value(meta.get("fill_value"), dtype, codec.object_codec, v3=False)
    return ArrayPlan(path, shape, dtype, chunks, codec, fill, key_prefix, "", separator, "0", layout_problem)


def _plan_v3(meta: Mapping[str, Any], key_prefix: str, dtype: np.dtype, path: str) -> ArrayPlan:
    for key in set(meta) - V3_KEYS:
        value = meta[key]
        if not (isinstance(value, dict) and value.get("must_understand") is False):
            raise NotDecoded(f"{path}: not decoded: zarr.json has {key!r}, which may change how chunks are read")
    # An empty list, or an empty object (not the list zarr3.array.storage-transformers-extension asks for), names no
    # transformer: zarr-python 3 (`parse_storage_transformers`) reads any empty iterable as none, and zarrs is given
    # the metadata zarr-python parsed. Both read such an array's chunks as stored.
    transformers = meta.get("storage_transformers")
    if transformers is not None and not (isinstance(transformers, (list, dict)) and not transformers):
        raise NotDecoded(f"{path}: not decoded: storage_transformers are not read")
    grid = meta.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("name") != "regular" or not isinstance(grid.get("configuration"), dict):
        name = grid.get("name") if isinstance(grid, dict) else grid
        raise NotDecoded(f"{path}: not decoded: chunk grid {name!r} is not a regular grid")
    shape, chunks = _grid(meta.get("shape"), grid["configuration"].get("chunk_shape"), path)
    lead, separator, zero_d = _v3_key_encoding(meta.get("chunk_key_encoding"), path)
    codec = decode.v3_codec(meta.get("codecs"), dtype, chunks, path)
    object_codec = codec.object_codec or (codec.sharding.inner.object_codec if codec.sharding else None)
    fill = fill_value(meta.get("fill_value"), dtype, object_codec, v3=True)
    return ArrayPlan(path, shape, dtype, chunks, codec, fill, key_prefix, lead, separator, zero_d)


def _grid(shape: Any, chunks: Any, path: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    def count(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if not (
        isinstance(shape, list)
        and isinstance(chunks, list)
        and len(shape) == len(chunks)
        and all(count(s) and s >= 0 for s in shape)
        and all(count(c) and c > 0 for c in chunks)
    ):
        raise NodeError(f"{path}: shape {shape!r} and chunks {chunks!r} do not describe a chunk grid; data cannot be read")
    return tuple(shape), tuple(chunks)


def _v3_key_encoding(encoding: Any, path: str) -> tuple[str, str, str]:
    """(lead, separator, key of a 0-d array's chunk) for the v3 chunk key encoding."""
    name = encoding.get("name") if isinstance(encoding, dict) else encoding
    config = encoding.get("configuration", {}) if isinstance(encoding, dict) else {}
    if isinstance(config, dict):
        if name == "default" and config.get("separator", "/") in ("/", "."):
            separator = config.get("separator", "/")
            return "c" + separator, separator, "c"
        if name == "v2" and config.get("separator", ".") in ("/", "."):
            return "", config.get("separator", "."), "0"
    raise NotDecoded(f"{path}: not decoded: chunk key encoding {encoding!r}")


# --- fill values --------------------------------------------------------------------------------------------


def fill_value(value: Any, dtype: np.dtype, object_codec: str | None, v3: bool) -> Fill:
    """The stored fill value as a scalar of `dtype`, as zarr-python reads it (null: the dtype's zero, NaT, "")."""
    try:
        parsed = _fill(value, dtype, object_codec, v3)
    except (TypeError, ValueError, OverflowError, binascii.Error) as exc:
        return Fill(_zero(dtype), f"fill_value {value!r} is not a value of {dtype} ({exc})")
    if parsed is _UNUSABLE:
        return Fill(_zero(dtype), f"fill_value {value!r} is not a value of {dtype}")
    return Fill(parsed)


_UNUSABLE = object()  # what `_fill` answers for a stored value that is no value of the dtype


def _zero(dtype: np.dtype) -> Any:
    return None if dtype.hasobject else np.zeros((), dtype=dtype)[()]


def _fill(value: Any, dtype: np.dtype, object_codec: str | None, v3: bool) -> Any:
    """The stored fill_value as a value of `dtype` (None: the dtype's zero or NaT), or _UNUSABLE."""
    kind = dtype.kind
    if dtype.hasobject:
        return _object_fill(value, object_codec)
    if value is None:
        return np.array("NaT", dtype=dtype)[()] if kind in "mM" else _zero(dtype)
    if kind == "b":
        return np.bool_(value) if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)) else _UNUSABLE
    if isinstance(value, bool):
        return _UNUSABLE
    if kind in "iu":
        return _int_fill(value, dtype)
    if kind == "f":
        return _float(value, dtype, v3)
    if kind == "c":
        return _complex_fill(value, dtype, v3)
    if kind in "mM":
        if value == "NaT":
            return np.array("NaT", dtype=dtype)[()]
        return np.array(value, dtype=np.int64).astype(dtype)[()] if isinstance(value, int) else _UNUSABLE
    if kind == "U":
        return dtype.type(value) if isinstance(value, str) and len(value) <= dtype.itemsize // 4 else _UNUSABLE
    if kind in "SV":
        return _bytes_fill(value, dtype, v3)
    return _UNUSABLE


def _object_fill(value: Any, object_codec: str | None) -> Any:
    if object_codec in ("json2", "pickle"):  # zarr-python 2 keeps the JSON value as it is (np.array(v, dtype=object))
        return value
    if value is None:
        return "" if object_codec == "vlen-utf8" else b""
    if object_codec == "vlen-bytes":
        return value.encode("utf-8") if isinstance(value, str) else _UNUSABLE
    return value if isinstance(value, str) else _UNUSABLE if isinstance(value, (list, dict)) else str(value)


def _int_fill(value: Any, dtype: np.dtype) -> Any:
    if not isinstance(value, int):
        return _UNUSABLE
    info = np.iinfo(dtype)
    return dtype.type(value) if info.min <= value <= info.max else _UNUSABLE


def _complex_fill(value: Any, dtype: np.dtype, v3: bool) -> Any:
    if not (isinstance(value, list) and len(value) == 2):
        return _UNUSABLE
    part = np.dtype(f"{dtype.byteorder}f{dtype.itemsize // 2}")
    real, imag = _float(value[0], part, v3), _float(value[1], part, v3)
    return _UNUSABLE if real is _UNUSABLE or imag is _UNUSABLE else dtype.type(complex(real, imag))


def _bytes_fill(value: Any, dtype: np.dtype, v3: bool) -> Any:
    if isinstance(value, list) and v3:  # raw bytes as the v3 spec writes them: one integer per byte
        if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in value):
            return _UNUSABLE
        raw = bytes(value)
    elif isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:  # binascii.Error: not base64
            return _UNUSABLE
    else:
        return _UNUSABLE
    if len(raw) > dtype.itemsize or (dtype.kind == "V" and len(raw) != dtype.itemsize):
        return _UNUSABLE
    return np.frombuffer(raw.ljust(dtype.itemsize, b"\0"), dtype=dtype)[0]


def _float(value: Any, dtype: np.dtype, v3: bool) -> Any:
    if isinstance(value, bool):
        return _UNUSABLE
    if isinstance(value, str) and value in FLOAT_NAMES:
        return dtype.type(FLOAT_NAMES[value])
    if isinstance(value, str) and v3 and value.startswith("0x"):
        try:
            bits = int(value, 16)
        except ValueError:  # not hexadecimal after 0x
            return _UNUSABLE
        if bits >> (8 * dtype.itemsize):
            return _UNUSABLE
        return np.array(bits, dtype=f"<u{dtype.itemsize}").view(f"<f{dtype.itemsize}").astype(dtype)[()]
    if isinstance(value, (int, float)):
        with np.errstate(over="ignore"):
            converted = dtype.type(value)
        # A finite value that the dtype cannot hold is no value of it.
        return converted if not math.isfinite(value) or np.isfinite(converted) else _UNUSABLE
    return _UNUSABLE


# --- reading ------------------------------------------------------------------------------------------------


def stored_rows(kv: KeyValueStore, plan: ArrayPlan) -> list[int] | None:
    """The sorted axis-0 grid indices of the chunks stored for the array, from the store's listing.

    None when the store is not listed (its server gives no listings, or the run lists nothing: the listings are
    then what its consolidated metadata names, no chunk): every block is then read. A store that lists is taken
    at its word, as the chunk key rules take it: a folder it does not list holds no chunk (an array declaring
    2**63 elements and storing none is read as its fill value without a request per chunk).
    """
    if not kv.lists:
        return None
    prefix = plan.key_prefix.rstrip("/")
    if plan.key_lead and plan.separator == "/":
        prefix = f"{prefix}/{plan.key_lead.rstrip('/')}" if prefix else plan.key_lead.rstrip("/")
        lead = ""
    else:
        lead = plan.key_lead
    keys, dirs = kv.list_dir(prefix)
    if kv.unlisted(prefix) is not None:
        return None  # its listing failed: every block is read, each chunk asked for by its key
    names = keys + dirs if plan.separator == "/" else keys
    found: set[int] = set()
    for name in names:
        if not name.startswith(lead):
            continue
        parts = name[len(lead) :].split(plan.separator)
        # A key with "." between its indices names them all: one with another count is no chunk of this array.
        if plan.separator != "/" and len(parts) != max(1, len(plan.shape)):
            continue
        if parts[0].isdigit() and parts[0].isascii():
            found.add(int(parts[0]))
    return sorted(found)


# An array whose chunk rows hold more chunks than this (on the axes after the first) has its blocks read only the
# chunks the store's listing names there (`stored_by_row`), the rest set to the fill value at once: a row of 2**20
# declared chunks, one of them stored, was 2**20 lookups of a key (30 s), or as many requests over HTTP.
LISTED_ROW_CHUNKS = 1024

# For each axis-0 chunk index holding stored chunks: the positions of those chunks in the grid of the other axes
# (C order, sorted), from the store's listings (`stored_by_row`).
ByRow = Mapping[int, np.ndarray]


def chunk_grid(plan: ArrayPlan) -> tuple[int, ...]:
    """How many chunks the array has along each axis."""
    return tuple(-(-n // max(1, c)) for n, c in zip(plan.shape, plan.chunk_shape, strict=False))


def row_chunks(plan: ArrayPlan) -> int:
    """How many chunks one chunk row of the array holds (the chunks of the grid's axes after the first)."""
    return math.prod(chunk_grid(plan)[1:])


def stored_by_row(kv: KeyValueStore, plan: ArrayPlan) -> dict[int, np.ndarray] | None:
    """Where the chunks stored for the array lie, by chunk row (`ByRow`), from the store's listings: the array's
    folder (keys "0.5"), or its folders a level per axis (keys "c/0/5"). Names the listing left out (a symlink, a
    special file) count as stored, so that reading them meets what is wrong with them. None where the store is not
    listed, the array has one axis, or a folder cannot be listed."""
    if not kv.lists or len(plan.shape) < 2:
        return None
    grid = chunk_grid(plan)
    folder = plan.key_prefix.rstrip("/")
    if plan.separator == "/":
        keys = _nested_keys(kv, "/".join(p for p in (folder, plan.key_lead.rstrip("/")) if p), len(grid))
    else:
        keys = _flat_keys(kv, folder, plan.key_lead, plan.separator, len(grid))
    if keys is None:
        return None
    found: dict[int, list[int]] = {}
    for parts in keys:
        at = _grid_position(parts, grid)
        if at is not None:
            found.setdefault(at[0], []).append(at[1])
    return {row: np.unique(np.array(positions, dtype=np.int64)) for row, positions in found.items()}


def _names(kv: KeyValueStore, folder: str) -> tuple[list[str], list[str]] | None:
    """(keys, folders) in `folder`, the names its listing left out among the keys; None where it cannot be listed."""
    keys, dirs = kv.list_dir(folder)
    if kv.unlisted(folder) is not None:
        return None
    return list(keys) + sorted(kv.left_out(folder) or ()), dirs


def _flat_keys(kv: KeyValueStore, folder: str, lead: str, separator: str, ndim: int) -> list[list[str]] | None:
    """The index parts of the chunk keys in `folder` ("c.0.5", "0.5"), or None where it cannot be listed."""
    got = _names(kv, folder)
    if got is None:
        return None
    parts = (name[len(lead) :].split(separator) for name in got[0] if name.startswith(lead))
    return [p for p in parts if len(p) == ndim]


def _nested_keys(kv: KeyValueStore, base: str, ndim: int) -> list[list[str]] | None:
    """The index parts of the chunk keys below `base`, a folder per axis but the last ("0/5"), or None where a folder
    cannot be listed. Only folders named by digits are entered, `ndim` - 1 levels deep."""
    out: list[list[str]] = []
    stack: list[tuple[str, list[str]]] = [(base, [])]
    while stack:
        here, parts = stack.pop()
        got = _names(kv, here)
        if got is None:
            return None
        keys, dirs = got
        if len(parts) == ndim - 1:
            out.extend([*parts, name] for name in keys)
        else:
            stack.extend(("/".join(p for p in (here, d) if p), [*parts, d]) for d in dirs if d.isdigit() and d.isascii())
    return out


def _grid_position(parts: list[str], grid: tuple[int, ...]) -> tuple[int, int] | None:
    """(chunk row, position in the grid of the other axes) of the chunk a key's index parts name; None where they
    name none: only the key a reader asks for does (decimal digits, no leading zero, inside the grid)."""
    if not all(p.isdigit() and p.isascii() and str(int(p)) == p for p in parts):
        return None
    index = [int(p) for p in parts]
    if any(i >= g for i, g in zip(index, grid, strict=True)):
        return None
    return index[0], linear_index(index[1:], grid[1:])


def _listed_chunks(
    plan: ArrayPlan,
    out: np.ndarray,
    start: int,
    stop: int,
    chunk_rows: Sequence[int],
    by_row: ByRow,
    missing: list[str] | None = None,
) -> list[tuple[int, ...]]:
    """The chunks of the block's chunk rows that the listing names (`by_row`), in C order; `out` holds the fill value
    first where they are fewer than the rows hold (`missing` told why, where the fill value is no value of the
    dtype)."""
    rest = chunk_grid(plan)[1:]
    found: list[tuple[int, ...]] = []
    for row in chunk_rows:
        positions = by_row.get(row)
        if positions is not None and len(positions):
            others = zip(*(a.tolist() for a in np.unravel_index(positions, rest)), strict=True)
            found.extend((row, *index) for index in others)
    if len(found) < len(chunk_rows) * math.prod(rest):
        _fill_rows(plan, out, start, stop, missing)
    return found


def read_block(
    kv: KeyValueStore,
    plan: ArrayPlan,
    rows: tuple[int, int],
    stored: list[int] | None = None,
    fetched: Fetched | None = None,
    by_row: ByRow | None = None,
) -> Block:
    """Rows [start, stop) of the array, flattened in C order, with every stored chunk read for them. Thread-safe.

    `stored`: the axis-0 chunk indices holding stored chunks (`stored_rows`), when known: rows with none are the
    fill value as a broadcast view, whatever their number. `by_row` (`stored_by_row`), when given (a node asks for
    it where chunk rows hold more than LISTED_ROW_CHUNKS chunks): only the chunks it names are read. `fetched`:
    the block's chunks as `fetch_ahead` started fetching them (any it missed are read here). Raises NodeError for a
    key outside the store or a chunk that exists but cannot be read, for a chunk that is not stored when the fill
    value is no value of the dtype, and for a block too large to hold; a chunk that does not decode is listed with
    its problem instead. Where chunks not stored need a fill value that is no value of the dtype, or the plan's
    layout is unknown (`layout_problem`), the block's chunks are still read and decoded, and its `values_problem`
    says why its values are not the array's.
    """
    shape, chunks = plan.shape, plan.chunk_shape
    missing: list[str] = []  # why elements of chunks not stored are not the array's (a fill value not of the dtype)
    if not shape:  # 0-d: one element, one chunk
        out = np.empty((), dtype=plan.dtype)
        shards: list[ShardIndex] = []
        reads = _read_chunk(kv, plan, (), out, (), shards, missing=missing)
        return Block(0, out.reshape(-1), reads, tuple(shards), values_problem=_values_problem(plan, reads, missing))
    start, stop = max(0, rows[0]), min(rows[1], shape[0])  # as slicing would
    if stored is not None and stop > start and not stored_in(stored, chunks[0], (start, stop)):
        block = uniform_block(start * _row_elements(shape), plan.fill.value, plan.dtype, (stop - start) * _row_elements(shape))
        if plan.fill.problem is not None:
            why = f"{plan.path}: rows {start}..{stop} hold no stored chunk, and its {plan.fill.problem}; values not read"
            block = block._replace(values_problem=why)
        return block
    check_block_size(plan.path, shape, (start, stop), element_bytes(plan.dtype))
    out = np.empty((max(0, stop - start),) + shape[1:], dtype=plan.dtype)
    if stop <= start or not out.size:
        return Block(start * _row_elements(shape), out.reshape(-1))
    axes: list[Sequence[int]] = [_chunk_rows(plan, out, start, stop, stored, missing)]
    axes += [range(-(-n // c)) for n, c in zip(shape[1:], chunks[1:], strict=False)]
    check_chunk_count(plan.path, (start, stop), math.prod(len(a) for a in axes))
    listed = _listed_chunks(plan, out, start, stop, axes[0], by_row, missing) if by_row is not None else None

    def indexes() -> Iterable[tuple[int, ...]]:  # the block's chunks, gone through twice
        return listed if listed is not None else itertools.product(*axes)

    reads: list[ChunkRead] = []
    chunks_read = _fetch_together(kv, plan, indexes(), fetched)
    shards: list[ShardIndex] = []  # the index of each shard read, as stored (the zarr3 shard index rules check it)
    for index in indexes():
        # The part of this chunk inside the block, in block coordinates and in chunk coordinates.
        lo = [i * c for i, c in zip(index, chunks, strict=False)]
        hi = [min(low + c, n) for low, c, n in zip(lo, chunks, shape, strict=False)]
        lo[0], hi[0] = max(lo[0], start), min(hi[0], stop)
        rest = tuple(slice(low, high) for low, high in zip(lo[1:], hi[1:], strict=False))
        target = out[(slice(lo[0] - start, hi[0] - start), *rest)]
        inside = tuple(slice(low - i * c, high - i * c) for low, high, i, c in zip(lo, hi, index, chunks, strict=False))
        reads.extend(_read_chunk(kv, plan, index, target, inside, shards, chunks_read, missing))
    values_problem = _values_problem(plan, reads, missing)
    return Block(start * _row_elements(shape), out.reshape(-1), tuple(reads), tuple(shards), values_problem=values_problem)


def _values_problem(plan: ArrayPlan, reads: Sequence[ChunkRead], missing: Sequence[str]) -> str | None:
    """Why a block's values are not the array's though its chunks were read: the first chunk not stored whose fill
    value is no value of the dtype, or the plan's unknown layout where a chunk is stored; None when they are."""
    if missing:
        return missing[0]
    return plan.layout_problem if reads else None


# The stored bytes of a block's chunks, fetched while the caller went on: a call waits for them (`fetch_ahead`).
Fetched = Callable[[], Mapping[str, "bytes | None"]]


def fetch_ahead(
    kv: KeyValueStore, plan: ArrayPlan, rows: tuple[int, int], stored: list[int] | None = None, by_row: ByRow | None = None
) -> Fetched | None:
    """Start fetching the chunks `read_block(rows)` reads, where the store is remote (`kv.batched`): a scan then
    fetches the next blocks while it decodes this one, and waits on the network about once, not once per window of
    blocks. None where nothing is started (`read_block` reads the chunks itself)."""
    shape, chunks = plan.shape, plan.chunk_shape
    if not kv.batched or not shape:
        return None
    start, stop = max(0, rows[0]), min(rows[1], shape[0])
    if stop <= start:
        return None
    axes: list[Sequence[int]] = [_stored_chunk_rows(plan, start, stop, stored)]
    axes += [range(-(-n // c)) for n, c in zip(shape[1:], chunks[1:], strict=False)]
    if not 1 <= math.prod(len(a) for a in axes) <= MAX_CHUNKS_PER_BLOCK:
        return None
    indexes: Iterable[tuple[int, ...]] = itertools.product(*axes)
    if by_row is not None:  # the chunks read_block reads
        indexes = _listed_chunks(plan, np.empty(0, plan.dtype), start, stop, axes[0], by_row, [])
    keys = [plan.key_prefix + plan.key(index) for index in indexes]
    return kv.get_many_soon(keys, chunk_read_limit(plan))


def _fetch_together(
    kv: KeyValueStore, plan: ArrayPlan, indexes: Iterable[tuple[int, ...]], fetched: Fetched | None = None
) -> Mapping[str, bytes | None]:
    """The stored bytes of a block's chunks, fetched concurrently where the store is remote (`kv.batched`), so a
    block costs one round trip rather than one per chunk (or none, where `fetched` holds them already); empty
    otherwise (each chunk is then read in turn).

    The bytes held are the block's chunks as stored: no more than the block itself, or a little more if they
    do not compress. Raises NodeError when the store fails to answer.
    """
    if not kv.batched:
        return {}
    keys = [plan.key_prefix + plan.key(index) for index in indexes]
    if len(keys) < 2 and fetched is None:
        return {}
    try:
        return fetched() if fetched is not None else kv.get_many(keys, chunk_read_limit(plan))
    except Exception as exc:  # a remote store's failure (its message carries no credentials)
        raise NodeError(f"{plan.path}: cannot read chunks {keys[0]}... ({exc})") from None


def _chunk_rows(
    plan: ArrayPlan, out: np.ndarray, start: int, stop: int, stored: list[int] | None, missing: list[str]
) -> Sequence[int]:
    """The axis-0 chunk indices to read for rows [start, stop): all of them, or, where the listing of stored chunks
    names fewer, only those (`out` then holds the fill value elsewhere, `missing` told where it is no value of the
    dtype): a block of 2**22 chunks of one row with one stored is one read, not 2**22 lookups."""
    rows = range(start // plan.chunk_shape[0], (stop - 1) // plan.chunk_shape[0] + 1)
    present = _stored_chunk_rows(plan, start, stop, stored)
    if len(present) == len(rows):
        return rows
    _fill_rows(plan, out, start, stop, missing)
    return present


def _fill_rows(plan: ArrayPlan, out: np.ndarray, start: int, stop: int, missing: list[str] | None) -> None:
    """The fill value in `out`, rows [start, stop) holding chunks not stored; `missing` told why where it is no value
    of the dtype (NodeError where `missing` is None)."""
    if plan.fill.problem is not None:
        why = f"{plan.path}: rows {start}..{stop} hold chunks not stored, and its {plan.fill.problem}; values not read"
        if missing is None:
            raise NodeError(why)
        missing.append(why)
    out[...] = plan.fill.value


def _stored_chunk_rows(plan: ArrayPlan, start: int, stop: int, stored: list[int] | None) -> Sequence[int]:
    """The axis-0 chunk indices of rows [start, stop) that hold stored chunks: all of them where `stored` (the
    listing's) is None."""
    rows = range(start // plan.chunk_shape[0], (stop - 1) // plan.chunk_shape[0] + 1)
    if stored is None:
        return rows
    return stored[bisect.bisect_left(stored, rows.start) : bisect.bisect_left(stored, rows.stop)]


def chunk_read_limit(plan: ArrayPlan) -> int:
    """The most stored bytes one chunk may hold to be read: what its codecs can make of a chunk (never under
    CHUNK_READ_FLOOR, so a chunk past that bound still reaches the decoder, which says what is wrong with it), and
    never more than MAX_VALUE_BYTES."""
    return min(MAX_VALUE_BYTES, max(plan.codec.stored_limit, CHUNK_READ_FLOOR))


def _row_elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def _read_chunk(
    kv: KeyValueStore,
    plan: ArrayPlan,
    index: tuple[int, ...],
    target: np.ndarray,
    inside: tuple[slice, ...],
    shards: list[ShardIndex],
    fetched: Mapping[str, bytes | None] | None = None,
    missing: list[str] | None = None,
) -> tuple[ChunkRead, ...]:
    """Fill `target` (this chunk's part of the block) from the chunk at grid `index`; its ChunkRead if stored.

    A chunk that does not decode is the fill value, its ChunkRead naming the problem; so is one whose pickle calls
    a class (`PickleNotRebuilt`), its ChunkRead saying why it is not read (`unread`) and naming the global (`calls`).
    `fetched` holds chunks already fetched together (`_fetch_together`); one not in it is read here. `missing` is
    told why, where a chunk (or inner chunk) is not stored and the fill value is no value of the dtype (NodeError
    where `missing` is None).
    """
    key = plan.key(index)
    where = f"{plan.path}: chunk {key}"
    full, limit = plan.key_prefix + key, chunk_read_limit(plan)
    try:
        # Fetched with the block's others where the store is remote (None: not stored; a remote store has no
        # unreadable-but-stored keys); read here otherwise, or when it is larger than a chunk may be.
        got = fetched.get(full, False) if fetched else False
        fetched_ok = got is None or (isinstance(got, (bytes, bytearray)) and len(got) <= limit)
        raw = got if fetched_ok else get_chunk(kv, full, plan.path, key, limit)
    except ValueTooLarge as exc:
        target[...] = plan.fill.value
        return (ChunkRead(key, f"{plan.path}: chunk {exc}"),)
    if raw is None:
        _fill_unstored(plan, key, target, missing)
        return ()
    try:
        if plan.codec.sharding is not None:
            problem = _read_shard(plan, raw, where, index, target, inside, shards, missing)
        else:
            _decode_into(plan.codec, raw, where, target, inside)
            problem = None
    except ChunkError as exc:
        target[...] = plan.fill.value
        problem = str(exc)
        if plan.codec.sharding is not None and not any(s.key == key for s in shards):  # the whole shard did not decode
            shards.append(ShardIndex(key, len(raw), None, problem.removeprefix(f"{where} "), 0, 0, plan.codec.sharding.per_shard))
    except PickleNotRebuilt as exc:  # whole, but its pickle calls a class that is never rebuilt: not read, not damaged
        target[...] = plan.fill.value
        return (ChunkRead(key, unread=str(exc), calls=exc.calls),)
    return (ChunkRead(key, problem),)


def _fill_unstored(plan: ArrayPlan, key: str, target: np.ndarray, missing: list[str] | None) -> None:
    """The fill value in `target`, the place of a chunk (or inner chunk) that is not stored. Where the stored fill value
    is no value of the dtype, `target` holds its zero stand-in and `missing` is told why (NodeError where it is None)."""
    if plan.fill.problem is not None:
        why = f"{plan.path}: chunk {key} is not stored, and its {plan.fill.problem}; values not read"
        if missing is None:
            raise NodeError(why)
        missing.append(why)
    target[...] = plan.fill.value


def _decode_into(codec: ChunkCodec, raw: Any, where: str, target: np.ndarray, inside: tuple[slice, ...]) -> None:
    """Decode one chunk into `target`: straight into its bytes when the chunk is whole and contiguous there."""
    if codec.writes_into and target.shape == codec.shape and target.flags.c_contiguous:
        decode.decode_chunk(codec, raw, where, target.reshape(-1).view(np.uint8))
        return
    target[...] = decode.decode_chunk(codec, raw, where)[inside]


def _read_shard(
    plan: ArrayPlan,
    raw: Any,
    where: str,
    index: tuple[int, ...],
    target: np.ndarray,
    inside: tuple[slice, ...],
    shards: list[ShardIndex],
    missing: list[str] | None = None,
) -> str | None:
    """Fill `target` from the inner chunks of one shard; the first inner chunk's problem, or None.

    Only inner chunks that overlap `inside` (the shard's part of the block) are decoded; one that does not
    decode is the fill value, and the others are still read.
    """
    sharding = plan.codec.sharding
    assert sharding is not None
    data = decode.shard_bytes(plan.codec, raw, where)
    shards.append(zarr_v3.shard_index_record(plan.key(index), data, sharding))
    pairs = sharding.index(data, where)
    inner_shape = sharding.inner.shape
    first: str | None = None
    # The inner chunks overlapping `inside`, by their index in the shard, in C order; those the index says are not
    # stored read as the fill value, written over the whole part at once: a shard of 4 million one-element inner
    # chunks, 100 of them stored, took 30 s when each empty one was filled in its turn.
    ranges = [np.arange(s.start // c, -(-s.stop // c)) for s, c in zip(inside, inner_shape, strict=False)]
    overlapping = np.ravel_multi_index(np.ix_(*ranges), sharding.per_shard).reshape(-1)
    empty = (pairs[overlapping, 0] == decode.SHARD_EMPTY) & (pairs[overlapping, 1] == decode.SHARD_EMPTY)
    if empty.any():
        name = ".".join(map(str, np.unravel_index(int(overlapping[np.argmax(empty)]), sharding.per_shard)))
        _fill_unstored(plan, f"{plan.key(index)}, inner chunk {name}", target, missing)
    for at in overlapping[~empty].tolist():
        inner = tuple(int(i) for i in np.unravel_index(at, sharding.per_shard))
        lo = [max(s.start, i * c) for s, i, c in zip(inside, inner, inner_shape, strict=False)]
        hi = [min(s.stop, (i + 1) * c) for s, i, c in zip(inside, inner, inner_shape, strict=False)]
        part = target[tuple(slice(low - s.start, high - s.start) for low, high, s in zip(lo, hi, inside, strict=False))]
        offset, nbytes = (int(x) for x in pairs[at])
        name = ".".join(map(str, inner))
        cut = tuple(slice(low - i * c, high - i * c) for low, high, i, c in zip(lo, hi, inner, inner_shape, strict=False))
        try:
            _decode_into(sharding.inner, data[offset : offset + nbytes], f"{where}, inner chunk {name}", part, cut)
        except ChunkError as exc:
            part[...] = plan.fill.value
            first = first or str(exc)
    return first


def get_chunk(kv: KeyValueStore, key: str, path: str, shown: str | None = None, limit: int = MAX_VALUE_BYTES) -> bytes | None:
    """The chunk's stored bytes; None only when the chunk is not stored (it then reads as the fill value).

    Raises ValueTooLarge for a chunk of more than `limit` stored bytes (never read), NodeError for a key that leads
    outside the store or exists but cannot be read (`get` answers None for those too: they must not pass for
    unstored chunks).
    """
    shown = shown or key
    try:
        raw = kv.get_bounded(key, limit)
    except ValueTooLarge:
        raise
    except Exception as exc:  # a remote store's failure (its message carries no credentials)
        raise NodeError(f"{path}: cannot read chunk {shown} ({exc})") from None
    if raw is not None:
        return raw
    if isinstance(kv, DirectoryStore):
        full = kv.resolve(key)
        if full is None:
            raise NodeError(f"{path}: chunk {shown} leads outside the store; not read")
        if kv.stored(key):
            raise NodeError(f"{path}: chunk {shown} exists but cannot be read")
        folder = key
        while folder:  # in a folder that could not be listed, a file may be there unseen (no permission to see it)
            folder = folder.rpartition("/")[0]
            why = kv.unlisted(folder)
            if why is not None:
                raise NodeError(f"{path}: chunk {shown} cannot be read: its folder {why}")
    elif isinstance(kv, ZipStore) and key in kv._entries:
        raise NodeError(f"{path}: chunk {shown} exists in the zip file but cannot be read")
    return None
