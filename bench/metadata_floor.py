"""The metadata floor: every attribute value of an HDF5 file, or every JSON document of a Zarr store, read once.

    python bench/metadata_floor.py FILE

HDF5 (`.h5ad`): h5py visits every object and reads every attribute's value (`obj.attrs[name]`), as the
plainest h5py script that looks at all the metadata would. Zarr: every group's directory is listed and every
metadata document (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`, `zarr.json`) read and parsed as JSON; an
array's directory is not descended into (below it are only chunks). Neither checks anything: a validator that
reads all the metadata cannot do less. Prints one JSON line: the objects, the attributes or documents read and
the seconds taken after the imports.
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


def zarr(path: str) -> tuple[int, int]:
    directories = documents = 0
    stack = [path]
    while stack:
        folder = stack.pop()
        directories += 1
        folders = []
        is_array = False
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.name in DOCUMENTS:
                    with open(entry.path, "rb") as fh:
                        document = json.loads(fh.read())
                    documents += 1
                    is_array |= entry.name == ".zarray" or (entry.name == "zarr.json" and document.get("node_type") == "array")
        if not is_array:
            stack.extend(folders)
    return directories, documents


def main(argv: list[str]) -> int:
    path = argv[0]
    started = time.perf_counter()
    objects, read = zarr(path) if os.path.isdir(path) else hdf5(path)
    print(json.dumps({"objects": objects, "read": read, "seconds": time.perf_counter() - started}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
