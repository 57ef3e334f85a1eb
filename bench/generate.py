"""Generate conformant AnnData benchmark files with anndata itself, cached under bench/data/ (git-ignored).

Run as `python bench/generate.py [--sizes 1e7,5e7,2e8] [--formats h5ad,h5ad-gzip,zarr2,zarr3]`. A file that
already exists is skipped; each is written under a temporary name and renamed when complete, so an
interrupted run never leaves a file that looks finished.

Each file holds a CSR X of `size` stored values (float32 data, int32 indices and indptr), 20,000 genes and
about 1,000 values per row (row lengths vary, 500 to 1,500), so n_obs = size / 1,000. Column indices are
sorted within each row and spread over the genes, as scanpy writes them, so compressed formats compress
them about as well as real data; data are small counts (1, 2, 3, ... as float32). obs has a string index,
three categorical columns (20, 1,000 and 3 categories) and a float column; var a string index and one
categorical column; obsm["X_pca"] is float32 (n_obs, 50).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
N_VAR = 20_000
PER_ROW = 1_000  # mean stored values per row
N_PCS = 50
ROW_BLOCK = 20_000  # rows of indices/data generated at once: bounds the temporaries

SIZES = {"1e7": 10_000_000, "5e7": 50_000_000, "2e8": 200_000_000}
FORMATS = ("h5ad", "h5ad-gzip", "zarr2", "zarr3")
# The sizes each format is generated and benchmarked at by default (2e8 only for uncompressed h5ad).
DEFAULT_MATRIX = {"h5ad": ("1e7", "5e7", "2e8"), "h5ad-gzip": ("1e7", "5e7"), "zarr2": ("1e7", "5e7"), "zarr3": ("1e7", "5e7")}


@dataclass(frozen=True)
class Case:
    """One benchmark file: a size label, a format and where it lives."""

    size: str
    format: str

    @property
    def nnz(self) -> int:
        return SIZES[self.size]

    @property
    def path(self) -> Path:
        suffix = ".h5ad" if self.format.startswith("h5ad") else ".zarr"
        return DATA / f"anndata-{self.size}-{self.format}{suffix}"


def cases(sizes: list[str] | None = None, formats: list[str] | None = None) -> list[Case]:
    """The (size, format) pairs to use: the default matrix, narrowed to `sizes` and `formats` when given.

    A pair outside the default matrix (e.g. 2e8 zarr3) is included only when both its size and its format
    are named explicitly.
    """
    chosen_sizes = sizes or list(SIZES)
    chosen_formats = formats or list(FORMATS)
    for s in chosen_sizes:
        if s not in SIZES:
            raise SystemExit(f"unknown size {s!r}; known: {', '.join(SIZES)}")
    for f in chosen_formats:
        if f not in FORMATS:
            raise SystemExit(f"unknown format {f!r}; known: {', '.join(FORMATS)}")
    explicit = sizes is not None and formats is not None
    return [Case(s, f) for f in chosen_formats for s in chosen_sizes if explicit or s in DEFAULT_MATRIX[f]]


def make_indptr(rng: np.random.Generator, n_obs: int, nnz: int) -> np.ndarray:
    """Row pointers with row lengths between about 0.5x and 1.5x the mean, ending exactly at `nnz`."""
    weights = np.cumsum(rng.uniform(0.5, 1.5, n_obs))
    indptr = np.empty(n_obs + 1, dtype=np.int64)
    indptr[0] = 0
    indptr[1:] = np.floor(weights / weights[-1] * nnz)
    indptr[-1] = nnz
    return indptr.astype(np.int32)


def fill_rows(rng: np.random.Generator, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> None:
    """Sorted, in-range column indices and small-count values, ROW_BLOCK rows at a time.

    Value j of a row of length c sits at column j * N_VAR // c plus a jitter below N_VAR // c, so each
    row's indices are sorted and lie in [0, N_VAR).
    """
    n_obs = len(indptr) - 1
    for r0 in range(0, n_obs, ROW_BLOCK):
        r1 = min(n_obs, r0 + ROW_BLOCK)
        lo, hi = int(indptr[r0]), int(indptr[r1])
        counts = np.diff(indptr[r0 : r1 + 1]).astype(np.int64)
        starts = np.repeat(indptr[r0:r1].astype(np.int64), counts)
        lengths = np.repeat(counts, counts)
        j = np.arange(lo, hi, dtype=np.int64) - starts
        spacing = N_VAR // lengths
        cols = j * N_VAR // lengths + rng.integers(0, 1 << 30, hi - lo) % spacing
        indices[lo:hi] = cols
        data[lo:hi] = rng.geometric(0.4, hi - lo)


def make_adata(case: Case):
    """The AnnData object for `case`, built directly from numpy arrays."""
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(SIZES[case.size] % (1 << 32))
    n_obs = case.nnz // PER_ROW
    t0 = time.perf_counter()
    indptr = make_indptr(rng, n_obs, case.nnz)
    indices = np.empty(case.nnz, dtype=np.int32)
    data = np.empty(case.nnz, dtype=np.float32)
    fill_rows(rng, indptr, indices, data)
    x = sp.csr_matrix((data, indices, indptr), shape=(n_obs, N_VAR), copy=False)
    assert x.indices.dtype == np.int32 and x.indptr.dtype == np.int32 and x.data.dtype == np.float32
    print(f"  X: {n_obs:,} x {N_VAR:,}, {case.nnz:,} stored values ({time.perf_counter() - t0:.1f} s)", flush=True)

    def categorical(n_categories: int, prefix: str, length: int) -> pd.Categorical:
        categories = [f"{prefix}{i}" for i in range(n_categories)]
        return pd.Categorical.from_codes(rng.integers(0, n_categories, length), categories=categories)

    obs = pd.DataFrame(
        {
            "batch": categorical(20, "batch-", n_obs),
            "cell_type": categorical(1_000, "type-", n_obs),
            "phase": categorical(3, "phase-", n_obs),
            "total_counts": np.diff(indptr).astype(np.float32) * 1.7,
        },
        index=pd.Index([f"cell-{i:08d}" for i in range(n_obs)], dtype=object),
    )
    var = pd.DataFrame(
        {"feature_type": categorical(3, "type-", N_VAR)},
        index=pd.Index([f"gene-{i:05d}" for i in range(N_VAR)], dtype=object),
    )
    obsm = {"X_pca": rng.standard_normal((n_obs, N_PCS), dtype=np.float32)}
    return ad.AnnData(X=x, obs=obs, var=var, obsm=obsm)


def write(adata, case: Case, target: Path) -> None:
    """Write with anndata's own writer, as a user would for this format."""
    import anndata as ad

    # anndata and zarr announce future defaults (Zarr v3, autosharding, consolidated metadata); the
    # files are written with today's defaults on purpose, as a user of this version gets them.
    warnings.filterwarnings("ignore", message=".*(will no longer be the default|will be the default|Consolidated metadata).*")
    if case.format == "h5ad":
        adata.write_h5ad(target)
    elif case.format == "h5ad-gzip":
        adata.write_h5ad(target, compression="gzip")
    elif case.format in ("zarr2", "zarr3"):
        previous = ad.settings.zarr_write_format
        ad.settings.zarr_write_format = 2 if case.format == "zarr2" else 3
        try:
            adata.write_zarr(target)
        finally:
            ad.settings.zarr_write_format = previous
    else:
        raise ValueError(case.format)


def generate(case: Case, force: bool = False) -> Path:
    """The file for `case`, generated unless it is already cached."""
    final = case.path
    if final.exists() and not force:
        print(f"{final.name}: cached", flush=True)
        return final
    DATA.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".partial-{final.name}")
    remove(tmp)
    print(f"{final.name}: generating", flush=True)
    t0 = time.perf_counter()
    adata = make_adata(case)
    t1 = time.perf_counter()
    write(adata, case, tmp)
    del adata
    remove(final)
    tmp.rename(final)
    print(
        f"  written in {time.perf_counter() - t1:.1f} s, {du(final) / 1e6:,.0f} MB ({time.perf_counter() - t0:.1f} s in all)",
        flush=True,
    )
    return final


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def du(path: Path) -> int:
    """Bytes on disk under `path` (a file or a Zarr directory)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def comma_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=comma_list, help=f"comma-separated sizes (default: {','.join(SIZES)})")
    parser.add_argument("--formats", type=comma_list, help=f"comma-separated formats (default: {','.join(FORMATS)})")
    parser.add_argument("--force", action="store_true", help="regenerate files that are already cached")
    args = parser.parse_args(argv)
    for case in cases(args.sizes, args.formats):
        generate(case, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
