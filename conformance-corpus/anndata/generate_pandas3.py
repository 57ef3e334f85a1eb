"""Write the cases of anndata's newest string layout: pandas 3 strings, with nullable strings on and off.

pandas 3 makes `str` the default dtype of string columns and indexes (pandas 2.3 has it behind
`pandas.options.future.infer_string`). anndata writes such an array as a `nullable-string-array` group (`values` +
`mask`) when `anndata.settings.allow_write_nullable_strings` lets it: an opt-in from anndata 0.11, the default under
pandas 3 from anndata 0.13 (the setting's default None follows `future.infer_string`). Every dataframe index is such
an array, so each of these files has a group where the spec asks for an index array. With the setting False, anndata
writes the spec's `string-array` instead (anndata 0.13 converts; anndata 0.11 and 0.12 refuse a pandas string array
then, so the arrays are cast to object here first, which is what 0.13 does).

Each layout is written as `.h5ad`, gzip `.h5ad`, Zarr v2 and sharded Zarr v3 (anndata 0.13's defaults:
`zarr_write_format = 3`, `auto_shard_zarr_v3 = True`), under conformance-corpus/anndata/{h5ad,zarr-v2,zarr-v3}/;
manifest.yaml beside this file lists each case with the rule ids it fails and the versions that wrote it.

Run it in an environment outside the repository with the newest anndata and pandas the registry offers together
(anndata 0.12.19 with pandas 2.3.3 when these files were written: anndata 0.12 requires pandas < 3, and 0.13 was not
available), e.g.

    python -m venv /tmp/venv-pd3
    /tmp/venv-pd3/bin/pip install 'anndata>=0.12.19' 'pandas>=2.3' zarr h5py
    /tmp/venv-pd3/bin/python conformance-corpus/anndata/generate_pandas3.py [case ...]

It prints the versions it wrote with; update the manifest notes when they change.
"""

from __future__ import annotations

import shutil
import sys
import warnings
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anndata
import numpy as np
import pandas as pd
from packaging.version import Version

HERE = Path(__file__).resolve().parent
SUFFIX = {"h5ad": ".h5ad", "zarr-v2": ".zarr", "zarr-v3": ".zarr"}
ANNDATA = Version(version("anndata"))
# anndata 0.13 writes the spec's string-array itself when the setting is False; older releases refuse.
CONVERTS_WHEN_OFF = Version("0.13") <= ANNDATA

warnings.filterwarnings("ignore")


def pandas3_adata() -> anndata.AnnData:
    """A small object whose strings are pandas 3 `str` arrays: obs, var and raw.var indexes, string columns that
    stay strings (each value unique, so anndata does not make them categorical), a categorical, and a dataframe in
    obsm with a string column."""
    obs_names = [f"cell{i}" for i in range(4)]
    obs = pd.DataFrame(
        {
            "barcode": ["AAAC", "AAAG", "AAAT", "AACA"],
            "cell_type": ["T", "B", "T", "B"],  # repeated: written as a categorical (its categories a string-array)
            "n_counts": np.array([10, 20, 30, 40], dtype=np.int64),
        },
        index=obs_names,
    )
    var = pd.DataFrame({"gene_name": ["CD3E", "MS4A1", "GAPDH"]}, index=["ENSG01", "ENSG02", "ENSG03"])
    adata = anndata.AnnData(X=np.arange(12, dtype=np.float32).reshape(4, 3), obs=obs, var=var)
    adata.obsm["meta"] = pd.DataFrame({"region": ["north", "south", "east", "west"]}, index=obs_names)
    adata.raw = adata
    assert pd.api.types.is_string_dtype(adata.obs.index) and not pd.api.types.is_object_dtype(adata.obs.index)
    return adata


def as_object_strings(adata: anndata.AnnData) -> anndata.AnnData:
    """The same object with every pandas string array cast to object, as anndata 0.13 writes them with
    `allow_write_nullable_strings = False`."""

    def cast(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        df.index = df.index.astype(object)
        for name in df.columns:
            if pd.api.types.is_string_dtype(df[name]) and not isinstance(df[name].dtype, pd.CategoricalDtype):
                df[name] = df[name].astype(object)
        return df

    out = anndata.AnnData(X=adata.X, obs=cast(adata.obs), var=cast(adata.var))
    out.obsm["meta"] = cast(adata.obsm["meta"])
    raw = anndata.AnnData(X=adata.raw.X, obs=cast(adata.obs), var=cast(adata.raw.var))
    out.raw = raw
    return out


def write(path: Path, container: str, nullable: bool, **h5ad: Any) -> None:
    pd.options.future.infer_string = True  # pandas 3's default; a no-op there
    adata = pandas3_adata()
    anndata.settings.allow_write_nullable_strings = nullable
    if not nullable and not CONVERTS_WHEN_OFF:
        adata = as_object_strings(adata)
    if container == "h5ad":
        adata.write_h5ad(path, **h5ad)
    else:
        anndata.settings.zarr_write_format = 3 if container == "zarr-v3" else 2
        anndata.settings.auto_shard_zarr_v3 = container == "zarr-v3"
        adata.write_zarr(str(path))


CASES: dict[str, Callable[[Path], None]] = {}
for on in (True, False):
    label = "nullable-strings-on" if on else "nullable-strings-off"
    CASES[f"h5ad/{label}"] = lambda p, on=on: write(p, "h5ad", on)
    CASES[f"h5ad/{label}-gzip"] = lambda p, on=on: write(p, "h5ad", on, compression="gzip")
    CASES[f"zarr-v2/{label}"] = lambda p, on=on: write(p, "zarr-v2", on)
    CASES[f"zarr-v3/{label}"] = lambda p, on=on: write(p, "zarr-v3", on)


def main(argv: list[str]) -> None:
    wanted = set(argv)
    print(f"anndata {ANNDATA}, pandas {pd.__version__}, zarr {version('zarr')}, h5py {version('h5py')}")
    for name, fn in CASES.items():
        if wanted and name not in wanted:
            continue
        container, label = name.split("/", 1)
        path = HERE / container / f"{label}{SUFFIX[container]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        fn(path)
        print(f"wrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main(sys.argv[1:])
