"""Peak memory and time of spec-validate on CXG (TileDB) stores of growing size: memory must not grow with them.

    python bench/cxg_memory.py [--sizes 1e7,5e7] [--reps 3] [--data bench/data]

Writes (once, cached under --data) a CXG 0.3.0 per size with tiledb-py, laid out as the CELLxGENE converter lays it
out: a sparse X stored twice (`Xr` by row, `Xc` by column; tiles of 256 along the first dimension, 1,024,000 cells
a data tile, byte-shuffle + zstd), 500 stored values per cell over 2,000 genes, `obs` with a string index and a
categorical column, `var`, `X_col_shift`, one embedding and the group metadata. Then runs
`python -m spec_validate STORE --quiet --exit-zero` (all built-in packs: every cell of `Xr` and `Xc` is read, the two
compared cell by cell) in a fresh process started from this stdlib-only parent, so each peak RSS is the child's
own; best of `--reps`.

Prints wall time, CPU and peak RSS per size, and the ratio of the largest size's peak RSS to the smallest's; the
target is at most 1.5x (bounded memory whatever the store's size). Before the reads were batched (see
`spec_validate/nodes/tiledb/tree.py`), the 1e7 store peaked at 641 MB (2.8 s) and the 5e7 one at
2.8 GB (15 s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from zarr3_sharded import ROOT, spawn

N_VAR = 2_000
PER_CELL = 500
TARGET = 1.5

WRITE = """
import json, sys, numpy as np, tiledb
path, nnz, n_var, per_cell = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
n_obs = nnz // per_cell
stride = n_var // per_cell
shuffled = lambda: tiledb.FilterList([tiledb.ByteShuffleFilter(), tiledb.ZstdFilter(level=3)])
zstd = lambda: tiledb.FilterList([tiledb.ZstdFilter(level=3)])
tiledb.group_create(path)

def sparse(name, dim, n, other, batches):
    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim(name=dim, domain=(0, n - 1), tile=min(256, n), dtype=np.uint32, filters=shuffled())),
        attrs=[tiledb.Attr("", dtype=np.float32, filters=zstd()), tiledb.Attr(other, dtype=np.uint32, filters=shuffled())],
        sparse=True, allows_duplicates=True, capacity=1_024_000)
    tiledb.Array.create(f"{path}/{name}", schema)
    with tiledb.open(f"{path}/{name}", "w") as array:
        for coords, index in batches:
            column = index if other == "var" else coords
            array[coords] = {"": (column % 7 + 1).astype(np.float32), other: index}

columns = np.arange(0, n_var, stride, dtype=np.uint32)
rows = ((np.repeat(np.arange(lo, min(n_obs, lo + 2000), dtype=np.uint32), per_cell),
         np.tile(columns, min(n_obs, lo + 2000) - lo)) for lo in range(0, n_obs, 2000))
sparse("Xr", "obs", n_obs, "var", rows)
by_column = ((np.repeat(columns[j:j + 50], n_obs), np.tile(np.arange(n_obs, dtype=np.uint32), len(columns[j:j + 50])))
             for j in range(0, len(columns), 50))
sparse("Xc", "var", n_var, "obs", by_column)

def dense(name, dims, attrs, data, meta=None):
    tiledb.Array.create(f"{path}/{name}", tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=False))
    with tiledb.open(f"{path}/{name}", "w") as array:
        array[:] = data
        for key, value in (meta or {}).items():
            array.meta[key] = value

dim = lambda name, n, tile: tiledb.Dim(name=name, domain=(0, n - 1), tile=tile, dtype=np.uint32)
obs_schema = {"index": "name_0", "name_0": {"type": "string"}, "cell_type": {"type": "categorical", "categories": ["B", "T"]}}
dense("obs", [dim("__dim_0", n_obs, n_obs)],
      [tiledb.Attr("name_0", dtype=str, var=True, filters=zstd()), tiledb.Attr("cell_type", dtype=np.int8, filters=zstd())],
      {"name_0": np.array([f"cell{i}" for i in range(n_obs)], dtype=object), "cell_type": (np.arange(n_obs) % 2).astype(np.int8)},
      {"cxg_schema": json.dumps(obs_schema)})
dense("var", [dim("__dim_0", n_var, n_var)], [tiledb.Attr("name_0", dtype=str, var=True, filters=zstd())],
      np.array([f"gene{i}" for i in range(n_var)], dtype=object),
      {"cxg_schema": json.dumps({"index": "name_0", "name_0": {"type": "string"}})})
dense("X_col_shift", [dim("var", n_var, n_var)], [tiledb.Attr("", dtype=np.float32)], np.zeros(n_var, np.float32))
tiledb.group_create(f"{path}/emb")
dense("emb/umap", [dim("obs", n_obs, min(n_obs, 10_000)), dim("dim", 2, 2)], [tiledb.Attr("", dtype=np.float32)],
      np.random.default_rng(0).random((n_obs, 2)).astype(np.float32))
dense("cxg_group_metadata", [dim("__dim_0", 1, 1)], [tiledb.Attr("", dtype=np.float64)], np.zeros(1),
      {"cxg_version": "0.3.0", "cxg_properties": json.dumps({"title": "bench"}), "cxg_category_colors": json.dumps({})})
"""


def store_for(data: str, size: int) -> str:
    """The cached CXG of `size` stored values, written first when absent (under a temporary name, then renamed)."""
    path = os.path.join(data, f"cxg-{size:.0e}.cxg".replace("+", ""))
    if not os.path.isdir(path):
        os.makedirs(data, exist_ok=True)
        partial = path + ".partial"
        if os.path.isdir(partial):
            spawn(["rm", "-rf", partial])
        print(f"writing {path} ...", file=sys.stderr)
        spawn([sys.executable, "-c", WRITE, partial, str(size), str(N_VAR), str(PER_CELL)])
        os.rename(partial, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e7,5e7", help="comma-separated stored values (default: 1e7,5e7)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    best: dict[int, dict] = {}
    for size in sizes:
        store = store_for(args.data, size)
        for _ in range(args.reps):
            got = spawn([sys.executable, "-m", "spec_validate", store, "--quiet", "--exit-zero"])
            if size not in best or got["wall_s"] < best[size]["wall_s"]:
                best[size] = got
    print(f"CXG 0.3.0, sparse Xr/Xc as the CELLxGENE converter writes them; {os.cpu_count()} cores; best of {args.reps}")
    for size, got in best.items():
        print(
            f"  {size:9.1e} values  {got['wall_s']:7.2f} s wall  {got['cpu_s']:7.2f} s cpu  {got['peak_rss_mib']:7.0f} MiB peak RSS"
        )
    ratio = best[sizes[-1]]["peak_rss_mib"] / best[sizes[0]]["peak_rss_mib"]
    print(
        f"  peak RSS {sizes[-1]:.0e} / {sizes[0]:.0e}: {ratio:.2f}x (target <= {TARGET}x): {'met' if ratio <= TARGET else 'NOT met'}"
    )
    print(json.dumps({"peak_rss_ratio": round(ratio, 3), **{f"{s:.0e}": v for s, v in best.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
