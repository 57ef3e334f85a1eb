"""--format junit: one testsuite per file, one testcase per clause; failed -> failure, not_applicable -> skipped."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import junitparser
import pytest
from corpus_paths import VALID_H5AD

import spec_validate
from spec_validate.cli import main

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


def test_junit_structure_parsed_with_junitparser(broken_h5ad_here, tmp_path, capsys):
    shutil.copy(VALID_H5AD, tmp_path / "valid.h5ad")
    assert main(["--format", "junit", "--output", "report.xml", broken_h5ad_here, "valid.h5ad"]) == 1
    xml = junitparser.JUnitXml.fromfile("report.xml")
    suites = list(xml)
    assert [s.name for s in suites] == ["broken.h5ad", "valid.h5ad"]
    for suite, path in zip(suites, ["broken.h5ad", "valid.h5ad"], strict=True):
        report = spec_validate.validate(path)
        cases = list(suite)
        assert [c.name for c in cases] == [r.rule.id for r in report.results]
        assert suite.tests == len(report.results)
        na = sum(r.status.value == "not_applicable" for r in report.results)
        assert suite.skipped == na
        assert sum(any(isinstance(x, junitparser.Skipped) for x in c.result) for c in cases) == na
    broken, valid = suites
    assert broken.failures == 1 and valid.failures == 0
    failed = [c for c in broken if any(isinstance(x, junitparser.Failure) for x in c.result)]
    assert [c.name for c in failed] == ["anndata.dataframe.index-attr"]
    failure = next(x for x in failed[0].result if isinstance(x, junitparser.Failure))
    assert failure.type == "MUST"
    assert "/obs: attribute '_index' is missing" in failure.text


def test_junit_is_plain_xml_for_etree(broken_h5ad_here, capsys):
    main(["--format", "junit", broken_h5ad_here])
    root = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite.get("name") == "broken.h5ad"
    assert int(root.get("tests")) == len(suite.findall("testcase"))
    failure = suite.find("testcase[@name='anndata.dataframe.index-attr']/failure")
    assert failure is not None and failure.get("message").startswith("MUST: ")
    skipped = suite.findall("testcase/skipped")
    assert skipped and all(s.get("message") for s in skipped)


@pytest.mark.parametrize("fail_on,failures", [("must", 0), ("should", 1)])
def test_junit_agrees_with_the_verdict_on_a_failure_below_fail_on(should_failing_h5ad, tmp_path, capsys, fail_on, failures):
    # A SHOULD failure at --fail-on must: the run conforms and exits 0, so JUnit shows no <failure> either; the test
    # case's output says what failed.
    code = main(["--format", "junit", "--fail-on", fail_on, "--output", str(tmp_path / "r.xml"), should_failing_h5ad])
    suite = next(iter(junitparser.JUnitXml.fromfile(str(tmp_path / "r.xml"))))
    assert (code, suite.failures) == (failures, failures)
    if not failures:
        outputs = [c.system_out or "" for c in suite]
        assert any("FAILED SHOULD, below --fail-on must" in text for text in outputs)
