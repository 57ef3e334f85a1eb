"""Which reader opens a local path: `@container_format` registers a detector beside each format's reader.

Each format package of `spec_validate.nodes` (hdf5, zarr, tiledb) keeps its detector in a `detect` module: a
function that opens the path as a tree of that format, or returns None when the path is not one (raising InputError
where it is one that cannot be read, with the reason). `nodes/open.py` asks the detectors for a directory or a file
in their order; the modules are found on the first lookup, so a new format needs no entry anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

from spec_validate.discovery import PackageModules, claim
from spec_validate.nodes.base import Tree

_PACKAGE = "spec_validate.nodes"
Handles = Literal["directory", "file"]


class Detector(NamedTuple):
    name: str
    handles: Handles  # what kind of local path it looks at
    order: int  # lower first: a TileDB group is asked about before a Zarr store, an HDF5 file before a zip
    open: Callable[[str], Tree | None]


DETECTORS: dict[str, Detector] = {}
_MODULES = PackageModules(_PACKAGE, submodule="detect")


def container_format(
    name: str, *, handles: Handles, order: int
) -> Callable[[Callable[[str], Tree | None]], Callable[[str], Tree | None]]:
    """Register the decorated function as the detector `name` for local paths of the kind `handles`."""

    def register(open_path: Callable[[str], Tree | None]) -> Callable[[str], Tree | None]:
        claim(DETECTORS, name, open_path, "container format", lambda d: d.open)
        DETECTORS[name] = Detector(name, handles, order, open_path)
        return open_path

    return register


def detectors(handles: Handles) -> list[Detector]:
    """The detectors for local paths of the kind `handles`, in their order."""
    _MODULES.load()
    return sorted((d for d in DETECTORS.values() if d.handles == handles), key=lambda d: (d.order, d.name))
