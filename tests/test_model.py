"""The vocabulary: reports answer for their verdict at a level named as a Level or as the CLI spells it."""

from __future__ import annotations

import pytest
from corpus_paths import CASES

from spec_validate import validate
from spec_validate.model import Level, Status

FAILING = CASES / "h5ad" / "csr-indptr-decreasing.h5ad"  # one MUST failure


@pytest.mark.parametrize("level", [Level.MUST, "MUST", "must", "Should", Level.MAY])
def test_fails_at_takes_a_level_or_its_name(level):
    assert validate(FAILING).fails_at(level)


def test_fails_at_an_unknown_level_name_is_a_value_error():
    with pytest.raises(ValueError):
        validate(FAILING).fails_at("sometimes")


ZARR_VALID = CASES.parent / "zarr" / "zarr-v2" / "valid-every-element.zarr"


def test_report_counts_clauses_not_checked_apart():
    # Without deep, the chunk decoding clause concerns every array and checks none: not checked, counted apart.
    report = validate(ZARR_VALID)
    assert [r.rule.id for r in report.not_checked] == ["zarr.chunks.decoded-size"]
    assert report.summary()["MUST"]["not_checked"] == 1
    assert [r.rule.id for r in report.unchecked_at("must")] == ["zarr.chunks.decoded-size"]
    assert not report.fails_at(Level.MUST) and report.fails_at(Level.MUST, unchecked=True)
    deep = validate(ZARR_VALID, deep=True)
    assert not deep.not_checked and not deep.fails_at(Level.MUST, unchecked=True)
    assert {r.rule.id: r.status for r in deep.results}["zarr.chunks.decoded-size"] is Status.PASSED


def test_sharing_rules_keeps_one_copy_of_each_rule_across_reports_from_other_processes():
    import pickle

    report = validate(str(CASES / "h5ad" / "valid-zero-obs.h5ad"))
    # As a worker process's report arrives: unpickled, with rules equal to but not the same as the parent's.
    first, second = pickle.loads(pickle.dumps(report)), pickle.loads(pickle.dumps(report))
    assert first.results[0].rule is not second.results[0].rule
    rules: dict = {}
    first, second = first.sharing_rules(rules), second.sharing_rules(rules)
    assert all(a.rule is b.rule for a, b in zip(first.results, second.results, strict=True))
    assert all(a.rule is b.rule for a, b in zip(first.context, second.context, strict=True))
    assert second.results == report.results  # nothing but the identity of the rules changes
    assert len(rules) == len({r.rule.key for r in (*report.results, *report.context)})
