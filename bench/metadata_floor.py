"""The metadata floor: every attribute value of an HDF5 file, or every JSON document of a Zarr store, read once.

    python bench/metadata_floor.py FILE [--arrays PLAN.json]

HDF5 (`.h5ad`): h5py visits every object and reads every attribute's value (`obj.attrs[name]`), as the
plainest h5py script that looks at all the metadata would. Zarr: every group's directory is listed and every
metadata document (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`, `zarr.json`) read and parsed as JSON; an
array's directory is not descended into (below it are only chunks). Neither checks anything: a validator that
reads all the metadata cannot do less.

`--arrays PLAN.json` (Zarr): the same reads a validation makes, not the JSON alone. Every folder is listed, array
folders too (the chunk-key clauses need their keys), and every stored chunk of the arrays in PLAN.json (the array
paths `spec_validate.engine.run.scan_plan` names for the default packs: each categorical's `codes`, each sparse
matrix's `indptr` and `indices`) is read and decoded with numcodecs, as bench/floor.py reads arrays. Still nothing
is checked.

Prints one JSON line: the objects, the attributes or documents read, the chunks decoded and the seconds taken
after the imports.
"""

from __future__ import annotations

import json
import os
import sys
import time

DOCUMENTS = frozenset({".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"})


def hdf5(path: str) -> tuple[int, int]:
    import h5py

    counts = [0, 0]

    def visit(obj) -> None:
        counts[0] += 1
        for name in obj.attrs:
            obj.attrs[name]
            counts[1] += 1

    with h5py.File(path, "r") as f:
        visit(f)
        f.visititems(lambda _, obj: visit(obj))
    return counts[0], counts[1]


def zarr(path: str, arrays: frozenset[str] | None = None) -> tuple[int, int, int]:
    """(folders listed, documents read, chunks decoded). `arrays`: the array paths (`/obs/c/codes`) whose chunks
    are read and decoded, every folder then listed; None: JSON documents only, array folders not descended into."""
    directories = documents = chunks = 0
    stack = [(path, "/")]
    while stack:
        folder, node = stack.pop()
        directories += 1
        folders = []
        files = []
        is_array = False
        document = None
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry)
                elif entry.name in DOCUMENTS:
                    with open(entry.path, "rb") as fh:
                        parsed = json.loads(fh.read())
                    documents += 1
                    if entry.name == ".zarray" or (entry.name == "zarr.json" and parsed.get("node_type") == "array"):
                        is_array, document = True, parsed
                else:
                    files.append(entry.path)
        if arrays is not None and is_array and node in arrays:
            decode = _decoder(document)
            keys = files + [f for d in folders for f in _files_below(d.path)]
            for key in keys:
                with open(key, "rb") as fh:
                    decode(fh.read())
                chunks += 1
        if arrays is not None:
            if is_array:
                for d in folders:  # chunk folders (`c/`, nested keys): listed as a validation lists them
                    directories += _count_folders(d.path)
            else:
                stack.extend((d.path, f"{node.rstrip('/')}/{d.name}") for d in folders)
        elif not is_array:
            stack.extend((d.path, f"{node.rstrip('/')}/{d.name}") for d in folders)
    return directories, documents, chunks


def _files_below(folder: str) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out.extend(os.path.join(root, n) for n in names)
    return out


def _count_folders(folder: str) -> int:
    return sum(1 for _ in os.walk(folder))


def _decoder(document: dict):
    """bytes of one stored chunk -> its values, through the codecs the array's document names (numcodecs)."""
    import numcodecs
    import numpy as np

    if "zarr_format" in document and document["zarr_format"] == 3:
        dtype = np.dtype(document["data_type"])
        steps = []
        for codec in document.get("codecs", []):
            name, config = codec["name"], codec.get("configuration", {})
            if name == "bytes":
                dtype = dtype.newbyteorder("<" if config.get("endian", "little") == "little" else ">")
            elif name in ("zstd", "gzip", "blosc"):
                steps.append(numcodecs.get_codec({"id": name, **_numcodecs_config(name, config)}))
            else:
                raise SystemExit(f"the floor decodes bytes, zstd, gzip and blosc only, not {name}")
        return lambda raw: np.frombuffer(_run(steps, raw), dtype=dtype)
    dtype = np.dtype(document["dtype"])
    steps = [numcodecs.get_codec(f) for f in document.get("filters") or []]
    if document.get("compressor"):
        steps.append(numcodecs.get_codec(document["compressor"]))
    return lambda raw: np.frombuffer(_run(steps, raw), dtype=dtype)


def _numcodecs_config(name: str, config: dict) -> dict:
    if name == "blosc":
        shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}.get(config.get("shuffle"), 1)
        return {"cname": config.get("cname", "lz4"), "clevel": config.get("clevel", 5), "shuffle": shuffle}
    return {k: v for k, v in config.items() if k in ("level", "checksum")}


def _run(steps: list, raw: bytes) -> bytes:
    for codec in reversed(steps):
        raw = codec.decode(raw)
    return raw


def main(argv: list[str]) -> int:
    path = argv[0]
    arrays = None
    if len(argv) == 3 and argv[1] == "--arrays":
        with open(argv[2], encoding="utf-8") as fh:
            arrays = frozenset(json.load(fh))
    if arrays is not None:  # the codecs loaded before the clock starts, as the imports are
        import numcodecs  # noqa: F401
        import numpy  # noqa: F401
    started = time.perf_counter()
    chunks = 0
    if os.path.isdir(path):
        objects, read, chunks = zarr(path, arrays)
    else:
        objects, read = hdf5(path)
    print(json.dumps({"objects": objects, "read": read, "chunks": chunks, "seconds": time.perf_counter() - started}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
