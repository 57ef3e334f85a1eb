"""Files from this repository's conformance corpus that tests copy and edit (never the shared public corpus)."""

from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "conformance-corpus" / "anndata"
VALID_H5AD = CASES / "h5ad" / "valid-every-element.h5ad"
# anndata 0.12's untouched Zarr output: fails anndata.string.zarr-fixed-length-unicode, nothing else.
FAILING_ZARR = CASES / "zarr-v2" / "anndata-0.12-string-scalars.zarr"
