"""invalid_json: elements of a string array that do not parse as JSON, with the first offenders."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class InvalidJson(NamedTuple):
    index: int
    reason: str
    preview: str


class JsonPartial(NamedTuple):
    count: int  # elements that are no JSON text: every one counted
    found: tuple[InvalidJson, ...]  # the first `limit` of them, in index order


def _reason(value: Any) -> str | None:
    """Why `value` is no JSON text, or None when it is one."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"is not UTF-8 ({exc.reason} at byte {exc.start})"
    if not isinstance(value, str):
        return f"holds {type(value).__name__} {value!r:.40}, expected a JSON string"
    try:
        json.loads(value)
    except json.JSONDecodeError as exc:
        return f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:  # the C parser recurses once per nesting level and stops cleanly at the limit
        return "nests too deeply to parse"
    return None


def summarize(block: Block, limit: int = 20) -> JsonPartial:
    """The elements of one block that are no JSON text.

    A block with a chunk that did not decode counts each such chunk once, with its problem as the reason
    and the block's first index, and judges none of its values (those of the bad chunk are not data).
    """
    bad_chunks = [c for c in block.chunks if c.problem is not None]
    if bad_chunks:
        found = [InvalidJson(block.start, f"does not decode ({c.problem})", "") for c in bad_chunks]
        return JsonPartial(len(bad_chunks), tuple(found[:limit]))
    if block.uniform:  # one value repeated: judged once
        value = block.values[0]
        reason = _reason(value.item() if isinstance(value, np.generic) else value)
        if reason is None:
            return JsonPartial(0, ())
        n = block.size
        return JsonPartial(n, tuple(InvalidJson(block.start + i, reason, str(value)[:80]) for i in range(min(n, limit))))
    count, found = 0, []
    for offset, value in enumerate(block.values.reshape(-1)):
        reason = _reason(value.item() if isinstance(value, np.generic) else value)
        if reason is None:
            continue
        count += 1
        if len(found) < limit:
            found.append(InvalidJson(block.start + offset, reason, str(value)[:80]))
    return JsonPartial(count, tuple(found))


@kernel("invalid_json", summarize=summarize, reads_chunks=True)
def combine(left: JsonPartial, right: JsonPartial, limit: int = 20) -> JsonPartial:
    """Both spans as one; offenders stay in index order."""
    return JsonPartial(left.count + right.count, (left.found + right.found)[:limit])
