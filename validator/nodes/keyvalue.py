"""Raw read-only key/value access to a Zarr store (a directory or a zip file), confined to the store."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

from validator.errors import InputError


class KeyValueStore(ABC):
    """Keys are `/`-separated, relative to the store root, with no leading slash."""

    location: str

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The stored bytes, or None when the key is absent or lies outside the store."""

    @abstractmethod
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(keys, sub-prefixes) directly below `prefix` ("" for the root), sorted."""

    def list_keys(self, prefix: str) -> list[str]:
        """Every key below `prefix`, recursively, relative to the store root."""
        keys, dirs = self.list_dir(prefix)
        out = [_join(prefix, k) for k in keys]
        for d in dirs:
            out.extend(self.list_keys(_join(prefix, d)))
        return out

    def close(self) -> None:
        pass


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


class DirectoryStore(KeyValueStore):
    def __init__(self, root: str) -> None:
        self.location = root
        self._root = os.path.realpath(root)

    def _inside(self, key: str) -> str | None:
        if any(part in ("", ".", "..") for part in key.split("/")) or "\\" in key:
            return None
        full = os.path.realpath(os.path.join(self._root, *key.split("/")))
        # A symlink that leads out of the store is treated as absent: we never read outside it.
        if full != self._root and not full.startswith(self._root + os.sep):
            return None
        return full

    def get(self, key: str) -> bytes | None:
        full = self._inside(key)
        if full is None or not os.path.isfile(full):
            return None
        try:
            with open(full, "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        full = self._root if not prefix else self._inside(prefix)
        if full is None or not os.path.isdir(full):
            return [], []
        keys, dirs = [], []
        try:
            entries = sorted(os.scandir(full), key=lambda e: e.name)
        except OSError:
            return [], []
        for entry in entries:
            if self._inside(_join(prefix, entry.name)) is None:
                continue
            if entry.is_dir():
                dirs.append(entry.name)
            elif entry.is_file():
                keys.append(entry.name)
        return keys, dirs


class ZipStore(KeyValueStore):
    """A zipped store. Where a key occurs twice (zarr's ZipStore appends), the last entry wins, as zarr reads it."""

    def __init__(self, path: str) -> None:
        self.location = path
        try:
            import zipfile  # only for zipped stores (zipfile pulls in bz2, lzma, shutil: startup time)

            self._zip = zipfile.ZipFile(path, "r")
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"{path}: cannot open as a zip store ({exc})") from None
        self._entries: dict[str, Any] = {}  # name -> zipfile.ZipInfo
        for info in self._zip.infolist():
            if not info.is_dir():
                self._entries[info.filename.strip("/")] = info
        self.duplicate_keys = _duplicates(i.filename.strip("/") for i in self._zip.infolist() if not i.is_dir())

    def get(self, key: str) -> bytes | None:
        info = self._entries.get(key)
        if info is None:
            return None
        try:
            return self._zip.read(info)
        except Exception:
            return None

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        base = f"{prefix}/" if prefix else ""
        keys, dirs = set(), set()
        for name in self._entries:
            if not name.startswith(base):
                continue
            rest = name[len(base) :]
            head, sep, _ = rest.partition("/")
            (dirs if sep else keys).add(head)
        return sorted(keys), sorted(dirs)

    def close(self) -> None:
        self._zip.close()


def _duplicates(names) -> list[str]:
    seen: set[str] = set()
    dups: set[str] = set()
    for n in names:
        (dups if n in seen else seen).add(n)
    return sorted(dups)
