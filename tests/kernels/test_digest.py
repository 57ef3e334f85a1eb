"""cell_digest: the same digest at every block size, grouping and order of the records; other records differ."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS, block_sizes, split

from spec_validate.kernels import digest

FIELDS = ("obs", "var", "")


def cells(rows, cols, values, value_dtype="<f4") -> np.ndarray:
    a = np.empty(len(rows), dtype=np.dtype({"names": ["obs", "", "var"], "formats": ["<u4", value_dtype, "<u4"]}))
    a["obs"], a["var"], a[""] = rows, cols, values
    return a


ROWS = np.array([0, 0, 1, 2, 2, 2, 3])
COLS = np.array([1, 2, 0, 0, 1, 2, 2])
VALUES = np.array([0.5, 1.5, 2.0, -1.0, 0.0, 7.25, np.nan])
BY_ROW = cells(ROWS, COLS, VALUES)
ORDER = np.lexsort((ROWS, COLS))  # the same cells by column, as Xc holds them
BY_COL = cells(ROWS[ORDER], COLS[ORDER], VALUES[ORDER])


def whole(a: np.ndarray, fields=FIELDS) -> digest.Digest:
    return digest.summarize(split(a, a.size)[0], fields)


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", block_sizes(BY_ROW.size))
def test_cell_digest_passes_same_at_every_block_size_and_grouping(fold, size):
    assert fold(digest, split(BY_ROW, size), fields=FIELDS) == whole(BY_ROW)


def test_cell_digest_passes_record_order_does_not_matter():
    assert whole(BY_ROW) == whole(BY_COL)


def test_cell_digest_passes_values_compare_as_numbers_whatever_their_width():
    assert whole(cells(ROWS, COLS, VALUES, "<f8")) == whole(BY_ROW)


def test_cell_digest_fails_one_value_changed():
    other = BY_COL.copy()
    other[""][0] += 0.25
    assert whole(other).count == whole(BY_ROW).count and whole(other).sums != whole(BY_ROW).sums


def test_cell_digest_fails_row_and_column_swapped():
    swapped = cells(COLS, ROWS, VALUES)
    assert whole(swapped).sums != whole(BY_ROW).sums


def test_cell_digest_passes_plain_arrays_without_fields():
    a = np.arange(20)
    assert whole(a, ()) == whole(a[::-1].copy(), ()) and whole(a, ()).count == 20
