"""TileDB's own files checked before libtiledb reads them (spec_validate/nodes/tiledb/fragments.py)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from spec_validate.nodes.tiledb import fragments, library

tiledb = pytest.importorskip("tiledb")

REPO = Path(__file__).resolve().parents[3]
CXG = REPO / "conformance-corpus" / "cxg" / "cxg-0.3.0"


def _dense(uri: Path) -> None:
    dim = tiledb.Dim(name="i", domain=(0, 99), tile=10, dtype=np.uint32)
    tiledb.Array.create(str(uri), tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[tiledb.Attr("", dtype=np.float32)]))
    with tiledb.open(str(uri), "w") as a:
        a[:] = np.arange(100, dtype=np.float32)


def _sparse_strings(uri: Path) -> None:
    """Two dimensions, a var-sized string attribute and a nullable one: every kind of data file a fragment has."""
    dims = [
        tiledb.Dim(name="r", domain=(0, 49), tile=10, dtype=np.int32),
        tiledb.Dim(name="c", domain=(0, 9), tile=5, dtype=np.uint64),
    ]
    attrs = [tiledb.Attr("s", dtype=str), tiledb.Attr("n", dtype=np.int16, nullable=True)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=True, capacity=16)
    tiledb.Array.create(str(uri), schema)
    rows, cols = np.arange(40, dtype=np.int32), np.arange(40, dtype=np.uint64) % 10
    with tiledb.open(str(uri), "w") as a:
        a[rows, cols] = {"s": np.array([f"v{i}" * (i % 4) for i in range(40)], dtype=object), "n": np.arange(40, dtype=np.int16)}


def _string_dimension(uri: Path) -> None:
    dim = tiledb.Dim(name="k", domain=(None, None), tile=None, dtype="ascii")
    schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[tiledb.Attr("", dtype=np.int64)], sparse=True)
    tiledb.Array.create(str(uri), schema)
    with tiledb.open(str(uri), "w") as a:
        a[np.array(["a", "bb", "ccc"], dtype=object)] = np.arange(3, dtype=np.int64)


WRITERS = {"dense": _dense, "sparse-strings": _sparse_strings, "string-dimension": _string_dimension}


def _layout(uri: Path) -> fragments.Layout | None:
    return library.layout(str(uri), tiledb.ArraySchema.load(str(uri)))


def _fragment(uri: Path) -> Path:
    (folder,) = fragments.fragment_folders(str(uri))
    return Path(folder)


def _poke(uri: Path, offset: int, data: bytes) -> None:
    meta = _fragment(uri) / fragments.METADATA_FILE
    raw = bytearray(meta.read_bytes())
    raw[offset : offset + len(data)] = data
    meta.write_bytes(bytes(raw))


@pytest.mark.parametrize("kind", WRITERS)
def test_array_problem_passes_what_tiledb_writes(tmp_path, kind):
    WRITERS[kind](tmp_path / "a")
    assert fragments.array_problem(str(tmp_path / "a"), _layout(tmp_path / "a")) is None


def test_array_problem_passes_every_cxg_array_of_the_corpus():
    arrays = sorted({f.parents[2] for f in CXG.glob("*.cxg/**/__fragment_metadata.tdb")})
    assert len(arrays) > 200
    assert [(a, fragments.array_problem(str(a), _layout(a))) for a in arrays if fragments.array_problem(str(a), _layout(a))] == []


def _field(uri: Path, name: str) -> tuple[int, int]:
    return fragments.metadata_fields(str(_fragment(uri)), _layout(uri))[1][name]


# Each field that sizes an allocation or a read, made to say more than the file holds: (field, value written there,
# the problem named). The first two are the fuzzer's: TileDB allocated 2 GB for the first, and crashed on the second.
FIELDS = [
    pytest.param("array schema name's length", 0x7A00003E, "array schema name takes 2046820414 bytes", id="schema-name"),
    pytest.param("file sizes", 2**40, "says a0.tdb holds 1099511627776 bytes, but it holds", id="file-size"),
    pytest.param("var file sizes", 2**33, "says a0_var.tdb holds 8589934592 bytes, but it holds", id="var-file-size"),
    pytest.param("validity file sizes", 2**33, "says a0_validity.tdb holds", id="validity-file-size"),
    pytest.param("number of sparse tiles", 2**60, "holds 1152921504606846976 sparse tiles, more than", id="sparse-tiles"),
    pytest.param("last tile's cells", 2**40, "last tile holds 1099511627776 cells, more than a tile's 16", id="last-tile"),
    pytest.param("generic tile offsets", 7, "naming a generic tile at 7, where none starts", id="tile-offset"),
]


@pytest.mark.parametrize(("field", "value", "problem"), FIELDS)
def test_array_problem_fails_a_footer_field_past_what_the_file_holds(tmp_path, field, value, problem):
    uri = tmp_path / "a"
    _sparse_strings(uri)
    offset, _ = _field(uri, field)
    _poke(uri, offset, struct.pack("<Q", value))
    why = fragments.array_problem(str(uri), _layout(uri))
    assert why is not None and problem in why, why
    assert why.startswith("__fragments/") and "__fragment_metadata.tdb" in why


def test_array_problem_fails_a_non_empty_domain_outside_the_array(tmp_path):
    # A dense fragment's tiles are counted from its non-empty domain.
    uri = tmp_path / "a"
    _dense(uri)
    offset, _ = _field(uri, "dimension 0's non-empty range")
    _poke(uri, offset + 4, struct.pack("<I", 2**31))
    assert "holds cells in 0..2147483648, outside the array's domain 0..99" in fragments.array_problem(str(uri), _layout(uri))


def test_array_problem_fails_a_footer_length_past_the_file(tmp_path):
    uri = tmp_path / "a"
    _dense(uri)
    meta = _fragment(uri) / fragments.METADATA_FILE
    size = meta.stat().st_size
    _poke(uri, size - 8, struct.pack("<Q", 2**40))
    why = fragments.array_problem(str(uri), _layout(uri))
    assert f"says its footer holds 1099511627776 bytes, but the file holds {size}" in why


def test_array_problem_fails_a_var_dimension_range_past_the_footer(tmp_path):
    uri = tmp_path / "a"
    _string_dimension(uri)
    offset, _ = _field(uri, "dimension 0's non-empty range length")
    _poke(uri, offset, struct.pack("<Q", 2**40))
    assert "dimension 0's non-empty range takes 1099511627776 bytes" in fragments.array_problem(str(uri), _layout(uri))


# A generic tile of the fragment's metadata (its header, pipeline and chunks), each size made to say too much.
TILE_FIELDS = [
    pytest.param(4, 2**40, "a tile header that says 1099511627828 bytes, but holds", id="persisted-size"),
    pytest.param(12, 2**40, "tile holds 1099511627776 bytes, more than", id="tile-size"),
    pytest.param(34 + 4, 2**20, "a filter pipeline of 1048576 filters", id="filter-count"),
]


@pytest.mark.parametrize(("at", "value", "problem"), TILE_FIELDS)
def test_array_problem_fails_a_generic_tile_header_field(tmp_path, at, value, problem):
    uri = tmp_path / "a"
    _dense(uri)
    size = 4 if at == 34 + 4 else 8
    _poke(uri, at, value.to_bytes(size, "little"))
    why = fragments.array_problem(str(uri), _layout(uri))
    assert why is not None and "__fragment_metadata.tdb, its generic tile at 0, " in why and problem in why, why


def test_array_problem_fails_a_chunk_count_past_the_filtered_data(tmp_path):
    # TileDB sizes its list of a tile's chunks from their count.
    uri = tmp_path / "a"
    _dense(uri)
    meta = _fragment(uri) / fragments.METADATA_FILE
    pipeline = struct.unpack_from("<I", meta.read_bytes(), 30)[0]
    _poke(uri, fragments.GENERIC_TILE.size + pipeline, struct.pack("<Q", 2**50))
    assert "holds 1125899906842624 chunks, more than its" in fragments.array_problem(str(uri), _layout(uri))


def test_array_problem_passes_a_schema_it_does_not_know_checks_what_it_can(tmp_path):
    # A fragment written under another schema than the one read: its footer's own sizes are still checked.
    uri = tmp_path / "a"
    _dense(uri)
    layout = _layout(uri)
    other = fragments.Layout(layout.dims, layout.domains, layout.dim_kinds, layout.attrs, layout.capacity, None, frozenset())
    assert fragments.array_problem(str(uri), other) is None
    offset, _ = _field(uri, "array schema name's length")
    _poke(uri, offset, struct.pack("<Q", 2**31))
    assert "array schema name takes 2147483648 bytes" in fragments.array_problem(str(uri), other)


def test_tile_header_problem_fails_a_schema_whose_chunks_do_not_add_up(tmp_path):
    store = tmp_path / "s.cxg"
    shutil.copytree(CXG / "valid-properties-null.cxg", store)
    (schema,) = (store / "X" / "__schema").iterdir()
    assert fragments.tile_header_problem(str(schema)) is None
    raw = bytearray(schema.read_bytes())
    pipeline = struct.unpack_from("<I", raw, 30)[0]
    first_chunk = fragments.GENERIC_TILE.size + pipeline + 8
    raw[first_chunk : first_chunk + 4] = struct.pack("<I", 2**31)  # its original length
    schema.write_bytes(bytes(raw))
    assert "has chunks that hold" in fragments.tile_header_problem(str(schema))


@pytest.mark.parametrize("at", [0, 2, 7], ids=["count-low", "count-third-byte", "count-high"])
def test_array_problem_fails_a_data_tile_whose_chunk_count_passes_the_file(tmp_path, at):
    # The third byte of a data tile's chunk count set: TileDB allocated 680 MB for the list of its 16 M chunks.
    uri = tmp_path / "a"
    _sparse_strings(uri)
    data = _fragment(uri) / "a0.tdb"
    raw = bytearray(data.read_bytes())
    raw[at] = 0xFF
    data.write_bytes(bytes(raw))
    why = fragments.array_problem(str(uri), _layout(uri))
    assert why is not None and "/a0.tdb, its tile at 0, says its filtered data holds" in why, why


def test_array_problem_fails_a_data_tile_whose_chunk_passes_the_file(tmp_path):
    uri = tmp_path / "a"
    _dense(uri)
    data = _fragment(uri) / "a0.tdb"
    raw = bytearray(data.read_bytes())
    raw[8 + 4 : 8 + 8] = struct.pack("<I", 2**20)  # the first chunk's filtered length
    data.write_bytes(bytes(raw))
    assert "/a0.tdb, its tile at 0, has a chunk that passes" in fragments.array_problem(str(uri), _layout(uri))
