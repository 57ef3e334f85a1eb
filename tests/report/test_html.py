"""--format html: one self-contained file (no network) that renders in a real browser, with working filters."""

from __future__ import annotations

import os
import re
import shutil

import numpy as np
import pytest
from memory_tree import Arr, pack, tree

from spec_validate.engine.run import iter_results
from spec_validate.model import CheckStep, ClauseResult, Level, PackInfo, Report, Rule, Status
from spec_validate.report.html import render
from spec_validate.report.links import rule_page
from spec_validate.report.options import RenderOptions

# The system's Chromium (apt-get install chromium), driven by Playwright through `executable_path`: Playwright's own
# browser download is not reachable from every machine, and a report is for people, so it is checked as one renders.
CHROMIUM = os.environ.get("SPEC_VALIDATE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _rule(rid, level, applies_to, step, builtin=False):
    return Rule(
        id=rid,
        level=level,
        spec_level=level,
        clause=f"The <thing> {level.value} hold.",
        section="Things",
        spec_version="1",
        applies_to=applies_to,
        check=(CheckStep(*step),),
        pack="t",
        builtin=builtin,
    )


RULES = [
    _rule("t.a.monotonic", Level.MUST, {"name": "a"}, ("non_decreasing", {}), builtin=True),
    _rule("t.root.flag", Level.SHOULD, {"root": True}, ("attr_present", {"key": "flag"})),
    _rule("t.root.group", Level.MUST, {"root": True}, ("node_kind", {"kind": "group"})),
]


def report(source="demo.h5ad", values=(0, 2, 1)) -> Report:
    results = tuple(iter_results(tree({"a": Arr(np.array(values), chunks=(2,))}), [pack(RULES)]))
    return Report(source, "hdf5", (PackInfo("t", "Test", "0.0.1", ("/",)),), "0.1.0", results)


def page(*reports: Report, fail_on: Level = Level.MUST) -> str:
    return render(list(reports), RenderOptions(fail_on=fail_on, tool_version="0.1.0"))


def test_html_passes_one_document_that_loads_nothing():
    text = page(report())
    assert text.startswith("<!doctype html>") and text.count("<html") == 1
    assert "default-src 'none'" in text  # the browser refuses any request the page would make
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']https?:""", text)


def test_html_passes_failures_first_with_clause_path_values_and_rule_link():
    text = page(report())
    failed, passed = text.index('data-status="failed"'), text.index('data-status="passed"')
    assert failed < passed
    assert "The &lt;thing&gt; MUST hold." in text  # escaped
    assert "<code>/a[2]</code>: decreases at index 2: 2 -&gt; 1" in text
    assert "previous = 2; value = 1" in text  # the offending values
    # A built-in rule: the command that prints its page (no site named), or its page on the site named.
    assert "<code>spec-validate --explain t.a.monotonic</code>" in text and "<a href" not in text.split("<main>")[1]
    linked = render([report()], RenderOptions(fail_on=Level.MUST, docs_url="https://docs.example.org/sv/"))
    assert f'<a href="{rule_page("t.a.monotonic", "https://docs.example.org/sv/")}">t.a.monotonic</a>' in linked
    assert "> t.root.group</h3>" in text  # a rule of the user's own pack has no page to link


def test_html_passes_verdict_line_per_input_and_error_and_skipped_entries():
    text = page(
        report(),
        report("ok.h5ad", (0, 1, 2)),
        Report("notes.txt", "", (), "0", (), error="notes.txt: not HDF5"),
        Report("data/x.txt", "", (), "0", (), skipped="not a store"),
    )
    assert '<p class="verdict fails">does not conform at --fail-on must.' in text
    assert '<p class="verdict fails">error: notes.txt: not HDF5</p>' in text
    assert "<li><code>data/x.txt</code>: not a store</li>" in text
    assert text.count('<section class="input" id="input-') == 3


def _browser():
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    if CHROMIUM is None:
        pytest.skip(
            "no Chromium on this machine: install the system package (apt-get install chromium), or set "
            "SPEC_VALIDATE_CHROMIUM to a Chromium executable"
        )
    return playwright.sync_playwright()


def test_html_renders_in_chromium_and_the_level_filter_hides_should_findings(tmp_path):
    path = tmp_path / "report.html"
    path.write_text(page(report(), report("ok.h5ad", (0, 1, 2))), encoding="utf-8")
    with _browser() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            tab = browser.new_page()
            problems: list[str] = []
            requests: list[str] = []
            tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.on("request", lambda r: requests.append(r.url))
            tab.goto(path.as_uri())
            should = tab.locator('article.clause[data-level="SHOULD"][data-status="failed"]')
            must = tab.locator('article.clause[data-level="MUST"][data-status="failed"]')
            assert should.count() == 2 and should.first.is_visible() and must.first.is_visible()
            assert tab.locator('article.clause[data-status="passed"]').first.is_hidden()  # one click away
            assert tab.inner_text("#shown") == "3 clause(s) shown"

            tab.uncheck('input[name="level"][value="SHOULD"]')
            assert should.first.is_hidden() and should.last.is_hidden() and must.first.is_visible()
            assert tab.inner_text("#shown") == "1 clause(s) shown"
            assert tab.locator("#input-1 .none-shown").is_visible()  # ok.h5ad: its only failure was a SHOULD

            tab.check('input[name="status"][value="passed"]')
            assert tab.locator('article.clause[data-status="passed"]').first.is_visible()
            assert problems == [] and requests == [path.as_uri()]
        finally:
            browser.close()


def test_html_from_the_command_line_opens_without_console_errors(tmp_path, should_failing_h5ad, broken_h5ad):
    from spec_validate.cli import main

    path = tmp_path / "report.html"
    assert main(["--format", "html", "--output", str(path), should_failing_h5ad, broken_h5ad]) == 1
    with _browser() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            tab = browser.new_page()
            problems: list[str] = []
            tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.goto(path.as_uri())
            assert tab.locator(".verdict.fails").count() >= 1
            should = tab.locator('article.clause[data-level="SHOULD"][data-status="failed"]')
            assert should.count() == 1 and should.first.is_visible()
            tab.uncheck('input[name="level"][value="SHOULD"]')
            assert should.first.is_hidden()
            assert tab.locator('article.clause[data-level="MUST"][data-status="failed"]').first.is_visible()
            assert problems == []
        finally:
            browser.close()


def test_html_shows_clauses_not_checked_as_statuses_of_their_own():
    base = report(values=(0, 1, 2))
    none = ClauseResult(
        RULES[0], Status.NOT_CHECKED, reason="needs --deep", unchecked=(("/a", "needs --deep"),), unchecked_count=1
    )
    partly = ClauseResult(RULES[2], Status.PASSED, nodes_checked=1, unchecked=(("/b", "/b: not decoded"),), unchecked_count=1)
    text = page(Report(base.source, base.format, base.packs, base.tool_version, (*base.results, none, partly)))
    assert 'data-status="not-checked"' in text and 'data-status="partly-checked"' in text
    assert "<li>not checked: <code>/a</code>: needs --deep</li>" in text
    assert 'value="not-checked" checked> NOT CHECKED (1)' in text  # shown at first, counted
    assert "conforms at --fail-on must (1 clause(s) not checked, 1 clause(s) not fully checked: " in text
    strict = render(
        [Report(base.source, base.format, base.packs, "0", (*base.results, none))], RenderOptions(fail_on_unchecked=True)
    )
    assert '<p class="verdict fails">not fully checked at --fail-on must' in strict
