"""--statistics: failing findings per rule over every input, most first (ruff's --statistics)."""

from __future__ import annotations

import json

import numpy as np
from memory_tree import Arr, pack, tree

from spec_validate.engine.run import iter_results
from spec_validate.model import CheckStep, ClauseResult, Level, PackInfo, Report, Rule, Status
from spec_validate.report import baseline as bl
from spec_validate.report.statistics import as_json, counts, table

RULES = [
    Rule(
        id="t.x.monotonic",
        level=Level.MUST,
        spec_level=Level.MUST,
        clause="c",
        section="S",
        spec_version="1",
        applies_to={"kind": "array"},
        check=(CheckStep("non_decreasing", {}),),
        pack="t",
    ),
    Rule(
        id="t.root.flag",
        level=Level.SHOULD,
        spec_level=Level.SHOULD,
        clause="c",
        section="S",
        spec_version="1",
        applies_to={"root": True},
        check=(CheckStep("attr_present", {"key": "flag"}),),
        pack="t",
    ),
]


def report(name: str, arrays: int) -> Report:
    t = tree({f"a{i}": Arr(np.array([0, 2, 1]), chunks=(2,)) for i in range(arrays)})
    return Report(name, "hdf5", (PackInfo("t", "T", "1", ("/",)),), "0", tuple(iter_results(t, [pack(RULES)])))


def test_statistics_counts_per_rule_most_first():
    reports = [report("a.h5ad", 3), report("b.h5ad", 1)]
    assert [(r["rule"], r["level"], r["count"], r["inputs"]) for r in counts(reports)] == [
        ("t.x.monotonic", "MUST", 4, 2),
        ("t.root.flag", "SHOULD", 2, 2),
    ]
    assert table(reports).splitlines() == [
        "4  MUST    t.x.monotonic  (2 inputs)",
        "2  SHOULD  t.root.flag    (2 inputs)",
    ]


def test_statistics_counts_baseline_findings_apart_and_json():
    reports = [report("a.h5ad", 1)]
    known = bl.Baseline(frozenset(i.fingerprint for i in bl.located(reports[0]) if i.rule_id == "t.root.flag"))
    assert "(1 input, 1 in the baseline)" in table(reports, baseline=known)
    doc = json.loads(as_json(reports, baseline=known))
    assert {(d["rule"], d["baseline"]) for d in doc} == {("t.x.monotonic", 0), ("t.root.flag", 1)}


def test_statistics_no_failures():
    assert table([]) == "No failures.\n"


def test_statistics_count_the_inputs_a_rule_was_not_checked_on():
    # A clause checked on none of its nodes is no failure: counted apart, on the inputs it was not checked on.
    deep = RULES[0]._replace(id="t.x.decoded")
    not_checked = ClauseResult(deep, Status.NOT_CHECKED, reason="needs --deep", unchecked=(("/a0", "needs --deep"),))
    reports = [report("a.h5ad", 1), report("b.h5ad", 1)]
    reports = [Report(r.source, r.format, r.packs, r.tool_version, (*r.results, not_checked)) for r in reports]
    rows = {r["rule"]: r for r in counts(reports)}
    assert (rows["t.x.decoded"]["count"], rows["t.x.decoded"]["not_checked"]) == (0, 2)
    assert rows["t.x.monotonic"]["not_checked"] == 0
    assert table(reports).splitlines()[-2:] == [
        "Not checked (none of the rule's nodes):",
        "  MUST    t.x.decoded    (2 inputs)",
    ]
    assert table([Report("c.h5ad", "hdf5", (), "0", (not_checked,))]).splitlines() == [
        "No failures.",
        "Not checked (none of the rule's nodes):",
        "  MUST    t.x.decoded  (1 input)",
    ]
