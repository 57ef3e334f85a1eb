"""The vocabulary: reports answer for their verdict at a level named as a Level or as the CLI spells it."""

from __future__ import annotations

import pytest
from corpus_paths import CASES

from spec_validate import validate
from spec_validate.model import Level

FAILING = CASES / "h5ad" / "csr-indptr-decreasing.h5ad"  # one MUST failure


@pytest.mark.parametrize("level", [Level.MUST, "MUST", "must", "Should", Level.MAY])
def test_fails_at_takes_a_level_or_its_name(level):
    assert validate(FAILING).fails_at(level)


def test_fails_at_an_unknown_level_name_is_a_value_error():
    with pytest.raises(ValueError):
        validate(FAILING).fails_at("sometimes")
