"""Seeded mutators: a corpus file (HDF5, Zarr v2/v3 directory or zip, TileDB CXG) copied and made hostile.

Each mutator takes a `Target` (the copied input, a seeded `random.Random`, the canary beside the input) and edits
the copy in place, returning a one-line description, or raises `Skip` when it has nothing to act on. `make_input`
copies a base, applies one to three mutators of its format and returns the input with what was done to it. The
same (seed, index) always gives the same input.

Mutators that point outside the input point at the canary (`Canary`): a file whose bytes must never appear in a
report and whose access time must not change, an HDF5 file and a directory beside the input.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import re
import shutil
import stat
import struct
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "conformance-corpus"

# The smallest corpus inputs of every format (fast to validate), and the richest valid one of each.
BASES: dict[str, tuple[str, ...]] = {
    "hdf5": (
        "anndata/h5ad/valid-zero-obs.h5ad",
        "anndata/h5ad/valid-awkward-array.h5ad",
        "anndata/h5ad/valid-every-element.h5ad",
        "h5seurat/valid-every-element.h5Seurat",
        "h5seurat/tools-missing.h5Seurat",
    ),
    "zarr-v2": (
        "anndata/zarr-v2/valid-zero-obs.zarr",
        "anndata/zarr-v2/valid-every-element.zarr",
        "zarr/zarr-v2/valid-every-element.zarr",
        "hdmf-zarr/zarr-v2/valid-every-element.zarr",
    ),
    "zarr-v3": (
        "anndata/zarr-v3/valid-zero-obs.zarr",
        "anndata/zarr-v3/valid-every-element.zarr",
    ),
    "zip": (
        "anndata/zarr-v2/valid-zero-obs.zarr",
        "zarr/zarr-v2/valid-every-element.zarr",
        "anndata/zarr-v3/valid-zero-obs.zarr",
    ),
    "tiledb": (
        "cxg/cxg-0.3.0/valid-every-element.cxg",
        "cxg/cxg-0.3.0/valid-sparse-X.cxg",
    ),
}
FORMATS = tuple(BASES)
ZARR_DOCUMENTS = (".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json")


def walk(top: Path | str):
    """As os.walk (top down, never through a symlink), without recursion: Python 3.11's os.walk recurses per level."""
    stack = [str(top)]
    while stack:
        here = stack.pop()
        dirs, names = [], []
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            (dirs if entry.is_dir(follow_symlinks=False) else names).append(entry.name)
        yield here, dirs, names
        stack.extend(os.path.join(here, d) for d in reversed(sorted(dirs)))


def remove_tree(top: Path | str) -> None:
    """As shutil.rmtree (symlinks removed, never followed), without recursion: it recurses once per level."""
    top = str(top)
    if not os.path.lexists(top):
        return
    if os.path.islink(top) or not os.path.isdir(top):
        os.unlink(top)
        return
    folders = []
    for here, _, names in walk(top):
        folders.append(here)
        for name in names:
            os.unlink(os.path.join(here, name))
    for here in reversed(folders):
        os.rmdir(here)


class Skip(Exception):
    """The mutator has nothing to act on in this input."""


@dataclass
class Canary:
    """Files beside the input that a validator must never read: a text file, an HDF5 file, a directory."""

    root: Path
    token: bytes = b""

    @property
    def text(self) -> Path:
        return self.root / "secret.txt"

    @property
    def hdf5(self) -> Path:
        return self.root / "secret.h5"

    @property
    def folder(self) -> Path:
        return self.root / "outside"

    def create(self, seed: int) -> None:
        import h5py
        import numpy as np

        self.root.mkdir(parents=True, exist_ok=True)
        self.token = f"CANARY-{seed:016x}-root:x:0:0".encode()
        self.text.write_bytes(self.token * 64)
        with h5py.File(self.hdf5, "w") as f:
            f.create_dataset("data", data=np.frombuffer(self.token.ljust(48, b"!")[:48], dtype="<i8"))
            f["data"].attrs["encoding-type"] = "array"
        self.folder.mkdir(exist_ok=True)
        (self.folder / ".zgroup").write_text('{"zarr_format": 2}')
        (self.folder / ".zattrs").write_bytes(b'{"secret": "' + self.token + b'"}')
        (self.folder / "0").write_bytes(self.token)
        # Access times older than the modification times: under relatime any read moves them (see `untouched`).
        for p in (self.text, self.hdf5, self.folder / ".zattrs", self.folder / "0"):
            st = p.stat()
            os.utime(p, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))

    def access_times(self) -> dict[str, int]:
        return {str(p): p.stat().st_atime_ns for p in (self.text, self.hdf5, self.folder / ".zattrs", self.folder / "0")}


@dataclass
class Target:
    path: Path  # the input (file or directory) being mutated
    rng: random.Random
    canary: Canary
    format: str
    # Set by a LAST_STRUCTURAL edit: the file holds a structure h5py's walk hangs or crashes on, so the others skip.
    unsafe_for_h5py: bool = False

    def files(self, pattern: Callable[[str], bool] = lambda rel: True) -> list[Path]:
        """Regular files below the input (not through symlinks), sorted, filtered by their relative path."""
        if self.path.is_file():
            return [self.path]
        out = []
        for root, dirs, names in walk(self.path):
            dirs.sort()
            for n in sorted(names):
                p = Path(root) / n
                if p.is_file() and not p.is_symlink() and pattern(str(p.relative_to(self.path))):
                    out.append(p)
        return out

    def dirs(self) -> list[Path]:
        out = [self.path]
        for root, dirs, _ in walk(self.path):
            dirs.sort()
            out.extend(Path(root) / d for d in dirs if not (Path(root) / d).is_symlink())
        return out

    def pick(self, items: list[Any]) -> Any:
        if not items:
            raise Skip("nothing to pick")
        return items[self.rng.randrange(len(items))]


MUTATORS: dict[str, list[tuple[str, Callable[[Target], str]]]] = {f: [] for f in FORMATS}
# Mutators that edit bytes, applied after those that edit through a library (which must be able to read the file).
BYTE_LEVEL = frozenset(
    {
        "flip_bytes",
        "flip_header_bytes",
        "truncate",
        "overwrite_range",
        "hdf5_btree_not_a_tree",
        "hdf5_past_one_block",
        "hdf5_heap_object_size",
    }
)
# Edits h5py makes on an intact file, after which h5py must not open it again (its walk would hang): run after every
# other structural edit, before byte-level damage.
LAST_STRUCTURAL = frozenset({"hdf5_dense_heap_cycle", "hdf5_shared_index", "hdf5_extensible_array_claim"})
# Edits that parse a file (with the library) to find the field they change: after every structural edit, before
# byte-level damage, which could leave a file the library crashes on in the fuzzer's own process.
PARSED_LAST = frozenset({"tiledb_fragment_sizes"})


def mutator(*formats: str) -> Callable[[Callable[[Target], str]], Callable[[Target], str]]:
    def register(fn: Callable[[Target], str]) -> Callable[[Target], str]:
        for f in formats:
            MUTATORS[f].append((fn.__name__, fn))
        return fn

    return register


# ------------------------------------------------------------------------------------------ bytes (any file)


def flip(data: bytearray, rng: random.Random, count: int) -> None:
    for _ in range(count):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)


def _bytes_file(t: Target, pattern: Callable[[str], bool]) -> Path:
    files = [p for p in t.files(pattern) if p.stat().st_size > 0]
    return t.pick(files)


def _not_document(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] not in ZARR_DOCUMENTS


@mutator("hdf5", "tiledb")
def flip_bytes(t: Target) -> str:
    p = _bytes_file(t, lambda rel: True)
    data = bytearray(p.read_bytes())
    n = t.rng.choice((1, 1, 1, 2, 4, 16, 64))
    flip(data, t.rng, n)
    p.write_bytes(bytes(data))
    return f"flip {n} bytes of {p.name}"


@mutator("hdf5")
def flip_header_bytes(t: Target) -> str:
    """A flip within HDF5's metadata: the superblock, object headers, B-trees and heaps lie mostly in the first KBs."""
    p = t.path
    data = bytearray(p.read_bytes())
    if not data:
        raise Skip("an empty file")
    n = t.rng.choice((1, 1, 2, 8))
    for _ in range(n):
        i = t.rng.randrange(min(len(data), t.rng.choice((512, 4096, 16384))))
        data[i] ^= 1 << t.rng.randrange(8)
    p.write_bytes(bytes(data))
    return f"flip {n} metadata bytes"


@mutator("hdf5", "tiledb")
def truncate(t: Target) -> str:
    p = _bytes_file(t, lambda rel: True)
    size = p.stat().st_size
    cut = t.rng.choice((0, 1, t.rng.randrange(size), size // 2, max(0, size - 1)))
    with open(p, "r+b") as fh:
        fh.truncate(cut)
    return f"truncate {p.name} to {cut} of {size} bytes"


@mutator("hdf5")
def hdf5_past_one_block(t: Target) -> str:
    """Zero bytes after the file's end of data, past one block of a remote read (`remote.HDF5_BLOCK_SIZE`, 4 MiB):
    every base file is smaller, so over HTTP none was read through the range reader (chunks fetched by range, indexes
    read a level at a time) until this; the library takes a file larger than its end address as it is."""
    from spec_validate.storage.remote import HDF5_BLOCK_SIZE

    size = t.path.stat().st_size
    extra = HDF5_BLOCK_SIZE + t.rng.randrange(1, HDF5_BLOCK_SIZE) - min(size, HDF5_BLOCK_SIZE)
    with open(t.path, "ab") as fh:
        fh.write(bytes(extra))
    return f"{extra} zero bytes appended ({size + extra} in all)"


@mutator("hdf5", "tiledb")
def overwrite_range(t: Target) -> str:
    p = _bytes_file(t, lambda rel: True)
    data = bytearray(p.read_bytes())
    start = t.rng.randrange(len(data))
    n = min(len(data) - start, t.rng.choice((4, 8, 64, 512)))
    fill = t.rng.choice((b"\x00", b"\xff", None))
    data[start : start + n] = fill * n if fill else bytes(t.rng.randrange(256) for _ in range(n))
    p.write_bytes(bytes(data))
    return f"overwrite {n} bytes at {start} of {p.name}"


@mutator("hdf5")
def hdf5_btree_not_a_tree(t: Target) -> str:
    """A version 1 B-tree node (a group's symbol table, a chunk index) that names itself, another node, or a level out
    of order: the HDF5 library recurses through such a tree without end (the process died, exit 139)."""
    p = t.path
    data = bytearray(p.read_bytes())
    nodes = [i for i in range(len(data) - 24) if data[i : i + 4] == b"TREE" and data[i + 4] in (0, 1)]
    at = t.pick(nodes)
    # Each entry: a key (a group's: 8 bytes; a chunk index's: size, mask and an offset per dimension), a child.
    key = 8 if data[at + 4] == 0 else 8 + 8 * t.rng.choice((2, 3))
    how = t.rng.choice(("itself", "another", "level"))
    if how == "level":
        data[at + 5] = t.rng.choice((1, 2, 7, 255))
    else:
        data[at + 5] = max(1, data[at + 5])
        child = at + 24 + key + (key + 8) * t.rng.randrange(max(1, int.from_bytes(data[at + 6 : at + 8], "little")))
        target = at if how == "itself" else t.pick(nodes)
        data[child : child + 8] = target.to_bytes(8, "little")
    p.write_bytes(bytes(data))
    return f"B-tree node at {at}: {how}"


@mutator("hdf5")
def hdf5_dense_heap_cycle(t: Target) -> str:
    """A group of the latest format, its links or its attributes in dense storage, whose fractal heap's root block
    names itself as a child, one link or attribute pointing into it (`generate_hostile.heap_cycle`): the HDF5
    library's descent through such a heap never ends (listing the group, or its attributes, hung)."""
    links = t.rng.random() < 0.5
    _safe_for_h5py(t)
    if b"FRHP" in t.path.read_bytes():
        raise Skip("it holds a fractal heap already (heap_cycle edits the only one)")
    where = _new_dense_group(t, "dense_heap", 12, (lambda g, name: g.create_group(name)) if links else None)
    _edit_for_good(t, lambda data: _hostile().heap_cycle(data, name_index=5 if links else 8, heap_id_at=4 if links else 0))
    return f"{where}: its {'links' if links else 'attributes'}' fractal heap names its root block as its child"


@mutator("hdf5")
def hdf5_shared_index(t: Target) -> str:
    """A group of the latest format whose links, or attributes, are indexed by a version 2 B-tree made 4 to 6
    internal nodes deep, each naming the one below it as all its 13 children (`generate_hostile.btree2_shared`): the
    HDF5 library's iteration takes 13**depth paths to one leaf (listing such a group took 11 GB in 30 seconds)."""
    import h5py

    links = t.rng.random() < 0.5
    depth = t.rng.randint(4, 6)
    _safe_for_h5py(t)
    if b"BTHD" in t.path.read_bytes():
        raise Skip("it holds a version 2 B-tree already (btree2_shared edits the first of its type)")
    soft_link = lambda g, name: g.__setitem__(name, h5py.SoftLink("/"))  # noqa: E731
    where = _new_dense_group(t, "shared_index", 600 if links else 400, soft_link if links else None)
    _edit_for_good(t, lambda data: _hostile().btree2_shared(data, tree_type=5 if links else 8, depth=depth, fanout=13))
    return f"{where}: its {'links' if links else 'attributes'}' index by name shares each of its {depth} internal nodes 13 times"


@mutator("hdf5")
def hdf5_extensible_array_claim(t: Target) -> str:
    """A one-dimensional dataset rewritten in the latest format with one unlimited dimension (an extensible array
    indexes its chunks) whose header claims 2**25 to 2**62 elements were set: the HDF5 library iterates every one to
    list the chunks (4e12 took hours)."""
    import h5py

    _safe_for_h5py(t)
    if b"EAHD" in t.path.read_bytes():
        raise Skip("it holds an extensible array already (the claim edits the first)")
    try:
        f = h5py.File(t.path, "r+", locking=False, libver="latest")
    except Exception as exc:  # an earlier mutation broke it
        raise Skip(f"h5py cannot open it ({exc})") from None
    with f:
        # Rewritten from its values: none an earlier mutation made huge (hdf5_huge_shape), which h5py cannot hold.
        names = [
            n
            for n in _h5_items(f, "dataset")
            if len(f[n].shape or ()) == 1 and 0 < f[n].size <= 2**20 and f[n].dtype.kind in "iufb"
        ]
        name = t.pick(names)
        try:
            values, attrs = f[name][...], dict(f[name].attrs)
        except Exception as exc:  # an earlier mutation damaged it
            raise Skip(f"h5py cannot read {name} ({exc})") from None
        del f[name]
        ds = f.create_dataset(name, data=values, chunks=(max(1, len(values) // 4),), maxshape=(None,))
        for k, v in attrs.items():
            with contextlib.suppress(Exception):
                ds.attrs[k] = v
    data = bytearray(t.path.read_bytes())
    header = data.find(b"EAHD")
    lengths = data[14] if data[8] < 2 else data[10]  # the superblock's size of lengths (versions 0-1, 2-3)
    if header < 0 or lengths != 8:
        raise Skip("no extensible array this mutator edits (8-byte lengths)")
    claimed = 2 ** t.rng.randint(25, 62)
    data[header + 44 : header + 52] = claimed.to_bytes(8, "little")
    data[header + 68 : header + 72] = _hostile().lookup3(bytes(data[header : header + 68])).to_bytes(4, "little")
    t.path.write_bytes(bytes(data))
    t.unsafe_for_h5py = True
    return f"{name}: an extensible array index claiming {claimed} elements"


def _new_dense_group(t: Target, name: str, count: int, add_member: Callable[[Any, str], Any] | None) -> str:
    """A new group `name` under a group of the input, tracking creation order (so in the latest format's dense storage
    past eight), with `count` members made by `add_member(group, name)`, or without it `count` attributes; its path."""
    with _h5(t) as f:
        parent = t.pick(["/"] + _h5_items(f, "group"))
        where = f"{parent.rstrip('/')}/{name}"
        if where in f:
            raise Skip(f"{where} exists")
        group = f.create_group(where, track_order=True)
        for i in range(count):
            if add_member is not None:
                add_member(group, f"member_{i:03d}")
            else:
                group.attrs[f"note_{i:03d}"] = i
    return where


def _edit_for_good(t: Target, edit: Callable[[bytearray], None]) -> None:
    """The input's bytes edited in place by `edit` (a `generate_hostile` structure edit), after which h5py must not open
    it; Skip where `edit` finds no structure it edits (sizes, superblock, too few nodes: it asserts or looks up)."""
    data = bytearray(t.path.read_bytes())
    try:
        edit(data)
    except (AssertionError, ValueError, KeyError, StopIteration) as exc:
        raise Skip(f"not a structure this mutator edits ({exc})") from None
    t.path.write_bytes(bytes(data))
    t.unsafe_for_h5py = True


def _safe_for_h5py(t: Target) -> None:
    """Skip where an earlier LAST_STRUCTURAL edit left a structure that h5py, opening the file to edit it, would hang or
    crash on (in the fuzzer's own process)."""
    if t.unsafe_for_h5py:
        raise Skip("an earlier edit left a structure h5py must not open")


@functools.cache
def _hostile() -> Any:
    """conformance-corpus/hostile/generate_hostile.py, whose `heap_cycle` and `btree2_shared` the fuzzer shares."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "conformance-corpus" / "hostile" / "generate_hostile.py"
    spec = importlib.util.spec_from_file_location("generate_hostile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# ------------------------------------------------------------------------------------------- HDF5 structure


def _h5(t: Target):
    import h5py

    try:
        return h5py.File(t.path, "r+", locking=False)
    except Exception as exc:  # an earlier mutation broke it
        raise Skip(f"h5py cannot open it ({exc})") from None


def _h5_items(f, kind: str | None = None) -> list[str]:
    """The names of the objects below `f` (as h5py's `visit`: each object once, through hard links), at most 64
    levels down: `visit` recurses in the HDF5 library, whose stack a file of 10,000 nested groups overflows (the
    fuzzer's own process died, exit 139)."""
    import h5py

    names: list[str] = []
    seen = set()
    stack = [("", f, 0)]
    while stack:
        prefix, group, depth = stack.pop()
        for key in group:
            if not isinstance(group.get(key, getlink=True), h5py.HardLink):
                continue
            obj = group.get(key)
            if obj is None or hash(obj.id) in seen:
                continue
            seen.add(hash(obj.id))
            names.append(prefix + key)
            if isinstance(obj, h5py.Group) and depth < 64:
                stack.append((f"{prefix}{key}/", obj, depth + 1))
    if kind == "group":
        return sorted(n for n in names if isinstance(f.get(n), h5py.Group))
    if kind == "dataset":
        return sorted(n for n in names if isinstance(f.get(n), h5py.Dataset))
    return sorted(names)


def _attr_value(rng: random.Random) -> Any:
    import numpy as np

    choices = [
        lambda: 7,
        lambda: -1,
        lambda: 2**62,
        lambda: 1.5,
        lambda: float("nan"),
        lambda: True,
        lambda: np.array([1, 2, 3]),
        lambda: np.zeros((2, 2)),
        lambda: b"bytes\xff\xfe",
        lambda: "x" * rng.choice((1, 1000, 70000)),
        lambda: np.array(["a", "b"], dtype=object),
        lambda: np.array([b"a", b"bb"]),
        lambda: "",
        lambda: np.array([], dtype="<f8"),
        lambda: np.array([(1, 2.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
        lambda: "[" * 5000 + "]" * 5000,
        lambda: "0.1.0\x00",
        lambda: np.float16(3),
        lambda: np.array([1 + 2j]),
        lambda: np.datetime64("2020-01-01").astype("<i8"),
    ]
    return rng.choice(choices)()


@mutator("hdf5")
def hdf5_attribute_type(t: Target) -> str:
    with _h5(t) as f:
        name = t.pick(["/"] + _h5_items(f))
        obj = f[name]
        keys = list(obj.attrs.keys())
        key = (
            t.rng.choice(keys + ["encoding-type", "encoding-version", "shape", "_index", "column-order"])
            if keys
            else "encoding-type"
        )
        value = _attr_value(t.rng)
        try:
            if key in obj.attrs:
                del obj.attrs[key]
            obj.attrs[key] = value
        except Exception as exc:
            raise Skip(f"h5py refused the attribute ({exc})") from None
    return f"attribute {name}:{key} = {type(value).__name__}"


@mutator("hdf5")
def hdf5_empty_attribute(t: Target) -> str:
    import h5py

    with _h5(t) as f:
        name = t.pick(["/"] + _h5_items(f))
        key = t.rng.choice(["encoding-type", "encoding-version", "other"])
        if key in f[name].attrs:
            del f[name].attrs[key]
        f[name].attrs[key] = h5py.Empty(t.rng.choice(("<f8", "S1", "<i4")))
    return f"null-dataspace attribute {name}:{key}"


@mutator("hdf5")
def hdf5_dataset_dtype(t: Target) -> str:
    import h5py
    import numpy as np

    with _h5(t) as f:
        name = t.pick(_h5_items(f, "dataset"))
        old = f[name]
        attrs = dict(old.attrs)
        n = old.size if old.shape is not None else 1  # a null dataspace (no shape) becomes one element
        dtype = t.rng.choice(("<i1", ">f8", "<u8", "|b1", "S3", "<c16", "O", "enum", "compound", "vlen-int", "ref", "<M8"))
        del f[name]
        shape = old.shape if old.shape is not None else (n,)
        if dtype == "O" and n > 100_000:  # an earlier mutation's huge extent: its strings left unwritten (empty)
            ds = f.create_dataset(name, shape=shape, dtype=h5py.string_dtype())
        elif dtype == "O":
            ds = f.create_dataset(name, data=np.array(["x"] * n, dtype=object).reshape(shape or ()), dtype=h5py.string_dtype())
        elif dtype == "enum":
            ds = f.create_dataset(name, shape=shape, dtype=h5py.enum_dtype({"a": 0, "b": 1}, basetype="i1"))
        elif dtype == "compound":
            ds = f.create_dataset(name, shape=shape, dtype=[("a", "<i4"), ("s", h5py.string_dtype())])
        elif dtype == "vlen-int":
            ds = f.create_dataset(name, shape=shape, dtype=h5py.vlen_dtype(np.dtype("<i4")))
        elif dtype == "ref":
            ds = f.create_dataset(name, shape=shape, dtype=h5py.ref_dtype)
        elif dtype == "<M8":
            ds = f.create_dataset(name, shape=shape, dtype="<i8")
        else:
            ds = f.create_dataset(name, shape=shape, dtype=dtype)
        for k, v in attrs.items():
            with contextlib.suppress(Exception):
                ds.attrs[k] = v
    return f"dataset {name} retyped {dtype}"


@mutator("hdf5")
def hdf5_external_storage(t: Target) -> str:
    with _h5(t) as f:
        parent = t.pick(["/"] + _h5_items(f, "group"))
        name = f"{parent.rstrip('/')}/{t.rng.choice(['ext', 'X', 'indptr', 'data', 'codes'])}"
        if name in f:
            del f[name]
        n = t.rng.choice((4, 16, 64))
        ds = f.create_dataset(
            name, shape=(n,), dtype=t.rng.choice(("<i8", "|u1", "<f4")), external=[(str(t.canary.text), 0, n * 8)]
        )
        ds.attrs["encoding-type"], ds.attrs["encoding-version"] = "array", "0.2.0"
    return f"external storage dataset {name} -> canary"


@mutator("hdf5")
def hdf5_virtual_dataset(t: Target) -> str:
    import h5py

    with _h5(t) as f:
        parent = t.pick(["/"] + _h5_items(f, "group"))
        name = f"{parent.rstrip('/')}/{t.rng.choice(['vds', 'X', 'indices', 'codes'])}"
        if name in f:
            del f[name]
        layout = h5py.VirtualLayout(shape=(6,), dtype="<i8")
        layout[:] = h5py.VirtualSource(str(t.canary.hdf5), "data", shape=(6,))
        ds = f.create_virtual_dataset(name, layout, fillvalue=0)
        ds.attrs["encoding-type"], ds.attrs["encoding-version"] = "array", "0.2.0"
    return f"virtual dataset {name} -> canary"


@mutator("hdf5")
def hdf5_external_link(t: Target) -> str:
    import h5py

    with _h5(t) as f:
        parent = t.pick(["/"] + _h5_items(f, "group"))
        name = f"{parent.rstrip('/')}/{t.rng.choice(['ext', 'X', 'obs'])}"
        if name in f:
            del f[name]
        f[name] = h5py.ExternalLink(str(t.canary.hdf5), "/")
        if t.rng.random() < 0.5:  # a soft link whose path passes through it: resolved by the library, it opened the canary
            via = f"{parent.rstrip('/')}/via"
            if via in f:
                del f[via]
            f[via] = h5py.SoftLink(f"{name}/data")
            return f"external link {name} -> canary, soft link {via} through it"
    return f"external link {name} -> canary"


@mutator("hdf5")
def hdf5_soft_link_cycle(t: Target) -> str:
    import h5py

    with _h5(t) as f:
        groups = _h5_items(f, "group")
        parent = t.pick(["/"] + groups)
        target = t.rng.choice(["/", parent, "/" + t.rng.choice(groups) if groups else "/", "/nowhere", "."])
        name = f"{parent.rstrip('/')}/loop{t.rng.randrange(3)}"
        if name in f:
            del f[name]
        f[name] = h5py.SoftLink(target)
    return f"soft link {name} -> {target}"


@mutator("hdf5")
def hdf5_huge_shape(t: Target) -> str:
    with _h5(t) as f:
        parent = t.pick(["/"] + _h5_items(f, "group"))
        name = f"{parent.rstrip('/')}/{t.rng.choice(['huge', 'X', 'indptr', 'data', 'codes', 'indices'])}"
        if name in f:
            del f[name]
        shape = t.rng.choice(((2**40,), (2**25, 2**25), (2**50,), (2**31, 3), (2**62,)))
        wanted = t.rng.choice(((2**20,), (1,), (1024, 1024), (2**16, 2**16))) * 2
        chunks = tuple(min(s, c) for s, c in zip(shape, wanted, strict=False))  # as many as the shape has
        try:
            ds = f.create_dataset(
                name, shape=shape, dtype=t.rng.choice(("<i8", "<f4", "|u1")), chunks=chunks, fillvalue=t.rng.choice((0, 1, 7))
            )
        except Exception as exc:
            raise Skip(f"h5py refused the shape ({exc})") from None
        ds.attrs["encoding-type"], ds.attrs["encoding-version"] = "array", "0.2.0"
    return f"huge dataset {name} {shape} chunks {chunks}"


@mutator("hdf5")
def hdf5_deep_groups(t: Target) -> str:
    with _h5(t) as f:
        depth = t.rng.choice((50, 300, 1200, 10_000))  # 10,000: once SystemError, a double free and exit 139
        g = f.require_group("/uns")
        for _ in range(depth):
            g = g.create_group("g")
    return f"{depth} nested groups under /uns"


@mutator("hdf5")
def hdf5_many_attributes(t: Target) -> str:
    if t.rng.random() < 0.2:
        return _many_dense_attributes(t, 100_000)
    with _h5(t) as f:
        name = t.pick(["/"] + _h5_items(f))
        n = t.rng.choice((100, 2000))
        for i in range(n):
            f[name].attrs[f"a{i}"] = i
    return f"{n} attributes on {name}"


def _many_dense_attributes(t: Target, n: int) -> str:
    """A new dict group in /uns with `n` attributes (the issue's 100,000), in dense storage: a group made under the
    latest file format keeps them in a fractal heap and a B-tree (on an older group h5py adds them in quadratic
    time, hours for 100,000)."""
    import h5py
    import numpy as np

    _safe_for_h5py(t)
    try:
        f = h5py.File(t.path, "r+", locking=False, libver="latest")
    except Exception as exc:  # an earlier mutation broke it
        raise Skip(f"h5py cannot open it ({exc})") from None
    with f:
        group = f.require_group("/uns").create_group(name := f"many{t.rng.randrange(1000)}")
        group.attrs["encoding-type"], group.attrs["encoding-version"] = "dict", "0.1.0"
        space, value = h5py.h5s.create(h5py.h5s.SCALAR), np.zeros((), dtype="<i8")
        for i in range(n):  # the low-level call: attrs[...] checks each name first
            h5py.h5a.create(group.id, f"a{i}".encode(), h5py.h5t.STD_I64LE, space).write(value)
    return f"{n} attributes on /uns/{name}"


@mutator("hdf5")
def hdf5_heap_object_size(t: Target) -> str:
    """A global heap object (a variable-length string's bytes) whose stored size says far more than its collection
    holds: HDF5 allocated what it said (an `.h5Seurat` with 64 bytes overwritten took 1.7 GB) before it found it short.
    A collection is `GCOL`, version, 3 reserved bytes, its size; then objects: index (2), references (2), 4 reserved,
    size (8), the bytes padded to 8."""
    data = bytearray(t.path.read_bytes())
    obj = t.pick(_heap_objects(data))
    size = t.rng.choice((0x6A000000, 2**31 - 1, 2**40, 2**62))
    data[obj + 8 : obj + 16] = size.to_bytes(8, "little")
    t.path.write_bytes(bytes(data))
    return f"global heap object at {obj} says {size} bytes"


def _heap_objects(data: bytearray) -> list[int]:
    """Where the objects of the file's global heap collections start (at most 200)."""
    objects = []
    at = data.find(b"GCOL")
    while at != -1 and len(objects) < 200:
        end = min(len(data), at + int.from_bytes(data[at + 8 : at + 16], "little"))
        here = at + 16
        while here + 16 <= end:
            index, size = int.from_bytes(data[here : here + 2], "little"), int.from_bytes(data[here + 8 : here + 16], "little")
            if index == 0 or size > end - here:
                break  # the free space, or a collection this walk does not follow
            objects.append(here)
            here += 16 + (size + 7) // 8 * 8
        at = data.find(b"GCOL", at + 4)
    return objects


@mutator("hdf5")
def hdf5_delete(t: Target) -> str:
    with _h5(t) as f:
        name = t.pick(_h5_items(f))
        del f[name]
    return f"delete {name}"


@mutator("hdf5")
def hdf5_compound_strings(t: Target) -> str:
    import numpy as np

    with _h5(t) as f:
        parent = t.pick(["/"] + _h5_items(f, "group"))
        name = f"{parent.rstrip('/')}/{t.rng.choice(['obs', 'rec', 'X'])}"
        if name in f:
            del f[name]
        ds = f.create_dataset(name, data=np.array([(1, b"a"), (2, b"b")], dtype=[("i", "<i4"), ("s", "S2")]))
        ds.attrs["encoding-type"] = t.rng.choice(["dataframe", "array", "categorical"])
    return f"compound dataset {name}"


# ---------------------------------------------------------------------------------------------- JSON documents


def _documents(t: Target) -> list[Path]:
    return t.files(lambda rel: rel.rsplit("/", 1)[-1] in ZARR_DOCUMENTS)


def _load(p: Path) -> Any:
    raw = p.read_bytes()
    if raw.count(b"[") + raw.count(b"{") > 200:  # nested by an earlier mutation: left as it is
        raise Skip(f"{p.name} is nested deeply")
    try:
        return json.loads(raw)
    except Exception:
        raise Skip(f"{p.name} is no longer JSON") from None


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into `doc` (dict keys and list indices, 12 levels at most), the root included."""
    out = [prefix]
    if len(prefix) >= 12:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            out.extend(_paths(v, prefix + (i,)))
    return out


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


JSON_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**64,
    -(2**63),
    1.5,
    1e308,
    "",
    "x",
    "NaN",
    "<f8",
    "|O",
    [],
    {},
    [0],
    [-1],
    [2**40],
    ["a"],
    {"id": "zlib"},
    {"id": "pickle"},
    {"a": {"b": []}},
    "\u0000\ud7ff",
    "é" * 10,
]


@mutator("zarr-v2", "zarr-v3", "zip")
def json_wrong_type(t: Target) -> str:
    p = t.pick(_documents(t))
    doc = _load(p)
    path = t.pick(_paths(doc))
    value = t.rng.choice(JSON_VALUES)
    p.write_text(json.dumps(_set(doc, path, json.loads(json.dumps(value)))))
    return f"{p.relative_to(t.path)}:{'/'.join(map(str, path))} = {json.dumps(value)[:30]}"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_delete_key(t: Target) -> str:
    p = t.pick(_documents(t))
    doc = _load(p)
    paths = [q for q in _paths(doc) if q and isinstance(q[-1], str)]
    path = t.pick(paths)
    node = doc
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: delete {'/'.join(map(str, path))}"


def _array_documents(t: Target) -> list[Path]:
    out = []
    for p in _documents(t):
        if p.name == ".zarray" or (p.name == "zarr.json" and b'"array"' in p.read_bytes()):
            out.append(p)
    return out


HUGE_SHAPES = (
    [2**40],
    [2**62],
    [2**25, 2**25],
    [2**31 - 1, 2**31 - 1],
    [2**63 - 1],
    [10**18, 3],
    [2**20, 2**20, 2**20],
    [2**80],  # past any integer type a reader keeps
    [2**62, 2**62],  # a product past 2**64
)


@mutator("zarr-v2", "zarr-v3", "zip")
def json_huge_shape(t: Target) -> str:
    p = t.pick(_array_documents(t))
    doc = _load(p)
    shape = t.rng.choice(HUGE_SHAPES)
    doc["shape"] = shape
    chunks = [min(s, t.rng.choice((1, 1000, 2**20))) for s in shape]
    if p.name == ".zarray":
        doc["chunks"] = chunks
    else:
        doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": chunks}}
    if t.rng.random() < 0.5:  # no chunks written at all
        for q in p.parent.iterdir():
            if q.name not in ZARR_DOCUMENTS and q.is_file():
                q.unlink()
            elif q.name == "c" and q.is_dir():
                remove_tree(q)
    if t.rng.random() < 0.3:
        doc["fill_value"] = None
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: shape {shape} chunks {chunks}"


def _set_chunks(p: Path, doc: dict, chunks: list[int]) -> None:
    """An array document's chunk shape set to `chunks`, as Zarr v2 (`.zarray`) or v3 (`zarr.json`) states it."""
    if p.name == ".zarray":
        doc["chunks"] = chunks
    else:
        doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": chunks}}


@mutator("zarr-v2", "zarr-v3", "zip")
def json_huge_chunks(t: Target) -> str:
    p = t.pick(_array_documents(t))
    doc = _load(p)
    n = len(doc.get("shape") or [1]) if isinstance(doc.get("shape"), list) else 1
    chunks = [t.rng.choice((2**40, 2**31, 0, -1, 2**62, 1))] * max(1, n)
    _set_chunks(p, doc, chunks)
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: chunks {chunks}"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_codec_swap(t: Target) -> str:
    p = t.pick(_array_documents(t))
    doc = _load(p)
    ids = [
        "zlib",
        "gzip",
        "bz2",
        "lzma",
        "zstd",
        "blosc",
        "lz4",
        "pickle",
        "msgpack2",
        "categorize",
        "nope",
        "shuffle",
        "delta",
        "fixedscaleoffset",
        "astype",
        "quantize",
        "crc32",
        "adler32",
        "fletcher32",
        "json2",
        "vlen-utf8",
    ]
    if p.name == ".zarray":
        key = t.rng.choice(("compressor", "filters"))
        codec = {"id": t.rng.choice(ids)}
        if codec["id"] in ("delta", "fixedscaleoffset", "astype", "quantize"):
            codec.update(
                {
                    "dtype": "<f8",
                    "astype": "<i2",
                    "encode_dtype": "<i2",
                    "decode_dtype": "<f8",
                    "scale": 1,
                    "offset": 0,
                    "digits": 2,
                }
            )
        doc[key] = codec if key == "compressor" else [codec]
    else:
        names = [
            "bytes",
            "gzip",
            "zstd",
            "blosc",
            "crc32c",
            "transpose",
            "sharding_indexed",
            "vlen-utf8",
            "numcodecs.zlib",
            "nope",
        ]
        codecs = [
            {"name": t.rng.choice(names), "configuration": t.rng.choice(({}, {"level": 1}, {"endian": "big"}, {"order": [0]}))}
            for _ in range(t.rng.randrange(1, 4))
        ]
        doc["codecs"] = codecs
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: codecs changed"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_many_codecs(t: Target) -> str:
    """Codecs that change nothing, many times over: Zarr v2 shuffles of one-byte elements added to the filters, Zarr v3
    transposes in the order the axes have put before the codecs. The chunks still decode, a pass per codec (200,000
    checksum filters once made each chunk take 16 s)."""
    p = t.pick(_array_documents(t))
    doc = _load(p)
    count = t.rng.choice((17, 1000, 100_000))
    if p.name == ".zarray":
        filters = doc.get("filters") if isinstance(doc.get("filters"), list) else []
        doc["filters"] = filters + [{"id": "shuffle", "elementsize": 1}] * count
    else:
        ndim = len(doc["shape"]) if isinstance(doc.get("shape"), list) else 1
        codecs = doc.get("codecs") if isinstance(doc.get("codecs"), list) else [{"name": "bytes"}]
        doc["codecs"] = [{"name": "transpose", "configuration": {"order": list(range(ndim))}}] * count + codecs
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: {count} codecs more"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_sharding(t: Target) -> str:
    if t.format == "zarr-v2" or (t.format == "zip" and not any(p.name == "zarr.json" for p in _documents(t))):
        raise Skip("v3 only")
    p = t.pick(_array_documents(t))
    doc = _load(p)
    shape = doc.get("shape") if isinstance(doc.get("shape"), list) else [4]
    outer = [max(1, s) for s in shape] or [1]
    inner = [t.rng.choice((1, 2, 2**20)) for _ in outer]
    doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": outer}}
    doc["codecs"] = [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": inner,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": t.rng.choice(("gzip", "zstd"))}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                "index_location": t.rng.choice(("start", "end")),
            },
        }
    ]
    p.write_text(json.dumps(doc))
    # The chunks written before no longer match: some become bombs. Walked without recursion (an earlier mutation
    # may have nested folders thousands deep) and never through a symlink (its target may lie outside the input).
    for folder, _, names in walk(p.parent):
        for name in sorted(names):
            q = Path(folder) / name
            if name != "zarr.json" and q.is_file() and not q.is_symlink() and t.rng.random() < 0.5:
                q.write_bytes(_bomb(t.rng))
    return f"{p.relative_to(t.path)}: sharded, inner chunks {inner}"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_fill_null(t: Target) -> str:
    p = t.pick(_array_documents(t))
    doc = _load(p)
    doc["fill_value"] = t.rng.choice((None, "NaN", "Infinity", 2**70, "AAAA", [1, 2], {"a": 1}, "0x7fc00000"))
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: fill_value {doc['fill_value']!r}"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_dtype_swap(t: Target) -> str:
    p = t.pick(_array_documents(t))
    doc = _load(p)
    if p.name == ".zarray":
        doc["dtype"] = t.rng.choice(
            (
                "<f8",
                ">i2",
                "|O",
                "<U3",
                "|S0",
                "<M8",
                "<M8[ns]",
                "|V0",
                "|b1",
                "<c16",
                "<U0",
                [["a", "<i4"], ["b", "|S2", [2]]],
                [["a", [["b", "<i4"]]]],
                "<i16",
                "zz",
                "|O8",
            )
        )
    else:
        doc["data_type"] = t.rng.choice(
            (
                "float64",
                "int8",
                "string",
                "bool",
                "complex128",
                "r8",
                "r0",
                "nope",
                {"name": "fixed_length_utf32", "configuration": {"length_bytes": 3}},
                {"name": "numpy.datetime64", "configuration": {"unit": "zz"}},
                {"name": "structured", "configuration": {"fields": [["a", "int8"]]}},
            )
        )
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: dtype changed"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_nan_tokens(t: Target) -> str:
    p = t.pick(_documents(t))
    text = p.read_text(errors="replace")
    numbers = list(re.finditer(r"(?<=[:\[,\s])-?\d+(\.\d+)?(?=[,\]\}\s])", text))
    m = t.pick(numbers)
    token = t.rng.choice(("NaN", "Infinity", "-Infinity", "1e999", "-0", "1" + "0" * 5000))
    p.write_text(text[: m.start()] + token + text[m.end() :])
    return f"{p.relative_to(t.path)}: a number became {token[:12]}"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_duplicate_keys(t: Target) -> str:
    p = t.pick(_documents(t))
    text = p.read_text(errors="replace").lstrip()
    if not text.startswith("{"):
        raise Skip("not an object")
    key = t.rng.choice(("shape", "zarr_format", "dtype", "node_type", "chunks", "encoding-type", "attributes"))
    value = json.dumps(t.rng.choice(JSON_VALUES))
    dup = f'"{key}": {value}, '
    p.write_text("{" + dup + text[1:] if t.rng.random() < 0.5 else "{" + dup + dup + text[1:])
    return f"{p.relative_to(t.path)}: duplicate key {key}"


def _deep(depth: int, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


@mutator("zarr-v2", "zarr-v3", "zip")
def json_deep_nesting(t: Target) -> str:
    p = t.pick(_documents(t))
    doc = _load(p)
    depth = t.rng.choice((100, 990, 3000, 100_000))
    marker = "__DEEP__"
    if isinstance(doc, dict) and doc:
        key = t.rng.choice(list(doc) + ["attributes", "x"])
        doc[key] = marker
        text = json.dumps(doc).replace(f'"{marker}"', _deep(depth, t.rng))
    else:
        text = _deep(depth, t.rng)
    p.write_text(text)
    return f"{p.relative_to(t.path)}: nested {depth} deep"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_non_utf8(t: Target) -> str:
    p = t.pick(_documents(t))
    data = bytearray(p.read_bytes())
    at = t.rng.randrange(len(data) + 1)
    data[at:at] = t.rng.choice((b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00"))
    p.write_bytes(bytes(data))
    return f"{p.relative_to(t.path)}: non-UTF-8 bytes at {at}"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_truncate(t: Target) -> str:
    p = t.pick(_documents(t))
    data = p.read_bytes()
    cut = t.rng.randrange(len(data) + 1) if data else 0
    p.write_bytes(data[:cut])
    return f"{p.relative_to(t.path)}: truncated to {cut} bytes"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_many_attributes(t: Target) -> str:
    """A node with 100,000 attributes (the issue's many-attribute file, as a document): its `.zattrs` (Zarr v2, written
    beside its `.zgroup` or `.zarray` where it has none) or its `zarr.json`'s attributes (v3)."""
    p = t.pick([q for q in _documents(t) if q.name in (".zgroup", ".zarray", "zarr.json")])
    many = {f"a{i}": i for i in range(100_000)}
    if p.name == "zarr.json":
        doc = _load(p)
        if not isinstance(doc, dict) or not isinstance(doc.setdefault("attributes", {}), dict):
            raise Skip("no attributes object")
        doc["attributes"].update(many)
    else:
        p = p.parent / ".zattrs"
        doc = _load(p) if p.exists() else {}
        if not isinstance(doc, dict):
            raise Skip("not an object")
        doc.update(many)
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: 100,000 attributes"


@mutator("zarr-v2", "zarr-v3", "zip")
def json_big_string(t: Target) -> str:
    p = t.pick(_documents(t))
    doc = _load(p)
    if not isinstance(doc, dict):
        raise Skip("not an object")
    size = t.rng.choice((100_000, 3_000_000))
    if p.name == "zarr.json":
        attrs = doc.setdefault("attributes", {})
        if isinstance(attrs, dict):
            attrs["big"] = "x" * size
    else:
        doc["big"] = "x" * size
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: a {size}-character string"


# ----------------------------------------------------------------------------------------------- Zarr chunks


def _chunks(t: Target) -> list[Path]:
    return [p for p in t.files(_not_document)]


def _bomb(rng: random.Random) -> bytes:
    """A chunk of a few kilobytes that inflates past its bound (nested zlib, gzip, a zstd frame without a size)."""
    from tests.bombs import gzip_zeros, nested, zlib_zeros, zstd_zeros

    kind = rng.choice(("zlib", "zlib", "gzip", "zstd"))
    if kind == "zlib":
        return nested(zlib_zeros(), 2)
    if kind == "gzip":
        return nested(gzip_zeros(), 2)
    return zstd_zeros(300_000_000)


@mutator("zarr-v2", "zarr-v3", "zip")
def chunk_corrupt(t: Target) -> str:
    p = t.pick(_chunks(t))
    data = bytearray(p.read_bytes())
    how = t.rng.choice(("flip", "truncate", "empty", "random", "bomb", "append"))
    if how == "flip" and data:
        flip(data, t.rng, t.rng.choice((1, 4, 32)))
    elif how == "truncate":
        data = data[: t.rng.randrange(len(data) + 1)]
    elif how == "empty":
        data = bytearray()
    elif how == "random":
        data = bytearray(t.rng.randbytes(t.rng.choice((1, 16, 4096))))
    elif how == "bomb":
        data = bytearray(_bomb(t.rng))
    else:
        data += t.rng.randbytes(64)
    p.write_bytes(bytes(data))
    return f"chunk {p.relative_to(t.path)}: {how}"


@mutator("zarr-v2", "zarr-v3", "zip")
def chunk_remove(t: Target) -> str:
    p = t.pick(_chunks(t))
    p.unlink()
    return f"chunk {p.relative_to(t.path)} removed"


@mutator("zarr-v2", "zarr-v3")
def chunk_special(t: Target) -> str:
    p = t.pick(_chunks(t) or _documents(t))
    how = t.rng.choice(("fifo", "symlink-canary", "symlink-canary-dir", "directory", "dangling", "self-loop"))
    p.unlink()
    if how == "fifo":
        os.mkfifo(p)
    elif how == "symlink-canary":
        os.symlink(t.canary.text, p)
    elif how == "symlink-canary-dir":
        os.symlink(t.canary.folder, p)
    elif how == "directory":
        p.mkdir()
        (p / ".zgroup").write_text('{"zarr_format": 2}')
    elif how == "dangling":
        os.symlink(p.parent / "no-such-file", p)
    else:
        os.symlink(p.name, p)
    return f"{p.relative_to(t.path)} became a {how}"


@mutator("zarr-v2", "zarr-v3")
def directory_links(t: Target) -> str:
    d = t.pick(t.dirs())
    how = t.rng.choice(("loop-parent", "loop-self", "loop-root", "outside", "relative-outside"))
    name = t.rng.choice(("loop", "X", "obs", "c", "0"))
    if len(str(d)) + len(os.path.relpath(t.path, d)) > 3000:
        d = t.path  # a folder nested thousands deep (an earlier mutation): its link, or the way back up, is past PATH_MAX
    target = d / name
    if target.exists() or target.is_symlink():
        if target.is_dir() and not target.is_symlink():
            remove_tree(target)
        else:
            target.unlink()
    link = {
        "loop-parent": "..",
        "loop-self": ".",
        "loop-root": os.path.relpath(t.path, d),
        "outside": str(t.canary.folder),
        "relative-outside": os.path.relpath(t.canary.folder, d),
    }[how]
    os.symlink(link, target)
    return f"{target.relative_to(t.path)} -> {link}"


@mutator("zarr-v2", "zarr-v3")
def nested_groups(t: Target) -> str:
    depth = t.rng.choice((100, 600, 1500))
    d = t.path
    doc = '{"zarr_format": 2}' if t.format == "zarr-v2" else '{"zarr_format": 3, "node_type": "group"}'
    name = ".zgroup" if t.format == "zarr-v2" else "zarr.json"
    d = d / "n"
    parts = ["n"]
    for _ in range(depth):
        parts.append("g")
    rel = "/".join(parts)
    if len(str(t.path / rel)) > 3800:
        raise Skip("path too long")
    here = t.path
    for part in parts:  # one level at a time: makedirs recurses once per level
        here = here / part
        if not here.is_dir():
            os.mkdir(here)
    if t.rng.random() < 0.5:
        for i in range(1, len(parts) + 1, max(1, depth // 50)):
            (t.path / "/".join(parts[:i]) / name).write_text(doc)
    (t.path / rel / name).write_text(doc)
    return f"{depth} nested groups"


@mutator("zarr-v2", "zarr-v3", "zip")
def consolidated_escape(t: Target) -> str:
    """Consolidated metadata naming keys that climb out of the store or are absolute."""
    p = t.path / ".zmetadata"
    doc = _load(p) if p.exists() else {"zarr_consolidated_format": 1, "metadata": {}}
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        raise Skip("no consolidated metadata object")
    key = t.rng.choice(("../outside/.zgroup", "/etc/.zgroup", "a/../../x/.zarray", "..\\x\\.zattrs", "a//b/.zgroup"))
    doc["metadata"][key] = {"zarr_format": 2}
    p.write_text(json.dumps(doc))
    return f".zmetadata names {key}"


# ------------------------------------------------------------------------------------------------ zip stores


@mutator("zip")
def zip_names(t: Target) -> str:
    """Entry names that a reader could take for a loop or an escape (applied when the zip is written)."""
    how = t.rng.choice(("double-slash", "dot-dot", "absolute", "duplicate", "dir-entries", "deep", "backslash"))
    t.extra.append(how)  # type: ignore[attr-defined]
    return f"zip entry names: {how}"


@mutator("zip")
def zip_bomb_entry(t: Target) -> str:
    t.extra.append("bomb")  # type: ignore[attr-defined]
    return "a zip entry that inflates past 4 GB"


def write_zip(src: Path, dest: Path, rng: random.Random, extra: list[str]) -> None:
    """`src` (a directory store) zipped into `dest`, with the entry-name tricks `extra` asks for."""
    entries: list[tuple[str, bytes]] = []
    for root, dirs, names in walk(src):
        dirs.sort()
        for n in sorted(names):
            p = Path(root) / n
            if p.is_file():
                entries.append((str(p.relative_to(src)), p.read_bytes()))
    with (
        warnings.catch_warnings(),  # duplicate names are asked for ("duplicate"): zipfile warns of each
        zipfile.ZipFile(dest, "w", compression=rng.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))) as z,
    ):
        warnings.simplefilter("ignore", UserWarning)
        if "dir-entries" in extra:
            z.writestr(zipfile.ZipInfo("X/"), b"")
            z.writestr(zipfile.ZipInfo("obs//"), b"")
        for name, data in entries:
            if "double-slash" in extra and "/" in name and rng.random() < 0.5:
                name = name.replace("/", "//", 1)
            if "backslash" in extra and rng.random() < 0.3:
                name = name.replace("/", "\\")
            z.writestr(name, data)
        _add_entries(z, entries, rng, extra)


def _add_entries(z: zipfile.ZipFile, entries: list[tuple[str, bytes]], rng: random.Random, extra: list[str]) -> None:
    """The entries `extra` asks for beyond the store's own: a duplicate, names that climb out or nest deep, a bomb."""
    if "duplicate" in extra and entries:
        name, _ = entries[rng.randrange(len(entries))]
        z.writestr(name, b'{"zarr_format": 2, "shape": [2**40]}')
    if "dot-dot" in extra:
        z.writestr("../escape/.zgroup", b'{"zarr_format": 2}')
        z.writestr("a/../../.zattrs", b"{}")
    if "absolute" in extra:
        z.writestr("/abs/.zgroup", b'{"zarr_format": 2}')
    if "deep" in extra:
        depth = rng.choice((1500, 10_000))
        z.writestr("/".join(["g"] * depth) + "/.zgroup", b'{"zarr_format": 2}')
        z.writestr("/".join(["h"] * 300) + "/.zgroup", b'{"zarr_format": 2}')
    if "bomb" in extra and entries:
        from tests.bombs import raw_deflate_zeros

        body, n = raw_deflate_zeros(rng.choice((600_000_000, 2_000_000_000)))
        name = rng.choice([e[0] for e in entries])
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, b"")  # a placeholder entry; the raw member is appended below
        _append_raw_member(z, name + ("" if rng.random() < 0.5 else ".bomb"), body, n, rng.random() < 0.5)


def _append_raw_member(z: zipfile.ZipFile, name: str, deflated: bytes, size: int, lie: bool) -> None:
    """A deflated member written as is: its header may declare the true size, or lie and declare a small one."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.compress_size = len(deflated)
    info.file_size = 100 if lie else size % 2**32
    info.CRC = 0
    if size >= 2**32 and not lie:
        raise Skip("zip64 sizes not written by hand")
    with z._lock:
        info.header_offset = z.fp.tell()
        z.fp.write(info.FileHeader(False))
        z.fp.write(deflated)
        z.start_dir = z.fp.tell()
        z.filelist.append(info)
        z.NameToInfo[info.filename] = info


# --------------------------------------------------------------------------------------------- TileDB (CXG)


def _tiledb_arrays(t: Target) -> list[Path]:
    return [d for d in t.dirs() if (d / "__schema").is_dir() or (d / "__array_schema.tdb").exists()]


@mutator("tiledb")
def tiledb_metadata(t: Target) -> str:
    import tiledb

    arrays = _tiledb_arrays(t)
    meta_arrays = [a for a in arrays if a.name == "cxg_group_metadata"] or arrays
    a = t.pick(meta_arrays)
    key = t.rng.choice(("cxg_properties", "cxg_schema", "cxg_category_colors", "cxg_version", "other"))
    value = t.rng.choice(
        (
            _deep(t.rng.choice((1000, 100_000)), t.rng),
            "not json",
            "{" * 10,
            "x" * 2_000_000,
            7,
            1.5,
            '{"title": 1, "about": []}',
            '{"a": NaN}',
            '{"a":1, "a":2}',
            "\u00e9",
        )
    )
    _hand_to_tiledb(a)
    try:
        with tiledb.open(str(a), "w") as arr:
            arr.meta[key] = value
    except Exception as exc:
        raise Skip(f"tiledb refused ({exc})") from None
    return f"{a.name} meta {key} = {str(value)[:20]}"


# The size fields of a fragment's metadata footer that drive TileDB's allocations and reads, by the name
# spec_validate/nodes/tiledb/fragments.py gives them.
FOOTER_SIZES = (
    "array schema name's length",
    "file sizes",
    "var file sizes",
    "validity file sizes",
    "number of sparse tiles",
    "last tile's cells",
    "generic tile offsets",
    "dimension 0's non-empty range",
)


@mutator("tiledb")
def tiledb_fragment_sizes(t: Target) -> str:
    """A size field of an array's fragment metadata made to say more than the files hold: a footer field (one byte of
    it, or all of it), a generic tile's header or its chunk count. TileDB allocated 2 GB for one such byte of a schema
    name's length, and crashed on one of a data file's size (the issue's reproductions)."""
    import tiledb

    from spec_validate.nodes.tiledb import fragments, library

    array = t.pick(_tiledb_arrays(t))
    _hand_to_tiledb(array)  # no FIFO (opening it would block the fuzzer), no symlink
    folder = Path(t.pick(list(fragments.fragment_folders(str(array)))))
    try:
        layout = library.layout(str(array), tiledb.ArraySchema.load(str(array)))
        tiles, fields = fragments.metadata_fields(str(folder), layout)
    except Exception as exc:  # an earlier mutation broke it
        raise Skip(f"its footer cannot be parsed ({exc})") from None
    meta = folder / fragments.METADATA_FILE
    data = bytearray(meta.read_bytes())
    how = t.rng.choice(("footer-byte", "footer-value", "tile-size", "chunk-count"))
    if how.startswith("footer"):
        name = t.rng.choice([f for f in FOOTER_SIZES if f in fields])
        at, size = fields[name]
        at += 8 * t.rng.randrange(max(1, size // 8)) if size >= 8 else 0
        if how == "footer-byte":
            at += t.rng.randrange(min(8, size))
            data[at] = t.rng.choice((0x7A, 0xDC, 0xFF, 0x80))
        else:
            data[at : at + min(8, size)] = t.rng.choice((2**31, 2**40, 2**63 - 1)).to_bytes(8, "little")[: min(8, size)]
    elif how == "tile-size":
        tile = t.pick(tiles)
        at = tile + t.rng.choice((4, 12))  # its persisted size, or its tile size
        name = f"generic tile at {tile}"
        data[at : at + 8] = t.rng.choice((2**31, 2**40)).to_bytes(8, "little")
    else:
        tile = t.pick(tiles)
        pipeline = int.from_bytes(data[tile + 30 : tile + 34], "little")
        at = tile + fragments.GENERIC_TILE.size + pipeline
        name = f"chunk count of the generic tile at {tile}"
        data[at : at + 8] = t.rng.choice((2**32, 2**50)).to_bytes(8, "little")
    meta.write_bytes(bytes(data))
    return f"{array.name}: {how} {name} at {at}"


@mutator("tiledb")
def tiledb_remove_file(t: Target) -> str:
    p = t.pick(t.files())
    p.unlink()
    return f"removed {p.relative_to(t.path)}"


@mutator("tiledb")
def tiledb_special(t: Target) -> str:
    how = t.rng.choice(("fifo-file", "fifo-member", "symlink-outside", "symlink-loop", "member-absolute", "member-dotdot"))
    if how == "fifo-file":
        p = t.pick(t.files())
        p.unlink()
        os.mkfifo(p)
        return f"{p.relative_to(t.path)} became a FIFO"
    if how == "fifo-member":
        os.mkfifo(t.path / "fifo")
        return "a FIFO in the group folder"
    if how == "symlink-outside":
        name = t.rng.choice(("outside", "X", "obs"))
        target = t.path / name
        if target.is_dir() and not target.is_symlink():
            remove_tree(target)
        os.symlink(_canary_array(t), target)
        return f"{name} -> a TileDB array outside"
    if how == "symlink-loop":
        d = t.pick(t.dirs())
        os.symlink("..", d / "loop")
        return f"{(d / 'loop').relative_to(t.path)} -> .."
    import tiledb

    uri = str(_canary_array(t)) if how == "member-absolute" else "../" + _canary_array(t).name
    _hand_to_tiledb(t.path)
    try:
        if not (t.path / "__group").exists() and not (t.path / "__tiledb_group.tdb").exists():
            tiledb.Group.create(str(t.path))
        with tiledb.Group(str(t.path), "w") as g:
            g.add(
                uri,
                name=t.rng.choice(("outside", "X", "emb")),
                relative=how != "member-absolute",
            )
    except Exception as exc:
        raise Skip(f"tiledb refused the member ({exc})") from None
    return f"group member {how}"


def _hand_to_tiledb(path: Path) -> None:
    """Skip unless `path` is safe to give TileDB to write in: an earlier mutation may have left a FIFO below it
    (TileDB opening one blocks the harness for good) or a symlink (one to `..` is a loop for its listing)."""
    for folder, dirs, names in walk(path):
        for name in dirs + names:
            entry = os.path.join(folder, name)
            mode = os.lstat(entry).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise Skip(f"not handed to TileDB: {os.path.relpath(entry, path)} is a symlink or a special file")


def _canary_array(t: Target) -> Path:
    """A small TileDB array beside the input (made once per canary) holding the canary's token."""
    import numpy as np
    import tiledb

    uri = t.canary.root / "outside.tdb"
    if not uri.exists():
        schema = tiledb.ArraySchema(
            domain=tiledb.Domain(tiledb.Dim("i", domain=(0, 5), tile=6, dtype=np.uint32)), attrs=[tiledb.Attr("", dtype=np.int64)]
        )
        tiledb.Array.create(str(uri), schema)
        with tiledb.open(str(uri), "w") as a:
            a[:] = np.frombuffer(t.canary.token.ljust(48, b"!")[:48], dtype="<i8")
    return uri


# --------------------------------------------------------------------------------------------------- inputs


@dataclass
class Input:
    path: Path
    format: str
    base: str
    canary: Canary
    mutations: list[str] = field(default_factory=list)


def make_input(index: int, seed: int, work: Path, formats: tuple[str, ...] = FORMATS) -> Input:
    """Input number `index` of the run seeded `seed`, written under `work` (a fresh directory), beside its canary."""
    rng = random.Random(f"{seed}:{index}")
    fmt = formats[index % len(formats)]
    base = rng.choice(BASES[fmt])
    canary = Canary(work / "canary")
    canary.create(rng.randrange(2**63))
    folder = work / "input"
    folder.mkdir(parents=True)
    src = CORPUS / base
    store_fmt = "zarr-v3" if fmt == "zip" and "zarr-v3" in base else "zarr-v2" if fmt == "zip" else fmt
    dest = folder / (src.name if fmt != "zip" else src.name + ".zip")
    build = folder / src.name if fmt == "zip" else dest
    if src.is_dir():
        shutil.copytree(src, build, symlinks=True)
    else:
        shutil.copy2(src, dest)
    if fmt == "hdf5" and rng.random() < 0.2:
        # A Zarr document beside the file: the file, not its folder, is what must be validated.
        (folder / ".zgroup").write_text('{"zarr_format": 2}')
    target = Target(build, rng, canary, store_fmt if fmt != "zip" else "zip")
    target.extra = []  # type: ignore[attr-defined]
    chosen = MUTATORS[fmt]
    done: list[str] = []
    # Structural edits first (they need a readable file), byte-level damage last.
    wanted = sorted(
        rng.sample(range(len(chosen)), k=min(len(chosen), rng.choice((1, 1, 2, 3)))),
        key=lambda i: 2 if chosen[i][0] in BYTE_LEVEL else 1 if chosen[i][0] in LAST_STRUCTURAL | PARSED_LAST else 0,
    )
    for i in wanted:
        name, fn = chosen[i]
        try:
            done.append(f"{name}: {fn(target)}")
        except Skip as exc:
            done.append(f"{name}: skipped ({exc})")
    if fmt == "zip":
        write_zip(build, dest, rng, target.extra)  # type: ignore[attr-defined]
        remove_tree(build)
        if rng.random() < 0.15:
            data = bytearray(dest.read_bytes())
            flip(data, rng, rng.choice((1, 8)))
            dest.write_bytes(bytes(data))
            done.append("flip bytes of the zip")
    return Input(dest, fmt, base, canary, done)


# ---------------------------------------------------------------------------------------- the defects


def _regress_heap_length(t: Target) -> str:
    data = bytearray(t.path.read_bytes())
    obj = _heap_objects(data)[0]
    data[obj + 8 : obj + 16] = (0x6A000000).to_bytes(8, "little")
    t.path.write_bytes(bytes(data))
    return f"global heap object at {obj} says {0x6A000000} bytes"


def _regress_shape(shape: list[int]) -> Callable[[Target], str]:
    def edit(t: Target) -> str:
        p = next(q for q in sorted(_array_documents(t)) if len(_load(q).get("shape", ())) == len(shape))
        doc = _load(p)
        doc["shape"] = shape
        chunks = [2**20] * len(shape)
        _set_chunks(p, doc, chunks)
        p.write_text(json.dumps(doc))
        return f"{p.relative_to(t.path)}: shape {shape} chunks {chunks}"

    return edit


def _regress_attribute_heap_id(t: Target) -> str:
    """An attribute's stored string value made to say 0x905E1D65 bytes in a collection past the end of the file."""
    import h5py

    data = bytearray(t.path.read_bytes())
    with h5py.File(t.path, "r", locking=False) as f:
        header = h5py.h5g.get_objinfo(f["obs"].id).objno[0]
    at = data.index(struct.pack("<IQ", len("dataframe"), data.index(b"GCOL")), header)  # /obs's encoding-type
    struct.pack_into("<IQ", data, at, 0x905E1D65, 2**40)
    t.path.write_bytes(bytes(data))
    return f"/obs encoding-type at {at}: {0x905E1D65} bytes in a collection at {2**40}"


def _regress_codecs(t: Target) -> str:
    p = t.path / "varp" / "corr" / "zarr.json"
    doc = _load(p)
    doc["codecs"] = [{"name": "transpose", "configuration": {"order": [0, 1]}}] * 100_000 + doc["codecs"]
    p.write_text(json.dumps(doc))
    return f"{p.relative_to(t.path)}: 100000 codecs more"


def _regress_nested(t: Target) -> str:
    with _h5(t) as f:
        g = f.require_group("/uns")
        for _ in range(10_000):
            g = g.create_group("g")
    return "10000 nested groups under /uns"


def _as_made(t: Target) -> str:
    return "the case as conformance-corpus/hostile/generate_hostile.py makes it"


# Each defect of the issue "Bounded by default" (#38), made the same way every time: (format, base, edit).
REGRESSIONS: dict[str, tuple[str, str, Callable[[Target], str]]] = {
    "heap-string-length": ("hdf5", "h5seurat/valid-every-element.h5Seurat", _regress_heap_length),
    "tiledb-schema-name-length": ("tiledb", "hostile/cxg/fragment-schema-name-huge.cxg", _as_made),
    "tiledb-data-file-size": ("tiledb", "hostile/cxg/fragment-file-size-huge.cxg", _as_made),
    "shape-2-80": ("zarr-v2", "anndata/zarr-v2/valid-every-element.zarr", _regress_shape([2**80])),
    "shape-2-62-squared": ("zarr-v3", "anndata/zarr-v3/valid-every-element.zarr", _regress_shape([2**62, 2**62])),
    "nested-groups-10000": ("hdf5", "anndata/h5ad/valid-zero-obs.h5ad", _regress_nested),
    "attributes-100000": ("hdf5", "anndata/h5ad/valid-zero-obs.h5ad", lambda t: _many_dense_attributes(t, 100_000)),
    # Found by the 10,000-input run at default flags (seed 7): input 5100 (2.4 GB) and input 757 (past 60 s loaded).
    "attribute-heap-id-past-the-file": ("hdf5", "anndata/h5ad/valid-zero-obs.h5ad", _regress_attribute_heap_id),
    "codecs-100000": ("zarr-v3", "anndata/zarr-v3/valid-every-element.zarr", _regress_codecs),
}


def regression_input(name: str, work: Path) -> Input:
    """The input of the issue's defect `name` (REGRESSIONS), written under `work` (a fresh directory)."""
    fmt, base, edit = REGRESSIONS[name]
    canary = Canary(work / "canary")
    canary.create(0)
    folder = work / "input"
    folder.mkdir(parents=True)
    src = CORPUS / base
    dest = folder / src.name
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)
    else:
        shutil.copy2(src, dest)
    target = Target(dest, random.Random(name), canary, fmt)
    return Input(dest, fmt, base, canary, [f"{name}: {edit(target)}"])


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry below `root` (not following symlinks): kind, size, mode, mtime, and a hash of a file's bytes."""
    import hashlib

    out: dict[str, tuple] = {}
    paths = [root]
    if root.is_dir() and not root.is_symlink():
        for folder, dirs, names in walk(root):  # never through a symlink
            paths.extend(Path(folder) / n for n in sorted(dirs + names))
    for p in paths:
        st = p.lstat()
        rel = str(p.relative_to(root.parent))
        if stat.S_ISREG(st.st_mode):
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
        elif stat.S_ISLNK(st.st_mode):
            digest = os.readlink(p)
        else:
            digest = ""
        out[rel] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mode, st.st_mtime_ns, digest)
    return out
