"""Run packs on a tree: select nodes, run metadata steps, compute array facts in one pass per array, finish."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from spec_validate.checks import registry
from spec_validate.engine import activity, writer_notes
from spec_validate.engine.node_index import NodeIndex
from spec_validate.engine.rule_selection import Selection
from spec_validate.engine.scan import ArrayScan, Damaged, KernelFailed, Progress, Scanner, SerialScanner, plan
from spec_validate.engine.scope import PackScope
from spec_validate.engine.selectors import candidates, decided_by_kind, matches, matching, select, selector_key
from spec_validate.engine.template import render
from spec_validate.errors import NodeError, NotDecoded
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import (
    ClauseResult,
    Finding,
    NotApplicable,
    NotChecked,
    Omitted,
    Pack,
    Provenance,
    Rule,
    Scope,
    Status,
    Writer,
)
from spec_validate.nodes.base import DEFAULT_BLOCK_ELEMENTS, Node, StoreProblem, Tree, Unreadable, describe, walk

MAX_FINDINGS = 20
# The node paths kept of a clause's findings past MAX_FINDINGS (each node once), so that a baseline knows every node a
# rule fails on, not the first twenty: a new failure that sorts after them is still new.
MAX_UNLISTED_PATHS = 100_000


class Outcome:
    """The verdict of one rule on one node."""

    __slots__ = ("findings", "omitted", "reason", "status", "unchecked")

    def __init__(
        self,
        status: Status,
        findings: list[Finding] | None = None,
        reason: str | None = None,
        unchecked: bool = False,
        omitted: int = 0,
    ) -> None:
        self.status = status
        self.findings = findings if findings is not None else []
        self.reason = reason
        self.unchecked = unchecked  # not applicable because the node could not be checked (NotChecked)
        self.omitted = omitted  # findings the primitive counted but did not list (`Omitted`)

    def __repr__(self) -> str:
        return f"Outcome({self.status.value}, {len(self.findings)} findings, reason={self.reason!r})"


# The outcome of every evaluation that passes: one object, not one per (rule, node).
PASSED = Outcome(Status.PASSED)


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


class Tally:
    """One rule's evaluations, compacted as they finish: those that passed are counted and those merely not
    applicable leave only the first of their reasons; failures, errors, nodes not checked and evaluations still
    waiting for array facts are kept, in tree order. A rule on 30,000 nodes then holds a few objects, not 30,000."""

    __slots__ = ("keep_all", "kept", "passed", "reason")

    def __init__(self, evaluations: Sequence[Evaluation] = (), keep_all: bool = False) -> None:
        self.kept: list[Evaluation] = []
        self.passed = 0
        self.reason: str | None = None  # the least not-applicable reason of those not kept
        self.keep_all = keep_all  # keep every evaluation (a run within a node splits them by where they lie)
        for ev in evaluations:
            self.add(ev)

    def add(self, ev: Evaluation) -> None:
        if self.keeps(ev.outcome):
            self.kept.append(ev)
        else:
            self.count(ev.outcome)

    def keeps(self, outcome: Outcome | None) -> bool:
        """Whether an evaluation with this outcome is kept (else only counted): a failure, an error, a node not
        checked, one still waiting for array facts (None), or any in a tally that keeps all."""
        return (
            self.keep_all
            or outcome is None
            or bool(outcome.findings)
            or outcome.unchecked
            or outcome.status in (Status.FAILED, Status.ERROR)
        )

    def count(self, outcome: Outcome) -> None:
        """Count one outcome that `keeps` does not keep: passed, or merely not applicable."""
        if outcome.status is Status.PASSED:
            self.passed += 1
        elif outcome.reason:
            self.not_applicable(outcome.reason)

    def not_applicable(self, reason: str) -> None:
        """Count one evaluation that is merely not applicable, for `reason`."""
        if self.reason is None or reason < self.reason:
            self.reason = reason


_PRIMITIVES: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def _primitives(rule: Rule) -> tuple[Any, ...]:
    """The rule's primitives, step by step, looked up once per rule rather than once per node."""
    cached = _PRIMITIVES.get(id(rule.check))
    if cached is None or cached[0] is not rule.check:
        # The steps are kept in the entry, so their id cannot be reused by another object meanwhile.
        cached = (rule.check, tuple(registry.get(step.primitive) for step in rule.check))
        _PRIMITIVES[id(rule.check)] = cached
    return cached[1]


class Remembered:
    """A rule's verdict on a node that depends only on the node's own metadata, for every node of its signature:
    passed, not applicable for a reason naming the node's path (kept as the text around it), or not checked for a
    reason that does not name the node (`needs --deep`: each node is kept, to be named, but not checked again)."""

    __slots__ = ("parts", "unchecked")

    def __init__(self, parts: list[str] | None, unchecked: Outcome | None = None) -> None:
        self.parts = parts  # None: passed (or not checked, with `unchecked`)
        self.unchecked = unchecked

    def replay(
        self, tally: Tally, nodes: Sequence[Node], nearest: Sequence[Node] | None = None, scratch: Evaluation | None = None
    ) -> None:
        """Count the verdict for each of `nodes`; `nearest`, when given, is `least_and_below(nodes)`; `scratch`, the
        evaluation of the rule and scope that a node not checked is kept under."""
        if self.unchecked is not None and scratch is not None:
            for node in nodes:
                ev = Evaluation(scratch.rule, node, scratch.scope)
                ev.outcome = self.unchecked
                tally.kept.append(ev)
            return
        if self.parts is None:
            tally.passed += len(nodes)
            return
        near = least_and_below(nodes) if nearest is None else nearest
        tally.not_applicable(min(node.path.join(self.parts) for node in near))


def least_and_below(nodes: Sequence[Node]) -> list[Node]:
    """The node of the least path and those whose paths it begins: the only ones whose reason can be the least.

    A reason goes on after the path, so any other path differs from the least within its own length, and so does
    its reason: thousands of nodes then cost a comparison of paths each, not a reason each.
    """
    least = min(node.path for node in nodes)
    return [node for node in nodes if node.path.startswith(least)]


_PASSED_AGAIN = Remembered(None)


def _remembered(outcome: Outcome | None, node: Node) -> Remembered | None:
    """How a rule's verdict on `node` holds for any node of the same signature; None when it may not (a failure,
    an error, a node not checked for a reason that names it or that is the node's own unread part, or a reason
    that names the node other than by its whole path)."""
    if outcome is PASSED:
        return _PASSED_AGAIN
    if outcome is None or outcome.status is not Status.NOT_APPLICABLE or not outcome.reason:
        return None
    path = node.path
    if outcome.unchecked:  # not checked for a reason of the signature's own (needs --deep): so is every such node
        reason = outcome.reason
        mine = path in reason or names(reason, node.name) or reason in (node.unread, node.members_unread)
        return None if mine or path == "/" else Remembered(None, outcome)
    if path == "/":
        return None
    parts = outcome.reason.split(path)
    rest = "".join(parts)
    if names(rest, node.name) or path.strip("/") in rest:
        return None
    return Remembered(parts)


def names(text: str, name: str) -> bool:
    """Whether `name` occurs in `text` as a name of its own, not inside a longer word: "/obs/_index has no
    sharding_indexed codec" does not name the node `_index` but by its path, and is replayed to the 800 string
    columns that share its document, where each of them was checked alone before."""
    start = text.find(name)
    while start != -1:
        end = start + len(name)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(name, start + 1)
    return False


def _own_metadata_only(rule: Rule) -> bool:
    """True when every step of the rule depends only on the node's own metadata (see `Node.signature`)."""
    return all(p is not None and p.own_metadata_only for p in _primitives(rule))


def _own_metadata_and_keys(rule: Rule) -> bool:
    """True when every step of the rule depends only on the node's own metadata and the keys stored below it."""
    return all(p is not None and (p.own_metadata_only or p.own_keys) for p in _primitives(rule))


def _own_name(rule: Rule) -> bool:
    """True when every step of the rule depends only on the node's name."""
    return all(p is not None and p.own_name for p in _primitives(rule))


# Arrays storing more keys than this are checked alone by the rules that read them: grouping copies the listing,
# and an array of many chunks shares its keys with few others.
KEYS_GROUPED = 64


def _keys_signature(node: Node) -> Hashable | None:
    """The node's signature and the keys stored below it (relative, sorted): nodes that agree on both get one
    verdict from a rule that reads nothing else (`Primitive.own_keys`). None: the node is checked alone."""
    signature = node.signature
    if signature is None:
        return None
    try:
        keys = node.stored_keys()
    except Exception:  # noqa: BLE001 (a listing that fails: the rule itself meets it on this node, alone)
        return None
    if keys is None:
        return (signature, None)
    return (signature, tuple(keys)) if len(keys) <= KEYS_GROUPED else None


def find_scopes(tree: Tree, pack: Pack, walked: list[Node] | None = None) -> list[Scope]:
    """Where the pack applies: each node its `scope.roots` selects, else the root if `scope.fallback` selects it.

    `walked`, when given, holds the tree's nodes in walk order, or is empty and is filled here: packs that
    look for their roots share one walk.
    """
    if pack.formats and not any(fnmatch.fnmatchcase(tree.format, f) for f in pack.formats):
        return []
    if not pack.scope:
        return [PackScope(pack, tree.root)]
    roots = pack.scope.get("roots")
    if walked is None:
        walked = []
    if not walked:
        walked.extend(subtree(tree.root))
    # Each node is matched as the root of its own scope: what tells alike siblings apart for the selector still does
    # (its path is "/" and it has no parent in it, whichever node it is).
    chosen = [] if roots is None else matching(roots, walked, lambda s, n: safe_match(s, n, PackScope(pack, n)))
    found = [PackScope(pack, n) for n in chosen]
    if not found and "fallback" in pack.scope and safe_match(pack.scope["fallback"], tree.root, PackScope(pack, tree.root)):
        found = [PackScope(pack, tree.root)]
    return found


def subtree(node: Node) -> Iterator[Node]:
    """`node` and every node below it once (a walk that ends on any input; see `nodes.base.walk`)."""
    for current in walk(node):
        activity.reading("walking ", current.path)
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


def _advance(ev: Evaluation, facts: Mapping[FactRequest, Any] | None, facts_of: Callable[[str], Any] | None = None) -> None:
    """Run steps from `ev.step` until the rule passes, fails, or waits for array facts.

    `facts` are the node's own array facts; `facts_of(path)` gives another array's (a request naming `node`).
    """
    node, scope = ev.node, ev.scope
    primitives = _primitives(ev.rule)
    for i in range(ev.step, len(ev.rule.check)):
        step = ev.rule.check[i]
        primitive = primitives[i]
        assert primitive is not None  # packs are validated against the registry at load time
        activity.reading("checking ", ev.rule.id, " on ", node.path)
        try:
            reason = _not_for(primitive, step.primitive, node)  # a node's dtype may be unreadable: inside the try
            if reason is not None:
                ev.outcome = Outcome(Status.NOT_APPLICABLE, reason=reason)
                return
            if primitive.facts is None:
                output = primitive.function(node, step.options, scope)
            elif facts is None:
                _plan_facts(ev, i)
                return
            else:
                wanted = ev.requests[i]
                if isinstance(wanted, NotApplicable):
                    raise wanted
                given = {k: _fact(node, r, facts, facts_of) for k, r in wanted.items()}
                ev.outcome = _unread(node, given)
                if ev.outcome is not None:
                    return
                output = primitive.function(node, step.options, scope, given)
            findings, omitted = _collect(output)
        except NotApplicable as exc:
            ev.outcome = Outcome(Status.NOT_APPLICABLE, reason=str(exc), unchecked=isinstance(exc, NotChecked))
            return
        except NodeError as exc:
            ev.outcome = _not_read(node, exc)
            return
        except Exception as exc:  # noqa: BLE001 -- a primitive's bug or an unforeseen input: an error on this clause, never a crash
            ev.outcome = Outcome(Status.ERROR, reason=f"{step.primitive}: {type(exc).__name__}: {exc}")
            return
        if findings or omitted:
            ev.outcome = _unless_unread(ev, Outcome(Status.FAILED, findings, omitted=omitted))
            return
    ev.outcome = _unless_unread(ev, PASSED)


def _unless_unread(ev: Evaluation, outcome: Outcome) -> Outcome:
    """The verdict, or not checked where it rests on what could not be read: the node itself (`Node.unread`), for a
    rule that reads more than its name; the members of a group that could not be listed (`members_unread`), for a
    rule that reads more than its own metadata or name (what it found, or missed, among no members is unsure)."""
    node = ev.node
    if node.unread is not None and not _own_name(ev.rule):
        return Outcome(Status.NOT_APPLICABLE, reason=node.unread, unchecked=True)
    unread = node.members_unread
    if unread is None or _own_metadata_only(ev.rule) or _own_name(ev.rule):
        return outcome
    return Outcome(Status.NOT_APPLICABLE, reason=unread, unchecked=True)


def _evaluate(scratch: Evaluation, node: Node, tally: Tally, waiting: list[Evaluation]) -> Outcome | None:
    """Run the scratch evaluation's rule on `node` (in its scope), record it in `tally` and return its outcome.

    Counted where the tally need not keep it (it passed, or is merely not applicable: most of a store of thousands
    of nodes), else kept as an Evaluation of its own, listed in `waiting` too when it waits for array facts. One
    scratch object serves every node of a rule: an object per (rule, node) cost more than most checks."""
    scratch.node, scratch.step, scratch.outcome = node, 0, None
    if scratch.requests:
        scratch.requests = {}
    _advance(scratch, None)
    outcome = scratch.outcome
    if not tally.keeps(outcome):
        tally.count(outcome)  # type: ignore[arg-type]  # never None here: one waiting is kept
        return outcome
    ev = Evaluation(scratch.rule, node, scratch.scope)
    ev.step, ev.outcome = scratch.step, outcome
    ev.requests, scratch.requests = scratch.requests, {}  # what its steps waiting for facts need
    tally.kept.append(ev)
    if outcome is None:
        waiting.append(ev)
    return outcome


def _not_for(primitive: Any, name: str, node: Node) -> str | None:
    """Why the primitive does not apply to this kind of node or dtype, or None when it does."""
    if primitive.kind and node.kind != primitive.kind:
        return f"{name} applies to {primitive.kind}s; {node.path} is a {node.kind}"
    if primitive.dtype_kinds and (node.dtype is None or node.dtype.kind not in primitive.dtype_kinds):
        dtype = node.dtype.str if node.dtype is not None else "unknown"
        return f"{name} applies to dtype kinds {primitive.dtype_kinds!r}; {node.path} is {dtype}"
    return None


def _unread(node: Node, given: Mapping[str, Any]) -> Outcome | None:
    """The outcome when a fact a step needs could not be computed (see `_not_read`); None when every fact is there."""
    unread = next((v for v in given.values() if isinstance(v, (Damaged, NodeError))), None)
    if unread is None:
        return None
    if isinstance(unread, Damaged):  # a chunk whole but not read (its pickle calls a class) is not decoded, not damage
        return _not_read(node, (NotDecoded if unread.not_decoded else NodeError)(unread.message))
    return _not_read(node, unread)


def _not_read(node: Node, exc: NodeError) -> Outcome:
    """The outcome on a node a clause could not read.

    The tool's own failure (a kernel raising, facts not computed) is an error. Anything else is an unreadable part
    of the store: reported once (unless deliberately not decoded, or reported already by the backend that raised
    Unreadable), under the node its message names (an array whose facts another node's clause needed) or this node,
    and the node named as not checked; the clause keeps its verdict on the other nodes.
    """
    if isinstance(exc, KernelFailed):
        return Outcome(Status.ERROR, reason=str(exc))
    if not isinstance(exc, (NotDecoded, Unreadable)):
        message = str(exc)
        named = message.split(": ", 1)[0] if message.startswith("/") and ": " in message else None
        path = named or node.path
        node.tree.note_problem(StoreProblem(path, message if named else f"{node.path}: {message}", path))
    return Outcome(Status.NOT_APPLICABLE, reason=str(exc), unchecked=True)


# Findings kept per (rule, node); those beyond are counted, not kept (a store with a million stray keys).
KEEP_PER_NODE = 1000


def _collect(output: Iterable[Finding | Omitted]) -> tuple[list[Finding], int]:
    """A primitive's findings (the first KEEP_PER_NODE), and the count of the others: those it said it left out
    (`Omitted`) and those beyond the ones kept."""
    findings: list[Finding] = []
    omitted = 0
    for item in output:
        if isinstance(item, Omitted):
            omitted += max(0, int(item.count))
        elif len(findings) < KEEP_PER_NODE:
            findings.append(item)
        else:
            omitted += 1
    return findings, omitted


def _fact(node: Node, request: FactRequest, facts: Mapping[FactRequest, Any], facts_of: Callable[[str], Any] | None) -> Any:
    """The result of one request: on the node itself, or on the array the request names."""
    if request.node is None or request.node == node.path:
        return facts.get(request._replace(node=None), facts.get(request))
    other = facts_of(request.node) if facts_of is not None else None
    if isinstance(other, NodeError):
        return other
    if other is None:
        return KernelFailed(f"{request.node}: its facts were not computed")
    return other.get(request._replace(node=None))


def _plan_facts(ev: Evaluation, first_fact_step: int) -> None:
    """Record what every remaining fact step needs, so the array is read once for all of them.

    Raises the first fact step's NotApplicable: the rule is then not applicable whatever the arrays hold, and
    waits for no scan.
    """
    ev.step = first_fact_step
    for i in range(first_fact_step, len(ev.rule.check)):
        step = ev.rule.check[i]
        primitive = registry.get(step.primitive)
        if primitive is None or primitive.facts is None:
            continue
        try:
            ev.requests[i] = dict(primitive.facts(ev.node, step.options, ev.scope))
        except NotApplicable as exc:
            if i == first_fact_step:
                raise
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
    skip_scope: Callable[[Scope], str | None] | None = None,
    provenance: Provenance | None = None,
) -> Evaluated:
    """One ClauseResult per selected rule of every pack that applies, and the scopes each pack applies at
    (aligned with `packs`).

    Metadata steps run first; then every array some rule needs values of is scanned once, by `scanner`
    (default: serial), for all the facts its rules asked for; then the waiting rules finish.
    `deep` (the CLI's --deep) is set on every Scope: rules that decode stored chunks run only then.
    `skip_scope(scope)` gives a reason not to check a scope's clauses (a legacy file: one verdict stands for
    them), or None; a clause with no other scope is then not applicable for that reason. The clauses the pack's
    legacy block keeps (`Legacy.still_checked`: they hold in every era) are checked on such a scope all the same.
    `provenance` (the eras and writers the store shows) decides which writer notes a finding gets: a note is
    attached only to findings holding the values it explains, when its writer fits the store
    (`engine/writer_notes.py`; default: none is attached).
    `within` (a node path) limits the run to that node, what lies below it, and its ancestors: the results are
    about the first two, the ancestors' failures come back as `context`. Selectors still see the whole tree.
    """
    rules, evaluations, waiting, scopes = _run_metadata_steps(tree, packs, selection, deep, within, skip_scope)
    scans, carried = _plan_scans(waiting, block_elements)
    if progress is not None:
        progress.start(sum(s.elements for s in scans))
    facts = (scanner or SerialScanner(block_elements)).run(scans, progress)
    if progress is not None:
        progress.finish()
    _take_carried(facts, carried)
    for ev in waiting:
        got = facts.get(ev.node.path, {})
        if isinstance(got, NodeError) and _needs_own_facts(ev):
            ev.outcome = _not_read(ev.node, got)  # not decoded, unreadable (not checked), or the tool's failure (error)
            continue
        _advance(ev, got if isinstance(got, Mapping) else {}, facts.get)
    if within == "/":
        results = [aggregate(rule, evaluations[rule.key], max_findings, provenance) for rule in rules]
        return Evaluated(results, scopes, [])
    results, context = [], []
    for rule in rules:
        kept = evaluations[rule.key].kept  # every evaluation: a run within a node does not compact them
        inside = [ev for ev in kept if is_within(ev.node.path, within)]
        results.append(aggregate(rule, inside, max_findings, provenance))
        outside = [ev for ev in kept if not is_within(ev.node.path, within)]
        above = aggregate(rule, outside, max_findings, provenance)
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
    skip_scope: Callable[[Scope], str | None] | None = None,
) -> tuple[list[Rule], dict[tuple[str, str], Tally], list[Evaluation], list[list[Scope]]]:
    """Select nodes for every chosen rule and run steps up to the first that needs array facts; with `within`,
    only on that node, the nodes below it and its ancestors.

    Also returns each pack's scopes (aligned with `packs`): finding them walks the tree, so it is done once.
    Evaluations are keyed by (pack, rule id): keyed by the id alone, two packs' rules of one id would share
    (and overwrite) one list of evaluations. Each rule's evaluations run as they are made and are compacted
    into its Tally, so memory grows with the failures and the waiting evaluations, not with rules x nodes.
    """
    chosen_by_pack = _chosen(packs, selection)
    tree.prefer_attributes(attribute_names(packs, chosen_by_pack))
    walked: list[Node] = []  # the whole tree in walk order, walked once for every pack's scope roots
    indexes: dict[int, tuple[Node, NodeIndex]] = {}  # scope root -> its nodes indexed, shared by packs
    selections: dict[tuple[int, str], _Selected] = {}  # (index, selector) -> the nodes it selects
    evaluations: dict[tuple[str, str], Tally] = {}
    rules: list[Rule] = []
    scopes_by_pack: list[list[Scope]] = []
    waiting: list[Evaluation] = []
    for pack, chosen in zip(packs, chosen_by_pack, strict=True):
        scopes = [s._replace(deep=deep) for s in find_scopes(tree, pack, walked) if in_reach(s.root.path, within)]
        scopes_by_pack.append(scopes)
        if not scopes:
            continue
        skipped = {id(s): reason for s in scopes if skip_scope is not None and (reason := skip_scope(s)) is not None}
        for rule in chosen:
            if rule.key in evaluations:  # one pack given twice: its clauses are still checked and reported once
                continue
            rules.append(rule)
            # A run within a node keeps every evaluation: its results are split by where each node lies.
            tally = evaluations[rule.key] = Tally(keep_all=within != "/")
            grouping = _grouping(rule) if within == "/" else None
            # A legacy scope's verdict stands for the clauses that depend on the era; those its pack keeps (sparse
            # structure, index ranges) hold in every era and are checked there as anywhere else.
            kept = pack.legacy is not None and pack.legacy.keeps(rule.id)
            for scope in scopes:
                if id(scope) in skipped and not kept:
                    continue
                index = _index(indexes, scope, walked)
                selected = _selected(selections, index, scope, rule.applies_to, within)
                if grouping is not None:
                    _evaluate_by_signature(rule, scope, index, selected, tally, waiting, grouping)
                    continue
                scratch = Evaluation(rule, scope.root, scope)
                for node in selected.nodes:
                    _evaluate(scratch, node, tally, waiting)
            for scope in scopes:
                if id(scope) in skipped and not kept:  # a legacy scope: its verdict stands for this clause
                    tally.add(_skipped(rule, scope, skipped[id(scope)]))
    return rules, evaluations, waiting, scopes_by_pack


def _grouping(rule: Rule) -> Callable[[Node], Hashable | None] | None:
    """What tells apart the nodes that get one verdict from `rule`: their signature (`own_metadata_only` steps),
    their signature and stored keys (`own_keys` steps as well), their name (`own_name` steps); None when each
    node is checked alone."""
    if _own_metadata_only(rule):
        return _signature
    if _own_metadata_and_keys(rule):
        return _keys_signature
    if _own_name(rule):
        return _name
    return None


def _name(node: Node) -> Hashable:
    return node.name


def _signature(node: Node) -> Hashable | None:
    return node.signature


class _Selected:
    """The nodes a selector selects in one scope, in tree order; and, worked out when asked, the same nodes grouped
    (by signature, kept for the many rules that group so; by stored keys or name, worked out for each rule)."""

    __slots__ = ("_groups", "_nearest", "nodes")

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self._groups: dict[Callable[[Node], Hashable | None], list[list[Node]]] = {}
        self._nearest: dict[int, list[Node]] = {}

    def groups(self, by: Callable[[Node], Hashable | None] = _signature) -> list[list[Node]]:
        """The nodes grouped by `by` (None: alone), worked out once for the rules that group them so (by signature,
        most rules; by name, the name rules; by signature and stored keys, the chunk key rules)."""
        cached = self._groups.get(by)
        if cached is not None:
            return cached
        found: dict[Any, list[Node]] = {}
        groups: list[list[Node]] = []
        for node in self.nodes:
            key = by(node)
            if key is None:
                groups.append([node])
                continue
            group = found.get(key)
            if group is None:
                group = found[key] = []
                groups.append(group)
            group.append(node)
        self._groups[by] = groups
        return groups

    def nearest(self, group: list[Node]) -> list[Node]:
        """`least_and_below(group[1:])` for a group of `groups`, worked out once for every rule that replays a
        reason over it."""
        found = self._nearest.get(id(group))  # the group lives as long as this selection: its id is not reused
        if found is None:
            found = self._nearest[id(group)] = least_and_below(group[1:])
        return found


def _selected(
    selections: dict[tuple[int, str], _Selected], index: NodeIndex, scope: Scope, selector: Mapping[str, Any], within: str
) -> _Selected:
    """The nodes of the scope that `selector` selects (in reach of `within`); worked out once per selector and
    scope root (dozens of rules share `kind: array`)."""
    key = (id(index), selector_key(selector))
    found = selections.get(key)
    if found is None:
        if within == "/":
            chosen = select(selector, index, scope, lambda s, n: safe_match(s, n, scope), index.selected)
        else:
            reachable = [n for n in candidates(selector, index) if in_reach(n.path, within)]
            chosen = reachable if decided_by_kind(selector) else [n for n in reachable if safe_match(selector, n, scope)]
        found = selections[key] = _Selected(chosen)
    return found


def _evaluate_by_signature(
    rule: Rule,
    scope: Scope,
    index: NodeIndex,
    selected: _Selected,
    tally: Tally,
    waiting: list[Evaluation],
    grouping: Callable[[Node], Hashable | None] = _signature,
) -> None:
    """Run a rule that depends on nothing but what `grouping` tells apart (a node's own metadata, with its stored
    keys, or its name) once per group of nodes that agree on it, and count its verdict for every node of the group;
    where the verdict may differ (a failure, an error), each node is checked."""
    kept = len(tally.kept)
    scratch = Evaluation(rule, scope.root, scope)
    for group in selected.groups(grouping):
        outcome = _evaluate(scratch, group[0], tally, waiting)
        remembered = _remembered(outcome, group[0]) if len(group) > 1 else None
        if remembered is not None:
            remembered.replay(tally, group[1:], selected.nearest(group) if remembered.unchecked is None else None, scratch)
            continue
        for node in group[1:]:
            _evaluate(scratch, node, tally, waiting)
    if len(tally.kept) - kept > 1:  # kept evaluations in tree order, as a node by node run keeps them
        tally.kept[kept:] = sorted(tally.kept[kept:], key=lambda ev: index.position[id(ev.node)])


def _index(indexes: dict[int, tuple[Node, NodeIndex]], scope: Scope, walked: list[Node] | None = None) -> NodeIndex:
    """The scope's nodes indexed, built once per scope root (packs applied at one root share it).

    `walked`, the whole tree in walk order (as `find_scopes` takes it), is the root's nodes when it is filled, and
    is filled here when the root is indexed first: the tree is walked once for both.
    """
    cached = indexes.get(id(scope.root))
    if cached is None:
        root = walked is not None and scope.root is scope.root.tree.root
        if root and walked:
            nodes = list(walked)
        else:
            nodes = list(subtree(scope.root))
            if root and walked is not None:
                walked.extend(nodes)
        cached = indexes[id(scope.root)] = (scope.root, NodeIndex(scope, nodes))
    return cached[1]


def _chosen(packs: Sequence[Pack], selection: Selection) -> list[list[Rule]]:
    """Each pack's rules that the selection includes."""
    return [[r for r in pack.rules if selection.redirected(pack.redirects).includes(r.id)] for pack in packs]


def prefer_attributes(tree: Tree, packs: Sequence[Pack], selection: Selection = Selection()) -> None:
    """Tell the tree which attribute values the selected rules may read (see `attribute_names`), before anything
    walks it: a backend that reads values one by one reads those as it opens each object."""
    tree.prefer_attributes(attribute_names(packs, _chosen(packs, selection)))


def attribute_names(packs: Sequence[Pack], chosen: Sequence[Sequence[Rule]]) -> frozenset[str]:
    """Every name the chosen rules and their packs' scopes, shapes and dimensions might read as an attribute.

    A superset: every string in their selectors and options (attribute names are among them), so a backend
    that reads attribute values one by one can read these at once and leave the rest unread until asked.
    """
    names: set[str] = {"encoding-type", "encoding-version"}  # the node index reads these everywhere
    for pack, rules in zip(packs, chosen, strict=True):
        if rules:
            _strings((pack.scope, pack.shapes, pack.dimensions), names)
        for rule in rules:
            _strings((rule.applies_to, [step.options for step in rule.check]), names)
    return frozenset(names)


def _strings(value: Any, into: set[str]) -> None:
    if isinstance(value, str):
        into.add(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _strings(k, into)
            _strings(v, into)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, into)


def _skipped(rule: Rule, scope: Scope, reason: str) -> Evaluation:
    """A scope whose clauses are not checked (a legacy file): the clause is not applicable there, for `reason`."""
    ev = Evaluation(rule, scope.root, scope)
    ev.outcome = Outcome(Status.NOT_APPLICABLE, reason=reason)
    return ev


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
        from spec_validate.nodes.open import open_store

        with open_store(store) as tree:
            return scan_plan(tree, packs, selection, block_elements)
    if packs is None:
        from spec_validate.engine.loader import builtin_packs

        packs = builtin_packs()
    waiting = _run_metadata_steps(store, packs, selection)[2]
    out = []
    for scan in _plan_scans(waiting, block_elements)[0]:
        out.append((scan.node.path, "edges" if scan.requests and all(r.edges_only for r in scan.requests) else "full"))
    return out


def _needs_own_facts(ev: Evaluation) -> bool:
    """Whether a waiting rule asked for facts of its own node (not only of other arrays)."""
    return any(
        r.node is None or r.node == ev.node.path
        for w in ev.requests.values()
        if not isinstance(w, NotApplicable)
        for r in w.values()
    )


Carried = dict[str, tuple[str, str, set[FactRequest]]]  # node path -> (array scanned for it, field, its requests)


def _plan_scans(waiting: Sequence[Evaluation], block_elements: int) -> tuple[list[ArrayScan], Carried]:
    """One scan per array, with the facts of every rule waiting on it (or naming it); arrays in tree order.

    An array whose values are a field of another array that is scanned anyway (`Node.values_in`: a column of a
    sparse TileDB array, and its cells) is not read again: its requests ride on that array's scan, on the field,
    and are `carried` (see `_take_carried`).
    """
    by_array: dict[str, tuple[Node, set[FactRequest]]] = {}
    for ev in waiting:
        for wanted in ev.requests.values():
            if isinstance(wanted, NotApplicable):
                continue
            for r in wanted.values():
                try:
                    target = ev.node if r.node is None or r.node == ev.node.path else ev.node.tree.get(r.node)
                except NodeError:
                    target = None
                if target is None:
                    continue  # `_fact` reports the missing array on the clause
                entry = by_array.setdefault(target.path, (target, set()))
                entry[1].add(r._replace(node=None))
    carried: Carried = {}
    for path, (node, requests) in list(by_array.items()):
        try:
            host = node.values_in()
        except NodeError:  # reported with the node's own scan
            host = None
        if host is not None and host[0] in by_array:
            by_array[host[0]][1].update(r._replace(field=host[1]) for r in requests)
            carried[path] = (host[0], host[1], requests)
            del by_array[path]
    return [plan(by_array[path][0], by_array[path][1], block_elements) for path in sorted(by_array)], carried


def _take_carried(facts: dict[str, Any], carried: Carried) -> None:
    """The facts of each carried array, from the scan of the array that carried them (or its failure)."""
    for path, (host, field, requests) in carried.items():
        got = facts.get(host)
        if not isinstance(got, Mapping):
            if got is not None:
                facts[path] = got
            continue
        facts[path] = {r: got.get(r._replace(field=field)) for r in requests}


def aggregate(
    rule: Rule,
    evaluations: Sequence[Evaluation] | Tally,
    max_findings: int = MAX_FINDINGS,
    provenance: Provenance | None = None,
) -> ClauseResult:
    """One clause's verdict over all its nodes: failed > error > passed > not checked > not applicable.

    Not checked: no node passed, failed or errored, and some could not be checked (`NotChecked`, data not decoded
    or not readable); never not applicable, which says the clause does not concern the store. A clause that passed
    on some nodes stays passed, and lists the nodes it could not check as every status does (`unchecked`).
    A failed `notice:` rule is a notice: its findings are reported, and it fails nothing. `finding_count`
    counts every finding, those a primitive left unlisted (`Omitted`) included; `max_findings` are kept. Each kept
    finding gets the rule's writer notes that describe it and fit `provenance` (`engine/writer_notes.py`).
    """
    tally = evaluations if isinstance(evaluations, Tally) else Tally(evaluations)
    outcomes = [(ev.node, ev.outcome) for ev in tally.kept if ev.outcome is not None]
    statuses = {o.status for _, o in outcomes}
    notes = writer_notes.fitting(rule.writers, provenance)
    findings: list[Finding] = []
    unlisted: dict[str, None] = {}  # the node paths of findings past max_findings, once each, in order
    total = 0
    for node, outcome in outcomes:
        total += len(outcome.findings) + outcome.omitted
        for f in outcome.findings:
            if len(findings) < max_findings:
                findings.append(_stamp(rule, node, f, notes, provenance))
            elif len(unlisted) < MAX_UNLISTED_PATHS:
                unlisted[f.path or node.path] = None
    checked = tally.passed + sum(1 for _, o in outcomes if o.status in (Status.PASSED, Status.FAILED))
    reason = None
    if Status.FAILED in statuses:
        status = Status.NOTICE if rule.notice else Status.FAILED
    elif Status.ERROR in statuses:
        status = Status.ERROR
        reason = "; ".join(sorted({o.reason or "" for _, o in outcomes if o.status is Status.ERROR}))[:500]
    elif Status.PASSED in statuses or tally.passed:
        status = Status.PASSED
    elif any(o.unchecked for _, o in outcomes):
        status = Status.NOT_CHECKED
        reason = min(o.reason or "" for _, o in outcomes if o.unchecked) or "not checked"
    else:
        status = Status.NOT_APPLICABLE
        reasons = sorted({o.reason for _, o in outcomes if o.reason} | ({tally.reason} if tally.reason else set()))
        reason = reasons[0] if reasons else "no node in the store is selected by this rule"
    unchecked = tuple((node.path, o.reason or "") for node, o in outcomes if o.unchecked)
    listed = {f.path for f in findings}
    more = tuple(p for p in unlisted if p not in listed)
    return ClauseResult(rule, status, tuple(findings), checked, reason, total, unchecked[:max_findings], len(unchecked), more)


def _stamp(
    rule: Rule, node: Node, finding: Finding, writers: tuple[Writer, ...] = (), provenance: Provenance | None = None
) -> Finding:
    path = finding.path or node.path
    message = finding.message
    if rule.message:
        values = {**{k: v for k, v in finding.details.items() if isinstance(k, str)}, "path": path, "detail": finding.message}
        message = render(rule.message, values)
    return Finding(message, path, finding.index, finding.details, writer_notes.attach(writers, finding, path, provenance))
