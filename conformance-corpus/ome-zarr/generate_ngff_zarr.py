"""Write the OME-Zarr stores of a second real writer, ngff-zarr: an image and a plate, 0.4 on Zarr v2 and 0.5 on
Zarr v3, each as ngff-zarr writes it, with nothing changed (the manifest lists what each fails, and why).

ngff-zarr writes images and HCS plates; it has no writer of label images. Run with ngff-zarr installed (it is no
dependency of spec-validate), from this folder:
    python -m venv /tmp/venv-ngff && /tmp/venv-ngff/bin/pip install ngff-zarr==0.50.0
    /tmp/venv-ngff/bin/python generate_ngff_zarr.py
The stores are committed; the tests never run this script.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import ngff_zarr as nz
import numpy as np

HERE = Path(__file__).resolve().parent
FOLDERS = {"0.4": "zarr-v2", "0.5": "zarr-v3"}


def multiscales() -> nz.NgffMultiscales:
    """A 2-channel 16x16 image in two levels, chunked 8x8, its pixels 0.5 micrometer."""
    data = (np.arange(2 * 16 * 16) % 7).astype("uint8").reshape(2, 16, 16)
    image = nz.to_ngff_image(
        data,
        dims=["c", "y", "x"],
        scale={"y": 0.5, "x": 0.5},
        axes_units={"y": "micrometer", "x": "micrometer"},
        name="image",
    )
    return nz.to_multiscales(image, scale_factors=[2], chunks=8)


def write_image_store(path: Path, version: str) -> None:
    nz.to_ngff_zarr(str(path), multiscales(), version=version)


def write_plate_store(path: Path, version: str) -> None:
    """One row, two columns, one field of view per well, one acquisition."""
    wells = [nz.PlateWell(path="A/1", rowIndex=0, columnIndex=0), nz.PlateWell(path="A/2", rowIndex=0, columnIndex=1)]
    plate = nz.Plate(
        columns=[nz.PlateColumn(name="1"), nz.PlateColumn(name="2")],
        rows=[nz.PlateRow(name="A")],
        wells=wells,
        name="plate",
        field_count=1,
        acquisitions=[nz.PlateAcquisition(id=0, name="first", maximumfieldcount=1)],
        version=version,
    )
    nz.to_hcs_zarr(nz.HCSPlate(str(path), plate), str(path))
    for column in ("1", "2"):
        nz.write_hcs_well_image(str(path), multiscales(), plate, "A", column, field_index=0, version=version)


def main() -> None:
    for version, folder in FOLDERS.items():
        for name, write in {"ngff-zarr-image": write_image_store, "ngff-zarr-plate": write_plate_store}.items():
            path = HERE / folder / f"{name}.zarr"
            shutil.rmtree(path, ignore_errors=True)
            write(path, version)


if __name__ == "__main__":
    main()
