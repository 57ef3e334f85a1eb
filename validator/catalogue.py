"""Clause catalogues: every normative statement of a spec file, once, with the rules that check it or why none does.

A catalogue (`rules/<spec>/catalogue.yaml`) lists the statements of one spec file in document order: the
sentences carrying an RFC 2119 key word in any case, and the requirements a spec states without one (tables of
required keys, dtype tables, "is stored as", JSON shapes). Each has a status:

- `covered`: the rules listed check it;
- `partial`: the rules listed check part of it, and `missing` says what they do not and why;
- `not-checkable`: nothing in a stored file can show it broken (a reader's or a writer's duty, a permission, a
  semantic that needs the data a file was made from), and `reason` says which;
- `deferred`: it can be checked, but is not yet, and `reason` says why (for instance another issue owns it).

`problems()` compares a catalogue with its spec file and its pack, so it cannot drift from either.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

from validator.errors import PackError
from validator.spec_text import KEYWORD, Unit, keyword_sentences, kind_of, normalised, read_units

SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "catalogue.schema.json")
CATALOGUE_FILE = "catalogue.yaml"
STATUSES = ("covered", "partial", "not-checkable", "deferred")


class Statement(NamedTuple):
    section: str
    text: str  # verbatim from the spec (compared whitespace-normalised)
    status: str  # one of STATUSES
    rules: tuple[str, ...] = ()
    missing: str | None = None  # partial: what the rules do not check, and why
    reason: str | None = None  # not-checkable / deferred: why
    note: str | None = None

    @property
    def keyword(self) -> bool:
        """Whether the statement carries an RFC 2119 key word (in any case)."""
        return KEYWORD.search(self.text) is not None


class Catalogue(NamedTuple):
    name: str  # the pack's name, the first segment of its rule ids
    title: str
    source: str  # the spec file's name
    headings: tuple[str, ...]  # a plain-text spec's headings
    statements: tuple[Statement, ...]
    path: str

    def count(self, status: str) -> int:
        return sum(1 for s in self.statements if s.status == status)


def load(path: str) -> Catalogue:
    """A catalogue file, validated against validator/catalogue.schema.json; PackError names the file and the field."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as exc:
        raise PackError(f"{path}: cannot read the catalogue: {exc}") from None
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "(top level)"
        raise PackError(f"{path}: {where}: {first.message}")
    statements = tuple(
        Statement(
            s["section"],
            normalised(s["text"]),
            s["status"],
            tuple(s.get("rules", ())),
            _one_line(s.get("missing")),
            _one_line(s.get("reason")),
            _one_line(s.get("note")),
        )
        for s in doc["statements"]
    )
    spec = doc["spec"]
    return Catalogue(spec["name"], spec["title"], spec["source"], tuple(doc.get("headings", ())), statements, path)


def _one_line(text: str | None) -> str | None:
    return normalised(text) if text is not None else None


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    with open(SCHEMA_FILE, encoding="utf-8") as fh:
        return jsonschema.Draft202012Validator(json.load(fh))


def builtin_catalogue_files() -> list[str]:
    """The shipped catalogues, one per built-in pack folder that has one, sorted."""
    from validator.engine.loader import builtin_rules_dir

    root = builtin_rules_dir()
    found = [
        os.path.join(root, d, CATALOGUE_FILE) for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, CATALOGUE_FILE))
    ]
    return sorted(found)


@lru_cache(maxsize=1)
def builtin_catalogues() -> tuple[Catalogue, ...]:
    return tuple(load(p) for p in builtin_catalogue_files())


# ------------------------------------------------------------------------------------------------ drift checks
class _Located(NamedTuple):
    statement: Statement
    section_index: int
    start: int
    end: int


def problems(catalogue: Catalogue, spec_text: str | None, rules: Iterable[str], other_rules: Iterable[str] = ()) -> list[str]:
    """What is wrong with the catalogue, one line each; empty when it matches its spec file and its pack.

    With the spec's text: each statement is found verbatim (whitespace-normalised) in a section of that name;
    no two statements overlap; and every sentence of the prose that carries an RFC 2119 key word lies inside
    statements (each of its letters and digits inside one). With the pack's rule ids: every rule a statement
    lists exists (in the pack, or in `other_rules`: an hdmf-zarr store is also checked by the Zarr pack), and
    every rule of the pack is listed by some covered or partial statement.
    """
    found: list[str] = []
    rule_ids = list(rules)
    known = set(rule_ids) | set(other_rules)
    listed: set[str] = set()
    for s in catalogue.statements:
        for rid in s.rules:
            listed.add(rid)
            if rid not in known:
                found.append(f"{_label(s)}: lists {rid}, which is not a rule of a built-in pack")
    for rid in rule_ids:
        if rid not in listed:
            found.append(f"rule {rid} is listed by no statement: add it to the statement(s) it checks")
    if spec_text is not None:
        found += _text_problems(catalogue, spec_text)
    return found


def _label(s: Statement) -> str:
    text = s.text if len(s.text) <= 70 else s.text[:67] + "..."
    return f"[{s.section}] \u201c{text}\u201d"


def _text_problems(catalogue: Catalogue, spec_text: str) -> list[str]:
    try:
        units = read_units(spec_text, kind_of(catalogue.source), catalogue.headings)
    except ValueError as exc:
        return [f"{catalogue.source}: {exc}"]
    texts = _section_texts(units)
    found: list[str] = []
    located: list[_Located] = []
    taken: dict[tuple[int, str], int] = {}  # a text listed twice in one section is its next occurrence there
    for s in catalogue.statements:
        place = _locate(s, texts, taken)
        if place is None:
            found.append(f"{_label(s)}: not found verbatim in a section \u201c{s.section}\u201d of {catalogue.source}")
        else:
            located.append(place)
    by_section: dict[int, list[_Located]] = {}
    for place in located:
        by_section.setdefault(place.section_index, []).append(place)
    for places in by_section.values():
        places.sort(key=lambda p: p.start)
        for a, b in zip(places, places[1:]):
            if b.start < a.end:
                found.append(f"{_label(b.statement)}: overlaps {_label(a.statement)}: list each statement once")
    offsets = _unit_offsets(units)
    for sentence, (index, start) in zip(keyword_sentences(units), _sentence_offsets(units, offsets)):
        end = start + len(sentence.text)
        spans = [(p.start, p.end) for p in by_section.get(index, [])]
        uncovered = [i for i in range(start, end) if texts[index][1][i].isalnum() and not any(a <= i < b for a, b in spans)]
        if uncovered:
            found.append(
                f"[{sentence.section}] \u201c{sentence.text}\u201d: a sentence with an RFC 2119 key word that no statement lists"
            )
    return found


def _section_texts(units: Sequence[Unit]) -> dict[int, tuple[str, str]]:
    out: dict[int, tuple[str, list[str]]] = {}
    for u in units:
        out.setdefault(u.section_index, (u.section, []))[1].append(u.text)
    return {i: (name, " ".join(parts)) for i, (name, parts) in out.items()}


def _unit_offsets(units: Sequence[Unit]) -> list[int]:
    offsets, position = [], {}
    for u in units:
        at = position.get(u.section_index, 0)
        offsets.append(at)
        position[u.section_index] = at + len(u.text) + 1
    return offsets


def _sentence_offsets(units: Sequence[Unit], offsets: Sequence[int]) -> list[tuple[int, int]]:
    """(section index, start in the section's text) of each keyword sentence, in the order keyword_sentences gives."""
    out = []
    for u, base in zip(units, offsets):
        if u.code:
            continue
        cursor = 0
        for sentence in keyword_sentences([u]):
            at = u.text.find(sentence.text, cursor)
            out.append((u.section_index, base + at))
            cursor = at + len(sentence.text)
    return out


def _locate(s: Statement, texts: dict[int, tuple[str, str]], taken: dict[tuple[int, str], int]) -> _Located | None:
    for index, (name, text) in sorted(texts.items()):
        if name != s.section:
            continue
        start = text.find(s.text, taken.get((index, s.text), 0))
        if start >= 0:
            taken[(index, s.text)] = start + len(s.text)
            return _Located(s, index, start, start + len(s.text))
    return None


def spec_file(catalogue: Catalogue, specs_dir: str) -> str:
    return os.path.join(specs_dir, catalogue.source)


def check_against(catalogue: Catalogue, specs_dir: str | None) -> list[str]:
    """problems() with the built-in pack's rule ids and, when `specs_dir` holds the spec file, its text."""
    from validator.engine.loader import builtin_packs

    rules = [r.id for p in builtin_packs() if p.name == catalogue.name for r in p.rules]
    others = [r.id for p in builtin_packs() if p.name != catalogue.name for r in p.rules]
    text = None
    if specs_dir is not None:
        path = spec_file(catalogue, specs_dir)
        if not os.path.isfile(path):
            return [f"{path}: no such spec file"]
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    return problems(catalogue, text, rules, others)
