"""Write the hostile-input regression cases: valid AnnData stores of the corpus, each edited into one input that
once cost the user the report, read outside the store, hung or took unbounded memory (issue "Hostile and corrupt
input"; the fuzzer in tests/fuzz/ found the same kinds).

Run as `python conformance-corpus/hostile/generate_hostile.py [CASE ...]`. It (re)writes the cases under
conformance-corpus/hostile/{h5ad,zarr-v2,zip}/ and nothing else; manifest.yaml beside them lists each case with
the rules it fails and the unreadable records (`problems`) its report must carry. Every case is one function named
like the case. Files named by a case (an external storage file, a virtual dataset's source, an external link's
target) do not exist: whatever the tool did with them, it must not try to read them.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent
H5AD_BASE = CORPUS / "anndata" / "h5ad" / "valid-every-element.h5ad"
ZARR_BASE = CORPUS / "anndata" / "zarr-v2" / "valid-every-element.zarr"
CASES: dict[str, Callable[[Path], None]] = {}
SUFFIX = {"h5ad": ".h5ad", "zarr-v2": ".zarr", "zip": ".zarr.zip"}
STAMP = (2024, 1, 1, 0, 0, 0)  # every zip entry's time: a rerun writes the same bytes


def case(container: str) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    """Register a case function; its name, with `_` as `-` and less a `_<container>` suffix, is the case name."""

    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        label = fn.__name__.removesuffix("_" + container.replace("-", "_")).replace("_", "-")
        CASES[f"{container}/{label}"] = fn
        return fn

    return register


def target(name: str) -> Path:
    container, label = name.split("/", 1)
    return HERE / container / f"{label}{SUFFIX[container]}"


def h5ad_copy(path: Path) -> h5py.File:
    shutil.copyfile(H5AD_BASE, path)
    return h5py.File(path, "r+")


def replace_indptr(f: h5py.File, make: Callable[[h5py.File, str], h5py.Dataset]) -> None:
    """/X/indptr rewritten by `make`, keeping its attributes: the array every CSR value rule reads."""
    attrs = dict(f["X/indptr"].attrs)
    del f["X/indptr"]
    ds = make(f, "X/indptr")
    for key, value in attrs.items():
        ds.attrs[key] = value


# ---------------------------------------------------------------------------------------------- HDF5


@case("h5ad")
def external_storage(path: Path) -> None:
    """/X/indptr's data lies in an external file (HDF5 external storage): reported, never read."""
    with h5ad_copy(path) as f:
        replace_indptr(f, lambda f, name: f.create_dataset(name, shape=(13,), dtype="<i4", external=[("outside.bin", 0, 52)]))


@case("h5ad")
def virtual_dataset(path: Path) -> None:
    """/X/indptr is a virtual dataset mapping another file: reported, never read (the process once died at exit)."""
    with h5ad_copy(path) as f:
        layout = h5py.VirtualLayout(shape=(13,), dtype="<i4")
        layout[:] = h5py.VirtualSource("outside.h5", "data", shape=(13,))
        replace_indptr(f, lambda f, name: f.create_virtual_dataset(name, layout, fillvalue=0))


@case("h5ad")
def external_link(path: Path) -> None:
    """/uns/outside is an external link to another file: reported, never followed."""
    with h5ad_copy(path) as f:
        f["uns/outside"] = h5py.ExternalLink("outside.h5", "/")


def _dict_group_heap(path: Path, name: str) -> tuple[bytearray, int]:
    """The base file copied to `path` with a dict group `name` of one member; its bytes, and where the group's local
    heap (which holds the member's name, a marker found in the bytes) starts."""
    marker = "m" * 40
    with h5ad_copy(path) as f:
        g = f.create_group(name)
        g.attrs["encoding-type"], g.attrs["encoding-version"] = "dict", "0.1.0"
        g.create_group(marker).attrs.update({"encoding-type": "dict", "encoding-version": "0.1.0"})
    data = bytearray(path.read_bytes())
    return data, data.rindex(b"HEAP", 0, data.index(marker.encode()))


@case("h5ad")
def corrupt_group(path: Path) -> None:
    """The local heap of /uns/broken (a dict group with one member) is damaged: its members cannot be listed. One
    unreadable record; every other clause keeps its verdict (once: `internal error`, the whole report lost)."""
    data, at = _dict_group_heap(path, "uns/broken")
    data[at : at + 4] = b"HEAX"
    path.write_bytes(bytes(data))


@case("h5ad")
def linked_groups(path: Path) -> None:
    """/uns/chain nests 40 dict groups, each linked from its parent three times (two hard links, one soft): every
    path through them is 3**40 paths; each group is entered once."""
    with h5ad_copy(path) as f:
        here = f["uns"]
        for name in ("chain",) + ("a",) * 40:
            below = here.create_group(name)
            below.attrs["encoding-type"], below.attrs["encoding-version"] = "dict", "0.1.0"
            if here.name != "/uns":
                here["b"] = below
                here["s"] = h5py.SoftLink(below.name)
            here = below


@case("h5ad")
def member_name_not_utf8(path: Path) -> None:
    """/uns/names, a dict group, has one member whose link name is the bytes `\\xff\\xfe`, not UTF-8: h5py lists
    it as bytes (once: `internal error` on the name, the whole report lost). It is read under an escaped name,
    like any other member."""
    with h5ad_copy(path) as f:
        for name in ("uns/names", b"uns/names/\xff\xfe"):
            g = f.create_group(name)
            g.attrs["encoding-type"], g.attrs["encoding-version"] = "dict", "0.1.0"


@case("h5ad")
def huge_unwritten_h5ad(path: Path) -> None:
    """/X/indptr declares 2**40 elements in chunks of 2**16 and none is written: read as its fill value (0) without
    materialising it (once: every block range listed up front, then gigabytes); it fails only its length."""
    with h5ad_copy(path) as f:
        replace_indptr(f, lambda f, name: f.create_dataset(name, shape=(2**40,), chunks=(2**16,), dtype="<i4", fillvalue=0))


def _make_self_named(data: bytearray, at: int, node_type: int, key_bytes: int) -> None:
    """The version 1 B-tree node at `at` (a single leaf: level 0) made a level 1 node whose first child is itself:
    a tree the HDF5 library walks by recursion, with no end (the process dies, exit 139)."""
    assert data[at : at + 4] == b"TREE" and data[at + 4] == node_type and data[at + 5] == 0, "not a leaf of that type"
    data[at + 5] = 1
    child = at + 24 + key_bytes  # signature, type, level, entries, two sibling addresses (8 bytes each), a key
    data[child : child + 8] = at.to_bytes(8, "little")


@case("h5ad")
def cyclic_group_btree(path: Path) -> None:
    """/uns/cycle, a dict group, keeps its members in a symbol table whose B-tree names itself as its own child:
    listing the group, or asking its metadata's size, recursed in the HDF5 library until the process died (exit
    139, no report). Its members are reported unreadable, every other clause keeps its verdict."""
    data, heap = _dict_group_heap(path, "uns/cycle")
    _make_self_named(data, data.rindex(b"TREE", 0, heap), node_type=0, key_bytes=8)  # a key: a name's heap offset
    path.write_bytes(bytes(data))


@case("h5ad")
def cyclic_chunk_index(path: Path) -> None:
    """/X/indices is chunked and its chunk index, a B-tree, names itself as its own child: reading the array (or
    sizing its metadata) recursed in the HDF5 library until the process died (exit 139, no report). It is reported
    unreadable and its clauses not checked."""
    with h5ad_copy(path) as f:
        attrs = dict(f["X/indices"].attrs)
        values = f["X/indices"][...]
        del f["X/indices"]
        ds = f.create_dataset("X/indices", data=values, chunks=(4,))
        ds.attrs.update(attrs)
        header = h5py.h5g.get_objinfo(ds.id).objno[0]
    data = bytearray(path.read_bytes())
    # The index's only node follows the dataset's header (a key: chunk size, filter mask, two offsets).
    _make_self_named(data, data.index(b"TREE", header), node_type=1, key_bytes=24)
    path.write_bytes(bytes(data))


# ---------------------------------------------------------------------------------------------- Zarr v2


def zarr_copy(path: Path) -> None:
    shutil.copytree(ZARR_BASE, path)


@case("zarr-v2")
def deep_nested_attrs(path: Path) -> None:
    """uns/.zattrs holds a value nested 100,000 levels deep: refused as an unreadable document (once: RecursionError,
    `internal error`); the clauses that need uns's attributes name it as not checked."""
    zarr_copy(path)
    depth = 100_000
    text = '{"encoding-type": "dict", "encoding-version": "0.1.0", "x": ' + "[" * depth + "]" * depth + "}"
    (path / "uns" / ".zattrs").write_text(text)


@case("zarr-v2")
def huge_unwritten_zarr_v2(path: Path) -> None:
    """X/indptr declares 2**62 elements in chunks of 2**20, none written: one block of the fill value (0)."""
    zarr_copy(path)
    meta_path = path / "X" / "indptr" / ".zarray"
    meta = json.loads(meta_path.read_text())
    meta.update(shape=[2**62], chunks=[2**20])
    meta_path.write_text(json.dumps(meta, indent=2))
    for chunk in (path / "X" / "indptr").iterdir():
        if not chunk.name.startswith("."):
            chunk.unlink()


@case("zarr-v2")
def huge_sparse_chunks(path: Path) -> None:
    """X/indptr declares 2**40 elements in chunks of one element, and its 13 values are stored as chunks 0 to 12
    (found by the fuzzer: the first block, 2**22 rows, was read by asking for each of its 2**22 chunk keys and ran
    past --timeout; now the chunks the store lists are read, and the rest is the fill value)."""
    zarr_copy(path)
    folder = path / "X" / "indptr"
    meta = json.loads((folder / ".zarray").read_text())
    values = zarr_values(folder, meta)
    for chunk in folder.iterdir():
        if not chunk.name.startswith("."):
            chunk.unlink()
    meta.update(shape=[2**40], chunks=[1], compressor=None, filters=None)
    (folder / ".zarray").write_text(json.dumps(meta, indent=2))
    for i, value in enumerate(values):
        (folder / str(i)).write_bytes(value.tobytes())


def zarr_values(folder: Path, meta: dict) -> np.ndarray:
    """The values of a one-chunk Zarr v2 array, decoded with its compressor (numcodecs)."""
    import numcodecs

    raw = (folder / "0").read_bytes()
    codec = numcodecs.get_codec(meta["compressor"]) if meta.get("compressor") else None
    data = codec.decode(raw) if codec is not None else raw
    return np.frombuffer(data, dtype=meta["dtype"])[: meta["shape"][0]]


# ---------------------------------------------------------------------------------------------- zipped Zarr


@case("zip")
def entry_names(path: Path) -> None:
    """A zipped store whose entry names are no keys: `a//.zgroup` (once read as its own child, a loop at full CPU),
    `../up/.zgroup`, `/abs/.zgroup`, and a group nested 10,000 levels deep. Each is reported; the walk ends."""
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted(p for p in ZARR_BASE.rglob("*") if p.is_file()):
            z.writestr(zipfile.ZipInfo(file.relative_to(ZARR_BASE).as_posix(), STAMP), file.read_bytes())
        for name in ("a//.zgroup", "a//b/.zgroup", "../up/.zgroup", "/abs/.zgroup", "/".join(["g"] * 10_000) + "/.zgroup"):
            z.writestr(zipfile.ZipInfo(name, STAMP), '{"zarr_format": 2}')


def main(argv: list[str]) -> None:
    wanted = set(argv)
    for name, fn in CASES.items():
        if wanted and name not in wanted:
            continue
        path = target(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        fn(path)
        print(f"wrote {path.relative_to(CORPUS)}")


if __name__ == "__main__":
    main(sys.argv[1:])
