"""--select / --ignore / --extend-select: segment-wise prefixes that compose, most specific wins."""

from __future__ import annotations

import pytest

from spec_validate.engine.rule_selection import Selection, prefix_matches, unknown_prefixes


@pytest.mark.parametrize(
    "prefix,rule_id,expected",
    [
        pytest.param(
            "anndata.csr_matrix", "anndata.csr_matrix.indptr-monotonic", True, id="prefix_matches-passes-segment-prefix"
        ),
        pytest.param("anndata.csr_matrix", "anndata.csr_matrixx.a", False, id="prefix_matches-fails-partial-segment"),
        pytest.param("anndata", "anndata.x.y", True, id="prefix_matches-passes-pack-name"),
        pytest.param("anndata.x.y", "anndata.x.y", True, id="prefix_matches-passes-exact-id"),
        pytest.param("anndata.x.y.z", "anndata.x.y", False, id="prefix_matches-fails-longer-than-id"),
        pytest.param("ann", "anndata.x", False, id="prefix_matches-fails-string-prefix"),
    ],
)
def test_prefix_matches(prefix, rule_id, expected):
    assert prefix_matches(prefix, rule_id) is expected


IDS = ["a.b.c", "a.b.d", "a.e.f", "z.y.x"]


@pytest.mark.parametrize(
    "selection,expected",
    [
        pytest.param(Selection(), IDS, id="selection-passes-empty-selects-all"),
        pytest.param(Selection(select=("a.b",)), ["a.b.c", "a.b.d"], id="selection-passes-select-prefix"),
        pytest.param(Selection(ignore=("a.b",)), ["a.e.f", "z.y.x"], id="selection-passes-ignore-prefix"),
        pytest.param(
            Selection(select=("a",), ignore=("a.b.c",)), ["a.b.d", "a.e.f"], id="selection-passes-select-and-ignore-compose"
        ),
        pytest.param(Selection(select=("a.b.c",), ignore=("a.b",)), ["a.b.c"], id="selection-passes-more-specific-select-wins"),
        pytest.param(Selection(select=("a.b",), ignore=("a.b.c",)), ["a.b.d"], id="selection-passes-more-specific-ignore-wins"),
        pytest.param(
            Selection(select=("a.b",), extend_select=("z",)),
            ["a.b.c", "a.b.d", "z.y.x"],
            id="selection-passes-extend-select-adds",
        ),
    ],
)
def test_selection_includes(selection, expected):
    assert [i for i in IDS if selection.includes(i)] == expected


def test_selection_passes_redirects_old_ids():
    sel = Selection(select=("old.id",)).redirected({"old.id": "a.b.c"})
    assert [i for i in IDS if sel.includes(i)] == ["a.b.c"]


def test_unknown_prefixes_fails_on_partial_segment():
    assert unknown_prefixes(["a.b", "a.bb", "q"], IDS) == ["a.bb", "q"]
