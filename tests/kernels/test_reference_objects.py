"""reference_objects: the same answer at every block size and grouping as a plain loop over the elements."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS, block_sizes, split

from spec_validate.kernels import reference_objects

REF = {"source": ".", "path": "/a"}


def _elements() -> np.ndarray:
    out = np.empty(40, dtype=object)
    for i in range(40):
        out[i] = [
            REF,  # a reference object
            [i, 1, REF],  # a row holding one
            {"start": i, "ts": REF},  # a row keyed by field name holding one
            {"path": "/a"},  # no source: not a reference object
            "text",
            [i, {"source": "."}],  # a row without one
            None,
        ][i % 7]
    return out


def reference(a: np.ndarray, limit: int) -> tuple[int, list[int]]:
    holders = [i for i, v in enumerate(a) if i % 7 in (0, 1, 2)]
    return len(holders), holders[:limit]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", block_sizes(40))
def test_reference_objects_passes_same_answer_at_every_block_size_and_grouping(size, fold):
    a = _elements()
    got = fold(reference_objects, split(a, size), limit=4)
    assert (got.count, [h.index for h in got.found]) == reference(a, 4)


def test_reference_objects_passes_nothing_found_in_plain_values():
    a = np.array(["x", 3, None, {"path": "/a"}], dtype=object)
    assert reference_objects.summarize(split(a, 4)[0]) == reference_objects.ReferenceObjectsPartial(0, ())


def test_reference_objects_passes_shortens_the_element_it_quotes():
    a = np.empty(1, dtype=object)
    a[0] = {"source": ".", "path": "/" + "p" * 200}
    (holder,) = reference_objects.summarize(split(a, 1)[0]).found
    assert holder.index == 0 and len(holder.text) == 80 and holder.text.endswith("...")
