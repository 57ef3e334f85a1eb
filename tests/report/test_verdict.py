"""One verdict per input, shared by every format and the exit code: a summary never contradicts the exit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from memory_tree import Arr, pack, tree

from spec_validate.engine.run import iter_results
from spec_validate.model import CheckStep, ClauseResult, Level, PackInfo, Report, Rule, Status
from spec_validate.report import baseline as bl
from spec_validate.report.verdict import (
    CONFORMS,
    DOES_NOT_CONFORM,
    ERROR,
    NOT_FULLY_CHECKED,
    NOTHING_CHECKED,
    SKIPPED,
    exit_code,
    sentence,
    verdict,
)

MUST = Rule(
    id="t.a.monotonic",
    level=Level.MUST,
    spec_level=Level.MUST,
    clause="c",
    section="S",
    spec_version="1",
    applies_to={"name": "a"},
    check=(CheckStep("non_decreasing", {}),),
    pack="t",
)
PACK = (PackInfo("t", "Test", "1", ("/",)),)


def report(values=(0, 2, 1), rules=(MUST,)) -> Report:
    results = tuple(iter_results(tree({"a": Arr(np.array(values), chunks=(2,))}), [pack(list(rules))]))
    return Report("demo.h5ad", "hdf5", PACK, "0", results)


def known_all(r: Report) -> bl.Baseline:
    return bl.Baseline(frozenset(item.fingerprint for item in bl.located(r)))


@pytest.mark.parametrize(
    "make,fail_on,outcome,code",
    [
        pytest.param(lambda: report((0, 1, 2)), Level.MUST, CONFORMS, 0, id="conforms"),
        pytest.param(lambda: report(), Level.MUST, DOES_NOT_CONFORM, 1, id="fails"),
        pytest.param(lambda: report(rules=()), Level.MUST, NOTHING_CHECKED, 0, id="no-rule-selected"),
        pytest.param(lambda: Report("x.txt", "", (), "0", (), error="x.txt: not an HDF5 file"), Level.MUST, ERROR, 2, id="error"),
        pytest.param(lambda: Report("x.txt", "", (), "0", (), skipped="not a store"), Level.MUST, SKIPPED, 0, id="skipped"),
    ],
)
def test_verdict_and_exit_code_agree(make, fail_on, outcome, code):
    r = make()
    assert verdict(r, fail_on).outcome == outcome
    assert exit_code([r], fail_on) == code


def test_verdict_passes_baseline_holds_every_failure():
    # With --baseline, a known failure neither fails the input nor the run, and the verdict says it is known.
    r = report()
    v = verdict(r, Level.MUST, known_all(r))
    assert (v.outcome, v.new, v.known) == (CONFORMS, 0, 1)
    assert "1 known failure(s) in the baseline" in v.describe()
    assert exit_code([r], Level.MUST, known_all(r)) == 0


def test_verdict_nothing_checked_when_every_clause_is_not_applicable():
    r = report(rules=(MUST._replace(applies_to={"name": "nothing-named-so"}),))
    v = verdict(r, Level.MUST)
    assert v.outcome == NOTHING_CHECKED and "none of the 1 selected clause(s) applies" in v.reason


def test_verdict_counts_clauses_that_could_not_check_their_nodes():
    r = report((0, 1, 2))
    undecoded = ClauseResult(MUST, Status.NOT_CHECKED, reason="/a: not decoded", unchecked=(("/a", "/a: not decoded"),))
    v = verdict(Report("d.zarr", "zarr-v2", PACK, "0", (*r.results, undecoded)), Level.MUST)
    assert (v.outcome, v.unchecked, v.not_checked) == (CONFORMS, 1, 1)
    assert v.describe() == "conforms (1 clause(s) not checked)"
    partly = ClauseResult(MUST, Status.PASSED, nodes_checked=1, unchecked=(("/b", "/b: not decoded"),), unchecked_count=1)
    v = verdict(Report("d.zarr", "zarr-v2", PACK, "0", (*r.results, undecoded, partly)), Level.MUST)
    assert v.describe() == "conforms (1 clause(s) not checked; 1 clause(s) not fully checked)"


SHOULD = MUST._replace(id="t.a.should", level=Level.SHOULD, spec_level=Level.SHOULD)
NOT_CHECKED = ClauseResult(
    MUST, Status.NOT_CHECKED, reason="needs --deep", unchecked=(("/a", "needs --deep"),), unchecked_count=1
)
PARTLY = ClauseResult(MUST, Status.PASSED, nodes_checked=1, unchecked=(("/b", "/b: not decoded"),), unchecked_count=1)


def with_results(*results: ClauseResult, values=(0, 1, 2)) -> Report:
    base = report(values)
    return Report("d.zarr", "zarr-v2", PACK, "0", (*base.results, *results))


@pytest.mark.parametrize(
    "make,fail_on,strict,outcome,code",
    [
        pytest.param(lambda: with_results(NOT_CHECKED), Level.MUST, False, CONFORMS, 0, id="not-checked-fails-nothing"),
        pytest.param(lambda: with_results(NOT_CHECKED), Level.MUST, True, NOT_FULLY_CHECKED, 1, id="fail-on-unchecked"),
        pytest.param(lambda: with_results(PARTLY), Level.MUST, True, NOT_FULLY_CHECKED, 1, id="partly-checked-fails"),
        pytest.param(
            lambda: with_results(dataclasses.replace(NOT_CHECKED, rule=SHOULD)),
            Level.MUST,
            True,
            CONFORMS,
            0,
            id="below-fail-on-fails-nothing",
        ),
        pytest.param(
            lambda: with_results(dataclasses.replace(NOT_CHECKED, rule=SHOULD)),
            Level.SHOULD,
            True,
            NOT_FULLY_CHECKED,
            1,
            id="at-fail-on-should",
        ),
        pytest.param(
            lambda: with_results(dataclasses.replace(NOT_CHECKED, rule=MUST._replace(notice="security"))),
            Level.MUST,
            True,
            CONFORMS,
            0,
            id="a-notice-rule-fails-nothing",
        ),
        pytest.param(
            lambda: with_results(NOT_CHECKED, values=(0, 2, 1)), Level.MUST, True, DOES_NOT_CONFORM, 1, id="failure-first"
        ),
        pytest.param(
            lambda: Report("d.zarr", "zarr-v2", PACK, "0", (NOT_CHECKED,)), Level.MUST, False, NOTHING_CHECKED, 0, id="nothing"
        ),
        pytest.param(
            lambda: Report("d.zarr", "zarr-v2", PACK, "0", (NOT_CHECKED,)),
            Level.MUST,
            True,
            NOT_FULLY_CHECKED,
            1,
            id="nothing-checked-fails-with-the-flag",
        ),
    ],
)
def test_verdict_and_exit_code_of_clauses_not_checked(make, fail_on, strict, outcome, code):
    r = make()
    v = verdict(r, fail_on, fail_on_unchecked=strict)
    assert v.outcome == outcome
    assert exit_code([r], fail_on, fail_on_unchecked=strict) == code
    assert exit_code([r], fail_on, fail_on_unchecked=strict, exit_zero=True) == 0
    assert r.fails_at(fail_on, unchecked=strict) is (code == 1)


def test_sentence_never_reads_a_plain_conforms_when_something_was_not_checked():
    r = with_results(NOT_CHECKED)
    said = sentence(r, verdict(r, Level.MUST), Level.MUST)
    assert said.startswith("conforms at --fail-on must (1 clause(s) not checked: ")
    assert said.endswith("MUST: 0 failed, 1 passed, 0 n/a, 1 not checked")
    strict = sentence(r, verdict(r, Level.MUST, fail_on_unchecked=True), Level.MUST)
    assert strict.startswith("not fully checked at --fail-on must (--fail-on-unchecked: 1 clause(s) at MUST or stricter")


def test_exit_code_is_the_worst_over_the_inputs():
    bad, good = report(), report((0, 1, 2))
    error = Report("x", "", (), "0", (), error="x: cannot be opened")
    assert exit_code([good, bad], Level.MUST) == 1
    assert exit_code([good, bad, error], Level.MUST) == 2
    assert exit_code([good, bad], Level.MUST, exit_zero=True) == 0
    assert exit_code([good, error], Level.MUST, exit_zero=True) == 2  # an input that was not checked at all
