"""The validator stays light: it never imports anndata, pandas, scipy or zarr-python, and dask or distributed only for --dask."""

import json
import subprocess
import sys

from corpus_paths import FAILING_ZARR, VALID_H5AD

PROBE = """
import json, sys
from spec_validate.cli import main
code = main(sys.argv[1:] + ["--format", "json", "--output", "/dev/null"])
print(json.dumps({"code": code, "modules": sorted(m.split(".")[0] for m in sys.modules)}))
"""


def loaded_modules(path, cwd=None) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=True, cwd=cwd)
    return set(json.loads(out.stdout.strip().splitlines()[-1])["modules"])


def test_validating_an_h5ad_imports_no_heavy_library():
    modules = loaded_modules(VALID_H5AD)
    assert not modules & {"anndata", "pandas", "scipy", "zarr", "tiledb", "dask", "distributed"}


def test_validating_a_zarr_store_imports_neither_zarr_nor_anndata():
    modules = loaded_modules(FAILING_ZARR)  # its chunks are read through spec_validate.codecs.decode
    assert not modules & {"anndata", "pandas", "scipy", "zarr", "dask", "distributed"}


def test_a_warm_run_on_a_small_h5ad_loads_little_beyond_numpy_and_h5py(tmp_path):
    # Start-up is measured against `python -c "import numpy, h5py"` (bench/): what the tool imports beyond that
    # is its cost. With the pack cache warm, no YAML, schema, TOML, packaging, pathlib or URL machinery loads, nor
    # hashlib (OpenSSL, 10 ms: only the CXG digest of text fields and report fingerprints use it).
    code = "import json, sys, numpy, h5py; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    baseline = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))
    loaded_modules(VALID_H5AD)  # fills the pack cache
    extra = loaded_modules(VALID_H5AD, cwd=tmp_path) - baseline  # not in this repository, whose pyproject names the tool
    assert not extra & {
        "yaml",
        "jsonschema",
        "referencing",
        "tomllib",
        "packaging",
        "pathlib",
        "urllib",
        "shutil",
        "importlib_metadata",
        "hashlib",
        "_hashlib",
    }
