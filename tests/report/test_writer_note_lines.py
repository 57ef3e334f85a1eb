"""Every format that shows writer notes says how the writer is known: detected (and by what), or likely (and why)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import spec_validate
from spec_validate.cli import main

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"
DETECTED = CORPUS / "anndata" / "zarr-v2" / "anndata-0.12-string-scalars.zarr"  # anndata 0.12's vlen strings
LIKELY = CORPUS / "zarr" / "zarr-v3" / "written-by-tensorstore-0.1.86" / "tensorstore_arrays.zarr"  # no v3 writer told
SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())

pytestmark = pytest.mark.skipif(not DETECTED.exists(), reason="conformance corpus not generated")


def out(capsys, *args) -> str:
    main([*map(str, args), "--quiet"])
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "markdown", "github", "junit", "html", "sarif"])
def test_a_note_says_its_writer_is_detected_or_likely(capsys, fmt):
    detected = out(capsys, DETECTED, "--format", fmt).replace("&gt;", ">").replace("&#x27;", "'")  # html escapes
    assert "anndata >=0.12 (detected: / has encoding-type 'anndata')" in detected
    likely = out(capsys, LIKELY, "--format", fmt)
    assert "likely tensorstore 0.1.86 (no writer of its kind is detected; the finding has the values the note explains" in likely


def test_json_notes_carry_detected_and_evidence_and_validate(capsys):
    doc = json.loads(out(capsys, LIKELY, "--format", "json"))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    (result,) = [r for r in doc["reports"][0]["results"] if r["id"] == "zarr3.group.metadata-document"]
    (note,) = result["writers"]
    assert note["name"] == "tensorstore" and note["detected"] is False and "groups_stored false" in note["evidence"]
    assert result["findings"][0]["writers"] == [note]
    doc = json.loads(out(capsys, DETECTED, "--format", "json"))
    (result,) = [r for r in doc["reports"][0]["results"] if r["id"] == "anndata.string.zarr-fixed-length-unicode"]
    assert [(w["detected"], w["evidence"]) for w in result["writers"]] == [(True, "/ has encoding-type 'anndata'")]
