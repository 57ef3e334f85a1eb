"""The engine: one pass per array, arrays no rule needs are never read, errors stay on their clause."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import Arr, pack, tree

from spec_validate.checks import registry
from spec_validate.engine.rule_selection import Selection
from spec_validate.engine.run import iter_results
from spec_validate.engine.scan import SerialScanner, ThreadScanner
from spec_validate.model import CheckStep, Finding, Level, NotApplicable, NotChecked, Rule, Status


def rule(rid, applies_to, *steps, message=None, level=Level.MUST):
    return Rule(
        id=rid,
        level=level,
        spec_level=level,
        clause=f"clause of {rid}",
        section="S",
        spec_version="1",
        applies_to=applies_to,
        check=tuple(CheckStep(n, o) for n, o in steps),
        pack="t",
        message=message,
    )


def csr(indptr=(0, 2, 3, 5), indices=(0, 1, 0, 0, 1)):
    return {
        "X": {
            "@attrs": {"encoding-type": "csr_matrix", "shape": [3, 2]},
            "indptr": Arr(np.array(indptr), chunks=(2,)),
            "indices": Arr(np.array(indices), chunks=(2,)),
            "data": Arr(np.ones(len(indices)), chunks=(2,)),
        },
        "other": Arr(np.arange(100), chunks=(10,)),
    }


INDPTR = {"kind": "array", "name": "indptr"}
RULES = [
    rule("t.csr.indptr-monotonic", INDPTR, ("non_decreasing", {})),
    rule("t.csr.indptr-start", INDPTR, ("first_value_equals", {"equals": 0})),
    rule("t.csr.indptr-end", INDPTR, ("last_value_equals", {"equals": {"node": "../indices", "length": True}})),
    rule("t.csr.indices-range", {"kind": "array", "name": "indices"}, ("values_in_range", {"min": 0, "max": 1})),
    rule("t.csr.group", {"encoding-type": "csr_matrix"}, ("child_present", {"names": ["indptr", "indices", "data"]})),
]


def run(t, rules=RULES, selection=Selection(), block_elements=2):
    return {r.rule.id: r for r in iter_results(t, [pack(rules)], selection, block_elements=block_elements)}


def test_iter_results_passes_every_rule_on_valid_tree():
    results = run(tree(csr()))
    assert {k: v.status for k, v in results.items()} == {r.id: Status.PASSED for r in RULES}


def test_iter_results_passes_reading_each_array_once_for_several_rules():
    t = tree(csr())
    run(t)
    # indptr is needed by three rules (monotonic, start, end), indices by one: each block read once.
    assert t.block_reads == {"/X/indptr": [(0, 2), (2, 4)], "/X/indices": [(0, 2), (2, 4), (4, 5)]}


def test_iter_results_passes_array_no_rule_needs_is_never_read():
    t = tree(csr())
    run(t)
    assert "/other" not in t.block_reads and "/X/data" not in t.block_reads


def test_iter_results_passes_metadata_only_selection_reads_no_block():
    t = tree(csr())
    results = run(t, selection=Selection(select=("t.csr.group",)))
    assert list(results) == ["t.csr.group"]
    assert t.block_reads == {}


def test_iter_results_passes_edges_only_rule_reads_only_edge_blocks():
    t = tree({"a": Arr(np.arange(100), chunks=(10,))})
    (r,) = iter_results(t, [pack([rule("t.a.end", {"name": "a"}, ("last_value_equals", {"equals": 99}))])], block_elements=10)
    assert r.status is Status.PASSED
    assert t.block_reads == {"/a": [(0, 10), (90, 100)]}


def test_iter_results_fails_with_exact_index_of_decrease():
    results = run(tree(csr(indptr=(0, 3, 2, 5))))
    r = results["t.csr.indptr-monotonic"]
    assert r.status is Status.FAILED
    (f,) = r.findings
    assert (f.path, f.index, f.details["previous"], f.details["value"]) == ("/X/indptr", (2,), 3, 2)
    assert results["t.csr.indptr-start"].status is Status.PASSED


def test_iter_results_not_applicable_when_referenced_node_missing():
    spec = csr()
    del spec["X"]["indices"]
    r = run(tree(spec))["t.csr.indptr-end"]
    assert r.status is Status.NOT_APPLICABLE
    assert "../indices" in r.reason


def test_iter_results_not_applicable_when_no_node_selected():
    r = run(tree({"g": {}}))["t.csr.indptr-monotonic"]
    assert r.status is Status.NOT_APPLICABLE and r.nodes_checked == 0


def test_iter_results_not_applicable_for_wrong_dtype_kind():
    spec = csr()
    spec["X"]["indptr"] = Arr(np.array(["a", "b"]))
    r = run(tree(spec))["t.csr.indptr-monotonic"]
    assert r.status is Status.NOT_APPLICABLE and "dtype kinds" in r.reason


@pytest.fixture
def exploding_primitive():
    @registry.check()
    def explodes_for_test(node, options, scope):
        """Never holds: raises."""
        raise ZeroDivisionError("boom")

    yield "explodes_for_test"
    registry._REGISTRY.pop("explodes_for_test", None)


@pytest.fixture
def partly_checkable_primitive():
    from spec_validate.model import NotChecked

    @registry.check(kind="array")
    def checks_all_but_indices_for_test(node, options, scope):
        """Holds on every array but `indices`, which it cannot read."""
        if node.name == "indices":
            raise NotChecked(f"{node.path}: not decoded (test)")
        return iter(())

    yield "checks_all_but_indices_for_test"
    registry._REGISTRY.pop("checks_all_but_indices_for_test", None)


def test_iter_results_passes_but_names_the_nodes_it_could_not_check(partly_checkable_primitive):
    rules = [
        rule("t.x.partly", {"kind": "array"}, (partly_checkable_primitive, {})),
        rule("t.x.plain-na", {"kind": "array", "name": "indices"}, ("first_value_equals", {"equals": {"node": "../gone"}})),
    ]
    results = run(tree(csr()), rules)
    partly = results["t.x.partly"]
    assert partly.status is Status.PASSED and partly.nodes_checked == 3  # indptr, data, other
    assert partly.unchecked == (("/X/indices", "/X/indices: not decoded (test)"),)
    # A plain NotApplicable (here: a reference to a node that does not exist) stays out of `unchecked`.
    assert results["t.x.plain-na"].status is Status.NOT_APPLICABLE and results["t.x.plain-na"].unchecked == ()


@pytest.fixture
def unreadable_or_not_applicable_primitive():
    @registry.check(kind="array")
    def checks_no_array_for_test(node, options, scope):
        """Holds on no array: `indices` it cannot read, the others it does not concern."""
        if node.name == "indices":
            raise NotChecked(f"{node.path}: not decoded (test)")
        raise NotApplicable(f"{node.path} is not one this concerns")

    yield "checks_no_array_for_test"
    registry._REGISTRY.pop("checks_no_array_for_test", None)


def test_iter_results_not_checked_when_no_node_could_be_checked(unreadable_or_not_applicable_primitive):
    # Nodes it could not check and nodes it does not concern, and none checked: not checked, never not applicable
    # (which would say the clause does not concern the store) nor passed.
    results = run(tree(csr()), [rule("t.x.none", {"kind": "array"}, (unreadable_or_not_applicable_primitive, {}))])
    got = results["t.x.none"]
    assert got.status is Status.NOT_CHECKED and got.nodes_checked == 0
    assert got.reason == "/X/indices: not decoded (test)"
    assert got.unchecked == (("/X/indices", "/X/indices: not decoded (test)"),) and got.unchecked_count == 1


def test_iter_results_a_failure_outranks_nodes_not_checked():
    # Failed on one node, not checked on another: failed, naming the node it could not check as well.
    @registry.check(kind="array")
    def fails_on_indptr_for_test(node, options, scope):
        """Holds on every array but `indptr`; `indices` it cannot read."""
        if node.name == "indices":
            raise NotChecked(f"{node.path}: not decoded (test)")
        if node.name == "indptr":
            yield Finding("bad (test)")

    try:
        got = run(tree(csr()), [rule("t.x.fails", {"kind": "array"}, ("fails_on_indptr_for_test", {}))])["t.x.fails"]
    finally:
        registry._REGISTRY.pop("fails_on_indptr_for_test", None)
    assert got.status is Status.FAILED and [f.path for f in got.findings] == ["/X/indptr"]
    assert got.unchecked == (("/X/indices", "/X/indices: not decoded (test)"),)


def test_iter_results_error_when_primitive_raises(exploding_primitive):
    rules = [rule("t.x.explodes", {"kind": "group"}, (exploding_primitive, {})), RULES[-1]]
    results = run(tree(csr()), rules)
    r = results["t.x.explodes"]
    assert r.status is Status.ERROR
    assert r.reason == "explodes_for_test: ZeroDivisionError: boom"
    assert results["t.csr.group"].status is Status.PASSED


def test_iter_results_unreadable_array_is_reported_once_and_not_checked(monkeypatch):
    """An array that cannot be read is an unreadable record of the tree; the clauses needing it name it as not
    checked, and keep their verdicts on the other nodes."""
    from memory_tree import MemoryNode

    from spec_validate.errors import NodeError

    def broken(self, rows):
        raise NodeError(f"{self.path}: cannot read data (broken)")

    monkeypatch.setattr(MemoryNode, "read_block", broken)
    for scanner in (SerialScanner(2), ThreadScanner(2, 2)):
        t = tree(csr())
        results = {r.rule.id: r for r in iter_results(t, [pack(RULES)], block_elements=2, scanner=scanner)}
        r = results["t.csr.indptr-monotonic"]
        assert r.status is Status.NOT_CHECKED and r.unchecked == (("/X/indptr", "/X/indptr: cannot read data (broken)"),)
        assert ("/X/indptr", "cannot read data (broken)") in [(p.key, p.message) for p in t.problems]
        assert results["t.csr.group"].status is Status.PASSED


def test_iter_results_error_when_a_kernel_fails_the_store_not_blamed(monkeypatch):
    """A kernel that raises on values (the tool's failure) puts the clauses on that array in error; no unreadable
    record is made, since the store was read."""
    from spec_validate.kernels import registry

    def boom(block, **params):
        raise TypeError("no such values")

    monkeypatch.setitem(registry.KERNELS, "find_decreases", registry.get("find_decreases")._replace(summarize=boom))
    for scanner in (SerialScanner(2), ThreadScanner(2, 2)):
        t = tree(csr())
        results = {r.rule.id: r for r in iter_results(t, [pack(RULES)], block_elements=2, scanner=scanner)}
        r = results["t.csr.indptr-monotonic"]
        assert r.status is Status.ERROR and "a kernel failed on these values (TypeError: no such values)" in r.reason
        assert t.problems == [] and results["t.csr.group"].status is Status.PASSED


def test_iter_results_passes_message_template_stamped_by_engine():
    rules = [rule("t.csr.m", INDPTR, ("non_decreasing", {}), message="{path}: {detail} [{previous}] {0.__class__}")]
    (f,) = run(tree(csr(indptr=(0, 3, 2, 5))), rules)["t.csr.m"].findings
    assert f.message == "/X/indptr: decreases at index 2: 3 -> 2 (1 decrease(s) in all) [3] {0.__class__}"


def test_iter_results_fails_stop_at_first_failing_step():
    rules = [rule("t.x.steps", INDPTR, ("first_value_equals", {"equals": 1}), ("non_decreasing", {}))]
    r = run(tree(csr(indptr=(0, 3, 2, 5))), rules)["t.x.steps"]
    assert [f.message.split(",")[0] for f in r.findings] == ["first element is 0"]


@pytest.fixture
def count_hdf5_reads(monkeypatch):
    """Record every block read through the HDF5 node tree: path -> row ranges read."""
    from spec_validate.nodes.hdf5.tree import HDF5Node

    reads: dict[str, list] = {}
    real = HDF5Node.read_block

    def read_block(self, rows):
        reads.setdefault(self.path, []).append(rows)
        return real(self, rows)

    monkeypatch.setattr(HDF5Node, "read_block", read_block)
    return reads


def test_validate_passes_real_file_each_block_read_at_most_once(count_hdf5_reads, valid_h5ad):
    import spec_validate

    reads = count_hdf5_reads
    report = spec_validate.validate(valid_h5ad)
    assert report.results and not report.failures
    assert reads["/X/indptr"]  # indptr-monotonic, -start and -end all need it: read once for all three
    assert all(len(rows) == len(set(rows)) for rows in reads.values()), reads
    assert "/X/data" not in reads  # no rule looks at the values of data


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_validate_passes_real_file_metadata_only_selection_reads_no_chunk(count_hdf5_reads, valid_h5ad, jobs):
    import spec_validate

    report = spec_validate.validate(valid_h5ad, select=["anndata.element", "anndata.dataframe"], jobs=jobs)
    assert report.results
    assert count_hdf5_reads == {}


@pytest.mark.parametrize(
    "statuses,expected",
    [
        pytest.param([Status.PASSED, Status.FAILED, Status.ERROR, Status.NOT_APPLICABLE], Status.FAILED, id="failed-wins"),
        pytest.param([Status.PASSED, Status.ERROR, Status.NOT_APPLICABLE], Status.ERROR, id="error-over-passed"),
        pytest.param([Status.NOT_APPLICABLE, Status.PASSED], Status.PASSED, id="passed-over-not-applicable"),
        pytest.param([Status.NOT_APPLICABLE], Status.NOT_APPLICABLE, id="not-applicable"),
    ],
)
def test_aggregate_passes_status_priority(statuses, expected):
    from spec_validate.engine.run import Evaluation, Outcome, aggregate
    from spec_validate.model import Finding

    t = tree({f"a{i}": np.arange(2) for i in range(len(statuses))})
    r = RULES[0]
    evs = []
    for i, status in enumerate(statuses):
        ev = Evaluation(r, t.get(f"/a{i}"), None)
        ev.outcome = Outcome(status, [Finding("bad")] if status is Status.FAILED else [], reason=f"why {i}")
        evs.append(ev)
    result = aggregate(r, evs)
    assert result.status is expected
    assert result.nodes_checked == sum(s in (Status.PASSED, Status.FAILED) for s in statuses)
    assert all(f.path.startswith("/a") for f in result.findings)


def test_aggregate_passes_caps_findings_and_counts_all():
    t = tree({"a": Arr(np.arange(50)[::-1].copy(), chunks=(5,))})
    rules = [rule("t.a.m", {"name": "a"}, ("non_decreasing", {"max_examples": 30}))]
    (r,) = iter_results(t, [pack(rules)], max_findings=4)
    assert len(r.findings) == 4 and r.finding_count == 49  # every decrease counts, not only the 30 examples listed


def test_iter_results_keeps_one_id_of_two_packs_apart():
    # Keyed by id alone, the second pack's evaluations overwrote the first's and both results showed them.
    t = tree(csr(indptr=(0, 3, 2, 5)))
    strict = rule("t.csr.indptr-monotonic", INDPTR, ("non_decreasing", {}))._replace(pack="a")
    elsewhere = rule("t.csr.indptr-monotonic", {"name": "no-such-node"}, ("non_decreasing", {}))._replace(pack="b")
    results = iter_results(t, [pack([strict], name="a"), pack([elsewhere], name="b")])
    assert [(r.rule.key, r.status) for r in results] == [
        (("a", "t.csr.indptr-monotonic"), Status.FAILED),
        (("b", "t.csr.indptr-monotonic"), Status.NOT_APPLICABLE),
    ]


def test_iter_results_reports_a_pack_given_twice_once():
    t = tree(csr(indptr=(0, 3, 2, 5)))
    results = list(iter_results(t, [pack(RULES), pack(RULES)]))
    assert sorted(r.rule.id for r in results) == sorted(r.id for r in RULES)


# ------------------------------------------------------------------------------- exact counts, notices, skipped scopes, notes
def test_iter_results_counts_findings_a_primitive_leaves_out():
    # 50 values outside the range: values_in_range lists 5 and says 45 more (Omitted); the count is exact.
    t = tree({"v": Arr(np.full(50, 9), chunks=(10,))})
    (r,) = iter_results(t, [pack([rule("t.v.range", {"name": "v"}, ("values_in_range", {"max": 1}))])], max_findings=3)
    assert r.status is Status.FAILED and len(r.findings) == 3 and r.finding_count == 50


def test_iter_results_reports_a_failed_notice_rule_as_a_notice():
    notice = rule("t.g.notice", {"root": True}, ("attr_present", {"key": "x"}))._replace(notice="security")
    (r,) = iter_results(tree({}), [pack([notice])])
    assert r.status is Status.NOTICE and r.finding_count == 1


def test_iter_results_skips_a_scope_with_its_reason():
    (r,) = iter_results(tree(csr()), [pack(RULES[:1])], skip_scope=lambda s: "legacy: old layout")
    assert r.status is Status.NOT_APPLICABLE and r.reason == "legacy: old layout"


class FakeProvenance:
    """Fits the writers in `fit`; shows those in `shown` (name -> evidence)."""

    def __init__(self, fit, shown):
        self.fit, self.shown = set(fit), dict(shown)

    def fits(self, name, versions=""):
        return name in self.fit

    def evidence(self, name, versions=""):
        return self.shown.get(name)


def test_iter_results_checks_on_a_skipped_scope_the_clauses_its_legacy_block_keeps():
    # A legacy verdict stands for the clauses that depend on the era; those that hold in every era are checked.
    from spec_validate.model import Legacy

    kept = pack(RULES)._replace(legacy=Legacy("Older files differ.", "S", {"old": {"*": "old"}}, ("t.csr.indptr-monotonic",)))
    t = tree(csr(indptr=(0, 3, 2, 5)))
    results = {r.rule.id: r for r in iter_results(t, [kept], skip_scope=lambda s: "legacy: old layout")}
    assert results["t.csr.indptr-monotonic"].status is Status.FAILED
    assert results["t.csr.indptr-monotonic"].findings[0].index == (2,)
    others = {k: (r.status, r.reason) for k, r in results.items() if k != "t.csr.indptr-monotonic"}
    assert set(others.values()) == {(Status.NOT_APPLICABLE, "legacy: old layout")}
    assert set(t.block_reads) == {"/X/indptr"}  # the arrays only the skipped clauses need are never read


def test_iter_results_attaches_only_the_writer_notes_that_fit():
    from spec_validate.model import Writer

    when = (("key", ("x",)),)  # attr_present's finding names the missing key
    notes = (Writer("shown", "", "a", when), Writer("likely", "", "b", when), Writer("other", "", "c", when))
    failing = rule("t.g.present", {"root": True}, ("attr_present", {"key": "x"}))._replace(writers=notes)
    provenance = FakeProvenance({"shown", "likely"}, {"shown": "seen"})
    (r,) = iter_results(tree({}), [pack([failing])], provenance=provenance)
    assert [(w.name, w.detected) for w in r.findings[0].writers] == [("shown", True), ("likely", False)]
    assert r.writer_notes == list(r.findings[0].writers) and r.writer_notes[0].evidence == "seen"


def test_iter_results_attaches_no_writer_note_to_a_finding_it_does_not_describe():
    from spec_validate.model import Writer

    note = Writer("w", "", "about key y", (("key", ("y",)),))
    failing = rule("t.g.present", {"root": True}, ("attr_present", {"key": "x"}))._replace(writers=(note,))
    (r,) = iter_results(tree({}), [pack([failing])], provenance=FakeProvenance({"w"}, {"w": "seen"}))
    assert r.status is Status.FAILED and r.findings[0].writers == () and r.writer_notes == []


def test_iter_results_gives_a_primitive_the_facts_of_another_array_each_read_once():
    from spec_validate.checks.api import check
    from spec_validate.kernels.facts import FactRequest
    from spec_validate.model import Finding

    def _two(node, options, scope):
        other = scope.node(node, options["other"])
        return {
            "mine": FactRequest("first_last", edges_only=True),
            "other": FactRequest("first_last", edges_only=True, node=other.path),
        }

    @check(options={"properties": {"other": {"type": "string"}}, "required": ["other"]}, kind="array", facts=_two)
    def probe_same_last_for_test(node, options, scope, facts):
        """The array ends with the value the array at `other` ends with."""
        if facts["mine"].last != facts["other"].last:
            yield Finding(f"ends with {facts['mine'].last}, the other with {facts['other'].last}")

    try:
        t = tree({"a": Arr(np.arange(5), chunks=(2,)), "b": Arr(np.array([0, 4]), chunks=(2,)), "c": Arr(np.array([1, 7]))})
        rules = [
            rule("t.a.same", {"name": "a"}, ("probe_same_last_for_test", {"other": "/b"})),
            rule("t.c.same", {"name": "c"}, ("probe_same_last_for_test", {"other": "/b"})),
        ]
        results = {r.rule.id: r for r in iter_results(t, [pack(rules)], block_elements=2)}
        assert results["t.a.same"].status is Status.PASSED
        assert results["t.c.same"].status is Status.FAILED
        assert t.block_reads["/b"] == [(0, 2)]  # one read of /b for both rules
    finally:
        registry._REGISTRY.pop("probe_same_last_for_test", None)


def test_evaluate_within_a_node_counts_only_it_and_what_lies_below_and_gives_its_ancestors_as_context():
    # `spec-validate x.zarr/X` validates /X: the root's failure (it lacks `flag`) is context, not a failure of /X,
    # and arrays outside /X are never read.
    from spec_validate.engine.run import evaluate

    t = tree({**csr(indptr=(0, 3, 2, 5)), "@attrs": {}})
    rules = RULES + [rule("t.root.flag", {"root": True}, ("attr_present", {"key": "flag"}))]
    done = evaluate(t, [pack(rules)], Selection(), block_elements=2, within="/X")
    got = {r.rule.id: r for r in done.results}
    assert got["t.csr.indptr-monotonic"].status is Status.FAILED  # below /X: counted
    assert got["t.root.flag"].status is Status.NOT_APPLICABLE  # the root is not /X or below it
    assert [(r.rule.id, r.status) for r in done.context] == [("t.root.flag", Status.FAILED)]
    assert "/other" not in t.block_reads and "/X/indptr" in t.block_reads


def test_evaluate_without_within_has_no_context():
    from spec_validate.engine.run import evaluate

    done = evaluate(tree(csr()), [pack(RULES)], Selection(), block_elements=2)
    assert done.context == [] and len(done.results) == len(RULES)


CXG = "conformance-corpus/cxg/cxg-0.3.0"


def test_scan_plan_passes_a_sparse_columns_facts_ride_on_its_cells_scan():
    # /Xr/var is a field of /Xr/__cells, which is read anyway (Xr against Xc): one pass over Xr, not two.
    pytest.importorskip("tiledb")
    from spec_validate.engine.run import scan_plan

    paths = [path for path, _ in scan_plan(f"{CXG}/valid-sparse-X.cxg")]
    assert "/Xr/__cells" in paths and "/Xc/__cells" in paths
    assert "/Xr/var" not in paths and "/Xc/obs" not in paths


def test_iter_results_fails_the_same_on_a_carried_column_as_on_one_read_alone(monkeypatch):
    # The column's out-of-range index: the same clause results whether it rides on the cells' scan or is read alone.
    pytest.importorskip("tiledb")
    from spec_validate import validate
    from spec_validate.nodes.tiledb.tree import TileDBAttributeNode

    def results() -> list:
        report = validate(f"{CXG}/Xr-var-out-of-range.cxg")
        return [(r.rule.id, r.status, r.reason, r.findings) for r in report.results]

    carried = results()
    monkeypatch.setattr(TileDBAttributeNode, "values_in", lambda self: None)
    alone = results()
    assert carried == alone
    assert ("cxg.Xr.var-in-range", Status.FAILED) in [(rule, status) for rule, status, _, _ in carried]


def test_iter_results_not_checked_on_a_group_whose_members_could_not_be_listed():
    # A damaged group (its symbol table unreadable, say) lists no member: that 'indptr' is missing, or that nothing
    # wrong was found among its members, would be a false claim. Its own metadata is still checked.
    spec = {"X": {"@attrs": {"encoding-type": "csr_matrix", "shape": [3, 2]}}}
    t = tree(spec)
    t.get("/X").members_unread = "/X: its members cannot be listed (damaged)"
    rules = [
        RULES[-1],
        rule("t.csr.attr", {"encoding-type": "csr_matrix"}, ("attr_present", {"key": "shape"})),
        rule("t.csr.no-attr", {"encoding-type": "csr_matrix"}, ("attr_present", {"key": "h5sparse_format"})),
    ]
    got = run(t, rules)
    members = got["t.csr.group"]
    assert members.status is Status.NOT_CHECKED
    assert members.unchecked == (("/X", "/X: its members cannot be listed (damaged)"),)
    assert got["t.csr.attr"].status is Status.PASSED and not got["t.csr.attr"].unchecked
    assert got["t.csr.no-attr"].status is Status.FAILED  # its own metadata: the verdict stands


def test_iter_results_not_checked_where_a_named_array_lies_in_a_group_whose_members_could_not_be_listed():
    # /X/indptr's last value against the length of /Y/indices: /Y could not be listed, so whether it holds indices
    # (and how many) is unknown, not "missing".
    spec = csr()
    spec["Y"] = {}
    t = tree(spec)
    t.get("/Y").members_unread = "/Y: its members cannot be listed (damaged)"
    rules = [rule("t.end", INDPTR, ("last_value_equals", {"equals": {"node": "/Y/indices", "length": True}}))]
    got = run(t, rules)["t.end"]
    assert got.status is Status.NOT_CHECKED and got.unchecked == (("/X/indptr", "/Y: its members cannot be listed (damaged)"),)


def test_iter_results_not_checked_on_a_node_that_could_not_be_read():
    # Its header or document unread: what it holds is unknown, whatever a rule would find there; its name is known.
    t = tree(csr())
    t.get("/X/indptr").unread = "/X/indptr: cannot be opened (damaged header)"
    name = ("node_name_pattern", {"require": "^[a-z]+$", "means": "lower case"})
    rules = [RULES[0], rule("t.name", INDPTR, name)]
    got = run(t, rules)
    assert got["t.csr.indptr-monotonic"].unchecked == (("/X/indptr", "/X/indptr: cannot be opened (damaged header)"),)
    assert got["t.name"].status is Status.PASSED and not got["t.name"].unchecked
