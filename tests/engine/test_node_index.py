"""The node index (spec_validate/engine/node_index.py): narrowing never changes what a selector selects."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import Arr, scope, tree

from spec_validate.engine.node_index import NodeIndex
from spec_validate.engine.run import find_scopes, subtree
from spec_validate.engine.selectors import candidates, decided_by_kind, matches, narrow, select

SELECTION_CASES = [
    "anndata/h5ad/valid-every-element.h5ad",
    "anndata/zarr-v2/valid-every-element.zarr",
    "anndata/zarr-v3/valid-every-element.zarr",
    "h5seurat/valid-every-element.h5Seurat",
    "hdmf-zarr/zarr-v2/valid-every-element.zarr",
    "zarr/zarr-v2/valid-every-element.zarr",
    "cxg/cxg-0.3.0/valid-sparse-X.cxg",
]


@pytest.mark.parametrize("case", SELECTION_CASES)
def test_node_index_never_drops_a_node_a_rule_selects(case):
    # The index only narrows which nodes are matched: every rule must select exactly what matching every node
    # of the scope would select, in the same order.
    from corpus_paths import CASES

    from spec_validate.engine.loader import builtin_packs
    from spec_validate.nodes.open import open_store

    with open_store(str(CASES.parent / case)) as store:
        checked = 0
        for pack in builtin_packs():
            for where in find_scopes(store, pack):
                members = list(subtree(where.root))
                index = NodeIndex(where, members)
                for r in pack.rules:
                    everything = [n.path for n in members if matches(r.applies_to, n, where)]
                    narrowed = [n.path for n in candidates(r.applies_to, index) if matches(r.applies_to, n, where)]
                    assert narrowed == everything, r.id
                    if decided_by_kind(r.applies_to):  # the engine then does not match at all
                        assert [n.path for n in candidates(r.applies_to, index)] == everything, r.id
                    # What the engine selects: only what the index cannot decide is matched, alternative by alternative.
                    chosen = select(r.applies_to, index, where, lambda s, n, where=where: matches(s, n, where))
                    assert [n.path for n in chosen] == everything, r.id
                    checked += 1
        assert checked > 10


def small_scope():
    """A scope over a small tree (a csr_matrix group, an array, a dataframe group), and its nodes in tree order."""
    t = tree(
        {
            "a": {"@attrs": {"encoding-type": "csr_matrix"}, "b": Arr(np.arange(3)), "c": Arr(np.arange(3))},
            "d": Arr(np.arange(2)),
            "e": {"@attrs": {"encoding-type": "dataframe"}, "x": Arr(np.arange(2))},
        }
    )
    return scope(t), list(subtree(t.root))


@pytest.mark.parametrize(
    "selector,expected",
    [
        pytest.param({"name": ["c", "b"]}, ["/a/b", "/a/c"], id="name-literals-in-tree-order"),
        pytest.param({"name": "?"}, None, id="name-glob-unbounded"),
        pytest.param({"name": "*", "path": "/d"}, ["/d"], id="name-glob-then-path"),
        pytest.param({"encoding-type": ["dataframe", "csr_matrix"]}, ["/a", "/e"], id="encoding-type"),
        pytest.param({"parent": {"path": "/a"}}, ["/a/b", "/a/c"], id="parent-path"),
        pytest.param({"parent": {"encoding-type": "dataframe"}}, ["/e/x"], id="parent-encoding-type"),
        pytest.param({"parent": {"kind": "group"}}, None, id="parent-unbounded"),
        pytest.param({"kind": "array", "root": False}, ["/a/b", "/a/c", "/d", "/e/x"], id="root-false-then-kind"),
        pytest.param({"kind": ["group", "array"]}, ["/", "/a", "/a/b", "/a/c", "/d", "/e", "/e/x"], id="kinds-in-tree-order"),
        pytest.param({"root": False}, None, id="root-false-unbounded"),
        pytest.param({"root": True}, ["/"], id="root"),
        pytest.param({"path": "/a/*"}, ["/a/b", "/a/c"], id="glob-prefix"),
        pytest.param({"path": ["/a/**", "/d"]}, ["/a/b", "/a/c", "/d"], id="glob-and-literal"),
        pytest.param({"path": ["/d", "/a"]}, ["/a", "/d"], id="path-literals-in-tree-order"),
        pytest.param({"any_of": [{"root": True}, {"name": "d"}]}, ["/", "/d"], id="any-of-bounded"),
        pytest.param({"any_of": [{"root": True}, {"kind": "array"}]}, ["/", "/a/b", "/a/c", "/d", "/e/x"], id="any-of-kind"),
        pytest.param({"any_of": [{"root": True}, {"name": "?"}]}, None, id="any-of-unbounded"),
        pytest.param({"path": "/**"}, None, id="glob-without-prefix"),
    ],
)
def test_node_index_narrows_by_each_indexed_condition(selector, expected):
    s, members = small_scope()
    got = narrow(selector, NodeIndex(s, members))
    assert (None if got is None else [n.path for n in got]) == expected


@pytest.mark.parametrize(
    "selector,decided",
    [
        ({"kind": "array"}, True),
        ({"kind": ["group", "array"]}, True),
        ({"any_of": [{"kind": "group"}, {"kind": "array"}]}, True),
        ({"kind": "array", "root": False}, False),
        ({"kind": "array", "any_of": [{"kind": "array"}]}, False),
        ({"any_of": [{"kind": "group"}, {"root": True}]}, False),
        ({}, False),
    ],
)
def test_decided_by_kind_only_for_selectors_of_kinds_alone(selector, decided):
    assert decided_by_kind(selector) is decided


@pytest.mark.parametrize(
    "selector,decided",
    [
        ({"kind": "array"}, True),
        ({"root": True}, True),
        ({"path": ["/d", "/a"]}, True),
        ({"parent": {"path": "/a"}}, True),
        ({"any_of": [{"root": True}, {"path": "/d"}, {"parent": {"path": "/a"}}]}, True),
        ({"any_of": [{"root": True}, {"parent": {"encoding-type": "dataframe"}}]}, False),
        ({"any_of": [{"name": "b"}, {"path": "/a/**"}], "kind": "array"}, False),
        ({"any_of": [{"root": True}, {"kind": "array"}], "has_attrs": "encoding-type"}, False),
        ({"storage_format": "memory", "kind": "array"}, True),
        ({"storage_format": "hdf5", "kind": "array"}, True),
        ({"storage_format": "memory"}, True),
        ({"any_of": [{"root": True}, {"path": "/a"}], "not": {"path": "/a"}}, False),
    ],
)
def test_select_gives_what_matching_every_node_gives(selector, decided):
    s, members = small_scope()
    matched = []
    chosen = select(selector, NodeIndex(s, members), s, lambda sel, n: matched.append(n.path) or matches(sel, n, s))
    assert [n.path for n in chosen] == [n.path for n in members if matches(selector, n, s)]
    assert (matched == []) is decided  # decided by the index alone: nothing matched node by node
