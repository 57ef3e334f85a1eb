"""Examples quoted from the docs, read from the pages themselves so that a doc and its tests cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

PACKS_MD = Path(__file__).resolve().parents[1] / "docs" / "packs.md"


def extends_example() -> str:
    """The `extends:` example pack of docs/packs.md ("Your own pack"), verbatim: its one YAML block with a
    top-level `extends:` key."""
    blocks = re.findall(r"^```yaml\n(.*?)^```$", PACKS_MD.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    found = [b for b in blocks if re.search(r"^extends:", b, flags=re.MULTILINE)]
    assert len(found) == 1, f"{PACKS_MD}: expected one YAML block with `extends:`, found {len(found)}"
    return found[0]
