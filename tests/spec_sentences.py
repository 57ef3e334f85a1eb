"""The keyword sentences of a reStructuredText spec file: each sentence carrying an RFC 2119 key word, with its section.

Used by tests/test_catalogues.py to hold a pack's clause catalogue (`rules/<spec>/catalogue*.yaml`) to every such
sentence of its spec files. A sentence is whitespace-normalised text as the file writes it (markup kept), so a
catalogue entry and a rule clause can be compared with the file by plain substring tests.

Key words: the upper-case forms of RFC 2119 (MUST, MUST NOT, REQUIRED, SHALL, SHALL NOT, SHOULD, SHOULD NOT,
RECOMMENDED, MAY, OPTIONAL), and the lower-case must, must not, should, should not, required, recommended,
recommend and shall, since the Zarr v3 specs say "for readability, these words do not appear in all uppercase
letters". Lower-case "may" and "optional" are left out: in these files they describe what exists far more often
than they permit anything a store could break.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

UPPER = re.compile(r"\b(MUST|SHOULD|MAY|REQUIRED|OPTIONAL|RECOMMENDED|SHALL)\b")
LOWER = re.compile(r"\b(must|should|required|recommended|recommend|shall)\b", re.IGNORECASE)
UNDERLINE = re.compile(r"^([=\-^\"~#*+`'])\1{2,}\s*$")
ITEM = re.compile(r"^([*\-]|\d+\.)\s")
ABBREVIATION = re.compile(r"\b(e\.g|i\.e|etc|cf)\.$")


class Sentence(NamedTuple):
    section: str  # the nearest heading above it
    text: str  # whitespace-normalised, as written


def paragraphs(text: str) -> Iterator[tuple[str, str]]:
    """(section, paragraph) in file order; a list item is a paragraph of its own; labels and underlines are dropped."""
    lines = text.splitlines()
    section, buffer = "", []

    def flush() -> Iterator[tuple[str, str]]:
        if buffer:
            yield section, " ".join(line.strip() for line in buffer)
            buffer.clear()

    i = 0
    while i < len(lines):
        line, stripped = lines[i], lines[i].strip()
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if stripped and UNDERLINE.match(following) and not UNDERLINE.match(stripped) and len(following) >= len(stripped):
            yield from flush()
            section = stripped.strip("`")
            i += 2
            continue
        if not stripped or UNDERLINE.match(stripped) or stripped.startswith(".. _"):
            yield from flush()
        elif ITEM.match(stripped) or (stripped.startswith("| ") and not (buffer and buffer[-1].strip().startswith("| "))):
            yield from flush()
            buffer.append(line)
        else:
            buffer.append(line)
        i += 1
    yield from flush()


def sentences(text: str) -> Iterator[Sentence]:
    """Every sentence of the file, split after ".", "?" or "!" before a capital, a quote, markup or a bracket."""
    for section, paragraph in paragraphs(text):
        merged: list[str] = []
        for piece in re.split(r"(?<=[.?!])\s+(?=[A-Z`\"(\[*])", " ".join(paragraph.split())):
            if merged and ABBREVIATION.search(merged[-1]):
                merged[-1] += " " + piece
            else:
                merged.append(piece)
        yield from (Sentence(section, s) for s in merged)


def keyword_sentences(text: str) -> list[Sentence]:
    """The sentences carrying a key word (see the module docstring)."""
    return [s for s in sentences(text) if UPPER.search(s.text) or LOWER.search(s.text)]


def normalised(text: str) -> str:
    return " ".join(text.split())
