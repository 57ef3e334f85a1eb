"""The validator stays light: it never imports anndata, pandas or scipy, dask or distributed (only for --dask), and zarr only for Zarr stores."""

import json
import subprocess
import sys

from corpus_paths import FAILING_ZARR, VALID_H5AD

PROBE = """
import json, sys
from validator.cli import main
code = main(sys.argv[1:] + ["--format", "json", "--output", "/dev/null"])
print(json.dumps({"code": code, "modules": sorted(m.split(".")[0] for m in sys.modules)}))
"""


def loaded_modules(path) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1])["modules"])


def test_validating_an_h5ad_imports_no_heavy_library():
    modules = loaded_modules(VALID_H5AD)
    assert not modules & {"anndata", "pandas", "scipy", "zarr", "tiledb", "dask", "distributed"}


def test_validating_a_zarr_store_imports_zarr_but_not_anndata():
    modules = loaded_modules(FAILING_ZARR)
    assert not modules & {"anndata", "pandas", "scipy", "dask", "distributed"}
