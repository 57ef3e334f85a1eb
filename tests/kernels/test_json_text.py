"""invalid_json: the same answer at every block size and grouping as a plain loop over the elements."""

from __future__ import annotations

import json

import numpy as np
import pytest
from splitting import FOLDS, block_sizes, split

from spec_validate.kernels import json_text


def _elements() -> np.ndarray:
    values = ['{"a": 1}', "[1, 2", "3", b'{"b": []}', b"\xff\xfe", 7, "", "null", "[" * 100_000, "{]"] * 3
    return np.array(values, dtype=object)


def reference(a: np.ndarray, limit: int):
    bad = []
    for i, v in enumerate(a):
        try:
            json.loads(v.decode("utf-8") if isinstance(v, bytes) else v)
            ok = isinstance(v, (str, bytes))
        except (ValueError, TypeError, RecursionError):
            ok = False
        if not ok:
            bad.append(i)
    return len(bad), bad[:limit]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", block_sizes(30))
def test_invalid_json_passes_same_answer_at_every_block_size_and_grouping(size, fold):
    a = _elements()
    got = fold(json_text, split(a, size), limit=4)
    count, first = reference(a, 4)
    assert (got.count, [f.index for f in got.found]) == (count, first)


def test_invalid_json_passes_reasons_in_words():
    got = json_text.summarize(split(np.array(["[1,", b"\xff", 3, "[" * 100_000], dtype=object), 4)[0], limit=10)
    reasons = [f.reason for f in got.found]
    assert reasons[0].startswith("is not valid JSON (")
    assert reasons[1].startswith("is not UTF-8")
    assert reasons[2].startswith("holds int")
    assert reasons[3] in ("nests too deeply to parse",) or reasons[3].startswith("is not valid JSON")
