"""reference_elements: the same answer at every block size and grouping as a plain loop over the elements."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS, block_sizes, split

from spec_validate.kernels import references


def _elements() -> np.ndarray:
    out = []
    for i in range(40):
        if i % 7 == 0:
            out.append({"source": ".", "path": "/a"})
        elif i % 7 == 1:
            out.append({"source": "other.zarr", "path": "/b"})
        elif i % 7 == 2:
            out.append({"path": "/c"})
        elif i % 7 == 3:
            out.append(None)
        else:
            out.append({"source": ".", "path": f"/t{i % 5}"})
    return np.array(out + [None], dtype=object)[:-1]


def reference(a: np.ndarray, limit: int, max_targets: int):
    malformed, foreign, targets = [], [], {}
    for i, v in enumerate(a):
        if not isinstance(v, dict) or not all(isinstance(v.get(k), str) for k in ("source", "path")):
            malformed.append(i)
        elif v["source"] != ".":
            foreign.append(i)
        elif v["path"] not in targets and len(targets) < max_targets:
            targets[v["path"]] = i
    return len(malformed), malformed[:limit], len(foreign), foreign[:limit], list(targets.items())


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", block_sizes(40))
def test_reference_elements_passes_same_answer_at_every_block_size_and_grouping(size, fold):
    a = _elements()
    got = fold(references, split(a, size), limit=3, max_targets=4)
    m, mf, f, ff, targets = reference(a, 3, 4)
    assert (got.malformed, [e.index for e in got.malformed_found]) == (m, mf)
    assert (got.foreign, [e.index for e in got.foreign_found]) == (f, ff)
    assert list(got.targets) == targets
    assert (got.targets_dropped > 0) is True  # six distinct in-store paths, four remembered


def test_reference_elements_passes_words_for_each_kind():
    a = np.array([{"source": "x.zarr", "path": "/p"}, 3, {"source": 1, "path": "/q"}], dtype=object)
    got = references.summarize(split(a, 3)[0])
    assert [e.problem for e in got.malformed_found] == ["is 3, expected a reference object", "has no string source"]
    assert (got.foreign_found[0].source, got.foreign_found[0].path) == ("x.zarr", "/p")


# A compound dataset's rows, as hdmf-zarr stores TimeSeriesReferenceVectorData: (idx_start, count, timeseries),
# with the reference in field 2.
FIELDS = ((2, "timeseries"),)


def _rows() -> np.ndarray:
    out = np.empty(30, dtype=object)
    for i in range(30):
        out[i] = [
            [i, 1, {"source": ".", "path": f"/t{i % 4}"}],
            {"idx_start": i, "count": 1, "timeseries": {"source": "o.zarr", "path": "/x"}},  # keyed by field name
            [i, 1, "text"],  # the reference field holds no reference object
            [i, 1],  # a row of another width
            [i, 1, {"source": ".", "path": "/t0"}],
        ][i % 5]
    return out


def compound_reference(a: np.ndarray, limit: int):
    malformed, foreign, targets = [], [], {}
    for i, row in enumerate(a):
        values = list(row.values()) if isinstance(row, dict) else row
        if len(values) != 3 or not isinstance(values[2], dict):
            malformed.append(i)
        elif values[2]["source"] != ".":
            foreign.append(i)
        elif values[2]["path"] not in targets:
            targets[values[2]["path"]] = i
    return len(malformed), malformed[:limit], len(foreign), foreign[:limit], list(targets.items())


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", block_sizes(30))
def test_reference_elements_passes_compound_rows_at_every_block_size_and_grouping(size, fold):
    a = _rows()
    got = fold(references, split(a, size), limit=3, fields=FIELDS, width=3)
    m, mf, f, ff, targets = compound_reference(a, 3)
    assert (got.malformed, [e.index for e in got.malformed_found]) == (m, mf)
    assert (got.foreign, [e.index for e in got.foreign_found]) == (f, ff)
    assert list(got.targets) == targets
    assert set(got.target_fields) == {"timeseries"} and len(got.target_fields) == len(got.targets)


def test_reference_elements_passes_words_for_compound_rows():
    a = _rows()[2:4]
    got = references.summarize(split(a, 2)[0], fields=FIELDS, width=3)
    assert [e.problem for e in got.malformed_found] == [
        "field 'timeseries' is \"text\", expected a reference object",
        "is [3, 1], expected a row of 3 fields",
    ]
