"""spec_validate/spec_text.py: a spec file split into sections, units and sentences; which carry a key word."""

from __future__ import annotations

import pytest

from spec_validate.spec_text import keyword_pattern, keyword_sentences, kind_of, read_units, sections, sentences

MD = """# Title

Intro text. It MUST be read.

```python
x = 1  # a MUST inside code is not prose
```

```{note}
Admonitions are prose: readers may differ.
```

## Part (v0.1.0)

* An element MUST be a group
* Another SHOULD share, e.g. chunk sizes

| a | b |
| - | - |
| row one | may be empty |
"""

RST = """Heading
=======

Para one, the object MUST contain an ``"id"``.
Example::

    {"MUST": "in a literal block"}

Sub
~~~

zarr_format
    An integer. It MUST be 2.
shape
    A list.
"""

TXT = """Overall

Required Things

There are two required datasets. Each of these must be named.

  • "misc": a list; must be a group

#> Dims: 3 x 4 must not count
"""


def test_read_units_passes_markdown_code_and_admonitions():
    units = read_units(MD, "md")
    assert [u.section for u in units if not u.code][:2] == ["Title", "Title"]
    assert any(u.code and "inside code" in u.text for u in units)
    assert any(not u.code and u.text == "Admonitions are prose: readers may differ." for u in units)
    found = [s.text for s in keyword_sentences(units)]
    assert found == [
        "It MUST be read.",
        "Admonitions are prose: readers may differ.",
        "An element MUST be a group",
        "Another SHOULD share, e.g. chunk sizes",
        "| row one | may be empty |",
    ]


def test_read_units_passes_rst_literal_blocks_and_definition_lists():
    units = read_units(RST, "rst")
    assert [name for name, _ in sections(units)] == ["Heading", "Sub"]
    assert any(u.code and "literal block" in u.text for u in units)
    texts = [u.text for u in units if not u.code]
    assert "zarr_format An integer. It MUST be 2." in texts and "shape A list." in texts
    assert [s.text for s in keyword_sentences(units)] == ['Para one, the object MUST contain an ``"id"``.', "It MUST be 2."]


def test_read_units_passes_plain_text_with_given_headings():
    units = read_units(TXT, "txt", ["Overall", "Required Things"])
    assert {u.section for u in units} == {"Required Things"}
    assert [s.text for s in keyword_sentences(units)] == [
        "There are two required datasets.",
        "Each of these must be named.",
        '"misc": a list; must be a group',
    ]
    assert any(u.code and "must not count" in u.text for u in units)


def test_read_units_fails_plain_text_heading_not_found():
    with pytest.raises(ValueError, match="Missing"):
        read_units(TXT, "txt", ["Overall", "Missing"])


@pytest.mark.parametrize(("name", "kind"), [("a.md", "md"), ("b.rst", "rst"), ("c.txt", "txt")])
def test_kind_of_passes(name, kind):
    assert kind_of(name) == kind


def test_sentences_passes_abbreviations_do_not_split():
    units = read_units("# T\n\nRow-major (eg. C/C++, Python), dims should appear transposed. Next one.\n", "md")
    assert [s.text for s in sentences(units)] == ["Row-major (eg. C/C++, Python), dims should appear transposed.", "Next one."]


RST_NESTED = """.. _label:

=====
Title
=====

Intro::

    {"literal": "MUST not count"}

``attributes``
--------------

    The value must be an object.

    .. note::

       The field is required. However, it MUST be recorded.

- Items:

  - ``a`` is the first;
  - ``b`` must be returned.

.. list-table:: Types

   * - ``r*``
     - bits, which must be a multiple of 8.

.. note:: Writers should sort. E.g. ``a`` first; cf. RFC 2119 for the words.
"""


def test_read_units_passes_rst_overlines_nested_items_and_directives():
    units = read_units(RST_NESTED, "rst")
    assert [name for name, _ in sections(units)] == ["Title", "``attributes``"]  # headings as written
    prose = [u.text for u in units if not u.code]
    # an indented `.. note::` is no literal block; nested items and list-table cells are units of their own
    assert "The field is required. However, it MUST be recorded." in prose
    assert "``b`` must be returned." in prose and "bits, which must be a multiple of 8." in prose
    assert "Types" in prose and "Writers should sort. E.g. ``a`` first; cf. RFC 2119 for the words." in prose
    assert not any("label" in t or "::" in t.replace("Intro::", "") for t in prose)
    assert [s.text for s in sentences(units)][-2:] == ["Writers should sort.", "E.g. ``a`` first; cf. RFC 2119 for the words."]


@pytest.mark.parametrize(
    ("lower_case", "found"),
    [
        pytest.param(
            None, ["The value must be an object.", "The field is required.", "However, it MUST be recorded."], id="any-case"
        ),
        pytest.param(["must"], ["The value must be an object.", "However, it MUST be recorded."], id="declared-must"),
        pytest.param(["required"], ["The field is required.", "However, it MUST be recorded."], id="declared-required"),
    ],
)
def test_keyword_pattern_passes_declared_lower_case_words(lower_case, found):
    units = [u for u in read_units(RST_NESTED, "rst") if u.section == "``attributes``"][:2]
    assert [s.text for s in keyword_sentences(units, keyword_pattern(lower_case))] == found


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        pytest.param("Must be positive.", True, id="capitalised-declared-word"),
        pytest.param("It MAY be absent.", True, id="upper-case-undeclared-word"),
        pytest.param("It may be absent.", False, id="lower-case-undeclared-word"),
        pytest.param("May be absent.", False, id="capitalised-undeclared-word"),
        pytest.param("It is recommended.", True, id="declared-longer-word"),
        pytest.param("A mustard field.", False, id="word-boundary"),
    ],
)
def test_keyword_pattern_passes_zarr_v3_declaration(text, counts):
    # The Zarr v3 files: "for readability, these words do not appear in all uppercase letters".
    keyword = keyword_pattern(["must", "should", "required", "recommended", "recommend", "shall"])
    assert bool(keyword.search(text)) is counts
