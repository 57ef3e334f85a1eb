"""The clause catalogues: each matches its spec files (every sentence with a key word listed, every statement
verbatim) and its pack (every rule listed, every listed rule real), so none can drift from either."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from spec_validate.catalogue import builtin_catalogue_files, builtin_catalogues, check_against, load, problems
from spec_validate.engine.loader import builtin_packs
from spec_validate.errors import PackError
from spec_validate.spec_text import keyword_sentences, kind_of, normalised, read_units

SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs"
CATALOGUES = {c.name: c for c in builtin_catalogues()}
PACKS = {p.name: p for p in builtin_packs()}


def test_catalogue_passes_every_builtin_pack_has_one_in_its_folder():
    # Found per pack, not per folder: rules/zarr/ holds zarr-2.yaml (catalogue.yaml) and zarr-3.yaml (catalogue-3.yaml).
    assert len(builtin_catalogue_files()) == len(CATALOGUES) == len(PACKS)
    assert set(CATALOGUES) == set(PACKS)
    for name, c in CATALOGUES.items():
        assert Path(c.path).parent == Path(PACKS[name].path).parent, name


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_passes_matches_its_spec_file_and_pack(name):
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")
    assert check_against(CATALOGUES[name], str(SPECS)) == []


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_passes_sources_hold_every_file_its_pack_quotes(name):
    c = CATALOGUES[name]
    assert {r.spec_source for r in PACKS[name].rules} <= set(c.sources)
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")
    for folder in {Path(s).parent for s in c.sources if Path(s).parent != Path(".")}:
        # a spec that is a folder of files (zarr-v3/*.rst): each file of the folder is a source
        suffixes = {Path(s).suffix for s in c.sources}
        on_disk = {f"{folder}/{f.name}" for f in (SPECS / folder).iterdir() if f.suffix in suffixes}
        assert on_disk <= set(c.sources), sorted(on_disk - set(c.sources))


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_passes_rule_quoting_a_whole_statement_is_listed_by_it(name):
    # A rule whose clause is a statement word for word is named by that statement (or by one of the same words).
    c = CATALOGUES[name]
    for rule in PACKS[name].rules:
        same = [s for s in c.statements if s.source == rule.spec_source and s.text == normalised(rule.clause)]
        assert not same or any(rule.id in s.rules for s in same), (rule.id, same[0].text)


# A catalogue naming `derived-rules` lists keyword sentences only (zarr3's): there each statement is one whole
# keyword sentence of its file, not a part of one nor a requirement stated without a key word.
KEYWORD_SENTENCES_ONLY = sorted(name for name, c in CATALOGUES.items() if c.derived_rules)


def test_catalogue_passes_zarr3_lists_keyword_sentences_only():
    assert "zarr3" in KEYWORD_SENTENCES_ONLY


@pytest.mark.parametrize("name", KEYWORD_SENTENCES_ONLY)
def test_catalogue_passes_statements_are_exactly_the_keyword_sentences_of_its_files(name):
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")
    c = CATALOGUES[name]
    wanted: Counter[tuple[str, str]] = Counter()
    for source in c.sources:
        text = (SPECS / source).read_text(encoding="utf-8")
        units = read_units(text, kind_of(source), c.headings if kind_of(source) == "txt" else ())
        wanted.update((source, s.text) for s in keyword_sentences(units, c.keyword))
    listed: Counter[tuple[str, str]] = Counter()
    for s in c.statements:
        listed[(s.source, s.text)] += s.occurrences
    assert sorted(wanted - listed) == [], "keyword sentences missing from the catalogue (or listed too few times)"
    assert sorted(listed - wanted) == [], "statements that are no keyword sentence of their file (or listed too often)"


# A catalogue lists another pack's rules only where that pack checks the same stores: an .nwb.zarr store is
# checked by the Zarr v2 pack too. The others list their own pack's rules alone.
ALSO_CHECKED_BY = {"hdmf-zarr": {"zarr"}}


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_passes_lists_rules_of_its_pack_or_one_checking_the_same_stores(name):
    pack_of = {r.id: p.name for p in PACKS.values() for r in p.rules}
    packs = {pack_of.get(rid) for s in CATALOGUES[name].statements for rid in s.rules}
    assert packs <= {name, *ALSO_CHECKED_BY.get(name, ())}, sorted(map(str, packs))


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


def write_catalogue(tmp_path: Path, statements: list[dict], **extra) -> Path:
    path = tmp_path / "catalogue.yaml"
    spec = {"name": "demo", "title": "Demo", "source": "demo.md", **extra.pop("spec", {})}
    doc = {"spec": spec, **extra, "statements": statements}
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
    assert problems(load(str(write_catalogue(tmp_path, GOOD))), {"demo.md": SPEC}, RULES) == []


def test_problems_fails_keyword_sentence_in_no_statement(tmp_path):
    found = problems(load(str(write_catalogue(tmp_path, GOOD[:2]))), {"demo.md": SPEC}, RULES)
    assert found == ["[Things] \u201cParts may be large\u201d: a sentence with an RFC 2119 key word that no statement lists"]


def test_problems_fails_statement_not_verbatim_or_in_another_section(tmp_path):
    edited = [dict(GOOD[0], text="A thing MUST say what it is"), *GOOD[1:]]
    edited[0]["text"] = "A thing MUST tell what it is."
    moved = dict(GOOD[2], section="Spec")
    found = problems(load(str(write_catalogue(tmp_path, [edited[0], GOOD[1], moved]))), {"demo.md": SPEC}, RULES)
    assert any("A thing MUST tell what it is." in p and "not found verbatim" in p for p in found)
    assert any("Parts may be large" in p and "not found verbatim in a section \u201cSpec\u201d" in p for p in found)


def test_problems_fails_overlapping_statements(tmp_path):
    twice = [*GOOD, {"section": "Things", "text": "say what it is. A thing is blue.", "status": "not-checkable", "reason": "x"}]
    found = problems(load(str(write_catalogue(tmp_path, twice))), {"demo.md": SPEC}, RULES)
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


# ------------------------------------------------------------------------------------------------ several files
PART = """Part
====

The ``x`` member must be positive. Readers may cache it. It MAY be absent.

- the value must be an object.

.. note:: Writers should sort keys. E.g. ``a`` before ``b``.
"""
SPECS_TWO = {"demo/a.md": SPEC, "demo/b.rst": PART}
LOWER = ["must", "should"]
SEVERAL = [
    dict(GOOD[0], source="demo/a.md"),
    dict(GOOD[1], source="demo/a.md"),
    {
        "source": "demo/b.rst",
        "section": "Part",
        "text": "The ``x`` member must be positive.",
        "status": "covered",
        "rules": ["demo.x.positive"],
    },
    {"source": "demo/b.rst", "section": "Part", "text": "It MAY be absent.", "status": "not-checkable", "reason": "a permission"},
    {
        "source": "demo/b.rst",
        "section": "Part",
        "text": "the value must be an object.",
        "status": "covered",
        "rules": ["demo.x.positive"],
    },
    {"source": "demo/b.rst", "section": "Part", "text": "Writers should sort keys.", "status": "not-checkable", "reason": "x"},
]


def several(tmp_path: Path, statements: list[dict] = SEVERAL, **extra):
    spec = {"source": list(SPECS_TWO), "lower-case-keywords": LOWER}
    return load(str(write_catalogue(tmp_path, statements, spec=spec, **extra)))


def test_problems_passes_several_source_files_with_declared_lower_case_keywords(tmp_path):
    # "Parts may be large" (a.md) and "Readers may cache it." (b.rst): a lower-case "may" is no key word here; the
    # note's text and the list item are prose; "E.g." starts a sentence of its own.
    catalogue = several(tmp_path)
    assert catalogue.sources == tuple(SPECS_TWO) and [s.source for s in catalogue.statements][1:3] == ["demo/a.md", "demo/b.rst"]
    assert problems(catalogue, SPECS_TWO, [*RULES, "demo.x.positive"]) == []


def test_problems_fails_keyword_sentence_of_one_file_unlisted_naming_the_file(tmp_path):
    found = problems(several(tmp_path, SEVERAL[:-1]), SPECS_TWO, [*RULES, "demo.x.positive"])
    assert found == [
        "[b.rst: Part] \u201cWriters should sort keys.\u201d: a sentence with an RFC 2119 key word that no statement lists"
    ]
    # without the declaration every RFC 2119 word counts in any case: both lower-case "may" sentences are wanted
    found = problems(
        load(str(write_catalogue(tmp_path, SEVERAL, spec={"source": list(SPECS_TWO)}))), SPECS_TWO, [*RULES, "demo.x.positive"]
    )
    assert [p.split("\u201d")[0] for p in found] == [
        "[a.md: Things] \u201cParts may be large",
        "[b.rst: Part] \u201cReaders may cache it.",
    ]


def test_problems_fails_statement_in_the_other_file(tmp_path):
    moved = [*SEVERAL[:2], dict(SEVERAL[2], source="demo/a.md"), *SEVERAL[3:]]
    found = problems(several(tmp_path, moved), SPECS_TWO, [*RULES, "demo.x.positive"])
    assert any("not found verbatim in a section \u201cPart\u201d of demo/a.md" in p for p in found)


def test_problems_passes_repeated_sentence_as_one_statement_with_occurrences(tmp_path):
    spec = "# A\n\n## f\n\nThe value MUST be an object.\n\n## B\n\n## f\n\nThe value MUST be an object.\n"
    once = [{"section": "f", "text": "The value MUST be an object.", "status": "covered", "rules": ["demo.f.object"]}]
    found = problems(load(str(write_catalogue(tmp_path, once))), {"demo.md": spec}, ["demo.f.object"])
    assert found == ["[f] \u201cThe value MUST be an object.\u201d: a sentence with an RFC 2119 key word that no statement lists"]
    twice = [dict(once[0], occurrences=2)]
    assert problems(load(str(write_catalogue(tmp_path, twice))), {"demo.md": spec}, ["demo.f.object"]) == []
    thrice = [dict(once[0], occurrences=3)]
    found = problems(load(str(write_catalogue(tmp_path, thrice))), {"demo.md": spec}, ["demo.f.object"])
    assert found == [
        "[f] \u201cThe value MUST be an object.\u201d: not found verbatim 3 times in a section \u201cf\u201d of demo.md"
    ]


def test_problems_passes_derived_rules_named_outside_the_statements(tmp_path):
    catalogue = load(str(write_catalogue(tmp_path, GOOD, **{"derived-rules": ["demo.thing.shape"]})))
    rules = [*RULES, "demo.thing.shape"]
    assert problems(catalogue, None, rules, derived=["demo.thing.shape"]) == []
    assert problems(catalogue, None, rules, derived=[]) == [
        "derived-rules: demo.thing.shape is no `basis: derived` rule: list it with the statement(s) it checks"
    ]
    assert problems(catalogue, None, RULES) == ["derived-rules: demo.thing.shape is not a rule of the demo pack"]
    listed = load(str(write_catalogue(tmp_path, GOOD, **{"derived-rules": ["demo.thing.says"]})))
    assert problems(listed, None, RULES) == ["derived-rules: demo.thing.says is listed by a statement too: keep one"]


@pytest.mark.parametrize(
    ("statements", "extra", "message"),
    [
        pytest.param(
            [GOOD[0]], {"spec": {"source": ["a.md", "b.md"]}}, ": statements.0: 'source' is a required property", id="no-source"
        ),
        pytest.param(
            [dict(GOOD[0], source="c.md")],
            {"spec": {"source": ["a.md", "b.md"]}},
            ": statements.0.source: 'c.md' is not one of spec.source",
            id="unknown-source",
        ),
        pytest.param(
            [GOOD[0]], {"spec": {"lower-case-keywords": ["MUST"]}}, ": spec.lower-case-keywords.0: ", id="keyword-upper"
        ),
        pytest.param([dict(GOOD[0], occurrences=1)], {}, ": statements.0.occurrences: ", id="occurrences-one"),
        pytest.param(
            [dict(GOOD[0], source="a.txt")],
            {"spec": {"source": ["a.txt", "b.txt"]}, "headings": ["Things"]},
            ": headings: they are one plain-text source's, and spec.source has 2",
            id="headings-of-two-plain-texts",
        ),
    ],
)
def test_load_fails_bad_sources_keywords_or_occurrences(tmp_path, statements, extra, message):
    path = write_catalogue(tmp_path, statements, **extra)
    with pytest.raises(PackError) as excinfo:
        load(str(path))
    assert str(path) in str(excinfo.value) and message in str(excinfo.value)
