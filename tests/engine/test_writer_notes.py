"""A writer note is attached only to a finding holding the values it explains, of a writer the store fits (#37)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import spec_validate
from spec_validate.engine.loader import builtin_packs
from spec_validate.engine.writer_notes import describes
from spec_validate.model import Status, Writer

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"


def note(**when) -> Writer:
    return Writer("w", "", "n", tuple((k, tuple(v if isinstance(v, list) else [v])) for k, v in when.items()))


@pytest.mark.parametrize(
    ("when", "values", "expected"),
    [
        pytest.param({"value": ["scalar", "bytes"]}, {"value": "scalar"}, True, id="one-of-the-values"),
        pytest.param({"value": ["scalar", "bytes"]}, {"value": "int128"}, False, id="another-value"),
        pytest.param({"dtype": "|S*"}, {"dtype": "|S9"}, True, id="a-glob"),
        pytest.param({"dtype": "|S*"}, {"dtype": "|O"}, False, id="outside-the-glob"),
        pytest.param({"declared": "false"}, {"declared": False}, True, id="false-as-json-spells-it"),
        pytest.param({"value": "0"}, {"value": False}, False, id="false-is-not-0"),
        pytest.param({"fields": ".specloc"}, {"fields": [".specloc"]}, True, id="a-list-whose-items-all-match"),
        pytest.param({"fields": ".specloc"}, {"fields": [".specloc", "other"]}, False, id="a-list-with-another-item"),
        pytest.param({"fields": ".specloc"}, {"fields": []}, False, id="an-empty-list"),
        pytest.param({"path": "/uns", "dtype": "uint64"}, {"path": "/obs", "dtype": "uint64"}, False, id="every-key-must-match"),
        pytest.param({"dtype": "uint64"}, {"path": "/obs"}, False, id="a-key-the-finding-lacks"),
        pytest.param({}, {"path": "/obs"}, False, id="no-when-describes-nothing"),
    ],
)
def test_describes(when, values, expected):
    assert describes(note(**when), values) is expected


def test_every_builtin_writer_note_names_the_values_it_explains():
    bare = [(r.id, w.name) for p in builtin_packs() for r in p.rules for w in r.writers if not w.when]
    assert bare == []


# ------------------------------------------------------------------------------------------ stores
def failed(report, rule_id):
    (r,) = [r for r in report.results if r.rule.id == rule_id]
    assert r.status in (Status.FAILED, Status.NOTICE), r.status
    return r


def test_hdmf_zarr_int128_gets_no_note_and_scalar_and_bytes_keep_theirs():
    # zarr_dtype "int128" on a <f8 dataset names no type (a MUST of its own) and is not what the `mapped` note
    # ("scalar", "bytes": read back) explains: neither rule shows a note on it.
    rule = "hdmf-zarr.zarr_dtype.mapped"
    bad = failed(
        spec_validate.validate(CORPUS / "hdmf-zarr/zarr-v2/zarr-dtype-not-in-table.zarr"), "hdmf-zarr.zarr_dtype.names-a-type"
    )
    assert [f.details["value"] for f in bad.findings] == ["int128"] and bad.writer_notes == []
    known = failed(spec_validate.validate(CORPUS / "hdmf-zarr/zarr-v2/zarr-dtype-scalar-and-bytes.zarr"), rule)
    assert known.findings and all([w.name for w in f.writers] == ["hdmf-zarr"] and f.writers[0].detected for f in known.findings)


def test_a_fixed_length_byte_string_gets_no_anndata_012_vlen_note(tmp_path):
    store = tmp_path / "s.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/anndata-0.12-string-scalars.zarr", store)
    zarray = store / "uns" / "str" / ".zarray"
    doc = json.loads(zarray.read_text())
    doc.update(dtype="|S9", filters=None, fill_value=None)
    zarray.write_text(json.dumps(doc, indent=2))
    r = failed(spec_validate.validate(store), "anndata.string.zarr-fixed-length-unicode")
    notes = {f.path: [w.name for w in f.writers] for f in r.findings}
    assert notes == {"/uns/str": [], "/uns/nested/a/s": ["anndata"]}  # the untouched |O + vlen-utf8 scalar keeps it


def _byte_string_fill_0(path: Path, *, zarr_python_2_spelling: bool) -> Path:
    """A |S4 array written by zarr-python 3 (zarr_format=2), its fill_value then set to 0, spelled as zarr-python 3
    writes .zarray or as zarr-python 2 did (indented by 4, sorted keys)."""
    zarr = pytest.importorskip("zarr")
    zarr.create_array(str(path), shape=(2,), dtype="|S4", fill_value=b"", zarr_format=2)
    doc = json.loads((path / ".zarray").read_text())
    doc["fill_value"] = 0
    spelled = json.dumps(doc, indent=4, sort_keys=True) if zarr_python_2_spelling else json.dumps(doc, indent=2)
    (path / ".zarray").write_text(spelled)
    return path


def test_a_store_zarr_python_3_wrote_gets_no_early_zarr_python_2_note(tmp_path):
    report = spec_validate.validate(_byte_string_fill_0(tmp_path / "a.zarr", zarr_python_2_spelling=False))
    assert [w.versions for w in report.provenance.writers] == [">=3"]
    r = failed(report, "zarr.fill_value.base64")
    assert r.findings[0].details == {"value": 0, "dtype": "|S4"} and r.writer_notes == []


def test_a_store_spelled_as_zarr_python_2_gets_the_note_as_detected(tmp_path):
    report = spec_validate.validate(_byte_string_fill_0(tmp_path / "a.zarr", zarr_python_2_spelling=True))
    (w,) = failed(report, "zarr.fill_value.base64").writer_notes
    assert (w.name, w.detected) == ("zarr-python", True) and "indented by 4" in w.evidence


def test_an_int64_obs_domain_gets_no_converter_note():
    pytest.importorskip("tiledb")
    r = failed(spec_validate.validate(CORPUS / "cxg/cxg-0.3.0/obs-domain-int64.cxg"), "cxg.tiledb.domain-uint32")
    assert [(f.path, f.details["dtype"]) for f in r.findings] == [("/obs", "int64")] and r.writer_notes == []


def test_a_uint64_group_metadata_without_a_detected_writer_gets_the_note_as_likely(tmp_path):
    tiledb = pytest.importorskip("tiledb")
    store = tmp_path / "c.cxg"
    shutil.copytree(CORPUS / "cxg/cxg-0.3.0/valid-every-element.cxg", store)
    uri = str(store / "cxg_group_metadata")
    with tiledb.open(uri) as array:
        meta = {k: array.meta[k] for k in array.meta}
    shutil.rmtree(uri)
    dim = tiledb.Dim(name="__dim_0", domain=(0, 0), tile=1, dtype=np.uint64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[tiledb.Attr("", dtype=np.float64)]))
    with tiledb.open(uri, mode="w") as array:
        array[:] = np.zeros(1)
        for k, v in meta.items():
            array.meta[k] = v
    report = spec_validate.validate(store)
    assert report.provenance.writers == ()  # no `uns` array: the converter is not detected
    (w,) = failed(report, "cxg.tiledb.domain-uint32").writer_notes
    assert w.name == "cellxgene data-portal converter" and not w.detected
    assert w.label.startswith("likely cellxgene data-portal converter") and "dtype uint64" in w.evidence
