"""Parse stored JSON text within bounds: the nesting it may have, and one-line reasons for what does not parse.

Python's parser recurses once per nesting level and a document 100,000 levels deep stops it with RecursionError;
one that parses a few hundred levels deep may stop every check that walks it afterwards. So nesting is measured
first, without recursion, and a document nested deeper than MAX_NESTING is refused with a reason, like one that
is not JSON; so is text of more than MAX_JSON_BYTES (documents are bounded where they are read as well,
`keyvalue.MAX_DOCUMENT_BYTES`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

# The deepest nesting of arrays and objects a stored document may have: real metadata nests a few levels.
MAX_NESTING = 64
# The most bytes of JSON text parsed at once (a stored document, a JSON-valued attribute): parsing N bytes builds
# Python objects of several times N. Documents read from a store are bounded at the same size when read.
MAX_JSON_BYTES = 64 * 2**20
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN, _CLOSE = np.frombuffer(b"[{", dtype=np.uint8), np.frombuffer(b"]}", dtype=np.uint8)


class JSONProblem(ValueError):
    """Text that is no JSON document this tool reads; the message says why in one line."""


def nesting(raw: bytes) -> int:
    """How deeply arrays and objects nest in the JSON text `raw` (strings skipped), without parsing it."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_NESTING:  # cannot nest deeper than it opens
        return min(raw.count(b"[") + raw.count(b"{"), MAX_NESTING)
    bare = np.frombuffer(_STRING.sub(b'""', raw), dtype=np.uint8)
    # Block by block, the depth carried across: a running depth for the whole text at once held 8 bytes a
    # character (100 MB for the 5.5 MB consolidated zarr.json of a 4,000-column store).
    depth = deepest = 0
    for start in range(0, len(bare), _NESTING_BLOCK):
        part = bare[start : start + _NESTING_BLOCK]
        steps = np.isin(part, _OPEN).astype(np.int8) - np.isin(part, _CLOSE).astype(np.int8)
        running = np.cumsum(steps, dtype=np.int64)
        if running.size:
            deepest = max(deepest, depth + int(running.max()))
            depth += int(running[-1])
    return deepest


_NESTING_BLOCK = 1 << 18


def loads(
    raw: bytes | str,
    max_nesting: int = MAX_NESTING,
    max_bytes: int = MAX_JSON_BYTES,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """The JSON value of `raw` (UTF-8 bytes or text); JSONProblem, in one line, when it is none this tool reads.

    NaN, Infinity and -Infinity are read as Python reads them (Zarr v2 writes them as fill values), unless
    `parse_constant` says otherwise (it may raise ValueError: strict JSON has no such tokens).
    """
    if isinstance(raw, str):
        text = raw
        data = raw.encode("utf-8", errors="surrogatepass")
    else:
        data = raw
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONProblem(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if len(data) > max_bytes:
        raise JSONProblem(f"{len(data)} bytes of JSON text, more than the {max_bytes} this tool parses; not parsed")
    # Parsed first, its depth measured after: the parser itself stops (RecursionError, caught) well before a
    # nesting that could harm the run, and walking the parsed value costs what scanning the text would, without
    # the copies a scan of text that skips strings makes (25 times the text for many short strings).
    try:
        value = json.loads(text, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:  # deeper than Python's parser goes: measured on the text, for the message
        raise JSONProblem(f"nested {nesting(data)} levels deep, more than the {max_nesting} levels this tool reads") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise JSONProblem(f"not valid JSON ({exc})") from None
    if data.count(b"[") + data.count(b"{") > max_nesting:  # else it cannot nest deeper than allowed
        depth = value_nesting(value)
        if depth > max_nesting:
            raise JSONProblem(f"nested {depth} levels deep, more than the {max_nesting} levels this tool reads")
    return value


def value_nesting(value: Any) -> int:
    """How deeply lists and dicts nest in a parsed JSON value (0 for a scalar), without recursion.

    Level by level, testing exact types: the values come from `json.loads`, which makes plain dicts and lists,
    and a list of each level's containers costs a third of a stack of (container, depth) pairs (0.07 s for the
    5.5 MB consolidated zarr.json of a 4,000-column store).
    """
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        below = []
        for item in level:
            for child in item.values() if type(item) is dict else item:
                if type(child) is dict or type(child) is list:
                    below.append(child)
        level = below
    return depth
