"""Selectors (spec_validate/engine/selectors.py): path globs, names, parent, any_of, not, encoding-version specifiers,
storage_format."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import scope, tree

from spec_validate.engine.scope import PackScope
from spec_validate.engine.selectors import describe, matches, path_matches


@pytest.mark.parametrize(
    "path,pattern,expected",
    [
        pytest.param("/obs", "/obs", True, id="path-passes-exact"),
        pytest.param("/layers/counts", "/layers/*", True, id="path-passes-star-one-segment"),
        pytest.param("/layers/a/b", "/layers/*", False, id="path-fails-star-not-two-segments"),
        pytest.param("/uns/a/b/c", "/uns/**", True, id="path-passes-double-star-many-segments"),
        pytest.param("/uns", "/uns/**", False, id="path-fails-double-star-needs-one-segment"),
        pytest.param("/obsx", "/obs", False, id="path-fails-longer-name"),
        pytest.param("/a.b", "/a.b", True, id="path-passes-dot-literal"),
        pytest.param("/axb", "/a.b", False, id="path-fails-dot-is-not-wildcard"),
    ],
)
def test_path_matches(path, pattern, expected):
    assert path_matches(path, pattern) is expected


T = {
    "@attrs": {"encoding-type": "anndata", "encoding-version": "0.1.0"},
    "X": {"@attrs": {"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": [2, 2]}, "indptr": np.arange(3)},
    "obs": {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.2.0"}, "col": np.arange(2)},
    "raw": {"@attrs": {"encoding-version": "banana"}},
}


@pytest.mark.parametrize(
    "path,selector,expected",
    [
        pytest.param("/X/indptr", {"kind": "array", "name": "indptr"}, True, id="kind-name-passes"),
        pytest.param("/X/indptr", {"kind": "group"}, False, id="kind-fails"),
        pytest.param("/X/indptr", {"name": "ind*"}, True, id="name-passes-glob"),
        pytest.param("/X/indptr", {"parent": {"encoding-type": ["csr_matrix", "csc_matrix"]}}, True, id="parent-passes"),
        pytest.param("/obs/col", {"parent": {"encoding-type": "csr_matrix"}}, False, id="parent-fails"),
        pytest.param("/", {"parent": {"kind": "group"}}, False, id="parent-fails-at-root"),
        pytest.param("/X", {"encoding-version": "==0.1.0"}, True, id="encoding-version-passes-equal"),
        pytest.param("/obs", {"encoding-version": ">=0.1,<0.3"}, True, id="encoding-version-passes-range"),
        pytest.param("/obs", {"encoding-version": "==0.1.0"}, False, id="encoding-version-fails-other"),
        pytest.param("/raw", {"encoding-version": ">=0"}, False, id="encoding-version-fails-not-a-version"),
        pytest.param("/X/indptr", {"encoding-version": ">=0"}, False, id="encoding-version-fails-absent"),
        pytest.param("/obs", {"any_of": [{"path": "/X"}, {"path": "/obs"}]}, True, id="any_of-passes-second"),
        pytest.param("/raw", {"any_of": [{"path": "/X"}, {"path": "/obs"}]}, False, id="any_of-fails-none"),
        pytest.param("/obs", {"not": {"path": "/obs"}}, False, id="not-fails"),
        pytest.param("/raw", {"not": {"path": "/obs"}}, True, id="not-passes"),
        pytest.param("/X", {"storage_format": "zarr-*"}, True, id="storage_format-passes-glob"),
        pytest.param("/X", {"storage_format": "hdf5"}, False, id="storage_format-fails"),
        pytest.param("/", {"root": True}, True, id="root-passes"),
        pytest.param("/X", {"has_attrs": ["shape"], "lacks_attrs": "ordered"}, True, id="has-lacks-attrs-passes"),
        pytest.param("/X", {"attrs": {"shape": [2, 3]}}, False, id="attrs-fails-value"),
        pytest.param("/X", {"has_children": "indptr"}, True, id="has_children-passes"),
        pytest.param("/X", {}, True, id="empty-selector-passes"),
    ],
)
def test_matches(path, selector, expected):
    t = tree(T, format="zarr-v2")
    assert matches(selector, t.get(path), scope(t)) is expected


def test_matches_passes_paths_relative_to_scope_root():
    from memory_tree import pack

    t = tree({"mod": {"rna": {"X": np.arange(2)}}})
    s = PackScope(pack(), t.get("/mod/rna"))
    assert matches({"path": "/X"}, t.get("/mod/rna/X"), s)


def test_describe_passes_nested_selector_in_words():
    text = describe({"kind": "array", "parent": {"encoding-type": ["csr_matrix", "csc_matrix"]}})
    assert text == "kind array, whose parent is (encoding-type csr_matrix or csc_matrix)"


def test_describe_passes_path_lists_root_and_attributes_in_words():
    text = describe({"any_of": [{"root": True}, {"path": ["/obs", "/var", "/X"]}], "attrs": {"s3class": "logical"}})
    assert text == 'any of: (the scope root) | (path /obs, /var or /X), attribute s3class = "logical"'
    assert "//" not in describe({"path": ["/obs", "/var"], "root": False})


VERSIONS = [
    "0.1.0",
    "0.1",
    "0.2.0",
    "0.10.0",
    "1",
    "1.0.0.0",
    "0.1.0rc1",
    "0.1.0.post1",
    "0.1.0+local",
    "0.1.0.dev3",
    "v0.1.0",
    "banana",
    "",
]
SPECIFIERS = [
    "==0.1.0",
    "==0.1",
    "!=0.1.0",
    ">=0.1.0",
    ">0.1.0",
    "<0.2",
    "<=0.2.0",
    ">=0.1.0,<0.3",
    " >= 0.1 , < 1 ",
    "==0.1.*",
    "~=0.1",
    "===0.1.0",
    ">=0.1.0rc1",
    "",
    "nonsense",
]


@pytest.mark.parametrize("spec", SPECIFIERS)
@pytest.mark.parametrize("value", VERSIONS)
def test_version_in_passes_same_answer_as_packaging(value, spec):
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    from spec_validate.engine.selectors import _version_in

    try:
        expected = Version(value) in SpecifierSet(spec)
    except (InvalidVersion, InvalidSpecifier):
        expected = False
    assert _version_in(value, spec) is expected


def test_every_condition_has_a_schema_a_test_and_a_place_in_the_matching_order():
    from spec_validate.engine.selectors import _COST, _NARROWING, CONDITIONS, SELECTOR_SCHEMA

    assert set(SELECTOR_SCHEMA["properties"]) == set(CONDITIONS) == set(_COST)
    assert all(CONDITIONS[key].narrow is not None for key in _NARROWING)
    assert {key for key, c in CONDITIONS.items() if c.narrow is not None} == set(_NARROWING)


def test_matches_fails_a_condition_on_attributes_that_cannot_be_read():
    # An unreadable `.zattrs` makes no selector on attributes hold (and raises nothing): the tree reports the key
    # itself, and no rule claims the node lacks what could not be read.
    from memory_tree import tree

    from spec_validate.engine.selectors import matches
    from spec_validate.errors import NodeError

    t = tree({"a": {"@attrs": {"encoding-type": "dataframe"}}})
    node = t.get("/a")

    class Unreadable(type(node)):
        @property
        def attrs(self):
            raise NodeError("/a: a/.zattrs is stored but cannot be read")

    node.__class__ = Unreadable
    scope = PackScope(None, t.root)
    assert matches({"name": "a"}, node, scope)
    assert not matches({"encoding-type": "dataframe"}, node, scope)


def test_parent_condition_matches_one_parent_once_per_selector_and_scope_root(monkeypatch):
    from spec_validate.engine import selectors

    wide = tree({"obs": {"@attrs": {"encoding-type": "dataframe"}, **{f"c{i}": np.arange(2) for i in range(50)}}})
    selector = {"parent": {"encoding-type": "dataframe"}}
    calls = []
    real = selectors.matches
    monkeypatch.setattr(selectors, "matches", lambda s, n, sc: calls.append(n.path) or real(s, n, sc))
    whole = scope(wide)
    assert all(matches(selector, wide.get(f"/obs/c{i}"), whole) for i in range(50))
    assert calls.count("/obs") == 1
    # Another scope root asks again: paths in selectors are relative to it.
    by_path = {"parent": {"path": "/"}}
    assert not matches(by_path, wide.get("/obs/c0"), whole)
    assert matches(by_path, wide.get("/obs/c0"), PackScope(whole.pack, wide.get("/obs")))
    asked = calls.count("/obs")
    other = {"parent": {"encoding-type": "dataframe"}}  # an equal selector, another object: asked on its own
    assert matches(other, wide.get("/obs/c1"), whole) and matches(other, wide.get("/obs/c2"), whole)
    assert calls.count("/obs") == asked + 1


def _wide_store() -> dict:
    """An AnnData-like store whose dataframes hold many alike columns: names that selectors name literally (codes,
    values, mask, _index) beside names they do not, under parents of several encodings, and a nested uns."""
    column = {"encoding-type": "array", "encoding-version": "0.2.0"}
    categorical = {"encoding-type": "categorical", "encoding-version": "0.2.0", "ordered": False}
    nullable = {"encoding-type": "nullable-integer", "encoding-version": "0.1.0"}
    frame = {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index"}}
    for i in range(40):
        frame[f"c{i}"] = np.arange(3) if i % 3 else {"@attrs": dict(column)} | {"codes": np.arange(3)}
        frame[f"s{i}"] = {"@attrs": dict(categorical), "codes": np.arange(3), "categories": np.arange(2)}
        frame[f"n{i}"] = {"@attrs": dict(nullable), "values": np.arange(3), "mask": np.zeros(3, bool)}
    frame["_index"] = np.arange(3)
    frame["codes"] = np.arange(3)  # a column whose name a selector names
    uns = {"@attrs": {"encoding-type": "dict", "encoding-version": "0.1.0"}}
    uns["inner"] = {"@attrs": {"encoding-type": "dataframe", "encoding-version": "0.2.0"}, "codes": np.arange(3)}
    uns["inner"] |= {f"u{i}": np.arange(3) for i in range(20)}
    return {
        "@attrs": {"encoding-type": "anndata", "encoding-version": "0.1.0"},
        "obs": frame,
        "var": {k: v for k, v in frame.items()},
        "uns": uns,
        "obsm": {"@attrs": {"encoding-type": "dict", "encoding-version": "0.1.0"}, "codes": np.arange(3)},
    }


def test_selecting_alike_siblings_once_selects_what_matching_each_node_selects(monkeypatch):
    """Where only a node's parent, signature and the names a selector names tell siblings apart, a selector is
    matched once for each such group (`selectors.matching`): every selector of the built-in packs then selects
    exactly the nodes it selects matched node by node."""
    from memory_tree import MemoryNode

    from spec_validate.engine import selectors
    from spec_validate.engine.loader import builtin_packs
    from spec_validate.engine.node_index import NodeIndex
    from spec_validate.nodes.base import walk

    # The memory tree's nodes tell their signature: kind and attributes, as the real backends' include them.
    monkeypatch.setattr(MemoryNode, "signature", property(lambda n: (n.kind, repr(sorted(n.attrs.items())))))
    t = tree(_wide_store())
    sc = scope(t)
    nodes = list(walk(t.root))
    all_selectors = {selectors.selector_key(r.applies_to): r.applies_to for p in builtin_packs() for r in p.rules}
    # Selectors whose names and paths no index narrows by: alike siblings of other names are matched as one.
    extra = [
        {"kind": "array", "not": {"name": "codes"}},
        {"kind": "array", "not": {"name": ["values", "mask"]}, "parent": {"kind": "group"}},
        {"kind": "array", "not": {"path": ["/obs/codes", "/uns/inner/codes", "/obs/_index"]}},
        {"not": {"path": "/uns/**"}, "kind": "array"},
        {"kind": "array", "any_of": [{"not": {"path": "/obs/**"}}, {"name": "c1"}]},
        {"kind": "array", "not": {"path": "/obs/c*"}},
        {"kind": "array", "not": {"name": "s*"}},
    ]
    grouped_somewhere = 0
    for selector in [*all_selectors.values(), *extra]:

        def match(s, n):
            return matches(s, n, sc)

        chosen = selectors.select(selector, NodeIndex(sc, nodes), sc, match, {})
        with monkeypatch.context() as plain:
            plain.setattr(selectors, "telling_names", lambda s: None)
            alone = selectors.select(selector, NodeIndex(sc, nodes), sc, match, {})
        assert [n.path for n in chosen] == [n.path for n in alone], selectors.selector_key(selector)
        grouped_somewhere += selectors.telling_names(selector) is not None
    assert grouped_somewhere > 50  # most selectors are matched by group
