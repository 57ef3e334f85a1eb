"""A small synthetic reader pack and measured.yaml for the reader verdict tests, over conformance-corpus files."""

from __future__ import annotations

from pathlib import Path

import yaml

import spec_validate
from spec_validate.engine.readers.facts import store_facts
from spec_validate.nodes.open import open_store

H5AD = Path(__file__).resolve().parents[1] / "conformance-corpus" / "anndata" / "h5ad"
NULLABLE = H5AD / "nullable-strings-on.h5ad"  # has a nullable-string-array
PLAIN = H5AD / "nullable-strings-off.h5ad"  # the same data without one
GZIP = H5AD / "nullable-strings-off-gzip.h5ad"  # ... written through gzip
INDPTR = H5AD / "csr-indptr-decreasing.h5ad"  # fails anndata.csr_matrix.indptr-monotonic
CASE = "conformance-corpus/anndata/h5ad/nullable-strings-on.h5ad"


def vocabulary_of(*paths: Path) -> dict[str, list[str]]:
    """The vocabulary measured cases made of these files would give (what compat/summarise.py records)."""
    words: dict[str, set[str]] = {}
    for path in paths:
        report = spec_validate.validate(path)
        failed = {r.rule.id for r in report.failures} | {v.id for v in report.legacy}
        with open_store(str(path), True) as tree:
            for kind, found in store_facts(tree, failed).vocabulary.items():
                words.setdefault(kind, set()).update(found)
    return {kind: sorted(found) for kind, found in words.items()}


def write_readers(folder: Path, rules: list[dict], vocabulary: dict | None = None, versions: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    measured = {
        "measured": "2026-11-29",
        "readers": {
            "anndata": versions
            or {
                "0.10.9": {"formats": ["anndata-h5ad"]},
                "0.11.4": {"formats": ["anndata-h5ad"]},
                "0.12.0": {"formats": ["anndata-h5ad", "anndata-zarr-v2"]},
                "0.13.4": {"formats": ["anndata-zarr-v2"]},
            }
        },
        "vocabulary": {"anndata-h5ad": vocabulary if vocabulary is not None else vocabulary_of(NULLABLE, PLAIN, INDPTR)},
        "cases": {CASE: {"format": "anndata-h5ad", "source": "conformance-corpus", "not_opened": {"anndata@0.10.9": "refused"}}},
    }
    (folder / "measured.yaml").write_text(yaml.safe_dump(measured))
    (folder / "anndata.yaml").write_text(yaml.safe_dump({"reader": "anndata", "title": "anndata (Python)", "rules": rules}))
    return folder


def rule(**fields) -> dict:
    base = {
        "id": "readers.anndata.nullable-string-array",
        "versions": "<0.11",
        "formats": ["anndata-h5ad"],
        "when": {"node": {"encoding-type": "nullable-string-array"}},
        "fact": "an element encoded as nullable-string-array, which anndata writes from 0.11",
        "outcome": "refused",
        "cases": [CASE],
    }
    return {**base, **fields}
