"""The text report: no escape codes off a TTY or with NO_COLOR; failures grouped with level, id, clause, path."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from memory_tree import Arr, pack, tree

from spec_validate.engine.run import iter_results
from spec_validate.model import CheckStep, Level, PackInfo, Report, Rule
from spec_validate.report.options import RenderOptions
from spec_validate.report.text import render, use_colour


def _rule(rid, level, applies_to, step, basis="stated"):
    return Rule(
        id=rid,
        level=level,
        spec_level=level,
        clause=f"The thing {level.value} hold.",
        section="Things",
        spec_version="1",
        applies_to=applies_to,
        check=(CheckStep(*step),),
        pack="t",
        basis=basis,
        rationale="because" if basis == "derived" else None,
    )


RULES = [
    _rule("t.a.monotonic", Level.MUST, {"name": "a"}, ("non_decreasing", {}), basis="derived"),
    _rule("t.root.flag", Level.SHOULD, {"root": True}, ("attr_present", {"key": "flag"})),
    _rule("t.root.group", Level.MUST, {"root": True}, ("node_kind", {"kind": "group"})),
]


def report(values=(0, 2, 1)):
    t = tree({"a": Arr(np.array(values), chunks=(2,))})
    results = tuple(iter_results(t, [pack(RULES)]))
    return Report("demo.h5ad", "hdf5", (PackInfo("t", "Test", "0.0.1", ("/",)),), "0.1.0", results)


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    "env,stream,expected",
    [
        pytest.param({}, io.StringIO(), False, id="use_colour-fails-not-a-tty"),
        pytest.param({}, FakeTTY(), True, id="use_colour-passes-tty"),
        pytest.param({"NO_COLOR": "1"}, FakeTTY(), False, id="use_colour-fails-no-color-on-tty"),
        pytest.param({"NO_COLOR": ""}, FakeTTY(), False, id="use_colour-fails-empty-no-color"),
    ],
)
def test_use_colour(monkeypatch, env, stream, expected):
    monkeypatch.delenv("NO_COLOR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert use_colour(stream) is expected


def test_render_passes_no_escape_codes_without_colour():
    assert "\033" not in render([report()], RenderOptions(fail_on=Level.MUST, colour=False))


def test_render_passes_escape_codes_with_colour():
    assert "\033[31m" in render([report()], RenderOptions(fail_on=Level.MUST, colour=True))


def test_render_fails_grouped_with_level_id_clause_path():
    text = render([report()], RenderOptions(fail_on=Level.MUST))
    lines = text.splitlines()
    assert lines[0] == "demo.h5ad (hdf5; pack t 0.0.1)"
    i = lines.index("  FAILED MUST (derived) t.a.monotonic")
    assert lines[i + 1] == "    Things: \u201cThe thing MUST hold.\u201d"
    assert lines[i + 2].startswith("    /a[2]: decreases at index 2: 2 -> 1")
    # MUST before SHOULD
    assert i < lines.index("  FAILED SHOULD t.root.flag")
    assert "does not conform at --fail-on must" in text
    assert "t.root.group" not in text  # passed clauses are shown only with verbose


def test_render_passes_verbose_lists_passed():
    assert "passed         MUST   t.root.group" in render([report()], RenderOptions(fail_on=Level.MUST, verbose=True))


def test_render_passes_conforms_when_only_should_fails_at_must():
    text = render([report(values=(0, 1, 2))], RenderOptions(fail_on=Level.MUST))
    assert "conforms at --fail-on must" in text
    assert "does not conform at --fail-on should" in render([report(values=(0, 1, 2))], RenderOptions(fail_on=Level.SHOULD))


def test_render_names_nodes_a_passing_clause_could_not_check():
    from spec_validate.model import ClauseResult, Status

    base = report()
    partly = ClauseResult(
        RULES[2],
        Status.PASSED,
        (),
        2,
        None,
        0,
        tuple((f"/x{i}", f"/x{i}: not decoded (codec off the allow-list)") for i in range(5)),
    )
    text = render([Report(base.source, base.format, base.packs, base.tool_version, (partly,))], RenderOptions(fail_on=Level.MUST))
    assert "PASSED, NOT ALL CHECKED MUST t.root.group" in text
    # One reason for every node: said once, with the nodes it holds for.
    assert "    not checked: not decoded (codec off the allow-list): /x0, /x1, /x2, /x3, /x4" in text.splitlines()
    assert "conforms at --fail-on must (1 clause(s) not fully checked: " in text


def test_render_names_each_node_with_its_own_reason():
    from spec_validate.model import ClauseResult, Status

    base = report()
    reasons = tuple((f"/x{i}", f"/x{i}: not decoded (codec {i} off the allow-list)") for i in range(5))
    partly = ClauseResult(RULES[2], Status.PASSED, (), 2, None, 0, reasons)
    text = render([Report(base.source, base.format, base.packs, base.tool_version, (partly,))], RenderOptions(fail_on=Level.MUST))
    assert "    not checked: /x0: not decoded (codec 0 off the allow-list)" in text  # the path is not said twice
    assert "... and 2 more not checked" in text


def test_render_marks_baseline_findings_in_the_block_and_the_verdict_agrees():
    # Before, each block said FAILED / "does not conform" while the summary said "conforms" and the run exited 0.
    from spec_validate.report import baseline as bl

    r = report()
    known = bl.Baseline(frozenset(item.fingerprint for item in bl.located(r)))
    text = render([r], RenderOptions(fail_on=Level.MUST, baseline=known))
    assert "  FAILED MUST (derived) t.a.monotonic [baseline]" in text.splitlines()
    assert "does not conform" not in text
    assert "  conforms at --fail-on must (0 new failure(s), 2 known in the baseline). MUST:" in text


def test_render_marks_only_the_known_findings_of_a_clause():
    from spec_validate.report import baseline as bl

    r = report()
    flag = next(item for item in bl.located(r) if item.rule_id == "t.root.flag")
    text = render([r], RenderOptions(fail_on=Level.SHOULD, baseline=bl.Baseline(frozenset({flag.fingerprint}))))
    assert "  FAILED MUST (derived) t.a.monotonic" in text.splitlines()  # new: not marked
    assert "  FAILED SHOULD t.root.flag [baseline]" in text.splitlines()
    assert "does not conform at --fail-on should (1 new failure(s), 1 known in the baseline)" in text


def test_render_says_nothing_was_checked():
    empty = Report("demo.h5ad", "hdf5", (PackInfo("t", "Test", "0.0.1", ("/",)),), "0.1.0", ())
    text = render([empty], RenderOptions(fail_on=Level.MUST))
    assert "  nothing checked: no selected rule belongs to a pack that applies here (t 0.0.1)." in text
    assert "conforms" not in text


def test_render_names_nodes_a_not_checked_clause_could_not_check():
    # `--deep` on chunks it cannot decode: the clause is checked on no node; it says so, and so does the verdict,
    # which never reads a plain "conforms", and the summary counts it apart from passed and n/a.
    from spec_validate.model import ClauseResult, Status

    base = report(values=(0, 1, 2))
    undecoded = ClauseResult(RULES[0], Status.NOT_CHECKED, (), 0, "not decoded", 0, (("/a", "/a: not decoded: codec 'x'"),), 1)
    text = render(
        [Report(base.source, base.format, base.packs, base.tool_version, (*base.results, undecoded))],
        RenderOptions(fail_on=Level.MUST),
    )
    assert "  NOT CHECKED MUST t.a.monotonic" in text.splitlines()
    assert "    not checked: /a: not decoded: codec 'x'" in text.splitlines()
    assert "conforms at --fail-on must (1 clause(s) not checked: each listed with why)." in text
    assert "MUST: 0 failed, 2 passed, 0 n/a, 1 not checked; SHOULD: 1 failed, 0 passed, 0 n/a" in text


def test_render_fails_a_not_checked_clause_with_fail_on_unchecked():
    from spec_validate.model import ClauseResult, Status

    base = report(values=(0, 1, 2))
    undecoded = ClauseResult(RULES[0], Status.NOT_CHECKED, (), 0, "needs --deep", 0, (("/a", "needs --deep"),), 1)
    r = Report(base.source, base.format, base.packs, base.tool_version, (*base.results, undecoded))
    text = render([r], RenderOptions(fail_on=Level.MUST, fail_on_unchecked=True))
    assert "  not fully checked at --fail-on must (--fail-on-unchecked: 1 clause(s) at MUST or stricter" in text
    # Below --fail-on it fails nothing, even with the flag.
    should = dataclasses.replace(undecoded, rule=RULES[0]._replace(level=Level.SHOULD))
    below = Report(r.source, r.format, r.packs, r.tool_version, (*base.results, should))
    assert "  conforms at --fail-on must (1 clause(s) not checked" in render([below], RenderOptions(fail_on_unchecked=True))


def test_render_an_input_that_cannot_be_opened_is_one_line():
    error = Report("notes.txt", "", (), "0", (), error="notes.txt: not an HDF5 file or a Zarr store")
    text = render([error, report()], RenderOptions(fail_on=Level.MUST))
    assert text.splitlines()[0] == "notes.txt: error: not an HDF5 file or a Zarr store"
    row = next(line for line in text.splitlines() if line.startswith("notes.txt "))  # the summary table's row
    assert row.split() == ["notes.txt", "-", "-", "-", "-", "error"]
    assert text.rstrip().endswith("1 of 2 do not conform at --fail-on must; 1 could not be opened.")


def test_render_a_skipped_file_is_one_line():
    text = render([report(), Report("data/notes.txt", "", (), "0", (), skipped="not a store")], RenderOptions(fail_on=Level.MUST))
    assert text.count("data/notes.txt") == 1
    assert "data/notes.txt: skipped: not a store" in text.splitlines()


def test_render_context_is_shown_once_and_not_counted():
    from spec_validate.model import ClauseResult, Finding, Status

    r = report(values=(0, 1, 2))
    above = ClauseResult(RULES[2], Status.FAILED, (Finding("no .zgroup is stored", "/"),), 1, None, 1)
    text = render(
        [Report("x.zarr", "zarr-v2", r.packs, "0", r.results, node="/a", context=(above,))], RenderOptions(fail_on=Level.MUST)
    )
    lines = text.splitlines()
    assert lines[0] == "x.zarr/a (zarr-v2; pack t 0.0.1)"
    i = lines.index("  Context: clauses failing on the ancestors of /a (not counted for /a):")
    assert lines[i + 1] == "    FAILED MUST t.root.group" and text.count("t.root.group") == 1
    assert "  conforms at --fail-on must." in text


def test_render_passes_failed_builtin_rule_links_its_page():
    from corpus_paths import CASES

    import spec_validate

    failed = spec_validate.validate(CASES / "h5ad" / "anndata-var-missing.h5ad")
    text = render([failed], RenderOptions(fail_on=Level.MUST, docs_url="https://docs.example.org/sv/"))
    assert "    see https://docs.example.org/sv/rules/anndata.anndata.obs-var-present.html" in text.splitlines()
    assert "see " not in render([report()], RenderOptions(fail_on=Level.MUST))  # rules of a user's own pack have no page


def test_render_passes_without_docs_url_points_at_explain_not_a_site():
    from corpus_paths import CASES

    import spec_validate

    failed = spec_validate.validate(CASES / "h5ad" / "anndata-var-missing.h5ad")
    text = render([failed], RenderOptions(fail_on=Level.MUST))
    assert "    see spec-validate --explain anndata.anndata.obs-var-present" in text.splitlines()
    assert "://" not in text
