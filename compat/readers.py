"""The reader versions the compatibility matrix measures, and the environments they run in.

Each reader runs in its own virtual environment (compat/.venvs/<key>), built from the interpreter it needs and the
pins listed here. The pins are of the reader's era: an old anndata imports only with the numpy, pandas, h5py and
zarr of its time (anndata 0.7 breaks on pandas 2, anndata 0.9 on numpy 2, and so on), and a user of that anndata has
those libraries too. The newest releases are pinned to the newest versions the package registry offers for their
interpreter, so the matrix is reproducible until someone moves the pins on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PYENV = Path("/root/.pyenv/versions")
PY38 = PYENV / "3.8.18/bin/python"
PY39 = PYENV / "3.9.18/bin/python"
PY310 = PYENV / "3.10.13/bin/python"
PY311 = PYENV / "3.11.7/bin/python"
PY312 = PYENV / "3.12.1/bin/python"

ANNDATA_FORMATS = ("anndata-h5ad", "anndata-zarr-v2", "anndata-zarr-v3")
ZARR_FORMATS = (
    "anndata-zarr-v2",
    "anndata-zarr-v3",
    "mudata-zarr-v2",
    "nwb-zarr",
    "ome-zarr-0.4",
    "ome-zarr-0.5",
    "zarr-v2",
    "zarr-v3",
)
HDF5_FORMATS = ("anndata-h5ad", "h5seurat", "mudata-h5mu")
OME_FORMATS = ("ome-zarr-0.4", "ome-zarr-0.5")
MUDATA_FORMATS = ("mudata-h5mu", "mudata-zarr-v2")

# The newest libraries the registry offers for Python 3.11, shared by the readers that are measured at their newest.
NEWEST_311 = ("numpy==2.3.5", "pandas==2.3.3", "h5py==3.15.1", "numcodecs==0.16.5", "scipy==1.16.3")


@dataclass(frozen=True)
class Reader:
    """One reader release: what it is, where it runs and what it is tried on."""

    name: str
    version: str
    python: Path
    requirements: tuple[str, ...]
    formats: tuple[str, ...]
    # Packages whose versions the matrix records (as `pip freeze` reports them in the venv).
    recorded: tuple[str, ...] = ("numpy", "pandas", "h5py", "zarr", "numcodecs", "scipy")

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def venv(self) -> str:
        return self.key.replace("@", "-")


ERA_LIBRARIES = ("numpy", "pandas", "h5py", "zarr", "numcodecs", "scipy")
ANNDATA_RECORDED = ("anndata", *ERA_LIBRARIES)


def _anndata(version: str, python: Path, *versions: str, awkward: str = "") -> Reader:
    """An anndata release with its era's libraries, given as versions in ERA_LIBRARIES order.

    awkward: anndata reads awkward arrays only with awkward installed (an optional dependency). Without it every
    file holding one is refused with an ImportError, which measures the environment rather than the file, so the
    releases that read awkward arrays get the awkward of their era.
    """
    pins = tuple(f"{name}=={v}" for name, v in zip(ERA_LIBRARIES, versions, strict=True))
    extra = (f"awkward=={awkward}",) if awkward else ()
    recorded = ANNDATA_RECORDED + (("awkward",) if awkward else ())
    return Reader("anndata", version, python, (f"anndata=={version}", *pins, *extra), ANNDATA_FORMATS, recorded)


READERS: tuple[Reader, ...] = (
    # anndata, python, then numpy, pandas, h5py, zarr, numcodecs, scipy as released around the anndata release.
    # anndata 0.7.8 (Dec 2021)
    _anndata("0.7.8", PY38, "1.21.6", "1.3.5", "3.6.0", "2.10.3", "0.9.1", "1.7.3"),
    # anndata 0.8.0 (Mar 2022)
    _anndata("0.8.0", PY39, "1.22.4", "1.4.4", "3.7.0", "2.12.0", "0.10.2", "1.8.1"),
    # anndata 0.9.2 (Aug 2023): before numpy 2.
    _anndata("0.9.2", PY310, "1.25.2", "2.0.3", "3.9.0", "2.16.1", "0.11.0", "1.11.1", awkward="2.3.2"),
    # anndata 0.10.9 (Aug 2024): zarr 2 only.
    _anndata("0.10.9", PY311, "1.26.4", "2.2.2", "3.11.0", "2.18.2", "0.13.0", "1.14.0", awkward="2.6.7"),
    # anndata 0.11.4 (Mar 2025): zarr 2 only, numpy 2.
    _anndata("0.11.4", PY311, "2.2.4", "2.2.3", "3.13.0", "2.18.4", "0.15.1", "1.15.2", awkward="2.8.0"),
    # anndata 0.12 reads and writes Zarr v3 with zarr-python 3.
    Reader(
        "anndata",
        "0.12.19",
        PY311,
        ("anndata==0.12.19", *NEWEST_311, "zarr==3.1.6", "awkward==2.8.12"),
        ANNDATA_FORMATS,
        (*ANNDATA_RECORDED, "awkward"),
    ),
    # anndata 0.13 needs Python 3.12; pandas 3 (strings as the nullable string dtype by default).
    _anndata("0.13.4", PY312, "2.4.6", "3.0.6", "3.16.0", "3.1.6", "0.16.6", "1.17.1", awkward="2.8.12"),
    Reader("zarr-python", "2.18.7", PY311, ("zarr==2.18.7", "numcodecs==0.15.1", "numpy==2.2.6"), ZARR_FORMATS),
    Reader("zarr-python", "3.1.6", PY311, ("zarr==3.1.6", "numcodecs==0.16.5", "numpy==2.3.5"), ZARR_FORMATS),
    Reader("h5py", "3.16.0", PY311, ("h5py==3.16.0", "numpy==2.3.5"), HDF5_FORMATS, ("h5py", "numpy")),
    Reader("tensorstore", "0.1.86", PY311, ("tensorstore==0.1.86", "numpy==2.3.5"), ZARR_FORMATS, ("tensorstore", "numpy")),
    Reader(
        "zarrs",
        "0.2.3",
        PY311,
        ("zarrs==0.2.3", "zarr==3.1.6", "numcodecs==0.16.5", "numpy==2.3.5"),
        ZARR_FORMATS,
        ("zarrs", "zarr", "numcodecs", "numpy"),
    ),
    Reader(
        "mudata",
        "0.3.10",
        PY311,
        ("mudata==0.3.10", "anndata==0.12.19", *NEWEST_311, "zarr==3.1.6"),
        MUDATA_FORMATS,
        ("mudata", *ANNDATA_RECORDED),
    ),
    Reader(
        "ome-zarr-py",
        "0.18.0",
        PY311,
        ("ome-zarr==0.18.0", "zarr==3.1.6", "numpy==2.3.5"),
        OME_FORMATS,
        ("ome-zarr", "zarr", "dask", "numpy"),
    ),
    Reader(
        "ome-zarr-models",
        "1.7",
        PY311,
        ("ome-zarr-models==1.7", "zarr==3.1.6", "numpy==2.3.5"),
        OME_FORMATS,
        ("ome-zarr-models", "pydantic", "zarr", "numpy"),
    ),
)

# Writers of the held-back files that no reader above already provides an environment for.
WRITERS: tuple[Reader, ...] = (
    _anndata("0.9.0", PY310, "1.25.2", "2.0.3", "3.9.0", "2.16.1", "0.11.0", "1.11.1"),
    _anndata("0.10.0", PY311, "1.26.4", "2.1.1", "3.9.0", "2.16.1", "0.11.0", "1.11.3"),
    _anndata("0.11.0", PY311, "2.1.3", "2.2.3", "3.12.1", "2.18.3", "0.13.1", "1.14.1"),
    _anndata("0.12.0", PY311, "2.3.1", "2.3.1", "3.14.0", "3.1.0", "0.16.1", "1.16.0"),
)


def by_key() -> dict[str, Reader]:
    return {r.key: r for r in READERS + WRITERS}
