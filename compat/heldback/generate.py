"""Write the held-back files: small files from writer versions the corpora do not contain.

    python compat/heldback/generate.py            # every writer, into compat/heldback/files/

The rules about which reader opens what are drawn from the conformance corpus and the public corpus; these files
come from other writer releases, so the matrix can show whether those rules hold for files the rules never saw.
Each writer runs this same script inside its own venv (`--inside WRITER VERSION OUT`): there it imports only the
writer, never spec_validate or the rest of compat/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"

N_OBS, N_VARS = 12, 8


def _adata():
    """A small AnnData with every common element; values from arange, never from a random generator, so that
    every numpy release builds the same object."""
    import anndata
    import numpy as np
    import pandas as pd
    from scipy import sparse

    dense = (np.arange(N_OBS * N_VARS, dtype=np.float32).reshape(N_OBS, N_VARS) % 5) * (np.arange(N_VARS) % 2 == 0)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(["B", "T", "NK"] * (N_OBS // 3)),
            "donor": [f"donor-{i % 4}" for i in range(N_OBS)],
            "is_doublet": [i % 5 == 0 for i in range(N_OBS)],
            "n_genes": np.arange(N_OBS, dtype=np.int64) * 7,
        },
        index=[f"cell-{i}" for i in range(N_OBS)],
    )
    var = pd.DataFrame({"highly_variable": [i % 3 == 0 for i in range(N_VARS)]}, index=[f"gene-{i}" for i in range(N_VARS)])
    ad = anndata.AnnData(X=sparse.csr_matrix(dense), obs=obs, var=var)
    ad.layers["counts"] = dense.astype(np.int32)
    ad.obsm["X_pca"] = np.arange(N_OBS * 3, dtype=np.float64).reshape(N_OBS, 3) / 10
    ad.uns["params"] = {"method": "arange", "n_comps": 3, "nested": {"scale": 0.5, "flags": np.array([True, False])}}
    ad.uns["gene_sets"] = np.array(["set-a", "set-b", "set-c"], dtype=object)
    return ad


def write_anndata(version: str, out: Path) -> None:
    import anndata

    ad = _adata()
    ad.write_h5ad(out / f"anndata-{version}.h5ad")
    settings = getattr(anndata, "settings", None)
    if settings is not None and hasattr(settings, "zarr_write_format"):
        # anndata 0.12 and later write either Zarr format: one store of each where the release can (0.13's
        # default is the release's own; the v2 store is what a user who set zarr_write_format=2 gets).
        settings.zarr_write_format = 2
        ad.write_zarr(out / f"anndata-{version}-v2.zarr")
        if version.startswith("0.13"):
            settings.zarr_write_format = 3
            ad.write_zarr(out / f"anndata-{version}-v3.zarr")
    else:
        ad.write_zarr(out / f"anndata-{version}-v2.zarr")


def write_zarr(version: str, out: Path) -> None:
    import numpy as np
    import zarr

    data = {
        "blosc": np.arange(600, dtype=np.int32).reshape(20, 30),
        "zstd": np.linspace(0, 1, 400, dtype=np.float64).reshape(20, 20),
        "gzip": (np.arange(256, dtype=np.uint8) * 3).reshape(16, 16),
    }
    if version.startswith("2."):
        from numcodecs import Blosc, GZip, Zstd

        compressors = {"blosc": Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE), "zstd": Zstd(level=3), "gzip": GZip(level=5)}
        root = zarr.open_group(str(out / f"zarr-python-{version}-v2-codecs.zarr"), mode="w")
        root.attrs["writer"] = f"zarr-python {version}"
        for name, values in data.items():
            root.create_dataset(name, data=values, chunks=(8, 8), compressor=compressors[name])
        return
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec

    codecs = {"blosc": BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"), "zstd": ZstdCodec(level=3), "gzip": GzipCodec()}
    root = zarr.open_group(str(out / f"zarr-python-{version}-v3-codecs.zarr"), mode="w", zarr_format=3)
    root.attrs["writer"] = f"zarr-python {version}"
    for name, values in data.items():
        arr = root.create_array(name, shape=values.shape, dtype=values.dtype, chunks=(8, 8), compressors=[codecs[name]])
        arr[...] = values
    # v3 sharding: 16x16 shards of 8x8 inner chunks, each inner chunk zstd-compressed.
    sharded = root.create_array("sharded", shape=(32, 32), dtype="float32", chunks=(8, 8), shards=(16, 16),
                                compressors=[ZstdCodec()])  # fmt: skip
    sharded[...] = np.arange(1024, dtype=np.float32).reshape(32, 32)


def inside(writer: str, version: str, out: Path) -> None:
    import warnings

    warnings.simplefilter("ignore")
    (write_anndata if writer == "anndata" else write_zarr)(version, out)


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        return 0
    sys.path.insert(0, str(HERE.parent))
    from readers import by_key
    from venvs import ensure

    writers = ["anndata@0.9.0", "anndata@0.10.0", "anndata@0.11.0", "anndata@0.12.0", "anndata@0.13.4",
               "zarr-python@2.18.7", "zarr-python@3.1.6"]  # fmt: skip
    if FILES.exists():
        shutil.rmtree(FILES)
    FILES.mkdir(parents=True)
    for key in writers:
        writer = by_key()[key]
        python = ensure(writer)
        subprocess.run([str(python), __file__, "--inside", writer.name, writer.version, str(FILES)], check=True)
        print(f"wrote {key}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
