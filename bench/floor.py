"""The read floor: a plain, single-threaded read of exactly the arrays spec-validate scans, block by block.

    python bench/floor.py FILE --full /X/indptr /X/indices /obs/batch/codes --edges /some/array

Each array is read in chunk-aligned blocks of at most `--block-elements` elements (the same blocks
spec-validate reads: a whole number of storage chunks; fixed-size slices for contiguous HDF5 datasets),
into one reused buffer for HDF5, and reduced with `max`. `--full` arrays are read whole, `--edges` arrays
only their first and last block. With no `--full`/`--edges`, the list comes from
`spec_validate.engine.run.scan_plan` when importable, else from `fallback_plan` below; bench/run.py always
passes the list, so the timed process imports only numpy and h5py (or zarr).

Prints one JSON line: the arrays read, elements and bytes read, the maxima (so no read is optimised away),
and `seconds`, the time spent opening and reading (without interpreter start and imports).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

DEFAULT_BLOCK_ELEMENTS = 1 << 22  # spec_validate.nodes.base.DEFAULT_BLOCK_ELEMENTS; copied so no spec_validate import
SPARSE = ("csr_matrix", "csc_matrix")


def rows_per_block(shape: tuple[int, ...], chunk_rows: int, max_elements: int) -> int:
    """Rows per block: a whole number of chunks along axis 0, at most `max_elements` elements when possible."""
    row_size = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
    chunk_rows = max(1, chunk_rows)
    wanted = max(1, max_elements // max(1, row_size))
    return max(chunk_rows, (wanted // chunk_rows) * chunk_rows)


def block_ranges(shape: tuple[int, ...], chunk_rows: int, max_elements: int, edges: bool) -> list[tuple[int, int]]:
    if not shape[0]:
        return []
    step = rows_per_block(shape, chunk_rows, max_elements)
    ranges = [(start, min(shape[0], start + step)) for start in range(0, shape[0], step)]
    if edges and len(ranges) > 2:
        ranges = [ranges[0], ranges[-1]]
    return ranges


def is_zarr(path: str) -> bool:
    return os.path.isdir(path)


def read_hdf5(path: str, plan: list[tuple[str, str]], max_elements: int) -> list[dict]:
    import h5py

    out = []
    with h5py.File(path, "r") as f:
        for node, mode in plan:
            ds = f[node]
            if not ds.shape:  # 0-d
                values = np.asarray(ds[()])
                out.append(
                    {
                        "path": node,
                        "mode": mode,
                        "elements": int(values.size),
                        "bytes": int(values.nbytes),
                        "max": values.max().item(),
                    }
                )
                continue
            chunk_rows = ds.chunks[0] if ds.chunks else 1
            ranges = block_ranges(ds.shape, chunk_rows, max_elements, mode == "edges")
            rows = max((b - a for a, b in ranges), default=0)
            buffer = np.empty((rows, *ds.shape[1:]), dtype=ds.dtype)
            top, elements = None, 0
            for a, b in ranges:
                view = buffer[: b - a]
                ds.read_direct(view, np.s_[a:b], np.s_[0 : b - a])
                m = view.max()
                top = m if top is None else max(top, m)
                elements += view.size
            out.append(
                {
                    "path": node,
                    "mode": mode,
                    "elements": elements,
                    "bytes": elements * ds.dtype.itemsize,
                    "max": None if top is None else top.item(),
                }
            )
    return out


def read_zarr(path: str, plan: list[tuple[str, str]], max_elements: int) -> list[dict]:
    import numcodecs.blosc
    import zarr

    # One thread doing the work: no concurrent chunk fetches, no Blosc thread pool.
    zarr.config.set({"async.concurrency": 1, "threading.max_workers": 1})
    numcodecs.blosc.use_threads = False
    root = zarr.open_group(path, mode="r")
    out = []
    for node, mode in plan:
        arr = root[node.strip("/")]
        if not arr.shape:
            values = np.asarray(arr[()])
            out.append(
                {
                    "path": node,
                    "mode": mode,
                    "elements": int(values.size),
                    "bytes": int(values.nbytes),
                    "max": values.max().item(),
                }
            )
            continue
        top, elements = None, 0
        for a, b in block_ranges(arr.shape, arr.chunks[0], max_elements, mode == "edges"):
            values = arr[a:b]
            m = values.max()
            top = m if top is None else max(top, m)
            elements += values.size
        out.append(
            {
                "path": node,
                "mode": mode,
                "elements": elements,
                "bytes": elements * arr.dtype.itemsize,
                "max": None if top is None else top.item(),
            }
        )
    return out


def fallback_plan(path: str) -> list[tuple[str, str]]:
    """What the default AnnData rules scan today, found from encoding attributes.

    `indptr` and `indices` of every csr_matrix/csc_matrix group and `codes` of every categorical, in full.
    (The rules' edge-only reads, the last value of `indptr`, fall inside those full scans.)
    """
    plan: list[tuple[str, str]] = []

    def visit(name: str, attrs) -> None:
        kind = attrs.get("encoding-type")
        if isinstance(kind, bytes):
            kind = kind.decode()
        if kind in SPARSE:
            plan.extend([(f"/{name}/indptr", "full"), (f"/{name}/indices", "full")])
        elif kind == "categorical":
            plan.append((f"/{name}/codes", "full"))

    if is_zarr(path):
        import zarr

        def walk(group, prefix: str) -> None:
            for name, child in sorted(group.groups()):
                full = f"{prefix}{name}"
                visit(full, dict(child.attrs))
                walk(child, f"{full}/")

        walk(zarr.open_group(path, mode="r"), "")
    else:
        import h5py

        with h5py.File(path, "r") as f:
            f.visititems(lambda name, obj: visit(name, obj.attrs) if isinstance(obj, h5py.Group) else None)
    return plan


def default_plan(path: str) -> tuple[list[tuple[str, str]], str]:
    """The arrays spec-validate's default rules scan, and where the list came from."""
    try:
        from spec_validate.engine.run import scan_plan  # type: ignore[attr-defined]
    except ImportError:
        return fallback_plan(path), "fallback"
    return [(str(p), str(m)) for p, m in scan_plan(path)], "scan_plan"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--full", nargs="*", default=[], metavar="PATH", help="arrays to read in full")
    parser.add_argument("--edges", nargs="*", default=[], metavar="PATH", help="arrays of which to read the first and last block")
    parser.add_argument(
        "--block-elements", type=int, default=DEFAULT_BLOCK_ELEMENTS, help="elements per block (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    if args.full or args.edges:
        plan, source = [(p, "full") for p in args.full] + [(p, "edges") for p in args.edges], "command line"
    else:
        plan, source = default_plan(args.file)
    if is_zarr(args.file):  # import first, so `seconds` is opening and reading only
        import numcodecs.blosc  # noqa: F401
        import zarr  # noqa: F401

        read = read_zarr
    else:
        import h5py  # noqa: F401

        read = read_hdf5
    t0 = time.perf_counter()
    arrays = read(args.file, plan, args.block_elements)
    seconds = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "file": args.file,
                "plan_source": source,
                "seconds": round(seconds, 4),
                "bytes": sum(a["bytes"] for a in arrays),
                "arrays": arrays,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
