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


# ------------------------------------------------------------------------------------------------ the document
def test_ome_document_passes_v2_attributes_and_v3_ome_object():
    from spec_validate.checks.ome_zarr import ome_document

    assert ome_document(v2({"multiscales": []}).root) == {"multiscales": []}
    assert ome_document(v3({"version": "0.5"}).root) == {"version": "0.5"}
    with pytest.raises(NotApplicable, match="no 'ome' object"):
        ome_document(tree({"@attrs": {"multiscales": []}}, format="zarr-v3").root)


@pytest.mark.parametrize(
    "doc,version",
    [
        pytest.param({"version": "0.5", "multiscales": [{"version": "0.4"}]}, "0.5", id="ome-version-first"),
        pytest.param({"multiscales": [{"version": "0.4"}]}, "0.4", id="multiscales"),
        pytest.param({"plate": {"version": "0.4"}}, "0.4", id="plate"),
        pytest.param({"well": {"version": "0.3"}}, "0.3", id="well"),
        pytest.param({"image-label": {"version": "0.4"}}, "0.4", id="image-label"),
        pytest.param({"bioformats2raw.layout": 3}, None, id="none"),
        pytest.param({"version": 5, "multiscales": [{}]}, None, id="not-a-string"),
    ],
)
def test_declared_version_passes_the_first_version_declared(doc, version):
    from spec_validate.checks.ome_zarr import declared_version

    assert declared_version(doc) == version


def test_walk_passes_places_of_every_item_and_skips_what_is_absent():
    from spec_validate.checks.ome_zarr import walk

    doc = {"multiscales": [{"axes": [{"name": "y"}, {"name": "x"}]}, {"name": "no axes"}, "not an object"]}
    assert list(walk(doc, "multiscales[*].axes[*].name")) == [
        ("multiscales[0].axes[0].name", "y"),
        ("multiscales[0].axes[1].name", "x"),
    ]
    assert list(walk({"bioformats2raw.layout": 3}, "bioformats2raw.layout")) == [("bioformats2raw.layout", 3)]
    with pytest.raises(NotApplicable, match="no 'plate'"):
        list(walk(doc, "plate.wells[*]"))


# ------------------------------------------------------------------------------------------------ fields
def _messages(primitive, t, options=None, sc=None):
    return [f.message for f in findings(primitive, t.root, options, sc)]


def test_ome_has_field_passes_and_fails_per_object():
    t = v2({"multiscales": [{"axes": []}, {"name": "b"}, 3]})
    assert _messages("ome_has_field", t, {"at": "multiscales[*]", "field": "axes", "type": "array"}) == [
        "multiscales[1] has no field 'axes'",
        "multiscales[2] is integer, not an object",
    ]
    assert _messages("ome_has_field", t, {"at": "multiscales[*]", "field": "name", "type": "integer"})[1:] == [
        "multiscales[1].name is string, not integer",
        "multiscales[2] is integer, not an object",
    ]
    assert _messages("ome_has_field", v3({"version": "0.5"}), {"field": "version", "type": "string"}) == []
    assert _messages("ome_has_field", v3({}), {"field": "version"}) == ["the OME-Zarr metadata has no field 'version'"]


def test_ome_has_field_passes_not_applicable_on_a_group_without_the_key():
    with pytest.raises(NotApplicable):
        findings("ome_has_field", v2({"omero": {}}).root, {"at": "multiscales[*]", "field": "axes"})


@pytest.mark.parametrize(
    "value,options,expected",
    [
        pytest.param("nearest", {"type": "string", "values": ["nearest"]}, [], id="passes"),
        pytest.param(3, {"type": "string"}, ["x.v is integer 3, not string"], id="type"),
        pytest.param("a", {"values": ["b", "c"]}, ["x.v is 'a', not one of 'b', 'c'"], id="values"),
        pytest.param("A-1", {"pattern": "^[A-Za-z0-9]+$"}, ["x.v is 'A-1', which does not match ^[A-Za-z0-9]+$"], id="pattern"),
        pytest.param([0, 256], {"minimum": 0, "maximum": 255}, ["x.v holds 256, outside 0 to 255"], id="range"),
        pytest.param([1, 2, 3], {"min_items": 4, "max_items": 4}, ["x.v has 3 item(s); expected 4 to 4"], id="items"),
        pytest.param(["a", 1], {"item_type": "string"}, ["x.v[1] is integer, not string"], id="item-type"),
    ],
)
def test_ome_value_passes_and_fails_each_constraint(value, options, expected):
    t = v2({"x": {"v": value}})
    assert _messages("ome_value", t, {"at": "x.v", **options}) == expected


def test_ome_unique_fails_a_repeated_name_only():
    t = v2({"plate": {"rows": [{"name": "A"}, {"name": "B"}, {"name": "A"}, {}]}})
    assert _messages("ome_unique", t, {"at": "plate.rows", "field": "name"}) == [
        "plate.rows[2].name 'A' repeats plate.rows[0].name"
    ]


# ------------------------------------------------------------------------------------------------ axes
def _axes(*spec):
    """Axes from (name, type) pairs."""
    return [{"name": n, "type": t} if t else {"name": n} for n, t in spec]


@pytest.mark.parametrize(
    "axes,count",
    [
        pytest.param(_axes(("t", "time"), ("c", "channel"), ("z", "space"), ("y", "space"), ("x", "space")), 0, id="tczyx"),
        pytest.param(_axes(("y", "space"), ("x", "space")), 0, id="yx"),
        pytest.param(_axes(("x", "space")), 1, id="one-space"),
        pytest.param(_axes(("a", "space"), ("b", "space"), ("c", "space"), ("d", "space")), 1, id="four-space"),
        pytest.param(_axes(("t", "time"), ("u", "time"), ("y", "space"), ("x", "space")), 1, id="two-time"),
        pytest.param(_axes(("c", "channel"), ("q", None), ("y", "space"), ("x", "space")), 1, id="two-other"),
    ],
)
def test_ome_axes_types_passes_and_fails(axes, count):
    assert len(findings("ome_axes_types", v2({"multiscales": [{"axes": axes}]}).root)) == count


@pytest.mark.parametrize(
    "axes,count",
    [
        pytest.param(_axes(("t", "time"), ("c", "channel"), ("y", "space"), ("x", "space")), 0, id="time-channel-space"),
        pytest.param(_axes(("c", "custom"), ("y", "space"), ("x", "space")), 0, id="custom-then-space"),
        pytest.param(_axes(("y", "space"), ("c", "channel"), ("x", "space")), 1, id="space-before-channel"),
        pytest.param(_axes(("c", "channel"), ("t", "time"), ("y", "space"), ("x", "space")), 1, id="channel-before-time"),
    ],
)
def test_ome_axes_order_passes_and_fails(axes, count):
    assert len(findings("ome_axes_order", v2({"multiscales": [{"axes": axes}]}).root)) == count


def test_ome_axes_zyx_fails_only_three_space_axes_named_x_y_z_out_of_order():
    zyx = _axes(("z", "space"), ("y", "space"), ("x", "space"))
    xyz = _axes(("x", "space"), ("y", "space"), ("z", "space"))
    abc = _axes(("a", "space"), ("b", "space"), ("c", "space"))
    assert [len(findings("ome_axes_zyx", v2({"multiscales": [{"axes": a}]}).root)) for a in (zyx, xyz, abc)] == [0, 1, 0]


def test_ome_axis_units_fails_a_missing_unit_and_with_known_an_unlisted_one():
    axes = [
        {"name": "t", "type": "time", "unit": "second"},
        {"name": "c", "type": "channel"},
        {"name": "y", "type": "space", "unit": "um"},
        {"name": "x", "type": "space"},
    ]
    t = v2({"multiscales": [{"axes": axes}]})
    assert _messages("ome_axis_units", t) == ["multiscales[0].axes[3] (type space) has no unit"]
    assert _messages("ome_axis_units", t, {"known": True}) == [
        "multiscales[0].axes[2] (type space) has unit 'um', not one of the space units the spec lists"
    ]


# ------------------------------------------------------------------------------------------------ transformations
def _transformed(*per_dataset, own=None, axes=AXES):
    ms = {"axes": axes, "datasets": [{"path": str(i), "coordinateTransformations": ts} for i, ts in enumerate(per_dataset)]}
    if own is not None:
        ms["coordinateTransformations"] = own
    return v2({"multiscales": [ms]})


SCALE = {"type": "scale", "scale": [1.0, 1.0]}
SHIFT = {"type": "translation", "translation": [0.5, 0.5]}


def test_ome_transformation_types_fails_a_type_not_allowed_in_datasets_and_the_image():
    t = _transformed([SCALE, {"type": "affine"}], own=[{"type": "identity"}])
    assert _messages("ome_transformation_types", t, {"allowed": ["scale", "translation"]}) == [
        "multiscales[0].datasets[0].coordinateTransformations[1] has type 'affine', not one of scale, translation",
        "multiscales[0].coordinateTransformations[0] has type 'identity', not one of scale, translation",
    ]


def test_ome_one_scale_fails_none_or_two_in_a_dataset_and_two_in_the_image():
    t = _transformed([SCALE], [SHIFT], [SCALE, SCALE], own=[SHIFT])
    assert _messages("ome_one_scale", t) == [
        "multiscales[0].datasets[1].coordinateTransformations holds 0 scale transformations; expected exactly one",
        "multiscales[0].datasets[2].coordinateTransformations holds 2 scale transformations; expected exactly one",
    ]


def test_ome_translation_after_scale_fails_a_translation_first_or_two():
    t = _transformed([SCALE, SHIFT], [SHIFT, SCALE], [SCALE, SHIFT, SHIFT])
    assert _messages("ome_translation_after_scale", t) == [
        "multiscales[0].datasets[1].coordinateTransformations lists its translation before its scale",
        "multiscales[0].datasets[2].coordinateTransformations holds 2 translations; at most one is allowed",
    ]


def test_ome_transformation_lengths_fails_a_vector_of_another_length_than_the_axes():
    t = _transformed([SCALE, {"type": "translation", "translation": [0.0, 0.0, 0.0]}], [{"type": "scale", "scale": [2.0]}])
    assert _messages("ome_transformation_lengths", t) == [
        "multiscales[0].datasets[0].coordinateTransformations[1].translation has 3 values; the image has 2 axes",
        "multiscales[0].datasets[1].coordinateTransformations[0].scale has 1 values; the image has 2 axes",
    ]


# ------------------------------------------------------------------------------------------------ the hierarchy
def image(paths=("0", "1"), shapes=((8, 8), (4, 4)), scales=None, dtype="uint8", axes=AXES, **extra_members):
    """A multiscale image of 2-d levels: arrays at `paths` with `shapes` (None: no array there)."""
    members = {p: Arr(np.zeros(s, dtype=dtype)) for p, s in zip(paths, shapes, strict=True) if s is not None}
    ms = {"version": "0.4", "axes": axes, "datasets": _datasets(paths, scales)}
    return v2({"multiscales": [ms]}, **members, **extra_members)


def test_ome_datasets_are_arrays_fails_a_path_to_nothing_or_a_group():
    t = image(paths=("0", "1", "2"), shapes=((8, 8), None, None), scales=[[1, 1]] * 3, **{"2": {}})
    assert _messages("ome_datasets_are_arrays", t) == [
        "multiscales[0].datasets[1].path '1' names nothing in the store",
        "multiscales[0].datasets[2].path '2' names a group, not an array",
    ]
    assert _messages("ome_datasets_are_arrays", image()) == []


def test_ome_axes_match_arrays_fails_an_array_of_other_dimensionality():
    t = image(shapes=((8, 8), (1, 4, 4)))
    assert _messages("ome_axes_match_arrays", t) == ["multiscales[0].datasets[1] ('1') has 3 dimensions; the image has 2 axes"]


def test_ome_datasets_same_ndim_fails_levels_that_differ_or_exceed_five():
    assert _messages("ome_datasets_same_ndim", image()) == []
    assert len(findings("ome_datasets_same_ndim", image(shapes=((8, 8), (1, 4, 4))).root)) == 1
    six = image(paths=("0",), shapes=((1,) * 6,), scales=[[1.0] * 2])
    assert _messages("ome_datasets_same_ndim", six) == ["multiscales[0].datasets[0] ('0') has 6 dimensions, more than 5"]


def test_ome_datasets_largest_first_fails_a_level_larger_than_the_one_before():
    assert _messages("ome_datasets_largest_first", image()) == []
    assert _messages("ome_datasets_largest_first", image(shapes=((4, 4), (8, 4)))) == [
        "multiscales[0].datasets[1] ('1', shape [8, 4]) is larger than datasets[0] ('0', shape [4, 4]) in some dimension"
    ]


@pytest.mark.parametrize(
    "shapes,scales,count",
    [
        pytest.param(((8, 8), (4, 4)), [[1, 1], [2, 2]], 0, id="halved"),
        pytest.param(((9, 9), (5, 5)), [[1, 1], [2, 2]], 0, id="odd-rounded-up"),
        pytest.param(((9, 9), (4, 4)), [[1, 1], [2, 2]], 0, id="odd-rounded-down"),
        pytest.param(((8, 8), (4, 4)), [[1, 1], [1, 1]], 1, id="scale-not-changed"),
        pytest.param(((8, 8), (8, 8)), [[1, 1], [2, 2]], 1, id="shape-not-changed"),
    ],
)
def test_ome_scales_match_shapes_passes_within_one_pixel(shapes, scales, count):
    assert len(findings("ome_scales_match_shapes", image(shapes=shapes, scales=scales).root)) == count


def test_ome_dimension_names_fails_missing_or_different_names():
    ms = {"version": "0.5", "axes": AXES, "datasets": _datasets(("0", "1", "2"))}
    t = v3(
        {"version": "0.5", "multiscales": [ms]},
        **{
            "0": Arr(np.zeros((2, 2)), metadata={"dimension_names": ["y", "x"]}),
            "1": Arr(np.zeros((2, 2)), metadata={}),
            "2": Arr(np.zeros((2, 2)), metadata={"dimension_names": ["x", "y"]}),
        },
    )
    assert _messages("ome_dimension_names", t) == [
        "multiscales[0].datasets[1] ('1'): its zarr.json has no dimension_names",
        "multiscales[0].datasets[2] ('2'): dimension_names ['x', 'y'] differ from the axes' names ['y', 'x']",
    ]


def test_ome_version_consistent_fails_a_group_declaring_another_version_than_the_root():
    t = tree(
        {
            "@attrs": {"ome": {"version": "0.5", "plate": {}}},
            "A": {"@attrs": {"ome": {"version": "0.5"}}},
            "B": {"@attrs": {"ome": {"version": "0.4"}}},
            "C": {"@attrs": {"ome": {}}},
        },
        format="zarr-v3",
    )
    sc = scope(t)
    assert [len(findings("ome_version_consistent", t.get(p), sc=sc)) for p in ("/", "/A", "/B", "/C")] == [0, 0, 1, 0]


# ------------------------------------------------------------------------------------------------ labels
def labelled(label_paths=("0", "1"), label_shapes=((8, 8), (4, 4)), dtype="uint8", label=None, listed=("cells",)):
    """An image with a labels group listing `listed`, and one label image `cells` of the given levels."""
    cells_ms = {"version": "0.4", "axes": AXES, "datasets": _datasets(label_paths)}
    cells = {"@attrs": {"multiscales": [cells_ms], "image-label": label or {"version": "0.4"}}}
    cells |= {p: Arr(np.zeros(s, dtype=dtype)) for p, s in zip(label_paths, label_shapes, strict=True)}
    return image(labels={"@attrs": {"labels": list(listed)}, "cells": cells})


def test_ome_labels_are_images_fails_a_path_to_nothing_or_to_no_image():
    t = labelled(listed=("cells", "gone", "../0"))
    labels = t.get("/labels")
    assert [f.message for f in findings("ome_labels_are_images", labels)] == [
        "labels[1] 'gone' names nothing, not a multiscale image",
        "labels[2] '../0' names an array, not a multiscale image",
    ]
    with pytest.raises(NotApplicable):
        findings("ome_labels_are_images", t.root)


def test_ome_label_levels_match_image_fails_another_number_of_levels():
    assert findings("ome_label_levels_match_image", labelled().get("/labels/cells")) == []
    one = labelled(label_paths=("0",), label_shapes=((8, 8),))
    assert [f.message for f in findings("ome_label_levels_match_image", one.get("/labels/cells"))] == [
        "has 1 resolution levels; the image it labels (/) has 2"
    ]


def test_ome_label_levels_match_image_passes_not_applicable_when_the_source_is_not_an_image():
    t = labelled(label={"version": "0.4", "source": {"image": "../../0"}})
    with pytest.raises(NotApplicable, match="not found"):
        findings("ome_label_levels_match_image", t.get("/labels/cells"))


def test_ome_label_arrays_integer_fails_a_float_level():
    assert findings("ome_label_arrays_integer", labelled().get("/labels/cells")) == []
    floats = labelled(dtype="float32")
    assert [f.message for f in findings("ome_label_arrays_integer", floats.get("/labels/cells"))] == [
        "multiscales[0].datasets[0] ('0') has data type float32, not an integer type",
        "multiscales[0].datasets[1] ('1') has data type float32, not an integer type",
    ]
    with pytest.raises(NotApplicable, match="not a label image"):
        findings("ome_label_arrays_integer", floats.root)


# ------------------------------------------------------------------------------------------------ plates and wells
def plate(wells, rows=("A",), columns=("1", "2"), **members):
    doc = {"version": "0.4", "rows": [{"name": r} for r in rows], "columns": [{"name": c} for c in columns], "wells": wells}
    return v2({"plate": doc}, **members)


def test_ome_plate_wells_exist_fails_a_well_that_is_missing_or_an_array():
    wells = [{"path": "A/1"}, {"path": "A/2"}, {"path": "A/3"}]
    t = plate(wells, columns=("1", "2", "3"), A={"1": {}, "2": Arr(np.zeros(1))})
    assert _messages("ome_plate_wells_exist", t) == [
        "plate.wells[1].path 'A/2' names an array, not a well group",
        "plate.wells[2].path 'A/3' names nothing, not a well group",
    ]


def test_ome_plate_well_paths_fails_a_path_off_the_grid_and_with_indices_a_wrong_index():
    wells = [
        {"path": "A/1", "rowIndex": 0, "columnIndex": 0},
        {"path": "A/2", "rowIndex": 0, "columnIndex": 0},
        {"path": "B/1", "rowIndex": 0, "columnIndex": 0},
        {"path": "A1", "rowIndex": 0, "columnIndex": 0},
    ]
    t = plate(wells)
    assert _messages("ome_plate_well_paths", t) == [
        "plate.wells[2].path 'B/1' is not a row name, '/' and a column name of the plate",
        "plate.wells[3].path 'A1' is not a row name, '/' and a column name of the plate",
    ]
    assert _messages("ome_plate_well_paths", t, {"indices": True}) == ["plate.wells[1].columnIndex 0 does not index column '2'"]


def test_ome_well_images_exist_fails_a_field_that_is_missing_or_no_image():
    well = {"well": {"version": "0.4", "images": [{"path": "0"}, {"path": "1"}, {"path": "2"}]}}
    field = {"@attrs": {"multiscales": [{"axes": AXES, "datasets": []}]}}
    t = v2(well, **{"0": field, "1": {}})
    assert _messages("ome_well_images_exist", t) == [
        "well.images[1].path '1' names a group without multiscales, not an image",
        "well.images[2].path '2' names nothing, not an image",
    ]


def test_ome_unique_with_casefold_fails_names_differing_only_in_case():
    t = v2({"plate": {"rows": [{"name": "Aa"}, {"name": "aA"}, {"name": "Aa"}, {"name": "B"}]}})
    assert _messages("ome_unique", t, {"at": "plate.rows", "field": "name", "casefold": True}) == [
        "plate.rows[1].name 'aA' differs only in case from plate.rows[0].name"
    ]


def test_ome_plate_indices_in_range_fails_an_index_past_its_list_or_negative():
    wells = [
        {"path": "A/1", "rowIndex": 0, "columnIndex": 0},
        {"path": "A/2", "rowIndex": 1, "columnIndex": 2},
        {"path": "A/1", "rowIndex": -1, "columnIndex": "0"},
    ]
    assert _messages("ome_plate_indices_in_range", plate(wells)) == [
        "plate.wells[1].rowIndex is 1; the 1 rows are indexed 0 to 0",
        "plate.wells[1].columnIndex is 2; the 2 columns are indexed 0 to 1",
        "plate.wells[2].rowIndex is -1; the 1 rows are indexed 0 to 0",
    ]


def _hcs(acquisitions, images, well_attrs=True):
    field = {"@attrs": {"multiscales": [{"axes": AXES, "datasets": []}]}}
    well = {"@attrs": {"well": {"images": images}} if well_attrs else {}, "0": field}
    doc = {"rows": [{"name": "A"}], "columns": [{"name": "1"}], "wells": [{"path": "A/1"}], "acquisitions": acquisitions}
    return v2({"plate": doc}, A={"1": well})


def test_ome_well_acquisition_fails_a_missing_key_among_several_and_an_unknown_id():
    one, two = [{"id": 0}], [{"id": 0}, {"id": 1}]
    well = "/A/1"
    assert [f.message for f in findings("ome_well_acquisition", _hcs(one, [{"path": "0"}]).get(well))] == []
    assert [f.message for f in findings("ome_well_acquisition", _hcs(two, [{"path": "0"}]).get(well))] == [
        "well.images[0] has no 'acquisition'; the plate lists 2 acquisitions"
    ]
    assert [f.message for f in findings("ome_well_acquisition", _hcs(one, [{"path": "0", "acquisition": 3}]).get(well))] == [
        "well.images[0].acquisition 3 is the id of no acquisition of the plate (ids: 0)"
    ]
    with pytest.raises(NotApplicable):
        findings("ome_well_acquisition", _hcs([], [{"path": "0"}]).get(well))


def test_ome_well_in_plate_fails_a_well_without_a_plate_two_levels_up():
    t = _hcs([], [{"path": "0"}])
    assert findings("ome_well_in_plate", t.get("/A/1")) == []
    lone = v2({}, A={"1": {"@attrs": {"well": {"images": []}}}})
    assert [f.message for f in findings("ome_well_in_plate", lone.get("/A/1"))] == [
        "the group two levels above the well, /, has no plate metadata"
    ]


def test_ome_paths_name_groups_with_fails_a_group_without_the_key_and_unless_skipped_a_missing_one():
    t = _hcs([], [{"path": "0"}], well_attrs=False)
    t.root.attrs["plate"]["wells"].append({"path": "A/2"})
    options = {"at": "plate.wells[*].path", "key": "well"}
    assert _messages("ome_paths_name_groups_with", t, options) == [
        "plate.wells[0].path 'A/1' names /A/1, whose OME-Zarr metadata has no 'well'",
        "plate.wells[1].path 'A/2' names nothing, not a group with 'well'",
    ]
    assert len(_messages("ome_paths_name_groups_with", t, {**options, "skip_absent": True})) == 1


def test_ome_plate_groups_defined_and_hold_images_fail_undefined_and_empty_groups():
    field = {"@attrs": {"multiscales": [{"axes": AXES, "datasets": []}]}}
    well = {"@attrs": {"well": {"images": [{"path": "0"}]}}, "0": field}
    t = plate([], rows=("A", "C"), columns=("1",), A={"1": dict(well), "2": dict(well)}, B={"1": dict(well)}, C={"1": {}})
    assert _messages("ome_plate_groups_defined", t, {"names": "rows"}) == [
        "well /B/1 is in row 'B', which the plate's rows do not define"
    ]
    assert _messages("ome_plate_groups_defined", t, {"names": "columns"}) == [
        "well /A/2 is in column '2', which the plate's columns do not define"
    ]
    assert _messages("ome_plate_groups_hold_images", t, {"level": "row"}) == ["row group /C holds no well with an image"]
    assert _messages("ome_plate_groups_hold_images", t, {"level": "well"}) == ["well group /C/1 holds no image"]


# ------------------------------------------------------------------------------------------------ OME-XML
# bioformats2raw's OME/METADATA.ome.xml, read from a Zarr tree in memory (the memory trees store no such file).
OME_NS = "http://www.openmicroscopy.org/Schemas/OME/2016-06"


def ome_xml(*pixels: str, extra: str = "", ns: str = OME_NS) -> bytes:
    """An OME-XML document of one Image per `pixels` entry, each Pixels holding that text."""
    images = "".join(
        f'<Image ID="Image:{i}" Name="{i}"><Pixels ID="Pixels:{i}"><Channel/>{p}</Pixels></Image>' for i, p in enumerate(pixels)
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><OME xmlns="{ns}">{images}{extra}</OME>'.encode()


def bf2raw(xml: bytes | None, series: list[str] | None = ("0", "1"), images=("0", "1"), fmt="zarr-v2", **top) -> Any:
    """A bioformats2raw store: the top-level group, its numbered images, its OME group (with `series`) and `xml`."""
    from dict_store import DictStore

    from spec_validate.nodes.zarr.tree import ZarrTree

    v3 = fmt == "zarr-v3"

    def group(prefix, attrs):
        key = f"{prefix}zarr.json" if v3 else f"{prefix}.zgroup"
        doc = (
            {"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"version": "0.5", **attrs}}}
            if v3
            else {"zarr_format": 2}
        )
        out = {key: doc}
        if not v3 and attrs:
            out[f"{prefix}.zattrs"] = attrs
        return out

    items = group("", {"bioformats2raw.layout": 3, **top})
    items |= group("OME/", {} if series is None else {"series": list(series)})
    for name in images:
        items |= group(f"{name}/", {"multiscales": [multiscale(("s0",))]})
    if xml is not None:
        items["OME/METADATA.ome.xml"] = xml
    return ZarrTree(DictStore(items), 3 if v3 else 2)


VALID_XML = ome_xml("<MetadataOnly/>", "<MetadataOnly/>")
XML_PRIMITIVES = ("ome_xml_present", "ome_xml_metadata_only", "ome_xml_series_match", "ome_xml_images_match")


@pytest.mark.parametrize("fmt", ["zarr-v2", "zarr-v3"])
@pytest.mark.parametrize("name", XML_PRIMITIVES)
def test_ome_xml_passes_bioformats2raw_xml_with_one_metadata_only_image_per_series(name, fmt):
    assert findings(name, bf2raw(VALID_XML, fmt=fmt).root) == []


@pytest.mark.parametrize("name", XML_PRIMITIVES)
def test_ome_xml_not_applicable_on_a_group_that_is_no_bioformats2raw_group(name):
    with pytest.raises(NotApplicable, match=r"bioformats2raw\.layout"):
        findings(name, v2({"multiscales": [multiscale()]}).root)


def test_ome_xml_present_fails_no_xml_stored():
    assert [f.message for f in findings("ome_xml_present", bf2raw(None).root)] == [
        "no OME/METADATA.ome.xml is stored: the collection's OME metadata is missing"
    ]


@pytest.mark.parametrize("name", XML_PRIMITIVES[1:])
def test_ome_xml_rules_not_applicable_without_the_xml_if_provided(name):
    with pytest.raises(NotApplicable, match=r"no /OME/METADATA\.ome\.xml is stored"):
        findings(name, bf2raw(None).root)


def test_ome_xml_present_fails_not_well_formed_and_the_musts_are_not_checked():
    t = bf2raw(b"<OME><Image></OME>")
    (got,) = findings("ome_xml_present", t.root)
    assert got.message.startswith("OME/METADATA.ome.xml is no well-formed XML: mismatched tag")
    for name in XML_PRIMITIVES[1:]:
        with pytest.raises(NotChecked, match="no well-formed XML"):
            findings(name, t.root)


def test_ome_xml_present_fails_a_root_other_than_ome():
    assert [f.message for f in findings("ome_xml_present", bf2raw(b"<Image/>").root)] == [
        "OME/METADATA.ome.xml's root element is 'Image', not 'OME'"
    ]


def test_ome_xml_not_checked_past_its_bound_naming_it(monkeypatch):
    from spec_validate.checks import ome_zarr

    monkeypatch.setattr(ome_zarr, "MAX_OME_XML_BYTES", len(VALID_XML) - 1)
    for name in XML_PRIMITIVES:
        with pytest.raises(NotChecked, match=rf"{len(VALID_XML)} bytes, more than the {len(VALID_XML) - 1} read for it"):
            findings(name, bf2raw(VALID_XML).root)


def test_ome_xml_passes_any_namespace_and_none_matching_local_names():
    for xml in (
        ome_xml("<MetadataOnly/>", "<MetadataOnly/>", ns="http://www.openmicroscopy.org/Schemas/OME/2015-01"),
        VALID_XML.replace(f' xmlns="{OME_NS}"'.encode(), b""),
    ):
        for name in XML_PRIMITIVES:
            assert findings(name, bf2raw(xml).root) == [], name


def test_ome_xml_metadata_only_fails_bindata_tiffdata_binaryonly_and_none():
    xml = ome_xml(
        '<BinData Length="0"></BinData>',
        '<TiffData IFD="0"/><MetadataOnly/>',
        "",
        extra="<BinaryOnly MetadataFile='x' UUID='u'/>",
    )
    got = [f.message for f in findings("ome_xml_metadata_only", bf2raw(xml, series=None, images=("0", "1", "2")).root)]
    assert got == [
        "OME/METADATA.ome.xml holds a BinaryOnly element",
        "Image 0 (Image:0)'s Pixels hold BinData",
        "Image 1 (Image:1)'s Pixels hold TiffData",
        "Image 2 (Image:2)'s Pixels hold no MetadataOnly element",
    ]


def test_ome_xml_metadata_only_passes_bindata_outside_pixels():
    # BinData also holds a Mask's bits (ROI) and a file annotation's bytes: the clause is about the pixels.
    xml = ome_xml(
        "<MetadataOnly/>", "<MetadataOnly/>", extra='<ROI ID="ROI:0"><Union><Mask><BinData Length="0"/></Mask></Union></ROI>'
    )
    assert findings("ome_xml_metadata_only", bf2raw(xml).root) == []


def test_ome_xml_series_match_fails_fewer_images_than_series():
    got = findings("ome_xml_series_match", bf2raw(ome_xml("<MetadataOnly/>")).root)
    assert [f.message for f in got] == ["series lists 2 path(s); OME/METADATA.ome.xml has 1 Image element(s)"]


def test_ome_xml_series_match_not_applicable_without_series():
    with pytest.raises(NotApplicable, match="no 'series' list"):
        findings("ome_xml_series_match", bf2raw(VALID_XML, series=None).root)


def test_ome_xml_images_match_fails_more_images_in_the_xml_than_groups():
    xml = ome_xml("<MetadataOnly/>", "<MetadataOnly/>", "<MetadataOnly/>")
    got = findings("ome_xml_images_match", bf2raw(xml, series=None).root)
    assert [f.message for f in got] == ["2 multiscales group(s) (0, 1); OME/METADATA.ome.xml has 3 Image element(s)"]


def test_ome_xml_images_match_not_applicable_on_a_plate():
    with pytest.raises(NotApplicable, match="a plate"):
        findings("ome_xml_images_match", bf2raw(VALID_XML, plate={"rows": [], "columns": []}).root)


def test_parse_ome_xml_refuses_entity_expansion_external_entities_and_deep_nesting():
    from spec_validate.checks.ome_zarr import MAX_OME_XML_DEPTH, parse_ome_xml

    entities = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * 10 if i else "x" * 10}">' for i in range(9))
    laughs = f'<?xml version="1.0"?><!DOCTYPE OME [{entities}]><OME>&e8;</OME>'.encode()
    assert "amplification" in parse_ome_xml(laughs).error
    external = b'<?xml version="1.0"?><!DOCTYPE OME [<!ENTITY x SYSTEM "file:///etc/passwd">]><OME>&x;</OME>'
    assert "undefined entity" in parse_ome_xml(external).error
    nested = b"<OME>" + b"<a>" * MAX_OME_XML_DEPTH + b"</a>" * MAX_OME_XML_DEPTH + b"</OME>"
    assert parse_ome_xml(nested).error == f"elements nest more than {MAX_OME_XML_DEPTH} levels deep"
    assert parse_ome_xml(b"").error is not None
