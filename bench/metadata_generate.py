"""Generate the many-node AnnData files of the metadata benchmark with anndata itself, under bench/data/metadata/.

    python bench/metadata_generate.py [--cases obs-10,obs-4000,uns-5000,arrays-5000] [--formats h5ad,zarr2,zarr3] [--force]

Each file has 1,000 cells and a small CSR X (1,000 x 50, 5,000 stored values): its cost is its metadata.
- `obs-N`: obs with N columns besides the index, cycling categorical (10 categories; a group with `codes` and
  `categories`), float32, int64, bool and string (object strings: anndata writes them as variable-length strings,
  each column's values in the HDF5 global heap beside its attributes) columns, as real atlases hold them.
- `uns-5000`: uns with 5,000 entries, in turn an int, a string, a float array of 10, a dict of an int and a
  string, and an array of 5 strings.
- `arrays-5000`: 5,000 float arrays of 100 values in uns, 100 in each of 50 groups.
A cached file is skipped; each is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import comma_list, du, remove  # noqa: E402  (bench/ is not a package)

DATA = HERE / "data" / "metadata"
N_OBS = 1_000
FORMATS = ("h5ad", "zarr2", "zarr3")
# The benchmark's cases; obs-18000 (about 30,000 nodes) only for the per-node scaling plot.
CASES = ("obs-10", "obs-100", "obs-1000", "obs-4000", "uns-5000", "arrays-5000")
SCALING = ("obs-10", "obs-100", "obs-1000", "obs-4000", "obs-18000")
SUFFIX = {"h5ad": ".h5ad", "zarr2": ".zarr", "zarr3": ".zarr"}


@dataclass(frozen=True)
class Case:
    """One many-node file: what it holds (`obs-4000`, `uns-5000`, `arrays-5000`) and its format."""

    name: str
    format: str

    @property
    def path(self) -> Path:
        return DATA / f"{self.name}-{self.format}{SUFFIX[self.format]}"


def parse_case(name: str) -> tuple[str, int]:
    kind, _, count = name.partition("-")
    if kind not in ("obs", "uns", "arrays") or not count.isdigit():
        raise SystemExit(f"unknown case {name!r}; expected obs-N, uns-N or arrays-N")
    return kind, int(count)


def make_adata(name: str):
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    kind, count = parse_case(name)
    rng = np.random.default_rng(count)
    x = sp.random(N_OBS, 50, density=0.1, format="csr", dtype=np.float32, random_state=rng)
    index = pd.Index([f"cell-{i:05d}" for i in range(N_OBS)], dtype=object)
    columns: dict[str, object] = {}
    uns: dict[str, object] = {}
    if kind == "obs":
        categories = [f"c{i}" for i in range(10)]
        for i in range(count):
            kind_of_column = i % 5
            if kind_of_column == 0:
                columns[f"col{i:05d}"] = pd.Categorical.from_codes(rng.integers(0, 10, N_OBS), categories=categories)
            elif kind_of_column == 1:
                columns[f"col{i:05d}"] = rng.standard_normal(N_OBS).astype(np.float32)
            elif kind_of_column == 2:
                columns[f"col{i:05d}"] = rng.integers(0, 100, N_OBS)
            elif kind_of_column == 3:
                columns[f"col{i:05d}"] = rng.integers(0, 2, N_OBS).astype(bool)
            else:
                # Distinct per cell (a barcode, a free-text note): anndata turns a column with repeats into a categorical.
                columns[f"col{i:05d}"] = pd.array(
                    [f"s{i}-{j}-{v}" for j, v in enumerate(rng.integers(0, 50, N_OBS))], dtype=object
                )
    elif kind == "uns":
        for i in range(count):
            entry: object = [
                i,
                f"value {i}",
                rng.standard_normal(10),
                {"a": i, "b": f"b{i}"},
                np.array([f"s{i}-{j}" for j in range(5)], dtype=object),
            ][i % 5]
            uns[f"entry{i:05d}"] = entry
    else:
        per_group = 100
        for g in range((count + per_group - 1) // per_group):
            uns[f"group{g:03d}"] = {
                f"array{i:03d}": rng.standard_normal(100) for i in range(min(per_group, count - g * per_group))
            }
    obs = pd.DataFrame(columns, index=index)
    return ad.AnnData(X=x, obs=obs, uns=uns)


def write(adata, fmt: str, target: Path) -> None:
    import anndata as ad

    warnings.filterwarnings("ignore", message=".*(will no longer be the default|will be the default|Consolidated metadata).*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    if fmt == "h5ad":
        adata.write_h5ad(target)
        return
    previous = ad.settings.zarr_write_format
    ad.settings.zarr_write_format = 2 if fmt == "zarr2" else 3
    try:
        adata.write_zarr(target)
    finally:
        ad.settings.zarr_write_format = previous


def generate(case: Case, force: bool = False) -> Path:
    """The file for `case`, generated unless cached."""
    final = case.path
    if final.exists() and not force:
        return final
    DATA.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".partial-{final.name}")
    remove(tmp)
    t0 = time.perf_counter()
    write(make_adata(case.name), case.format, tmp)
    remove(final)
    tmp.rename(final)
    print(f"{final.name}: written in {time.perf_counter() - t0:.1f} s, {du(final) / 1e6:,.1f} MB", flush=True)
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=comma_list, default=list(CASES), help=f"default: {','.join(CASES)}")
    parser.add_argument("--formats", type=comma_list, default=list(FORMATS), help=f"default: {','.join(FORMATS)}")
    parser.add_argument("--force", action="store_true", help="regenerate files that are already cached")
    args = parser.parse_args(argv)
    for name in args.cases:
        parse_case(name)
        for fmt in args.formats:
            if fmt not in FORMATS:
                raise SystemExit(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
            generate(Case(name, fmt), args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
