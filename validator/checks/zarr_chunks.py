"""Zarr v2 chunk decoding (--deep): each stored chunk decodes, through allow-listed codecs, to one chunk's bytes."""

from __future__ import annotations

import io
import math
import struct
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from validator.checks.zarr_metadata import chunk_grid, stored_chunk_keys
from validator.nodes.base import Node, NodeError
from validator.primitive_api import Finding, NotApplicable, NotChecked, Options, Scope, check

# Codecs whose decoding runs no code from the store and builds no Python objects: compressors, byte and
# numeric filters, checksums. Anything else (pickle, json2, msgpack2, vlen-*, categorize, third-party
# codecs found through entry points) is never instantiated: the array is reported as not decoded.
COMPRESSORS = ("blosc", "zstd", "lz4", "gzip", "zlib", "bz2", "lzma")
FILTERS = ("delta", "shuffle", "bitround", "fixedscaleoffset", "quantize", "astype", "adler32", "crc32", "fletcher32")
DECODABLE = frozenset(COMPRESSORS + FILTERS)
STDLIB = ("zlib", "gzip", "bz2", "lzma")  # decompressed here with the standard library, bounded
# Keys of filter configurations naming a dtype: only numeric (and datetime) dtypes are decoded.
DTYPE_KEYS = ("dtype", "astype", "encode_dtype", "decode_dtype")
NUMERIC_KINDS = "biufcmM"
# A compressor's output may exceed one chunk's bytes only by the filters' widening (at most 16x, int8 to
# complex128) and checksums; anything larger is not decompressed (a decompression bomb is not held in memory).
WIDEST = 16
SLACK = 1024


class ChunkError(Exception):
    """A stored chunk that does not decode."""


def _codecs(node: Node) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The array's compressor and filters, each a codec configuration on the allow-list; else NotApplicable."""
    meta = node.metadata
    if not isinstance(meta, dict):
        raise NotChecked(f"{node.path} has no readable metadata document")
    compressor, filters = meta.get("compressor"), meta.get("filters") or []
    if not isinstance(filters, list) or not (compressor is None or isinstance(compressor, dict)):
        raise NotChecked(f"{node.path}: compressor or filters are unusable; not decoded")
    named = [(f"filters[{i}]", f) for i, f in enumerate(filters)]
    if compressor is not None:
        named.insert(0, ("compressor", compressor))
    for where, config in named:
        codec_id = config.get("id") if isinstance(config, dict) else None
        if codec_id not in DECODABLE:
            raise NotChecked(f"{node.path}: not decoded: {where} codec {codec_id!r} is not on the allow-list "
                                f"({', '.join(sorted(DECODABLE))})")
        for key in DTYPE_KEYS:
            if key in config and not _numeric(config[key]):
                raise NotChecked(f"{node.path}: not decoded: {where} has {key} {config[key]!r}, not a numeric dtype")
    return compressor, filters


def _numeric(spec: Any) -> bool:
    try:
        return np.dtype(spec).kind in NUMERIC_KINDS
    except (TypeError, ValueError):
        return False


def _read_bounded(stream: Any, limit: int) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise ChunkError(f"decompresses to more than {limit} bytes")
    return data


def _declared(size: int | None, limit: int, codec_id: str) -> None:
    if size is not None and size > limit:
        raise ChunkError(f"{codec_id} header declares {size} decompressed bytes, more than {limit}")


def _zstd_content_size(buf: bytes) -> int | None:
    """The frame content size a Zstandard frame header states, or None when absent (the decoder then reports)."""
    if len(buf) < 6 or struct.unpack_from("<I", buf)[0] != 0xFD2FB528:
        return None
    descriptor = buf[4]
    single_segment = (descriptor >> 5) & 1
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
    width = (single_segment, 2, 4, 8)[descriptor >> 6]
    if width == 0 or len(buf) < start + width:
        return None
    return int.from_bytes(buf[start:start + width], "little") + (256 if width == 2 else 0)


def decompress(config: Mapping[str, Any], raw: bytes, limit: int, codec: Any = None) -> bytes:
    """`raw` through the compressor `config` (or its numcodecs instance `codec`), holding at most `limit` bytes out."""
    codec_id = config["id"]
    # bz2, gzip and lzma are imported here, with --deep only: they cost start-up time for every other run.
    try:
        if codec_id == "zlib":
            d = zlib.decompressobj()
            out = d.decompress(raw, limit + 1)
            if len(out) > limit:
                raise ChunkError(f"decompresses to more than {limit} bytes")
            if not d.eof:
                raise ChunkError("zlib: the stream is truncated")
            return out
        if codec_id == "gzip":
            import gzip

            with gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb") as f:
                return _read_bounded(f, limit)
        if codec_id == "bz2":
            import bz2

            with bz2.BZ2File(io.BytesIO(raw), mode="rb") as f:
                return _read_bounded(f, limit)
        if codec_id == "lzma":
            import lzma

            fmt = config.get("format", lzma.FORMAT_XZ)
            with lzma.LZMAFile(io.BytesIO(raw), mode="rb", format=fmt, filters=config.get("filters")) as f:
                return _read_bounded(f, limit)
        # blosc, lz4 and zstd state the decompressed size in a header: check it before decoding.
        if codec_id == "blosc" and len(raw) >= 16:
            _declared(struct.unpack_from("<I", raw, 4)[0], limit, codec_id)
        elif codec_id == "lz4" and len(raw) >= 4:
            _declared(struct.unpack_from("<I", raw)[0], limit, codec_id)
        elif codec_id == "zstd":
            _declared(_zstd_content_size(raw), limit, codec_id)
        if codec is None:
            import numcodecs

            codec = numcodecs.get_codec(dict(config))
        return bytes(codec.decode(raw))
    except ChunkError:
        raise
    except Exception as exc:  # zlib.error, OSError, EOFError, LZMAError, blosc's RuntimeError: the codec's own words
        raise ChunkError(f"{codec_id}: {type(exc).__name__}: {exc}") from None


def decoded_size(raw: bytes, compressor: Mapping[str, Any] | None, filters: list[tuple[Mapping[str, Any], Any]], limit: int,
                 compressor_codec: Any = None) -> int:
    """The byte size of one stored chunk after the compressor, then the filters (config, codec) in reverse order."""
    data: Any = raw if compressor is None else decompress(compressor, raw, limit, compressor_codec)
    for config, codec in reversed(filters):
        if config["id"] in COMPRESSORS:  # a compressor used as a filter is bounded the same way
            data = decompress(config, bytes(memoryview(data)), limit, codec)
            continue
        try:
            data = codec.decode(data)
        except Exception as exc:
            raise ChunkError(f"{config['id']}: {type(exc).__name__}: {exc}") from None
    return data.nbytes if isinstance(data, np.ndarray) else memoryview(data).nbytes


@check(kind="array")
def chunks_decode_to_chunk_size(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every stored chunk decodes, by the compressor and then the filters in reverse order, to one chunk's bytes.

    One chunk's bytes are the product of `chunks` times the dtype's item size (edge chunks too: all chunks
    have the same shape). Runs only with --deep: it reads the stored bytes of every chunk with
    `tree.kv.get`, one chunk at a time, a deliberate exception to "primitives read metadata only" that the
    user opts into. Only allow-listed codecs are decoded (compressors blosc, zstd, lz4, gzip, zlib, bz2,
    lzma; filters delta, shuffle, bitround, fixedscaleoffset, quantize, astype, adler32, crc32, fletcher32);
    pickle and every object codec are never run. Keys outside the chunk grid are left to chunk_keys_valid.
    Memory: one stored chunk and its decoded bytes; a compressor whose output would exceed 16 chunks is
    stopped. Every failing chunk is a finding (the report lists the first and counts them all).
    Not applicable when: --deep is not given; the array is an object ("O") array or uses a codec off the
    allow-list (not decoded); or its dtype, shape, chunks or codecs are unusable (other rules report them).
    The arrays not decoded, or whose dtype or codecs are unusable, are listed as not checked.
    """
    if not getattr(scope, "deep", False):
        raise NotApplicable("needs --deep")
    dtype = node.dtype
    if dtype is None:
        raise NotChecked(f"{node.path} has an unusable dtype")
    if dtype.hasobject:
        raise NotChecked(f"{node.path}: not decoded: an object (\"O\") array is decoded only by an object codec, which is never run")
    grid, sep = chunk_grid(node)
    compressor, filters = _codecs(node)
    import numcodecs  # only with --deep, and only for the allow-listed ids checked above

    try:
        filter_codecs = [(f, numcodecs.get_codec(dict(f))) for f in filters]
        compressor_codec = None if compressor is None or compressor["id"] in STDLIB else numcodecs.get_codec(dict(compressor))
    except Exception as exc:  # a configuration the codec rejects: no chunk of this array can be decoded
        yield Finding(f"its codec configuration cannot be used ({type(exc).__name__}: {exc}); no chunk decodes",
                      details={"key": None, "error": str(exc)})
        return
    expected = math.prod(node.metadata["chunks"]) * dtype.itemsize
    limit = WIDEST * expected + SLACK
    for _key, rel, valid in stored_chunk_keys(node, grid, sep):
        if not valid:
            continue
        try:
            raw = node.read_key(rel)
        except NodeError:
            raw = None
        if raw is None:  # listed but unreadable (a symlink out of the store): not a chunk this tool reads
            continue
        try:
            size = decoded_size(raw, compressor, filter_codecs, limit, compressor_codec)
            problem = None if size == expected else f"decodes to {size} bytes, expected {expected}"
        except ChunkError as exc:
            problem = f"does not decode ({exc})"
        if problem:  # every bad chunk is a finding: the engine keeps the first ones and counts them all
            yield Finding(f"chunk {rel!r} {problem}", details={"key": rel, "error": problem})
