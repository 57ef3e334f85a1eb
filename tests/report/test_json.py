"""The JSON report validates against report.schema.json, for in-memory and real runs."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import spec_validate
from spec_validate.report.json import render
from spec_validate.report.options import RenderOptions

SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())


def check(doc):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


@pytest.mark.parametrize(
    "fixture",
    [
        pytest.param("valid_h5ad", id="valid-h5ad"),
        pytest.param("broken_h5ad", id="broken-h5ad"),
        pytest.param("valid_zarr", id="valid-zarr"),
        pytest.param("should_failing_h5ad", id="should-fails"),
    ],
)
def test_render_passes_schema_on_real_run(request, fixture):
    path = request.getfixturevalue(fixture)
    doc = json.loads(render([spec_validate.validate(path)], RenderOptions()))
    check(doc)
    assert doc["reports"][0]["source"] == path


def test_render_fails_carries_finding_index_and_details(broken_h5ad):
    doc = json.loads(render([spec_validate.validate(broken_h5ad)], RenderOptions()))
    (result,) = [r for r in doc["reports"][0]["results"] if r["status"] == "failed"]
    assert result["id"] == "anndata.csr_matrix.indptr-monotonic"
    assert (result["level"], result["spec_level"], result["basis"]) == ("MUST", "MUST", "derived")
    (finding,) = result["findings"]
    assert finding["path"] == "/X/indptr" and finding["index"] == [6]
    assert finding["details"]["count"] == 1 and finding["details"]["previous"] > finding["details"]["value"]


def test_render_passes_schema_with_store_problems(tmp_path, valid_zarr):
    import shutil

    store = tmp_path / "broken.zarr"
    shutil.copytree(valid_zarr, store)
    (store / ".zattrs").write_text("{broken")
    doc = json.loads(render([spec_validate.validate(str(store))], RenderOptions()))
    check(doc)
    assert doc["reports"][0]["problems"][0]["key"] == ".zattrs"


def test_render_passes_schema_and_names_nodes_deep_could_not_decode(valid_zarr, tmp_path):
    # Under --deep, an array whose codec is off the allow-list is never decoded: the chunk rules pass on the
    # other arrays and name it as not checked, in the JSON as in the text.
    import shutil

    store = tmp_path / "s.zarr"
    shutil.copytree(valid_zarr, store)
    zarray = next(store.rglob(".zarray"))
    meta = json.loads(zarray.read_text())
    meta["compressor"] = {"id": "zfpy", "mode": 4}  # a third-party codec: never constructed
    zarray.write_text(json.dumps(meta))
    (store / ".zmetadata").unlink(missing_ok=True)
    report = spec_validate.validate(store, deep=True)
    doc = json.loads(render([report], RenderOptions()))
    check(doc)
    partly = [r for r in doc["reports"][0]["results"] if r["status"] == "passed" and r.get("unchecked")]
    assert partly and all(u["path"].startswith("/") and "not decoded" in u["reason"] for r in partly for u in r["unchecked"])
