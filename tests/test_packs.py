"""The rule packs: each loads, quotes its spec verbatim, and is exercised by the conformance corpus."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

import spec_validate
from spec_validate.engine.loader import load_pack
from spec_validate.errors import PackError
from spec_validate.model import Status

REPO = Path(__file__).resolve().parents[1]
PACK_FILES = sorted(
    p for p in (REPO / "rules").glob("*/*.yaml") if not p.name.startswith("catalogue") and p.parent.name != "readers"
)  # catalogues: test_catalogue.py; reader packs: tests/engine/test_readers.py
SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs"
CORPUS = REPO / "conformance-corpus"


def normalised(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("pack_file", PACK_FILES, ids=[p.name for p in PACK_FILES])
def test_pack_loads(pack_file):
    pack = load_pack(pack_file)
    assert pack.rules


RULES = [(p, r) for p in PACK_FILES for r in load_pack(p).rules]


@pytest.mark.parametrize(("pack_file", "rule"), RULES, ids=[r.id for _, r in RULES])
def test_clause_is_verbatim_in_spec(pack_file, rule):
    # A rule names its own spec file (`source:`) when the pack spans several; else the pack's spec.source holds.
    spec = SPECS / rule.spec_source
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")
    assert spec.is_file(), f"{pack_file.name}: {rule.id}: spec source {rule.spec_source!r} is not in {SPECS}"
    assert normalised(rule.clause) in normalised(spec.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------ corpus coverage
@lru_cache(maxsize=1)
def corpus_cases() -> tuple[dict, ...]:
    cases = []
    for manifest in sorted(CORPUS.glob("*/manifest.yaml")):
        cases.extend(yaml.safe_load(manifest.read_text(encoding="utf-8")) or [])
    return tuple(cases)


@lru_cache(maxsize=1)
def passed_in_valid_cases() -> frozenset[str]:
    passed = set()
    for case in corpus_cases():
        if not case["fails"] and not case.get("problems"):  # a case with unreadable parts is no valid case
            report = spec_validate.validate(CORPUS / case["file"], deep=case.get("deep", False))
            passed |= {r.rule.id for r in report.results if r.status is Status.PASSED}
    return frozenset(passed)


# Packs whose every rule the conformance corpus must exercise.
COVERED_PACKS = ("anndata", "zarr", "zarr3", "h5seurat", "cxg", "hdmf-zarr", "ome-zarr04", "ome-zarr05")
COVERED_RULES = [r for p, r in RULES if r.pack in COVERED_PACKS]


@pytest.mark.parametrize("rule", COVERED_RULES, ids=[r.id for r in COVERED_RULES])
def test_rule_fails_in_some_case(rule):
    # A notice rule (the pickle codec) never fails: some case must report it as a notice instead.
    key = "notices" if rule.notice else "fails"
    assert any(rule.id in case.get(key, []) for case in corpus_cases()), f"no corpus case {key} {rule.id}"


LEGACY_PACKS = [p for p in (load_pack(f) for f in PACK_FILES) if p.legacy is not None]


@pytest.mark.parametrize("pack", LEGACY_PACKS, ids=[p.name for p in LEGACY_PACKS])
def test_legacy_clause_is_verbatim_and_some_case_is_legacy(pack):
    if SPECS.is_dir():
        assert normalised(pack.legacy.clause) in normalised((SPECS / pack.spec_source).read_text(encoding="utf-8"))
    assert any(pack.legacy_id in case.get("legacy", []) for case in corpus_cases()), f"no corpus case is {pack.legacy_id}"


NOTED_PACKS = [p for p in (load_pack(f) for f in PACK_FILES) if p.notes]


@pytest.mark.parametrize("pack", NOTED_PACKS, ids=[p.name for p in NOTED_PACKS])
def test_spec_notes_name_rules_of_their_pack(pack):
    ids = {r.id for r in pack.rules}
    for note in pack.notes:
        assert set(note.rules) <= ids, f"{note.id} names {sorted(set(note.rules) - ids)}"


@pytest.mark.parametrize("rule", COVERED_RULES, ids=[r.id for r in COVERED_RULES])
def test_rule_passes_in_some_valid_case(rule):
    assert rule.id in passed_in_valid_cases(), f"{rule.id} is never passed (only not_applicable) in a valid case"


# ------------------------------------------------------------------------------------------ broken packs
GOOD_RULE = {
    "id": "demo.thing.encoding",
    "level": "MUST",
    "clause": "A thing MUST say what it is.",
    "section": "Things",
    "spec_version": "0.1.0",
    "applies_to": {"kind": "group"},
    "check": [{"attr_present": {"key": "encoding-type"}}],
}


def write_pack(tmp_path: Path, rule: dict) -> Path:
    doc = {"spec": {"name": "demo", "title": "Demo", "version": "0.1.0", "source": "demo.md"}, "rules": [rule]}
    path = tmp_path / "demo-0.1.0.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_good_demo_pack_loads(tmp_path):
    assert [r.id for r in load_pack(write_pack(tmp_path, GOOD_RULE)).rules] == ["demo.thing.encoding"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"check": [{"attr_presnt": {"key": "x"}}]}, "attr_presnt", id="unknown-primitive"),
        pytest.param({"check": [{"attr_type": {"key": "x", "typ": "string"}}]}, "typ", id="unknown-option"),
        pytest.param({"clause": None}, "clause", id="missing-clause"),
    ],
)
def test_broken_pack_raises_pack_error_naming_file_rule_and_field(tmp_path, change, field):
    rule = {**GOOD_RULE, **change}
    rule = {k: v for k, v in rule.items() if v is not None}
    path = write_pack(tmp_path, rule)
    with pytest.raises(PackError) as excinfo:
        load_pack(path)
    message = str(excinfo.value)
    assert str(path) in message
    assert "demo.thing.encoding" in message
    assert re.search(re.escape(field), message), message


DERIVED_RULES = [r for _, r in RULES if r.derived and not r.notice]


@pytest.mark.parametrize("rule", DERIVED_RULES, ids=[r.id for r in DERIVED_RULES])
def test_derived_rule_rationale_says_why_its_level(rule):
    # docs/packs.md, "The level of a derived rule": MUST only where a conforming reader cannot read the data
    # correctly otherwise, SHOULD where the departure is harmless to the reference reader; the rationale says which.
    expected = {
        "MUST": "a conforming reader cannot read the data correctly otherwise",
        "SHOULD": "the departure is harmless to the reference reader",
    }[rule.spec_level.value]
    assert f"Level {rule.spec_level.value} (derived-rule policy): {expected}" in (rule.rationale or "")


UNREAD_KEY_RULES = [r for _, r in RULES if r.notice == "unread-key"]


@pytest.mark.parametrize("rule", UNREAD_KEY_RULES, ids=[r.id for r in UNREAD_KEY_RULES])
def test_unread_key_notice_says_no_sentence_forbids_it(rule):
    # docs/packs.md, "The level of a derived rule": a key no sentence forbids is a notice, never a failure.
    assert rule.derived and "Notice (derived-rule policy): no sentence forbids it" in (rule.rationale or "")
