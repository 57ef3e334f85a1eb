"""The one codec module: allow-listed codecs decode what numcodecs encodes, every step stops at its bound."""

from __future__ import annotations

import gzip
import lzma
import subprocess
import sys
import zlib

import numcodecs
import numpy as np
import pytest
from bombs import JSON2_SHAPE_BOMB, bz2_zeros, nested, vlen_header_bomb, zlib_zeros, zstd_zeros

from spec_validate.codecs import decode
from spec_validate.codecs.decode import ChunkCodec, ChunkError, Step, decode_chunk, hdf5_codec, unshuffle, v2_codec, v3_codec
from spec_validate.errors import NotDecoded

VALUES = np.arange(1000, dtype="<i8") * 7 - 300
EXACT = VALUES.nbytes
WHERE = "/x: chunk 0"


def v2(compressor=None, filters=None, dtype="<i8", shape=(1000,), order="C"):
    meta = {"compressor": compressor, "filters": filters, "order": order}
    return v2_codec(meta, np.dtype(dtype), shape, "/x")


def encode_v2(data, compressor=None, filters=None):
    """`data` as zarr v2 stores it: the filters in order, then the compressor (numcodecs)."""
    out = data
    for config in (filters or []) + ([compressor] if compressor else []):
        out = numcodecs.get_codec(dict(config)).encode(out)
    return bytes(np.asarray(out).view(np.uint8)) if isinstance(out, np.ndarray) else bytes(out)


COMPRESSORS = [
    {"id": "blosc", "cname": "lz4", "shuffle": 1},
    {"id": "blosc", "cname": "zstd", "shuffle": 2},
    {"id": "zstd", "level": 1},
    {"id": "lz4"},
    {"id": "gzip", "level": 1},
    {"id": "zlib", "level": 1},
    {"id": "bz2", "level": 1},
    {"id": "lzma"},
]


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: f"{c['id']}-{c.get('cname', '')}")
def test_decode_passes_each_compressor(compressor):
    raw = encode_v2(VALUES, compressor)
    np.testing.assert_array_equal(decode_chunk(v2(compressor), raw, WHERE), VALUES)


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: f"{c['id']}-{c.get('cname', '')}")
def test_decode_passes_into_the_blocks_buffer(compressor):
    out = np.zeros(EXACT, dtype=np.uint8)
    values = decode_chunk(v2(compressor), encode_v2(VALUES, compressor), WHERE, out)
    np.testing.assert_array_equal(out.view("<i8"), VALUES)
    np.testing.assert_array_equal(values, VALUES)


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: f"{c['id']}-{c.get('cname', '')}")
def test_decode_fails_every_decoder_rejects_oversize_output(compressor):
    raw = encode_v2(np.arange(2000, dtype="<i8"), compressor)  # a well-formed chunk of twice the size
    with pytest.raises(ChunkError, match=r"^/x: chunk 0 decodes to (more than )?\d+ bytes, expected 8000$"):
        decode_chunk(v2(compressor), raw, WHERE)


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: f"{c['id']}-{c.get('cname', '')}")
def test_decode_fails_every_decoder_rejects_short_output(compressor):
    raw = encode_v2(np.arange(999, dtype="<i8"), compressor)
    with pytest.raises(ChunkError, match=r"^/x: chunk 0 decodes to 7992 bytes, expected 8000$"):
        decode_chunk(v2(compressor), raw, WHERE)


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param([{"id": "shuffle", "elementsize": 8}], id="shuffle"),
        pytest.param([{"id": "delta", "dtype": "<i8"}], id="delta"),
        pytest.param([{"id": "delta", "dtype": "<i8", "astype": "<i2"}], id="delta-narrowing"),
        pytest.param([{"id": "astype", "encode_dtype": "<i4", "decode_dtype": "<i8"}], id="astype"),
        pytest.param(
            [{"id": "fixedscaleoffset", "offset": 0, "scale": 1, "dtype": "<i8", "astype": "<i4"}], id="fixedscaleoffset"
        ),
        pytest.param(
            [{"id": "adler32"}, {"id": "crc32", "location": "end"}, {"id": "crc32c"}, {"id": "fletcher32"}], id="checksums"
        ),
        pytest.param([{"id": "zlib"}, {"id": "gzip"}], id="compressors-as-filters"),
    ],
)
def test_decode_passes_v2_filters(filters):
    raw = encode_v2(VALUES, {"id": "zstd"}, filters)
    np.testing.assert_array_equal(decode_chunk(v2({"id": "zstd"}, filters), raw, WHERE), VALUES)


def test_decode_passes_float_filters():
    data = np.linspace(-1, 1, 1000)
    for filters in (
        [{"id": "quantize", "digits": 3, "dtype": "<f8"}],
        [{"id": "bitround", "keepbits": 8}],
        [{"id": "fixedscaleoffset", "offset": 0, "scale": 1000, "dtype": "<f8", "astype": "<i4"}],
    ):
        expected = numcodecs.get_codec(dict(filters[0])).decode(numcodecs.get_codec(dict(filters[0])).encode(data))
        got = decode_chunk(v2(None, filters, dtype="<f8"), encode_v2(data, None, filters), WHERE)
        np.testing.assert_array_equal(got, np.asarray(expected).view("<f8"))


@pytest.mark.parametrize("name", ["adler32", "crc32", "crc32c", "fletcher32"])
def test_decode_fails_checksum_mismatch(name):
    raw = bytearray(encode_v2(VALUES, None, [{"id": name}]))
    raw[len(raw) // 2] ^= 1
    with pytest.raises(ChunkError, match=f"/x: chunk 0 fails its {name} check"):
        decode_chunk(v2(None, [{"id": name}]), bytes(raw), WHERE)


def test_decode_passes_unshuffle_as_numcodecs():
    data = np.arange(4096, dtype="<u8").view(np.uint8)
    for size in (2, 4, 8, 16):
        shuffled = np.asarray(numcodecs.Shuffle(size).encode(data)).view(np.uint8)
        np.testing.assert_array_equal(unshuffle(shuffled, size), data)
    assert unshuffle(np.arange(7, dtype=np.uint8), 1).tolist() == list(range(7))


def test_decode_passes_f_order_as_transpose():
    data = np.arange(24, dtype="<i4").reshape(2, 3, 4)
    codec = v2(None, None, "<i4", (2, 3, 4), order="F")
    np.testing.assert_array_equal(decode_chunk(codec, np.asfortranarray(data).tobytes(order="F"), WHERE), data)


# --- object codecs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,items",
    [
        ("vlen-utf8", ["a", "bé", "", "ccc"]),
        ("vlen-bytes", [b"a", b"", b"\xff"]),
        ("json2", [{"a": 1}, "x", None]),
    ],
)
def test_decode_passes_object_codecs(name, items):
    data = np.array(items, dtype=object)
    codec = v2(None, [{"id": name}], "|O", (len(items),))
    got = decode_chunk(codec, encode_v2(data, None, [{"id": name}]), WHERE)
    assert got.dtype == object and got.tolist() == items


def test_decode_fails_vlen_header_declaring_too_many_items_before_allocating():
    codec = v2(None, [{"id": "vlen-utf8"}], "|O", (1000,))
    with pytest.raises(ChunkError, match=r"its vlen-utf8 header declares 2147483648 items, expected 1000"):
        decode_chunk(codec, vlen_header_bomb(), WHERE)


def test_decode_fails_vlen_header_with_too_few_bytes_for_its_items():
    codec = v2(None, [{"id": "vlen-bytes"}], "|O", (1000,))
    with pytest.raises(ChunkError, match="too short for 1000 vlen-bytes items"):
        decode_chunk(codec, (1000).to_bytes(4, "little") + bytes(100), WHERE)


@pytest.mark.parametrize(
    "text,match",
    [
        pytest.param(JSON2_SHAPE_BOMB, "json2 shape \\[1099511627776\\] holds 1099511627776 items, expected 3", id="shape-bomb"),
        pytest.param(b'["a","b","|O",[2]]', "json2 shape \\[2\\] holds 2 items, expected 3", id="fewer-items"),
        pytest.param(b'{"a": 1}', "is not json2 data", id="not-a-list"),
        pytest.param(b'["a","b","|O",[3]]', "do not fill shape", id="items-short-of-shape"),
        pytest.param(b"[" * 100_000, "is not json2 text", id="nesting"),
        pytest.param(b"\xff", "is not json2 text", id="not-utf8"),
    ],
)
def test_decode_fails_json2_that_does_not_match_the_chunk(text, match):
    with pytest.raises(ChunkError, match=match):
        decode_chunk(v2(None, [{"id": "json2"}], "|O", (3,)), text, WHERE)


def test_decode_fails_variable_length_bytes_past_the_cap(monkeypatch):
    monkeypatch.setattr(decode, "MAX_VARIABLE_BYTES", 1000)
    codec = v2({"id": "zlib"}, [{"id": "vlen-utf8"}], "|O", (10,))
    with pytest.raises(ChunkError, match="decodes to more than 1000 bytes, at most 1000 expected"):
        decode_chunk(codec, zlib.compress(bytes(5000)), WHERE)
    codec = v2(None, [{"id": "vlen-utf8"}], "|O", (10,))
    with pytest.raises(ChunkError, match="more than the 1000 decoded at most"):
        decode_chunk(codec, bytes(5000), WHERE)


# --- the allow-list -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "compressor,filters,dtype,match",
    [
        pytest.param({"id": "pickle"}, None, "|O", r"as its first filter \(found \['pickle'\]\)", id="pickle-as-compressor"),
        pytest.param(None, [{"id": "pickle"}], "<i8", r"pickle where the array's bytes \(int64\)", id="pickle-on-numbers"),
        pytest.param(None, [{"id": "vlen-utf8"}], "<i8", "object codec vlen-utf8 where", id="vlen-on-numbers"),
        pytest.param(None, [{"id": "pickle"}, {"id": "json2"}], "|O", "object codec json2 where", id="two-object-codecs"),
        pytest.param(None, [{"id": "msgpack2"}], "|O", "codec 'msgpack2' is not on the allow-list", id="msgpack"),
        pytest.param(None, [{"id": "categorize", "labels": ["a"], "dtype": "|O"}], "<i8", "codec 'categorize'", id="categorize"),
        pytest.param(None, [{"id": "json"}], "|O", "codec 'json' is not on the allow-list", id="old-json"),
        pytest.param({"id": "imagecodecs_jpeg"}, None, "<i8", "codec 'imagecodecs_jpeg'", id="entry-point-codec"),
        pytest.param(None, [{"id": "zlib"}, {"id": "vlen-utf8"}], "|O", "as its first filter", id="object-codec-not-first"),
        pytest.param(
            None,
            [{"id": "vlen-utf8"}, {"id": "delta", "dtype": "<i8"}],
            "|O",
            "numeric filter delta on an object array",
            id="numeric-filter-on-objects",
        ),
        pytest.param(None, [{"id": "delta", "dtype": "|O"}], "<i8", "not a numeric dtype", id="delta-object-dtype"),
        pytest.param(None, [{"id": "shuffle", "elementsize": 0}], "<i8", "no positive elementsize", id="shuffle-zero"),
        pytest.param({"id": "lzma", "format": 99}, None, "<i8", "lzma configuration", id="lzma-bad-format"),
    ],
)
def test_codec_fails_not_on_the_allow_list_never_constructed(monkeypatch, compressor, filters, dtype, match):
    real = numcodecs.get_codec

    def only_allowed(config):
        assert config["id"] in decode.V2_ALLOWED, f"numcodecs was asked for {config}"
        return real(config)

    monkeypatch.setattr(numcodecs, "get_codec", only_allowed)
    with pytest.raises(NotDecoded, match=match):
        v2(compressor, filters, dtype)


@pytest.mark.parametrize(
    "chain,match",
    [
        pytest.param(
            [{"name": "bytes"}, {"name": "numcodecs.zlib"}], "codec 'numcodecs.zlib' is not on the allow-list", id="unknown"
        ),
        pytest.param([{"name": "zstd"}], "one array-to-bytes codec", id="no-array-to-bytes"),
        pytest.param([{"name": "bytes"}, {"name": "bytes"}], "one array-to-bytes codec", id="two-array-to-bytes"),
        pytest.param(
            [{"name": "bytes"}, {"name": "transpose", "configuration": {"order": [0]}}],
            "one array-to-bytes codec",
            id="transpose-after-bytes",
        ),
        pytest.param(
            [{"name": "transpose", "configuration": {"order": [0, 0]}}, {"name": "bytes"}],
            "not a permutation",
            id="bad-permutation",
        ),
        pytest.param([{"name": "vlen-utf8"}], "vlen-utf8 on an array of int64", id="vlen-on-numbers"),
        pytest.param([{"name": "bytes", "configuration": {"endian": "middle"}}], "endian 'middle'", id="endian"),
        pytest.param(
            [
                {
                    "name": "sharding_indexed",
                    "configuration": {"chunk_shape": [3], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}]},
                }
            ],
            "does not divide the shard shape",
            id="sharding-uneven",
        ),
        pytest.param(
            [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [5],
                        "codecs": [{"name": "bytes"}],
                        "index_codecs": [{"name": "bytes"}, {"name": "gzip"}],
                    },
                }
            ],
            "index_codecs",
            id="sharding-compressed-index",
        ),
    ],
)
def test_codec_fails_v3_chains_not_read(chain, match):
    with pytest.raises(NotDecoded, match=match):
        v3_codec(chain, np.dtype("<i8"), (10,), "/x")


def test_codec_passes_a_chain_of_max_codecs_and_fails_one_more():
    # Each codec is a pass over the chunk and the spec sets no number: 200,000 checksum filters in a 3 MB `.zarray`
    # made each chunk take 16 s. Shuffles of one-byte elements change nothing, so the longest chain still decodes.
    shuffles = [{"id": "shuffle", "elementsize": 1}] * (decode.MAX_CODECS - 1)
    raw = encode_v2(VALUES, {"id": "zstd"}, shuffles)
    np.testing.assert_array_equal(decode_chunk(v2({"id": "zstd"}, shuffles), raw, WHERE), VALUES)
    with pytest.raises(NotDecoded, match=f"pass through {decode.MAX_CODECS + 1} codecs, more than the {decode.MAX_CODECS}"):
        v2({"id": "zstd"}, shuffles + [{"id": "crc32"}])
    with pytest.raises(NotDecoded, match="pass through 200000 codecs"):
        v2(None, [{"id": "crc32"}] * 200_000)


def test_codec_fails_v3_chains_past_max_codecs_counting_the_shards_around_them():
    crc = [{"name": "crc32c"}]
    v3_codec([{"name": "bytes"}] + crc * (decode.MAX_CODECS - 1), np.dtype("<i8"), (10,), "/x")
    with pytest.raises(NotDecoded, match=f"pass through {decode.MAX_CODECS + 1} codecs"):
        v3_codec([{"name": "bytes"}] + crc * decode.MAX_CODECS, np.dtype("<i8"), (10,), "/x")

    def sharded(inner, outer_after=0, index=1):
        config = {"chunk_shape": [5], "codecs": inner, "index_codecs": [{"name": "bytes"}] + crc * (index - 1)}
        return [{"name": "sharding_indexed", "configuration": config}] + crc * outer_after

    # The inner chunks' bytes pass the shard's codecs (sharding_indexed and the 5 after it) and their own 11: 17.
    inner = [{"name": "bytes"}] + crc * 10
    v3_codec(sharded(inner, outer_after=4), np.dtype("<i8"), (10,), "/x")
    with pytest.raises(NotDecoded, match="pass through 17 codecs"):
        v3_codec(sharded(inner, outer_after=5), np.dtype("<i8"), (10,), "/x")
    # The index too: 3 codecs around it and 14 of its own.
    with pytest.raises(NotDecoded, match="pass through 17 codecs"):
        v3_codec(sharded([{"name": "bytes"}], outer_after=2, index=14), np.dtype("<i8"), (10,), "/x")
    # Shards nested in shards count every level's codecs: 7 levels of two (sharding_indexed, crc32c) and bytes.
    nested = [{"name": "bytes"}]
    for _ in range(7):
        nested = sharded(nested, outer_after=1)
    v3_codec(nested, np.dtype("<i8"), (10,), "/x")
    with pytest.raises(NotDecoded, match="pass through 17 codecs"):
        v3_codec(sharded(nested, outer_after=1), np.dtype("<i8"), (10,), "/x")


# --- v3 and sharding -----------------------------------------------------------------------------------------


def test_decode_passes_v3_transpose_and_big_endian():
    data = np.arange(24, dtype=">f4").reshape(2, 3, 4)
    chain = [
        {"name": "transpose", "configuration": {"order": [2, 0, 1]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "gzip", "configuration": {"level": 1}},
        {"name": "crc32c"},
    ]
    stored = gzip.compress(np.ascontiguousarray(data.transpose(2, 0, 1)).tobytes())
    import google_crc32c

    stored += google_crc32c.value(stored).to_bytes(4, "little")
    codec = v3_codec(chain, np.dtype(">f4"), (2, 3, 4), "/x")
    np.testing.assert_array_equal(decode_chunk(codec, stored, WHERE), data)


def test_shard_index_passes_end_and_start_with_empty_inner_chunks():
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}]
    for location in ("end", "start"):
        config = {"chunk_shape": [2], "codecs": inner, "index_codecs": inner + [{"name": "crc32c"}], "index_location": location}
        codec = v3_codec([{"name": "sharding_indexed", "configuration": config}], np.dtype("<i8"), (6,), "/x")
        sharding = codec.sharding
        assert sharding.per_shard == (3,) and sharding.index_bytes == 3 * 16 + 4
        pairs = np.array([[0, 16], [2**64 - 1, 2**64 - 1], [16, 16]], dtype="<u8")
        body = np.arange(4, dtype="<i8").tobytes()
        import google_crc32c

        index = pairs.tobytes() + google_crc32c.value(pairs.tobytes()).to_bytes(4, "little")
        shard = body + index if location == "end" else index + body
        if location == "start":
            pairs = pairs.copy()
            pairs[[0, 2], 0] += len(index)
            index = pairs.tobytes() + google_crc32c.value(pairs.tobytes()).to_bytes(4, "little")
            shard = index + body
        got = sharding.index(decode.bytes_of(shard), WHERE)
        assert got.tolist() == pairs.tolist()


def test_shard_index_fails_points_past_the_shard():
    config = {"chunk_shape": [2], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}]}
    sharding = v3_codec([{"name": "sharding_indexed", "configuration": config}], np.dtype("<i8"), (2,), "/x").sharding
    shard = bytes(16) + np.array([0, 10**6], dtype="<u8").tobytes()
    with pytest.raises(ChunkError, match="points past the shard"):
        sharding.index(decode.bytes_of(shard), WHERE)
    with pytest.raises(ChunkError, match="shorter than its 16-byte shard index"):
        sharding.index(decode.bytes_of(bytes(8)), WHERE)


def test_decode_passes_hdf5_pipeline():
    data = np.arange(500, dtype="<i4")
    shuffled = np.ascontiguousarray(data).view(np.uint8).reshape(500, 4).T.tobytes()
    stored = numcodecs.Fletcher32().encode(np.frombuffer(zlib.compress(shuffled), dtype=np.uint8))
    codec = hdf5_codec((2, 1, 3), np.dtype("<i4"), (500,), 4, WHERE)
    np.testing.assert_array_equal(decode_chunk(codec, bytes(stored), WHERE), data)


# --- bombs, one decoder at a time ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "compressor,payload",
    [
        pytest.param({"id": "zlib"}, lambda: nested(zlib_zeros(), 2), id="zlib-nested"),
        pytest.param({"id": "bz2"}, bz2_zeros, id="bz2-streams"),
        pytest.param({"id": "zstd"}, zstd_zeros, id="zstd-no-declared-size"),
        pytest.param({"id": "gzip"}, lambda: gzip.compress(bytes(10**7)), id="gzip"),
        pytest.param({"id": "lzma"}, lambda: lzma.compress(bytes(10**7)), id="lzma"),
    ],
)
def test_decode_fails_bomb_stopped_one_byte_past_the_bound(compressor, payload):
    with pytest.raises(ChunkError, match=r"^/x: chunk 0 decodes to more than (8000|\d+) bytes"):
        decode_chunk(v2(compressor, [{"id": "zlib"}] if compressor["id"] == "zlib" else None), payload(), WHERE)


def test_decode_fails_nested_zstd_without_declared_size_is_bounded():
    codec = v2({"id": "zstd"}, [{"id": "zstd"}])
    outer = numcodecs.Zstd().encode(zstd_zeros())  # the outer frame declares its size: the inner frame's 128 KiB
    with pytest.raises(ChunkError, match="decodes to more than 10024 bytes"):
        decode_chunk(codec, bytes(outer), WHERE)


def zstd_raw_frame(data: bytes) -> bytes:
    """A Zstandard frame of one raw block holding `data` (at most 128 KiB) that declares no content size."""
    return b"\x28\xb5\x2f\xfd\x00\x38" + (1 | len(data) << 3).to_bytes(3, "little") + data


def test_decode_passes_nested_zstd_frame_without_declared_size():
    # zstd before zlib: the frame's size is fixed by nothing; it is decoded into a bounded buffer and cut to what it held.
    inner = zlib.compress(VALUES.tobytes())
    codec = v2({"id": "zstd"}, [{"id": "zlib"}])
    np.testing.assert_array_equal(decode_chunk(codec, zstd_raw_frame(inner), WHERE), VALUES)
    with pytest.raises(ChunkError, match="decodes to more than 10024 bytes, at most 10024 expected"):
        decode_chunk(codec, zstd_raw_frame(bytes(20_000)), WHERE)


def test_decode_fails_blosc_header_declaring_more_than_the_chunk():
    header = bytes([2, 1, 1, 8]) + (2**31 - 32).to_bytes(4, "little") + (2**16).to_bytes(4, "little") + (32).to_bytes(4, "little")
    with pytest.raises(ChunkError, match="decodes to 2147483616 bytes, expected 8000"):
        decode_chunk(v2({"id": "blosc"}), header + bytes(16), WHERE)


def test_decode_fails_lz4_header_declaring_more_than_the_chunk():
    with pytest.raises(ChunkError, match="decodes to 4294967295 bytes, expected 8000"):
        decode_chunk(v2({"id": "lz4"}), b"\xff\xff\xff\xff" + bytes(20), WHERE)


def _fresh_python(code: str) -> str:
    """What `code` prints, run in a new interpreter (the import of numcodecs happens once per process)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_codecs_module_imports_no_numcodecs_until_a_chunk_is_decoded():
    code = (
        "import sys; import spec_validate.codecs.decode, spec_validate.nodes.zarr.direct, spec_validate.nodes.hdf5.direct; "
        "print('numcodecs' in sys.modules)"
    )
    assert _fresh_python(code).strip() == "False"


def test_the_command_imports_numcodecs_without_its_plugin_scan():
    # In the command's own process numcodecs' registry finds no entry points and `importlib.metadata` is not
    # imported; a later run_entrypoints() scans for real; the built-in codecs are registered and decode.
    code = (
        "import sys; from spec_validate.codecs import decode as codecs; codecs.SKIP_CODEC_PLUGIN_SCAN = True; "
        "numcodecs = codecs.load_numcodecs(); "
        "print('importlib.metadata' in sys.modules, len(numcodecs.registry.entries)); "
        "zstd = numcodecs.get_codec({'id': 'zstd'}); print(zstd.decode(zstd.encode(b'abc')) == b'abc'); "
        "numcodecs.registry.run_entrypoints(); print('importlib.metadata' in sys.modules)"
    )
    assert _fresh_python(code).split() == ["False", "0", "True", "True"]


def test_a_numcodecs_that_needs_more_of_importlib_metadata_is_imported_as_it_imports_itself():
    # Should a numcodecs release ask importlib.metadata for more than the stand-in offers, the command still decodes:
    # the stand-in's import fails, is forgotten, and numcodecs is imported with its scan.
    code = (
        "import sys; from spec_validate.codecs import decode as codecs; codecs.SKIP_CODEC_PLUGIN_SCAN = True; "
        "codecs._NoPlugins = type('Lacking', (), {}); numcodecs = codecs.load_numcodecs(); "
        "from numcodecs.blosc import decompress; zstd = numcodecs.get_codec({'id': 'zstd'}); "
        "print(zstd.decode(zstd.encode(b'abc')) == b'abc', numcodecs.registry.entry_points.__module__)"
    )
    assert _fresh_python(code).split() == ["True", "importlib.metadata"]


@pytest.mark.parametrize("skip_scan", [True, False])
def test_numcodecs_first_imported_by_many_scan_threads_at_once_is_whole_for_each(skip_scan):
    # Scan threads decode at once. A thread that went on while another was still importing numcodecs got it
    # half made ("cannot import name 'Blosc' from partially initialized module"), and the block was unread.
    code = (
        "import sys, threading; from spec_validate.codecs import decode as codecs; "
        f"codecs.SKIP_CODEC_PLUGIN_SCAN = {skip_scan}; start = threading.Barrier(8); failed = []\n"
        "def decode():\n"
        "    start.wait()\n"
        "    try:\n"
        "        codecs.load_numcodecs(); from numcodecs.blosc import decompress; from numcodecs import zstd\n"
        "    except Exception as exc:\n"
        "        failed.append(exc)\n"
        "threads = [threading.Thread(target=decode) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]; print(len(failed), failed[:1])"
    )
    for _ in range(3):
        assert _fresh_python(code).strip() == "0 []"


def test_a_library_process_imports_numcodecs_as_numcodecs_does():
    code = (
        "import sys; from spec_validate.codecs import decode as codecs; numcodecs = codecs.load_numcodecs(); "
        "print('importlib.metadata' in sys.modules, numcodecs.registry.entry_points.__module__)"
    )
    assert _fresh_python(code).split() == ["True", "importlib.metadata"]


def test_step_passes_limit_only_steps_report_their_bound():
    step = Step("zlib", {"id": "zlib"}, None, 100)
    with pytest.raises(ChunkError, match="decodes to more than 100 bytes, at most 100 expected"):
        step.decode(decode.bytes_of(zlib.compress(bytes(1000))), WHERE)
    assert step.decode(decode.bytes_of(zlib.compress(bytes(50))), WHERE).nbytes == 50
    assert isinstance(v2({"id": "zlib"}), ChunkCodec) and decode.MAX_VARIABLE_BYTES == 64 * 2**20


def test_v3_sharding_without_index_codecs_reads_the_index_as_zarr_python_and_zarrs():
    # zarr3.sharding.index-codecs fails on such a configuration; zarr-python 3 and zarrs read the index through their
    # defaults, a little-endian bytes codec then crc32c, at the shard's end: so is it decoded here.
    config = {"chunk_shape": [5], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
    codec = v3_codec([{"name": "sharding_indexed", "configuration": config}], np.dtype("<i8"), (10,), "/x")
    assert codec.sharding is not None
    assert [s.name for s in codec.sharding.index_steps] == ["crc32c"]
    assert codec.sharding.index_dtype == np.dtype("<u8") and not codec.sharding.at_start
    assert codec.sharding.index_bytes == 2 * 16 + 4
    # Present but of another form, it is not replaced: not decoded, as before.
    with pytest.raises(NotDecoded, match="index_codecs None"):
        v3_codec([{"name": "sharding_indexed", "configuration": {**config, "index_codecs": None}}], np.dtype("<i8"), (10,), "/x")
