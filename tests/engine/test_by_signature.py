"""Rules that depend only on a node's own metadata run once per node signature (engine/run.py): the verdicts,
findings, counts and reasons are exactly those of checking every node."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from memory_tree import Arr, MemoryNode, MemoryTree, pack

from validator import validate
from validator.engine import run
from validator.engine.model import CheckStep, Rule
from validator.engine.run import evaluate
from validator.report.model import Level, Status

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"
# Every Zarr store and HDF5 file of the corpus: the backends whose nodes have signatures.
STORES = sorted(
    str(p.relative_to(CORPUS))
    for p in CORPUS.rglob("*")
    if (p.is_dir() and p.suffix == ".zarr" and not any(parent.suffix == ".zarr" for parent in p.relative_to(CORPUS).parents))
    or (p.is_file() and p.suffix.lower() in (".h5ad", ".h5seurat", ".h5", ".nwb"))
)


def node_by_node(monkeypatch) -> None:
    monkeypatch.setattr(run, "_own_metadata_only", lambda rule: False)


def results(path: str) -> list:
    report = validate(path)
    return [(r.rule.key, r.status, r.findings, r.nodes_checked, r.reason, r.finding_count, r.unchecked) for r in report.results]


@pytest.mark.parametrize("store", STORES)
def test_by_signature_gives_the_node_by_node_results(store, monkeypatch):
    grouped = results(str(CORPUS / store))
    node_by_node(monkeypatch)
    assert grouped == results(str(CORPUS / store))


def test_the_corpus_has_stores_of_each_backend_with_signatures():
    assert (
        any("zarr-v2" in s for s in STORES) and any("zarr-v3" in s for s in STORES) and any(s.endswith(".h5ad") for s in STORES)
    )


class SignedNode(MemoryNode):
    """A memory node whose signature is its kind and attributes, as a Zarr node's is its stored documents."""

    @property
    def signature(self):
        return (self.kind, json.dumps(self.attrs, sort_keys=True))

    def children(self):
        if self._children is None:
            base = self.path.rstrip("/")
            self._children = {name: SignedNode(self.tree, f"{base}/{name}", self._spec[name]) for name in sorted(self._spec)}
        return self._children


class SignedTree(MemoryTree):
    def __init__(self, spec):
        super().__init__(spec)
        self._root = SignedNode(self, "/", spec)


def rule(rule_id: str, primitive: str, options: dict, applies_to: dict) -> Rule:
    return Rule(
        id=rule_id,
        level=Level.MUST,
        spec_level=Level.MUST,
        clause=f"clause of {rule_id}",
        section="S",
        spec_version="1",
        applies_to=applies_to,
        check=(CheckStep(primitive, options),),
        pack="test",
    )


def test_failures_stay_in_tree_order_and_reasons_name_each_node(monkeypatch):
    # Columns whose attributes alternate between two signatures, one failing attr_equals: the failures are found
    # on every node of the failing signature, in tree order, as a node-by-node run finds them; attr_type is not
    # applicable on nodes without the attribute, and the least reason names the least path.
    spec = {f"c{i:02d}": Arr(np.arange(3), attrs={"kind": "good" if i % 3 else "bad"}) for i in range(12)}
    spec.update({f"n{i}": Arr(np.arange(3)) for i in range(3)})
    rules = [
        rule("t.equals", "attr_equals", {"key": "kind", "value": "good"}, {"kind": "array", "has_attrs": "kind"}),
        rule("t.type", "attr_type", {"key": "kind", "type": "string"}, {"kind": "array", "name": "n*"}),
        rule("t.present", "attr_present", {"key": "kind"}, {"kind": "array"}),
    ]
    p = pack(rules)

    def run_once():
        out = evaluate(SignedTree(spec), [p]).results
        return [(r.status, [(f.path, f.message) for f in r.findings], r.nodes_checked, r.reason, r.finding_count) for r in out]

    grouped = run_once()
    node_by_node(monkeypatch)
    assert grouped == run_once()
    equals, typed, present = grouped
    assert equals[0] is Status.FAILED and [path for path, _ in equals[1]] == ["/c00", "/c03", "/c06", "/c09"]
    assert equals[2] == 12
    assert typed[0] is Status.NOT_APPLICABLE and typed[3] == "/n0 has no attribute 'kind'"
    assert present[0] is Status.FAILED and [path for path, _ in present[1]] == ["/n0", "/n1", "/n2"]
