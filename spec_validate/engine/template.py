"""Message templates: `{name}` lookups from a fixed set of values, nothing else is evaluated."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render(template: str, values: Mapping[str, Any]) -> str:
    """Replace each `{name}` with `values[name]`; unknown names are left as written."""
    return _FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)
