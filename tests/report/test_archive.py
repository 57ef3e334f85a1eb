"""The archive summary: per pack and rule, how many inputs fail it and the first of them, the same in text, JSON,
jsonl and HTML, and an exit code that agrees with the reports'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from corpus_paths import CASES

import spec_validate
from spec_validate.model import Level, Report
from spec_validate.report import archive
from spec_validate.report.archive import Digest, Failing
from spec_validate.report.json import archive_summary, report_to_json
from spec_validate.report.options import RenderOptions
from spec_validate.report.verdict import exit_code

SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())
VALID = CASES / "h5ad" / "valid-every-element.h5ad"
MUST_FAILS = CASES / "h5ad" / "csr-indptr-decreasing.h5ad"  # anndata.csr_matrix.indptr-monotonic
SHOULD_FAILS = CASES / "h5ad" / "scalar-outside-uns.h5ad"  # anndata.scalar.only-in-uns, a SHOULD

pytestmark = pytest.mark.skipif(not VALID.exists(), reason="conformance corpus not generated")

MONOTONIC = Failing("anndata", "anndata.csr_matrix.indptr-monotonic", "MUST")
SCALAR = Failing("anndata", "anndata.scalar.only-in-uns", "SHOULD")


def check_archive(summary):
    jsonschema.Draft202012Validator({"$ref": "#/$defs/archive", "$defs": SCHEMA["$defs"]}).validate(summary)


@pytest.fixture
def reports(tmp_path):
    """Seven inputs: two conform, four fail a MUST rule, one a SHOULD rule only."""
    names = {"a": VALID, "b": MUST_FAILS, "c": SHOULD_FAILS, "d": MUST_FAILS, "e": VALID, "f": MUST_FAILS, "g": MUST_FAILS}
    paths = []
    for name, case in names.items():
        shutil.copy(case, tmp_path / f"{name}.h5ad")
        paths.append(str(tmp_path / f"{name}.h5ad"))
    return [spec_validate.validate(p) for p in paths]


def test_summarize_counts_inputs_per_rule_with_the_first_names_in_input_order():
    digests = [Digest(f"in{i}", "does not conform", (MONOTONIC,)) for i in range(7)]
    digests.insert(2, Digest("ok", "conforms", (SCALAR,)))
    digests.append(archive.skipped("notes.h5ad"))
    summary = archive.summarize(digests, Level.MUST)
    check_archive(summary)
    assert summary["inputs"] == 8 and summary["skipped"] == 1
    assert summary["outcomes"] == {
        "conforms": 1,
        "does not conform": 7,
        "not fully checked": 0,
        "nothing checked": 0,
        "error": 0,
    }
    monotonic, scalar = summary["rules"]
    assert monotonic == {
        "pack": "anndata",
        "rule": MONOTONIC.rule,
        "level": "MUST",
        "at_fail_on": True,
        "inputs": 7,
        "first": ["in0", "in1", "in2", "in3", "in4"],  # the first FIRST_NAMES, in input order
    }
    assert (scalar["inputs"], scalar["at_fail_on"], scalar["first"]) == (1, False, ["ok"])


def test_summarize_puts_rules_below_fail_on_after_those_at_it():
    digests = [Digest("a", "conforms", (SCALAR,)), Digest("b", "conforms", (SCALAR,)), Digest("c", "x", (MONOTONIC,))]
    assert [r["rule"] for r in archive.summarize(digests, Level.MUST)["rules"]] == [MONOTONIC.rule, SCALAR.rule]
    at_should = archive.summarize(digests, Level.SHOULD)["rules"]
    assert [(r["rule"], r["at_fail_on"]) for r in at_should] == [(SCALAR.rule, True), (MONOTONIC.rule, True)]


def test_archive_digest_of_an_input_that_cannot_be_opened_is_an_input_error():
    report = Report("junk.h5ad", "", (), "0", (), error="junk.h5ad: not an HDF5 file or a Zarr store")
    summary = archive_summary([report], RenderOptions())
    (row,) = summary["rules"]
    assert (row["rule"], row["pack"], row["level"], row["inputs"]) == ("input-error", None, "MUST", 1)
    assert summary["outcomes"]["error"] == 1


def test_archive_exit_code_agrees_with_the_reports(reports):
    for fail_on in Level:
        options = RenderOptions(fail_on=fail_on)
        digests = [archive.digest(report_to_json(r, fail_on)) for r in reports]
        for zero in (False, True):
            assert archive.exit_code(digests, zero) == exit_code(reports, fail_on, exit_zero=zero), (fail_on, zero)
        check_archive(archive_summary(reports, options))


def test_archive_in_json_text_and_html_say_the_same(reports):
    doc = json.loads(spec_validate.render(reports, "json"))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    summary = doc["archive"]
    assert summary == archive_summary(reports, RenderOptions())
    assert summary["outcomes"]["conforms"] == 3 and summary["outcomes"]["does not conform"] == 4
    monotonic, scalar = summary["rules"]
    assert (monotonic["rule"], monotonic["inputs"], monotonic["at_fail_on"]) == (MONOTONIC.rule, 4, True)
    assert [Path(n).name for n in monotonic["first"]] == ["b.h5ad", "d.h5ad", "f.h5ad", "g.h5ad"]
    assert (scalar["rule"], scalar["inputs"], scalar["at_fail_on"]) == (SCALAR.rule, 1, False)

    text = spec_validate.render(reports, "text").splitlines()
    at = text.index("Rules failing at or above --fail-on must (inputs that fail each):")
    assert text[at + 1].split()[:4] == ["MUST", "4", "inputs", MONOTONIC.rule]
    assert text[at + 1].endswith("d.h5ad, " + monotonic["first"][2] + " and 1 more")  # three named, the rest counted
    assert text[at + 2] == "Rules failing below --fail-on must (they fail no input; inputs that fail each):"
    assert text[at + 3].split()[:4] == ["SHOULD", "1", "input", SCALAR.rule]
    assert text[-1] == "4 of 7 do not conform at --fail-on must."  # the verdicts still end the report

    page = spec_validate.render(reports, "html")
    table = page[page.index("<h2>Failing inputs per rule</h2>") :]
    table = table[: table.index("</section>")]
    assert table.count("<tr data-at-fail-on") == 2
    row = table[table.index('<tr data-at-fail-on="true">') :]
    assert row.startswith(
        '<tr data-at-fail-on="true"><td><span class="level l-MUST">MUST</span></td><td>at or above</td>'
        f"<td><code>{MONOTONIC.rule}</code></td><td>anndata</td><td>4</td>"
    )
    assert "below (fails nothing)" in table


def test_archive_text_is_bounded_in_rules_and_names():
    rules = [Failing("p", f"p.rule-{i:02}", "MUST") for i in range(archive.TEXT_RULES + 5)]
    digests = [Digest(f"input-{k}", "does not conform", tuple(rules)) for k in range(40)]
    text = archive.as_text(archive.summarize(digests, Level.MUST)).splitlines()
    assert len(text) == 1 + archive.TEXT_RULES + 1
    assert text[1].endswith("input-0, input-1, input-2 and 37 more")
    assert text[-1] == "... and 5 more rule(s) failing (--format json lists them all)"


def test_archive_text_without_failures_is_one_line():
    assert archive.as_text(archive.summarize([Digest("a", "conforms")], Level.MUST)) == "No rule fails on any input.\n"


def test_archive_names_the_pack_of_a_rule_whose_id_does_not_start_with_it():
    summary = archive.summarize([Digest("a", "does not conform", (Failing("mine", "anndata.x", "MUST"),))], Level.MUST)
    assert "anndata.x [mine]" in archive.as_text(summary)
