"""Raw read-only key/value access to a Zarr store (a directory or a zip file), confined to the store."""

from __future__ import annotations

import errno
import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from spec_validate.errors import InputError, NodeError, TooLarge

# The most bytes a format's metadata document may hold (the format reader asks for it with this bound): a real one, even
# the consolidated metadata of a store with many thousand arrays, is far smaller; a larger one is reported, not read.
MAX_DOCUMENT_BYTES = 64 * 2**20
# The most bytes any one key may hold (a chunk is also bounded by what its codecs can make of its size).
MAX_VALUE_BYTES = 1 << 30


# Folders nested deeper than this are not listed (reported once), nor are groups walked deeper by the node layer:
# no real store nests this deep, and every walk must end on any input.
MAX_DEPTH = 256


class ValueTooLarge(NodeError):
    """A stored value larger than the reader may take: refused before a byte of it is read."""


def _too_large(key: str, size: int, limit: int) -> ValueTooLarge:
    return ValueTooLarge(f"{key} holds {size} bytes, more than the {limit} read for it; not read")


def is_key(key: str) -> bool:
    """True for a key that names something inside a store: no empty, `.` or `..` segment, no backslash."""
    return bool(key) and "\\" not in key and not any(part in ("", ".", "..") for part in key.split("/"))


def keys_below(
    prefix: str, list_dir: Callable[[str], tuple[list[str], list[str]]], skip: Callable[[str, str], None]
) -> Iterator[str]:
    """Every key below `prefix`, depth first in sorted order, from `list_dir` as it lists (no recursion limit).

    Directories more than MAX_DEPTH levels below the store's root are not entered, and `skip` is told once, at the
    same key whichever prefix a listing started from.
    """
    stack = [(prefix, prefix.count("/") + 1 if prefix else 0)]
    while stack:
        here, depth = stack.pop()
        keys, dirs = list_dir(here)
        for k in keys:
            yield join_key(here, k)
        if dirs and depth >= MAX_DEPTH:
            skip(here, f"folders nest more than {MAX_DEPTH} levels deep; nothing below is read")
            continue
        stack.extend((join_key(here, d), depth + 1) for d in reversed(dirs))


def read_checked(key: str, where: str, get: Callable[[str], bytes | None], stored: Callable[[str], bool]) -> bytes | None:
    """`get(key)`, with every way it can fail as one NodeError naming `where`: more than its bound (TooLarge), a failure to
    read, or nothing got for a key that is `stored` (absent and unreadable are different findings)."""
    try:
        raw = get(key)
    except ValueTooLarge as exc:
        raise TooLarge(f"{where or key}: {exc}") from None
    except Exception as exc:
        raise NodeError(f"{where or key}: cannot read {key} ({exc})") from None
    if raw is None and stored(key):
        raise NodeError(f"{where or key}: {key} is stored but cannot be read")
    return raw


class KeyValueStore(ABC):
    """Keys are `/`-separated, relative to the store root, with no leading slash."""

    location: str
    # Told about each entry a listing leaves out because reading it would be unsafe (a symlink out of the store or to
    # a directory, a FIFO or device, a zip entry name that is no key): (key, why). The tree reports them.
    report: Callable[[str, str], None] | None = None

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The stored bytes, or None when the key is absent or lies outside the store."""

    def get_bounded(self, key: str, limit: int) -> bytes | None:
        """As `get`, but ValueTooLarge when the value holds more than `limit` bytes (checked before reading where the
        storage tells the size)."""
        raw = self.get(key)
        if raw is not None and len(raw) > limit:
            raise _too_large(key, len(raw), limit)
        return raw

    @abstractmethod
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(keys, sub-prefixes) directly below `prefix` ("" for the root), sorted."""

    def read(self, key: str, where: str = "", limit: int = MAX_DOCUMENT_BYTES) -> bytes | None:
        """The stored bytes of `key`; None only when it is not stored. A key that is stored but cannot be read
        (no permission, a symlink out of the store, a damaged zip entry, more than `limit` bytes) raises NodeError:
        absent and unreadable are different findings."""
        return read_checked(key, where, lambda k: self.get_bounded(k, limit), self.stored)

    def stored(self, key: str) -> bool:
        """True when something is stored under `key` (readable or not). Backends that cannot tell say False."""
        return False

    def left_out(self, prefix: str) -> frozenset[str] | None:
        """The names in the folder `prefix` that its `list_dir` left out (a symlink, a special file, a name no key
        can have), once it has been listed; None when it has not, or the store cannot say. A name in neither the
        listing nor these is not stored: a reader that has the listing need not ask for it."""
        return None

    def unlisted(self, prefix: str, below: bool = False) -> str | None:
        """Why the folder `prefix` (with `below`: or a folder below it) could not be listed, once that was tried: a
        listing that failed, not an empty folder. None where it was listed, or the store cannot say."""
        return None

    # True when many keys are fetched faster together than one by one (a remote store over an asynchronous file
    # system): readers then ask for a whole level of documents, or a block's chunks, in one call.
    batched = False

    @property
    def lists(self) -> bool:
        """True when `list_dir` lists what is stored. False for a remote store that is not listed (its server gives
        no listings, or the run was asked not to list): its listings are then what its consolidated metadata names,
        no chunk and no key it leaves out."""
        return True

    @property
    def members_known(self) -> bool:
        """False for a remote store that neither lists nor has consolidated metadata: nothing names a group's
        members, so none can be found."""
        return True

    def get_many(self, keys: list[str], limit: int | None = None) -> dict[str, bytes | None]:
        """`get` of every key, together where the store can (concurrently for a remote store); one by one here. A
        key whose value holds more than `limit` bytes is left out: its caller reads it alone, and refuses it there
        with the reason (a batch never holds more than `limit` bytes for one key)."""
        out: dict[str, bytes | None] = {}
        for key in keys:
            try:
                out[key] = self.get_bounded(key, MAX_VALUE_BYTES if limit is None else limit)
            except ValueTooLarge:
                continue
        return out

    def get_many_soon(self, keys: list[str], limit: int | None = None) -> Callable[[], dict[str, bytes | None]]:
        """`get_many`, started now where the store can fetch while its caller goes on (a remote store): the function
        returned gives what `get_many` would. Here nothing is started: the function reads the keys when called."""
        return lambda: self.get_many(keys, limit)

    def list_many(self, prefixes: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        """`list_dir` of every prefix, together where the store can; one by one here."""
        return {prefix: self.list_dir(prefix) for prefix in prefixes}

    def get_and_list_many(
        self, keys: list[str], prefixes: list[str], limit: int | None = None
    ) -> tuple[dict[str, bytes | None], dict[str, tuple[list[str], list[str]]]]:
        """`get_many(keys, limit)` and `list_many(prefixes)`, all together where the store can (a remote store: one
        round trip for both, so that a reader walking a hierarchy fetches one level's documents while it lists the
        next); one after the other here."""
        return self.get_many(keys, limit), self.list_many(prefixes)

    def read_part(self, key: str, offset: int, length: int) -> tuple[bytes, int] | None:
        """Up to `length` bytes of the value of `key` from `offset` (from the end when negative), and the value's whole
        size; None when the key is not stored. Raises NodeError as `read` does. Stores that can read a range override
        this; the fallback reads the whole value (bounded as any value is)."""
        raw = self.read(key, limit=MAX_VALUE_BYTES)
        if raw is None:
            return None
        size = len(raw)
        start = max(0, size + offset) if offset < 0 else min(offset, size)
        return bytes(raw[start : start + length]), size

    def list_keys(self, prefix: str) -> list[str]:
        """Every key below `prefix`, recursively, relative to the store root."""
        return list(self.iter_keys(prefix))

    def iter_keys(self, prefix: str) -> Iterator[str]:
        """Every key below `prefix`, depth first in sorted order, found as they are listed (`keys_below`)."""
        return keys_below(prefix, self.list_dir, self.skip)

    def skip(self, key: str, why: str) -> None:
        """Report an entry left out of a listing (once per key, by the tree)."""
        if self.report is not None:
            self.report(key, why)

    def raw_keys(self) -> list[str] | None:
        """Every key as the store holds it, unnormalised (backslashes, empty or dot segments, non-ASCII names kept),
        including those `list_dir` leaves out. Here: the keys `list_dir` finds (backends that see more override it)."""
        return sorted(self.list_keys(""))

    def close(self) -> None:  # noqa: B027 -- optional: a store holding nothing open inherits this
        """Release what the store holds open; nothing by default."""


def join_key(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


# Opening a key's file: never through a symlink (those take the checked path), and never blocking on a FIFO.
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


_NONE_LEFT_OUT: frozenset[str] = frozenset()


class DirectoryStore(KeyValueStore):
    def __init__(self, root: str) -> None:
        self.location = root
        self._root = os.path.realpath(root)
        # Directory prefix -> its real path, checked to lie inside the store (None: it does not). Resolving
        # every key's full path cost more than reading a small chunk; a directory is resolved once.
        self._folders: dict[str, str | None] = {"": self._root}
        self._left_out: dict[str, frozenset[str]] = {}  # listed folder -> the names its listing left out
        self._unlisted: dict[str, str] = {}  # folder whose listing failed -> why

    def resolve(self, key: str) -> str | None:
        """The file system path of `key`, symlinks resolved; None when the key is malformed or leads outside the store."""
        if not is_key(key):
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
        return self.get_bounded(key, MAX_VALUE_BYTES)

    def get_bounded(self, key: str, limit: int) -> bytes | None:
        prefix, _, name = key.rpartition("/")
        folder = self._folder(prefix) if _NO_FOLLOW and name not in ("", ".", "..") and "\\" not in name else None
        if folder is None:
            return self._get_resolved(key, limit)
        path = _joined(folder, name)
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            # Absent or unreadable; or a symlink (ELOOP, or "not a directory" for one to a directory):
            # the full check decides whether it stays inside the store.
            return self._get_resolved(key, limit) if os.path.islink(path) else None
        try:
            return _read_regular(fd, key, limit)
        finally:
            os.close(fd)

    def stored(self, key: str) -> bool:
        if not is_key(key):
            return False
        full = os.path.join(self._root, *key.split("/"))
        if os.path.lexists(full):
            return True
        # A folder that may be listed but not searched (read permission without execute) hides whether a file is
        # in it: what cannot be opened there is unreadable, never taken for absent.
        folder = os.path.dirname(full)
        return os.path.isdir(folder) and not os.access(folder, os.X_OK)

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

    def _get_resolved(self, key: str, limit: int) -> bytes | None:
        full = self.resolve(key)
        if full is None:
            return None
        try:
            fd = os.open(full, _OPEN_FLAGS & ~_NO_FOLLOW)  # resolved already; never blocking on a FIFO
        except OSError:
            return None
        try:
            return _read_regular(fd, key, limit)
        finally:
            os.close(fd)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        full = self._folder(prefix)
        if full is None:
            return [], []
        keys, dirs = [], []
        try:
            with os.scandir(full) as scan:
                entries = list(scan)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # not gone, nor a file: stored, and unreadable
                why = self._unlisted[prefix] = f"cannot be listed ({exc.strerror or exc})"
                self.skip(prefix or ".", f"{prefix or 'the store root'}: {why}; nothing below it is read")
            return [], []
        self._left_out[prefix] = _NONE_LEFT_OUT
        head = f"{prefix}/" if prefix else ""
        for entry in entries:
            name = entry.name
            if "\\" in name:
                continue  # no key can name it (a rule on the stored names reports it: raw_keys); nothing unsafe
            try:
                # Regular files and folders that are no symlinks, from the listing's own file types (no stat): the
                # common case. Inside a directory that lies in the store only a symlink can lead out.
                if entry.is_file(follow_symlinks=False):
                    keys.append(name)
                elif entry.is_dir(follow_symlinks=False):
                    dirs.append(name)
                    # The folder's checked path, from this listing (the entry's path: the listed folder's joined
                    # with its name): no lstat when it is read or listed in turn.
                    self._folders.setdefault(head + name, entry.path)
                elif self._linked_file(join_key(prefix, name), entry):
                    keys.append(name)
            except OSError as exc:  # a name the file system cannot stat (a symlink loop): not a key
                key = join_key(prefix, name)
                self.skip(key, f"{key}: cannot be examined ({exc.strerror or exc}); not read")
        keys.sort()
        dirs.sort()
        if len(keys) + len(dirs) < len(entries):
            listed = set(keys).union(dirs)
            self._left_out[prefix] = frozenset(e.name for e in entries if e.name not in listed)
        return keys, dirs

    def _linked_file(self, key: str, entry: os.DirEntry[str]) -> bool:
        """Whether a listed entry that is neither a plain file nor a plain folder is a key: a symlink to a file
        inside the store. Anything else is reported as skipped (a symlink leading out, one to a directory, which
        could lead back to an ancestor or show one folder under two names, a FIFO, socket or device)."""
        link = entry.is_symlink()
        if link and self.resolve(key) is None:
            self.skip(key, f"{key}: a symlink that leads outside the store; not read")
        elif link and entry.is_dir():
            self.skip(key, f"{key}: a symlink to a directory; not followed")
        elif entry.is_file():
            return True
        elif not link or os.path.exists(entry.path):
            self.skip(key, f"{key}: not a regular file (a FIFO, socket or device); never opened")
        return False

    def left_out(self, prefix: str) -> frozenset[str] | None:
        return self._left_out.get(prefix)

    def unlisted(self, prefix: str, below: bool = False) -> str | None:
        if not self._unlisted or not below:
            return self._unlisted.get(prefix)
        inside = f"{prefix}/" if prefix else ""
        return next((why for p, why in self._unlisted.items() if p == prefix or p.startswith(inside)), None)

    def raw_keys(self, list_dir: Callable[[str], tuple[list[str], list[str]]] | None = None) -> list[str]:
        """Every entry's key, walked from the root (see KeyValueStore.raw_keys). `list_dir`, when given, is this
        store's `list_dir` with its listings kept (a tree's): folders are then read from those listings and the
        names they left out, not listed a second time."""
        if list_dir is None:
            return sorted(self._walk_raw("", 0))
        out: list[str] = []
        stack = [("", 0)]
        while stack:
            prefix, depth = stack.pop()
            keys, dirs = list_dir(prefix)
            left_out = self.left_out(prefix)
            if left_out is None:  # not listed (it could not be): walked as stored
                out.extend(self._walk_raw(f"{prefix}/" if prefix else "", depth))
                continue
            out.extend(join_key(prefix, k) for k in keys)
            for name in left_out:
                key = join_key(prefix, name)
                if self._real_folder(key):  # a folder no key can name (a backslash in its name): walked as stored
                    if depth < MAX_DEPTH:
                        out.extend(self._walk_raw(key + "/", depth + 1))
                else:
                    out.append(key)
            if depth < MAX_DEPTH:
                stack.extend((join_key(prefix, d), depth + 1) for d in dirs)
        return sorted(out)

    def _real_folder(self, key: str) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(os.path.join(self._root, *key.split("/"))).st_mode)
        except OSError:
            return False

    def _walk_raw(self, start: str, start_depth: int) -> list[str]:
        """The keys of every entry at and below the folder `start` ("" or ending in "/"), unsorted."""
        # Iterative, never through a symlink, MAX_DEPTH levels at most (os.walk recurses once per level).
        out = []
        stack = [(start, start_depth)]
        while stack:
            prefix, depth = stack.pop()
            try:
                entries = list(os.scandir(os.path.join(self._root, *prefix.split("/")) if prefix else self._root))
            except OSError:
                continue
            for entry in entries:
                key = prefix + entry.name
                try:
                    walked = entry.is_dir(follow_symlinks=False)
                except OSError:
                    walked = False
                if not walked:
                    # A file, a special file or a symlink (to a directory too): its own name is what the store holds.
                    out.append(key)
                elif depth < MAX_DEPTH:
                    stack.append((key + "/", depth + 1))
        return out


def _joined(folder: str, name: str) -> str:
    """`os.path.join(folder, name)` for a resolved folder and one plain name (no separator in it), without the
    general join's checks: it is asked for every document read."""
    return folder + name if folder.endswith(os.sep) else f"{folder}{os.sep}{name}"


# Files under this size are read with one os.read (see `_read_regular`).
DIRECT_READ_BYTES = 1 << 20


def _read_regular(fd: int, key: str, limit: int) -> bytes | None:
    """The bytes of the open file `fd`; None for a directory or a special file (never read); ValueTooLarge past `limit`."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None  # a directory, FIFO or device: not a key's value
        if st.st_size > limit:
            raise _too_large(key, st.st_size, limit)
        # A small file (a metadata document, a chunk of a dataframe column) in one os.read: a buffered reader
        # over `fd` costs more than the read. One byte more than its size shows a file that grew.
        data = os.read(fd, st.st_size + 1) if st.st_size < DIRECT_READ_BYTES else b""
        if len(data) < st.st_size:  # a large file, or a short read: the rest through a reader, which reads on
            with open(fd, "rb", closefd=False) as fh:
                data += fh.read(st.st_size + 1 - len(data))  # read(n) allocates n bytes first: the size, not the bound
    except OSError:
        return None
    if len(data) > st.st_size:  # it grew while being read: what was read is not the value
        raise NodeError(f"{key}: changed while it was read")
    return data


class ZipStore(KeyValueStore):
    """A zipped store. Where a key occurs twice (zarr's ZipStore appends), the last entry wins, as zarr reads it.

    Entry names that are no keys (`a//b`, `../x`, `/abs`, backslashes) are reported and never read; a member is
    read only up to the size its header declares, and only when that is within the bound asked for.
    """

    def __init__(self, path: str) -> None:
        self.location = path
        try:
            import zipfile  # only for zipped stores (zipfile pulls in bz2, lzma, shutil: startup time)

            self._zip = zipfile.ZipFile(path, "r")
            infos = self._zip.infolist()
        except Exception as exc:
            raise InputError(f"{path}: cannot open as a zip store ({type(exc).__name__}: {exc})") from None
        self._entries: dict[str, Any] = {}  # name -> zipfile.ZipInfo
        self._refused: dict[str, str] = {}  # entry name -> why it is no key
        names = []
        for info in infos:
            if info.is_dir():
                continue
            name = info.filename
            if name.startswith("/") or not is_key(name):
                self._refused.setdefault(
                    name,
                    f"zip entry {name[:200]!r}: its name is no key (empty, '.' or '..' "
                    "segments, a backslash, or a leading '/'); not read",
                )
                continue
            names.append(name)
            self._entries[name] = info
        self.duplicate_keys = _duplicates(names)
        # prefix -> (keys, sub-prefixes) directly below it, built once: a listing is then one lookup. Prefixes stop
        # a level below MAX_DEPTH (where listings stop): a name 30,000 levels deep would otherwise make 30,000
        # prefixes of up to 64 KB each.
        self._listing: dict[str, tuple[set[str], set[str]]] = {"": (set(), set())}
        for name in self._entries:
            parts = name.split("/", MAX_DEPTH + 2)
            if len(parts) > MAX_DEPTH + 2:  # listed as far as listings go: its first levels, as folders
                parent, leaf = "/".join(parts[: MAX_DEPTH + 1]), None
            else:
                parent, _, leaf = name.rpartition("/")
            if leaf is not None:
                self._listing.setdefault(parent, (set(), set()))[0].add(leaf)
            self._listing.setdefault(parent, (set(), set()))
            while parent:
                up, _, child = parent.rpartition("/")
                entry = self._listing.setdefault(up, (set(), set()))
                if child in entry[1]:
                    break
                entry[1].add(child)
                self._listing.setdefault(parent, (set(), set()))
                parent = up

    def get(self, key: str) -> bytes | None:
        return self.get_bounded(key, MAX_VALUE_BYTES)

    def get_bounded(self, key: str, limit: int) -> bytes | None:
        info = self._entries.get(key)
        if info is None:
            return None
        if info.file_size > limit:
            raise _too_large(key, info.file_size, limit)
        try:
            # zipfile stops at the size the header declares (and then checks the CRC): a member that inflates past
            # it is an error here, never a larger allocation.
            with self._zip.open(info) as fh:
                return fh.read(info.file_size + 1)  # within `limit` (checked above); past its declared size, an error
        except Exception:
            return None

    def stored(self, key: str) -> bool:
        return key in self._entries

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        if prefix == "":
            for name, why in self._refused.items():
                self.skip(name, why)
        keys, dirs = self._listing.get(prefix, ((), ()))
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
