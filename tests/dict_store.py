"""A key-value store in memory, for checks that read stored documents and keys (Zarr metadata, listings)."""

from __future__ import annotations

import json
from typing import Any

from spec_validate.storage.keyvalue import KeyValueStore


class DictStore(KeyValueStore):
    """Keys to bytes, in memory: bytes kept as given, any other value stored as its JSON."""

    def __init__(self, items: dict[str, Any]) -> None:
        self.location = "memory"
        self.items = {k: v if isinstance(v, bytes) else json.dumps(v).encode() for k, v in items.items()}

    def get(self, key: str) -> bytes | None:
        return self.items.get(key)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        start = f"{prefix}/" if prefix else ""
        keys, dirs = set(), set()
        for k in self.items:
            if k.startswith(start):
                rest = k[len(start) :]
                (dirs if "/" in rest else keys).add(rest.split("/", 1)[0])
        return sorted(keys), sorted(dirs)
