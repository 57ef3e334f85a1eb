"""CXG primitives: TileDB domains, X_col_shift beside X, embeddings, cxg_version, cxg_schema index."""

from __future__ import annotations

import json

import numpy as np
import pytest
from memory_tree import Arr, fails, findings, passes, tree

from spec_validate.model import NotApplicable
from spec_validate.nodes.base import Storage


def tdb(values, dims=(("d0", "<u4", 0),), sparse=False, attrs=None, meta=None):
    """A memory array carrying TileDB schema facts as the tiledb backend reports them."""
    values = np.asarray(values)
    extra = {
        "sparse": sparse,
        "dims": [
            {"name": n, "dtype": t, "domain": [lo, lo + values.shape[i] - 1], "tile": 1} for i, (n, t, lo) in enumerate(dims)
        ],
        "attrs": [{"name": a, "dtype": values.dtype.str} for a in (attrs or [""])],
    }
    return Arr(values, attrs=meta or {}, storage=Storage(format="tiledb", extra=extra))


TILEDB_DOMAIN = [
    pytest.param(tdb(np.zeros(3)), 0, id="uint32-zero-based"),
    pytest.param(tdb(np.zeros((3, 2)), dims=(("obs", "<u4", 0), ("var", "<u4", 0))), 0, id="two-uint32-dims"),
    pytest.param(tdb(np.zeros(3), dims=(("d0", "<u8", 0),)), 1, id="uint64"),
    pytest.param(tdb(np.zeros(3), dims=(("d0", "<i8", 0),)), 1, id="int64"),
    pytest.param(tdb(np.zeros(3), dims=(("d0", "<u4", 1),)), 1, id="starts-at-one"),
]


@passes("spec,expected", TILEDB_DOMAIN)
def test_tiledb_domain_passes(spec, expected):
    assert findings("tiledb_domain", tree({"a": spec}).get("/a"), {"dtype": "uint32", "zero_based": True}) == []


@fails("spec,expected", TILEDB_DOMAIN)
def test_tiledb_domain_fails(spec, expected):
    assert len(findings("tiledb_domain", tree({"a": spec}).get("/a"), {"dtype": "uint32", "zero_based": True})) == expected


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(Arr(np.zeros(3)), id="not-tiledb"),
        pytest.param(
            Arr(np.zeros(3), storage=Storage(format="tiledb", extra={"attribute_of": "/Xr", "attrs": []})),
            id="no-dimensions-in-the-facts",
        ),
    ],
)
def test_tiledb_domain_passes_not_applicable(spec):
    with pytest.raises(NotApplicable):
        findings("tiledb_domain", tree({"a": spec}).get("/a"), {"dtype": "uint32", "zero_based": True})


ABSENT_UNLESS_SPARSE = [
    pytest.param({}, 0, id="no-X"),
    pytest.param({"X": tdb(np.zeros(3), sparse=True)}, 0, id="sparse-X"),
    pytest.param({"X": tdb(np.zeros(3))}, 1, id="dense-X"),
]


@pytest.mark.parametrize("siblings,expected", ABSENT_UNLESS_SPARSE)
def test_absent_unless_sparse(siblings, expected):
    t = tree({"X_col_shift": tdb(np.zeros(3)), **siblings})
    assert len(findings("absent_unless_sparse", t.get("/X_col_shift"), {"other": "../X"})) == expected


def test_absent_unless_sparse_passes_not_applicable_beside_an_array_without_tiledb_facts():
    t = tree({"X_col_shift": tdb(np.zeros(3)), "X": np.zeros(3)})
    with pytest.raises(NotApplicable, match="whether it is sparse is unknown"):
        findings("absent_unless_sparse", t.get("/X_col_shift"), {"other": "../X"})


@pytest.mark.parametrize(
    "children,expected",
    [
        pytest.param({"umap": np.zeros((3, 2))}, 0, id="one-embedding"),
        pytest.param({}, 1, id="empty"),
        pytest.param({"sub": {}}, 1, id="only-a-group"),
    ],
)
def test_array_children_at_least(children, expected):
    assert len(findings("array_children_at_least", tree({"emb": children}).get("/emb"), {"min": 1})) == expected


@pytest.mark.parametrize(
    "shape,expected",
    [
        pytest.param((3, 2), 0, id="two-columns"),
        pytest.param((3, 5), 0, id="five-columns"),
        pytest.param((3, 1), 1, id="one-column"),
        pytest.param((3,), 1, id="one-dimensional"),
    ],
)
def test_shape_dim_at_least(shape, expected):
    node = tree({"e": np.zeros(shape)}).get("/e")
    assert len(findings("shape_dim_at_least", node, {"axis": 1, "min": 2})) == expected


@pytest.mark.parametrize(
    "dtype,expected",
    [
        pytest.param("<f4", 0, id="float32"),
        pytest.param(">f4", 0, id="float32-big-endian"),
        pytest.param("<f8", 1, id="float64"),
        pytest.param("<i4", 1, id="int32"),
    ],
)
def test_dtype_equals(dtype, expected):
    node = tree({"X": np.zeros(2, dtype=dtype)}).get("/X")
    assert len(findings("dtype_equals", node, {"dtype": "float32"})) == expected


SEMVER = [
    pytest.param("0.3.0", 0, id="release"),
    pytest.param("1.0.0-rc.1+build.5", 0, id="pre-release-build"),
    pytest.param("0.1", 1, id="cxg-0.1-short-form"),
    pytest.param("v0.3.0", 1, id="v-prefix"),
    pytest.param("01.0.0", 1, id="leading-zero"),
]


@passes("value,expected", SEMVER)
def test_attr_semver_passes(value, expected):
    assert (
        findings("attr_semver", tree({"m": Arr(np.zeros(1), attrs={"cxg_version": value})}).get("/m"), {"key": "cxg_version"})
        == []
    )


@fails("value,expected", SEMVER)
def test_attr_semver_fails(value, expected):
    assert (
        len(
            findings("attr_semver", tree({"m": Arr(np.zeros(1), attrs={"cxg_version": value})}).get("/m"), {"key": "cxg_version"})
        )
        == expected
    )


@pytest.mark.parametrize("attrs", [pytest.param({}, id="absent"), pytest.param({"cxg_version": 3}, id="not-a-string")])
def test_attr_semver_passes_not_applicable(attrs):
    with pytest.raises(NotApplicable, match="no string attribute 'cxg_version'"):
        findings("attr_semver", tree({"m": Arr(np.zeros(1), attrs=attrs)}).get("/m"), {"key": "cxg_version"})


KNOWN = {"0.1": "the first version", "0.2.0": "converted from Corpora schema files"}


@pytest.mark.parametrize(
    "value,message",
    [
        pytest.param("0.3.0", None, id="current"),
        pytest.param(
            "0.2.0", "cxg_version is '0.2.0': CXG 0.2.0, converted from Corpora schema files; this pack checks 0.3.0", id="0.2.0"
        ),
        pytest.param(
            "0.1", "cxg_version is '0.1': CXG 0.1, the first version; this pack checks 0.3.0", id="0.1-not-semver-but-known"
        ),
        pytest.param(
            "0.4.0",
            "cxg_version is '0.4.0', a version the spec's version history does not list; this pack checks 0.3.0",
            id="unknown-semver",
        ),
    ],
)
def test_cxg_version_is(value, message):
    node = tree({"m": Arr(np.zeros(1), attrs={"cxg_version": value})}).get("/m")
    found = findings("cxg_version_is", node, {"key": "cxg_version", "version": "0.3.0", "known": KNOWN})
    assert [f.message for f in found] == ([message] if message else [])


@pytest.mark.parametrize(
    "attrs",
    [
        pytest.param({"cxg_version": "v0.3.0"}, id="not-a-version-left-to-attr_semver"),
        pytest.param({"cxg_version": 3}, id="not-a-string"),
        pytest.param({}, id="absent"),
    ],
)
def test_cxg_version_is_passes_not_applicable(attrs):
    node = tree({"m": Arr(np.zeros(1), attrs=attrs)}).get("/m")
    with pytest.raises(NotApplicable):
        findings("cxg_version_is", node, {"key": "cxg_version", "version": "0.3.0", "known": KNOWN})


def test_cxg_version_is_fails_names_found_version_and_meaning():
    node = tree({"m": Arr(np.zeros(1), attrs={"cxg_version": "0.2.0"})}).get("/m")
    (f,) = findings("cxg_version_is", node, {"key": "cxg_version", "version": "0.3.0", "known": KNOWN})
    assert f.details == {"value": "0.2.0", "expected": "0.3.0", "meaning": KNOWN["0.2.0"]}


@pytest.mark.parametrize(
    "schema,expected",
    [
        pytest.param({"index": "name_0"}, 0, id="names-attribute"),
        pytest.param({"index": "barcode"}, 1, id="unknown-attribute"),
        pytest.param({"name_0": {"type": "string"}}, 1, id="no-index"),
        pytest.param({"index": 3}, 1, id="index-not-string"),
    ],
)
def test_schema_index_names_attribute(schema, expected):
    meta = {"cxg_schema": json.dumps(schema)}
    node = tree({"obs": tdb(np.zeros(3), attrs=["name_0", "cell_type"], meta=meta)}).get("/obs")
    assert len(findings("schema_index_names_attribute", node, {"key": "cxg_schema"})) == expected


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(tdb(np.zeros(3), meta={"cxg_schema": "not json"}), id="not-json-left-to-attr_json"),
        pytest.param(tdb(np.zeros(3), meta={"cxg_schema": "[1]"}), id="not-an-object"),
        pytest.param(tdb(np.zeros(3)), id="absent"),
        pytest.param(Arr(np.zeros(3), attrs={"cxg_schema": json.dumps({"index": "name_0"})}), id="not-tiledb"),
    ],
)
def test_schema_index_names_attribute_passes_not_applicable(spec):
    with pytest.raises(NotApplicable):
        findings("schema_index_names_attribute", tree({"obs": spec}).get("/obs"), {"key": "cxg_schema"})


TILEDB_ATTRIBUTES = [
    pytest.param(tdb(np.zeros(3)), {"names": [""]}, 0, id="anonymous"),
    pytest.param(tdb(np.zeros(3, "f4"), attrs=["", "var"]), {"names": ["", "var"], "kinds": "iuf"}, 0, id="pair-numeric"),
    pytest.param(tdb(np.zeros(3), attrs=["data"]), {"names": [""]}, 1, id="named"),
    pytest.param(tdb(np.zeros(3), attrs=["var", ""]), {"names": ["", "var"]}, 1, id="order"),
    pytest.param(tdb(np.zeros(3), attrs=[""]), {"names": ["", "obs"]}, 1, id="missing-second"),
    pytest.param(tdb(np.array([b"a", b"b"]), attrs=["", "var"]), {"names": ["", "var"], "kinds": "iuf"}, 2, id="not-numeric"),
]


@passes("spec,options,expected", TILEDB_ATTRIBUTES)
def test_tiledb_attributes_passes(spec, options, expected):
    assert findings("tiledb_attributes", tree({"a": spec}).get("/a"), options) == []


@fails("spec,options,expected", TILEDB_ATTRIBUTES)
def test_tiledb_attributes_fails(spec, options, expected):
    assert len(findings("tiledb_attributes", tree({"a": spec}).get("/a"), options)) == expected


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(Arr(np.zeros(3)), id="not-tiledb"),
        pytest.param(
            Arr(np.zeros(3), storage=Storage(format="tiledb", extra={"attribute_of": "/Xr", "attrs": []})),
            id="one-attribute-of-an-array",
        ),
    ],
)
def test_tiledb_attributes_passes_not_applicable(spec):
    with pytest.raises(NotApplicable):
        findings("tiledb_attributes", tree({"a": spec}).get("/a"), {"names": [""]})


@pytest.mark.parametrize(
    "sparse,want,expected",
    [
        pytest.param(True, True, 0, id="sparse"),
        pytest.param(False, False, 0, id="dense"),
        pytest.param(False, True, 1, id="dense-for-sparse"),
        pytest.param(True, False, 1, id="sparse-for-dense"),
    ],
)
def test_tiledb_sparse(sparse, want, expected):
    node = tree({"Xr": tdb(np.zeros(3), sparse=sparse)}).get("/Xr")
    assert len(findings("tiledb_sparse", node, {"sparse": want})) == expected


DTYPE_SAME_AS = [
    pytest.param({"X": np.zeros(3, "f4")}, "<f4", 0, id="same-as-X"),
    pytest.param({"Xr": np.zeros(3, ">f4")}, "<f4", 0, id="byte-order-aside"),
    pytest.param({"X": np.zeros(3, "f4"), "Xr": np.zeros(3, "f8")}, "<f4", 0, id="first-found-wins"),
    pytest.param({"Xr": np.zeros(3, "f4")}, "<f8", 1, id="differs-from-Xr"),
]


@passes("siblings,dtype,expected", DTYPE_SAME_AS)
def test_dtype_same_as_passes(siblings, dtype, expected):
    node = tree({"shift": np.zeros(3, dtype), **siblings}).get("/shift")
    assert findings("dtype_same_as", node, {"others": ["../X", "../Xr"]}) == []


@fails("siblings,dtype,expected", DTYPE_SAME_AS)
def test_dtype_same_as_fails(siblings, dtype, expected):
    node = tree({"shift": np.zeros(3, dtype), **siblings}).get("/shift")
    assert len(findings("dtype_same_as", node, {"others": ["../X", "../Xr"]})) == expected


def test_dtype_same_as_passes_not_applicable_without_others():
    with pytest.raises(NotApplicable):
        findings("dtype_same_as", tree({"shift": np.zeros(3)}).get("/shift"), {"others": ["../X", "../Xr"]})


def metadata(**attrs):
    return tree({"m": Arr(np.zeros(1), attrs=attrs)}).get("/m")


JSON_FIELD = [
    pytest.param({"about": "https://example.org/x"}, "http-url", 0, id="https-url"),
    pytest.param({"about": "http://example.org"}, "http-url", 0, id="http-url"),
    pytest.param({"about": None}, "http-url", 1, id="null"),
    pytest.param({"about": "example.org"}, "http-url", 1, id="no-scheme"),
    pytest.param({"about": "ftp://example.org"}, "http-url", 1, id="ftp"),
    pytest.param({"about": "https://"}, "http-url", 1, id="no-host"),
    pytest.param({"about": "Lung"}, "string", 0, id="string"),
    pytest.param({"about": 5}, "string", 1, id="number-for-string"),
]


@passes("value,type,expected", JSON_FIELD)
def test_attr_json_field_passes(value, type, expected):
    node = metadata(cxg_properties=json.dumps(value))
    assert findings("attr_json_field", node, {"key": "cxg_properties", "field": "about", "type": type}) == []


@fails("value,type,expected", JSON_FIELD)
def test_attr_json_field_fails(value, type, expected):
    node = metadata(cxg_properties=json.dumps(value))
    assert len(findings("attr_json_field", node, {"key": "cxg_properties", "field": "about", "type": type})) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("not json", id="not-json"),
        pytest.param("[1]", id="not-object"),
        pytest.param(None, id="absent"),
        pytest.param('{"title": "x"}', id="field-absent"),
    ],
)
def test_attr_json_field_passes_not_applicable(text):
    node = metadata(**({"cxg_properties": text} if text is not None else {}))
    with pytest.raises(NotApplicable):
        findings("attr_json_field", node, {"key": "cxg_properties", "field": "about", "type": "http-url"})


COLOR_TABLES = [
    pytest.param({}, 0, id="empty"),
    pytest.param({"louvain_colors": {"0": "#FFFFFF", "1": "#000000"}}, 0, id="spec-example"),
    pytest.param({"louvain": {"0": "#FFFFFF"}}, 1, id="name-without-suffix"),
    pytest.param({"louvain_colors": ["#FFFFFF"]}, 1, id="table-not-dict"),
    pytest.param({"louvain_colors": {"0": "white", "1": "#FFF"}}, 1, id="not-rgb-hex"),
    pytest.param({"louvain": {"0": "white"}}, 2, id="both"),
]


@passes("value,expected", COLOR_TABLES)
def test_color_tables_passes(value, expected):
    node = metadata(cxg_category_colors=json.dumps(value))
    assert findings("color_tables", node, {"key": "cxg_category_colors", "suffix": "_colors"}) == []


@fails("value,expected", COLOR_TABLES)
def test_color_tables_fails(value, expected):
    node = metadata(cxg_category_colors=json.dumps(value))
    assert len(findings("color_tables", node, {"key": "cxg_category_colors", "suffix": "_colors"})) == expected


SCHEMA_COLUMNS = [
    pytest.param({"index": "name_0", "name_0": {"type": "string"}, "cell_type": {"type": "categorical"}}, 0, id="columns"),
    pytest.param({"index": "name_0"}, 0, id="index-only"),
    pytest.param({"index": "name_0", "batch": {"type": "string"}}, 1, id="unknown-column"),
    pytest.param({"index": "name_0", "cell_type": "categorical"}, 1, id="entry-not-dict"),
]


@passes("schema,expected", SCHEMA_COLUMNS)
def test_schema_columns_name_attributes_passes(schema, expected):
    node = tree({"obs": tdb(np.zeros(3), attrs=["name_0", "cell_type"], meta={"cxg_schema": json.dumps(schema)})}).get("/obs")
    assert findings("schema_columns_name_attributes", node, {"key": "cxg_schema", "except": ["index"]}) == []


@fails("schema,expected", SCHEMA_COLUMNS)
def test_schema_columns_name_attributes_fails(schema, expected):
    node = tree({"obs": tdb(np.zeros(3), attrs=["name_0", "cell_type"], meta={"cxg_schema": json.dumps(schema)})}).get("/obs")
    assert len(findings("schema_columns_name_attributes", node, {"key": "cxg_schema", "except": ["index"]})) == expected


BOOLEAN_SCHEMA = json.dumps({"index": "name_0", "flag": {"type": "boolean"}, "count": {"type": "int32"}})


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        pytest.param("flag", np.array([1, 0, 0, 1], np.uint8), 0, id="ones-and-zeros"),
        pytest.param("flag", np.array([1, 0, 2, 1, 255], np.uint8), 2, id="two-and-255"),
    ],
)
def test_boolean_column_values(name, values, expected):
    node = tree({"obs": {"@attrs": {"cxg_schema": BOOLEAN_SCHEMA}, name: values}}).get(f"/obs/{name}")
    got = findings("boolean_column_values", node, {"key": "cxg_schema"})
    assert len(got) == expected
    assert [f.index for f in got] == [(2,), (4,)][:expected]


BOOLEAN_DTYPE = [
    pytest.param(np.array([1, 0, 0, 1], np.uint8), 0, id="uint8"),
    pytest.param(np.array([1, 0, 0, 1], np.int8), 1, id="int8"),
    pytest.param(np.array([1.0, 0.0, 0.0, 1.0], np.float32), 1, id="float32"),
    pytest.param(np.array(["1", "0"], dtype=object), 1, id="strings"),
]
UINT8_BOOLEANS = {"key": "cxg_schema", "type": "boolean", "dtype": "uint8"}


@passes("values,expected", BOOLEAN_DTYPE)
def test_schema_hinted_dtype_passes(values, expected):
    node = tree({"obs": {"@attrs": {"cxg_schema": BOOLEAN_SCHEMA}, "flag": values}}).get("/obs/flag")
    assert findings("schema_hinted_dtype", node, UINT8_BOOLEANS) == []


@fails("values,expected", BOOLEAN_DTYPE)
def test_schema_hinted_dtype_fails(values, expected):
    node = tree({"obs": {"@attrs": {"cxg_schema": BOOLEAN_SCHEMA}, "flag": values}}).get("/obs/flag")
    (f,) = findings("schema_hinted_dtype", node, UINT8_BOOLEANS)
    assert f.details == {"dtype": values.dtype.name}


@pytest.mark.parametrize("name", ["count", "absent_from_schema"])
def test_schema_hinted_dtype_passes_not_applicable_on_other_columns(name):
    node = tree({"obs": {"@attrs": {"cxg_schema": BOOLEAN_SCHEMA}, name: np.array([5, 7], np.int8)}}).get(f"/obs/{name}")
    with pytest.raises(NotApplicable):
        findings("schema_hinted_dtype", node, UINT8_BOOLEANS)


@pytest.mark.parametrize("name", ["count", "absent_from_schema"])
def test_boolean_column_values_passes_not_applicable_on_other_columns(name):
    node = tree({"obs": {"@attrs": {"cxg_schema": BOOLEAN_SCHEMA}, name: np.array([5, 7])}}).get(f"/obs/{name}")
    with pytest.raises(NotApplicable):
        findings("boolean_column_values", node, {"key": "cxg_schema"})


CXG_NAMES = {
    "prefix": "cxg_",
    "defined": {
        "/": ["cxg_group_metadata"],
        "/obs": ["cxg_schema"],
        "/cxg_group_metadata": ["cxg_version", "cxg_properties"],
    },
}


def cxg_names_tree(**extra):
    layout = {
        "obs": tdb(np.zeros(3), attrs=["name_0", "cell_type"], meta={"cxg_schema": "{}"}),
        "cxg_group_metadata": tdb(np.zeros(1), meta={"cxg_version": "0.3.0", "cxg_properties": "{}"}),
        "emb": {"umap": tdb(np.zeros((3, 2)))},
    }
    layout.update(extra)
    return tree(layout)


@pytest.mark.parametrize("path", ["/", "/obs", "/cxg_group_metadata", "/emb", "/emb/umap"])
def test_prefixed_names_defined_passes_the_names_the_spec_defines_where_it_defines_them(path):
    assert findings("prefixed_names_defined", cxg_names_tree().get(path), CXG_NAMES) == []


@pytest.mark.parametrize(
    ("extra", "path", "name", "kind"),
    [
        pytest.param({"cxg_private": tdb(np.zeros(1))}, "/cxg_private", "cxg_private", "member", id="member"),
        pytest.param(
            {"cxg_group_metadata": tdb(np.zeros(1), meta={"cxg_version": "0.3.0", "cxg_private": "x"})},
            "/cxg_group_metadata",
            "cxg_private",
            "metadata",
            id="group-metadata-key",
        ),
        pytest.param({"var": tdb(np.zeros(3), meta={"cxg_schema": "{}"})}, "/var", "cxg_schema", "metadata", id="key-elsewhere"),
        pytest.param(
            {"obs": tdb(np.zeros(3), attrs=["name_0", "cxg_flag"], meta={"cxg_schema": "{}"})},
            "/obs",
            "cxg_flag",
            "attribute",
            id="column",
        ),
        pytest.param(
            {"emb": {"cxg_group_metadata": tdb(np.zeros(1))}},
            "/emb/cxg_group_metadata",
            "cxg_group_metadata",
            "member",
            id="defined-name-elsewhere",
        ),
    ],
)
def test_prefixed_names_defined_fails_a_prefixed_name_the_spec_does_not_define_there(extra, path, name, kind):
    (f,) = findings("prefixed_names_defined", cxg_names_tree(**extra).get(path), CXG_NAMES)
    assert f.details == {"name": name, "kind": kind}


def test_prefixed_names_defined_passes_columns_as_nodes_judged_with_their_array():
    attribute = Arr(np.zeros(3), storage=Storage(format="tiledb", extra={"attribute_of": "/obs", "attrs": [{"name": "cxg_x"}]}))
    node = tree({"obs": {"cxg_x": attribute}}).get("/obs/cxg_x")
    assert findings("prefixed_names_defined", node, CXG_NAMES) == []
