"""Scope: references to other nodes, named dimensions and logical shapes, relative to the scope root."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import pack, scope, tree

from spec_validate.engine.scope import PackScope
from spec_validate.model import NotApplicable

T = {
    "obs": {"@attrs": {"encoding-type": "dataframe", "_index": "_index"}, "_index": np.arange(5)},
    "var": {"@attrs": {"encoding-type": "dataframe", "_index": "_index"}, "_index": np.arange(3)},
    "X": {"@attrs": {"encoding-type": "csr_matrix", "shape": [5, 3], "name": "x"}, "indptr": np.arange(6)},
    "cat": {"@attrs": {"encoding-type": "categorical"}, "codes": np.zeros(5, int)},
    "tables": {"indptr": np.arange(4)},  # a node named like the checked node (anndata 0.7's __categories/<column>)
}


@pytest.mark.parametrize(
    "ref,expected",
    [
        pytest.param(7, 7, id="literal"),
        pytest.param({"dimension": "n_obs"}, 5, id="dimension"),
        pytest.param({"dimension": "n_var", "plus": 1}, 4, id="dimension-plus"),
        pytest.param({"node": "..", "attr": "shape", "index": 0}, 5, id="attr-index"),
        pytest.param({"node": "..", "dim": 1}, 3, id="logical-dim-of-sparse-group"),
        pytest.param({"node": "/cat", "length": True}, 5, id="categorical-length-from-codes"),
        pytest.param({"node": ".", "length": True}, 6, id="own-length"),
        pytest.param({"node": "..", "attr": ["h5sparse_shape", "shape"], "index": 1}, 3, id="attr-list-first-present"),
        pytest.param({"node": "/tables/{name}", "length": True}, 4, id="node-named-like-the-checked-node"),
    ],
)
def test_scope_value_passes(ref, expected):
    t = tree(T)
    assert scope(t).value(t.get("/X/indptr"), ref) == expected


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param({"dimension": "n_cells"}, id="unknown-dimension"),
        pytest.param({"node": "../nope", "length": True}, id="missing-node"),
        pytest.param({"node": "..", "attr": "missing"}, id="missing-attr"),
        pytest.param({"node": "..", "attr": "shape", "index": 9}, id="missing-index"),
        pytest.param({"node": "..", "attr": "name", "plus": 1}, id="plus-on-string"),
        pytest.param({"node": "..", "dim": 4}, id="missing-dim"),
        pytest.param({"node": "..", "attr": ["h5sparse_shape", "dims"]}, id="attr-list-none-present"),
        pytest.param({"node": "/cat/{name}", "length": True}, id="no-node-named-like-the-checked-node"),
    ],
)
def test_scope_value_fails_not_applicable(ref):
    t = tree(T)
    with pytest.raises(NotApplicable):
        scope(t).value(t.get("/X/indptr"), ref)


def test_scope_passes_absolute_paths_from_scope_root():
    t = tree({"mod": {"rna": T}})
    s = PackScope(
        pack(dimensions={"n_obs": {"node": "/obs", "length": True}}, shapes={"dataframe": {"child_from_attr": "_index"}}),
        t.get("/mod/rna"),
    )
    assert s.node(t.get("/mod/rna/X"), "/obs").path == "/mod/rna/obs"
    assert s.dimension("n_obs", t.get("/mod/rna/X")) == 5
    assert s.relative_path(t.get("/mod/rna/X/indptr")) == "/X/indptr"
    assert s.relative_path(t.get("/mod/rna")) == "/"
