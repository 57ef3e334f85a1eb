"""A spec file read as prose: its sections, its sentences, and which of them carry an RFC 2119 key word.

The one sentence cutter of the project: the clause catalogues (spec_validate/catalogue.py) hold every keyword sentence
it finds to a statement, and the tests hold rule clauses to the same text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

# RFC 2119's key words (MUST NOT, SHALL NOT, SHOULD NOT are found by their first word).
RFC2119 = ("must", "shall", "should", "may", "required", "recommended", "optional")
# By default in any case: the h5Seurat and hdmf-zarr documents write them in lower case without saying so.
KEYWORD = re.compile(r"\b(must|shall|should|may|required|recommended|optional)\b", re.IGNORECASE)
# A sentence ends at . ! ? followed by a space and something that starts a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"`(\[*\\\u201c])")
# No sentence ends at an abbreviation's last period (it may still start one: "... store. E.g. a database").
_ABBREVIATIONS = ("e.g.", "i.e.", "eg.", "ie.", "E.g.", "I.e.", "N.B.", "etc.", "vs.", "cf.")
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_BULLET = re.compile(r"^\s*(?:[*\-+]|\u2022)\s+")
# `.. name:: argument` (group 1: the argument), or any other explicit markup: `.. _label:`, `.. [ref]`, a comment.
_RST_EXPLICIT = re.compile(r"^\s*\.\.(?:\s+[\w:-]+::(?!\S)(.*)|\s.*|)$")


def normalised(text: str) -> str:
    """Whitespace runs as one space: how clauses and statements are compared with the spec text."""
    return " ".join(text.split())


class Unit(NamedTuple):
    """A paragraph, list item, table row or code block, with the heading it sits under."""

    section: str
    section_index: int  # which section, counting from 0 in document order (headings may repeat)
    text: str  # normalised
    code: bool


class Sentence(NamedTuple):
    section: str
    section_index: int
    text: str  # normalised


def read_units(text: str, kind: str, headings: Sequence[str] = ()) -> list[Unit]:
    """The spec's units in document order. `kind` is md, rst or txt; a txt spec has no heading markup, so its
    headings are given, in document order (each one a line of its own)."""
    if kind == "md":
        return _md_units(text)
    if kind == "rst":
        return _rst_units(text)
    if kind == "bs":
        return _md_units(_bikeshed_as_markdown(text))
    return _txt_units(text, headings)


def kind_of(filename: str) -> str:
    return {".md": "md", ".rst": "rst", ".bs": "bs"}.get(filename[filename.rfind(".") :].lower(), "txt")


def sections(units: Sequence[Unit]) -> list[tuple[str, str]]:
    """(heading, the section's text: its units joined, normalised), one per section in document order."""
    out: dict[int, tuple[str, list[str]]] = {}
    for u in units:
        out.setdefault(u.section_index, (u.section, []))[1].append(u.text)
    return [(name, " ".join(texts)) for _, (name, texts) in sorted(out.items())]


def sentences(units: Sequence[Unit]) -> list[Sentence]:
    """Every sentence of the prose (code blocks left out)."""
    found = []
    for u in units:
        if u.code:
            continue
        for piece in _split_sentences(u.text):
            found.append(Sentence(u.section, u.section_index, piece))
    return found


def keyword_pattern(lower_case: Sequence[str] | None = None) -> re.Pattern[str]:
    """What counts as a key word: by default RFC 2119's words in any case (KEYWORD).

    A spec that says how it writes its key words declares `lower_case`: the words that count in lower case too
    (in any case, so also at the start of a sentence), while the other RFC 2119 words count only in upper case.
    The Zarr v3 files write "for readability, these words do not appear in all uppercase letters", yet their
    lower-case "may" and "optional" mostly describe what exists rather than permit anything.
    """
    if lower_case is None:
        return KEYWORD
    upper = "|".join(w.upper() for w in RFC2119)
    lower = "|".join(re.escape(w) for w in sorted(lower_case, key=len, reverse=True))
    return re.compile(rf"\b(?:{upper})\b|\b(?i:{lower})\b")


def keyword_sentences(units: Sequence[Unit], keyword: re.Pattern[str] = KEYWORD) -> list[Sentence]:
    """The sentences of the prose that carry a key word (by default RFC 2119's, in any case; see keyword_pattern)."""
    return [s for s in sentences(units) if keyword.search(s.text)]


def _split_sentences(text: str) -> list[str]:
    protected = text
    for abbr in _ABBREVIATIONS:  # the last period hidden, so _SENTENCE_END does not see it
        protected = protected.replace(abbr + " ", abbr[:-1] + "\x00 ")
    pieces = _SENTENCE_END.split(protected)
    return [p.replace("\x00", ".").strip() for p in pieces if p.strip()]


# ------------------------------------------------------------------------------------------------ Markdown
def _md_units(text: str) -> list[Unit]:
    units: list[Unit] = []
    section, index = "", -1
    lines = _strip_html_comments(text).split("\n")
    para: list[str] = []
    fences: list[tuple[str, bool]] = []  # open fences: (marker, is code)
    code: list[str] = []

    def flush() -> None:
        _add_unit(units, para, section, index, code=False)

    for line in lines:
        fence = re.match(r"^\s*(`{3,}|~{3,})(.*)$", line)
        if fence:
            marker, info = fence.group(1), fence.group(2).strip()
            if fences and marker == fences[-1][0] and not info:
                if fences.pop()[1]:
                    _add_unit(units, code, section, index, code=True)
                flush()
                continue
            flush()
            # MyST directives: admonitions are prose, tab containers are transparent, anything else is code.
            is_code = not (info.startswith("{") and not info.startswith("{code"))
            fences.append((marker, is_code))
            continue
        if any(c for _, c in fences):
            code.append(line)
            continue
        if fences and re.match(r"^:\w+:", line):  # a directive option (:sync: hdf5)
            continue
        heading = _MD_HEADING.match(line)
        if heading:
            flush()
            section, index = heading.group(2).strip(), index + 1
            continue
        if not line.strip():
            flush()
            continue
        row = line.lstrip().startswith("|")
        if row or _BULLET.match(line):  # a list item or a table row starts a unit of its own, a row ends it too
            flush()
        para.append(_BULLET.sub("", line, count=1))
        if row:
            flush()
    flush()
    return units


def _add_unit(units: list[Unit], lines: list[str], section: str, index: int, code: bool) -> None:
    """The lines gathered so far as one unit (none when there are none), and the gathering started afresh."""
    if lines:
        units.append(Unit(section, max(index, 0), normalised(" ".join(lines)), code))
        lines.clear()


def _strip_html_comments(text: str) -> str:
    return re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)


# ------------------------------------------------------------------------------------------------ Bikeshed
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_HEADING_ID = re.compile(r"\s*\{#[^}]*\}\s*$")
_HTML_HEADING = re.compile(r"^\s*<h([1-6])\b[^>]*>(.*?)</h\1>\s*$")


def _bikeshed_as_markdown(text: str) -> str:
    """A Bikeshed source (the OME-Zarr spec's `index.bs`) as the Markdown it is written in: setext headings (a line
    underlined with `=` or `-`) and `<hN>` lines become `#` headings without their `{#id}`, `<pre>` blocks (the
    metadata block, file trees, included examples, the bibliography) become code, and lone `<p>` tags go. The
    metadata block before the first heading (Bikeshed's settings: title, editors, status) is left out."""
    lines = text.split("\n")
    if lines and lines[0].strip().startswith("<pre class='metadata'>"):
        end = next((i for i, line in enumerate(lines) if line.strip().startswith("</pre>")), len(lines) - 1)
        lines = lines[end + 1 :]
    out: list[str] = []
    in_pre = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if in_pre:
            out.append(line)
            if stripped.startswith("</pre>"):
                out[-1] = "```"
                in_pre = False
            i += 1
            continue
        if stripped.startswith("<pre"):
            out.append("```")
            in_pre = "</pre>" not in stripped
            if not in_pre:
                out.append("```")
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if stripped and out[-1:] != ["```"] and _SETEXT.match(nxt) and not _BULLET.match(line):
            level = "#" if nxt.strip().startswith("=") else "##"
            out.append(f"{level} {_HEADING_ID.sub('', stripped)}")
            i += 2
            continue
        heading = _HTML_HEADING.match(line)
        if heading:
            out.append(f"{'#' * int(heading.group(1))} {heading.group(2).strip()}")
        elif stripped not in ("<p>", "</p>"):
            out.append(line)
        i += 1
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ reStructuredText
def _rst_units(text: str) -> list[Unit]:
    lines = text.split("\n")
    units: list[Unit] = []
    section, index = "", -1
    para: list[str] = []
    literal_next = False  # the paragraph before ended with "::": the indented block after it is code
    in_literal = False
    literal: list[str] = []

    def flush() -> None:
        nonlocal literal_next
        if para:
            joined = normalised(" ".join(para))
            units.append(Unit(section, max(index, 0), joined, False))
            literal_next = joined.endswith("::")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if in_literal:
            if line.strip() and not line.startswith((" ", "\t")):
                units.append(Unit(section, max(index, 0), normalised(" ".join(literal)), True))
                literal.clear()
                in_literal = False
            else:
                literal.append(line)
                i += 1
                continue
        if line.strip() and _RST_UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()) and not line.startswith(" "):
            flush()
            literal_next = False
            section, index = line.strip(), index + 1
            i += 2
            continue
        markup = _rst_markup(line)
        if markup is not None:
            flush()
            literal_next = False
            para.extend([markup] if markup else [])
            i += 1
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if literal_next and line.startswith((" ", "\t")) and not para:
            in_literal = True
            literal.append(line)
            i += 1
            continue
        literal_next = False
        starts_item = _BULLET.match(line)  # nested items and list-table cells too: each a unit of its own
        # A definition-list term: a line at the margin after an indented one starts a new unit.
        starts_term = para and not line.startswith(" ") and lines[i - 1].startswith(" ")
        if starts_item or starts_term:
            flush()
            literal_next = False
        para.append(_BULLET.sub("", line) if starts_item else line)
        i += 1
    if in_literal and literal:
        units.append(Unit(section, max(index, 0), normalised(" ".join(literal)), True))
    flush()
    return units


def _rst_markup(line: str) -> str | None:
    """None for a line of text; for markup (a title's overline, a transition, `.. note::`, `.. _label:`, a comment,
    at the margin or nested) the prose it carries: what follows a directive's `::` on its line (an admonition's
    first words, a table's title) starts the directive's content, which is prose; else ""."""
    if _RST_UNDERLINE.match(line):
        return ""
    explicit = _RST_EXPLICIT.match(line)
    if explicit is None:
        return None
    return (explicit.group(1) or "").strip()


# ------------------------------------------------------------------------------------------------ plain text
def _txt_units(text: str, headings: Sequence[str]) -> list[Unit]:
    """Paragraphs (blank-line separated), bullets (•) each a unit, `#>` lines (R output) as code. A line equal to
    the next expected heading starts a section."""
    units: list[Unit] = []
    expected = list(headings)
    section, index = "", -1
    para: list[str] = []
    code: list[str] = []

    def flush() -> None:
        if para:
            units.append(Unit(section, max(index, 0), normalised(" ".join(para)), False))
            para.clear()
        if code:
            units.append(Unit(section, max(index, 0), normalised(" ".join(code)), True))
            code.clear()

    for line in text.split("\n"):
        stripped = line.strip()
        if expected and stripped == expected[0]:
            flush()
            section, index = expected.pop(0), index + 1
            continue
        if stripped.startswith("#>"):
            if para:
                flush()
            code.append(stripped[2:])
            continue
        if not stripped:
            flush()
            continue
        if code:
            flush()
        if _BULLET.match(line):
            flush()
            para.append(_BULLET.sub("", line))
            continue
        para.append(line)
    flush()
    if expected:
        raise ValueError(f"headings not found in order: {expected}")
    return units
