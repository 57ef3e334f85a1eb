"""compat/summarise.py: measured.yaml from a small synthetic matrix (versions, vocabulary, cases; held-back left out)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("summarise", REPO / "compat" / "summarise.py")
summarise = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summarise)

ON = "conformance-corpus/anndata/h5ad/nullable-strings-on.h5ad"
GZIP = "conformance-corpus/anndata/h5ad/nullable-strings-off-gzip.h5ad"
HELD = "compat/heldback/files/none.h5ad"
MATRIX = {
    "measured": "2026-11-29",
    "readers": {
        "anndata@0.10.9": {"reader": "anndata", "version": "0.10.9", "python": "3.11.7", "formats": ["anndata-h5ad"]},
        "anndata@0.11.4": {"reader": "anndata", "version": "0.11.4", "python": "3.11.7", "formats": ["anndata-h5ad"]},
    },
    "cases": {
        ON: {"format": "anndata-h5ad", "source": "conformance-corpus"},
        GZIP: {"format": "anndata-h5ad", "source": "conformance-corpus"},
        HELD: {"format": "anndata-h5ad", "source": "held-back"},
    },
    "results": {
        "anndata@0.10.9": {
            ON: {"outcome": "refused", "error": "KeyError"},
            GZIP: {"outcome": "opened"},
            HELD: {"outcome": "crashed"},
        },
        "anndata@0.11.4": {ON: {"outcome": "opened"}, GZIP: {"outcome": "opened"}, HELD: {"outcome": "opened"}},
    },
}


def test_summarise_versions_cases_and_vocabulary():
    doc, missing = summarise.summarise(MATRIX)
    assert doc["readers"] == {
        "anndata": {
            "0.10.9": {"formats": ["anndata-h5ad"], "python": "3.11.7"},
            "0.11.4": {"formats": ["anndata-h5ad"], "python": "3.11.7"},
        }
    }
    assert doc["cases"][ON] == {
        "format": "anndata-h5ad",
        "source": "conformance-corpus",
        "not_opened": {"anndata@0.10.9": "refused"},
    }
    assert "not_opened" not in doc["cases"][GZIP]
    words = doc["vocabulary"]["anndata-h5ad"]
    assert "nullable-string-array 0.1.0" in words["encodings"] and words["codecs"] == ["gzip"] and words["storage"] == ["hdf5"]
    assert HELD not in doc["cases"] and missing == []  # held back: not summarised at all


def test_summarise_writes_a_measured_yaml_the_loader_accepts(tmp_path):
    import json

    from spec_validate.engine.readers.packs import load_readers

    (tmp_path / "matrix.json").write_text(json.dumps(MATRIX))
    assert summarise.main(["--matrix", str(tmp_path / "matrix.json"), "--out", str(tmp_path / "r" / "measured.yaml")]) == 0
    measured = load_readers(tmp_path / "r").measured
    assert measured.readers["anndata"]["0.11.4"] == ("anndata-h5ad",)
    assert set(measured.cases) == {ON, GZIP}


def test_summarise_committed_measured_yaml_is_current():
    # Regenerate with `python compat/summarise.py` whenever compat/matrix.json changes.
    import yaml

    matrix_file, measured_file = REPO / "compat" / "matrix.json", REPO / "rules" / "readers" / "measured.yaml"
    if not matrix_file.is_file():
        pytest.skip("no compat/matrix.json")
    import json

    expected, _ = summarise.summarise(json.loads(matrix_file.read_text()), with_vocabulary=False)
    committed = yaml.safe_load(measured_file.read_text())
    assert {k: committed[k] for k in ("measured", "readers", "cases")} == {
        k: expected[k] for k in ("measured", "readers", "cases")
    }
