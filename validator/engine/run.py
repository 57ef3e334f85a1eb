"""Run packs on a tree: select nodes, run metadata steps, compute array facts in one pass per array, finish."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from validator.checks import registry
from validator.engine import activity
from validator.engine.model import Pack, Rule
from validator.engine.node_index import NodeIndex
from validator.engine.rule_selection import Selection
from validator.engine.scan import ArrayScan, Damaged, KernelFailed, Progress, Scanner, SerialScanner, plan
from validator.engine.selectors import matches
from validator.engine.template import render
from validator.kernels.facts import FactRequest
from validator.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    NodeError,
    NotDecoded,
    StoreProblem,
    Tree,
    Unreadable,
    describe,
    walk,
)
from validator.primitive_api import NotApplicable, NotChecked, Scope
from validator.report.model import ClauseResult, Finding, Status

MAX_FINDINGS = 20


class Outcome:
    """The verdict of one rule on one node."""

    __slots__ = ("findings", "reason", "status", "unchecked")

    def __init__(
        self, status: Status, findings: list[Finding] | None = None, reason: str | None = None, unchecked: bool = False
    ) -> None:
        self.status = status
        self.findings = findings if findings is not None else []
        self.reason = reason
        self.unchecked = unchecked  # not applicable because the node could not be checked (NotChecked)

    def __repr__(self) -> str:
        return f"Outcome({self.status.value}, {len(self.findings)} findings, reason={self.reason!r})"


class Evaluation:
    """One rule on one node, possibly waiting at step `step` for facts about arrays."""

    # A plain class, not a dataclass: one is made per (rule, node) and the dataclass machinery costs start-up.
    __slots__ = ("node", "outcome", "requests", "rule", "scope", "step")

    def __init__(self, rule: Rule, node: Node, scope: Scope) -> None:
        self.rule = rule
        self.node = node
        self.scope = scope
        self.step = 0
        self.requests: dict[int, Mapping[str, FactRequest] | NotApplicable] = {}
        self.outcome: Outcome | None = None


def find_scopes(tree: Tree, pack: Pack) -> list[Scope]:
    """Where the pack applies: each node its `scope.roots` selects, else the root if `scope.fallback` selects it."""
    if pack.formats and not any(fnmatch.fnmatchcase(tree.format, f) for f in pack.formats):
        return []
    if not pack.scope:
        return [Scope(pack, tree.root)]
    roots = pack.scope.get("roots")
    found = [Scope(pack, n) for n in subtree(tree.root) if roots is not None and safe_match(roots, n, Scope(pack, n))]
    if not found and "fallback" in pack.scope and safe_match(pack.scope["fallback"], tree.root, Scope(pack, tree.root)):
        found = [Scope(pack, tree.root)]
    return found


def subtree(node: Node) -> Iterator[Node]:
    """`node` and every node below it once (a walk that ends on any input; see `nodes.base.walk`)."""
    for current in walk(node):
        activity.reading(f"walking {current.path}")
        yield current


def safe_match(selector: Mapping[str, Any], node: Node, scope: Scope) -> bool:
    """Whether `selector` selects `node`; False for a node whose attributes cannot be read (the tree reports it)."""
    try:
        return matches(selector, node, scope)
    except Unreadable:
        return False
    except Exception as exc:  # noqa: BLE001 (a part of the node its backend could not read: reported, not selected)
        unreadable(node, f"{node.path}: cannot be read ({describe(exc)})")
        return False


def unreadable(node: Node, message: str) -> None:
    """Report that `node` (or a part of it) cannot be read: once, on its tree."""
    node.tree.note_problem(StoreProblem(node.path, message, node.path))


def _advance(ev: Evaluation, facts: Mapping[FactRequest, Any] | None) -> None:
    """Run steps from `ev.step` until the rule passes, fails, or waits for array facts."""
    node, scope = ev.node, ev.scope
    for i in range(ev.step, len(ev.rule.check)):
        step = ev.rule.check[i]
        primitive = registry.get(step.primitive)
        assert primitive is not None  # packs are validated against the registry at load time
        if primitive.kind and node.kind != primitive.kind:
            ev.outcome = Outcome(
                Status.NOT_APPLICABLE, reason=f"{step.primitive} applies to {primitive.kind}s; {node.path} is a {node.kind}"
            )
            return
        activity.reading(f"checking {ev.rule.id} on {node.path}")
        try:
            if primitive.dtype_kinds and (node.dtype is None or node.dtype.kind not in primitive.dtype_kinds):
                dtype = node.dtype.str if node.dtype is not None else "unknown"
                ev.outcome = Outcome(
                    Status.NOT_APPLICABLE,
                    reason=f"{step.primitive} applies to dtype kinds {primitive.dtype_kinds!r}; {node.path} is {dtype}",
                )
                return
            if primitive.facts is None:
                findings = list(primitive.function(node, step.options, scope))
            elif facts is None:
                _plan_facts(ev, i)
                return
            else:
                wanted = ev.requests[i]
                if isinstance(wanted, NotApplicable):
                    raise wanted
                damaged = next((facts[r] for r in wanted.values() if isinstance(facts.get(r), Damaged)), None)
                if damaged is not None:
                    ev.outcome = _unread(node, NodeError(damaged.message))
                    return
                findings = list(primitive.function(node, step.options, scope, {k: facts[r] for k, r in wanted.items()}))
        except NotApplicable as exc:
            ev.outcome = Outcome(Status.NOT_APPLICABLE, reason=str(exc), unchecked=isinstance(exc, NotChecked))
            return
        except NodeError as exc:
            ev.outcome = _unread(node, exc)
            return
        except Exception as exc:  # noqa: BLE001 -- a primitive's bug or an unforeseen input: an error on this clause, never a crash
            ev.outcome = Outcome(Status.ERROR, reason=f"{step.primitive}: {type(exc).__name__}: {exc}")
            return
        if findings:
            ev.outcome = Outcome(Status.FAILED, findings)
            return
    ev.outcome = Outcome(Status.PASSED)


def _unread(node: Node, exc: NodeError) -> Outcome:
    """The outcome on a node a clause could not read: reported once as unreadable (unless deliberately not decoded,
    or reported already by the backend that raised Unreadable, under the node or document it belongs to), and the
    node named as not checked; the clause keeps its verdict on the other nodes."""
    if not isinstance(exc, (NotDecoded, Unreadable)):
        unreadable(node, str(exc) if str(exc).startswith(node.path) else f"{node.path}: {exc}")
    return Outcome(Status.NOT_APPLICABLE, reason=str(exc), unchecked=True)


def _plan_facts(ev: Evaluation, first_fact_step: int) -> None:
    """Record what every remaining fact step needs, so the array is read once for all of them."""
    ev.step = first_fact_step
    for i in range(first_fact_step, len(ev.rule.check)):
        step = ev.rule.check[i]
        primitive = registry.get(step.primitive)
        if primitive is None or primitive.facts is None:
            continue
        try:
            ev.requests[i] = dict(primitive.facts(ev.node, step.options, ev.scope))
        except NotApplicable as exc:
            ev.requests[i] = exc


def compute_facts(node: Node, requests: set[FactRequest], block_elements: int = DEFAULT_BLOCK_ELEMENTS) -> dict[FactRequest, Any]:
    """Every requested kernel over one array in a single chunk-order pass (edge-only requests read the edge blocks)."""
    result = SerialScanner(block_elements).run([plan(node, requests, block_elements)])[node.path]
    if isinstance(result, NodeError):
        raise result
    return result


class Evaluated(NamedTuple):
    """What `evaluate` found: a result per selected rule, each pack's scopes, and the context of a node run."""

    results: list[ClauseResult]
    scopes: list[list[Scope]]  # aligned with the packs given
    # For a run `within` a node: the rules' failed or errored results on that node's ancestors, which the node's
    # own verdict does not count (an ancestor's missing `.zgroup` is not a fault of the array asked about).
    context: list[ClauseResult]


def iter_results(tree: Tree, packs: Sequence[Pack], selection: Selection = Selection(), **options: Any) -> Iterator[ClauseResult]:
    """One ClauseResult per selected rule of every pack that applies to the tree, in pack order.

    `options` are `evaluate`'s (max_findings, block_elements, scanner, progress, deep).
    """
    yield from evaluate(tree, packs, selection, **options)[0]


def evaluate(
    tree: Tree,
    packs: Sequence[Pack],
    selection: Selection = Selection(),
    *,
    max_findings: int = MAX_FINDINGS,
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    scanner: Scanner | None = None,
    progress: Progress | None = None,
    deep: bool = False,
    within: str = "/",
) -> Evaluated:
    """One ClauseResult per selected rule of every pack that applies, and the scopes each pack applies at
    (aligned with `packs`).

    Metadata steps run first; then every array some rule needs values of is scanned once, by `scanner`
    (default: serial), for all the facts its rules asked for; then the waiting rules finish.
    `deep` (the CLI's --deep) is set on every Scope: rules that decode stored chunks run only then.
    `within` (a node path) limits the run to that node, what lies below it, and its ancestors: the results are
    about the first two, the ancestors' failures come back as `context`. Selectors still see the whole tree.
    """
    rules, evaluations, waiting, scopes = _run_metadata_steps(tree, packs, selection, deep, within)
    scans = _plan_scans(waiting, block_elements)
    if progress is not None:
        progress.start(sum(s.elements for s in scans))
    facts = (scanner or SerialScanner(block_elements)).run(scans, progress)
    if progress is not None:
        progress.finish()
    for ev in waiting:
        got = facts.get(ev.node.path, {})
        if isinstance(got, KernelFailed):  # the tool's failure on these values, not the store's
            ev.outcome = Outcome(Status.ERROR, reason=str(got))
            continue
        if isinstance(got, NodeError):  # not decoded (a codec off the allow-list), or unreadable: not checked
            ev.outcome = _unread(ev.node, got)
            continue
        _advance(ev, got)
    if within == "/":
        return Evaluated([aggregate(rule, evaluations[rule.key], max_findings) for rule in rules], scopes, [])
    results, context = [], []
    for rule in rules:
        inside = [ev for ev in evaluations[rule.key] if is_within(ev.node.path, within)]
        results.append(aggregate(rule, inside, max_findings))
        above = aggregate(rule, [ev for ev in evaluations[rule.key] if not is_within(ev.node.path, within)], max_findings)
        if above.status in (Status.FAILED, Status.ERROR):
            context.append(above)
    return Evaluated(results, scopes, context)


def is_within(path: str, node: str) -> bool:
    """True when `path` is `node` or lies below it."""
    return node == "/" or path == node or path.startswith(node + "/")


def in_reach(path: str, node: str) -> bool:
    """True when `path` is `node`, lies below it, or is one of its ancestors."""
    return is_within(path, node) or is_within(node, path)


def _run_metadata_steps(
    tree: Tree,
    packs: Sequence[Pack],
    selection: Selection,
    deep: bool = False,
    within: str = "/",
) -> tuple[list[Rule], dict[tuple[str, str], list[Evaluation]], list[Evaluation], list[list[Scope]]]:
    """Select nodes for every chosen rule and run steps up to the first that needs array facts; with `within`,
    only on that node, the nodes below it and its ancestors.

    Also returns each pack's scopes (aligned with `packs`): finding them walks the tree, so it is done once.
    Evaluations are keyed by (pack, rule id): keyed by the id alone, two packs' rules of one id would share
    (and overwrite) one list of evaluations.
    """
    evaluations: dict[tuple[str, str], list[Evaluation]] = {}
    rules: list[Rule] = []
    scopes_by_pack: list[list[Scope]] = []
    for pack in packs:
        scopes = [s._replace(deep=deep) for s in find_scopes(tree, pack) if in_reach(s.root.path, within)]
        scopes_by_pack.append(scopes)
        if not scopes:
            continue
        selected = selection.redirected(pack.redirects)
        chosen = [r for r in pack.rules if selected.includes(r.id)]
        nodes = [(scope, NodeIndex(scope, list(subtree(scope.root)))) for scope in scopes]
        for rule in chosen:
            if rule.key in evaluations:  # one pack given twice: its clauses are still checked and reported once
                continue
            rules.append(rule)
            evaluations[rule.key] = [
                Evaluation(rule, node, scope)
                for scope, index in nodes
                for node in index.candidates(rule.applies_to)
                if (within == "/" or in_reach(node.path, within)) and safe_match(rule.applies_to, node, scope)
            ]
    waiting: list[Evaluation] = []
    for evs in evaluations.values():
        for ev in evs:
            _advance(ev, None)
            if ev.outcome is None:
                waiting.append(ev)
    return rules, evaluations, waiting, scopes_by_pack


def scan_plan(
    store: Tree | str,
    packs: Sequence[Pack] | None = None,
    selection: Selection = Selection(),
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
) -> list[tuple[str, str]]:
    """What a run would read: (array path, "full" or "edges") for every array the selected rules need values of.

    `store` is an open tree or a path (opened here); `packs` default to the built-in ones. Runs only the
    metadata steps and reads no array data: the benchmark's read floor reads exactly these arrays.
    """
    if isinstance(store, str):
        from validator.nodes.detect import open_store

        with open_store(store) as tree:
            return scan_plan(tree, packs, selection, block_elements)
    if packs is None:
        from validator.engine.loader import builtin_packs

        packs = builtin_packs()
    waiting = _run_metadata_steps(store, packs, selection)[2]
    out = []
    for scan in _plan_scans(waiting, block_elements):
        out.append((scan.node.path, "edges" if scan.requests and all(r.edges_only for r in scan.requests) else "full"))
    return out


def _plan_scans(waiting: Sequence[Evaluation], block_elements: int) -> list[ArrayScan]:
    """One scan per array, with the facts of every rule waiting on it; arrays in tree order."""
    by_array: dict[str, tuple[Node, set[FactRequest]]] = {}
    for ev in waiting:
        for wanted in ev.requests.values():
            if isinstance(wanted, NotApplicable):
                continue
            entry = by_array.setdefault(ev.node.path, (ev.node, set()))
            entry[1].update(wanted.values())
    return [plan(by_array[path][0], by_array[path][1], block_elements) for path in sorted(by_array)]


def aggregate(rule: Rule, evaluations: list[Evaluation], max_findings: int = MAX_FINDINGS) -> ClauseResult:
    """One clause's verdict over all its nodes: failed > error > passed > not applicable."""
    outcomes = [(ev.node, ev.outcome) for ev in evaluations if ev.outcome is not None]
    statuses = {o.status for _, o in outcomes}
    findings: list[Finding] = []
    for node, outcome in outcomes:
        for f in outcome.findings:
            findings.append(_stamp(rule, node, f))
    checked = sum(1 for _, o in outcomes if o.status in (Status.PASSED, Status.FAILED))
    reason = None
    if Status.FAILED in statuses:
        status = Status.FAILED
    elif Status.ERROR in statuses:
        status = Status.ERROR
        reason = "; ".join(sorted({o.reason or "" for _, o in outcomes if o.status is Status.ERROR}))[:500]
    elif Status.PASSED in statuses:
        status = Status.PASSED
    else:
        status = Status.NOT_APPLICABLE
        reasons = sorted({o.reason for _, o in outcomes if o.reason})
        reason = reasons[0] if reasons else "no node in the store is selected by this rule"
    unchecked = tuple((node.path, o.reason or "") for node, o in outcomes if o.unchecked)
    return ClauseResult(rule, status, tuple(findings[:max_findings]), checked, reason, len(findings), unchecked[:max_findings])


def _stamp(rule: Rule, node: Node, finding: Finding) -> Finding:
    path = finding.path or node.path
    message = finding.message
    if rule.message:
        values = {**{k: v for k, v in finding.details.items() if isinstance(k, str)}, "path": path, "detail": finding.message}
        message = render(rule.message, values)
    return Finding(message, path, finding.index, finding.details)
