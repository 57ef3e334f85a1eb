"""Rules that depend only on a node's own metadata run once per node signature, and rules that also read the keys
stored below a node once per signature and keys (engine/run.py): the verdicts, findings, counts and reasons are
exactly those of checking every node."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from memory_tree import Arr, MemoryNode, MemoryTree, pack

from spec_validate import validate
from spec_validate.checks import api as primitive_api
from spec_validate.engine import run
from spec_validate.engine.run import evaluate
from spec_validate.model import CheckStep, Level, Rule, Status

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"
# Every Zarr store and HDF5 file of the corpus: the backends whose nodes have signatures.
STORES = sorted(
    str(p.relative_to(CORPUS))
    for p in CORPUS.rglob("*")
    if (p.is_dir() and p.suffix == ".zarr" and not any(parent.suffix == ".zarr" for parent in p.relative_to(CORPUS).parents))
    or (p.is_file() and p.suffix.lower() in (".h5ad", ".h5seurat", ".h5", ".nwb"))
)


def node_by_node(monkeypatch) -> None:
    monkeypatch.setattr(run, "_grouping", lambda rule: None)


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


def test_verdicts_counted_make_no_evaluation_and_only_failures_are_kept(monkeypatch):
    # Each column its own signature: t.present passes on the "c" columns and fails on the "n" ones, t.type is not
    # applicable where the attribute is absent. Only the failing nodes are kept (an Evaluation each); the rest are
    # counted as they are checked, with the results of a run that checks every node alone.
    spec = {f"c{i:02d}": Arr(np.arange(3), attrs={"kind": "good", "i": i}) for i in range(6)}
    spec.update({f"n{i}": Arr(np.arange(3), attrs={"i": i}) for i in range(3)})
    rules = [
        rule("t.present", "attr_present", {"key": "kind"}, {"kind": "array"}),
        rule("t.type", "attr_type", {"key": "kind", "type": "string"}, {"kind": "array"}),
    ]
    made = []

    class Counted(run.Evaluation):
        __slots__ = ()

        def __init__(self, rule, node, scope):
            made.append((rule.id, node.path))
            super().__init__(rule, node, scope)

    def run_once():
        out = evaluate(SignedTree(spec), [pack(rules)]).results
        return [(r.status, [(f.path, f.message) for f in r.findings], r.nodes_checked, r.reason, r.finding_count) for r in out]

    monkeypatch.setattr(run, "Evaluation", Counted)
    quick = run_once()
    made = [m for m in made if m[1] != "/"]  # each rule's one scratch evaluation, made at the scope's root
    assert made == [("t.present", f"/n{i}") for i in range(3)]
    present, typed = quick
    assert present[0] is Status.FAILED and present[2] == 9 and [p for p, _ in present[1]] == ["/n0", "/n1", "/n2"]
    assert typed[0] is Status.PASSED and typed[2] == 6
    node_by_node(monkeypatch)
    assert run_once() == quick


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _arrays_sharing_metadata(root: Path, v3: bool) -> None:
    """Eight arrays with one metadata document and one stored chunk each; a4 also stores a stray key, a6 a chunk
    outside its grid, a7 a chunk under a key of another chunk key form (the other separator, in v2)."""
    if v3:
        _write(root / "zarr.json", json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
        document = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [4, 2],
            "data_type": "int8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 2]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes"}],
            "attributes": {},
        }
        name, chunk, outside, stray = "zarr.json", "c/0/0", "c/3/0", "c/backup"
    else:
        _write(root / ".zgroup", json.dumps({"zarr_format": 2}))
        document = {
            "zarr_format": 2,
            "shape": [4, 2],
            "chunks": [2, 2],
            "dtype": "|i1",
            "compressor": None,
            "fill_value": 0,
            "order": "C",
            "filters": None,
        }
        name, chunk, outside, stray = ".zarray", "0.0", "5.0", "0.0~"
    for i in range(8):
        folder = root / f"a{i}"
        _write(folder / name, json.dumps(document))
        (folder / chunk).parent.mkdir(parents=True, exist_ok=True)
        (folder / chunk).write_bytes(bytes(8 if v3 else 4))
    (root / "a4" / stray).write_bytes(b"x")
    (root / "a6" / outside).parent.mkdir(parents=True, exist_ok=True)
    (root / "a6" / outside).write_bytes(bytes(8 if v3 else 4))
    if v3:
        (root / "a7" / "0.0").write_bytes(bytes(8))
    else:
        (root / "a7" / "1").mkdir()
        (root / "a7" / "1" / "0").write_bytes(bytes(4))


@pytest.mark.parametrize("v3", [False, True])
def test_chunk_key_rules_group_by_stored_keys_and_find_each_odd_array(tmp_path, monkeypatch, v3):
    store = tmp_path / "s.zarr"
    _arrays_sharing_metadata(store, v3)
    grouped = results(str(store))
    failed = {key: sorted({f.path for f in findings}) for key, status, findings, *_ in grouped if status is Status.FAILED}
    notices = {key: sorted({f.path for f in findings}) for key, status, findings, *_ in grouped if status is Status.NOTICE}
    node_by_node(monkeypatch)
    assert grouped == results(str(store))
    if v3:
        assert failed[("zarr3", "zarr3.array.chunk-keys")] == ["/a7"]
        assert failed[("zarr3", "zarr3.array.chunk-keys-in-grid")] == ["/a6"]
        assert notices[("zarr3", "zarr3.array.unread-keys")] == ["/a4"]
    else:
        assert failed[("zarr", "zarr.array.chunk-keys")] == ["/a7"]
        assert failed[("zarr", "zarr.array.chunk-keys-in-grid")] == ["/a6"]
        assert notices[("zarr", "zarr.array.only-chunk-keys")] == ["/a4"]
    checked = {key: n for key, status, _, n, *_ in grouped}
    assert checked[("zarr3", "zarr3.array.chunk-keys") if v3 else ("zarr", "zarr.array.chunk-keys")] == 8


def test_a_replayed_reason_is_the_least_of_every_node_of_the_group():
    # The reason goes on after the path: "/a/b0" sorts before "/a0" though "/a" is the least path.
    class Named:
        def __init__(self, path):
            self.path = path

    nodes = [Named(p) for p in ("/b", "/a", "/a/b", "/c/a")]
    tally = run.Tally()
    run.Remembered(["no value at ", "0"]).replay(tally, nodes)
    assert tally.reason == min(f"no value at {p}0" for p in ("/b", "/a", "/a/b", "/c/a")) == "no value at /a/b0"
    # The nodes a reason can come from, worked out once per group for every rule that replays over it.
    assert [n.path for n in run.least_and_below(nodes)] == ["/a", "/a/b"]
    again = run.Tally()
    run.Remembered(["no value at ", "0"]).replay(again, nodes, run.least_and_below(nodes))
    assert again.reason == tally.reason


def test_name_rules_group_by_name_and_find_each_node_of_a_bad_name(tmp_path, monkeypatch):
    # Four groups each holding a member named "x", one named "Straße" (not case-folded: the NFKC rule fails) and
    # one named "__reserved" (the reserved prefix): the name rules run once per name, and every node of a bad name
    # is still found, as a node by node run finds it.
    store = tmp_path / "names.zarr"
    group = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
    _write(store / "zarr.json", group)
    for i in range(4):
        for name in ("x", "Straße", "__reserved"):
            _write(store / f"g{i}" / name / "zarr.json", group)
        _write(store / f"g{i}" / "zarr.json", group)
    calls = []
    name_pattern = run.registry.get("node_name_pattern")
    monkeypatch.setitem(
        primitive_api.REGISTRY,
        "node_name_pattern",
        name_pattern._replace(function=lambda node, *a: calls.append(node.path) or name_pattern.function(node, *a)),
    )
    monkeypatch.setattr(run, "_PRIMITIVES", {})
    grouped = results(str(store))
    failed = {key[1]: sorted({f.path for f in findings}) for key, status, findings, *_ in grouped if status is Status.FAILED}
    assert failed["zarr3.node.name-nfkc"] == [f"/g{i}/Straße" for i in range(4)]
    assert failed["zarr3.node.name-reserved-prefix"] == [f"/g{i}/__reserved" for i in range(4)]
    # Once per name for each rule on it, but every node of a failing name: fewer calls than nodes x rules.
    nodes = 4 * 4  # the root has no name: the rules do not select it
    pattern_rules = [k for k, *_ in grouped if k[1].startswith("zarr3.node.name-") and k[1] != "zarr3.node.name-nfkc"]
    rules = len(pattern_rules)
    assert len(calls) < nodes * rules
    calls.clear()
    node_by_node(monkeypatch)
    assert grouped == results(str(store))
    assert len(calls) == nodes * rules


def test_a_clause_not_checked_for_its_signature_is_decided_once_and_names_every_node(tmp_path, monkeypatch):
    # Without --deep the chunk decoding clause is not checked on any array: decided once per signature, every
    # array still named, as a node by node run names them.
    store = tmp_path / "same.zarr"
    _write(store / ".zgroup", json.dumps({"zarr_format": 2}))
    meta = {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i4", "compressor": None, "fill_value": 0}
    for i in range(6):
        _write(store / f"a{i}" / ".zarray", json.dumps({**meta, "filters": None, "order": "C"}))
    calls = []
    decode = run.registry.get("chunks_decode_to_chunk_size")
    counted = decode._replace(facts=lambda node, *a: calls.append(node.path) or decode.facts(node, *a))
    monkeypatch.setitem(primitive_api.REGISTRY, "chunks_decode_to_chunk_size", counted)
    monkeypatch.setattr(run, "_PRIMITIVES", {})
    grouped = {key[1]: (status, unchecked) for key, status, *_, unchecked in results(str(store))}
    assert len(calls) == 1
    status, unchecked = grouped["zarr.chunks.decoded-size"]
    assert status is Status.NOT_CHECKED and [p for p, _ in unchecked] == [f"/a{i}" for i in range(6)]
    node_by_node(monkeypatch)
    assert {key[1]: (status, unchecked) for key, status, *_, unchecked in results(str(store))} == grouped


@pytest.mark.parametrize(
    "text,name,expected",
    [
        pytest.param(" has no sharding_indexed codec", "_index", False, id="inside-a-longer-word"),
        pytest.param(" has no codec; _index is odd", "_index", True, id="a-word-of-its-own"),
        pytest.param("'codes' is odd", "codes", True, id="quoted"),
        pytest.param(" stores codecs", "codes", False, id="prefix-of-no-word"),
        pytest.param("codes", "codes", True, id="the-whole-text"),
        pytest.param(" 2 x 3 chunks", "x", True, id="a-one-letter-name"),
        pytest.param(" xylophone", "x", False, id="a-letter-of-a-word"),
    ],
)
def test_a_reason_names_a_node_only_by_a_word_of_its_own(text, name, expected):
    assert run.names(text, name) is expected


def test_a_reason_holding_the_name_inside_a_longer_word_is_replayed(monkeypatch):
    # "/obs/_index has no sharding_indexed codec": the name `_index` lies inside "sharding_indexed" only, so the
    # reason names the node by its path alone and holds, path replaced, for every node of the signature.
    class Node:
        path, name, unread, members_unread = "/obs/_index", "_index", None, None

    outcome = run.Outcome(Status.NOT_APPLICABLE, reason="/obs/_index has no sharding_indexed codec")
    remembered = run._remembered(outcome, Node())
    assert remembered is not None and remembered.parts == ["", " has no sharding_indexed codec"]
    named = run.Outcome(Status.NOT_APPLICABLE, reason="/obs/_index has no codec; _index is odd")
    assert run._remembered(named, Node()) is None
