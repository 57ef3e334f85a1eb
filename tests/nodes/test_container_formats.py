"""The container formats of local paths: each format package registers its detector, found without a list."""

from __future__ import annotations

import pytest

from spec_validate.errors import InputError
from spec_validate.nodes import formats
from spec_validate.nodes.open import open_store


def test_formats_passes_every_format_package_registers_its_detectors_in_order():
    assert [d.name for d in formats.detectors("directory")] == ["tiledb", "zarr"]
    assert [d.name for d in formats.detectors("file")] == ["hdf5", "zarr-zip", "attributes"]


def test_formats_fails_a_name_registered_twice():
    with pytest.raises(RuntimeError, match="registered twice"):
        formats.container_format("hdf5", handles="file", order=99)(lambda path: None)


def test_formats_passes_a_new_detector_is_asked_in_its_order(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setitem(formats.DETECTORS, "first", formats.Detector("first", "file", 0, lambda path: seen.append(path)))
    target = tmp_path / "plain.txt"
    target.write_text("not a store")
    with pytest.raises(InputError, match="not an HDF5 file or a Zarr store"):
        open_store(str(target))
    assert seen == [str(target)]
