"""Values as reports quote them: as JSON where they can be, cut to a length."""

from __future__ import annotations

import json
from typing import Any


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` - 3 characters and "..." when longer than `limit`."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_excerpt(value: Any, limit: int = 80) -> str:
    """`value` as JSON (its repr when it is no JSON value), cut to `limit` characters."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, limit)
