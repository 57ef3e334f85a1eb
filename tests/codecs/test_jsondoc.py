"""Stored JSON parsed within bounds: nesting measured without recursion, size and encoding refused in one line."""

from __future__ import annotations

import math

import pytest

from spec_validate.codecs import jsondoc
from spec_validate.codecs.jsondoc import MAX_NESTING, JSONProblem, loads, nesting, value_nesting


def test_jsondoc_passes_plain_documents_and_zarr_v2_float_tokens():
    doc = loads(b'{"shape": [3, 4], "fill_value": NaN, "attrs": {"a": [1, {"b": "x"}]}}')
    assert doc["shape"] == [3, 4] and math.isnan(doc["fill_value"]) and doc["attrs"]["a"][1] == {"b": "x"}
    assert loads('{"a": Infinity}') == {"a": math.inf}


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 100_000, 1_000_000])
def test_jsondoc_fails_nesting_past_the_limit_in_one_line_without_recursion(depth):
    with pytest.raises(JSONProblem, match=rf"^nested {depth} levels deep, more than the {MAX_NESTING} levels"):
        loads(b"[" * depth + b"]" * depth)


def test_jsondoc_passes_brackets_inside_strings_are_not_nesting():
    text = b'{"a": "' + b"[{" * 10_000 + b'", "b": "\\"[["}'
    assert nesting(text) == 1 and loads(text)["b"] == '"[['


def test_jsondoc_passes_nesting_at_the_limit():
    assert loads("[" * MAX_NESTING + "]" * MAX_NESTING) is not None


def test_jsondoc_fails_text_past_the_size_limit_before_parsing():
    with pytest.raises(JSONProblem, match=r"^1025 bytes of JSON text, more than the 1024 this tool parses; not parsed$"):
        loads(b'"' + b"x" * 1023 + b'"', max_bytes=1024)


@pytest.mark.parametrize(
    "raw,reason",
    [
        (b'{"a": 1', r"^not valid JSON \(Expecting ',' delimiter at line 1 column 8\)$"),
        (b'{"a": "\xff"}', r"^not UTF-8 \(invalid start byte at byte 7\)$"),
        (b"1" * 5000, r"^not valid JSON \(Exceeds the limit"),
    ],
    ids=["truncated", "not-utf8", "integer-too-long"],
)
def test_jsondoc_fails_what_does_not_parse_in_one_line(raw, reason):
    with pytest.raises(JSONProblem, match=reason):
        loads(raw)


def test_jsondoc_passes_a_large_document_is_parsed_without_scanning_its_text(monkeypatch):
    """A consolidated zarr.json of a wide store is megabytes of short strings: scanning its text with strings
    skipped copied it many times over (a regex substitution builds one piece per string), so a document is parsed
    first and its depth read from the parsed value; the text is scanned only for the message of one too deep to parse."""
    text = b'{"m": [' + b", ".join(b'{"a": [1, {"b": [2]}], "s": "[{"}' for _ in range(10_000)) + b"]}"

    def scanned(raw):
        raise AssertionError("the text was scanned")

    monkeypatch.setattr(jsondoc, "nesting", scanned)
    doc = loads(text)
    assert len(doc["m"]) == 10_000 and value_nesting(doc) == 6


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"1", 0),
        (b'"[["', 0),
        (b"[]", 1),
        (b"{}", 1),
        (b'[1, [2, {"a": [3]}], "]]"]', 4),
        (b'{"a": {"b": {}}, "d": [[[[]]]]}', 5),
    ],
)
def test_jsondoc_passes_value_nesting_counts_lists_and_dicts(text, depth):
    assert value_nesting(loads(text)) == depth
