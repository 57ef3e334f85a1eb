"""Clause catalogues: every normative statement of a spec, once, with the rules that check it or why none does.

A catalogue lists the statements of a pack's spec files in document order: the sentences carrying a key word (see
spec_text.keyword_pattern: RFC 2119's in any case, unless the catalogue declares which count in lower case), and
the requirements a spec states without one (tables of required keys, dtype tables, "is stored as", JSON shapes).
Most specs are one file (`spec.source`); a spec of several files (Zarr v3: core and one file per extension) lists
them all, and each statement names its own `source`. Each statement has a status:

- `covered`: the rules listed check it;
- `partial`: the rules listed check part of it, and `missing` says what they do not and why;
- `not-checkable`: nothing in a stored file can show it broken (a reader's or a writer's duty, a permission, a
  semantic that needs the data a file was made from), and `reason` says which;
- `deferred`: it can be checked, but is not yet, and `reason` says why (for instance another issue owns it).

`problems()` compares a catalogue with its spec files and its pack, so it cannot drift from either.

Catalogues are found per pack, not per folder: every `catalogue*.yaml` beside the built-in packs (the pack loader
skips those names) names its pack in `spec.name`, and each built-in pack has exactly one, in its own folder
(`rules/zarr/` holds zarr-2.yaml with catalogue.yaml, and zarr-3.yaml with catalogue-3.yaml).
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from spec_validate.errors import PackError
from spec_validate.spec_text import Unit, keyword_pattern, keyword_sentences, kind_of, normalised, read_units

SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "catalogue.schema.json")
CATALOGUE_PATTERN = "catalogue*.yaml"  # beside the packs; spec_validate.engine.loader skips these names
STATUSES = ("covered", "partial", "not-checkable", "deferred")


class Statement(NamedTuple):
    source: str  # the spec file it is quoted from: its own `source`, else the spec's only one
    section: str
    text: str  # verbatim from the spec (compared whitespace-normalised)
    status: str  # one of STATUSES
    rules: tuple[str, ...] = ()
    missing: str | None = None  # partial: what the rules do not check, and why
    reason: str | None = None  # not-checkable / deferred: why
    note: str | None = None
    occurrences: int = 1  # the same words stand this often in sections of that name: listed and counted once


class Catalogue(NamedTuple):
    name: str  # the pack's name, the first segment of its rule ids
    title: str
    sources: tuple[str, ...]  # the spec files, relative to the specs folder (../shared/specs/)
    headings: tuple[str, ...]  # the plain-text source's headings
    statements: tuple[Statement, ...]
    path: str
    lower_case_keywords: tuple[str, ...] | None = None  # declared by the spec: see spec_text.keyword_pattern
    derived_rules: tuple[str, ...] = ()  # rules checking a definition that no statement lists (see problems())

    def count(self, status: str) -> int:
        return sum(1 for s in self.statements if s.status == status)

    @property
    def keyword(self) -> re.Pattern[str]:
        """What counts as a key word in this spec's files."""
        return keyword_pattern(self.lower_case_keywords)

    def has_keyword(self, statement: Statement) -> bool:
        return self.keyword.search(statement.text) is not None


def load(path: str) -> Catalogue:
    """A catalogue file, validated against spec_validate/catalogue.schema.json; PackError names the file and the field."""
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
    spec = doc["spec"]
    sources = (spec["source"],) if isinstance(spec["source"], str) else tuple(spec["source"])
    for i, s in enumerate(doc["statements"]):
        if s.get("source", sources[0]) not in sources:
            raise PackError(f"{path}: statements.{i}.source: {s['source']!r} is not one of spec.source")
    headings = tuple(doc.get("headings", ()))
    plain = [f for f in sources if kind_of(f) == "txt"]
    if headings and len(plain) != 1:
        raise PackError(f"{path}: headings: they are one plain-text source's, and spec.source has {len(plain)}")
    statements = tuple(
        Statement(
            s.get("source", sources[0]),
            s["section"],
            normalised(s["text"]),
            s["status"],
            tuple(s.get("rules", ())),
            _one_line(s.get("missing")),
            _one_line(s.get("reason")),
            _one_line(s.get("note")),
            s.get("occurrences", 1),
        )
        for s in doc["statements"]
    )
    lower = spec.get("lower-case-keywords")
    return Catalogue(
        spec["name"],
        spec["title"],
        sources,
        headings,
        statements,
        path,
        tuple(lower) if lower is not None else None,
        tuple(doc.get("derived-rules", ())),
    )


def _one_line(text: str | None) -> str | None:
    return normalised(text) if text is not None else None


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    with open(SCHEMA_FILE, encoding="utf-8") as fh:
        return jsonschema.Draft202012Validator(json.load(fh))


def builtin_catalogue_files() -> list[str]:
    """The shipped catalogues (`rules/<folder>/catalogue*.yaml`), sorted."""
    from spec_validate.engine.loader import builtin_rules_dir

    return sorted(glob.glob(os.path.join(glob.escape(builtin_rules_dir()), "*", CATALOGUE_PATTERN)))


@lru_cache(maxsize=1)
def builtin_catalogues() -> tuple[Catalogue, ...]:
    """Every shipped catalogue, sorted by pack name; PackError when two name the same pack."""
    catalogues = tuple(sorted((load(p) for p in builtin_catalogue_files()), key=lambda c: c.name))
    seen: dict[str, str] = {}
    for c in catalogues:
        if c.name in seen:
            raise PackError(f"{c.path}: spec.name: {c.name!r} is catalogued in {seen[c.name]} already (one catalogue per pack)")
        seen[c.name] = c.path
    return catalogues


# ------------------------------------------------------------------------------------------------ drift checks
class _Located(NamedTuple):
    statement: Statement
    section_index: int
    start: int
    end: int


def problems(
    catalogue: Catalogue,
    spec_texts: Mapping[str, str] | None,
    rules: Iterable[str],
    other_rules: Iterable[str] = (),
    derived: Iterable[str] | None = None,
) -> list[str]:
    """What is wrong with the catalogue, one line each; empty when it matches its spec files and its pack.

    With the spec files' texts (`spec_texts`: source -> text, for each of the catalogue's sources): each
    statement is found verbatim (whitespace-normalised) in a section of that name of its file, as often as its
    `occurrences` says; no two statements overlap; and every sentence of the prose that carries a key word lies
    inside statements (each of its letters and digits inside one). With the pack's rule ids: every rule a
    statement lists exists (in the pack, or in `other_rules`: an hdmf-zarr store is also checked by the Zarr
    pack), and every rule of the pack is listed by some covered or partial statement, or under `derived-rules`.

    `derived-rules` is for a catalogue that lists keyword sentences only (zarr3's): a rule that follows from a
    definition (`basis: derived`; `derived` gives the pack's such ids) checks no sentence of it, and is named there
    instead, once. A catalogue that lists the requirements stated without a key word lists those rules with them.
    """
    found: list[str] = []
    rule_ids = list(rules)
    known = set(rule_ids) | set(other_rules)
    listed: set[str] = set()
    for s in catalogue.statements:
        for rid in s.rules:
            listed.add(rid)
            if rid not in known:
                found.append(f"{label(catalogue, s)}: lists {rid}, which is not a rule of a built-in pack")
    derived_ids = None if derived is None else set(derived)
    for rid in catalogue.derived_rules:
        if rid not in rule_ids:
            found.append(f"derived-rules: {rid} is not a rule of the {catalogue.name} pack")
        elif rid in listed:
            found.append(f"derived-rules: {rid} is listed by a statement too: keep one")
        elif derived_ids is not None and rid not in derived_ids:
            found.append(f"derived-rules: {rid} is no `basis: derived` rule: list it with the statement(s) it checks")
    for rid in rule_ids:
        if rid not in listed and rid not in catalogue.derived_rules:
            found.append(f"rule {rid} is listed by no statement: add it to the statement(s) it checks")
    if spec_texts is not None:
        for source in catalogue.sources:
            found += _text_problems(catalogue, source, spec_texts[source])
    return found


def label(catalogue: Catalogue, s: Statement) -> str:
    """`[section] “text”`, the text cut at 70 characters; the section is `file: section` in a spec of several files."""
    text = s.text if len(s.text) <= 70 else s.text[:67] + "..."
    return f"[{where(catalogue, s.source, s.section)}] \u201c{text}\u201d"


def where(catalogue: Catalogue, source: str, section: str) -> str:
    """The section as a reader finds it: `file: section` in a spec of several files, else the section alone."""
    return f"{os.path.basename(source)}: {section}" if len(catalogue.sources) > 1 else section


def _text_problems(catalogue: Catalogue, source: str, spec_text: str) -> list[str]:
    try:
        units = read_units(spec_text, kind_of(source), catalogue.headings if kind_of(source) == "txt" else ())
    except ValueError as exc:
        return [f"{source}: {exc}"]
    texts = _section_texts(units)
    found: list[str] = []
    located: list[_Located] = []
    taken: dict[tuple[int, str], int] = {}  # a text listed twice in one section is its next occurrence there
    for s in catalogue.statements:
        if s.source != source:
            continue
        places = [_locate(s, texts, taken) for _ in range(s.occurrences)]
        if None in places:
            times = "" if s.occurrences == 1 else f" {s.occurrences} times"
            found.append(f"{label(catalogue, s)}: not found verbatim{times} in a section \u201c{s.section}\u201d of {source}")
        located += [p for p in places if p is not None]
    by_section: dict[int, list[_Located]] = {}
    for place in located:
        by_section.setdefault(place.section_index, []).append(place)
    for places in by_section.values():
        places.sort(key=lambda p: p.start)
        for a, b in itertools.pairwise(places):
            if b.start < a.end:
                found.append(
                    f"{label(catalogue, b.statement)}: overlaps {label(catalogue, a.statement)}: list each statement once"
                )
    offsets = _unit_offsets(units)
    keyword = catalogue.keyword
    sentences = keyword_sentences(units, keyword)
    for sentence, (index, start) in zip(sentences, _sentence_offsets(units, offsets, keyword), strict=True):
        end = start + len(sentence.text)
        spans = [(p.start, p.end) for p in by_section.get(index, [])]
        uncovered = [i for i in range(start, end) if texts[index][1][i].isalnum() and not any(a <= i < b for a, b in spans)]
        if uncovered:
            found.append(
                f"[{where(catalogue, source, sentence.section)}] \u201c{sentence.text}\u201d: "
                "a sentence with an RFC 2119 key word that no statement lists"
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


def _sentence_offsets(units: Sequence[Unit], offsets: Sequence[int], keyword: re.Pattern[str]) -> list[tuple[int, int]]:
    """(section index, start in the section's text) of each keyword sentence, in the order keyword_sentences gives."""
    out = []
    for u, base in zip(units, offsets, strict=True):
        if u.code:
            continue
        cursor = 0
        for sentence in keyword_sentences([u], keyword):
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


def spec_files(catalogue: Catalogue, specs_dir: str) -> dict[str, str]:
    """source -> its path under `specs_dir`."""
    return {source: os.path.join(specs_dir, source) for source in catalogue.sources}


def check_against(catalogue: Catalogue, specs_dir: str | None) -> list[str]:
    """problems() with the built-in pack's rule ids and, when `specs_dir` holds the spec files, their text."""
    from spec_validate.engine.loader import builtin_packs

    rules = [r.id for p in builtin_packs() if p.name == catalogue.name for r in p.rules]
    derived = [r.id for p in builtin_packs() if p.name == catalogue.name for r in p.rules if r.derived]
    others = [r.id for p in builtin_packs() if p.name != catalogue.name for r in p.rules]
    texts = None
    if specs_dir is not None:
        paths = spec_files(catalogue, specs_dir)
        missing = [f"{path}: no such spec file" for path in paths.values() if not os.path.isfile(path)]
        if missing:
            return missing
        texts = {}
        for source, path in paths.items():
            with open(path, encoding="utf-8") as fh:
                texts[source] = fh.read()
    return problems(catalogue, texts, rules, others, derived)
