"""The OME-Zarr primitives (spec_validate/checks/ome_zarr.py) on small in-memory trees (tests/memory_tree.py): a
group's attributes are its OME-Zarr metadata as Zarr v2 holds it, under `ome` as Zarr v3 holds it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from memory_tree import Arr, findings, scope, tree

from spec_validate.model import NotApplicable, NotChecked

AXES = [{"name": "y", "type": "space"}, {"name": "x", "type": "space"}]


def _datasets(paths, scales=None):
    scales = scales or [[1.0, 1.0 * 2**i] for i in range(len(paths))]
    return [{"path": p, "coordinateTransformations": [{"type": "scale", "scale": s}]} for p, s in zip(paths, scales, strict=True)]


def multiscale(paths=("0", "1"), axes=AXES, **extra) -> dict[str, Any]:
    return {"version": "0.4", "axes": axes, "datasets": _datasets(paths), **extra}


def v2(attrs: dict, **members) -> Any:
    """A Zarr v2 tree whose root has the OME-Zarr metadata `attrs`."""
    return tree({"@attrs": attrs, **members}, format="zarr-v2")


def v3(ome: dict, **members) -> Any:
    return tree({"@attrs": {"ome": ome}, **members}, format="zarr-v3")


def deep(t):
    return scope(t)._replace(deep=True)


# ------------------------------------------------------------------------------------------------ label values
def label_image(properties, level0, level1=None, **extra):
    label = {"version": "0.4", "properties": properties, **extra}
    members = {"0": Arr(np.asarray(level0))}
    if level1 is not None:
        members["1"] = Arr(np.asarray(level1))
    return v2({"multiscales": [multiscale(tuple(members))], "image-label": label}, **members)


CELLS = np.array([[0, 1], [2, 2]], dtype="uint8")


def test_ome_label_values_described_passes_every_value_described():
    t = label_image([{"label-value": v} for v in (0, 1, 2, 7)], CELLS, CELLS[:1, :1])
    assert findings("ome_label_values_described", t.root, sc=deep(t)) == []


def test_ome_label_values_described_fails_a_value_no_property_describes_per_level():
    t = label_image([{"label-value": 1}, {"label-value": 2}], CELLS, np.array([[0, 3]], dtype="uint8"))
    got = findings("ome_label_values_described", t.root, sc=deep(t))
    assert [f.message for f in got] == [
        "multiscales[0].datasets[0] ('0') holds 1 value(s) that image-label.properties does not describe: 0",
        "multiscales[0].datasets[1] ('1') holds 2 value(s) that image-label.properties does not describe: 0, 3",
    ]
    assert got[1].details == {"level": "1", "undescribed": [0, 3], "count": 2}


def test_ome_label_values_described_fails_past_the_bound_with_what_was_collected():
    t = label_image([{"label-value": 5}], np.arange(20, dtype="int32").reshape(4, 5))
    got = findings("ome_label_values_described", t.root, {"max_distinct": 3}, sc=deep(t))
    assert [f.message for f in got] == [
        "multiscales[0].datasets[0] ('0') holds at least 3 value(s) that image-label.properties does not describe: 0, 1, 2"
    ]


def test_ome_label_values_described_passes_not_checked_past_the_bound_when_all_collected_are_described():
    t = label_image([{"label-value": v} for v in range(3)], np.arange(20, dtype="int32").reshape(4, 5))
    with pytest.raises(NotChecked, match="more than 3 distinct values"):
        findings("ome_label_values_described", t.root, {"max_distinct": 3}, sc=deep(t))


def test_ome_label_values_described_passes_not_checked_without_deep():
    t = label_image([{"label-value": 1}], CELLS)
    with pytest.raises(NotChecked, match="needs --deep"):
        findings("ome_label_values_described", t.root)


@pytest.mark.parametrize(
    "attrs",
    [
        pytest.param({"multiscales": [multiscale(("0",))]}, id="no-image-label"),
        pytest.param({"multiscales": [multiscale(("0",))], "image-label": {"colors": []}}, id="no-properties"),
        pytest.param({"multiscales": [multiscale(("0",))], "image-label": {"properties": {"label-value": 1}}}, id="not-a-list"),
    ],
)
def test_ome_label_values_described_passes_not_applicable_without_a_properties_list(attrs):
    t = v2(attrs, **{"0": Arr(CELLS)})
    with pytest.raises(NotApplicable):
        findings("ome_label_values_described", t.root, sc=deep(t))


def test_ome_label_values_described_passes_not_applicable_when_no_level_is_an_integer_array():
    t = label_image([{"label-value": 1}], CELLS.astype("float32"))
    with pytest.raises(NotApplicable, match="no resolution level is an integer array"):
        findings("ome_label_values_described", t.root, sc=deep(t))


def test_ome_label_values_described_passes_on_zarr_v3_metadata_under_ome():
    ome = {"version": "0.5", "multiscales": [multiscale(("0",))], "image-label": {"properties": [{"label-value": 1}]}}
    t = v3(ome, **{"0": Arr(np.ones((2, 2), dtype="uint16"))})
    assert findings("ome_label_values_described", t.root, sc=deep(t)) == []
