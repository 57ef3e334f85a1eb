"""Clause catalogues: every keyword sentence of a pack's spec files is checked by a rule or says why it cannot be.

A catalogue (`rules/<spec>/catalogue*.yaml`) lists each keyword sentence of its spec files (see spec_sentences.py)
with the rules that check it (`covered`), or `status: not-checkable` / `deferred` and a `reason`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import yaml
from spec_sentences import keyword_sentences, normalised

from validator.engine.loader import load_pack

REPO = Path(__file__).resolve().parents[1]
SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs"
# catalogue file -> the folder of spec files under ../shared/specs it covers
CATALOGUES = {REPO / "rules" / "zarr" / "catalogue-v3.yaml": "zarr-v3"}
STATUSES = ("not-checkable", "deferred")


@cache
def catalogue(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def entries(path: Path) -> list[dict]:
    return catalogue(path)["sentences"]


def spec_text(source: str) -> str:
    return (SPECS / source).read_text(encoding="utf-8")


def needs_specs() -> None:
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")


@pytest.mark.parametrize("path", list(CATALOGUES), ids=[p.name for p in CATALOGUES])
def test_catalogue_passes_every_keyword_sentence_listed(path):
    needs_specs()
    folder = CATALOGUES[path]
    wanted = {
        (f"{folder}/{f.name}", normalised(s.text))
        for f in sorted((SPECS / folder).glob("*.rst"))
        for s in keyword_sentences(f.read_text(encoding="utf-8"))
    }
    listed = [(e["source"], normalised(e["text"])) for e in entries(path)]
    assert len(listed) == len(set(listed)), "a sentence is listed twice"
    assert sorted(wanted - set(listed)) == [], "keyword sentences missing from the catalogue"
    assert sorted(set(listed) - wanted) == [], "catalogue entries that are no keyword sentence of their file"


@pytest.mark.parametrize("path", list(CATALOGUES), ids=[p.name for p in CATALOGUES])
def test_catalogue_passes_every_entry_verbatim_in_its_file(path):
    needs_specs()
    for e in entries(path):
        assert normalised(e["text"]) in normalised(spec_text(e["source"])), e["text"]


@pytest.mark.parametrize("path", list(CATALOGUES), ids=[p.name for p in CATALOGUES])
def test_catalogue_passes_each_entry_covered_or_explained(path):
    pack = load_pack(REPO / catalogue(path)["pack"])
    ids = {r.id for r in pack.rules}
    for e in entries(path):
        if "covered" in e:
            assert "status" not in e and "reason" not in e, e["text"]
            assert e["covered"] and set(e["covered"]) <= ids, (e["text"], sorted(set(e["covered"]) - ids))
        else:
            assert e.get("status") in STATUSES and e.get("reason"), e["text"]


@pytest.mark.parametrize("path", list(CATALOGUES), ids=[p.name for p in CATALOGUES])
def test_catalogue_passes_rule_clauses_that_are_keyword_sentences_listed_as_theirs(path):
    # A rule quoting a whole keyword sentence is named by that sentence's entry.
    needs_specs()
    pack = load_pack(REPO / catalogue(path)["pack"])
    covered = {(e["source"], normalised(e["text"])): set(e.get("covered", ())) for e in entries(path)}
    for rule in pack.rules:
        clause = normalised(rule.clause)
        for (source, text), ids in covered.items():
            if source == rule.spec_source and clause == text:
                assert rule.id in ids, (rule.id, text)
