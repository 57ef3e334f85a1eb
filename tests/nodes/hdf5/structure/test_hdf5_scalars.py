"""Scalar numbers and booleans read from an object header's attribute messages (spec_validate.nodes.hdf5.structure.
scalars): each exactly as h5py gives it, unwrapped; every other type left to the library."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

from spec_validate.nodes.base import plain
from spec_validate.nodes.hdf5 import tree as hdf5
from spec_validate.nodes.open import open_store

READ_HERE = {
    "true": True,
    "false": np.bool_(False),
    "int8": np.int8(-3),
    "uint8": np.uint8(200),
    "int16": np.int16(-300),
    "uint32": np.uint32(4_000_000_000),
    "int64": -(2**40),
    "uint64": np.uint64(2**63 + 5),
    "big-endian int": np.array(7, dtype=">i4"),
    "float32": np.float32(0.1),
    "float64": 2.5e-300,
    "big-endian float64": np.array(1.5, dtype=">f8"),
    "big-endian float32": np.array(-1.5, dtype=">f4"),
    "nan": np.nan,
    "-inf": -np.inf,
    "-0.0": -0.0,
}
LEFT_TO_THE_LIBRARY = {
    "float16": np.float16(1.5),
    "array": np.arange(3),
    "one-element array": np.array([4]),
    "complex": np.complex64(1 + 2j),
    "string": "x",
    "fixed string": np.bytes_(b"ab"),
}


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_scalars_read_from_the_header_are_what_h5py_gives(tmp_path, monkeypatch, libver):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver=libver) as f:
        group = f.create_group("g")
        for name, value in {**READ_HERE, **LEFT_TO_THE_LIBRARY}.items():
            group.attrs[name] = value
        group.attrs.create("enum", 1, dtype=h5py.enum_dtype({"A": 0, "B": 1}, basetype="i1"))
        group.attrs.create("wide boolean", 1, dtype=h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i2"))
    with h5py.File(path, "r") as f:
        expected = {name: plain(value) for name, value in f["g"].attrs.items()}
    asked = []
    read = hdf5._read_attribute
    monkeypatch.setattr(hdf5, "_read_attribute", lambda oid, name, *rest: asked.append(name.decode()) or read(oid, name, *rest))
    with open_store(str(path)) as tree:
        found = dict(tree.get("/g").attrs)
    assert found.keys() == expected.keys()
    for name, value in expected.items():
        assert type(found[name]) is type(value), name
        assert found[name] == value or (math.isnan(value) and math.isnan(found[name])), name
        if isinstance(value, float) and value == 0:
            assert math.copysign(1, found[name]) == math.copysign(1, value)
    if libver == "earliest":  # (a version 2 header keeps its attributes' messages alike; h5py's default is version 1)
        assert set(asked) == {*LEFT_TO_THE_LIBRARY, "enum", "wide boolean"} - {"string"}


def test_a_boolean_stored_as_neither_zero_nor_one_is_left_to_the_library():
    """h5py reads a byte of 2 in its boolean type as numpy reads it; that is no member of the enum, so the library
    (and h5py's mapping) decides it, not this reader."""
    from spec_validate.nodes.hdf5.structure.scalars import _value

    encoded = h5py.h5t.py_create(np.dtype(bool)).encode()  # H5Tencode: a kind and a version byte, then the message
    message = encoded[2:]
    assert [_value(message, bytes([stored])) for stored in (0, 1, 2)] == [(False,), (True,), None]
