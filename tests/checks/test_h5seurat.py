"""h5Seurat primitives: R matrix dimensions, attributes naming entries elsewhere, string storage of string arrays."""

from __future__ import annotations

import numpy as np
import pytest
from counting_names import CountingName
from memory_tree import Arr, fails, findings, passes, tree

from spec_validate.model import NotApplicable
from spec_validate.nodes.base import Storage, StringStorage

VLEN = Storage("hdf5", StringStorage("variable", "utf-8", "variable-length utf-8 string"))
FIXED = Storage("hdf5", StringStorage("fixed", "ascii", "fixed[3] ascii string"))


def seurat(dense_shape=(5, 3), sparse_dims=(3, 5)):
    # A dense 3 x 5 (R order) matrix is stored as 5 x 3; a sparse one says dims [3, 5].
    return tree(
        {
            "cell.names": np.array(["a", "b", "c", "d", "e"], dtype=object),
            "features": np.array(["f1", "f2", "f3"], dtype=object),
            "dense": np.zeros(dense_shape),
            "sparse": {"@attrs": {"dims": list(sparse_dims)}},
            "nodims": {},
            "assays": {"RNA": {}},
            "red": {"@attrs": {"active.assay": ["RNA"], "many": ["RNA", "ADT"], "single": "RNA"}},
        }
    )


MATRIX_DIMS = [
    pytest.param("/dense", {"rows": 3, "cols": 5}, 0, id="dense-transposed"),
    pytest.param(
        "/sparse",
        {"rows": {"node": "/features", "length": True}, "cols": {"node": "/cell.names", "length": True}},
        0,
        id="sparse-dims-refs",
    ),
    pytest.param("/dense", {"other": "/sparse"}, 0, id="dense-like-sparse"),
    pytest.param("/dense", {"rows": 5}, 1, id="dense-stored-order-is-wrong"),
    pytest.param("/sparse", {"cols": 4}, 1, id="sparse-cols"),
    pytest.param("/dense", {"rows": 4, "cols": 4}, 2, id="both-wrong"),
]


@passes("path,options,expected", MATRIX_DIMS)
def test_matrix_dims_equal_passes(path, options, expected):
    t = seurat()
    assert findings("matrix_dims_equal", t.get(path), options) == []


@fails("path,options,expected", MATRIX_DIMS)
def test_matrix_dims_equal_fails(path, options, expected):
    t = seurat()
    assert len(findings("matrix_dims_equal", t.get(path), options)) == expected


def test_matrix_dims_equal_fails_other_with_different_dims():
    t = seurat(sparse_dims=(3, 4))
    (f,) = findings("matrix_dims_equal", t.get("/dense"), {"other": "/sparse"})
    assert "3 x 5" in f.message and "3 x 4" in f.message


def test_matrix_dims_equal_passes_not_applicable_without_dims():
    t = seurat()
    with pytest.raises(NotApplicable):
        findings("matrix_dims_equal", t.get("/nodims"), {"rows": 3})


ATTR_NAMES = [
    pytest.param("active.assay", 0, id="list-of-one"),
    pytest.param("single", 0, id="plain-string"),
    pytest.param("many", 1, id="one-missing-of-two"),
]


@passes("key,expected", ATTR_NAMES)
def test_attr_values_name_children_passes(key, expected):
    assert findings("attr_values_name_children", seurat().get("/red"), {"key": key, "of": "/assays"}) == []


@fails("key,expected", ATTR_NAMES)
def test_attr_values_name_children_fails(key, expected):
    (f,) = findings("attr_values_name_children", seurat().get("/red"), {"key": key, "of": "/assays"})
    assert "'ADT'" in f.message


def test_attr_values_name_children_passes_not_applicable_without_target():
    with pytest.raises(NotApplicable):
        findings("attr_values_name_children", seurat().get("/red"), {"key": "single", "of": "/nowhere"})


def test_attr_values_name_children_passes_not_applicable_without_the_attribute():
    with pytest.raises(NotApplicable, match="no strings in attribute 'absent'"):
        findings("attr_values_name_children", seurat().get("/red"), {"key": "absent", "of": "/assays"})


STRINGS = [
    pytest.param(Arr(np.array(["a"], dtype=object), storage=VLEN), 0, id="vlen-utf8"),
    pytest.param(Arr(np.array([b"abc"]), storage=FIXED), 1, id="fixed-ascii"),
]


@passes("arr,expected", STRINGS)
def test_strings_stored_as_passes(arr, expected):
    node = tree({"s": arr}).get("/s")
    assert findings("strings_stored_as", node, {"length": "variable", "charset": "utf-8"}) == []


@fails("arr,expected", STRINGS)
def test_strings_stored_as_fails(arr, expected):
    node = tree({"s": arr}).get("/s")
    assert len(findings("strings_stored_as", node, {"length": "variable", "charset": "utf-8"})) == expected


def test_strings_stored_as_passes_precondition_excludes_numbers():
    from spec_validate.checks import registry

    assert registry.get("strings_stored_as").dtype_kinds == "OSU"


ATTR_STRINGS = [
    pytest.param("single", {"count": 1}, 0, id="scalar-is-one"),
    pytest.param("active.assay", {"count": 1}, 0, id="one-element-list"),
    pytest.param("many", {}, 0, id="one-or-more"),
    pytest.param("many", {"count": 1}, 1, id="two-for-one"),
    pytest.param("number", {}, 1, id="not-strings"),
]


@passes("key,options,expected", ATTR_STRINGS)
def test_attr_strings_passes(key, options, expected):
    node = tree({"g": {"@attrs": {"single": "x", "active.assay": ["RNA"], "many": ["a", "b"], "number": 3}}}).get("/g")
    assert findings("attr_strings", node, {"key": key, **options}) == []


@fails("key,options,expected", ATTR_STRINGS)
def test_attr_strings_fails(key, options, expected):
    node = tree({"g": {"@attrs": {"single": "x", "active.assay": ["RNA"], "many": ["a", "b"], "number": 3}}}).get("/g")
    assert len(findings("attr_strings", node, {"key": key, **options})) == expected


def test_attr_strings_passes_not_applicable_when_absent():
    with pytest.raises(NotApplicable, match="no attribute 'absent'"):
        findings("attr_strings", tree({"g": {}}).get("/g"), {"key": "absent", "count": 1})


# ------------------------------------------------------------------ attribute and compound-member string storage
ATTR_VLEN = StringStorage("variable", "utf-8", "vlen utf-8 string")
ATTR_VLEN_ASCII = StringStorage("variable", "ascii", "vlen ascii string")
ATTR_FIXED = StringStorage("fixed", "ascii", "fixed[4] ascii string")


def with_attr_storage(storages):
    """A group whose attributes report `storages` (name -> StringStorage or None) as a backend would."""
    node = tree({"g": {"@attrs": {name: "x" for name in storages}}}).get("/g")
    node.attr_storage = storages.get  # the memory backend records none; this stands in for HDF5's types
    return node


ATTR_STORAGE = [
    pytest.param({"key": ATTR_VLEN, "s3class": ATTR_VLEN}, {}, 0, id="all-vlen-utf8"),
    pytest.param({"dims": None, "key": ATTR_VLEN}, {}, 0, id="non-string-attribute-ignored"),
    pytest.param({"key": ATTR_FIXED, "s3class": ATTR_VLEN}, {}, 1, id="one-fixed-ascii"),
    pytest.param({"key": ATTR_VLEN_ASCII}, {}, 1, id="vlen-ascii-charset"),
    pytest.param({"key": ATTR_FIXED, "s3class": ATTR_FIXED}, {}, 2, id="two-fixed"),
    pytest.param({"key": ATTR_FIXED, "s3class": ATTR_VLEN}, {"keys": ["s3class"]}, 0, id="keys-limit-the-check"),
]


@passes("storages,options,expected", ATTR_STORAGE)
def test_attr_strings_stored_as_passes(storages, options, expected):
    node = with_attr_storage(storages)
    assert findings("attr_strings_stored_as", node, {"length": "variable", "charset": "utf-8", **options}) == []


@fails("storages,options,expected", ATTR_STORAGE)
def test_attr_strings_stored_as_fails(storages, options, expected):
    found = findings("attr_strings_stored_as", with_attr_storage(storages), {"length": "variable", "charset": "utf-8", **options})
    assert len(found) == expected
    assert all(f.details["key"] in storages for f in found)


@pytest.mark.parametrize(
    ("node", "options"),
    [
        pytest.param(lambda: tree({"g": {"@attrs": {"key": "x"}}}).get("/g"), {}, id="backend-without-attribute-storage"),
        pytest.param(lambda: with_attr_storage({"dims": None}), {}, id="no-string-attribute"),
        pytest.param(lambda: with_attr_storage({"key": ATTR_FIXED}), {"keys": ["s3class"]}, id="keys-absent"),
    ],
)
def test_attr_strings_stored_as_passes_not_applicable(node, options):
    with pytest.raises(NotApplicable, match="no string attribute whose storage is known"):
        findings("attr_strings_stored_as", node(), {"length": "variable", "charset": "utf-8", **options})


VLEN_STR = np.dtype("O", metadata={"vlen": str})
VLEN_BYTES = np.dtype("O", metadata={"vlen": bytes})
FIXED_ASCII = np.dtype("S4", metadata={"h5py_encoding": "ascii"})


def compound(*members):
    dtype = np.dtype([(f"m{i}", d) for i, d in enumerate(members)])
    return Arr(np.zeros(3, dtype=dtype))


COMPOUND = [
    pytest.param(compound(VLEN_STR, "f8", "i4"), 0, id="vlen-utf8-and-numbers"),
    pytest.param(compound(VLEN_STR, VLEN_BYTES), 1, id="vlen-ascii"),
    pytest.param(compound(FIXED_ASCII, "f8"), 1, id="fixed-ascii"),
    pytest.param(compound("S4"), 1, id="fixed-unspecified-charset"),
    pytest.param(compound("U3", VLEN_STR), 1, id="numpy-unicode"),
    pytest.param(compound(np.dtype([("inner", FIXED_ASCII)]), VLEN_STR), 1, id="nested-compound"),
]


@passes("arr,expected", COMPOUND)
def test_compound_strings_stored_as_passes(arr, expected):
    assert findings("compound_strings_stored_as", tree({"df": arr}).get("/df"), {"length": "variable", "charset": "utf-8"}) == []


@fails("arr,expected", COMPOUND)
def test_compound_strings_stored_as_fails(arr, expected):
    found = findings("compound_strings_stored_as", tree({"df": arr}).get("/df"), {"length": "variable", "charset": "utf-8"})
    assert len(found) == expected


def test_compound_strings_stored_as_fails_names_nested_member():
    (f,) = findings(
        "compound_strings_stored_as",
        tree({"df": compound(np.dtype([("inner", FIXED_ASCII)]))}).get("/df"),
        {"length": "variable", "charset": "utf-8"},
    )
    assert f.details["member"] == "m0.inner" and "fixed[4] ascii" in f.message


def test_compound_strings_stored_as_passes_not_applicable_without_string_members():
    with pytest.raises(NotApplicable, match="no string member"):
        findings(
            "compound_strings_stored_as",
            tree({"df": compound("f8", np.dtype("O"))}).get("/df"),
            {"length": "variable", "charset": "utf-8"},
        )


def test_compound_strings_stored_as_passes_precondition_is_compound():
    from spec_validate.checks import registry

    assert registry.get("compound_strings_stored_as").dtype_kinds == "V"


@pytest.mark.parametrize(
    "dtype,expected",
    [
        pytest.param(VLEN_STR, ("variable", "utf-8"), id="vlen-str"),
        pytest.param(VLEN_BYTES, ("variable", "ascii"), id="vlen-bytes"),
        pytest.param(FIXED_ASCII, ("fixed", "ascii"), id="fixed-ascii"),
        pytest.param(np.dtype("S2"), ("fixed", None), id="fixed-no-metadata"),
        pytest.param(np.dtype("O"), None, id="object-not-string"),
        pytest.param(np.dtype("f8"), None, id="number"),
    ],
)
def test_member_string_storage(dtype, expected):
    from spec_validate.checks.h5seurat import member_string_storage

    info = member_string_storage(dtype)
    assert (None if info is None else (info.length, info.charset)) == expected


# ------------------------------------------------------------------ data frame columns
def dataframes():
    row = np.dtype([("isotype", VLEN_STR), ("is_ctrl", "i4")])
    return tree(
        {
            "md": {
                "@attrs": {"logicals": ["is_doublet"], "bad": ["is_doublet", "nope"], "numbers": [1]},
                "is_doublet": np.array([0, 1, 2], dtype="i4"),
                "score": np.zeros(3),
            },
            "mf": Arr(np.zeros(3, dtype=row), attrs={"logicals": ["is_ctrl"], "bad": ["isotype", "gone"]}),
            "plain": Arr(np.zeros((3, 2)), attrs={"logicals": ["is_ctrl"]}),
        }
    )


NAME_COLUMNS = [
    pytest.param("/md", "logicals", 0, id="group-entry"),
    pytest.param("/mf", "logicals", 0, id="compound-member"),
    pytest.param("/md", "bad", 1, id="group-unknown-entry"),
    pytest.param("/mf", "bad", 1, id="compound-unknown-member"),
]


@passes("path,key,expected", NAME_COLUMNS)
def test_attr_values_name_columns_passes(path, key, expected):
    assert findings("attr_values_name_columns", dataframes().get(path), {"key": key}) == []


@fails("path,key,expected", NAME_COLUMNS)
def test_attr_values_name_columns_fails(path, key, expected):
    found = findings("attr_values_name_columns", dataframes().get(path), {"key": key})
    assert len(found) == expected and found[0].details["name"] in ("nope", "gone")


def test_attr_values_name_columns_passes_not_applicable_for_plain_dataset():
    with pytest.raises(NotApplicable):
        findings("attr_values_name_columns", dataframes().get("/plain"), {"key": "logicals"})


@pytest.mark.parametrize("key", [pytest.param("numbers", id="no-strings"), pytest.param("absent", id="absent")])
def test_attr_values_name_columns_passes_not_applicable_without_names(key):
    with pytest.raises(NotApplicable, match=f"no strings in attribute {key!r}"):
        findings("attr_values_name_columns", dataframes().get("/md"), {"key": key})


def test_listed_in_parent_attr_passes_listed_column():
    assert findings("listed_in_parent_attr", dataframes().get("/md/is_doublet"), {"key": "logicals"}) == []


@pytest.mark.parametrize("path", [pytest.param("/md/score", id="not-listed"), pytest.param("/mf", id="parent-without-attr")])
def test_listed_in_parent_attr_passes_not_applicable(path):
    with pytest.raises(NotApplicable):
        findings("listed_in_parent_attr", dataframes().get(path), {"key": "logicals"})


S4_FORM = "[A-Za-z.][A-Za-z0-9._]*(:[A-Za-z.][A-Za-z0-9._]*)?"
ATTR_MATCH = [
    pytest.param("Signac:ChromatinAssay", 0, id="package-class"),
    pytest.param(["SeuratObject:JackStrawData"], 0, id="one-element-list"),
    pytest.param("Assay", 0, id="seurat-class-alone"),
    pytest.param("SeuratObject::JackStrawData", 1, id="double-colon"),
    pytest.param("Signac: ChromatinAssay", 1, id="space"),
    pytest.param(["a:b", "c:d:e"], 1, id="one-of-two"),
]


@passes("value,expected", ATTR_MATCH)
def test_attr_strings_match_passes(value, expected):
    node = tree({"g": {"@attrs": {"s4class": value}}}).get("/g")
    assert findings("attr_strings_match", node, {"key": "s4class", "pattern": S4_FORM}) == []


@fails("value,expected", ATTR_MATCH)
def test_attr_strings_match_fails(value, expected):
    node = tree({"g": {"@attrs": {"s4class": value}}}).get("/g")
    assert len(findings("attr_strings_match", node, {"key": "s4class", "pattern": S4_FORM})) == expected


@pytest.mark.parametrize(
    "attrs", [pytest.param({"s4class": 3}, id="not-a-string-left-to-attr_strings"), pytest.param({}, id="absent")]
)
def test_attr_strings_match_passes_not_applicable_without_strings(attrs):
    with pytest.raises(NotApplicable, match="no strings in attribute 's4class'"):
        findings("attr_strings_match", tree({"g": {"@attrs": attrs}}).get("/g"), {"key": "s4class", "pattern": S4_FORM})


def test_strings_stored_as_is_not_applicable_to_an_object_reference_dataset():
    refs = Arr(np.array([object(), object()], dtype=object), storage=Storage("hdf5"))
    with pytest.raises(NotApplicable, match="not strings"):
        findings("strings_stored_as", tree({"refs": refs}).get("/refs"), {"length": "variable", "charset": "utf-8"})


def test_attr_integer_type_fails_an_hdf5_boolean_and_an_r_logical_enum(tmp_path):
    import h5py

    from spec_validate.nodes.hdf5.tree import HDF5Tree

    path = tmp_path / "g.h5"
    with h5py.File(path, "w") as f:
        f.create_group("int").attrs.create("global", np.array([0], dtype="i4"))
        f.create_group("bool").attrs["global"] = np.bool_(False)
        logical = h5py.enum_dtype({"FALSE": 0, "TRUE": 1, "NA": 2}, basetype="i1")
        f.create_group("enum").attrs.create("global", np.array([1], dtype="i1"), dtype=logical)
    with HDF5Tree(str(path)) as t:
        assert findings("attr_integer_type", t.get("/int"), {"key": "global"}) == []
        for name in ("bool", "enum"):
            (f,) = findings("attr_integer_type", t.get(f"/{name}"), {"key": "global"})
            assert f.details["stored"] == "enum"


def test_attr_integer_type_is_not_applicable_where_the_backend_does_not_record_types():
    with pytest.raises(NotApplicable):
        findings("attr_integer_type", tree({"r": {"@attrs": {"global": 1}}}).get("/r"), {"key": "global"})


def test_compound_logicals_encoded_fails_values_and_non_integer_members():
    rows = np.array([(0, 1.0, b"a"), (3, 2.0, b"b"), (2, 0.5, b"c")], dtype=[("ok", "i4"), ("f", "f8"), ("s", "S1")])
    node = tree({"df": Arr(rows, attrs={"logicals": ["ok", "f", "absent"]})}).get("/df")
    got = findings("compound_logicals_encoded", node, {"key": "logicals"})
    assert sorted((f.details["member"], f.index) for f in got) == [("f", None), ("ok", (1,))]


def test_compound_logicals_encoded_is_not_applicable_when_no_member_is_named():
    rows = np.zeros(2, dtype=[("a", "i4")])
    with pytest.raises(NotApplicable):
        findings("compound_logicals_encoded", tree({"df": Arr(rows, attrs={"logicals": ["b"]})}).get("/df"), {"key": "logicals"})


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        pytest.param("4.1.3", 0, id="newer"),
        pytest.param("3.1.5.9900", 0, id="equal"),
        pytest.param("3.1.10", 0, id="numbers-not-text"),
        pytest.param("3.1.5", 1, id="older"),
        pytest.param("3.0-2", 1, id="dash-separated"),
    ],
)
def test_attr_version_at_least(version, expected):
    t = tree({"@attrs": {"version": [version]}, "images": {"slice1": {}}})
    got = findings("attr_version_at_least", t.get("/images/slice1"), {"key": "version", "node": "/", "minimum": "3.1.5.9900"})
    assert len(got) == expected


@pytest.mark.parametrize("attrs", [{}, {"version": ["v4"]}, {"version": ["4.1", "5.0"]}, {"version": 4}])
def test_attr_version_at_least_passes_not_applicable(attrs):
    t = tree({"@attrs": attrs, "images": {"slice1": {}}})
    with pytest.raises(NotApplicable):
        findings("attr_version_at_least", t.get("/images/slice1"), {"key": "version", "node": "/", "minimum": "3.1.5.9900"})


def test_listed_in_parent_attr_selects_the_listed_members_in_work_linear_in_the_members():
    # Each member was once looked for in its parent's list: 20,000 columns all listed in `logicals` took 12 s.
    # Comparisons are counted (never timed): per member, as many at 20,000 members as at 1,000.
    def comparisons_per_member(n: int) -> float:
        names = [CountingName(f"c{i}") for i in range(n)]
        t = tree({"df": {"@attrs": {"logicals": names}, **{f"c{i}": np.zeros(2, "<i4") for i in range(n)}, "other": np.zeros(2)}})
        CountingName.comparisons = 0
        for i in range(n):
            assert findings("listed_in_parent_attr", t.get(f"/df/c{i}"), {"key": "logicals"}) == []
        with pytest.raises(NotApplicable, match="not listed in its parent's 'logicals'"):
            findings("listed_in_parent_attr", t.get("/df/other"), {"key": "logicals"})
        return CountingName.comparisons / n

    assert comparisons_per_member(20_000) <= 2 * max(1.0, comparisons_per_member(1_000))


def test_no_enum_type_and_members_fail_a_factor_enum_dataset_and_compound_member_not_a_logical_enum(tmp_path):
    import h5py

    from spec_validate.nodes.hdf5.tree import HDF5Tree

    path = tmp_path / "e.h5"
    factor = h5py.enum_dtype({"g1": 1, "g2": 2}, basetype="i4")
    logical = h5py.enum_dtype({"FALSE": 0, "TRUE": 1, "NA": 2}, basetype="i1")
    with h5py.File(path, "w") as f:
        f.create_dataset("factor", data=np.array([1, 2, 1], dtype="i4"), dtype=factor)
        f.create_dataset("logical", data=np.array([0, 1, 2], dtype="i1"), dtype=logical)
        f.create_dataset("boolean", data=np.array([True, False]))  # h5py's FALSE/TRUE enum, read as bool
        f.create_dataset("ints", data=np.array([1, 2, 1], dtype="i4"))
        row = np.dtype([("x", "f8"), ("ident", factor), ("flag", logical)])
        f.create_dataset("df", data=np.array([(0.5, 1, 0), (1.5, 2, 2)], dtype=row))
    options = {"except_members": ["FALSE", "TRUE", "NA"]}
    with HDF5Tree(str(path)) as t:
        for name in ("logical", "boolean", "ints"):
            assert findings("no_enum_type", t.get(f"/{name}"), options) == []
        (f,) = findings("no_enum_type", t.get("/factor"), options)
        assert f.details == {"members": ["g1", "g2"]}
        assert findings("no_enum_type", t.get("/df"), options) == []  # members are no_enum_members'
        (f,) = findings("no_enum_members", t.get("/df"), options)
        assert f.details == {"member": "ident", "members": ["g1", "g2"]}
        assert len(findings("no_enum_members", t.get("/df"))) == 2  # without exceptions the logical member is one too
