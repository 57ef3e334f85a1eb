"""spec_validate/report/readers.py and the reader verdicts in every output format: the text Readers section, the
JSON schema, SARIF results that stay valid SARIF 2.1.0, the HTML and Markdown tables, a GitHub annotation and a
JUnit testcase per failing gate."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from reader_packs import CASE, NULLABLE, rule, write_readers

import spec_validate
from spec_validate.report.readers import runs

REPORT_SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())
SARIF_SCHEMA = json.loads((Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = write_readers(tmp_path_factory.mktemp("readers") / "r", [rule()])
    return spec_validate.validate(NULLABLE, readers=["anndata>=0.10,<0.13"], reader_packs=folder)


def test_runs_group_contiguous_versions(report):
    got = [(r.label, r.verdict) for r in runs(report.readers.reader("anndata"))]
    assert got == [("0.10.9", "does not open"), ("0.11.4 to 0.12.0", "opens"), ("0.13.4", "unknown")]


def test_text_has_a_readers_section(report):
    text = spec_validate.render(report, "text")
    assert "Readers (anndata-h5ad; as measured 2026-11-29):" in text
    assert "anndata: opens 0.11.4 to 0.12.0" in text
    assert "does not open 0.10.9: an element encoded as nullable-string-array" in text and CASE in text
    assert "unknown 0.13.4: not measured on anndata-h5ad" in text
    assert "GATE anndata>=0.10,<0.13: anndata 0.10.9 does not open" in text


def test_json_passes_the_report_schema(report):
    doc = json.loads(spec_validate.render(report, "json"))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(doc)
    readers = doc["reports"][0]["readers"]
    assert readers["format"] == "anndata-h5ad"
    assert [v["verdict"] for v in readers["readers"][0]["versions"]] == ["does not open", "opens", "opens", "unknown"]
    assert [(g["version"], g["verdict"]) for g in readers["gate"]] == [("0.10.9", "does not open")]


def test_sarif_result_per_reader_rule_is_valid_sarif(report):
    doc = json.loads(spec_validate.render(report, "sarif"))
    jsonschema.validate(doc, SARIF_SCHEMA)
    run = doc["runs"][0]
    (result,) = [r for r in run["results"] if r["ruleId"].startswith("readers.")]
    assert result["ruleId"] == "readers.anndata.nullable-string-array"
    assert result["level"] == "warning"  # the gate fails on the version it stops
    assert "nullable-string-array" in result["message"]["text"]
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_reader_result_is_a_note_without_a_gate(tmp_path):
    folder = write_readers(tmp_path / "r", [rule()])
    doc = json.loads(spec_validate.render(spec_validate.validate(NULLABLE, readers=True, reader_packs=folder), "sarif"))
    jsonschema.validate(doc, SARIF_SCHEMA)
    assert [r["level"] for r in doc["runs"][0]["results"] if r["ruleId"].startswith("readers.")] == ["note"]


def test_markdown_and_html_have_a_table(report):
    markdown = spec_validate.render(report, "markdown")
    assert "### Readers" in markdown and "| anndata | 0.10.9 | does not open |" in markdown
    assert "**reader gate**" in markdown
    html = spec_validate.render(report, "html")
    assert '<table class="readers">' in html and "READER GATE" in html


def test_github_and_junit_report_the_gate(report):
    github = spec_validate.render(report, "github")
    assert "::error file=" in github and "title=reader gate anndata>=0.10%2C<0.13::" in github
    suites = ET.fromstring(spec_validate.render(report, "junit"))
    (case,) = [c for c in suites.iter("testcase") if c.get("classname") == "readers"]
    assert case.find("failure") is not None and "0.10.9" in case.find("failure").text
