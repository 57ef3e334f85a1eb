"""The store's coarse format, as the compatibility matrix names formats: from the packs that applied, the storage
format and, for OME-Zarr, the version the store declares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

COARSE_FORMATS = (
    "anndata-h5ad",
    "anndata-zarr-v2",
    "anndata-zarr-v3",
    "zarr-v2",
    "zarr-v3",
    "h5seurat",
    "mudata-h5mu",
    "mudata-zarr-v2",
    "nwb-zarr",
    "ome-zarr-0.4",
    "ome-zarr-0.5",
    "cxg",
)


def coarse_format(storage: str, applied: Mapping[str, Sequence[str]], root_attrs: Mapping[str, Any]) -> str | None:
    """The coarse format of a store read as `storage` (the tree's format), where `applied` maps each pack name (and
    the names of the packs it extends) to the scope roots it was applied at; None where none fits.

    The most specific wins: a MuData file holds AnnData scopes, an AnnData or OME-Zarr store is a Zarr store too.
    OME-Zarr is named by its Zarr version, as the measurements name it: 0.4 in Zarr v2 (earlier versions too, read
    by the same readers), 0.5 in Zarr v3, whatever version a store declares.
    """
    zarr = _zarr_version(storage)
    if root_attrs.get("encoding-type") == "MuData":
        return "mudata-h5mu" if storage == "hdf5" else f"mudata-zarr-{zarr}" if zarr else None
    if "/" in applied.get("anndata", ()):
        return "anndata-h5ad" if storage == "hdf5" else f"anndata-zarr-{zarr}" if zarr else None
    if "h5seurat" in applied:
        return "h5seurat"
    if "hdmf-zarr" in applied:
        return "nwb-zarr"
    if ("ome-zarr04" in applied or "ome-zarr05" in applied) and zarr:
        return "ome-zarr-0.5" if zarr == "v3" else "ome-zarr-0.4"
    if "cxg" in applied:
        return "cxg"
    if ("zarr" in applied or "zarr3" in applied) and zarr:
        return f"zarr-{zarr}"
    return None


def _zarr_version(storage: str) -> str | None:
    """`v2` or `v3` for a Zarr tree (`zarr-v2`, `zarr-v3-attributes`), else None."""
    for version in ("v2", "v3"):
        if storage.startswith(f"zarr-{version}"):
            return version
    return None
