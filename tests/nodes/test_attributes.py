"""An attributes document on its own (spec_validate/nodes/attributes): a JSON file read as the one group of a store
holding nothing else, its members unknown, so that what needs the hierarchy is not checked rather than judged."""

from __future__ import annotations

import json

import pytest

import spec_validate
from spec_validate.errors import DamagedInput, InputError
from spec_validate.model import Status
from spec_validate.nodes.attributes.tree import HIERARCHY_UNKNOWN
from spec_validate.nodes.open import open_store

AXES = [{"name": "y", "type": "space", "unit": "micrometer"}, {"name": "x", "type": "space", "unit": "micrometer"}]
MULTISCALE = {
    "name": "image",
    "axes": AXES,
    "datasets": [{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1.0, 1.0]}]}],
    "type": "gaussian",
    "metadata": {"method": "skimage.transform.pyramid_gaussian"},
}
V04 = {"multiscales": [{"version": "0.4", **MULTISCALE}]}
V05 = {"ome": {"version": "0.5", "multiscales": [MULTISCALE]}}


def _write(tmp_path, doc, name="attrs.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "doc,zarr_format",
    [
        pytest.param(V04, 2, id="0.4-zattrs"),
        pytest.param(V05, 3, id="0.5-attributes"),
        pytest.param({"zarr_format": 3, "node_type": "group", "attributes": V05}, 3, id="0.5-zarr-json"),
    ],
)
def test_attributes_passes_each_layout_reads_as_one_group(tmp_path, doc, zarr_format):
    with open_store(_write(tmp_path, doc)) as tree:
        assert tree.format == f"zarr-v{zarr_format}-attributes"
        assert tree.root.kind == "group"
        assert tree.root.children() == {}
        assert tree.root.members_unread == HIERARCHY_UNKNOWN
        assert tree.root.attrs["ome" if zarr_format == 3 else "multiscales"]


def test_attributes_passes_a_zattrs_file_outside_a_store(tmp_path):
    with open_store(_write(tmp_path, V04, ".zattrs")) as tree:
        assert tree.format == "zarr-v2-attributes"


@pytest.mark.parametrize("doc", [V04, V05], ids=["0.4", "0.5"])
def test_attributes_passes_a_valid_document_conforms_with_the_hierarchy_not_checked(tmp_path, doc):
    report = spec_validate.validate(_write(tmp_path, doc))
    assert {r.rule.pack for r in report.results} == {"ome-zarr04" if "multiscales" in doc else "ome-zarr05"}
    assert report.failures == []
    unchecked = {r.rule.id.split(".", 1)[1] for r in report.results if r.status is Status.NOT_CHECKED}
    assert {"datasets.path-array", "multiscales.axes-match-arrays"} <= unchecked
    for r in report.results:
        if r.status is Status.NOT_CHECKED:
            assert r.unchecked == (("/", HIERARCHY_UNKNOWN),)


@pytest.mark.parametrize("doc", [V04, V05], ids=["0.4", "0.5"])
def test_attributes_passes_the_json_report_validates_against_its_schema(tmp_path, doc):
    from pathlib import Path

    import jsonschema

    from spec_validate.report.json import render
    from spec_validate.report.options import RenderOptions

    schema = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())
    out = json.loads(render([spec_validate.validate(_write(tmp_path, doc))], RenderOptions()))
    jsonschema.Draft202012Validator(schema).validate(out)
    assert out["reports"][0]["format"] == ("zarr-v2-attributes" if "multiscales" in doc else "zarr-v3-attributes")


def test_attributes_fails_a_clause_of_the_document_itself(tmp_path):
    doc = json.loads(json.dumps(V05))
    doc["ome"]["multiscales"][0]["axes"][0]["type"] = "channel"  # one space axis: two or three are needed
    report = spec_validate.validate(_write(tmp_path, doc))
    failed = {r.rule.id for r in report.failures}
    assert "ome-zarr05.multiscales.axes-types" in failed


def test_attributes_fails_a_document_that_is_not_json(tmp_path):
    with pytest.raises(DamagedInput, match="not valid JSON"):
        open_store(_write(tmp_path, '{"ome": {'))
    report = spec_validate.validate(_write(tmp_path, '{"ome": {', "other.json"))
    assert [p.key for p in report.problems] == ["/"]
    assert "not valid JSON" in report.problems[0].message


@pytest.mark.parametrize(
    "doc,message",
    [
        pytest.param([1, 2], "not an attributes document", id="a-list"),
        pytest.param({"name": "x"}, "not an OME-Zarr attributes document", id="no-ome-key"),
        pytest.param({"zarr_format": 3, "node_type": "array", "attributes": V05}, "not a Zarr v3 group", id="an-array"),
        pytest.param({"zarr_format": 2}, "not a Zarr v3 group", id="a-zgroup"),
    ],
)
def test_attributes_fails_json_that_is_no_attributes_document(tmp_path, doc, message):
    with pytest.raises(InputError, match=message):
        open_store(_write(tmp_path, doc))


def test_attributes_passes_other_file_names_are_not_read_as_documents(tmp_path):
    with pytest.raises(InputError, match="not an HDF5 file or a Zarr store"):
        open_store(_write(tmp_path, V05, "attrs.txt"))
