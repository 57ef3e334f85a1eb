"""Provenance: the eras a store's layout shows and its likely writers, from metadata only; which writer notes fit."""

from __future__ import annotations

import json
import pkgutil

import numpy as np
import pytest
from dict_store import DictStore
from memory_tree import Arr, tree

from spec_validate.engine import provenance
from spec_validate.engine.loader import builtin_packs
from spec_validate.engine.provenance import Provenance, WriterMark, detect
from spec_validate.engine.provenance.anndata import anndata_era
from spec_validate.nodes.zarr.tree import ZarrTree


class TextStore(DictStore):
    """Keys to stored text, kept byte for byte (how a writer spelled its JSON is the evidence)."""

    def __init__(self, items: dict[str, str]) -> None:
        super().__init__({k: v.encode() for k, v in items.items()})


ZARRAY = {
    "chunks": [2],
    "compressor": None,
    "dtype": "<i4",
    "fill_value": 0,
    "filters": None,
    "order": "C",
    "shape": [4],
    "zarr_format": 2,
}
ZARR3_ORDER = ["shape", "chunks", "dtype", "fill_value", "order", "filters", "dimension_separator", "compressor", "zarr_format"]
ZARRJS_ORDER = ["zarr_format", "shape", "chunks", "dtype", "fill_value", "order", "compressor", "filters"]


def spelled(how: str) -> str:
    doc = {**ZARRAY, "dimension_separator": "."}
    if how == "zarr-python 2":
        return json.dumps(ZARRAY, indent=4, sort_keys=True)
    if how == "zarr-python 3":
        return json.dumps({k: doc[k] for k in ZARR3_ORDER}, indent=2)
    if how == "zarr.js":
        return json.dumps({k: ZARRAY[k] for k in ZARRJS_ORDER}, separators=(",", ":"))
    return json.dumps(doc, separators=(",", ":"), sort_keys=True)  # tensorstore


@pytest.mark.parametrize(
    ("how", "name", "versions"),
    [
        ("zarr-python 2", "zarr-python", "<3"),
        ("zarr-python 3", "zarr-python", ">=3"),
        ("zarr.js", "zarr.js", ""),
        ("tensorstore", "tensorstore", ""),
    ],
)
def test_detect_tells_zarr_writers_by_how_they_spell_zarray(how, name, versions):
    items = {"x/.zarray": spelled(how)}
    if how != "tensorstore":
        items[".zgroup"] = '{"zarr_format": 2}'
    (w,) = detect(ZarrTree(TextStore(items), 2)).writers
    assert (w.name, w.versions, w.role) == (name, versions, "zarr")


def test_detect_tells_netcdf_c_by_its_nczarr_keys():
    items = {".zgroup": '{"zarr_format": 2}', "x/.zarray": spelled("zarr-python 2"), "x/.nczarray": "{}"}
    assert [w.name for w in detect(ZarrTree(TextStore(items), 2)).writers] == ["netcdf-c"]
    items = {".zgroup": '{"zarr_format": 2, "_nczarr_superblock": {"version": "2.0.0"}}', "x/.zarray": spelled("zarr.js")}
    assert [w.name for w in detect(ZarrTree(TextStore(items), 2)).writers] == ["netcdf-c"]


@pytest.mark.parametrize(
    ("layout", "era"),
    [
        (
            {
                "@attrs": {"encoding-type": "anndata", "encoding-version": "0.1.0"},
                "obs": {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.2.0"}},
                "var": {},
            },
            "anndata-0.8",
        ),
        (
            {
                "obs": {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.1.0", "_index": "_index"}},
                "var": {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.1.0", "_index": "_index"}},
            },
            "anndata-0.7",
        ),
        (
            {"obs": Arr(np.zeros(2, dtype=[("index", "S2"), ("n", "i8")])), "var": Arr(np.zeros(2, dtype=[("index", "S2")]))},
            "anndata-pre-0.7",
        ),
        # A 0.8 file that lost its root attributes is not legacy: its dataframes say 0.2.0.
        ({"obs": {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.2.0"}}, "var": {}}, None),
    ],
)
def test_anndata_era_reads_the_layout(layout, era):
    found = anndata_era(tree(layout).root)
    assert (found.id if found else None) == era


@pytest.mark.parametrize(
    ("storage", "said", "not_said"),
    [("hdf5", "compound datasets", "structured"), ("zarr-v2", "structured arrays", "compound")],
)
def test_anndata_era_before_0_7_names_the_storage_read(storage, said, not_said):
    # A Zarr store is not told about HDF5 compound datasets: the same layout is named as its storage calls it.
    layout = {"obs": Arr(np.zeros(2, dtype=[("index", "S2"), ("n", "i8")])), "var": Arr(np.zeros(2, dtype=[("index", "S2")]))}
    found = anndata_era(tree(layout, storage).root)
    words = " ".join((found.label, *found.evidence))
    assert found.id == "anndata-pre-0.7" and said in words and not_said not in words


def test_detect_names_seuratdisk_on_a_converted_h5ad():
    layout = {
        "obs": {
            "@attrs": {"encoding-type": "dataframe", "encoding-version": "0.1.0"},
            "__categories": {"groups": np.array(["a", "b"], dtype=object)},
            "groups": np.array([0, 1]),
        },
        "var": {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.1.0"}},
        "uns": {},
    }
    p = detect(tree(layout))
    assert [e.id for e in p.eras] == ["anndata-0.7"] and [w.name for w in p.writers] == ["SeuratDisk"]


@pytest.mark.parametrize(
    ("writers", "name", "versions", "fits"),
    [
        ((), "tensorstore", "<=0.1.86", True),  # nothing known about the Zarr writer: not contradicted
        ((WriterMark("zarr-python", "<3", "zarr", ""),), "tensorstore", "<=0.1.86", False),  # another writer of the role
        ((WriterMark("netcdf-c", "", "zarr", ""),), "zarr-python", "<2.8", False),
        ((WriterMark("zarr-python", ">=3", "zarr", ""),), "zarr-python", "<2.8", False),  # versions that do not overlap
        ((WriterMark("zarr-python", "<3", "zarr", ""),), "zarr-python", "<2.8", True),
        ((WriterMark("anndata", ">=0.8", "anndata", ""),), "anndata", ">=0.12", True),
        ((WriterMark("anndata", ">=0.7,<0.8", "anndata", ""),), "SeuratDisk", "0.0.0.9021", False),
        ((WriterMark("zarr-python", "<3", "zarr", ""),), "some other tool", "1.0", True),  # a writer of no known role
        # a release series, with the note's words about it in parentheses
        ((WriterMark("zarr-python", ">=3", "zarr", ""),), "zarr-python", "2.x (early format-compatibility fixtures)", False),
        ((WriterMark("zarr-python", "<3", "zarr", ""),), "zarr-python", "2.x (early format-compatibility fixtures)", True),
    ],
)
def test_fits_shows_a_note_unless_the_store_shows_another_writer(writers, name, versions, fits):
    assert Provenance((), writers).fits(name, versions) is fits


def test_evidence_names_what_shows_the_writer_in_the_notes_versions():
    p = Provenance((), (WriterMark("zarr-python", "<3", "zarr", "x/.zarray is indented by 4"),))
    assert p.evidence("zarr-python", "<2.8") == "x/.zarray is indented by 4"
    assert p.evidence("zarr-python", ">=3") is None  # shown, in other versions
    assert p.evidence("tensorstore", "") is None  # not shown (and contradicted)
    assert Provenance().evidence("tensorstore", "") is None and Provenance().fits("tensorstore", "")  # only likely


def test_detect_falls_back_on_zarr_python_3s_consolidated_marker():
    marker = {"kind": "inline", "must_understand": False, "metadata": {}}
    zmetadata = {"zarr_consolidated_format": 1, "metadata": {"g/.zgroup": {"zarr_format": 2, "consolidated_metadata": marker}}}
    items = {
        ".zgroup": '{"zarr_format": 2}',
        "g/.zgroup": '{"zarr_format": 2}',
        ".zmetadata": json.dumps(zmetadata),
        "g/x/.zarray": json.dumps(
            {
                "zarr_format": 2,
                **{k: ZARRAY[k] for k in ("shape", "chunks", "dtype")},
                "compressor": None,
                "fill_value": 0,
                "order": "C",
                "filters": None,
            }
        ),
    }
    (w,) = detect(ZarrTree(TextStore(items), 2)).writers
    assert (w.name, w.versions) == ("zarr-python", ">=3") and "consolidated_metadata" in w.evidence


# ------------------------------------------------------------------------------------------ the detector registry
def test_every_family_module_registers_a_detector_found_without_a_list():
    modules = {m.name for m in pkgutil.iter_modules(provenance.__path__)} - {"model"}
    assert {d.function.__module__.rpartition(".")[2] for d in provenance.detectors()} == modules


def test_every_writer_the_builtin_packs_name_has_a_role():
    named = {w.name for p in builtin_packs() for r in p.rules for w in r.writers}
    assert named and named <= set(provenance.roles())


def test_detectors_run_in_module_then_definition_order():
    order = [(d.function.__module__, d.function.__code__.co_firstlineno) for d in provenance.detectors()]
    assert order == sorted(order)
    assert [d.name for d in provenance.detectors()][:2] == ["anndata", "mudata"]  # MuData's mark follows its modalities'


def test_detector_passes_returns_function_unchanged():
    def probe(tree):
        return iter(())

    try:
        assert provenance.detector("probe-detector-for-test", roles={"probe writer": "probe"})(probe) is probe
        assert provenance.DETECTORS["probe-detector-for-test"].function is probe
        assert provenance.roles()["probe writer"] == "probe"
    finally:
        provenance.DETECTORS.pop("probe-detector-for-test", None)
        provenance._ROLES.pop("probe writer", None)


def test_detector_fails_registering_a_name_twice_or_a_writer_with_two_roles():
    with pytest.raises(RuntimeError, match="registered twice"):
        provenance.detector("anndata")(lambda tree: ())
    with pytest.raises(RuntimeError, match="two roles"):
        provenance.detector("probe-detector-for-test", roles={"zarr-python": "anndata"})(lambda tree: ())
    assert "probe-detector-for-test" not in provenance.DETECTORS


def test_detect_finds_nothing_where_a_detector_raises(monkeypatch):
    def broken(tree):
        raise ValueError("odd metadata")

    layout = {"@attrs": {"encoding-type": "anndata", "encoding-version": "0.1.0"}, "obs": {}, "var": {}}
    assert [e.id for e in detect(tree(layout)).eras] == ["anndata-0.8"]
    anndata = provenance.DETECTORS["anndata"]
    monkeypatch.setitem(provenance.DETECTORS, "anndata", anndata._replace(function=broken))
    found = detect(tree(layout))
    assert found.eras == () and found.writers == ()


def _nested(depth: int, leaf_attrs: dict) -> dict:
    spec: dict = {"@attrs": leaf_attrs}
    for _ in range(depth):
        spec = {"g": spec}
    return spec


@pytest.mark.parametrize("depth,found", [(2, True), (50, False)])
def test_seurat_marks_are_searched_near_uns_only(depth, found):
    from spec_validate.engine.provenance.anndata import _seurat_marks

    layout = {"obs": {}, "var": {}, "uns": _nested(depth, {"assay.used": "RNA"})}
    assert (_seurat_marks(tree(layout).root) is not None) is found


def test_seurat_marks_search_visits_a_bounded_number_of_groups(monkeypatch):
    # 10,000 nested groups under uns made writer detection walk them all (2.5 GB): the search has bounds of its own.
    from spec_validate.engine.provenance import anndata as anndata_detector

    wide = {f"g{i}": {} for i in range(3 * anndata_detector.MOST_GROUPS_SEARCHED)}
    root = tree({"obs": {}, "var": {}, "uns": wide}).root
    visited = []
    uns = root.child("uns")
    original = type(uns).attrs
    monkeypatch.setattr(type(uns), "attrs", property(lambda node: visited.append(node.path) or original.fget(node)))
    assert anndata_detector._seurat_marks(root) is None
    assert len(visited) <= anndata_detector.MOST_GROUPS_SEARCHED


ANNDATA_ROOT = {"encoding-type": "anndata", "encoding-version": "0.1.0"}
NULLABLE = {"encoding-type": "nullable-string-array", "encoding-version": "0.1.0"}
STRINGS = {"encoding-type": "string-array", "encoding-version": "0.2.0"}


def _frame(index_attrs: dict, **columns: dict) -> dict:
    frame: dict = {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index"}}
    frame["_index"] = {"@attrs": index_attrs} if index_attrs is NULLABLE else Arr(np.array(["a"], dtype=object), index_attrs)
    frame.update({name: {"@attrs": attrs} if attrs is NULLABLE else Arr(np.zeros(1), attrs) for name, attrs in columns.items()})
    return frame


@pytest.mark.parametrize(
    ("layout", "format", "versions", "evidence"),
    [
        pytest.param({"obs": _frame(STRINGS), "var": _frame(STRINGS)}, "hdf5", ">=0.8", "encoding-type 'anndata'", id="0.8"),
        # anndata >= 0.11 with allow_write_nullable_strings, or 0.13 under pandas 3: every string index a group
        pytest.param(
            {"obs": _frame(NULLABLE), "var": _frame(NULLABLE)}, "hdf5", ">=0.11", "/obs/_index is a nullable", id="index"
        ),
        pytest.param(
            {"obs": _frame(STRINGS, name=NULLABLE), "var": _frame(STRINGS)},
            "hdf5",
            ">=0.11",
            "/obs/name is a nullable",
            id="column",
        ),
        pytest.param(
            {"obs": _frame(STRINGS), "var": _frame(STRINGS), "obsm": {"meta": _frame(NULLABLE)}},
            "hdf5",
            ">=0.11",
            "/obsm/meta/_index",
            id="obsm-dataframe",
        ),
        pytest.param(
            {"obs": _frame(STRINGS), "var": _frame(STRINGS), "raw": {"var": _frame(NULLABLE)}},
            "hdf5",
            ">=0.11",
            "/raw/var/_index",
            id="raw-var",
        ),
        pytest.param({"obs": _frame(STRINGS), "var": _frame(STRINGS)}, "zarr-v3", ">=0.12", "Zarr v3", id="zarr-v3"),
        pytest.param({"obs": _frame(NULLABLE), "var": _frame(NULLABLE)}, "zarr-v3", ">=0.12", "Zarr v3", id="zarr-v3-nullable"),
    ],
)
def test_detect_names_anndata_versions_from_what_only_newer_releases_write(layout, format, versions, evidence):
    (w,) = detect(tree({"@attrs": ANNDATA_ROOT, **layout}, format)).writers
    assert (w.name, w.versions) == ("anndata", versions)
    assert evidence in w.evidence


def test_detect_nullable_string_search_reads_a_bounded_number_of_columns(monkeypatch):
    from spec_validate.engine.provenance import anndata as anndata_detector

    monkeypatch.setattr(anndata_detector, "MOST_COLUMNS_SEARCHED", 10)
    columns = {f"c{i:03d}": STRINGS for i in range(20)}
    late = _frame(STRINGS, **columns, zz=NULLABLE)  # the nullable column lies past the bound
    (w,) = detect(tree({"@attrs": ANNDATA_ROOT, "obs": late, "var": _frame(STRINGS)})).writers
    assert w.versions == ">=0.8"
    early = _frame(STRINGS, a=NULLABLE, **columns)
    (w,) = detect(tree({"@attrs": ANNDATA_ROOT, "obs": early, "var": _frame(STRINGS)})).writers
    assert w.versions == ">=0.11"
