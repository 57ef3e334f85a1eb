"""Zarr v3 `zarr.json` read as the spec lays it out (extension definitions, the regular grid, chunk keys), and the
shard indexes of `sharding_indexed` arrays, read from the store a few bytes per shard.

Pure functions over the parsed document, shared by the primitives (`spec_validate/checks/zarr_v3.py`) and the backend
(`ZarrNode.read_shard_indexes`). Nothing here decodes chunk data: a shard index is read, its checksums verified by
the codec module (`spec_validate/codecs/decode.py`) and its (offset, nbytes) pairs handed to the `shard_index_problems`
kernel as stored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from itertools import product
from typing import Any, NamedTuple

import numpy as np

from spec_validate.codecs.decode import index_codecs
from spec_validate.kernels.block import ShardIndex
from spec_validate.storage.keyvalue import KeyValueStore

SEPARATOR_DEFAULTS = {"default": "/", "v2": "."}  # chunk key encoding -> its separator when none is configured
SHARD_PAIR_BYTES = 16  # offset and nbytes, two uint64
EMPTY_PAIR = np.array([2**64 - 1, 2**64 - 1], dtype=np.uint64)  # an empty inner chunk's (offset, nbytes)
CRC32C_BYTES = 4


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def extension(value: Any) -> tuple[Any, Any, Mapping[str, Any] | None]:
    """(name, configuration, the object) of an extension definition: a short-hand name or an object."""
    if type(value) is dict:  # what JSON parses to: no abstract class check (rules ask this of every codec, often)
        return value.get("name"), value.get("configuration"), value
    if isinstance(value, str):
        return value, None, None
    if isinstance(value, Mapping):
        return value.get("name"), value.get("configuration"), value
    return None, None, None


def configuration(value: Any) -> Mapping[str, Any]:
    """An extension's configuration as a mapping ({} when absent or not an object: other rules report that)."""
    config = extension(value)[1]
    return config if isinstance(config, Mapping) else {}


def element_codec_names(codecs: Any) -> list[Any]:
    """The names of the codecs that encode an array's elements: those of the list `codecs`, each `sharding_indexed`
    followed by the codecs of its inner chunks (nested sharding too); not a shard's index codecs, which encode only
    its index. A list that is none gives none."""
    names: list[Any] = []
    for codec in codecs if isinstance(codecs, list) else ():
        name, config, _ = extension(codec)
        names.append(name)
        if name == "sharding_indexed" and isinstance(config, Mapping):
            names.extend(element_codec_names(config.get("codecs")))
    return names


def array_shape(meta: Mapping[str, Any]) -> tuple[int, ...] | None:
    shape = meta.get("shape")
    if isinstance(shape, list) and all(is_int(s) and s >= 0 for s in shape):
        return tuple(shape)
    return None


def unknown_grid(meta: Mapping[str, Any]) -> str | None:
    """The name of the array's chunk grid when it is an extension this tool does not read (`rectilinear`, which
    zarr-python writes when asked to): the clauses that need the grid cannot be checked. None for the regular grid,
    and for a chunk_grid without a name (the extension rules report that)."""
    name = extension(meta.get("chunk_grid"))[0]
    return name if isinstance(name, str) and name != "regular" else None


def grid_not_read(name: str) -> str:
    """Why what needs an array's chunk grid is not checked, for a grid `unknown_grid` names."""
    return f"chunk grid {name!r} is an extension this tool does not read"


def regular_chunk_shape(meta: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The regular grid's chunk shape when the grid is usable (one positive length per dimension), else None."""
    grid = meta.get("chunk_grid")
    shape = array_shape(meta)
    if not isinstance(grid, Mapping) or grid.get("name") != "regular" or shape is None:
        return None
    chunks = configuration(grid).get("chunk_shape")
    if isinstance(chunks, list) and len(chunks) == len(shape) and all(is_int(c) and c > 0 for c in chunks):
        return tuple(chunks)
    return None


class KeyForm(NamedTuple):
    """How an array's chunk keys are formed: chunk (i, j) is `prefix` + sep.join(indices); a 0-d array's is `scalar`."""

    prefix: str
    separator: str
    scalar: str
    grid: tuple[int, ...] | None  # chunks per dimension; None when the grid is not a usable regular grid

    def key(self, index: tuple[int, ...]) -> str:
        return self.prefix + self.separator.join(str(i) for i in index) if index else self.scalar

    def parse(self, key: str, ndim: int) -> tuple[int, ...] | None:
        """The grid indices a stored key names, or None when the encoding forms no such key."""
        if ndim == 0:
            return () if key == self.scalar else None
        if not key.startswith(self.prefix):
            return None
        parts = key[len(self.prefix) :].split(self.separator)
        if len(parts) != ndim or not all(p.isascii() and p.isdigit() and (p == "0" or not p.startswith("0")) for p in parts):
            return None
        return tuple(int(p) for p in parts)

    def example(self, ndim: int) -> str:
        return self.key((0,) * ndim)


def key_form(meta: Mapping[str, Any]) -> KeyForm | None:
    """The chunk key form of a `default` or `v2` encoding with a usable separator; None for anything else."""
    name, config, _ = extension(meta.get("chunk_key_encoding"))
    if name not in SEPARATOR_DEFAULTS or not (config is None or isinstance(config, Mapping)):
        return None
    sep = (config or {}).get("separator", SEPARATOR_DEFAULTS[name])
    if sep not in ("/", "."):
        return None
    shape, chunks = array_shape(meta), regular_chunk_shape(meta)
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks, strict=False)) if shape is not None and chunks is not None else None
    return KeyForm("c" + sep, sep, "c", grid) if name == "default" else KeyForm("", sep, "0", grid)


# --- shard indexes ----------------------------------------------------------------------------------------------


class ShardLayout(NamedTuple):
    """Where a sharded array's shards are and how each one's index is stored."""

    keys: KeyForm  # shard keys (the outer chunk grid's)
    shard_shape: tuple[int, ...]  # the outer chunk shape
    per_shard: tuple[int, ...]  # inner chunks along each dimension of a shard (after any transpose before sharding)
    at_start: bool  # index_location "start" (else "end")
    byte_order: str  # "<" or ">": the index's uint64 as the bytes codec writes it
    checksums: int  # crc32c codecs after the index's bytes codec
    after: tuple[str, ...] = ()  # codecs after sharding_indexed, which encode the whole shard (index included)

    @property
    def index_bytes(self) -> int:
        """The encoded index's size: 16 bytes per inner chunk, plus 4 per crc32c."""
        return SHARD_PAIR_BYTES * math.prod(self.per_shard) + CRC32C_BYTES * self.checksums


def shard_layout(meta: Mapping[str, Any]) -> ShardLayout | str:
    """The layout of a sharded array's shards, or why this tool does not read its shard indexes.

    Read: a regular grid, the default or v2 chunk key encoding, no storage transformers, codecs that are
    transposes then `sharding_indexed` (codecs after it encode the whole shard, index included: `after` names
    them, and the shard is then decoded whole before its index is read), and index codecs `bytes` (with an
    endian) then crc32c codecs (absent: those the readers default to, `codecs.decode.DEFAULT_INDEX_CODECS`).
    """
    shape, chunks, keys = array_shape(meta), regular_chunk_shape(meta), key_form(meta)
    grid = unknown_grid(meta)
    if grid is not None:
        return grid_not_read(grid)
    if shape is None or chunks is None or keys is None:
        return "the shape, regular chunk grid or chunk key encoding is unusable"
    if meta.get("storage_transformers"):
        return "storage transformers may store shards under other keys"
    codecs = meta.get("codecs")
    names = [extension(c)[0] for c in codecs] if isinstance(codecs, list) else []
    if "sharding_indexed" not in names:
        return "the array -> bytes codec is not sharding_indexed"
    at = names.index("sharding_indexed")
    shard = list(chunks)
    for codec in codecs[:at]:
        order = configuration(codec).get("order")
        if extension(codec)[0] != "transpose" or not (
            isinstance(order, list) and sorted(order) == list(range(len(shard))) and all(is_int(o) for o in order)
        ):
            return f"codecs before sharding_indexed are not transposes: {names[:at]}"
        shard = [shard[o] for o in order]
    config = configuration(codecs[at])
    inner = config.get("chunk_shape")
    if not (
        isinstance(inner, list)
        and len(inner) == len(shard)
        and all(is_int(c) and c > 0 for c in inner)
        and all(s % c == 0 for s, c in zip(shard, inner, strict=False))
    ):
        return f"sharding chunk_shape {inner!r} does not divide the shard shape {shard}"
    location = config.get("index_location", "end")
    if location not in ("start", "end"):
        return f"index_location {location!r} is neither start nor end"
    index = index_codecs(config)  # absent: read as zarr-python 3 and zarrs read it (codecs.decode.DEFAULT_INDEX_CODECS)
    index_names = [extension(c)[0] for c in index] if isinstance(index, list) else None
    if not index_names or index_names[0] != "bytes" or any(n != "crc32c" for n in index_names[1:]):
        return f"index_codecs {index_names!r} are not bytes then crc32c"
    endian = configuration(index[0]).get("endian")
    if endian not in ("little", "big"):
        return f"the index's bytes codec has endian {endian!r}, not little or big"
    return ShardLayout(
        keys,
        tuple(chunks),
        tuple(s // c for s, c in zip(shard, inner, strict=False)),
        location == "start",
        "<" if endian == "little" else ">",
        len(index_names) - 1,
        tuple(names[at + 1 :]),
    )


def shard_cells(layout: ShardLayout, start: int, stop: int) -> list[tuple[int, ...]]:
    """Grid indices of the shards holding rows [start, stop) along axis 0 (every shard across the other axes)."""
    grid = layout.keys.grid or ()
    if not grid:
        return [()]
    rows = layout.shard_shape[0]
    first, last = start // rows, min(grid[0], -(-stop // rows))
    return [(i, *rest) for i in range(first, last) for rest in product(*(range(g) for g in grid[1:]))]


def read_shard_index(
    kv: KeyValueStore,
    prefix: str,
    index: tuple[int, ...],
    layout: ShardLayout,
    unwrap: Callable[[bytes, str], np.ndarray] | None = None,
) -> ShardIndex | None:
    """The index of the shard at grid `index` of the array stored below `prefix` (its pairs, checksums verified by
    the codec module); None when no shard is stored there.

    Reads only the index's bytes and the shard's size, unless codecs follow sharding_indexed (`layout.after`):
    the stored shard is then read whole and `unwrap` (the codec module, bounded) undoes those codecs first.
    """
    from spec_validate.codecs import decode as codecs  # with the first shard index read

    rel = layout.keys.key(index)
    key = f"{prefix}/{rel}" if prefix else rel
    size = layout.index_bytes
    where = f"shard {rel}"
    if layout.after:
        raw = kv.read(key)
        if raw is None:
            return None
        try:
            shard = unwrap(raw, where) if unwrap is not None else None
        except codecs.ChunkError as exc:
            return ShardIndex(
                rel, len(raw), None, f"does not decode through {list(layout.after)} ({exc})", 0, 0, layout.per_shard
            )
        if shard is None:
            raise codecs.NotDecoded(f"{where}: codecs {list(layout.after)} after sharding_indexed are not decoded")
        total = int(shard.nbytes)
        data = bytes(shard[:size] if layout.at_start else shard[max(0, total - size) :])
    else:
        part = kv.read_part(key, 0 if layout.at_start else -size, size)
        if part is None:
            return None
        data, total = part
    if total < size:
        return ShardIndex(rel, total, None, f"is {total} bytes, shorter than its {size}-byte index", 0, 0, layout.per_shard)
    begin, end = (size, total) if layout.at_start else (0, total - size)
    payload = codecs.bytes_of(data)
    try:
        for i in range(layout.checksums, 0, -1):  # each crc32c covers what the ones before it wrote
            exact = SHARD_PAIR_BYTES * math.prod(layout.per_shard) + CRC32C_BYTES * (i - 1)
            payload = codecs.Step("crc32c", {"location": "end"}, exact, exact).decode(payload, "its index")
    except codecs.ChunkError as exc:
        return ShardIndex(rel, total, None, str(exc), begin, end, layout.per_shard)
    pairs = payload.view(f"{layout.byte_order}u8").astype(np.uint64).reshape(-1, 2)
    return ShardIndex(rel, total, pairs, None, begin, end, layout.per_shard)


def read_shard_indexes(
    kv: KeyValueStore,
    prefix: str,
    layout: ShardLayout,
    start: int,
    stop: int,
    unwrap: Callable[[bytes, str], np.ndarray] | None = None,
) -> tuple[ShardIndex, ...]:
    """The indexes of the stored shards holding rows [start, stop) along axis 0, in grid (C) order."""
    found = (read_shard_index(kv, prefix, cell, layout, unwrap) for cell in shard_cells(layout, start, stop))
    return tuple(s for s in found if s is not None)


def shard_index_record(key: str, shard: np.ndarray, sharding: Any) -> ShardIndex:
    """The index of a shard whose bytes (`shard`, uint8, codecs after sharding_indexed undone) were read to decode its
    inner chunks, as the codec module's `Sharding` describes it: recorded with the block, so a --deep run checks the
    index without reading the shard again."""
    from spec_validate.codecs import decode as codecs

    size, total = sharding.index_bytes, int(shard.nbytes)
    if total < size:
        return ShardIndex(key, total, None, f"is {total} bytes, shorter than its {size}-byte index", 0, 0, sharding.per_shard)
    begin, end = (size, total) if sharding.at_start else (0, total - size)
    data = shard[:size] if sharding.at_start else shard[total - size :]
    try:
        for step in sharding.index_steps:
            data = step.decode(data, "its index")
    except codecs.ChunkError as exc:
        return ShardIndex(key, total, None, str(exc), begin, end, sharding.per_shard)
    pairs = np.ascontiguousarray(data).view(sharding.index_dtype).astype(np.uint64).reshape(-1, 2)
    return ShardIndex(key, total, pairs, None, begin, end, sharding.per_shard)
