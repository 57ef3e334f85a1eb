"""Write the Zarr v3 storage conformance corpus: valid stores written by zarr-python 3, and broken copies.

Run as `python conformance-corpus/zarr/generate_zarr_v3.py`. It (re)writes the stores under
conformance-corpus/zarr/zarr-v3/ and nothing else; manifest.yaml beside this file lists each case with the
exact set of rule ids it fails. Every case is one function or one `doc_case` line named like the case.

Broken cases write a small store with zarr-python 3, then edit exactly one thing in a stored zarr.json (or one
stored key, or the bytes of one shard index, its crc32c recomputed), so that exactly one clause breaks. What
zarr-python 3 cannot write (raw-bits data types, a node named zarr.json) is written by hand, as the spec lays it
out. Nothing is read back through zarr-python.
"""

from __future__ import annotations

import json
import shutil
import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec, ZstdCodec

HERE = Path(__file__).resolve().parent
OUT = HERE / "zarr-v3"
CASES: dict[str, Callable[[Path], None]] = {}

warnings.filterwarnings("ignore")


def case(function: Callable[[Path], None]) -> Callable[[Path], None]:
    CASES[function.__name__.replace("_", "-")] = function
    return function


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def write_json(path: Path, doc: Any) -> None:
    # allow_nan: the bare-NaN case writes the literal on purpose; every other document is plain JSON.
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, allow_nan=True))


def edit(path: Path, change: Callable[[dict], None]) -> None:
    doc = read_json(path)
    change(doc)
    write_json(path, doc)


# ------------------------------------------------------------------------------------------ valid stores
@case
def valid_every_element(path: Path) -> None:
    """Nested groups with attributes and arrays of each kind zarr-python 3 writes: every core codec, sharding, both
    chunk key encodings, dimension names, a non-ASCII group name, consolidated metadata."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.attrs["title"] = "zarr v3 conformance store"
    sub = root.create_group("sub")
    sub.attrs["answer"] = 42
    deep = sub.create_group("deep")
    a = root.create_array("int32_2d", shape=(5, 7), chunks=(2, 3), dtype="int32", fill_value=7, dimension_names=["row", "column"])
    a[:] = np.arange(35, dtype="int32").reshape(5, 7)
    f = root.create_array("float64_nan_fill", shape=(10,), chunks=(4,), dtype="float64", fill_value=np.nan)
    f[:4] = np.linspace(0, 1, 4)  # chunks 1 and 2 stay absent: filled with NaN
    b = root.create_array("bool", shape=(6,), chunks=(6,), dtype="bool", fill_value=False, compressors=None)
    b[:] = [True, False] * 3
    c = deep.create_array("complex128", shape=(2,), chunks=(1,), dtype="complex128", fill_value=1 + 2j)
    c[:] = [1 + 2j, 3 - 4j]
    h = deep.create_array("float16", shape=(3,), chunks=(3,), dtype="float16", fill_value=-np.inf)
    h[:] = [0.5, 1.5, 2.5]
    s = sub.create_array("strings", shape=(3,), chunks=(3,), dtype=str)  # vlen-utf8, an extension data type
    s[:] = ["a", "bb", "ccc"]
    t = sub.create_array("datetime_ns", shape=(3,), chunks=(3,), dtype="M8[ns]")  # an extension data type object
    t[:] = np.array(["2020-01-01", "NaT", "2021-06-01"], dtype="M8[ns]")
    z = root.create_array("scalar", shape=(), dtype="float32", fill_value=0.5)
    z[()] = 1.25
    g = root.create_array(
        "gzip_crc32c_v2_keys",
        shape=(8,),
        chunks=(4,),
        dtype="uint16",
        fill_value=0,
        compressors=[GzipCodec(level=3), Crc32cCodec()],
        chunk_key_encoding={"name": "v2", "separator": "."},
    )
    g[:] = np.arange(8, dtype="uint16")
    d = root.create_array(
        "dot_separated",
        shape=(4, 4),
        chunks=(2, 2),
        dtype="int16",
        fill_value=0,
        chunk_key_encoding={"name": "default", "separator": "."},
    )
    d[:2, :] = 1
    bl = root.create_array(
        "blosc_transposed_big_endian",
        shape=(10, 3),
        chunks=(4, 3),
        dtype="int32",
        fill_value=0,
        filters=[TransposeCodec(order=(1, 0))],
        serializer=BytesCodec(endian="big"),
        compressors=[BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=4, blocksize=0)],
    )
    bl[:] = np.arange(30, dtype="int32").reshape(10, 3)
    sh = root.create_array("sharded", shape=(100, 20), chunks=(10, 10), shards=(50, 20), dtype="int32", fill_value=-1)
    sh[:60] = np.arange(1200, dtype="int32").reshape(60, 20)  # the second shard holds empty inner chunks
    st = root.create_array(
        "sharded_index_start",
        shape=(40,),
        dtype="float32",
        fill_value=0.0,
        serializer=ShardingCodec(
            chunk_shape=(5,), index_location="start", codecs=[BytesCodec(endian="little"), ZstdCodec(level=1)]
        ),
        chunks=(20,),
        compressors=None,
    )
    st[:] = np.arange(40, dtype="float32")
    wz = root.create_array(
        "sharded_then_zstd", shape=(16,), dtype="int64", fill_value=0, chunks=(8,), serializer=ShardingCodec(chunk_shape=(4,))
    )  # zarr-python adds zstd over each whole shard
    wz[:] = np.arange(16)
    n = root.create_group("données")  # a non-ASCII name, case-folded and NFKC-normalized
    n.create_array("u8", shape=(2,), dtype="uint8", fill_value=255)[:] = [1, 2]
    zarr.consolidate_metadata(str(path))


@case
def valid_hand_written(path: Path) -> None:
    """What zarr-python 3 does not write but the spec allows: a raw-bits r16 array with a byte-array fill value, a
    float32 NaN fill as hexadecimal, a codec with an explicit "must_understand": true, an unknown field marked
    "must_understand": false, short-hand extension names, and a chunk in the v2 chunk key encoding with "/"."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.create_array("x", shape=(4,), chunks=(2,), dtype="float32", fill_value=0.0, compressors=None)[:] = [1, 2, 3, 4]
    edit(
        path / "x" / "zarr.json",
        lambda m: m.update(
            fill_value="0x7fc00001",
            codecs=[{"name": "bytes", "configuration": {"endian": "little"}, "must_understand": True}, "crc32c"],
            extra_notes={"must_understand": False, "text": "ignorable by readers that do not know it"},
        ),
    )
    for i in range(2):  # re-encode the chunks with the crc32c the edited codecs add
        raw = (path / "x" / "c" / str(i)).read_bytes()
        (path / "x" / "c" / str(i)).write_bytes(raw + struct.pack("<I", google_crc32c.value(raw)))
    raw = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [3],
        "data_type": "r16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
        "fill_value": [0, 255],
        "codecs": [{"name": "bytes"}],
        "attributes": {},
    }
    write_json(path / "raw16" / "zarr.json", raw)
    (path / "raw16" / "0").write_bytes(bytes(range(6)))


# ------------------------------------------------------------------------------------------ broken: documents
def small_store(path: Path, dtype: str = "int32", fill_value: Any = 0, **kwargs: Any) -> Path:
    """A root group holding one array `x` of 4 elements in chunks of 2, both chunks written; returns x/zarr.json."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array("x", shape=(4,), dtype=dtype, fill_value=fill_value, **{"chunks": (2,), **kwargs})
    x[:] = np.arange(4).astype(dtype) if dtype != "bool" else [True, False, True, False]
    return path / "x" / "zarr.json"


def doc_case(name: str, change: Callable[[dict], None], doc: str, **store: Any) -> None:
    """A case that writes the small store and edits x/zarr.json with `change`."""

    def write(path: Path) -> None:
        edit(small_store(path, **store), change)

    write.__doc__ = doc
    CASES[name] = write


def setter(key: str, value: Any) -> Callable[[dict], None]:
    return lambda meta: meta.__setitem__(key, value)


def popper(key: str) -> Callable[[dict], None]:
    return lambda meta: meta.pop(key)


def codec_setter(index: int, codec: Any) -> Callable[[dict], None]:
    return lambda meta: meta["codecs"].__setitem__(index, codec)


def config_setter(index: int, key: str, value: Any = ...) -> Callable[[dict], None]:
    """Set (or, with no value, remove) member `key` of codecs[index].configuration."""

    def change(meta: dict) -> None:
        config = meta["codecs"][index].setdefault("configuration", {})
        if value is ...:
            config.pop(key)
        else:
            config[key] = value

    return change


BLOSC = {"compressors": [BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4, blocksize=0)]}
SHARDED = {"chunks": (1,), "shards": (2,)}

doc_case("array-missing-fill-value", popper("fill_value"), "x/zarr.json without the required fill_value")
doc_case("array-zarr-format-string", setter("zarr_format", "3"), 'zarr_format is the string "3"')
doc_case("array-shape-negative", setter("shape", [-4]), "shape holds a negative length")
doc_case("array-data-type-number", setter("data_type", 5), "data_type is a number, neither a name nor an object")
doc_case("array-data-type-core-as-object", setter("data_type", {"name": "int32"}), "the core int32 written as an object")
doc_case(
    "array-data-type-raw-bits-12",
    lambda m: m.update(data_type="r12", fill_value=[0], codecs=[{"name": "bytes"}]),
    "data_type r12: 12 bits, not a multiple of 8",
)
doc_case("array-chunk-grid-number", setter("chunk_grid", 7), "chunk_grid is a number")
doc_case(
    "chunk-grid-regular-short-hand",
    setter("chunk_grid", "regular"),
    "the regular grid as the short-hand name, without configuration",
)
doc_case(
    "chunk-grid-regular-no-chunk-shape",
    setter("chunk_grid", {"name": "regular", "configuration": {}}),
    "the regular grid's configuration has no chunk_shape",
)
doc_case(
    "chunk-grid-chunk-shape-length",
    setter("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": [2, 2]}}),
    "two chunk lengths for a one-dimensional array",
)
doc_case(
    "chunk-grid-chunk-size-zero",
    setter("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": [0]}}),
    "a chunk length of zero",
)
doc_case("array-chunk-key-encoding-list", setter("chunk_key_encoding", []), "chunk_key_encoding is a JSON array")
doc_case(
    "chunk-key-encoding-default-separator-dash",
    setter("chunk_key_encoding", {"name": "default", "configuration": {"separator": "-"}}),
    "default encoding with separator -",
)
doc_case(
    "chunk-key-encoding-v2-separator-colon",
    setter("chunk_key_encoding", {"name": "v2", "configuration": {"separator": ":"}}),
    "v2 encoding with separator :",
    chunk_key_encoding={"name": "v2", "separator": "."},
)
doc_case("fill-value-bool-zero", setter("fill_value", 0), "a bool array with fill_value 0", dtype="bool", fill_value=False)
doc_case("fill-value-integer-with-fraction", setter("fill_value", 1.5), "an int32 array with fill_value 1.5")
doc_case("fill-value-integer-out-of-range", setter("fill_value", 300), "a uint8 array with fill_value 300", dtype="uint8")
doc_case(
    "fill-value-float-bare-nan",
    setter("fill_value", float("nan")),
    "float fill_value written as the bare NaN literal",
    dtype="float64",
    fill_value=1.0,
)
doc_case(
    "fill-value-float-lowercase-nan",
    setter("fill_value", "nan"),
    'float fill_value "nan", not "NaN"',
    dtype="float32",
    fill_value=1.0,
)
doc_case(
    "fill-value-float-hex-too-wide",
    setter("fill_value", "0x7ff8000000000000"),
    "a float32 fill_value of 8 hex bytes",
    dtype="float32",
    fill_value=1.0,
)
doc_case(
    "fill-value-complex-one-part",
    setter("fill_value", [0.0]),
    "a complex64 fill_value with one part",
    dtype="complex64",
    fill_value=0,
)
doc_case("array-codecs-not-a-list", setter("codecs", "bytes"), "codecs is a string, not a list")
doc_case("codecs-empty", setter("codecs", []), "codecs is an empty list")
doc_case("codecs-compressor-before-bytes", lambda m: m["codecs"].reverse(), "zstd before bytes: a bytes -> bytes codec first")
doc_case("bytes-endian-missing", codec_setter(0, {"name": "bytes"}), "an int32 array whose bytes codec has no endian")
doc_case("bytes-endian-uppercase", config_setter(0, "endian", "LITTLE"), 'bytes codec endian "LITTLE"')
doc_case("codec-configuration-unknown-member", config_setter(0, "foo", 1), 'bytes codec configuration with "foo": 1')
doc_case(
    "codec-configuration-unknown-member-in-shard",
    lambda m: m["codecs"][0]["configuration"]["codecs"][0].setdefault("configuration", {}).update(foo=1),
    'the sharding codec\'s inner bytes codec configuration with "foo": 1',
    **SHARDED,
)
doc_case("gzip-level-ten", config_setter(1, "level", 10), "gzip level 10", compressors=[GzipCodec(level=5)])
doc_case("blosc-cname-unknown", config_setter(1, "cname", "lzma"), 'blosc cname "lzma"', **BLOSC)
doc_case("blosc-clevel-twelve", config_setter(1, "clevel", 12), "blosc clevel 12", **BLOSC)
doc_case("blosc-shuffle-unknown", config_setter(1, "shuffle", "byteshuffle"), 'blosc shuffle "byteshuffle"', **BLOSC)
doc_case("blosc-shuffle-missing", config_setter(1, "shuffle"), "blosc without the shuffle mode", **BLOSC)
doc_case("blosc-typesize-missing", config_setter(1, "typesize"), 'blosc with shuffle "shuffle" and no typesize', **BLOSC)
doc_case("blosc-typesize-zero", config_setter(1, "typesize", 0), "blosc typesize 0", **BLOSC)
doc_case("blosc-blocksize-negative", config_setter(1, "blocksize", -1), "blosc blocksize -1", **BLOSC)
doc_case("attributes-not-an-object", setter("attributes", [1, 2]), "attributes is a JSON array")
doc_case("storage-transformers-not-a-list", setter("storage_transformers", {}), "storage_transformers is an object")
doc_case("dimension-names-wrong-length", setter("dimension_names", ["x", "y"]), "two dimension names for one dimension")
doc_case(
    "field-unknown", setter("chunk_memory_order", "C"), "a top-level field the spec does not define, not must_understand false"
)
doc_case(
    "extension-object-without-name",
    setter("chunk_key_encoding", {"configuration": {"separator": "/"}}),
    'chunk_key_encoding object without "name"',
)
doc_case("extension-name-uppercase", lambda m: m["codecs"][1].update(name="Zstd"), 'a codec named "Zstd"')
doc_case(
    "extension-configuration-not-object", lambda m: m["codecs"][1].update(configuration=[1]), "zstd configuration is a JSON array"
)
doc_case(
    "extension-must-understand-string", lambda m: m["codecs"][1].update(must_understand="no"), 'a codec with must_understand "no"'
)
doc_case(
    "extension-must-understand-false-key-encoding",
    lambda m: m["chunk_key_encoding"].update(must_understand=False),
    "the chunk key encoding marked must_understand false",
)
doc_case(
    "sharding-chunk-shape-not-dividing",
    lambda m: m["codecs"][0]["configuration"].update(chunk_shape=[3]),
    "inner chunk_shape [3] in shards of 2",
    **SHARDED,
)
doc_case(
    "sharding-codecs-missing",
    lambda m: m["codecs"][0]["configuration"].pop("codecs"),
    "sharding configuration without codecs",
    **SHARDED,
)
doc_case(
    "sharding-index-codecs-missing",
    lambda m: m["codecs"][0]["configuration"].pop("index_codecs"),
    "sharding configuration without index_codecs",
    **SHARDED,
)
doc_case(
    "sharding-index-codecs-gzip",
    lambda m: m["codecs"][0]["configuration"].update(
        index_codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}]
    ),
    "gzip among the shard index codecs",
    **SHARDED,
)
doc_case(
    "sharding-index-location-middle",
    lambda m: m["codecs"][0]["configuration"].update(index_location="middle"),
    'index_location "middle"',
    **SHARDED,
)
doc_case(
    "sharding-configuration-write-order",
    lambda m: m["codecs"][0]["configuration"].update(write_order="morton"),
    "a write strategy in the sharding configuration",
    **SHARDED,
)


@case
def transpose_order_repeated(path: Path) -> None:
    """A 2-D array whose transpose order is [0, 0], no permutation."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array("x", shape=(2, 2), chunks=(2, 2), dtype="int32", fill_value=0, filters=[TransposeCodec(order=(1, 0))])
    x[:] = [[1, 2], [3, 4]]
    edit(path / "x" / "zarr.json", config_setter(0, "order", [0, 0]))


@case
def dimension_names_repeated(path: Path) -> None:
    """A 2-D array with both dimensions named "x" (a SHOULD)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.create_array("x", shape=(2, 2), chunks=(2, 2), dtype="int32", fill_value=0, dimension_names=["x", "x"])


@case
def fill_value_raw_wrong_length(path: Path) -> None:
    """A hand-written r16 array whose fill value holds 1 byte, not 2."""
    zarr.open_group(str(path), mode="w", zarr_format=3)
    write_json(
        path / "x" / "zarr.json",
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [2],
            "data_type": "r16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"},
            "fill_value": [0],
            "codecs": [{"name": "bytes"}],
        },
    )


@case
def array_metadata_not_json(path: Path) -> None:
    """x/zarr.json is not JSON (also a metadata problem of the store): the node is read as a group without a document."""
    small_store(path)
    (path / "x" / "zarr.json").write_bytes(b'{"zarr_format": 3, "node_type": "array",')


# ------------------------------------------------------------------------------------------ broken: hierarchy and keys
@case
def root_v2_and_v3_metadata(path: Path) -> None:
    """A zarr-python 3 store with a Zarr v2 .zgroup written beside the root zarr.json."""
    small_store(path)
    write_json(path / ".zgroup", {"zarr_format": 2})


@case
def group_implicit(path: Path) -> None:
    """An array at sub/x whose parent sub has no zarr.json."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.create_group("sub").create_array("x", shape=(2,), chunks=(2,), dtype="int32", fill_value=0)
    (path / "sub" / "zarr.json").unlink()


def group_doc_case(name: str, doc_json: dict, doc: str) -> None:
    def write(path: Path) -> None:
        root = zarr.open_group(str(path), mode="w", zarr_format=3)
        root.create_group("sub").create_array("x", shape=(2,), chunks=(2,), dtype="int32", fill_value=0)
        write_json(path / "sub" / "zarr.json", doc_json)

    write.__doc__ = doc
    CASES[name] = write


group_doc_case("group-missing-node-type", {"zarr_format": 3}, "sub/zarr.json without node_type")
group_doc_case("group-zarr-format-2", {"zarr_format": 2, "node_type": "group"}, "sub/zarr.json says zarr_format 2")
group_doc_case("group-node-type-misspelt", {"zarr_format": 3, "node_type": "grop"}, 'sub/zarr.json node_type "grop"')


@case
def group_consolidated_kind_external(path: Path) -> None:
    """Consolidated metadata whose kind is "external", not "inline"."""
    small_store(path)
    zarr.consolidate_metadata(str(path))
    edit(path / "zarr.json", lambda m: m["consolidated_metadata"].update(kind="external"))


@case
def consolidated_stale(path: Path) -> None:
    """Metadata consolidated, then an array y added and x's attributes changed: the copy is stale (a SHOULD)."""
    small_store(path)
    zarr.consolidate_metadata(str(path))
    root = zarr.open_group(str(path), mode="r+", zarr_format=3, use_consolidated=False)
    root.create_array("y", shape=(2,), chunks=(2,), dtype="int32", fill_value=0)
    edit(path / "x" / "zarr.json", lambda m: m["attributes"].update(units="m"))


@case
def chunk_key_v2_style(path: Path) -> None:
    """Under an array with the default encoding ("c/0"), a chunk stored as "0" (the v2 encoding's key)."""
    small_store(path)
    shutil.copy(path / "x" / "c" / "0", path / "x" / "0")


@case
def chunk_keys_other_forms(path: Path) -> None:
    """A 2-D array with the default encoding and "/" ("c/0/0"): chunk (0, 0) also stored as "0.0" (the v2 encoding),
    chunk (0, 1) as "c.0.1" (the default encoding with "."), chunk (1, 0) as "c/01/0" (a zero-padded index)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.create_array("x", shape=(4, 4), chunks=(2, 2), dtype="int32", fill_value=0)[:] = np.arange(16).reshape(4, 4)
    chunks = path / "x" / "c"
    shutil.copy(chunks / "0" / "0", path / "x" / "0.0")
    shutil.copy(chunks / "0" / "1", path / "x" / "c.0.1")
    (chunks / "01").mkdir()
    shutil.copy(chunks / "1" / "0", chunks / "01" / "0")


@case
def chunk_key_nested_under_v2_dot(path: Path) -> None:
    """A 2-D array with the v2 encoding and "." ("0.0") whose chunks are all stored as "0/0" (nested): a reader
    finds none of them."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array(
        "x", shape=(4, 4), chunks=(2, 2), dtype="int32", fill_value=0, chunk_key_encoding={"name": "v2", "separator": "."}
    )
    x[:] = np.arange(16).reshape(4, 4)
    for i in range(2):
        (path / "x" / str(i)).mkdir()
        for j in range(2):
            (path / "x" / f"{i}.{j}").rename(path / "x" / str(i) / str(j))


@case
def valid_v2_documents_beside_zarr_json(path: Path) -> None:
    """As zarrs' test data holds them on purpose: Zarr v2 documents beside each zarr.json (.zgroup and .zattrs at the
    group, .zarray and .zattrs at the array, whose uncompressed chunks in the v2 chunk key encoding read the same to a
    v2 reader). Only notices: no sentence forbids them."""
    small_store(path, compressors=None, chunk_key_encoding={"name": "v2", "separator": "."})
    write_json(path / ".zgroup", {"zarr_format": 2})
    write_json(path / ".zattrs", {})
    write_json(
        path / "x" / ".zarray",
        {
            "zarr_format": 2,
            "shape": [4],
            "chunks": [2],
            "dtype": "<i4",
            "compressor": None,
            "fill_value": 0,
            "order": "C",
            "filters": None,
            "dimension_separator": ".",
        },
    )
    write_json(path / "x" / ".zattrs", {})


@case
def valid_n5_attributes_beside_zarr_json(path: Path) -> None:
    """As n5-zarr writes: an N5 attributes.json beside the group's and the array's zarr.json, and a .DS_Store at the
    root. Only notices: no sentence forbids them, and a Zarr v3 reader never reads them."""
    small_store(path)
    write_json(path / "attributes.json", {"n5": "4.0.0"})
    write_json(path / "x" / "attributes.json", {"dimensions": [4], "blockSize": [2], "dataType": "int32"})
    (path / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")


@case
def array_metadata_document_missing(path: Path) -> None:
    """The array x with its zarr.json deleted: its chunks c/0 and c/1 remain, and no reader sees an array there."""
    small_store(path)
    (path / "x" / "zarr.json").unlink()


@case
def chunk_key_outside_grid(path: Path) -> None:
    """A chunk stored under c/5 of an array whose grid has 2 chunks (a SHOULD)."""
    small_store(path)
    shutil.copy(path / "x" / "c" / "0", path / "x" / "c" / "5")


def name_case(name: str, child: str, doc: str) -> None:
    """A root group with a child group named `child`, written by hand (zarr-python refuses most such names)."""

    def write(path: Path) -> None:
        zarr.open_group(str(path), mode="w", zarr_format=3)
        write_json(path / child / "zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": {}})

    write.__doc__ = doc
    CASES[name] = write


name_case("node-name-periods", "...", 'a group named "..."')
name_case("node-name-reserved-prefix", "__meta", 'a group named "__meta"')
name_case("node-name-space", "my group", 'a group named "my group" (a SHOULD)')
name_case("node-name-not-case-folded", "Données", 'a group named "Données", not case-folded (a SHOULD)')


@case
def node_named_zarr_json(path: Path) -> None:
    """A zip store whose group sub has a child named zarr.json (a directory store cannot hold both sub/zarr.json and it)."""
    group = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("zarr.json", group)
        z.writestr("sub/zarr.json", group)
        z.writestr("sub/zarr.json/zarr.json", group)


# ------------------------------------------------------------------------------------------ broken: shard indexes
def sharded_store(path: Path) -> Path:
    """x: 8 int32 in shards of 4 (inner chunks of 2: index of 2 pairs + crc32c at the end), every element 7; returns
    the first shard."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array("x", shape=(8,), chunks=(2,), shards=(4,), dtype="int32", fill_value=0)
    x[:] = 7
    return path / "x" / "c" / "0"


def index_of(shard: Path) -> tuple[bytes, np.ndarray]:
    raw = shard.read_bytes()
    return raw[:-36], np.frombuffer(raw[-36:-4], dtype="<u8").reshape(-1, 2).copy()


def write_index(shard: Path, chunks: bytes, pairs: np.ndarray) -> None:
    index = pairs.astype("<u8").tobytes()
    shard.write_bytes(chunks + index + struct.pack("<I", google_crc32c.value(index)))


@case
def shard_index_checksum_wrong(path: Path) -> None:
    """The first shard's index with one byte flipped: its crc32c no longer matches."""
    shard = sharded_store(path)
    raw = bytearray(shard.read_bytes())
    raw[-10] ^= 0xFF
    shard.write_bytes(bytes(raw))


@case
def shard_index_range_outside(path: Path) -> None:
    """The first shard's index points inner chunk 1 past the shard's end (crc32c recomputed)."""
    shard = sharded_store(path)
    chunks, pairs = index_of(shard)
    pairs[1, 0] = len(chunks) + 100
    write_index(shard, chunks, pairs)


@case
def shard_index_half_empty_pair(path: Path) -> None:
    """Inner chunk 1 of the first shard has offset 2**64-1 but a real nbytes (crc32c recomputed)."""
    shard = sharded_store(path)
    chunks, pairs = index_of(shard)
    pairs[1, 0] = 2**64 - 1
    write_index(shard, chunks, pairs)


@case
def shard_index_overlap(path: Path) -> None:
    """Both inner chunks of the first shard point at the same bytes (they hold equal values; crc32c recomputed)."""
    shard = sharded_store(path)
    chunks, pairs = index_of(shard)
    pairs[1] = pairs[0]
    write_index(shard, chunks, pairs)


@case
def sharding_index_big_endian(path: Path) -> None:
    """A shard index written big-endian by zarr-python: conforming, but not the recommended index codecs (a SHOULD)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array(
        "x",
        shape=(8,),
        dtype="int32",
        fill_value=0,
        chunks=(4,),
        serializer=ShardingCodec(chunk_shape=(2,), index_codecs=[BytesCodec(endian="big"), Crc32cCodec()]),
    )
    x[:] = np.arange(8, dtype="int32")


# ------------------------------------------------------------------------------------------ broken: chunks (--deep)
@case
def chunk_truncated_deep(path: Path) -> None:
    """Chunk x/c/1 (zstd) cut to half its stored bytes: it does not decode (seen only with --deep)."""
    small_store(path)
    raw = (path / "x" / "c" / "1").read_bytes()
    (path / "x" / "c" / "1").write_bytes(raw[: len(raw) // 2])


@case
def chunk_crc32c_mismatch_deep(path: Path) -> None:
    """Chunk x/c/0 (bytes, crc32c) with one payload byte flipped: its checksum fails (seen only with --deep)."""
    small_store(path, compressors=[Crc32cCodec()])
    raw = bytearray((path / "x" / "c" / "0").read_bytes())
    raw[0] ^= 0x01
    (path / "x" / "c" / "0").write_bytes(bytes(raw))


@case
def chunk_gzip_not_gzip_format_deep(path: Path) -> None:
    """Chunk x/c/0 of a gzip array stored as a zlib stream, not the Gzip file format (seen only with --deep)."""
    import zlib

    small_store(path, compressors=[GzipCodec(level=1)])
    (path / "x" / "c" / "0").write_bytes(zlib.compress(np.arange(2, dtype="<i4").tobytes()))


@case
def shard_inner_chunk_corrupt_deep(path: Path) -> None:
    """Inner chunk 1 of the first shard (zstd) overwritten with junk, its index intact (seen only with --deep)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array(
        "x", shape=(8,), chunks=(2,), shards=(4,), dtype="int32", fill_value=0, compressors=[ZstdCodec(level=1)]
    )
    x[:] = np.arange(8, dtype="int32")
    shard = path / "x" / "c" / "0"
    chunks, pairs = index_of(shard)
    offset, nbytes = (int(v) for v in pairs[1])
    junk = bytearray(chunks)
    junk[offset : offset + nbytes] = b"\xff" * nbytes
    write_index(shard, bytes(junk), pairs)


# ------------------------------------------------------------------------------------------ not checked
@case
def chunk_grid_rectilinear(path: Path) -> None:
    """Arrays x (4 elements) and s (8, in 2 shards of 2 inner chunks) with the `rectilinear` chunk grid, an extension
    zarr-python writes when asked to, describing the chunks as stored: conforming, but the clauses that need the
    grid (chunk keys in the grid, shard shapes and indexes, decoded chunks) are not checked, never passed or n/a."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = root.create_array("x", shape=(4,), chunks=(2,), dtype="int32", fill_value=0)
    x[:] = np.arange(4, dtype="int32")
    s = root.create_array("s", shape=(8,), chunks=(2,), shards=(4,), dtype="int32", fill_value=0)
    s[:] = np.arange(8, dtype="int32")
    for name, edges in (("x", [2, 2]), ("s", [4, 4])):
        grid = {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [edges]}}
        edit(path / name / "zarr.json", setter("chunk_grid", grid))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, write in CASES.items():
        path = OUT / (f"{name}.zarr.zip" if name == "node-named-zarr-json" else f"{name}.zarr")
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        write(path)
        print(path.relative_to(HERE.parent))


if __name__ == "__main__":
    main()
