"""Every format names the store's era and likely writers, and shows a legacy verdict as one failing item."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

import spec_validate
from spec_validate.cli import main

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"
LEGACY = CORPUS / "anndata" / "h5ad" / "legacy-anndata-0-7.h5ad"
INTACT_LEGACY = CORPUS / "anndata" / "h5ad" / "legacy-anndata-0-7-sparse.h5ad"  # a CSR X and a categorical column
BROKEN_LEGACY = CORPUS / "anndata" / "h5ad" / "legacy-anndata-0-7-indptr-decreasing.h5ad"
ZARR_LEGACY = CORPUS / "anndata" / "zarr-v2" / "legacy-anndata-pre-0-7-indptr-decreasing.zarr"
TENSORSTORE_LIKE = CORPUS / "zarr" / "zarr-v2" / "group-ancestor-missing.zarr"
SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())

pytestmark = pytest.mark.skipif(not LEGACY.exists(), reason="conformance corpus not generated")


def out(capsys, *args) -> tuple[int, str]:
    code = main([*map(str, args), "--quiet"])
    return code, capsys.readouterr().out


def test_text_legacy_file_is_three_lines_naming_era_and_writer(capsys):
    code, text = out(capsys, LEGACY)
    lines = [line for line in text.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 3
    assert "era: anndata 0.7" in lines[0] and "likely written by anndata >=0.7,<0.8" in lines[0]
    assert lines[1].startswith("  LEGACY anndata.legacy: anndata 0.7") and "--all-clauses" in lines[1]
    assert "does not conform at --fail-on must (legacy: anndata.legacy" in lines[2]


@pytest.mark.parametrize("fail_on", ["must", "should", "may"])
def test_legacy_fails_at_every_fail_on_and_ignoring_it_accepts_the_file(capsys, fail_on):
    assert out(capsys, LEGACY, "--fail-on", fail_on)[0] == 1
    code, text = out(capsys, LEGACY, "--fail-on", fail_on, "--ignore", "anndata.legacy")
    assert code == 0 and "LEGACY" not in text


def test_all_clauses_checks_every_clause_and_keeps_the_verdict(capsys):
    code, text = out(capsys, LEGACY, "--all-clauses")
    assert code == 1 and "LEGACY anndata.legacy" in text and "FAILED MUST anndata.anndata.encoding" in text
    assert "(--all-clauses checks every clause)" not in text


def test_json_carries_provenance_and_legacy_and_validates(capsys):
    code, text = out(capsys, LEGACY, "--format", "json")
    assert code == 1  # the legacy verdict fails the run in every format
    doc = json.loads(text)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    report = doc["reports"][0]
    assert [e["id"] for e in report["provenance"]["eras"]] == ["anndata-0.7"]
    assert report["legacy"][0]["id"] == "anndata.legacy" and report["legacy"][0]["level"] == "MUST"


def test_sarif_run_properties_name_the_era_and_the_legacy_verdict_is_a_result(capsys):
    code, text = out(capsys, LEGACY, "--format", "sarif")
    assert code == 1  # the legacy verdict fails the run in every format
    run = json.loads(text)["runs"][0]
    (entry,) = run["properties"]["provenance"]
    assert entry["legacy"] == ["anndata.legacy"] and entry["eras"][0]["id"] == "anndata-0.7"
    assert [r["ruleId"] for r in run["results"]] == ["anndata.legacy"]
    assert any(d["id"] == "anndata.legacy" for d in run["tool"]["driver"]["rules"])


def test_github_header_line_and_one_error_for_the_legacy_verdict(capsys):
    code, text = out(capsys, LEGACY, "--format", "github")
    assert code == 1  # the legacy verdict fails the run in every format
    lines = text.splitlines()
    assert lines[0].startswith("spec-validate: ") and "era: anndata 0.7" in lines[0]
    (error,) = [line for line in lines if line.startswith("::error")]
    assert "title=MUST anndata.legacy" in error


def test_junit_properties_and_a_failing_legacy_testcase(capsys):
    code, text = out(capsys, LEGACY, "--format", "junit")
    assert code == 1  # the legacy verdict fails the run in every format
    suite = ET.fromstring(text).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["era /"].startswith("anndata 0.7")
    case = next(c for c in suite.findall("testcase") if c.get("name") == "anndata.legacy")
    assert case.find("failure") is not None


def test_markdown_names_era_writer_and_legacy(capsys):
    code, text = out(capsys, LEGACY, "--format", "markdown")
    assert code == 1  # the legacy verdict fails the run in every format
    assert "(legacy)" in text and "era: anndata 0.7" in text and "**legacy**" in text


def test_writer_notes_are_per_finding_in_json(capsys):
    # A store whose only array is spelled as zarr-python 2 writes it: tensorstore's note on the missing .zgroup
    # does not fit it, so neither the finding nor the result carries it.
    _code, text = out(capsys, TENSORSTORE_LIKE, "--format", "json")
    report = json.loads(text)["reports"][0]
    (result,) = [r for r in report["results"] if r["id"] == "zarr.group.ancestors"]
    assert result["status"] == "failed"
    assert "writers" not in result and all("writers" not in f for f in result["findings"])


# ------------------------------------------------------------------------------------------ legacy never hides damage
def test_text_shows_the_failures_of_clauses_that_hold_in_every_era_under_the_legacy_line(capsys):
    code, text = out(capsys, BROKEN_LEGACY)
    lines = [line for line in text.splitlines() if line.strip()]
    legacy = next(i for i, line in enumerate(lines) if "LEGACY anndata.legacy" in line)
    failed = next(i for i, line in enumerate(lines) if "FAILED MUST (derived) anndata.csr_matrix.indptr-monotonic" in line)
    assert code == 1 and legacy < failed
    assert "/X/indptr[2]: row pointers must never decrease" in text
    stands = r"It stands for the \d+ clause\(s\) that depend on the era; .* are checked: 1 failed \(below\)"
    assert re.search(stands, lines[legacy])
    assert "Checked whatever the era: MUST: 1 failed" in lines[-1]


@pytest.mark.parametrize("path", [LEGACY, INTACT_LEGACY, BROKEN_LEGACY, ZARR_LEGACY], ids=lambda p: p.name)
def test_text_legacy_verdict_says_what_it_stands_for_never_nothing_failed(capsys, path):
    _code, text = out(capsys, path)
    verdict = [line for line in text.splitlines() if line.strip()][-1]
    assert verdict.startswith("  does not conform") and "anndata.legacy stands for the" in verdict
    # the clauses the verdict stands for are not counted as the store's "n/a": never "0 failed, 0 passed, 92 n/a"
    assert not re.search(r"MUST: 0 failed, 0 passed", verdict)


def test_text_zarr_legacy_store_is_told_about_zarr_not_hdf5(capsys):
    _code, text = out(capsys, ZARR_LEGACY)
    assert "structured arrays" in text and "read_zarr" in text
    assert "HDF5" not in text and "read_h5ad" not in text and "compound" not in text


def test_text_ignoring_the_legacy_verdict_shows_what_was_checked(capsys):
    code, text = out(capsys, INTACT_LEGACY, "--ignore", "anndata.legacy")
    assert code == 0 and "nothing checked" not in text and "LEGACY" not in text
    assert re.search(r"conforms at --fail-on must \(legacy: \d+ clause\(s\) that depend on the era not checked", text)
    assert re.search(r"Checked whatever the era: MUST: 0 failed, [1-9]\d* passed", text)


def test_json_legacy_names_the_clauses_still_checked_and_their_failure(capsys):
    code, text = out(capsys, BROKEN_LEGACY, "--format", "json")
    doc = json.loads(text)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    report = doc["reports"][0]
    (legacy,) = report["legacy"]
    assert code == 1 and "anndata.csr_matrix.indptr-monotonic" in legacy["still_checked"] and legacy["stands_for"] > 0
    failed = [r["id"] for r in report["results"] if r["status"] == "failed"]
    assert failed == ["anndata.csr_matrix.indptr-monotonic"]


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_markdown_and_html_say_what_the_legacy_verdict_stands_for(capsys, fmt):
    code, text = out(capsys, BROKEN_LEGACY, "--format", fmt)
    assert code == 1 and "that depend on the era" in text and "1 failed (below)" in text
