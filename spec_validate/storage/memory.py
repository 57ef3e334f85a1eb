"""A key/value store held in memory: keys to bytes, given whole when it is made.

For inputs that are no store on disk but are read as one: an attributes document on its own is the one group of a
store that holds nothing else (`spec_validate/nodes/attributes`). It knows no format, as every store here.
"""

from __future__ import annotations

from collections.abc import Mapping

from spec_validate.storage.keyvalue import KeyValueStore, is_key


class MemoryStore(KeyValueStore):
    """The keys and values given, read-only; `location` names the input they were made from."""

    def __init__(self, location: str, items: Mapping[str, bytes]) -> None:
        bad = [k for k in items if not is_key(k)]
        if bad:
            raise ValueError(f"not a key: {bad[0]!r}")
        self.location = location
        self._items = dict(items)

    def get(self, key: str) -> bytes | None:
        return self._items.get(key)

    def stored(self, key: str) -> bool:
        return key in self._items

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        start = f"{prefix}/" if prefix else ""
        keys: set[str] = set()
        dirs: set[str] = set()
        for key in self._items:
            if key.startswith(start):
                rest = key[len(start) :]
                (dirs if "/" in rest else keys).add(rest.split("/", 1)[0])
        return sorted(keys), sorted(dirs)
