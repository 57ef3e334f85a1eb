"""Raw read-only key/value access to a Zarr store (a directory or a zip file), confined to the store."""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from typing import Any

from validator.errors import InputError
from validator.nodes.base import NodeError


class KeyValueStore(ABC):
    """Keys are `/`-separated, relative to the store root, with no leading slash."""

    location: str

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The stored bytes, or None when the key is absent or lies outside the store."""

    @abstractmethod
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(keys, sub-prefixes) directly below `prefix` ("" for the root), sorted."""

    def read(self, key: str, where: str = "") -> bytes | None:
        """The stored bytes of `key`; None only when it is not stored. A key that is stored but cannot be read
        (no permission, a symlink out of the store, a damaged zip entry) raises NodeError: absent and
        unreadable are different findings."""
        try:
            raw = self.get(key)
        except Exception as exc:
            raise NodeError(f"{where or key}: cannot read {key} ({exc})") from None
        if raw is None and self.stored(key):
            raise NodeError(f"{where or key}: {key} is stored but cannot be read")
        return raw

    def stored(self, key: str) -> bool:
        """True when something is stored under `key` (readable or not). Backends that cannot tell say False."""
        return False

    # True when many keys are fetched faster together than one by one (a remote store over an asynchronous file
    # system): readers then ask for a whole level of documents, or a block's chunks, in one call.
    batched = False

    def get_many(self, keys: list[str]) -> dict[str, bytes | None]:
        """`get` of every key, together where the store can (concurrently for a remote store); one by one here."""
        return {key: self.get(key) for key in keys}

    def list_many(self, prefixes: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        """`list_dir` of every prefix, together where the store can; one by one here."""
        return {prefix: self.list_dir(prefix) for prefix in prefixes}

    def read_part(self, key: str, offset: int, length: int) -> tuple[bytes, int] | None:
        """Up to `length` bytes of the value of `key` from `offset` (from the end when negative), and the value's whole
        size; None when the key is not stored. Raises NodeError as `read` does. Stores that can read a range override
        this; the fallback reads the whole value."""
        raw = self.read(key)
        if raw is None:
            return None
        size = len(raw)
        start = max(0, size + offset) if offset < 0 else min(offset, size)
        return bytes(raw[start : start + length]), size

    def list_keys(self, prefix: str) -> list[str]:
        """Every key below `prefix`, recursively, relative to the store root."""
        keys, dirs = self.list_dir(prefix)
        out = [_join(prefix, k) for k in keys]
        for d in dirs:
            out.extend(self.list_keys(_join(prefix, d)))
        return out

    def raw_keys(self) -> list[str] | None:
        """Every key as the store holds it, unnormalised (backslashes, empty or dot segments, non-ASCII names kept),
        including those `list_dir` leaves out. Here: the keys `list_dir` finds (backends that see more override it)."""
        return sorted(self.list_keys(""))

    def close(self) -> None:  # noqa: B027 -- optional: a store holding nothing open inherits this
        """Release what the store holds open; nothing by default."""


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


# Opening a key's file: never through a symlink (those take the checked path), and never blocking on a FIFO.
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class DirectoryStore(KeyValueStore):
    def __init__(self, root: str) -> None:
        self.location = root
        self._root = os.path.realpath(root)
        # Directory prefix -> its real path, checked to lie inside the store (None: it does not). Resolving
        # every key's full path cost more than reading a small chunk; a directory is resolved once.
        self._folders: dict[str, str | None] = {"": self._root}

    def resolve(self, key: str) -> str | None:
        """The file system path of `key`, symlinks resolved; None when the key is malformed or leads outside the store."""
        if any(part in ("", ".", "..") for part in key.split("/")) or "\\" in key:
            return None
        full = os.path.realpath(os.path.join(self._root, *key.split("/")))
        # A symlink that leads out of the store is treated as absent: we never read outside it.
        if full != self._root and not full.startswith(self._root + os.sep):
            return None
        return full

    def _folder(self, prefix: str) -> str | None:
        try:
            return self._folders[prefix]
        except KeyError:
            folder = self._folders[prefix] = self._resolve_folder(prefix)
            return folder

    def _resolve_folder(self, prefix: str) -> str | None:
        # From the parent's checked path: one lstat for the last part unless it is a symlink, rather than
        # resolving every part again (thousands of dataframe columns made realpath a third of a run).
        parent, _, name = prefix.rpartition("/")
        base = self._folder(parent)
        if base is None or name in ("", ".", "..") or "\\" in name:
            return None
        full = os.path.join(base, name)
        return self.resolve(prefix) if os.path.islink(full) else full

    def get(self, key: str) -> bytes | None:
        prefix, _, name = key.rpartition("/")
        folder = self._folder(prefix) if _NO_FOLLOW and name not in ("", ".", "..") and "\\" not in name else None
        if folder is None:
            return self._get_resolved(key)
        try:
            fd = os.open(os.path.join(folder, name), _OPEN_FLAGS)
        except OSError:
            # Absent or unreadable; or a symlink (ELOOP, or "not a directory" for one to a directory):
            # the full check decides whether it stays inside the store.
            return self._get_resolved(key) if os.path.islink(os.path.join(folder, name)) else None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None  # a directory or a device: not a key's value
            with open(fd, "rb", closefd=False) as fh:
                return fh.read()
        except OSError:
            return None
        finally:
            os.close(fd)

    def stored(self, key: str) -> bool:
        if any(part in ("", ".", "..") for part in key.split("/")) or "\\" in key:
            return False
        return os.path.lexists(os.path.join(self._root, *key.split("/")))

    def read_part(self, key: str, offset: int, length: int) -> tuple[bytes, int] | None:
        full = self.resolve(key)
        if full is None:
            return None
        try:
            fd = os.open(full, _OPEN_FLAGS & ~_NO_FOLLOW)  # `full` has its symlinks resolved, inside the store
        except OSError:
            if self.stored(key):
                raise NodeError(f"{key}: stored but cannot be read") from None
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            size = info.st_size
            start = max(0, size + offset) if offset < 0 else min(offset, size)
            return os.pread(fd, max(0, min(length, size - start)), start), size
        finally:
            os.close(fd)

    def _get_resolved(self, key: str) -> bytes | None:
        full = self.resolve(key)
        if full is None or not os.path.isfile(full):
            return None
        try:
            with open(full, "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        full = self._folder(prefix)
        if full is None:
            return [], []
        keys, dirs = [], []
        try:
            with os.scandir(full) as scan:  # not a directory (or gone): nothing below it
                entries = list(scan)
        except OSError:
            return [], []
        for entry in entries:
            name = entry.name
            # Inside a directory that lies in the store only a symlink can lead out; a name with a backslash
            # is no key (resolve refuses it, raw_keys reports it).
            if "\\" in name:
                continue
            link = entry.is_symlink()
            if link and self.resolve(_join(prefix, name)) is None:
                continue
            if entry.is_dir():
                dirs.append(name)
                if not link:
                    # The folder's checked path, from this listing: no lstat when it is read or listed in turn.
                    self._folders.setdefault(_join(prefix, name), os.path.join(full, name))
            elif entry.is_file():
                keys.append(name)
        keys.sort()
        dirs.sort()
        return keys, dirs

    def raw_keys(self) -> list[str]:
        out = []
        for folder, dirs, files in os.walk(self._root, followlinks=False):
            rel = os.path.relpath(folder, self._root)
            prefix = "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"
            out.extend(prefix + name for name in files)
            # A symlink to a directory is not walked: only its own name, as a key, is what the store holds.
            out.extend(prefix + name for name in dirs if os.path.islink(os.path.join(folder, name)))
        return sorted(out)


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

    def stored(self, key: str) -> bool:
        return key in self._entries

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        base = f"{prefix}/" if prefix else ""
        keys, dirs = set(), set()
        for name in self._entries:
            if not name.startswith(base):
                continue
            rest = name[len(base) :]
            head, sep, _ = rest.partition("/")
            if head in ("", ".", ".."):  # an entry no normalized key names (`a//b`, `../x`): raw_keys reports it
                continue
            (dirs if sep else keys).add(head)
        return sorted(keys), sorted(dirs)

    def raw_keys(self) -> list[str]:
        return sorted(info.filename for info in self._zip.infolist() if not info.is_dir())

    def close(self) -> None:
        self._zip.close()


def _duplicates(names) -> list[str]:
    seen: set[str] = set()
    dups: set[str] = set()
    for n in names:
        (dups if n in seen else seen).add(n)
    return sorted(dups)
