"""Parse stored JSON text within bounds: the nesting it may have, and one-line reasons for what does not parse.

Python's parser recurses once per nesting level and a document 100,000 levels deep stops it with RecursionError;
one that parses a few hundred levels deep may stop every check that walks it afterwards. So nesting is measured
on the text, without recursion, and a document nested deeper than MAX_NESTING is refused with a reason, like one
that is not JSON; so is text of more than MAX_JSON_BYTES (documents are bounded where they are read as well,
`keyvalue.MAX_DOCUMENT_BYTES`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

# The deepest nesting of arrays and objects a stored document may have: real metadata nests a few levels.
MAX_NESTING = 64
# The most bytes of JSON text parsed at once (a stored document, a JSON-valued attribute): parsing N bytes builds
# Python objects of several times N. Documents read from a store are bounded at the same size when read.
MAX_JSON_BYTES = 64 * 2**20


class JSONProblem(ValueError):
    """Text that is no JSON document this tool reads; the message says why in one line."""


def nesting(raw: bytes) -> int:
    """How deeply arrays and objects nest in the JSON text `raw` (brackets inside strings not counted), without
    parsing it: exact for valid JSON, an estimate for other text.

    Escapes hold the only backslashes of valid JSON, so with each escaped backslash and then each escaped quote
    made two plain bytes (escapes paired left to right, as the parser reads them), every quote left opens or closes
    a string, and a bracket lies inside a string where an odd number of quotes precede it. A text with no quote
    right after a backslash (most: `\\n` and `\\u00e9` escape no quote) is read as it is, without those copies.
    Block by block, with the positions of the quotes and brackets only: memory bounded by the block, whatever the
    text's size, and no object per string.
    """
    text = raw.replace(b"\\\\", b"__").replace(b'\\"', b"__") if b'\\"' in raw else raw
    chars = np.frombuffer(text, dtype=np.uint8)
    depth = deepest = 0
    in_string = 0  # 1 where the block starts inside a string
    for start in range(0, chars.size, _NESTING_BLOCK):
        part = chars[start : start + _NESTING_BLOCK]
        quotes = np.flatnonzero(part == _QUOTE)
        folded = part | 0x20  # "[" and "{" fold to "{", "]" and "}" to "}", and no other byte does
        brackets = np.flatnonzero((folded == _OPENING) | (folded == _CLOSING))
        outside = brackets[((np.searchsorted(quotes, brackets) + in_string) & 1) == 0]
        if outside.size:
            running = np.cumsum(np.where(folded[outside] == _OPENING, 1, -1)) + depth
            deepest = max(deepest, int(running.max()))
            depth = int(running[-1])
        in_string = (in_string + quotes.size) & 1
    return deepest


_NESTING_BLOCK = 1 << 18
_QUOTE, _OPENING, _CLOSING = ord('"'), ord("{"), ord("}")


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
    # nesting that could harm the run, and a text that does not parse is refused without a scan.
    try:
        value = json.loads(text, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:  # deeper than Python's parser goes: measured on the text, for the message
        raise JSONProblem(f"nested {nesting(data)} levels deep, more than the {max_nesting} levels this tool reads") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise JSONProblem(f"not valid JSON ({exc})") from None
    if data.count(b"[") + data.count(b"{") > max_nesting:  # else it cannot nest deeper than allowed
        depth = nesting(data)  # from the text: a third of the time a walk of the parsed value takes
        if depth > max_nesting:
            raise JSONProblem(f"nested {depth} levels deep, more than the {max_nesting} levels this tool reads")
    return value
