"""--format sarif: valid SARIF 2.1.0, one result per finding, stable fingerprints, Zarr keys as locations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import jsonschema
import pytest
from corpus_paths import FAILING_ZARR as ZARR
from corpus_paths import VALID_H5AD

import spec_validate
from spec_validate.cli import main

SCHEMA = json.loads((Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json").read_text())

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


@pytest.fixture
def broken_h5ad(tmp_path, monkeypatch) -> str:
    """rich.h5ad without /obs's `_index` and with a decreasing /X/indptr: two MUST failures."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(VALID_H5AD, tmp_path / "broken.h5ad")
    with h5py.File(tmp_path / "broken.h5ad", "a") as f:
        del f["obs"].attrs["_index"]
        indptr = f["X/indptr"][...]
        indptr[5] = indptr[6] + 1
        f["X/indptr"][...] = indptr
    return "broken.h5ad"


def sarif(*args: str, capsys) -> tuple[int, dict]:
    code = main(["--format", "sarif", *args])
    return code, json.loads(capsys.readouterr().out)


def test_sarif_validates_against_the_official_schema(broken_h5ad, capsys):
    code, doc = sarif(broken_h5ad, capsys=capsys)
    assert code == 1
    jsonschema.validate(doc, SCHEMA)
    assert doc["version"] == "2.1.0"
    assert len(doc["runs"]) == 1


def test_sarif_has_one_result_per_finding(broken_h5ad, capsys):
    _, doc = sarif(broken_h5ad, capsys=capsys)
    report = spec_validate.validate(broken_h5ad)
    findings = [(r.rule.id, f.path) for r in report.failures for f in r.findings]
    results = doc["runs"][0]["results"]
    assert sorted((r["ruleId"], r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]) for r in results) == sorted(
        findings
    )
    assert ("anndata.dataframe.index-attr", "/obs") in findings
    assert any(rule.startswith("anndata.csr_matrix.indptr") for rule, _ in findings)


def test_sarif_result_locations_and_levels(broken_h5ad, capsys):
    _, doc = sarif(broken_h5ad, capsys=capsys)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == "error"  # every failure here is MUST
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "broken.h5ad"
        assert loc["region"]["startLine"] == 1
        assert result["message"]["text"].startswith(result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"])


def test_sarif_rules_describe_each_evaluated_rule(broken_h5ad, capsys):
    _, doc = sarif(broken_h5ad, capsys=capsys)
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["name"] == "spec-validate"
    assert driver["version"] == spec_validate.__version__
    assert "informationUri" not in driver  # no documentation site named: none linked
    report = spec_validate.validate(broken_h5ad)
    assert [r["id"] for r in driver["rules"]] == [r.rule.id for r in report.results]
    by_id = {r["id"]: r for r in driver["rules"]}
    rule = by_id["anndata.dataframe.index-attr"]
    assert "_index" in rule["shortDescription"]["text"]
    assert rule["fullDescription"]["text"].startswith(rule["shortDescription"]["text"])
    assert "helpUri" not in rule  # no site named: the page itself is the help below
    assert rule["help"]["markdown"].startswith("# anndata.dataframe.index-attr (MUST")
    assert rule["defaultConfiguration"]["level"] == "error"
    assert rule["properties"]["spec"] == "anndata"
    assert rule["properties"]["rfc2119_level"] == "MUST"
    assert rule["properties"]["basis"] == "stated"
    levels = {r.rule.id: r.rule.level.value for r in report.results}
    expected = {"MUST": "error", "SHOULD": "warning", "MAY": "note"}
    assert all(d["defaultConfiguration"]["level"] == expected[levels[d["id"]]] for d in driver["rules"])
    derived = [d for d in driver["rules"] if d["properties"]["basis"] == "derived"]
    assert derived and all("Derived:" in d["fullDescription"]["text"] for d in derived)


def test_sarif_fingerprints_are_identical_across_runs(broken_h5ad, capsys):
    _, first = sarif(broken_h5ad, capsys=capsys)
    _, second = sarif(broken_h5ad, capsys=capsys)
    prints = [r["partialFingerprints"] for r in first["runs"][0]["results"]]
    assert prints == [r["partialFingerprints"] for r in second["runs"][0]["results"]]
    values = [next(iter(p.values())) for p in prints]
    assert len(set(values)) == len(values)


def test_sarif_points_at_the_zarr_metadata_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ZARR, tmp_path / "x.zarr")
    code, doc = sarif("x.zarr", capsys=capsys)
    assert code == 1
    jsonschema.validate(doc, SCHEMA)
    results = [r for r in doc["runs"][0]["results"] if r.get("kind", "fail") == "fail"]  # not "open": not checked
    assert results
    for result in results:
        node = result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == f"x.zarr{node}/.zarray"


def test_report_to_sarif_matches_the_cli(broken_h5ad, capsys):
    _, doc = sarif(broken_h5ad, capsys=capsys)
    api = spec_validate.to_sarif(spec_validate.validate(broken_h5ad))
    jsonschema.validate(api, SCHEMA)
    assert api["runs"][0]["results"] == doc["runs"][0]["results"]


def test_sarif_holds_every_input_in_one_run(broken_h5ad, tmp_path, capsys):
    shutil.copy(VALID_H5AD, tmp_path / "valid.h5ad")
    code, doc = sarif(broken_h5ad, "valid.h5ad", capsys=capsys)
    assert code == 1
    run = doc["runs"][0]
    assert [a["location"]["uri"] for a in run["artifacts"]] == ["broken.h5ad", "valid.h5ad"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]} == {"broken.h5ad"}


def test_sarif_passes_docs_url_gives_help_uri_and_information_uri(broken_h5ad, capsys):
    _, doc = sarif(broken_h5ad, "--docs-url", "https://docs.example.org/sv", capsys=capsys)
    jsonschema.validate(doc, SCHEMA)
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://docs.example.org/sv/"
    by_id = {r["id"]: r for r in driver["rules"]}
    assert (
        by_id["anndata.dataframe.index-attr"]["helpUri"] == "https://docs.example.org/sv/rules/anndata.dataframe.index-attr.html"
    )


def test_sarif_gives_each_clause_not_checked_as_an_open_result_naming_why():
    # A Zarr v3 array whose chunk grid is an extension the pack does not read: the clauses that need the grid are
    # "open" results (SARIF: the tool could not decide), level "none", never failures, each naming the grid.
    store = Path(__file__).resolve().parents[2] / "conformance-corpus/zarr/zarr-v3/chunk-grid-rectilinear.zarr"
    report = spec_validate.validate(store)
    doc = spec_validate.to_sarif(report)
    jsonschema.validate(doc, SCHEMA)
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {r.rule.id for r in report.not_checked}
    assert all((r["kind"], r["level"]) == ("open", "none") for r in results)
    assert all("chunk grid 'rectilinear'" in r["message"]["text"] for r in results)
    prints = [next(iter(r["partialFingerprints"].values())) for r in results]
    assert len(set(prints)) == len(prints)
