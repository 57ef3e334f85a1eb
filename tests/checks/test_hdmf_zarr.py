"""hdmf-zarr primitives: reserved attributes, links and references in JSON attributes, cached specifications, pickle."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
from memory_tree import Arr, findings, tree

import spec_validate
from spec_validate.engine.scope import PackScope
from spec_validate.model import NotApplicable, Status

ROOT_ID = "6baecfc5"


def ref(path, source="."):
    return {"source": source, "path": path, "object_id": "x", "source_object_id": ROOT_ID}


def nwb(**extra):
    return tree(
        {
            "@attrs": {".specloc": "specifications", "namespace": "core", "neurodata_type": "NWBFile"},
            "specifications": {"core": {"2.7.0": {}}},
            "acquisition": {"ts": {"data": np.arange(3), "@attrs": {"namespace": "core"}}},
            "general": {"devices": {"probe": {}}},
            **extra,
        }
    )


# ------------------------------------------------------------------------------------------ reserved attributes
def test_reserved_attr_absent_passes_without_attribute():
    assert findings("reserved_attr_absent", nwb().get("/acquisition/ts"), {"key": ".specloc"}) == []


def test_reserved_attr_absent_fails_specloc_below_root():
    t = nwb(sub={"@attrs": {".specloc": "specifications"}})
    (f,) = findings("reserved_attr_absent", t.get("/sub"), {"key": ".specloc"})
    assert ".specloc" in f.message


SPECLOC = [
    pytest.param("specifications", 0, id="relative-group"),
    pytest.param("/specifications", 0, id="absolute-group"),
    pytest.param("specs", 1, id="no-such-node"),
    pytest.param("acquisition/ts/data", 1, id="an-array"),
    pytest.param(3, 1, id="not-a-string"),
    pytest.param("/", 1, id="the-root-itself"),
]


@pytest.mark.parametrize("value,expected", SPECLOC)
def test_attr_path_is_group_passes_or_fails(value, expected):
    t = nwb()
    t.root.attrs[".specloc"] = value
    assert len(findings("attr_path_is_group", t.root, {"key": ".specloc"})) == expected


def test_attr_path_is_group_fails_in_a_store_not_listed_naming_the_consolidated_metadata(monkeypatch):
    # Read without listing, a group written after consolidation is not seen: the finding says where it looked.
    t = nwb()
    t.root.attrs[".specloc"] = "specs"
    monkeypatch.setattr(type(t.root), "keys_listed", property(lambda node: False))
    (finding,) = findings("attr_path_is_group", t.root, {"key": ".specloc"})
    assert "names no node in the store's consolidated metadata (the store was not listed)" in finding.message


def test_attr_path_is_group_passes_not_applicable_when_absent():
    with pytest.raises(NotApplicable):
        findings("attr_path_is_group", nwb().get("/acquisition"), {"key": ".specloc"})


# ------------------------------------------------------------------------------------------ zarr_dtype
ZARR_DTYPES = [
    pytest.param("int32", 0, id="listed"),
    pytest.param("utf-8", 0, id="listed-text"),
    pytest.param([{"name": "a", "dtype": "int32"}, {"name": "b", "dtype": "object"}], 0, id="compound"),
    pytest.param("scalar", 1, id="hdmf-zarr-scalar-not-listed"),
    pytest.param("bytes", 1, id="hdmf-zarr-bytes-not-listed"),
    pytest.param("<f8", 1, id="hdmf-zarr-typestr-not-listed"),
    pytest.param([{"name": "a", "dtype": "uint64"}], 1, id="compound-numpy-name-field-not-listed"),
    pytest.param([{"name": "r", "dtype": {"target_type": "TimeSeries", "reftype": "object"}}], 0, id="compound-reference-field"),
    # Values that name no type are zarr_dtype_names_type's (MUST), not reported twice.
    pytest.param("int128", 0, id="no-type-left-to-names-type"),
    pytest.param([{"name": "a", "dtype": "int128"}], 0, id="compound-field-no-type-left-to-names-type"),
    pytest.param([{"dtype": "int32"}], 0, id="compound-without-name-left-to-names-type"),
]
DTYPE_TABLE = {"values": ["int32", "utf-8", "object", "float64"]}


@pytest.mark.parametrize("value,expected", ZARR_DTYPES)
def test_zarr_dtype_mapped_passes_or_fails(value, expected):
    t = nwb()
    t.get("/acquisition/ts/data").attrs["zarr_dtype"] = value
    assert len(findings("zarr_dtype_mapped", t.get("/acquisition/ts/data"), DTYPE_TABLE)) == expected


@pytest.mark.parametrize(
    "value,expected",
    [
        pytest.param("int32", [], id="listed"),
        pytest.param("scalar", [], id="hdmf-zarr-scalar"),
        pytest.param("bytes", [], id="numpy-type-name"),
        pytest.param("uint64", [], id="numpy-type-name-outside-the-table"),
        pytest.param("<M8[ns]", [], id="numpy-typestr"),
        pytest.param([{"name": "a", "dtype": "int32"}, {"name": "b", "dtype": [{"name": "c", "dtype": "i4"}]}], [], id="nested"),
        pytest.param("int128", ["zarr_dtype"], id="int128"),
        pytest.param("Int32", ["zarr_dtype"], id="misspelt"),
        pytest.param(5, ["zarr_dtype"], id="a-number"),
        pytest.param([], ["zarr_dtype"], id="compound-without-fields"),
        pytest.param([{"name": "a", "dtype": "int128"}, {"dtype": "int32"}], ["zarr_dtype[0]", "zarr_dtype[1]"], id="compound"),
    ],
)
def test_zarr_dtype_names_type_passes_or_fails(value, expected):
    t = nwb()
    t.get("/acquisition/ts/data").attrs["zarr_dtype"] = value
    got = findings("zarr_dtype_names_type", t.get("/acquisition/ts/data"), DTYPE_TABLE)
    assert [f.details["where"] for f in got] == expected


def test_zarr_dtype_mapped_findings_carry_the_value_the_writer_note_keys_on():
    # The hdmf-zarr writer note explains "scalar" and "bytes" (`when: {value: [scalar, bytes]}`): each finding says which.
    t = nwb()
    t.get("/acquisition/ts/data").attrs["zarr_dtype"] = "scalar"
    (f,) = findings("zarr_dtype_mapped", t.get("/acquisition/ts/data"), DTYPE_TABLE)
    assert f.details == {"value": "scalar"}


def test_zarr_dtype_writer_note_explains_only_the_spellings_it_names():
    from spec_validate.engine.loader import builtin_packs

    (rule,) = [r for p in builtin_packs() for r in p.rules if r.id == "hdmf-zarr.zarr_dtype.mapped"]
    (writer,) = rule.writers
    assert writer.when == (("value", ("scalar", "bytes")),)
    (must,) = [r for p in builtin_packs() for r in p.rules if r.id == "hdmf-zarr.zarr_dtype.names-a-type"]
    assert must.writers == ()


# ------------------------------------------------------------------------------------------ links
LINKS = [
    pytest.param([{"name": "d", "source": ".", "path": "/acquisition/ts/data"}], 0, id="minimal"),
    pytest.param([{"name": "d", **ref("/acquisition/ts/data")}], 0, id="with-object-ids"),
    pytest.param([{"name": "d", "source": ".", "path": "/x", "object_id": None}], 0, id="null-object-id"),
    pytest.param({"name": "d", "source": ".", "path": "/x"}, 1, id="not-a-list"),
    pytest.param(["/acquisition/ts/data"], 1, id="entry-not-an-object"),
    pytest.param([{"name": "d", "source": "."}], 1, id="no-path"),
    pytest.param([{"name": "d", "source": ".", "path": "/x", "object_id": 5}], 1, id="object-id-not-string"),
]


@pytest.mark.parametrize("value,expected", LINKS)
def test_attr_link_list_passes_or_fails(value, expected):
    t = nwb(linker={"@attrs": {"zarr_link": value}})
    got = findings("attr_link_list", t.get("/linker"), {"key": "zarr_link", "required": ["name", "source", "path"]})
    assert len(got) == expected


TARGETS = [
    pytest.param("/acquisition/ts/data", ".", 0, id="absolute-array"),
    pytest.param("../acquisition/ts", ".", 0, id="relative-group"),
    pytest.param("/acquisition/nothing", ".", 1, id="missing"),
]


@pytest.mark.parametrize("path,source,expected", TARGETS)
def test_reference_targets_exist_passes_or_fails_links(path, source, expected):
    t = nwb(linker={"@attrs": {"zarr_link": [{"name": "l", "source": source, "path": path}]}})
    assert len(findings("reference_targets_exist", t.get("/linker"), {"of": "zarr_link"})) == expected


def test_reference_targets_exist_passes_not_applicable_when_every_link_names_another_store():
    # The other store is never opened, so nothing is resolved: not a pass (references_in_store reports the link).
    t = nwb(linker={"@attrs": {"zarr_link": [{"name": "l", "source": "../other.nwb.zarr", "path": "/nothing/at/all"}]}})
    with pytest.raises(NotApplicable, match="no link or reference into this store"):
        findings("reference_targets_exist", t.get("/linker"), {"of": "zarr_link"})


def test_reference_targets_exist_fails_the_local_link_beside_an_external_one():
    links = [{"name": "far", "source": "../other.nwb.zarr", "path": "/nothing"}, {"name": "near", "source": ".", "path": "/gone"}]
    (f,) = findings("reference_targets_exist", nwb(linker={"@attrs": {"zarr_link": links}}).get("/linker"), {"of": "zarr_link"})
    assert f.details == {"target": "/gone", "source": "."}


# ------------------------------------------------------------------------------------------ attribute references
REFS = [
    pytest.param({"zarr_dtype": "object", "value": ref("/general/devices/probe")}, 0, id="object"),
    pytest.param({"zarr_dtype": "region", "value": ref("/acquisition/ts/data")}, 0, id="region"),
    pytest.param({"zarr_dtype": "float", "value": ref("/x")}, 1, id="not-a-reference-dtype"),
    pytest.param({"zarr_dtype": "object", "value": "/general/devices/probe"}, 1, id="value-not-an-object"),
    pytest.param({"zarr_dtype": "object", "value": {"path": "/general/devices/probe"}}, 1, id="no-source"),
]


@pytest.mark.parametrize("value,expected", REFS)
def test_attr_references_valid_passes_or_fails(value, expected):
    t = nwb(table={"@attrs": {"table": value, "plain": {"a": 1}}})
    options = {"zarr_dtypes": ["object", "region"], "required": ["source", "path"]}
    assert len(findings("attr_references_valid", t.get("/table"), options)) == expected


def test_attr_references_valid_passes_not_applicable_without_references():
    with pytest.raises(NotApplicable):
        findings("attr_references_valid", nwb().root, {"zarr_dtypes": ["object"], "required": ["path"]})


def test_reference_targets_exist_fails_attribute_reference_to_missing_node():
    t = nwb(table={"@attrs": {"table": {"zarr_dtype": "object", "value": ref("/general/devices/gone")}}})
    (f,) = findings("reference_targets_exist", t.get("/table"), {"of": "attributes"})
    assert f.details["target"] == "/general/devices/gone"


# ------------------------------------------------------------------------------------------ stores on disk
def write_store(path, spec_dtype="|O", spec_filters=None, spec_chunk=b"", pickle_chunk=None):
    """A minimal hdmf-zarr store: root markers, one cached spec file, and a pickle-coded reference dataset."""

    def doc(rel, name, content):
        os.makedirs(path / rel, exist_ok=True)
        (path / rel / name).write_text(json.dumps(content))

    doc("", ".zgroup", {"zarr_format": 2})
    doc("", ".zattrs", {".specloc": "specifications", "namespace": "core", "neurodata_type": "NWBFile"})
    for rel in ("specifications", "specifications/core", "specifications/core/2.7.0", "general", "general/electrodes"):
        doc(rel, ".zgroup", {"zarr_format": 2})
    meta = {
        "zarr_format": 2,
        "shape": [1],
        "chunks": [1],
        "dtype": spec_dtype,
        "compressor": None,
        "fill_value": 0,
        "order": "C",
        "filters": spec_filters,
    }
    doc("specifications/core/2.7.0/namespace", ".zarray", meta)
    doc("specifications/core/2.7.0/namespace", ".zattrs", {"zarr_dtype": "scalar"})
    (path / "specifications/core/2.7.0/namespace/0").write_bytes(spec_chunk)
    if pickle_chunk is not None:
        doc("general/electrodes/group", ".zarray", {**meta, "filters": [{"id": "pickle", "protocol": 5}]})
        doc("general/electrodes/group", ".zattrs", {"zarr_dtype": "object"})
        (path / "general/electrodes/group/0").write_bytes(pickle_chunk)


def json_chunk(text):
    import numcodecs

    arr = np.empty(1, dtype=object)
    arr[0] = text
    return numcodecs.JSON().encode(arr)


def results(path):
    return {r.rule.id: r for r in spec_validate.validate(path).results}


def test_scalar_json_parses_passes_json2_one_element_scalar(tmp_path):
    import numcodecs

    write_store(tmp_path / "s.zarr", spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk('{"namespaces": []}'))
    got = results(tmp_path / "s.zarr")
    assert got["hdmf-zarr.specifications.json"].status is Status.PASSED
    assert got["hdmf-zarr.specifications.scalar-string"].status is Status.PASSED


def test_scalar_json_parses_fails_text_that_is_not_json(tmp_path):
    import numcodecs

    write_store(tmp_path / "s.zarr", spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk("namespaces: ["))
    got = results(tmp_path / "s.zarr")["hdmf-zarr.specifications.json"]
    assert got.status is Status.FAILED and "not valid JSON" in got.findings[0].message


class Boom:
    """Unpickling this creates the file named by `marker`: proof that pickle ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_codec_absent_fails_pickle_and_nothing_is_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(np.array([Boom(str(marker))], dtype=object), protocol=5)
    # Sanity: this payload really does create the marker when unpickled.
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(Boom(str(probe)))).close()
    assert probe.exists()
    # The cached spec is pickled too: the JSON check must leave it unread rather than decode it.
    write_store(tmp_path / "p.zarr", spec_filters=[{"id": "pickle", "protocol": 5}], spec_chunk=payload, pickle_chunk=payload)
    got = results(tmp_path / "p.zarr")
    assert not marker.exists()
    assert got["hdmf-zarr.dataset.pickle-codec"].status is Status.NOTICE  # the spec's default: a notice, not a failure
    assert {f.path for f in got["hdmf-zarr.dataset.pickle-codec"].findings} == {
        "/general/electrodes/group",
        "/specifications/core/2.7.0/namespace",
    }
    assert got["hdmf-zarr.specifications.json"].status is Status.NOT_CHECKED  # never decoded: not checked
    assert got["hdmf-zarr.specifications.scalar-string"].status is Status.FAILED  # pickle is no string codec
    assert not [r for r in got.values() if r.status is Status.ERROR]
    assert not marker.exists()


def with_metadata(metadata):
    """A string array carrying `metadata` as its stored .zarray document, as the Zarr backend gives it."""
    return tree({"a": Arr(np.array("x", dtype=object), metadata=metadata)}).get("/a")


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param({"compressor": None, "filters": None}, 0, id="no-codec"),
        pytest.param({"compressor": {"id": "zlib"}, "filters": [{"id": "vlen-utf8"}]}, 0, id="other-codecs"),
        pytest.param({"compressor": None, "filters": [{"id": "pickle"}]}, 1, id="pickle-filter"),
        pytest.param({"compressor": {"id": "pickle"}}, 1, id="pickle-compressor-without-filters"),
    ],
)
def test_codec_absent_passes_or_fails(metadata, expected):
    assert len(findings("codec_absent", with_metadata(metadata), {"id": "pickle"})) == expected


def test_codec_absent_fails_details_name_the_codec_and_the_zarr_dtype():
    node = tree({"a": Arr(np.array("x", dtype=object), metadata={"filters": [{"id": "pickle"}]}, attrs={"zarr_dtype": "object"})})
    (f,) = findings("codec_absent", node.get("/a"), {"id": "pickle"})
    assert f.details == {"codec": "pickle", "zarr_dtype": "object"}


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        pytest.param(None, "no readable metadata document", id="no-document"),
        pytest.param({"dtype": "|O"}, "neither 'filters' nor 'compressor'", id="no-codec-fields"),
    ],
)
def test_codec_absent_passes_not_applicable(metadata, reason):
    with pytest.raises(NotApplicable, match=reason):
        findings("codec_absent", with_metadata(metadata), {"id": "pickle"})


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        pytest.param(None, "no readable metadata document", id="no-document"),
        pytest.param({"shape": [], "filters": [{"id": "vlen-utf8"}]}, "no 'dtype'", id="no-dtype"),
        pytest.param({"dtype": "|O", "filters": [{"id": "vlen-utf8"}]}, "no 'shape'", id="no-shape"),
    ],
)
def test_scalar_string_storage_passes_not_applicable(metadata, reason):
    with pytest.raises(NotApplicable, match=reason):
        findings("scalar_string_storage", with_metadata(metadata), {})


def test_scalar_string_storage_passes_vlen_utf8_scalar():
    assert (
        findings("scalar_string_storage", with_metadata({"shape": [], "dtype": "|O", "filters": [{"id": "vlen-utf8"}]}), {}) == []
    )


def test_scalar_json_parses_fails_corrupt_chunk(tmp_path):
    import numcodecs

    write_store(tmp_path / "s.zarr", spec_filters=[numcodecs.JSON().get_config()], spec_chunk=b"\xff not json at all")
    got = results(tmp_path / "s.zarr")["hdmf-zarr.specifications.json"]
    assert got.status is Status.FAILED and "does not decode" in got.findings[0].message


def write_reference_dataset(path, elements, chunks, present=None, zarr_dtype="object"):
    """A store whose /general/electrodes/group holds `elements` (JSON codec) in chunks of `chunks`; `present` chunks
    only; its zarr_dtype is `zarr_dtype` (none when None)."""
    import numcodecs

    write_store(path, spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk("{}"))
    rel = path / "general/electrodes/group"
    os.makedirs(rel)
    (rel / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": [len(elements)],
                "chunks": [chunks],
                "dtype": "|O",
                "compressor": None,
                "fill_value": 0,
                "order": "C",
                "filters": [numcodecs.JSON().get_config()],
            }
        )
    )
    (rel / ".zattrs").write_text(json.dumps({} if zarr_dtype is None else {"zarr_dtype": zarr_dtype}))
    for i in range(0, len(elements), chunks):
        if present is not None and i // chunks not in present:
            continue
        block = np.full(chunks, 0, dtype=object)  # the edge chunk is padded with the fill value, as zarr does
        for j, element in enumerate(elements[i : i + chunks]):  # one by one: a row (a list) stays one element
            block[j] = element
        (rel / str(i // chunks)).write_bytes(numcodecs.JSON().encode(block))


DATASET_REFS = [
    pytest.param([ref("/general/electrodes")] * 5, 2, None, [], id="padded-edge-chunk"),
    # A chunk that is not stored reads as the fill value (here 0), which is an element like any other: no
    # reference. (hdmf-zarr stores every chunk; the old reader skipped unstored ones without a word.)
    pytest.param([ref("/general/electrodes")] * 4, 2, {0}, [[2], [3]], id="absent-chunk-is-the-fill-value"),
    pytest.param([ref("/")] * 2 + [ref("/gone")], 2, None, [[2]], id="missing-target-in-edge-chunk"),
    pytest.param([ref("/general"), {"path": "/general"}, "text"], 3, None, [[1], [2]], id="no-source-and-not-a-dict"),
    pytest.param([ref("/nowhere", source="../other.zarr")], 1, None, [], id="other-store-not-opened"),
]


@pytest.mark.parametrize("elements,chunks,present,indices", DATASET_REFS)
def test_dataset_references_valid_passes_or_fails(tmp_path, elements, chunks, present, indices):
    write_reference_dataset(tmp_path / "r.zarr", elements, chunks, present)
    got = results(tmp_path / "r.zarr")["hdmf-zarr.reference.dataset-elements"]
    assert got.status is (Status.FAILED if indices else Status.PASSED)
    assert [list(f.index) for f in got.findings] == indices


DATASET_SOURCES = [
    pytest.param([ref("/general"), ref("/general", source="")], 2, [], id="this-store"),
    pytest.param(
        [ref("/general"), ref("/x", source="../other.zarr"), ref("/y", source="/abs/b.zarr")],
        2,
        [[1], [2]],
        id="one-finding-per-element-in-chunk-order",
    ),
    pytest.param([{"path": "/x"}, "text", ref("/x", source="../o.zarr")], 3, [[2]], id="malformed-left-to-dataset-elements"),
]


@pytest.mark.parametrize("elements,chunks,indices", DATASET_SOURCES)
def test_dataset_references_in_store_passes_or_fails(tmp_path, elements, chunks, indices):
    write_reference_dataset(tmp_path / "r.zarr", elements, chunks)
    got = results(tmp_path / "r.zarr")["hdmf-zarr.reference.dataset-source-in-store"]
    assert got.status is (Status.FAILED if indices else Status.PASSED)
    assert [list(f.index) for f in got.findings] == indices
    assert all("not followed" in f.message for f in got.findings)


# A compound zarr_dtype with a reference field, as hdmf-zarr writes TimeSeriesReferenceVectorData.
COMPOUND = [
    {"name": "idx_start", "dtype": "int32"},
    {"name": "count", "dtype": "int32"},
    {"name": "timeseries", "dtype": "object"},
]
COMPOUND_REFS = [
    pytest.param([[0, 3, ref("/general")], [3, 3, ref("/general/electrodes")]], 2, [], id="rows-of-references"),
    pytest.param([{"idx_start": 0, "count": 3, "timeseries": ref("/general")}], 1, [], id="rows-keyed-by-field"),
    pytest.param(
        [[0, 3, ref("/general")], [3, 3, ref("/gone")], [6, 1, ref("/gone")]], 2, [[1]], id="missing-target-once-per-path"
    ),
    pytest.param(
        [[0, 3, "text"], [3, 3], [6, 1, ref("/x", source="../o.zarr")]], 2, [[0], [1]], id="not-a-reference-and-short-row"
    ),
]


@pytest.mark.parametrize("elements,chunks,indices", COMPOUND_REFS)
def test_compound_references_valid_passes_or_fails(tmp_path, elements, chunks, indices):
    write_reference_dataset(tmp_path / "r.zarr", elements, chunks, zarr_dtype=COMPOUND)
    got = results(tmp_path / "r.zarr")["hdmf-zarr.reference.compound-fields"]
    assert got.status is (Status.FAILED if indices else Status.PASSED)
    assert [list(f.index) for f in got.findings] == indices


UNMARKED = [
    pytest.param(None, [ref("/general"), "text", [1, ref("/general")]], [[0], [2]], id="no-zarr-dtype"),
    pytest.param("text", ["a", {"path": "/general"}, ref("/general")], [[2]], id="text-zarr-dtype"),
    pytest.param("object", [ref("/general")], [], id="marked"),
    pytest.param(None, ["a", "b"], [], id="no-reference-object"),
]


@pytest.mark.parametrize("zarr_dtype,elements,indices", UNMARKED)
def test_dataset_references_marked_passes_or_fails_json_coded_objects(tmp_path, zarr_dtype, elements, indices):
    write_reference_dataset(tmp_path / "r.zarr", elements, 2, zarr_dtype=zarr_dtype)
    got = results(tmp_path / "r.zarr")["hdmf-zarr.reference.dataset-marked"]
    assert got.status is (Status.FAILED if indices else Status.PASSED)
    assert [list(f.index) for f in got.findings] == indices


def test_dataset_references_marked_reads_no_pickle(tmp_path):
    marker = tmp_path / "unpickled"
    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=pickle.dumps(np.array([Boom(str(marker))], dtype=object)))
    (tmp_path / "p.zarr/general/electrodes/group/.zattrs").write_text("{}")  # unmarked: its elements would be read
    got = results(tmp_path / "p.zarr")["hdmf-zarr.reference.dataset-marked"]
    assert (got.status, got.unchecked[0][0]) == (Status.NOT_CHECKED, "/general/electrodes/group")
    assert not marker.exists()


def test_dataset_references_valid_not_checked_for_pickle_calling_a_global(tmp_path):
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(np.array([Boom(str(marker))], dtype=object), protocol=5)
    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=payload)
    got = results(tmp_path / "p.zarr")
    for rule_id in ("hdmf-zarr.reference.dataset-elements", "hdmf-zarr.reference.dataset-source-in-store"):
        assert got[rule_id].status is Status.NOT_CHECKED
        assert "its pickle calls io.open (REDUCE), which is not rebuilt" in got[rule_id].reason
    assert not marker.exists()


def zarr_reference_pickle(values, protocol=4):
    """Chunk bytes as hdmf-zarr's pickle writes them: hdmf_zarr.utils.ZarrReference objects (a dict subclass). A stand-in
    class named as the real one is pickled from a module object that exists only while it is; hdmf_zarr is never
    imported."""
    import sys
    import types

    module = types.ModuleType("hdmf_zarr.utils")

    class ZarrReference(dict):
        pass

    ZarrReference.__module__, ZarrReference.__qualname__ = module.__name__, "ZarrReference"
    module.ZarrReference = ZarrReference
    arr = np.empty(len(values), dtype=object)
    arr[:] = [ZarrReference(v) for v in values]
    package = types.ModuleType("hdmf_zarr")  # pickle imports the package first
    package.utils = module
    stand_ins = {"hdmf_zarr": package, "hdmf_zarr.utils": module}
    assert not set(stand_ins) & set(sys.modules)
    sys.modules.update(stand_ins)
    try:
        return pickle.dumps(arr, protocol=protocol)
    finally:
        for name in stand_ins:
            del sys.modules[name]


PICKLE_IMPORTS = "hdmf-zarr.dataset.pickle-imports"


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_calls_within_fails_a_zarr_reference_pickle_as_a_notice_naming_the_class(tmp_path, protocol):
    import sys

    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=zarr_reference_pickle([ref("/general")], protocol))
    got = results(tmp_path / "p.zarr")
    notice = got[PICKLE_IMPORTS]
    assert notice.status is Status.NOTICE  # a fact worth knowing, never a failure
    (f,) = notice.findings
    assert f.path == "/general/electrodes/group"
    assert f.message.startswith("its pickled chunks call hdmf_zarr.utils.ZarrReference (first in chunk 0; 1 chunk not read)")
    assert "needs module hdmf_zarr, which a reader with only the standard library and numpy lacks" in f.message
    assert f.details == {"calls": ["hdmf_zarr.utils.ZarrReference"], "modules": ["hdmf_zarr"], "chunks": 1, "first": "0"}
    # The clauses on its values are not checked, and say which class stopped them; nothing was imported.
    for rule_id in ("hdmf-zarr.reference.dataset-elements", "hdmf-zarr.reference.dataset-source-in-store"):
        assert got[rule_id].status is Status.NOT_CHECKED
        assert "its pickle calls hdmf_zarr.utils.ZarrReference (NEWOBJ), which is not rebuilt" in got[rule_id].reason
    assert "hdmf_zarr" not in sys.modules and "hdmf_zarr.utils" not in sys.modules
    assert spec_validate.validate(tmp_path / "p.zarr").problems == ()  # not read, but nothing unreadable


def test_pickle_calls_within_passes_plain_data_pickle(tmp_path):
    arr = np.empty(1, dtype=object)
    arr[0] = ref("/general")
    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=pickle.dumps(arr, protocol=5))
    assert results(tmp_path / "p.zarr")[PICKLE_IMPORTS].status is Status.PASSED


def test_pickle_calls_within_not_checked_where_the_class_is_of_a_module_given(tmp_path):
    # A class of a module the reader has is no finding; but the stream is not read past it, so what else it calls
    # is not known: not checked, never passed.
    from spec_validate.model import NotChecked
    from spec_validate.nodes.open import open_store

    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=zarr_reference_pickle([ref("/general")]))
    with open_store(str(tmp_path / "p.zarr")) as t:
        node = t.get("/general/electrodes/group")
        assert len(findings("pickle_calls_within", node, {"modules": ["numpy"]})) == 1
        with pytest.raises(NotChecked, match=r"what else its pickle calls is not read$"):
            findings("pickle_calls_within", node, {"modules": ["numpy", "hdmf_zarr"]})


def test_pickle_calls_within_not_checked_where_the_pickle_stops_at_the_standard_library(tmp_path):
    # io.open is of the standard library, but the stream is not read past it: what else it calls is not known.
    marker = tmp_path / "unpickled"
    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=pickle.dumps(np.array([Boom(str(marker))], dtype=object)))
    got = results(tmp_path / "p.zarr")[PICKLE_IMPORTS]
    assert got.status is Status.NOT_CHECKED
    assert got.reason.endswith(
        "its pickle calls io.open (REDUCE), which is not rebuilt (nothing from a file is executed); "
        "what else its pickle calls is not read"
    )
    assert not marker.exists()


def test_pickle_calls_within_fails_a_persistent_id(tmp_path):
    import io

    class Stored:
        pass

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return "row-7" if isinstance(obj, Stored) else None

    out = io.BytesIO()
    Pickler(out, protocol=5).dump(np.array([Stored()], dtype=object))
    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=out.getvalue())
    (f,) = results(tmp_path / "p.zarr")[PICKLE_IMPORTS].findings
    assert f.message.startswith("its pickled chunks call a persistent id or extension code (first in chunk 0")
    assert "needs its writer's unpickler" in f.message and f.details["modules"] == []


def test_pickle_calls_within_not_applicable_without_the_pickle_codec():
    node = tree({"a": Arr(np.array(["x"], dtype=object), metadata={"dtype": "|O", "filters": [{"id": "json2"}]})}).get("/a")
    with pytest.raises(NotApplicable, match="not stored with the pickle codec"):
        findings("pickle_calls_within", node, {"modules": ["numpy"]})


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize(
    "element,status",
    [
        pytest.param({"source": ".", "path": "/general"}, Status.PASSED, id="reference-to-a-node"),
        pytest.param({"source": ".", "path": "/general/gone"}, Status.FAILED, id="reference-to-nothing"),
        pytest.param("not a reference", Status.FAILED, id="a-string"),
    ],
)
def test_dataset_references_valid_reads_plain_data_pickle(tmp_path, protocol, element, status):
    # A pickle of plain data (dicts, as hdmf-zarr writes without ZarrReference) is read as data, never unpickled.
    arr = np.empty(1, dtype=object)
    arr[0] = element
    write_store(tmp_path / "p.zarr", spec_chunk=b"", pickle_chunk=pickle.dumps(arr, protocol=protocol))
    got = results(tmp_path / "p.zarr")["hdmf-zarr.reference.dataset-elements"]
    assert got.status is status, got.reason


# ------------------------------------------------------------------------------------------ links into other stores
IN_STORE = [
    pytest.param([{"name": "d", "source": ".", "path": "/acquisition/ts/data"}], 0, id="this-store"),
    pytest.param([{"name": "d", "source": "", "path": "/acquisition/ts/data"}], 0, id="empty-source-is-this-store"),
    pytest.param([{"name": "d", "source": "../other.nwb.zarr", "path": "/x"}], 1, id="other-store"),
    pytest.param(
        [{"name": "d", "source": "/abs/other.zarr", "path": "/x"}, {"name": "e", "source": "other.zarr", "path": "/y"}],
        2,
        id="one-finding-per-link",
    ),
]


@pytest.mark.parametrize("value,expected", IN_STORE)
def test_references_in_store_passes_or_fails_links(value, expected):
    t = nwb(linker={"@attrs": {"zarr_link": value}})
    got = findings("references_in_store", t.get("/linker"), {"of": "zarr_link"})
    assert len(got) == expected
    assert all("not followed" in f.message and f.details["source"] != "." for f in got)


def test_references_in_store_fails_attribute_reference_to_other_store():
    t = nwb(table={"@attrs": {"table": {"zarr_dtype": "object", "value": ref("/x", source="../other.zarr")}}})
    (f,) = findings("references_in_store", t.get("/table"), {"of": "attributes"})
    assert f.details == {"source": "../other.zarr", "target": "/x"} and "attribute 'table'" in f.message


def test_references_in_store_passes_not_applicable_without_links():
    with pytest.raises(NotApplicable):
        findings("references_in_store", nwb().get("/acquisition"), {"of": "zarr_link"})


# ------------------------------------------------------------------------------------------ the specification cache
def cache_tree(specloc):
    attrs = {"namespace": "core", "neurodata_type": "NWBFile"}
    if specloc is not None:
        attrs[".specloc"] = specloc
    return tree(
        {
            "@attrs": attrs,
            "specifications": {"core": {"2.7.0": {"namespace": np.array("{}")}}},
            "elsewhere": {"cache": {"core": {"2.7.0": {"namespace": np.array("{}")}}}},
        }
    )


BELOW = [
    pytest.param("specifications", "/specifications/core/2.7.0", 2, True, id="default-name"),
    pytest.param("/elsewhere/cache", "/elsewhere/cache/core/2.7.0", 2, True, id="followed-elsewhere"),
    pytest.param("elsewhere/cache", "/elsewhere/cache/core/2.7.0/namespace", 3, True, id="relative-file"),
    pytest.param("elsewhere/cache", "/specifications/core/2.7.0", 2, False, id="specifications-not-the-cache"),
    pytest.param("specifications", "/specifications/core", 2, False, id="too-shallow"),
    pytest.param(None, "/specifications/core/2.7.0", 2, True, id="no-specloc-default"),
    pytest.param("nowhere", "/specifications/core/2.7.0", 2, False, id="specloc-names-no-group"),
]


@pytest.mark.parametrize("specloc,path,depth,selected", BELOW)
def test_below_specloc_selects_only_the_cache(specloc, path, depth, selected):
    t = cache_tree(specloc)
    if selected:
        assert findings("below_specloc", t.get(path), {"depth": depth}) == []
    else:
        with pytest.raises(NotApplicable):
            findings("below_specloc", t.get(path), {"depth": depth})


# ------------------------------------------------------------------------------------------ typed nodes
TYPE_ATTRS = [
    pytest.param({"neurodata_type": "TimeSeries"}, 0, id="neurodata-type"),
    pytest.param({"data_type": "DynamicTable"}, 0, id="hdmf-common-data-type"),
    pytest.param({"namespace": "core"}, 1, id="namespace-without-type"),
    pytest.param({"neurodata_type": ["TimeSeries"]}, 1, id="type-not-a-string"),
    pytest.param({"neurodata_type": "A", "data_type": 3}, 1, id="each-present-key-checked"),
]


@pytest.mark.parametrize("attrs,expected", TYPE_ATTRS)
def test_any_attr_string_passes_or_fails(attrs, expected):
    t = nwb(typed={"@attrs": attrs})
    assert len(findings("any_attr_string", t.get("/typed"), {"keys": ["neurodata_type", "data_type"]})) == expected


def test_typed_rules_on_an_hdmf_zarr_store(tmp_path):
    """The namespace, object_id and type rules select typed groups and datasets, as the spec's tables place them."""
    write_store(tmp_path / "t.zarr", spec_chunk=b"")
    attrs = tmp_path / "t.zarr" / "general" / "electrodes" / ".zattrs"
    attrs.write_text(json.dumps({"neurodata_type": "DynamicTable", "object_id": 7}))
    got = results(tmp_path / "t.zarr")
    assert got["hdmf-zarr.group.namespace-present"].status is Status.FAILED
    # write_store's root (an NWBFile) has no object_id either; /general/electrodes has one that is not a string.
    assert {f.path for f in got["hdmf-zarr.group.object_id-present"].findings} == {"/", "/general/electrodes"}
    assert got["hdmf-zarr.group.neurodata_type-string"].status is Status.PASSED
    assert got["hdmf-zarr.dataset.namespace-present"].status is Status.NOT_APPLICABLE


# ------------------------------------------------------------------------------------------ paths, marking references
def test_reference_targets_exist_resolves_relative_paths_from_the_root():
    # hdmf-zarr looks a reference's path up in the source store's root group, leading "/" or not.
    t = nwb(
        acquisition={
            "ts": {"data": np.arange(3), "@attrs": {"namespace": "core"}},
            "ts_link": {"@attrs": {"zarr_link": [{"name": "data", "source": ".", "path": "acquisition/ts/data"}]}},
        }
    )
    assert findings("reference_targets_exist", t.get("/acquisition/ts_link"), {"of": "zarr_link"}) == []


def test_attr_references_marked_fails_a_bare_reference_and_passes_links_and_wrapped_ones():
    t = nwb(
        e={
            "@attrs": {
                "table": ref("/general/devices/probe"),
                "wrapped": {"zarr_dtype": "object", "value": ref("/general/devices/probe")},
                "zarr_link": [{"name": "x", **ref("/general")}],
            }
        }
    )
    (f,) = findings("attr_references_marked", t.get("/e"))
    assert f.details == {"key": "table"}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"value": ref("/general/devices/probe")}, id="wrapper-without-zarr-dtype"),
        pytest.param({"value": [ref("/general/devices/probe")]}, id="wrapper-of-a-list-without-zarr-dtype"),
        pytest.param([ref("/general"), ref("/general/devices")], id="list-of-references"),
        pytest.param([{"value": ref("/general")}], id="list-of-wrappers-without-zarr-dtype"),
    ],
)
def test_attr_references_marked_fails_unmarked_forms(value):
    (f,) = findings("attr_references_marked", nwb(e={"@attrs": {"table": value}}).get("/e"))
    assert f.details == {"key": "table"}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"value": 3}, id="dict-with-a-plain-value"),
        pytest.param({"source": "."}, id="no-path"),
        pytest.param(["a", {"path": "/x"}], id="list-without-reference"),
    ],
)
def test_attr_references_marked_passes_values_holding_no_reference(value):
    assert findings("attr_references_marked", nwb(e={"@attrs": {"table": value}}).get("/e")) == []


def test_dataset_references_marked_fails_a_reference_dtype_on_a_numeric_dataset():
    t = tree({"d": Arr(np.arange(3), attrs={"zarr_dtype": "reference"}, metadata={"dtype": "<i8"})})
    (f,) = findings("dataset_references_marked", t.get("/d"))
    assert "cannot hold reference objects" in f.message


def test_dataset_references_marked_passes_a_numeric_dataset_without_zarr_dtype():
    t = tree({"d": Arr(np.arange(3), metadata={"dtype": "<i8"})})
    assert findings("dataset_references_marked", t.get("/d")) == []


def test_compound_references_valid_fails_a_numeric_compound_with_a_reference_field():
    zarr_dtype = [{"name": "start", "dtype": "int32"}, {"name": "ts", "dtype": "object"}]
    t = tree(
        {
            "d": Arr(
                np.zeros(2, dtype=[("start", "i4"), ("ts", "i8")]),
                attrs={"zarr_dtype": zarr_dtype},
                metadata={"dtype": [["start", "<i4"], ["ts", "<i8"]]},
            )
        }
    )
    (f,) = findings("compound_references_valid", t.get("/d"), {"required": ["source", "path"]})
    assert "reference fields (ts)" in f.message


def test_compound_references_valid_is_not_applicable_without_a_reference_field():
    t = tree({"d": Arr(np.arange(2), attrs={"zarr_dtype": [{"name": "a", "dtype": "int32"}]}, metadata={"dtype": "<i4"})})
    with pytest.raises(NotApplicable):
        findings("compound_references_valid", t.get("/d"), {"required": ["source", "path"]})


# ------------------------------------------------------------------------------------------ cached namespace sources
def write_namespace(path, schema, siblings=()):
    import numcodecs

    namespace = json.dumps({"namespaces": [{"name": "core", "version": "2.7.0", "schema": schema}]})
    write_store(path, spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk(namespace))
    for name in siblings:
        os.makedirs(path / "specifications/core/2.7.0" / name)
        (path / "specifications/core/2.7.0" / name / ".zarray").write_text(
            json.dumps(
                {
                    "zarr_format": 2,
                    "shape": [],
                    "chunks": [],
                    "dtype": "|O",
                    "compressor": None,
                    "fill_value": 0,
                    "order": "C",
                    "filters": [numcodecs.JSON().get_config()],
                }
            )
        )


@pytest.mark.parametrize(
    ("schema", "siblings", "missing"),
    [
        pytest.param([{"source": "nwb.base"}], ["nwb.base"], [], id="stored-as-named"),
        pytest.param([{"source": "nwb.ecephys.yaml"}], ["nwb.ecephys"], [], id="extension-dropped"),
        pytest.param([{"namespace": "hdmf-common"}], [], [], id="included-namespace-names-no-file"),
        pytest.param(
            [{"source": "nwb.base.yaml"}, {"source": "nwb.misc"}],
            ["nwb.base"],
            ["/specifications/core/2.7.0/nwb.misc"],
            id="one-missing",
        ),
        pytest.param(
            [{"source": "nwb.base.yaml"}], ["nwb.base.yaml"], ["/specifications/core/2.7.0/nwb.base"], id="stored-with-extension"
        ),
    ],
)
def test_namespace_sources_present_passes_or_fails(tmp_path, schema, siblings, missing):
    write_namespace(tmp_path / "s.zarr", schema, siblings)
    got = results(tmp_path / "s.zarr")["hdmf-zarr.specifications.sources"]
    assert got.status is (Status.FAILED if missing else Status.PASSED)
    assert [f.path for f in got.findings] == missing


def test_namespace_sources_present_passes_not_applicable_when_not_a_namespace_document(tmp_path):
    import numcodecs

    write_store(tmp_path / "s.zarr", spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk('{"groups": []}'))
    assert results(tmp_path / "s.zarr")["hdmf-zarr.specifications.sources"].status is Status.NOT_APPLICABLE


def namespace_store(path, name="core", version="2.7.0", stored=("core", "2.7.0")):
    """write_namespace's store with the cached document defining `name` `version`, kept under <stored[0]>/<stored[1]>."""
    import numcodecs

    doc = {"name": name, "schema": [{"source": "nwb.base"}]}
    if version is not ...:
        doc["version"] = version
    write_store(path, spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk(json.dumps({"namespaces": [doc]})))
    os.rename(path / "specifications/core/2.7.0", path / "specifications/core" / stored[1])
    os.rename(path / "specifications/core", path / "specifications" / stored[0])


@pytest.mark.parametrize(
    ("name", "version", "stored", "failed"),
    [
        pytest.param("core", "2.7.0", ("core", "2.7.0"), [], id="as-named"),
        pytest.param("core", None, ("core", "unversioned"), [], id="no-version-unversioned"),
        pytest.param("core", ..., ("core", "unversioned"), [], id="version-absent-unversioned"),
        pytest.param("core", 2, ("core", "2"), [], id="numeric-version-as-text"),
        pytest.param("core", "2.7.0", ("core", "2.6.0"), [("version", "/specifications/core/2.6.0")], id="version-renamed"),
        pytest.param("core", "2.7.0", ("kore", "2.7.0"), [("name", "/specifications/kore")], id="namespace-renamed"),
        pytest.param(
            "core",
            "2.7.0",
            ("kore", "2.6.0"),
            [("name", "/specifications/kore"), ("version", "/specifications/kore/2.6.0")],
            id="both",
        ),
        pytest.param("core", None, ("core", "None"), [("version", "/specifications/core/None")], id="no-version-not-unversioned"),
    ],
)
def test_namespace_stored_under_name_passes_or_fails(tmp_path, name, version, stored, failed):
    namespace_store(tmp_path / "s.zarr", name, version, stored)
    got = results(tmp_path / "s.zarr")["hdmf-zarr.specifications.name-and-version"]
    assert got.status is (Status.FAILED if failed else Status.PASSED)
    assert [(f.details["field"], f.path) for f in got.findings] == failed


def test_namespace_stored_under_name_not_applicable_when_not_a_namespace_document(tmp_path):
    import numcodecs

    write_store(tmp_path / "s.zarr", spec_filters=[numcodecs.JSON().get_config()], spec_chunk=json_chunk('{"groups": []}'))
    assert results(tmp_path / "s.zarr")["hdmf-zarr.specifications.name-and-version"].status is Status.NOT_APPLICABLE


# ------------------------------------------------------------------------------------------ storage type of zarr_dtype
STORAGE = {"storage": {"int32": ["i4"], "float": ["f4"], "text": ["O"], "bool": ["b1"]}}


@pytest.mark.parametrize(
    ("zarr_dtype", "values", "expected"),
    [
        pytest.param("int32", np.arange(3, dtype="<i4"), 0, id="int32-i4"),
        pytest.param("bool", np.array([True]), 0, id="bool-b1"),
        pytest.param("text", np.array(["a"], dtype=object), 0, id="text-object"),
        pytest.param("float", np.zeros(2, dtype="<f8"), 1, id="float-stored-as-f8"),
        pytest.param("int32", np.arange(3, dtype="<i8"), 1, id="int32-stored-as-i8"),
        pytest.param("text", np.array(["a"]), 1, id="text-fixed-length-unicode"),
    ],
)
def test_zarr_dtype_storage_passes_or_fails(zarr_dtype, values, expected):
    node = tree({"d": Arr(values, attrs={"zarr_dtype": zarr_dtype})}).get("/d")
    assert len(findings("zarr_dtype_storage", node, STORAGE)) == expected


@pytest.mark.parametrize("attrs", [{}, {"zarr_dtype": "scalar"}, {"zarr_dtype": [{"name": "x", "dtype": "int32"}]}])
def test_zarr_dtype_storage_passes_not_applicable(attrs):
    node = tree({"d": Arr(np.arange(2), attrs=attrs)}).get("/d")
    with pytest.raises(NotApplicable):
        findings("zarr_dtype_storage", node, STORAGE)


def test_dataset_references_marked_passes_a_string_array_unread():
    # vlen-utf8 decodes to strings only: the cached specifications are never read for references, nor "not checked".
    from spec_validate.checks import registry

    t = tree({"s": Arr(np.array(["{}"], dtype=object), metadata={"dtype": "|O", "filters": [{"id": "vlen-utf8"}]})})
    primitive = registry.get("dataset_references_marked")
    assert primitive.facts(t.get("/s"), {}, PackScope(None, t.root)) == {}  # nothing for the scan to read
    assert findings("dataset_references_marked", t.get("/s")) == []
