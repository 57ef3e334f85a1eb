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


def _not_checked_report():
    import numpy as np
    from memory_tree import Arr, pack, tree

    from spec_validate.engine.run import iter_results
    from spec_validate.model import CheckStep, ClauseResult, Level, PackInfo, Report, Rule, Status

    rule = Rule("t.a.decoded", Level.MUST, Level.MUST, "c", "S", "1", {"name": "a"}, (CheckStep("non_decreasing", {}),), "t")
    results = tuple(iter_results(tree({"a": Arr(np.array([0, 1, 2]), chunks=(2,))}), [pack([rule._replace(id="t.a.ok")])]))
    none = ClauseResult(rule, Status.NOT_CHECKED, reason="needs --deep", unchecked=(("/a", "needs --deep"),), unchecked_count=3)
    partly = ClauseResult(rule._replace(id="t.a.partly"), Status.PASSED, nodes_checked=1, unchecked=(("/b", "/b: not decoded"),))
    return Report("d.zarr", "zarr-v2", (PackInfo("t", "T", "1", ("/",)),), "0", (*results, none, partly))


def test_junit_skips_a_clause_not_checked_and_fails_it_with_fail_on_unchecked():
    from spec_validate.report.junit import render
    from spec_validate.report.options import RenderOptions

    root = ET.fromstring(render([_not_checked_report()], RenderOptions()).split("\n", 1)[1])
    cases = {c.get("name"): c for c in root.iter("testcase")}
    skipped = cases["t.a.decoded"].find("skipped")
    assert skipped.get("message") == "not checked: needs --deep"
    assert skipped.text == "not checked: /a: needs --deep\n... and 2 more not checked"
    assert cases["t.a.partly"].find("system-out").text == "PASSED, NOT ALL CHECKED\nnot checked: /b: not decoded"
    assert (root.get("failures"), root.get("skipped")) == ("0", "1")
    root = ET.fromstring(render([_not_checked_report()], RenderOptions(fail_on_unchecked=True)).split("\n", 1)[1])
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["t.a.decoded"].find("failure").get("type") == "not checked"
    assert cases["t.a.partly"].find("failure").get("message") == "MUST: not checked: /b: not decoded"
    assert (root.get("failures"), root.get("skipped")) == ("2", "0")
