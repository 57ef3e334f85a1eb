"""Shared fixtures: the in-memory tree for check and engine tests lives in memory_tree.py (importable from here)."""

from __future__ import annotations

import os
import sys

# Test modules import helpers (memory_tree, nodes/contract) by plain module name.
sys.path.insert(0, os.path.dirname(__file__))

# The validated-pack cache goes to a directory of this test session, never the user's ~/.cache
# (subprocesses started by tests inherit it).
if "SPEC_VALIDATE_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["SPEC_VALIDATE_CACHE_DIR"] = tempfile.mkdtemp(prefix="spec-validate-test-cache-")


import warnings

import pytest

# Every HTTP test talks to a server on the loopback interface: a proxy the machine names (CI runners often set one)
# must not take those requests, in this process or the ones tests start. The tests of proxies set their own.
for _name in ("no_proxy", "NO_PROXY"):
    os.environ[_name] = ",".join(filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"]))


def write_anndata(path, *, zarr: bool = False, broken_indptr: bool = False, mixed_chunks: bool = False) -> str:
    """A small AnnData store (CSR X, a categorical obs column) written by anndata itself."""
    import anndata as ad
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    x = sp.random(20, 10, density=0.3, format="csr", dtype=np.float32, random_state=0)
    obs = pd.DataFrame({"cell_type": pd.Categorical(["a", "b"] * 10)}, index=[f"c{i}" for i in range(20)])
    var = pd.DataFrame(index=[f"g{i}" for i in range(10)])
    adata = ad.AnnData(X=x, obs=obs, var=var)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if zarr:
            adata.write_zarr(str(path))
        else:
            adata.write_h5ad(str(path))
    if broken_indptr:
        import h5py

        with h5py.File(path, "r+") as f:
            indptr = f["X/indptr"][...]
            indptr[5], indptr[6] = indptr[6] + 1, indptr[5]
            f["X/indptr"][...] = indptr
    if mixed_chunks:  # an obs column chunked unlike the others: only the SHOULD rule chunks-shared fails
        import h5py

        with h5py.File(path, "r+") as f:
            col = f["obs"].create_dataset("extra", data=np.arange(20), chunks=(7,))
            col.attrs["encoding-type"], col.attrs["encoding-version"] = "array", "0.2.0"
            f["obs"].attrs["column-order"] = np.array(list(f["obs"].attrs["column-order"]) + ["extra"], dtype=object)
    return str(path)


@pytest.fixture(scope="session")
def should_failing_h5ad(tmp_path_factory) -> str:
    return write_anndata(tmp_path_factory.mktemp("should") / "mixed-chunks.h5ad", mixed_chunks=True)


@pytest.fixture(scope="session")
def valid_h5ad(tmp_path_factory) -> str:
    return write_anndata(tmp_path_factory.mktemp("valid") / "valid.h5ad")


@pytest.fixture(scope="session")
def broken_h5ad(tmp_path_factory) -> str:
    return write_anndata(tmp_path_factory.mktemp("broken") / "broken.h5ad", broken_indptr=True)


@pytest.fixture(scope="session")
def valid_zarr(tmp_path_factory) -> str:
    return write_anndata(tmp_path_factory.mktemp("valid") / "valid.zarr", zarr=True)


@pytest.fixture
def broken_h5ad_here(tmp_path, monkeypatch) -> str:
    """A copy of the valid corpus .h5ad without /obs's `_index` (one MUST failure), in a fresh working directory."""
    import shutil

    import h5py
    from corpus_paths import VALID_H5AD

    monkeypatch.chdir(tmp_path)
    shutil.copy(VALID_H5AD, tmp_path / "broken.h5ad")
    with h5py.File(tmp_path / "broken.h5ad", "a") as f:
        del f["obs"].attrs["_index"]
    return "broken.h5ad"
