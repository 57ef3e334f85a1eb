"""What the command line's paths name: stores, nodes inside stores, and the stores and data files found in folders.

As ruff does with source files: any mix of files, stores and folders. A folder that is not itself a store is
searched (`.gitignore` respected, `exclude` patterns and hidden entries left out), and a store found there is
one input, never descended into; what the search looks at and does not validate is listed as skipped, with why.
A folder behind an http(s):// URL is searched the same way, through its server's directory pages, and so is a prefix
of an object store (s3://, gs://, az://), through its listing API. A path inside
a directory store names the node it leads to; a file inside one (pre-commit passes changed keys such as
`x.zarr/X/.zattrs`) names the whole store, validated once. Every input keeps the spelling the user gave it.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

# Directory stores by name, whatever they hold (an implicit-root Zarr store written by tensorstore has no root
# document to find it by). `.nwb.zarr` ends in `.zarr`.
STORE_SUFFIXES = (".zarr", ".cxg")
# Zarr metadata documents: a directory holding one at its root is a store (or a node of one).
# What makes a folder a Zarr store (or a node of one): a group or array document. A `.zattrs` alone is not one: it
# describes a group or an array only beside its `.zgroup` or `.zarray`, and a folder holding a stray one may hold
# files of its own to check.
STORE_DOCUMENTS = (".zgroup", ".zarray", "zarr.json")
TILEDB_MARKERS = ("__tiledb_group.tdb", "__group", "__schema", "__array_schema.tdb")
# Data files by name, case-insensitively (`.h5Seurat` as SeuratDisk writes it); others are found by signature.
DATA_SUFFIXES = (".h5ad", ".h5seurat", ".h5mu", ".zarr.zip")
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
HDF5_OFFSETS = (0, 512, 1024, 2048, 4096, 8192)  # 0, or after a user block
ZIP_SIGNATURE = b"PK\x03\x04"
# Folders never searched, as ruff leaves them out by default (hidden ones, `.git` and `.venv` among them, are
# left out by the dot); `exclude` replaces this list, `extend-exclude` adds to it.
DEFAULT_EXCLUDE = ("__pycache__", "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv")
NOT_A_STORE = "not a store or data file that spec-validate reads"
NOTHING_FOUND = "a folder holding no store or data file that spec-validate reads"
# Hidden entries are left out of a search, except Zarr documents that are no store's: a folder holding one was
# searched because it holds no group or array document, which is worth saying (a store that lost its .zgroup?).
STRAY_DOCUMENTS = (".zattrs", ".zmetadata")
STRAY = "a Zarr metadata document without a .zgroup, .zarray or zarr.json beside it: the folder is no Zarr store"
LINKED_FOLDER = "a link to a folder: searches do not follow links (name what it leads to, to validate it)"
NOT_REGULAR = "not a regular file or folder (a FIFO, socket, device or broken link); never opened"
# A folder behind a URL (a directory page, or an object store's prefix): its files are found by name only (reading
# each one's first bytes would be a request each), and at most MOST_REMOTE_FOLDERS folders are listed (a request
# each): a server whose pages link on without end is searched that far, and the folders left are listed as skipped.
MOST_REMOTE_FOLDERS = 1_000
NOT_NAMED = "not named as a data file (.h5ad, .h5Seurat, .h5mu, .zarr.zip); a file behind a URL is not read to find out"
REMOTE_CXG = "a CXG (TileDB) store: read from local paths only"
TOO_MANY_FOLDERS = f"not searched: a search behind a URL lists at most {MOST_REMOTE_FOLDERS} folders"


class Input(NamedTuple):
    """One thing to validate, or one file found in a folder and skipped."""

    path: str  # the store or file, spelled as the user gave it (a folder's path joined with what was found)
    node: str = "/"  # the node to validate, when the path given lies inside a directory store
    explicit: bool = True  # named on the command line, not found in a folder
    skipped: str | None = None  # found in a folder but not validated: why, in a few words
    unlisted: str | None = None  # a URL that may have named a folder: why its server gives no listing of it


class Exclude(NamedTuple):
    """A glob and the directory it is relative to (the configuration's, or the working directory for flags)."""

    pattern: str
    base: str


def discover(paths: Sequence[str], exclude: Iterable[Exclude] | None = None, respect_gitignore: bool = True) -> list[Input]:
    """The inputs `paths` name, in order, each store once.

    `exclude` defaults to DEFAULT_EXCLUDE. Excludes and `.gitignore` apply to what a folder search finds, never to
    a path named outright (as in ruff).
    """
    if exclude is None:
        exclude = [Exclude(p, os.getcwd()) for p in DEFAULT_EXCLUDE]
    excluded = _Excluder(exclude)
    found: list[Input] = []
    for path in paths:
        found.extend(_expand(path, excluded, respect_gitignore))
    return _once(found)


def _expand(path: str, excluded: _Excluder, respect_gitignore: bool) -> list[Input]:
    from spec_validate.storage.urls import is_url

    if is_url(path):
        return _expand_url(path, excluded)
    given = _as_given(path)
    if not os.path.isdir(given):  # a file, or nothing at all (opening it says so)
        return [Input(store_root(given))]
    inside = _store_of(given)
    if inside is not None:
        return [Input(*inside)]
    walked = list(_walk(given, excluded, _ignored(given) if respect_gitignore else frozenset()))
    if not any(item.skipped is None for item in walked):
        # Nothing to validate in the folder: one line for it, then what was skipped in it.
        return [Input(given, explicit=True, skipped=NOTHING_FOUND), *walked]
    return walked


def _as_given(path: str) -> str:
    """The path without trailing separators (`data/` -> `data`), otherwise as typed."""
    stripped = path.rstrip("/" + os.sep)
    return stripped or path


def _once(inputs: list[Input]) -> list[Input]:
    """Each store once, in first-seen order; a node is dropped when its whole store, or a node above it, is an input."""
    seen: dict[tuple[str, str], Input] = {}
    for item in inputs:
        key = (os.path.abspath(item.path) if "://" not in item.path else item.path, item.node)
        seen.setdefault(key, item)
    nodes_by_store: dict[str, list[str]] = {}
    for store, node in seen:
        nodes_by_store.setdefault(store, []).append(node)

    def covered(store: str, node: str) -> bool:
        return any(
            other != node and (other == "/" or node.startswith(other.rstrip("/") + "/")) for other in nodes_by_store[store]
        )

    return [item for (store, node), item in seen.items() if item.skipped is not None or not covered(store, node)]


# ---------------------------------------------------------------- paths inside stores


def store_root(path: str) -> str:
    """The store a file path belongs to: pre-commit passes inner keys (`x.zarr/X/.zattrs`); `x.zarr` is validated once.

    The nearest ancestor whose name ends in .zarr/.cxg; otherwise, for a file in a directory holding Zarr
    metadata, the highest such directory; otherwise the path unchanged (also for a URL or a directory). A key
    that is gone (a chunk deleted in the commit) maps to its store as well. The root keeps the spelling given.
    A data file (an .h5ad, any HDF5 file, a zipped store) is a store of its own: the path given is the path
    validated, never an enclosing folder (`dir/data.h5ad` beside `dir/.zgroup` is the .h5ad).
    """
    from spec_validate.storage.urls import is_url

    if is_url(path) or os.path.isdir(path) or (_is_regular_file(path) and is_data_file(path)):
        return path
    parent = os.path.dirname(path) or os.curdir
    found = _store_of(parent) if os.path.isdir(parent) else None
    return found[0] if found is not None else path


def _is_regular_file(path: str) -> bool:
    """True for a regular file (after symlinks): a FIFO or device is never opened to look at its first bytes."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _store_of(directory: str) -> tuple[str, str] | None:
    """(store, node) when `directory` is a store (node "/") or lies inside a directory store; None otherwise.

    The store is the nearest ancestor (or the directory itself) named `*.zarr` / `*.cxg`; else the highest of the
    unbroken chain of directories holding Zarr metadata documents (or a TileDB marker) that ends at `directory`.
    """
    chain = _ancestors(directory)
    for spelled, absolute, below in reversed(chain):
        if os.path.basename(absolute).lower().endswith(STORE_SUFFIXES):
            return spelled, _node(below)
    top = None
    for spelled, absolute, below in reversed(chain):  # from `directory` upwards, while each holds documents
        if not _holds_store_documents(absolute):
            break
        top = (spelled, _node(below))
    return top


def _ancestors(directory: str) -> list[tuple[str, str, list[str]]]:
    """(spelling, absolute path, names from it down to `directory`) for `directory` and each directory above it,
    the file system root first. `directory` keeps its own spelling; an ancestor is spelled absolute when the path
    given is, else relative to the working directory (`data/plain`, `..`)."""
    absolute = os.path.abspath(directory)
    chain = [absolute]
    while os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    out = []
    for here in reversed(chain):
        if here == absolute:
            out.append((directory, here, []))
        else:
            spelled = here if os.path.isabs(directory) else os.path.relpath(here)
            out.append((spelled, here, os.path.relpath(absolute, here).split(os.sep)))
    return out


def _node(names: list[str]) -> str:
    return "/" + "/".join(names)


def _holds_store_documents(directory: str) -> bool:
    return any(os.path.isfile(os.path.join(directory, name)) for name in STORE_DOCUMENTS) or any(
        os.path.lexists(os.path.join(directory, marker)) for marker in TILEDB_MARKERS
    )


def is_store_directory(directory: str) -> bool:
    """A directory that is a store in its own right: named `*.zarr`/`*.cxg`, or holding a Zarr group or array
    document (`.zgroup`, `.zarray`, `zarr.json`) or a TileDB marker."""
    return os.path.basename(directory).lower().endswith(STORE_SUFFIXES) or _holds_store_documents(directory)


# ---------------------------------------------------------------- searching folders


def _walk(folder: str, excluded: _Excluder, ignored: frozenset[str]) -> Iterator[Input]:
    """Stores and data files under `folder`, depth first, names sorted; files that are neither come back skipped."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        yield Input(folder, explicit=False, skipped=f"cannot be listed ({exc.strerror or exc})")
        return
    for entry in entries:
        path = os.path.join(folder, entry.name)
        if excluded(path) or _gitignored(path, ignored):
            continue
        if entry.name.startswith("."):
            if entry.name in STRAY_DOCUMENTS and entry.is_file():
                yield Input(path, explicit=False, skipped=STRAY)
            continue
        if entry.is_dir(follow_symlinks=False):
            if is_store_directory(path):
                yield Input(path, explicit=False)
            else:
                yield from _walk(path, excluded, ignored)
        elif entry.is_file():
            yield Input(path, explicit=False) if is_data_file(path) else Input(path, explicit=False, skipped=NOT_A_STORE)
        else:  # never opened, never entered: said, so that nothing a search met is silently left out
            yield Input(path, explicit=False, skipped=LINKED_FOLDER if entry.is_dir() else NOT_REGULAR)


def is_data_file(path: str) -> bool:
    """A file spec-validate may read: named as one (`.h5ad`, `.h5Seurat`, `.h5mu`, `.zarr.zip`), or an HDF5 file or
    a zip holding Zarr metadata, by its bytes."""
    if os.path.basename(path).lower().endswith(DATA_SUFFIXES):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if head[:4] == ZIP_SIGNATURE:
                return _zip_holds_zarr(path)
            for offset in HDF5_OFFSETS:
                if offset:
                    fh.seek(offset)
                    head = fh.read(8)
                if head == HDF5_SIGNATURE:
                    return True
                if len(head) < 8:
                    break
    except OSError:
        return False
    return False


def _zip_holds_zarr(path: str) -> bool:
    import zipfile  # only for zip files found in a folder

    try:
        with zipfile.ZipFile(path) as zf:
            return any(name.rstrip("/").rsplit("/", 1)[-1] in STORE_DOCUMENTS for name in zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


# ---------------------------------------------------------------- searching folders behind URLs


def _expand_url(url: str, excluded: _Excluder) -> list[Input]:
    """A URL as an input, or, where it is listed as a folder (not a store), what a search of it finds.

    A URL named as a data file, a store (`.h5ad`, `.zarr`, ...) or a Zarr document (a key inside a store, as
    pre-commit passes them), or of a protocol that is neither http(s) nor an object store's (s3://, gs://, az://),
    is one input as given; any other costs one request: its directory page, or the listing of the prefix.
    """
    from urllib.parse import urlsplit

    from spec_validate.errors import InputError
    from spec_validate.storage.cloudstore import CLOUD_SCHEMES
    from spec_validate.storage.remote import HTTP_PROTOCOLS, FolderListings, protocol

    scheme = protocol(url)
    # An object store's key is written as it is: "?" and "#" in it are no query or fragment.
    path = urlsplit(url).path if scheme in HTTP_PROTOCOLS else url.split("://", 1)[1].partition("/")[2]
    name = path.rstrip("/").rpartition("/")[2].lower()
    searchable = scheme in HTTP_PROTOCOLS or scheme in CLOUD_SCHEMES
    named = name.endswith(DATA_SUFFIXES + STORE_SUFFIXES + (".h5", ".hdf5", ".nwb")) or name in STORE_DOCUMENTS + STRAY_DOCUMENTS
    if not searchable or named:
        return [Input(url)]
    try:
        folders = FolderListings(url)
    except InputError:  # no client for the protocol here, no credentials, no bucket named: opening the URL says so
        return [Input(url)]
    try:
        return _search_url(url, folders, excluded)
    finally:
        folders.close()


def _search_url(url: str, folders, excluded: _Excluder) -> list[Input]:
    """The stores and data files below the folder at `url`, breadth first (each level's listings asked for
    together), then in the order a local search gives (depth first, names sorted); what was met and not validated,
    skipped."""
    (root,) = folders.list([url])
    if isinstance(root, str) or not (root[0] or root[1]):
        # Not a folder its server lists: the URL is opened as given (a file, or a store its server does not list).
        # Nothing there at all is said once, by opening it.
        empty = "its page links to nothing below it" if folders.http else "no key is stored below it"
        why = root if isinstance(root, str) else empty
        return [Input(url, unlisted=None if why == "not found" else why)]
    if _lists_store(root[0]):
        return [Input(url)]
    found: list[Input] = []
    level = [("", url, root)]
    listed = 1
    while level:
        below: list[tuple[str, str]] = []  # (relative path, URL) of the folders to list next
        for relative, folder, (files, subfolders) in level:
            for item in _remote_entries(relative, folder, files, subfolders, excluded, folders.child):
                if isinstance(item, Input):
                    found.append(item)
                elif listed < MOST_REMOTE_FOLDERS:
                    below.append(item)
                    listed += 1
                else:
                    found.append(Input(item[1], explicit=False, skipped=TOO_MANY_FOLDERS))
        level = _next_level(below, folders, found)
    walked = sorted(found, key=lambda item: item.path.split("/"))
    if not any(item.skipped is None for item in walked):
        return [Input(url, explicit=True, skipped=NOTHING_FOUND), *walked]
    return walked


def _next_level(below: list[tuple[str, str]], folders, found: list[Input]) -> list[tuple[str, str, tuple[list[str], list[str]]]]:
    """The folders `below` listed together: a store is an input, a CXG or a folder its server will not list is
    skipped (both added to `found`); the others are returned, with their listings, to be searched next."""
    level = []
    for (relative, folder), listing in zip(below, folders.list([u for _, u in below]) if below else [], strict=True):
        if isinstance(listing, str):
            found.append(Input(folder, explicit=False, skipped=f"cannot be listed ({listing})"))
        elif _lists_store(listing[0]):
            found.append(Input(folder, explicit=False))
        elif any(marker in listing[0] + listing[1] for marker in TILEDB_MARKERS):
            found.append(Input(folder, explicit=False, skipped=REMOTE_CXG))
        else:
            level.append((relative, folder, listing))
    return level


def _remote_entries(
    relative: str,
    folder: str,
    files: list[str],
    folders: list[str],
    excluded: _Excluder,
    child_url: Callable[[str, str], str],
) -> Iterator[Input | tuple[str, str]]:
    """What one folder's listing holds: an Input for each file and store (skipped where it is none), and (relative
    path, URL) for each folder to list next. Hidden and excluded names are left out, as in a local search."""
    for name in sorted(files + folders):
        is_folder = name in folders
        path = f"{relative}/{name}" if relative else name
        child = child_url(folder, name)
        if excluded.remote(path):
            continue
        if name.startswith("."):
            if name in STRAY_DOCUMENTS and not is_folder:
                yield Input(child, explicit=False, skipped=STRAY)
            continue
        lower = name.lower()
        if not is_folder:
            yield Input(child, explicit=False, skipped=None if lower.endswith(DATA_SUFFIXES) else NOT_NAMED)
        elif lower.endswith(".cxg"):
            yield Input(child, explicit=False, skipped=REMOTE_CXG)
        elif lower.endswith(STORE_SUFFIXES):
            yield Input(child, explicit=False)
        else:
            yield (path, child)


def _lists_store(files: list[str]) -> bool:
    """Whether a folder's files make it a Zarr store (a group or array document at its root)."""
    return any(name in files for name in STORE_DOCUMENTS)


class _Excluder:
    """Whether a path found in a folder matches an exclude glob: by its name, by its path relative to the glob's
    base directory, or by its absolute path (ruff's matching)."""

    def __init__(self, patterns: Iterable[Exclude]) -> None:
        self.patterns = tuple(patterns)

    def __call__(self, path: str) -> bool:
        if not self.patterns:
            return False
        absolute = os.path.abspath(path)
        name = os.path.basename(absolute)
        for pattern, base in self.patterns:
            glob = pattern.rstrip("/")
            relative = os.path.relpath(absolute, base or os.getcwd()).replace(os.sep, "/")
            if any(fnmatch.fnmatchcase(candidate, glob) for candidate in (name, relative, absolute.replace(os.sep, "/"))):
                return True
        return False

    def remote(self, relative: str) -> bool:
        """Whether a path found behind a URL (relative to the URL searched) matches an exclude glob: by its name or
        by that relative path."""
        name = relative.rpartition("/")[2]
        return any(
            fnmatch.fnmatchcase(candidate, pattern.rstrip("/")) for pattern, _ in self.patterns for candidate in (name, relative)
        )


def _ignored(folder: str) -> frozenset[str]:
    """Absolute paths git ignores under `folder` (directories end in `/`); empty outside a git work tree or without
    git. Git itself decides (nested `.gitignore` files, `.git/info/exclude`, the global excludes file)."""
    import subprocess  # only for folder searches

    try:
        done = subprocess.run(
            ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z", "--", "."],
            cwd=folder,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if done.returncode != 0:  # not a git work tree
        return frozenset()
    base = os.path.abspath(folder)
    out = set()
    for raw in done.stdout.split(b"\0"):
        name = os.fsdecode(raw)
        if name and name not in ("./", "."):
            out.add(os.path.join(base, name.rstrip("/")) + ("/" if name.endswith("/") else ""))
    return frozenset(out)


def _gitignored(path: str, ignored: frozenset[str]) -> bool:
    if not ignored:
        return False
    absolute = os.path.abspath(path)
    return absolute in ignored or absolute + "/" in ignored
