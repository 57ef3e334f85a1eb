"""Stored JSON parsed within bounds: nesting measured without recursion, size and encoding refused in one line."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from spec_validate.codecs import jsondoc
from spec_validate.codecs.jsondoc import MAX_NESTING, JSONProblem, loads, nesting


def value_nesting(value: Any) -> int:
    """How deeply lists and dicts nest in a parsed value: the reference `nesting` of the text is held to."""
    if isinstance(value, dict):
        return 1 + max((value_nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((value_nesting(v) for v in value), default=0)
    return 0


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


def test_jsondoc_passes_a_large_document_nesting_read_from_its_text():
    """A consolidated zarr.json of a wide store is megabytes of short strings: its depth is read from the text
    (positions of quotes and brackets, block by block), never through an object per string."""
    text = b'{"m": [' + b", ".join(b'{"a": [1, {"b": [2]}], "s": "[{\\"]"}' for _ in range(100_000)) + b"]}"
    assert len(text) > 2 * jsondoc._NESTING_BLOCK
    doc = loads(text)
    assert len(doc["m"]) == 100_000 and nesting(text) == value_nesting(doc) == 6


def _random_value(rnd: random.Random, depth: int = 0) -> Any:
    pick = rnd.random()
    if depth > 8 or pick < 0.3:
        return rnd.choice([1, 2.5, None, True, "x", 'a"[b\\', "\\\\", '{"', "]}", "\u00e9[", "", '\\"]'])
    if pick < 0.65:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    keys = [rnd.choice(["k", '"[', "\\", "{}", "\u00e9"]) + str(i) for i in range(rnd.randint(0, 4))]
    return {key: _random_value(rnd, depth + 1) for key in keys}


@pytest.mark.parametrize(("block", "documents"), [(1, 200), (7, 1000), (1 << 20, 3000)])
def test_jsondoc_passes_text_nesting_equals_the_parsed_values(monkeypatch, block, documents):
    """Strings holding brackets, quotes and backslashes (escaped or as \\u escapes), over blocks as small as a byte:
    the depth read from the text is the parsed value's."""
    monkeypatch.setattr(jsondoc, "_NESTING_BLOCK", block)
    rnd = random.Random(block)
    for _ in range(documents):
        value = _random_value(rnd)
        text = json.dumps(value, ensure_ascii=rnd.random() < 0.5, indent=rnd.choice([None, 1])).encode()
        assert nesting(text) == value_nesting(json.loads(text)), text


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
