"""Zarr v2 metadata primitives, on in-memory stores of raw JSON documents."""

from __future__ import annotations

from typing import Any

import pytest
from counting_names import CountingName
from dict_store import DictStore
from memory_tree import findings

from spec_validate.model import NotApplicable
from spec_validate.nodes.zarr.tree import ZarrTree

ZARRAY = {
    "zarr_format": 2,
    "shape": [4, 6],
    "chunks": [2, 3],
    "dtype": "<f8",
    "compressor": None,
    "fill_value": "NaN",
    "order": "C",
    "filters": None,
}


def store(zarray: Any = None, extra: dict[str, Any] | None = None, zgroup: Any = None) -> ZarrTree:
    items: dict[str, Any] = {".zgroup": {"zarr_format": 2} if zgroup is None else zgroup}
    items["a/.zarray"] = ZARRAY if zarray is None else zarray
    items.update(extra or {})
    return ZarrTree(DictStore(items), 2)


def array(**changes: Any) -> Any:
    meta = {k: v for k, v in {**ZARRAY, **changes}.items() if v is not ...}
    return store(meta).get("/a")


def run(primitive: str, node: Any, options: dict | None = None) -> list:
    return findings(primitive, node, options, sc="unused")


ARRAY_KEYS = {"keys": list(ZARRAY)}


def test_metadata_keys_present_passes_full_zarray():
    assert run("metadata_keys_present", array(), ARRAY_KEYS) == []


def test_metadata_keys_present_fails_each_missing_key():
    got = run("metadata_keys_present", array(order=..., filters=...), ARRAY_KEYS)
    assert [f.details["key"] for f in got] == ["order", "filters"]
    assert "'order'" in got[0].message


def test_metadata_keys_present_fails_once_on_a_zarray_that_is_not_an_object():
    tree = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, "a/.zarray": [1, 2]}), 2)
    node = tree.get("/a")
    assert node.metadata is None and tree.problems
    assert len(run("metadata_keys_present", node, ARRAY_KEYS)) == 1


def test_metadata_keys_present_is_not_applicable_on_an_implicit_group():
    tree = ZarrTree(DictStore({"g/a/.zarray": ZARRAY}), 2)
    with pytest.raises(NotApplicable):
        run("metadata_keys_present", tree.get("/g"), {"keys": ["zarr_format"]})


def test_metadata_primitives_are_not_applicable_without_metadata():
    tree = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, "a/.zarray": b"{not json"}), 2)
    for name, options in [
        ("metadata_equals", {"key": "zarr_format", "value": 2}),
        ("dtype_encoding", {}),
        ("chunk_keys_valid", {}),
        ("fill_value_float_encoding", {}),
        ("metadata_keys_allowed", ARRAY_KEYS),
    ]:
        with pytest.raises(NotApplicable):
            run(name, tree.get("/a"), options)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(2, 0, id="two"),
        pytest.param(3, 1, id="three"),
        pytest.param("2", 1, id="string"),
        pytest.param(True, 1, id="boolean-is-not-integer"),
    ],
)
def test_metadata_equals_zarr_format(value, expected):
    assert len(run("metadata_equals", array(zarr_format=value), {"key": "zarr_format", "value": 2})) == expected


def test_metadata_one_of_fails_order_k_naming_value_and_choices():
    (f,) = run("metadata_one_of", array(order="K"), {"key": "order", "values": ["C", "F"]})
    assert f.message == 'order is "K", expected one of ["C", "F"]'


def test_metadata_one_of_is_not_applicable_when_the_key_is_absent():
    with pytest.raises(NotApplicable):
        run("metadata_one_of", array(), {"key": "dimension_separator", "values": [".", "/"]})


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param([2, 3], 0, id="ok"),
        pytest.param([2], 1, id="too-short"),
        pytest.param([0, 3], 1, id="zero"),
        pytest.param([2, 3.5], 1, id="float"),
        pytest.param("2,3", 1, id="not-a-list"),
    ],
)
def test_metadata_int_list_chunks(chunks, expected):
    options = {"key": "chunks", "minimum": 1, "same_length_as": "shape"}
    assert len(run("metadata_int_list", array(chunks=chunks), options)) == expected


@pytest.mark.parametrize(
    ("key", "value", "is_list", "expected"),
    [
        pytest.param("compressor", None, False, 0, id="compressor-null"),
        pytest.param("compressor", {"id": "zlib", "level": 1}, False, 0, id="compressor-object"),
        pytest.param("compressor", {"level": 1}, False, 1, id="compressor-no-id"),
        pytest.param("compressor", "zlib", False, 1, id="compressor-string"),
        pytest.param("filters", [{"id": "delta"}], True, 0, id="filters-list"),
        pytest.param("filters", [{"id": "delta"}, {}], True, 1, id="filters-one-without-id"),
        pytest.param("filters", {"id": "delta"}, True, 1, id="filters-not-a-list"),
    ],
)
def test_metadata_codec(key, value, is_list, expected):
    assert len(run("metadata_codec", array(**{key: value}), {"key": key, "list": is_list})) == expected


NA = None  # the primitive raises NotApplicable: the dtype holds nothing it judges
DTYPES = [
    # (dtype, findings of dtype_encoding, of dtype_byte_order, of dtype_datetime_units)
    pytest.param("<f8", 0, 0, NA, id="float"),
    pytest.param("|b1", 0, 0, NA, id="bool"),
    pytest.param("|S12", 0, 0, NA, id="bytes"),
    pytest.param(">U4", 0, 0, NA, id="big-endian-unicode"),
    pytest.param("|O", 0, 0, NA, id="object"),
    pytest.param("<M8[ns]", 0, 0, 0, id="datetime-ns"),
    pytest.param("<m8[10s]", 0, 0, 0, id="timedelta-multiple"),
    pytest.param([["r", "|u1"], ["g", "|u1"]], 0, 0, NA, id="structured"),
    pytest.param([["x", "<f4"], ["z", "<f4", [2, 2]]], 0, 0, NA, id="structured-subarray"),
    pytest.param([["foo", "<f4"], ["bar", [["baz", "<f4"], ["qux", "<i4"]]]], 0, 0, NA, id="structured-nested"),
    pytest.param([["t", "<M8"], ["x", "<f4"]], 0, 0, 1, id="structured-datetime-without-unit"),
    pytest.param("f8", 0, 1, NA, id="no-byte-order"),
    pytest.param([["x", "f4"]], 0, 1, NA, id="field-without-byte-order"),
    pytest.param("<x4", 1, 0, NA, id="unknown-kind"),
    pytest.param("<f", 1, 0, NA, id="no-size"),
    pytest.param("<M8", 0, 0, 1, id="datetime-without-unit"),
    pytest.param("<M8[lightyears]", 0, 0, 1, id="datetime-unknown-unit"),
    pytest.param("<f8[ns]", 1, 0, NA, id="unit-on-float"),
    pytest.param([["x"]], 1, NA, NA, id="field-without-type"),
    pytest.param([["x", "<f4", [-1]]], 1, 0, NA, id="negative-subarray-shape"),
    pytest.param(8, 1, NA, NA, id="number"),
]


def count(primitive: str, node: Any) -> int | None:
    """How many findings the primitive yields, or NA when it raises NotApplicable."""
    try:
        return len(run(primitive, node))
    except NotApplicable:
        return NA


@pytest.mark.parametrize(("dtype", "encoding", "byte_order", "units"), DTYPES)
def test_dtype_primitives(dtype, encoding, byte_order, units):
    node = array(dtype=dtype, fill_value=None)
    assert count("dtype_encoding", node) == encoding
    assert count("dtype_byte_order", node) == byte_order
    assert count("dtype_datetime_units", node) == units


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        pytest.param("<f8", "NaN", 0, id="nan-string"),
        pytest.param("<f8", "-Infinity", 0, id="minus-infinity-string"),
        pytest.param("<f4", 0.5, 0, id="number"),
        pytest.param("<f4", None, 0, id="null"),
        pytest.param("<f8", float("nan"), 1, id="bare-nan"),
        pytest.param("<f8", float("inf"), 1, id="bare-infinity"),
        pytest.param("<f8", "nan", 1, id="lowercase-nan"),
        pytest.param("<f8", True, 1, id="boolean"),
    ],
)
def test_fill_value_float_encoding(dtype, fill, expected):
    assert len(run("fill_value_float_encoding", array(dtype=dtype, fill_value=fill))) == expected


def test_fill_value_float_encoding_is_not_applicable_to_integers():
    with pytest.raises(NotApplicable):
        run("fill_value_float_encoding", array(dtype="<i4", fill_value=0))


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        pytest.param("|S4", "YWI=", 0, id="base64"),
        pytest.param("|S4", None, 0, id="null"),
        pytest.param([["a", "<i4"]], "AAAAAA==", 0, id="structured-base64"),
        pytest.param("|S4", "ab!", 1, id="not-base64"),
        pytest.param("|S1", 0, 1, id="number"),
        pytest.param([["a", "<i4"]], 0, 1, id="structured-number"),
    ],
)
def test_fill_value_base64(dtype, fill, expected):
    assert len(run("fill_value_base64", array(dtype=dtype, fill_value=fill))) == expected


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        pytest.param("|b1", False, 0, id="bool"),
        pytest.param("<i4", -3, 0, id="int"),
        pytest.param("<u2", 5, 0, id="uint"),
        pytest.param("<U4", "", 0, id="unicode"),
        pytest.param("|b1", 0, 1, id="bool-as-int"),
        pytest.param("<i4", "0", 1, id="int-as-string"),
        pytest.param("<i4", 1.5, 1, id="int-as-float"),
        pytest.param("<u2", -1, 1, id="uint-negative"),
        pytest.param("<U4", 0, 1, id="unicode-as-int"),
        pytest.param("<c16", [0.0, 0.0], 0, id="complex-pair"),
        pytest.param("<c8", ["NaN", "-Infinity"], 0, id="complex-specials"),
        pytest.param("<c16", None, 0, id="complex-null"),
        pytest.param("<c16", 0, 1, id="complex-as-number"),
        pytest.param("<c16", [1.0], 1, id="complex-one-part"),
        pytest.param("<c16", [float("nan"), 0.0], 1, id="complex-bare-nan"),
        pytest.param("<c16", ["nan", 0.0], 1, id="complex-lowercase-nan"),
        pytest.param("<c16", [True, 0.0], 1, id="complex-boolean-part"),
        pytest.param("<M8[ns]", -9223372036854775808, 0, id="datetime-nat-int64-min"),
        pytest.param("<m8[s]", 3600, 0, id="timedelta-int"),
        pytest.param("<M8[ns]", "NaT", 1, id="datetime-nat-string"),
        pytest.param("<M8[D]", "2020-01-01", 1, id="datetime-iso-string"),
        pytest.param("<M8[ns]", 2**63, 1, id="datetime-outside-int64"),
        pytest.param("<m8[s]", 1.5, 1, id="timedelta-float"),
        pytest.param("|V8", "AAAAAAAAAAA=", 0, id="void-base64"),
        pytest.param("|V8", 0, 1, id="void-number"),
        pytest.param("|V4", "not base64!", 1, id="void-not-base64"),
    ],
)
def test_fill_value_matches_dtype(dtype, fill, expected):
    assert len(run("fill_value_matches_dtype", array(dtype=dtype, fill_value=fill))) == expected


@pytest.mark.parametrize("fill", [0, "", None, [1, 2]], ids=["zero", "empty-string", "null", "list"])
def test_fill_value_matches_dtype_is_not_applicable_to_object_arrays(fill):
    with pytest.raises(NotApplicable, match="defines no fill value encoding"):
        run("fill_value_matches_dtype", array(dtype="|O", fill_value=fill, filters=[{"id": "vlen-utf8"}]))


@pytest.mark.parametrize("dtype", ["<f8", "|S4", [["a", "<i4"]]], ids=["float", "bytes", "structured"])
def test_fill_value_matches_dtype_leaves_floats_bytes_and_structured_to_their_own_clauses(dtype):
    with pytest.raises(NotApplicable):
        run("fill_value_matches_dtype", array(dtype=dtype, fill_value=None))


def test_group_document_present_fails_implicit_ancestor_and_passes_explicit_root():
    tree = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, "g/a/.zarray": ZARRAY}), 2)
    assert run("group_document_present", tree.root, {"below": "array"}) == []
    (f,) = run("group_document_present", tree.get("/g"), {"below": "array"})
    assert f.details == {"key": "g/.zgroup", "below": "g/a/.zarray", "groups_stored": True}  # the root's .zgroup


def test_group_document_present_says_whether_the_store_holds_any_group():
    # tensorstore writes arrays only: no .zgroup anywhere (its writer note is about such stores only)
    tree = ZarrTree(DictStore({"g/a/.zarray": ZARRAY}), 2)
    assert [f.details["groups_stored"] for f in run("group_document_present", tree.get("/g"), {"below": "array"})] == [False]


def test_group_document_present_counts_only_the_kind_below():
    tree = ZarrTree(DictStore({"g/h/.zgroup": {"zarr_format": 2}}), 2)
    assert run("group_document_present", tree.root, {"below": "array"}) == []
    assert len(run("group_document_present", tree.root, {"below": "group"})) == 1
    assert len(run("group_document_present", tree.get("/g"), {"below": "group"})) == 1


def test_metadata_keys_allowed_fails_extra_group_key():
    tree = store(zgroup={"zarr_format": 2, "attrs": {}})
    (f,) = run("metadata_keys_allowed", tree.root, {"keys": ["zarr_format"]})
    assert "'attrs'" in f.message


# (changes, keys, findings of chunk_keys_valid (MUST: another separator or leading zeros), of chunks_inside_grid
# (SHOULD), of only_chunk_keys (a notice))
@pytest.mark.parametrize(
    ("changes", "keys", "misplaced", "outside", "other"),
    [
        pytest.param({}, ["0.0", "1.1", "0.1"], 0, 0, 0, id="dot-keys"),
        pytest.param({"dimension_separator": "/"}, ["0/0", "1/1"], 0, 0, 0, id="slash-keys"),
        pytest.param({}, ["0/0"], 1, 0, 0, id="slash-keys-without-separator"),
        pytest.param({"dimension_separator": "/"}, ["1.0"], 1, 0, 0, id="dot-keys-with-slash-separator"),
        pytest.param({}, ["5/0"], 1, 0, 0, id="other-separator-outside-grid"),
        pytest.param({}, ["2.0"], 0, 1, 0, id="outside-grid"),
        pytest.param({}, ["0"], 0, 0, 1, id="too-few-indices"),
        pytest.param({}, ["00.1"], 1, 0, 0, id="leading-zero"),
        pytest.param({"shape": [4], "chunks": [2]}, ["01"], 1, 0, 0, id="leading-zero-1d"),
        pytest.param({}, ["notes.txt", ".DS_Store", ".nczarray", ".zarray~"], 0, 0, 4, id="stray-files"),
        pytest.param({}, ["c/0/0"], 0, 0, 1, id="zarr-v3-key"),
        pytest.param({"shape": [], "chunks": []}, ["0"], 0, 0, 0, id="scalar"),
        pytest.param({"shape": [], "chunks": []}, ["0.0"], 0, 0, 1, id="scalar-wrong-key"),
    ],
)
def test_chunk_keys_valid_chunks_inside_grid_and_only_chunk_keys(changes, keys, misplaced, outside, other):
    meta = {**ZARRAY, **changes}
    tree = store(meta, {**{f"a/{k}": b"\0" for k in keys}, "a/.zattrs": {}})
    assert len(run("chunk_keys_valid", tree.get("/a"))) == misplaced
    assert len(run("chunks_inside_grid", tree.get("/a"))) == outside
    assert len(run("only_chunk_keys", tree.get("/a"))) == other


def test_chunk_keys_valid_names_the_key_a_reader_looks_for():
    tree = store(dict(ZARRAY), {"a/1/01": b"\0"})
    (f,) = run("chunk_keys_valid", tree.get("/a"))
    assert "'1.1'" in f.message and "absent, so the default" in f.message


@pytest.mark.parametrize(
    ("key", "separator"), [pytest.param("1/1", "/", id="slash"), pytest.param("01.1", ".", id="leading-zero")]
)
def test_chunk_keys_valid_details_say_whether_the_separator_is_declared_and_which_the_key_uses(key, separator):
    tree = store(dict(ZARRAY), {f"a/{key}": b"\0"})
    (f,) = run("chunk_keys_valid", tree.get("/a"))
    assert f.details == {"key": key, "declared": False, "separator": separator}


def test_fill_value_findings_name_the_dtype():
    assert run("fill_value_base64", array(dtype="|S4", fill_value=0))[0].details == {"value": 0, "dtype": "|S4"}
    assert run("fill_value_matches_dtype", array(dtype="<U4", fill_value=0))[0].details == {"value": 0, "dtype": "<U4"}


def test_chunk_keys_valid_is_not_applicable_with_unusable_chunks():
    with pytest.raises(NotApplicable):
        run("chunk_keys_valid", array(chunks=[2]))


# ------------------------------------------------------------------------------------------ consolidated metadata
XATTRS = {"units": "m"}


def consolidated_store(metadata=None, **doc) -> ZarrTree:
    """A root group with array a (and a/.zattrs), plus a .zmetadata copying them unless told otherwise."""
    docs = {".zgroup": {"zarr_format": 2}, "a/.zarray": ZARRAY, "a/.zattrs": XATTRS}
    zmetadata = {"zarr_consolidated_format": 1, "metadata": dict(docs) if metadata is None else metadata, **doc}
    return ZarrTree(DictStore({**docs, ".zmetadata": zmetadata}), 2)


def test_consolidated_metadata_matches_passes_exact_copy():
    assert run("consolidated_metadata_matches", consolidated_store().root) == []


def test_consolidated_metadata_matches_passes_empty_attrs_for_an_absent_zattrs():
    meta = {".zgroup": {"zarr_format": 2}, ".zattrs": {}, "a/.zarray": ZARRAY, "a/.zattrs": XATTRS}
    assert run("consolidated_metadata_matches", consolidated_store(meta).root) == []


def test_consolidated_metadata_matches_fails_each_stale_key_with_expected_and_found():
    stale = {".zgroup": {"zarr_format": 2}, "a/.zarray": {**ZARRAY, "shape": [2, 6]}, "b/.zarray": ZARRAY}
    got = run("consolidated_metadata_matches", consolidated_store(stale).root)
    assert [f.details["key"] for f in got] == ["a/.zarray", "a/.zattrs", "b/.zarray"]
    assert "shape: expected [4, 6], found [2, 6]" in got[0].message and got[0].details["fields"] == ["shape"]
    assert "missing from .zmetadata" in got[1].message and got[1].details["in_consolidated"] is False
    assert "no such document" in got[2].message and got[2].details["in_store"] is False


def test_consolidated_metadata_matches_keeps_json_types_apart():
    stale = {".zgroup": {"zarr_format": 2}, "a/.zarray": {**ZARRAY, "zarr_format": 2.0}, "a/.zattrs": XATTRS}
    (f,) = run("consolidated_metadata_matches", consolidated_store(stale).root)
    assert "zarr_format: expected 2, found 2.0" in f.message


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        pytest.param({"zarr_consolidated_format": 2}, "zarr_consolidated_format", id="format-2"),
        pytest.param({"zarr_consolidated_format": "1"}, "zarr_consolidated_format", id="format-string"),
        pytest.param({"metadata": []}, "metadata", id="metadata-not-an-object"),
    ],
)
def test_consolidated_metadata_matches_fails_bad_envelope(doc, field):
    got = run("consolidated_metadata_matches", consolidated_store(**doc).root)
    assert [f.details.get("field") for f in got] == [field]


def test_consolidated_metadata_matches_fails_once_on_a_document_that_is_not_an_object():
    tree = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, ".zmetadata": b"[1, 2]"}), 2)
    (f,) = run("consolidated_metadata_matches", tree.root)
    assert "JSON list" in f.message


def test_consolidated_metadata_matches_yields_a_finding_per_differing_key():
    # No cap inside the primitive: the engine keeps the first findings and counts them all (exact counts).
    items = {
        ".zgroup": {"zarr_format": 2},
        ".zmetadata": {"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}}},
    }
    items.update({f"g{i:02d}/.zgroup": {"zarr_format": 2} for i in range(25)})
    got = run("consolidated_metadata_matches", ZarrTree(DictStore(items), 2).root)
    assert len(got) == 25 and all(f.details["key"].endswith("/.zgroup") for f in got)


def test_consolidated_metadata_matches_is_not_applicable_without_zmetadata():
    with pytest.raises(NotApplicable):
        run("consolidated_metadata_matches", store().root)


def test_consolidated_metadata_matches_reads_keys_relative_to_a_subgroup():
    items = {
        ".zgroup": {"zarr_format": 2},
        "g/.zgroup": {"zarr_format": 2},
        "g/a/.zarray": ZARRAY,
        "g/.zmetadata": {"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": ZARRAY}},
    }
    assert run("consolidated_metadata_matches", ZarrTree(DictStore(items), 2).get("/g")) == []


def test_consolidated_metadata_matches_passes_zarr_python_3_nested_group_marker():
    marker = {"kind": "inline", "must_understand": False, "metadata": {}}
    items = {
        ".zgroup": {"zarr_format": 2},
        "g/.zgroup": {"zarr_format": 2},
        ".zmetadata": {
            "zarr_consolidated_format": 1,
            "metadata": {".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2, "consolidated_metadata": marker}},
        },
    }
    assert run("consolidated_metadata_matches", ZarrTree(DictStore(items), 2).root) == []


# ------------------------------------------------------------------------------------------ dtypes NumPy has, fill value ranges
@pytest.mark.parametrize(
    ("dtype", "encoding", "size"),
    [
        pytest.param("<f3", 0, 1, id="f3"),
        pytest.param("<i3", 0, 1, id="i3"),
        pytest.param("|b2", 0, 1, id="b2"),
        pytest.param("<c12", 0, 1, id="c12"),
        pytest.param("<f2", 0, 0, id="f2"),
        pytest.param("|u1", 0, 0, id="u1"),
        pytest.param("|O", 0, NA, id="object"),
        pytest.param("<U7", 0, NA, id="unicode-any-size"),
        pytest.param([["a", "<i4"], ["a", "<f8"]], 1, 0, id="duplicate-field"),
        pytest.param([["a", "<i4"], ["b", [["a", "<f8"], ["a", "<f8"]]]], 1, 0, id="duplicate-nested-field"),
    ],
)
def test_dtype_encoding_field_names_and_dtype_item_size_sizes(dtype, encoding, size):
    # A byte count the kind lacks is dtype_item_size's (zarr.dtype.item-size), reported once; field names are dtype_encoding's.
    node = array(dtype=dtype, fill_value=None)
    assert count("dtype_encoding", node) == encoding
    assert count("dtype_item_size", node) == size


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        pytest.param("|i1", 300, 1, id="i1-300"),
        pytest.param("|i1", -128, 0, id="i1-min"),
        pytest.param("|u1", 256, 1, id="u1-256"),
        pytest.param("|u1", 255, 0, id="u1-255"),
        pytest.param("<u8", 2**64, 1, id="u8-2-64"),
        pytest.param("<u8", 2**64 - 1, 0, id="u8-max"),
        pytest.param("<i8", -(2**63) - 1, 1, id="i8-below"),
    ],
)
def test_fill_value_matches_dtype_range(dtype, fill, expected):
    assert count("fill_value_matches_dtype", array(dtype=dtype, fill_value=fill)) == expected


# ------------------------------------------------------------------------------------------ strict JSON
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(b'{"a": NaN}', 1, id="bare-nan"),
        pytest.param(b'{"a": -Infinity}', 1, id="bare-minus-infinity"),
        pytest.param(b'{"a": "NaN"}', 0, id="nan-string"),
        pytest.param(b'{"a": 1.5}', 0, id="number"),
    ],
)
def test_attrs_document_object_and_document_strict_json_refuse_bare_constants(text, expected):
    tree = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, "g/.zgroup": text, "g/.zattrs": text}), 2)
    assert len(run("attrs_document_object", tree.get("/g"))) == expected
    assert len(run("document_strict_json", tree.get("/g"), {"name": ".zgroup"})) == expected


def test_attrs_document_object_is_not_applicable_in_a_zarr_v3_store():
    """A Zarr v3 node keeps its attributes in zarr.json: a stray `.zattrs` is no document of its (and no part of its
    signature, by which the clause's verdict is given to every node alike)."""
    group = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    tree = ZarrTree(DictStore({"zarr.json": group, "g/zarr.json": group, "g/.zattrs": b"[1, 2]"}), 3)
    with pytest.raises(NotApplicable, match=r"keeps its attributes in zarr\.json"):
        run("attrs_document_object", tree.get("/g"))


def test_a_stored_object_without_constants_is_the_trees_own_parse():
    # Text holding no NaN or Infinity parses strictly as the tree parses it: the tree's value is used, not a
    # second parse; text that is no JSON says why in the same words either way.
    from spec_validate.checks.zarr_metadata import _stored_object

    tree = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2}, "g/.zattrs": b'{"a": [1, 2]}'}), 2)
    key, doc, problem = _stored_object(tree.get("/g"), ".zattrs")
    assert (key, doc, problem) == ("g/.zattrs", {"a": [1, 2]}, None)
    assert doc is tree.get("/g").read_json(".zattrs")
    broken = ZarrTree(DictStore({".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2}, "g/.zattrs": b'{"a": 1,}'}), 2)
    assert _stored_object(broken.get("/g"), ".zattrs")[2].startswith("g/.zattrs is not valid JSON (")


def test_document_strict_json_is_not_applicable_without_the_document():
    with pytest.raises(NotApplicable):
        run("document_strict_json", array(), {"name": ".zgroup"})


# ------------------------------------------------------------------------------------------ keys as stored
class RawKeyStore(DictStore):
    """A store that also holds keys the tree cannot name (as a zip file or a directory may)."""

    def __init__(self, items: dict[str, Any], raw: list[str]) -> None:
        super().__init__(items)
        self.raw = raw

    def raw_keys(self) -> list[str]:
        return sorted(list(self.items) + self.raw)


@pytest.mark.parametrize(
    ("raw", "normalized", "ascii"),
    [
        pytest.param([], 0, 0, id="clean"),
        pytest.param(["a//b/.zattrs"], 1, 0, id="double-slash"),
        pytest.param(["/a/.zattrs"], 1, 0, id="leading-slash"),
        pytest.param(["a\\b/.zattrs"], 1, 0, id="backslash"),
        pytest.param(["../x/.zattrs", "a/./b"], 2, 0, id="dot-segments"),
        pytest.param(["donn\u00e9es/.zattrs"], 0, 1, id="not-ascii"),
    ],
)
def test_keys_normalized_and_keys_ascii(raw, normalized, ascii):
    tree = ZarrTree(RawKeyStore({".zgroup": {"zarr_format": 2}, "a/.zarray": ZARRAY}, raw), 2)
    assert len(run("keys_normalized", tree.root)) == normalized
    assert len(run("keys_ascii", tree.root)) == ascii


def test_keys_primitives_are_not_applicable_below_the_root():
    with pytest.raises(NotApplicable):
        run("keys_normalized", array())


@pytest.mark.parametrize(
    ("dtype", "relevant", "size"),
    [
        pytest.param("<i4", 0, 0, id="little-endian-int"),
        pytest.param(">f8", 0, 0, id="big-endian-float"),
        pytest.param("|u1", NA, 0, id="one-byte-orderless"),
        pytest.param("|b1", NA, 0, id="boolean-orderless"),
        pytest.param("|S12", NA, NA, id="bytes-any-size"),
        pytest.param("|O", NA, NA, id="object"),
        pytest.param("<U5", 0, NA, id="unicode-ordered"),
        pytest.param("|U5", 1, NA, id="unicode-pipe"),
        pytest.param("|i4", 1, 0, id="int-pipe"),
        pytest.param("|f8", 1, 0, id="float-pipe"),
        pytest.param("<f3", 0, 1, id="three-byte-float"),
        pytest.param("|b2", NA, 1, id="two-byte-boolean"),
        pytest.param("<c4", 0, 1, id="four-byte-complex"),
        pytest.param("<M4[s]", 0, 1, id="four-byte-datetime"),
        pytest.param("<f2", 0, 0, id="half"),
        pytest.param([["x", "|i8"], ["y", "<i3"]], 1, 1, id="structured-fields"),
        pytest.param("<f", NA, NA, id="no-size"),
    ],
)
def test_dtype_byte_order_relevant_and_item_size(dtype, relevant, size):
    node = array(dtype=dtype, fill_value=None)
    assert count("dtype_byte_order_relevant", node) == relevant
    assert count("dtype_item_size", node) == size


def test_dtype_item_size_fails_naming_kind_and_sizes():
    (finding,) = run("dtype_item_size", array(dtype="<f3", fill_value=None))
    assert finding.message == "dtype is '<f3': kind 'f' has no 3-byte type, expected 2, 4, 8, 16"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        pytest.param({"x": 1, "y": [1, 2]}, {"x": 1, "y": [1, 2]}, True, id="equal"),
        pytest.param({"x": 1, "y": 2}, {"y": 2, "x": 1}, True, id="key-order-ignored"),
        pytest.param({"f": float("nan")}, {"f": float("nan")}, True, id="nan-equals-nan"),
        pytest.param({"v": 1}, {"v": 1.0}, False, id="int-and-float-apart"),
        pytest.param({"v": True}, {"v": 1}, False, id="true-and-1-apart"),
        pytest.param({"v": False}, {"v": 0}, False, id="false-and-0-apart"),
        pytest.param({"v": 0.0}, {"v": -0.0}, False, id="zero-signs-apart"),
        pytest.param({"v": 2**70}, {"v": 2**70}, True, id="big-integers"),
        pytest.param({"v": "1"}, {"v": 1}, False, id="string-and-number-apart"),
    ],
)
def test_same_json_keeps_json_values_of_other_types_apart(a, b, same):
    from spec_validate.checks.zarr_metadata import _same_json

    assert _same_json(a, b) is same
    assert _same_json(b, a) is same


def test_dtype_encoding_finds_repeated_field_names_in_work_linear_in_the_fields():
    # Once each name was counted with list.count: a dtype of 200,000 fields took hours. Comparisons are counted
    # (never timed): per field, as many at 20,000 fields as at 1,000.
    from spec_validate.checks.zarr_metadata import _walk_dtype

    def comparisons_per_field(n: int) -> float:
        spec = [[CountingName(f"f{i}"), "<i1"] for i in range(n)] + [[CountingName("f0"), "<i1"]]
        CountingName.comparisons = 0
        problems = [problem for _, _, problem in _walk_dtype(spec) if problem]
        assert problems == ["names the field 'f0' 2 times, expected each field name once"]
        return CountingName.comparisons / n

    assert comparisons_per_field(20_000) <= 2 * max(1.0, comparisons_per_field(1_000))


def test_keys_looked_at_together_miss_no_key_that_is_not_normalized():
    """`_any_unnormalized` tells, from all keys at once, whether one may be at fault: never no where one is (random
    keys of slashes, dots, backslashes and newlines), and no for every key of a plain store."""
    import random

    from spec_validate.checks.zarr_metadata import _any_unnormalized

    def at_fault(key: str) -> bool:
        parts = key.replace("\\", "/").split("/")
        return "\\" in key or key.startswith("/") or key.endswith("/") or "//" in key or any(p in (".", "..") for p in parts)

    rng = random.Random(39)
    for _ in range(3000):
        keys = ["".join(rng.choice("ab./\\\n") for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 4))]
        if any(at_fault(k) for k in keys):
            assert _any_unnormalized(keys), keys
    assert not _any_unnormalized(["a/.zattrs", "a/b/0.0", ".zgroup", "c/..x", "d/x.", "e/.../f"])


@pytest.mark.parametrize(
    ("copy", "expected"),
    [
        pytest.param({"a": 1}, 0, id="same"),
        pytest.param({"a": 1.0}, 1, id="float-for-int"),
        pytest.param({"a": True}, 1, id="bool-for-int"),
        pytest.param({"a": 2}, 1, id="other-value"),
    ],
)
def test_consolidated_copies_compared_at_once_still_tell_types_apart(copy, expected):
    """Every entry is compared with its document in one marshalling of each side where the keys agree: 1, 1.0 and
    true are still different JSON values, and a difference is then found entry by entry."""
    zattrs = {"a": 1}
    store = {
        ".zgroup": {"zarr_format": 2},
        "g/.zgroup": {"zarr_format": 2},
        "g/.zattrs": zattrs,
        ".zmetadata": {
            "zarr_consolidated_format": 1,
            "metadata": {".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2}, "g/.zattrs": copy},
        },
    }
    tree = ZarrTree(DictStore(store), 2)
    found = run("consolidated_metadata_matches", tree.get("/"))
    assert len(found) == expected
