"""The clause catalogues: each matches its spec file (every sentence with an RFC 2119 key word listed, every
statement verbatim) and its pack (every rule listed, every listed rule real), so none can drift from either."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from validator.catalogue import builtin_catalogues, check_against, load, problems
from validator.engine.loader import builtin_packs
from validator.errors import PackError

SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs"
CATALOGUES = {c.name: c for c in builtin_catalogues()}


def test_catalogue_passes_every_builtin_pack_has_one():
    assert set(CATALOGUES) == {p.name for p in builtin_packs()}


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_passes_matches_its_spec_file_and_pack(name):
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")
    assert check_against(CATALOGUES[name], str(SPECS)) == []


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_passes_every_statement_not_covered_says_why(name):
    for s in CATALOGUES[name].statements:
        if s.status == "partial":
            assert s.rules and s.missing, s
        elif s.status in ("not-checkable", "deferred"):
            assert s.reason and not s.rules, s
        else:
            assert s.rules and not s.reason, s


# ------------------------------------------------------------------------------------------------ drift detected
SPEC = """# Spec

## Things

A thing MUST say what it is. A thing is blue.

* Each part SHOULD be small
* Parts may be large
"""


def write_catalogue(tmp_path: Path, statements: list[dict]) -> Path:
    path = tmp_path / "catalogue.yaml"
    doc = {"spec": {"name": "demo", "title": "Demo", "source": "demo.md"}, "statements": statements}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


GOOD = [
    {"section": "Things", "text": "A thing MUST say what it is.", "status": "covered", "rules": ["demo.thing.says"]},
    {
        "section": "Things",
        "text": "Each part SHOULD be small",
        "status": "partial",
        "rules": ["demo.part.small"],
        "missing": "small is not defined",
    },
    {"section": "Things", "text": "Parts may be large", "status": "not-checkable", "reason": "a permission"},
]
RULES = ["demo.thing.says", "demo.part.small"]


def test_problems_passes_good_catalogue(tmp_path):
    assert problems(load(str(write_catalogue(tmp_path, GOOD))), SPEC, RULES) == []


def test_problems_fails_keyword_sentence_in_no_statement(tmp_path):
    found = problems(load(str(write_catalogue(tmp_path, GOOD[:2]))), SPEC, RULES)
    assert found == ["[Things] \u201cParts may be large\u201d: a sentence with an RFC 2119 key word that no statement lists"]


def test_problems_fails_statement_not_verbatim_or_in_another_section(tmp_path):
    edited = [dict(GOOD[0], text="A thing MUST say what it is"), *GOOD[1:]]
    edited[0]["text"] = "A thing MUST tell what it is."
    moved = dict(GOOD[2], section="Spec")
    found = problems(load(str(write_catalogue(tmp_path, [edited[0], GOOD[1], moved]))), SPEC, RULES)
    assert any("A thing MUST tell what it is." in p and "not found verbatim" in p for p in found)
    assert any("Parts may be large" in p and "not found verbatim in a section \u201cSpec\u201d" in p for p in found)


def test_problems_fails_overlapping_statements(tmp_path):
    twice = [*GOOD, {"section": "Things", "text": "say what it is. A thing is blue.", "status": "not-checkable", "reason": "x"}]
    found = problems(load(str(write_catalogue(tmp_path, twice))), SPEC, RULES)
    assert any("overlaps" in p for p in found)


def test_problems_fails_rule_unlisted_or_unknown(tmp_path):
    catalogue = load(str(write_catalogue(tmp_path, GOOD)))
    found = problems(catalogue, None, [*RULES, "demo.thing.new"])
    assert found == ["rule demo.thing.new is listed by no statement: add it to the statement(s) it checks"]
    found = problems(catalogue, None, ["demo.thing.says"])
    assert found == [
        "[Things] \u201cEach part SHOULD be small\u201d: lists demo.part.small, which is not a rule of a built-in pack"
    ]
    assert problems(catalogue, None, ["demo.thing.says"], other_rules=["demo.part.small"]) == []


@pytest.mark.parametrize(
    ("statement", "field"),
    [
        pytest.param({"section": "S", "text": "t", "status": "covered"}, "statements.0", id="covered-without-rules"),
        pytest.param(
            {"section": "S", "text": "t", "status": "partial", "rules": ["a.b.c"]}, "statements.0", id="partial-without-missing"
        ),
        pytest.param({"section": "S", "text": "t", "status": "deferred"}, "statements.0", id="deferred-without-reason"),
        pytest.param(
            {"section": "S", "text": "t", "status": "not-checkable", "reason": "r", "rules": ["a.b.c"]},
            "statements.0",
            id="not-checkable-with-rules",
        ),
        pytest.param({"section": "S", "text": "t", "status": "maybe", "reason": "r"}, "statements.0.status", id="unknown-status"),
        pytest.param(
            {"section": "S", "text": "t", "status": "covered", "rules": ["a"], "colour": "red"}, "statements.0", id="unknown-key"
        ),
    ],
)
def test_load_fails_invalid_statement_naming_file_and_field(tmp_path, statement, field):
    path = write_catalogue(tmp_path, [statement])
    with pytest.raises(PackError) as excinfo:
        load(str(path))
    assert str(path) in str(excinfo.value) and f": {field}:" in str(excinfo.value)
