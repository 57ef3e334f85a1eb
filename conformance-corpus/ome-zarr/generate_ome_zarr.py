"""Write the OME-Zarr conformance stores: 0.4 on Zarr v2 and 0.5 on Zarr v3, written by ome-zarr-py, and the
same stores with one change each (the manifest lists the rules each one fails).

Run with ome-zarr-py installed (it is no dependency of spec-validate), from this folder:
    python -m venv /tmp/venv-ome && /tmp/venv-ome/bin/pip install ome-zarr==0.18.0
    /tmp/venv-ome/bin/python generate_ome_zarr.py
`python generate_ome_zarr.py NAME[,NAME...]` writes only those changed stores, from the committed valid stores
(ome-zarr-py is then not needed). The stores are committed; the tests never run this script.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import zarr

try:  # the writer of the valid stores; the changed stores of `main(only)` are made from the committed ones without it
    from ome_zarr.format import FormatV04, FormatV05
    from ome_zarr.writer import write_image, write_labels, write_plate_metadata, write_well_metadata
except ImportError:
    FormatV04 = FormatV05 = None

HERE = Path(__file__).resolve().parent
LAYOUTS = {"0.4": ("zarr-v2", 2, FormatV04), "0.5": ("zarr-v3", 3, FormatV05)}
IMAGE = "A/1/0"  # the field of view that carries labels and omero in the plate stores
LABEL = IMAGE + "/labels/cells"


def image(group: zarr.Group, fmt, labels: bool) -> None:
    """A 2-channel 16x16 image in two levels, chunked 1x8x8 (1x16x16 for the label image of the same levels)."""
    data = (np.arange(2 * 16 * 16) % 7).astype("uint8").reshape(2, 16, 16)
    write_image(data, group, scale_factors=[2], axes="cyx", fmt=fmt, storage_options={"chunks": (1, 8, 8)})
    if labels:
        cells = (np.arange(16 * 16) % 3).astype("uint8").reshape(1, 16, 16)
        write_labels(
            cells,
            group,
            name="cells",
            scaler=None,
            scale_factors=[2],
            axes="cyx",
            fmt=fmt,
            storage_options={"chunks": (1, 16, 16)},
            label_metadata={
                "colors": [{"label-value": 1, "rgba": [255, 0, 0, 255]}, {"label-value": 2, "rgba": [0, 255, 0, 255]}],
                "properties": [
                    {"label-value": 1, "class": "cell"},
                    {"label-value": 2, "class": "nucleus"},
                    {"label-value": 0, "class": "background"},  # every value the label image holds is described
                ],
            },
        )


def write_image_store(path: Path, version: str) -> None:
    _, zf, fmt = LAYOUTS[version]
    image(zarr.open_group(str(path), mode="w", zarr_format=zf), fmt(), labels=True)


def write_plate_store(path: Path, version: str) -> None:
    """One row, two columns, one field of view per well; the first field has labels."""
    _, zf, fmt = LAYOUTS[version]
    root = zarr.open_group(str(path), mode="w", zarr_format=zf)
    write_plate_metadata(
        root,
        ["A"],
        ["1", "2"],
        ["A/1", "A/2"],
        fmt=fmt(),
        field_count=1,
        name="plate",
        acquisitions=[{"id": 0, "name": "first", "maximumfieldcount": 1}],
    )
    for column in ("1", "2"):
        well = root.require_group("A").require_group(column)
        write_well_metadata(well, [{"path": "0", "acquisition": 0}], fmt=fmt())
        image(well.require_group("0"), fmt(), labels=column == "1")


# ------------------------------------------------------------------------------------------------ editing documents
def _doc_key(store: Path, node: str, version: str, array: bool) -> Path:
    base = store / node if node else store
    if version == "0.5":
        return base / "zarr.json"
    return base / (".zarray" if array else ".zattrs")


def edit_ome(store: Path, node: str, version: str, fn: Callable[[dict], None]) -> None:
    """Change the OME-Zarr metadata of a group (0.4: its .zattrs; 0.5: attributes.ome of its zarr.json)."""
    key = _doc_key(store, node, version, array=False)
    doc = json.loads(key.read_text())
    fn(doc["attributes"]["ome"] if version == "0.5" else doc)
    key.write_text(json.dumps(doc, indent=2))


def edit_array(store: Path, node: str, version: str, fn: Callable[[dict], None]) -> None:
    key = _doc_key(store, node, version, array=True)
    doc = json.loads(key.read_text())
    fn(doc)
    key.write_text(json.dumps(doc, indent=2))


def complete(store: Path, version: str) -> None:
    """What ome-zarr-py leaves out and the spec asks for (SHOULD): each image's downscaling `type` and `metadata`;
    plus omero rendering metadata on the first field (optional, present here so its clauses are checked)."""
    for node in [p.parent for p in store.rglob(".zattrs" if version == "0.4" else "zarr.json")]:
        rel = str(node.relative_to(store)) if node != store else ""
        doc = (
            json.loads(_doc_key(store, rel, version, array=False).read_text())
            if (node / (".zattrs" if version == "0.4" else "zarr.json")).exists()
            else {}
        )
        ome = doc.get("attributes", {}).get("ome", {}) if version == "0.5" else doc
        if "multiscales" in ome:

            def add(o):
                for axis in o["multiscales"][0]["axes"]:
                    if axis.get("type") == "space":
                        axis["unit"] = "micrometer"
                o["multiscales"][0]["type"] = "nearest" if "image-label" in o else "resize"
                o["multiscales"][0]["metadata"] = {"method": "ome_zarr.scale", "version": "0.18.0"}

            edit_ome(store, rel, version, add)

    def omero(o):
        window = {"min": 0, "max": 255, "start": 0, "end": 6}
        o["omero"] = {"channels": [{"color": "FF0000", "window": window}, {"color": "00FF00", "window": dict(window)}]}

    edit_ome(store, IMAGE, version, omero)


OME_NS = "http://www.openmicroscopy.org/Schemas/OME/2016-06"


def write_ome_xml(store: Path, images: int, data: str = "<MetadataOnly/>") -> None:
    """OME/METADATA.ome.xml as bioformats2raw writes it: one Image per series (2 channels of 16x16 uint8), each
    Pixels holding `<MetadataOnly/>` (the pixels are in the Zarr arrays); `data` replaces it in the last Image."""
    body = []
    for i in range(images):
        channels = "".join(f'<Channel ID="Channel:{i}:{c}" SamplesPerPixel="1"><LightPath/></Channel>' for c in range(2))
        held = data if i == images - 1 else "<MetadataOnly/>"
        body.append(
            f'<Image ID="Image:{i}" Name="{i}"><Pixels BigEndian="false" DimensionOrder="XYZCT" ID="Pixels:{i}" '
            f'SizeC="2" SizeT="1" SizeX="16" SizeY="16" SizeZ="1" Type="uint8">{channels}{held}</Pixels></Image>'
        )
    (store / "OME").mkdir(exist_ok=True)
    (store / "OME" / "METADATA.ome.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<OME xmlns="{OME_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'Creator="spec-validate conformance corpus" xsi:schemaLocation="{OME_NS} {OME_NS}/ome.xsd">' + "".join(body) + "</OME>\n"
    )


def write_bf2raw_store(path: Path, version: str) -> None:
    """bioformats2raw's layout: a root marked with the layout, images 0 and 1, and an OME group listing them, with the
    OME-XML of both (OME/METADATA.ome.xml)."""
    _, zf, fmt = LAYOUTS[version]
    root = zarr.open_group(str(path), mode="w", zarr_format=zf)
    if version == "0.5":
        root.attrs["ome"] = {"version": "0.5", "bioformats2raw.layout": 3}
        root.require_group("OME").attrs["ome"] = {"version": "0.5", "series": ["0", "1"]}
    else:
        root.attrs["bioformats2raw.layout"] = 3
        root.require_group("OME").attrs["series"] = ["0", "1"]
    for name in ("0", "1"):
        image(root.require_group(name), fmt(), labels=False)
    for name in ("0", "1"):

        def add(o):
            for axis in o["multiscales"][0]["axes"]:
                if axis.get("type") == "space":
                    axis["unit"] = "micrometer"
            o["multiscales"][0]["type"] = "resize"
            o["multiscales"][0]["metadata"] = {"method": "ome_zarr.scale"}

        edit_ome(path, name, version, add)
    write_ome_xml(path, 2)


# ------------------------------------------------------------------------------------------------ one change each
def _del(key):
    return lambda o: o.pop(key)


def _ms(fn):
    return lambda o: fn(o["multiscales"][0])


def _swap_axes(ms):
    ms["axes"][0], ms["axes"][1] = ms["axes"][1], ms["axes"][0]


def _chunks(version):
    def fn(doc):
        if version == "0.5":
            doc["chunk_grid"]["configuration"]["chunk_shape"] = doc["chunk_grid"]["configuration"]["chunk_shape"][:-1]
        else:
            doc["chunks"] = doc["chunks"][:-1]

    return fn


def _one_based(o):
    for well in o["plate"]["wells"]:
        well.update(rowIndex=well["rowIndex"] + 1, columnIndex=well["columnIndex"] + 1)


def _four_dims(version):
    def fn(doc):
        doc["shape"] = [1, *doc["shape"]]
        if version == "0.5":
            grid = doc["chunk_grid"]["configuration"]
            grid["chunk_shape"] = [1, *grid["chunk_shape"]]
            doc["dimension_names"] = ["t", *doc["dimension_names"]]
        else:
            doc["chunks"] = [1, *doc["chunks"]]

    return fn


# name -> (what, how): `how(store, version)` changes the copied valid store.
MUTATIONS: dict[str, tuple[str, Callable[[Path, str], None]]] = {
    "chunks-length": (
        "A/1/0/s0 has one chunk length fewer than its shape.",
        lambda s, v: edit_array(s, IMAGE + "/s0", v, _chunks(v)),
    ),
    "missing-well": ("Well A/2, which the plate lists, is deleted.", lambda s, v: shutil.rmtree(s / "A" / "2")),
    "scale-wrong-length": (
        "The first level's scale of A/1/0 has 2 values for 3 axes.",
        lambda s, v: edit_ome(
            s, IMAGE, v, _ms(lambda m: m["datasets"][0]["coordinateTransformations"][0].update(scale=[1.0, 1.0]))
        ),
    ),
    "axes-wrong-order": (
        "A/1/0's axes list y before c (space before channel).",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(_swap_axes)),
    ),
    "axes-missing": ("A/1/0's multiscales has no axes.", lambda s, v: edit_ome(s, IMAGE, v, _ms(_del("axes")))),
    "axes-six": (
        "A/1/0's axes are repeated: six names for arrays of three dimensions.",
        lambda s, v: edit_ome(
            s, IMAGE, v, _ms(lambda m: m.update(axes=[dict(a, name=a["name"] + str(i)) for i in (1, 2) for a in m["axes"]]))
        ),
    ),
    "axes-name-repeated": (
        "A/1/0's x axis is named y.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["axes"][2].update(name="y"))),
    ),
    "axes-no-name": (
        "A/1/0's first axis has no name.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["axes"][0].pop("name"))),
    ),
    "axes-three-channels": (
        "A/1/0's y axis is of type channel: two channel axes, one space axis.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["axes"][1].update(type="channel"))),
    ),
    "axes-no-type": (
        "A/1/0's channel axis has no type.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["axes"][0].pop("type"))),
    ),
    "axes-custom-type": (
        "A/1/0's channel axis has type 'wavelength'.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["axes"][0].update(type="wavelength"))),
    ),
    "axes-no-unit": ("A/1/0's x axis has no unit.", lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["axes"][2].pop("unit")))),
    "axes-unit-unknown": (
        "A/1/0's y and x axes have unit 'um' (not 'micrometer').",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: [a.update(unit="um") for a in m["axes"][1:]])),
    ),
    "axes-xyz": (
        "A/1/0's axes are three space axes named x, y, z, in that order.",
        lambda s, v: edit_ome(
            s, IMAGE, v, _ms(lambda m: m.update(axes=[{"name": n, "type": "space", "unit": "micrometer"} for n in "xyz"]))
        ),
    ),
    "datasets-missing": ("A/1/0's multiscales has no datasets.", lambda s, v: edit_ome(s, IMAGE, v, _ms(_del("datasets")))),
    "dataset-no-path": (
        "A/1/0's first dataset has no path.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"][0].pop("path"))),
    ),
    "dataset-path-missing": (
        "A/1/0's second dataset path names s9, which does not exist.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"][1].update(path="s9"))),
    ),
    "datasets-smallest-first": (
        "A/1/0 lists its datasets smallest first (with their transformations).",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"].reverse())),
    ),
    "dataset-no-transformations": (
        "A/1/0's first dataset has no coordinateTransformations.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"][0].pop("coordinateTransformations"))),
    ),
    "transformation-no-type": (
        "A/1/0's first translation has no type.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"][0]["coordinateTransformations"][1].pop("type"))),
    ),
    "transformation-affine": (
        "A/1/0's first translation has type 'affine'.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"][0]["coordinateTransformations"][1].update(type="affine"))),
    ),
    "transformation-identity": (
        "A/1/0's first dataset has an identity transformation after its scale and translation.",
        lambda s, v: edit_ome(
            s, IMAGE, v, _ms(lambda m: m["datasets"][0]["coordinateTransformations"].append({"type": "identity"}))
        ),
    ),
    "two-scales": (
        "A/1/0's first dataset has a second scale.",
        lambda s, v: edit_ome(
            s,
            IMAGE,
            v,
            _ms(lambda m: m["datasets"][0]["coordinateTransformations"].append({"type": "scale", "scale": [1.0, 1.0, 1.0]})),
        ),
    ),
    "translation-first": (
        "A/1/0's first dataset lists its translation before its scale.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(lambda m: m["datasets"][0]["coordinateTransformations"].reverse())),
    ),
    "scale-not-halved": (
        "A/1/0's second level, half the size, has the first level's scale.",
        lambda s, v: edit_ome(
            s, IMAGE, v, _ms(lambda m: m["datasets"][1]["coordinateTransformations"][0].update(scale=[1.0, 1.0, 1.0]))
        ),
    ),
    "multiscales-no-version": (
        "A/1/0's multiscales has no version (the plate still declares 0.4).",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(_del("version"))),
    ),
    "dataset-four-dimensions": (
        "A/1/0/s1 is stored with four dimensions (1, 2, 8, 8); s0 has three.",
        lambda s, v: edit_array(s, IMAGE + "/s1", v, _four_dims(v)),
    ),
    "multiscales-no-name": ("A/1/0's multiscales has no name.", lambda s, v: edit_ome(s, IMAGE, v, _ms(_del("name")))),
    "multiscales-no-type": ("A/1/0's multiscales has no type.", lambda s, v: edit_ome(s, IMAGE, v, _ms(_del("type")))),
    "multiscales-no-metadata": (
        "A/1/0's multiscales has no metadata.",
        lambda s, v: edit_ome(s, IMAGE, v, _ms(_del("metadata"))),
    ),
    "omero-no-channels": (
        "A/1/0's omero has no channels.",
        lambda s, v: edit_ome(s, IMAGE, v, lambda o: o["omero"].pop("channels")),
    ),
    "omero-color-name": (
        "A/1/0's first channel color is 'red'.",
        lambda s, v: edit_ome(s, IMAGE, v, lambda o: o["omero"]["channels"][0].update(color="red")),
    ),
    "omero-no-window": (
        "A/1/0's first channel has no window.",
        lambda s, v: edit_ome(s, IMAGE, v, lambda o: o["omero"]["channels"][0].pop("window")),
    ),
    "omero-window-no-max": (
        "A/1/0's first window has no max.",
        lambda s, v: edit_ome(s, IMAGE, v, lambda o: o["omero"]["channels"][0]["window"].pop("max")),
    ),
    "omero-window-no-end": (
        "A/1/0's first window has no end.",
        lambda s, v: edit_ome(s, IMAGE, v, lambda o: o["omero"]["channels"][0]["window"].pop("end")),
    ),
    "labels-no-list": ("A/1/0/labels has no labels list.", lambda s, v: edit_ome(s, IMAGE + "/labels", v, _del("labels"))),
    "labels-list-missing": (
        "A/1/0/labels lists 'nuclei', which does not exist.",
        lambda s, v: edit_ome(s, IMAGE + "/labels", v, lambda o: o["labels"].append("nuclei")),
    ),
    "label-bool": (
        "The label image's levels are of data type bool.",
        lambda s, v: [
            edit_array(s, f"{LABEL}/{lv}", v, lambda d: d.update(data_type="bool", fill_value=False)) for lv in ("s0", "s1")
        ],
    ),
    "label-one-level": (
        "The label image lists one level; the image has two.",
        lambda s, v: edit_ome(s, LABEL, v, _ms(lambda m: m["datasets"].pop())),
    ),
    "label-no-colors": (
        "The label image's image-label has no colors.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"].pop("colors")),
    ),
    "label-no-version": (
        "The label image's image-label has no version.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"].pop("version")),
    ),
    "label-color-no-value": (
        "The first color has no label-value.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"]["colors"][0].pop("label-value")),
    ),
    "label-rgba-256": (
        "The first color's rgba holds 256.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"]["colors"][0].update(rgba=[256, 0, 0, 255])),
    ),
    "label-colors-repeated": (
        "Both colors are for label-value 1.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"]["colors"][1].update({"label-value": 1})),
    ),
    "label-properties-not-list": (
        "The label image's properties is one object, not a list.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"].update(properties={"label-value": 1})),
    ),
    "label-property-no-value": (
        "The first property has no label-value.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"]["properties"][0].pop("label-value")),
    ),
    "label-source-string": (
        "image-label's source is the string '../../'.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"].update(source="../../")),
    ),
    "label-source-image-list": (
        "image-label's source.image is a list.",
        lambda s, v: edit_ome(s, LABEL, v, lambda o: o["image-label"].update(source={"image": ["../../"]})),
    ),
    "plate-no-columns": ("The plate has no columns.", lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].pop("columns"))),
    "plate-column-no-name": (
        "The plate's second column has no name.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["columns"][1].pop("name")),
    ),
    "plate-columns-repeated": (
        "The plate's columns are named 1 and 1.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["columns"][1].update(name="1")),
    ),
    "plate-no-rows": ("The plate has no rows.", lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].pop("rows"))),
    "plate-row-no-name": (
        "The plate's row has no name.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["rows"][0].pop("name")),
    ),
    "plate-row-name-dash": (
        "The plate's row is named 'A-' (not alphanumeric).",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["rows"][0].update(name="A-")),
    ),
    "plate-no-wells": ("The plate has no wells.", lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].pop("wells"))),
    "plate-well-no-path": (
        "The plate's second well has no path.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["wells"][1].pop("path")),
    ),
    "plate-well-path-column-unknown": (
        "The plate's second well path is A/3; the plate has columns 1 and 2.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["wells"][1].update(path="A/3")),
    ),
    "plate-well-no-indices": (
        "The plate's second well has no columnIndex.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["wells"][1].pop("columnIndex")),
    ),
    "plate-well-index-wrong": (
        "The plate's second well (A/2) has columnIndex 0, the index of column 1.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["wells"][1].update(columnIndex=0)),
    ),
    "plate-acquisition-negative": (
        "The plate's acquisition id is -1.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["acquisitions"][0].update(id=-1)),
    ),
    "plate-no-field-count": (
        "The plate has no field_count.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].pop("field_count")),
    ),
    "plate-no-name": ("The plate has no name.", lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].pop("name"))),
    "plate-no-version": ("The plate has no version.", lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].pop("version"))),
    "well-no-images": ("Well A/2 has no images list.", lambda s, v: edit_ome(s, "A/2", v, lambda o: o["well"].pop("images"))),
    "well-image-no-path": (
        "Well A/2's field has no path.",
        lambda s, v: edit_ome(s, "A/2", v, lambda o: o["well"]["images"][0].pop("path")),
    ),
    "well-field-missing": (
        "Well A/2 lists field 1, which does not exist.",
        lambda s, v: edit_ome(s, "A/2", v, lambda o: o["well"]["images"].append({"path": "1", "acquisition": 0})),
    ),
    "well-fields-repeated": (
        "Well A/2 lists field 0 twice.",
        lambda s, v: edit_ome(s, "A/2", v, lambda o: o["well"]["images"].append({"path": "0", "acquisition": 0})),
    ),
    "well-no-version": ("Well A/2 has no version.", lambda s, v: edit_ome(s, "A/2", v, lambda o: o["well"].pop("version"))),
    "version-mixed": (
        "Well A/2's ome object declares version 0.4.",
        lambda s, v: edit_ome(s, "A/2", v, lambda o: o.update(version="0.4")),
    ),
    "dimension-names-missing": (
        "A/1/0/s0's zarr.json has no dimension_names.",
        lambda s, v: edit_array(s, IMAGE + "/s0", v, lambda d: d.pop("dimension_names")),
    ),
    "dimension-names-differ": (
        "A/1/0/s1's dimension_names are c, x, y.",
        lambda s, v: edit_array(s, IMAGE + "/s1", v, lambda d: d.update(dimension_names=["c", "x", "y"])),
    ),
    "plate-acquisitions-object": (
        "The plate's acquisitions is one object, not a list.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"].update(acquisitions={"id": 0})),
    ),
    "plate-acquisition-no-name": (
        "The plate's acquisition has no name.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["acquisitions"][0].pop("name")),
    ),
    "plate-acquisition-fieldcount-zero": (
        "The plate's acquisition has maximumfieldcount 0.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["acquisitions"][0].update(maximumfieldcount=0)),
    ),
    "plate-acquisition-description-number": (
        "The plate's acquisition has description 5, a number.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["acquisitions"][0].update(description=5)),
    ),
    "plate-acquisition-starttime-string": (
        "The plate's acquisition has starttime '2024-01-01', a date string, not an epoch integer.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["acquisitions"][0].update(starttime="2024-01-01")),
    ),
    "plate-well-path-trailing": (
        "The plate's second well path is 'A/2/', with a trailing separator.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["wells"][1].update(path="A/2/")),
    ),
    "plate-well-indices-one-based": (
        "The plate's wells count rowIndex and columnIndex from 1.",
        lambda s, v: edit_ome(s, "", v, _one_based),
    ),
    "plate-rows-case-collision": (
        "The plate defines rows A and a.",
        lambda s, v: edit_ome(s, "", v, lambda o: o["plate"]["rows"].append({"name": "a"})),
    ),
    "plate-row-undefined": (
        "Row group A is copied to B, a row the plate does not define.",
        lambda s, v: shutil.copytree(s / "A", s / "B"),
    ),
    "plate-column-undefined": (
        "Well group A/2 is copied to A/3, a column the plate does not define.",
        lambda s, v: shutil.copytree(s / "A" / "2", s / "A" / "3"),
    ),
    "plate-row-empty": (
        "The plate defines row B, and an empty group B is present.",
        lambda s, v: [edit_ome(s, "", v, lambda o: o["plate"]["rows"].append({"name": "B"})), add_group(s, "B", v)],
    ),
    "plate-well-empty": (
        "The plate defines column 3, and an empty group A/3 is present.",
        lambda s, v: [edit_ome(s, "", v, lambda o: o["plate"]["columns"].append({"name": "3"})), add_group(s, "A/3", v)],
    ),
    "bioformats2raw-plate-no-plate": (
        "The root's plate metadata is replaced by bioformats2raw.layout 3: a bioformats2raw plate without plate metadata.",
        lambda s, v: edit_ome(s, "", v, lambda o: [o.pop("plate"), o.update({"bioformats2raw.layout": 3})]),
    ),
    "well-no-well-metadata": (
        "Well group A/2, which the plate lists, has no well metadata.",
        lambda s, v: edit_ome(s, "A/2", v, _del("well")),
    ),
    "well-acquisition-missing": (
        "The plate lists a second acquisition; well A/2's field names none.",
        lambda s, v: [
            edit_ome(s, "", v, lambda o: o["plate"]["acquisitions"].append({"id": 1, "name": "second", "maximumfieldcount": 1})),
            edit_ome(s, "A/2", v, lambda o: o["well"]["images"][0].pop("acquisition")),
        ],
    ),
    "valid-bioformats2raw-plate": (
        "The plate is also a bioformats2raw fileset: the root carries bioformats2raw.layout 3, its OME group lists the "
        "fields of view in series.",
        lambda s, v: _bf2raw_plate(s, v, ["A/1/0", "A/2/0"]),
    ),
    "bioformats2raw-plate-no-series": (
        "The plate is also a bioformats2raw fileset whose OME group lists only A/1/0 in series, not A/2/0.",
        lambda s, v: _bf2raw_plate(s, v, ["A/1/0"]),
    ),
    "array-omero": (
        "A/1/0's omero metadata is stored in the attributes of its array s0 as well.",
        lambda s, v: _omero_on_array(s, v),
    ),
    "labels-intermediate-metadata": (
        "The label image moves to A/1/0/labels/set/cells; the group set between carries attributes.",
        lambda s, v: _intermediate(s, v),
    ),
    "labels-unlisted": (
        "A/1/0/labels lists no label image.",
        lambda s, v: edit_ome(s, IMAGE + "/labels", v, lambda o: o.update(labels=[])),
    ),
    "labels-no-image-label": (
        "The label image has no image-label.",
        lambda s, v: edit_ome(s, LABEL, v, _del("image-label")),
    ),
}


def add_group(store: Path, node: str, version: str, attrs: dict | None = None) -> None:
    """A group at `node` with the attributes `attrs` (none by default)."""
    (store / node).mkdir(parents=True, exist_ok=True)
    if version == "0.5":
        doc = {"zarr_format": 3, "node_type": "group", "attributes": attrs or {}}
        (store / node / "zarr.json").write_text(json.dumps(doc, indent=2))
    else:
        (store / node / ".zgroup").write_text(json.dumps({"zarr_format": 2}, indent=2))
        if attrs:
            (store / node / ".zattrs").write_text(json.dumps(attrs, indent=2))


def _bf2raw_plate(store: Path, version: str, series: list[str]) -> None:
    edit_ome(store, "", version, lambda o: o.update({"bioformats2raw.layout": 3}))
    add_group(store, "OME", version, {"ome": {"version": "0.5", "series": series}} if version == "0.5" else {"series": series})
    write_ome_xml(store, len(series))  # one Image per series entry: the case changes series alone


def _omero_on_array(store: Path, version: str) -> None:
    omero = json.loads((store / IMAGE / ".zattrs").read_text())["omero"]
    (store / IMAGE / "s0" / ".zattrs").write_text(json.dumps({"omero": omero}, indent=2))


def _intermediate(store: Path, version: str) -> None:
    add_group(store, IMAGE + "/labels/set", version, {"note": "segmentations of 2024"})
    shutil.move(store / LABEL, store / IMAGE / "labels" / "set" / "cells")
    edit_ome(store, IMAGE + "/labels", version, lambda o: o.update(labels=["set/cells"]))


def _without_property(value: int):
    def fn(o):
        label = o["image-label"]
        label["properties"] = [p for p in label["properties"] if p["label-value"] != value]

    return fn


# name -> (what, how), as MUTATIONS, applied to a copy of the valid store that keeps its chunks: cases about values,
# validated with --deep.
DATA_MUTATIONS: dict[str, tuple[str, Callable[[Path, str], None]]] = {
    "label-value-undescribed": (
        "A/1/0/labels/cells' properties no longer describe the label value 2, which its arrays hold.",
        lambda s, v: edit_ome(s, LABEL, v, _without_property(2)),
    ),
}
ONLY = {  # mutations of keys one version has and the other has not
    "0.4": {
        "array-omero",
        "multiscales-no-version",
        "plate-no-version",
        "well-no-version",
        "label-colors-repeated",
        "label-no-version",
    },
    "0.5": {
        "version-mixed",
        "dimension-names-missing",
        "dimension-names-differ",
        "label-bool",
        "labels-intermediate-metadata",
        "labels-unlisted",
        "labels-no-image-label",
    },
}
ONLY_OTHER = {v: set().union(*(s for w, s in ONLY.items() if w != v)) for v in ONLY}


def _bf2raw_mutations(version: str):
    def key(o):
        return o.update({"bioformats2raw.layout": 2})

    def series(o):
        return o.update(series="0")

    def no_series(o):
        o.pop("series")

    def renumber(store: Path, v: str) -> None:
        edit_ome(store, "OME", v, no_series)
        shutil.move(store / "1", store / "2")

    return {
        "bioformats2raw-layout-2": ("The root's bioformats2raw.layout is 2.", lambda s, v: edit_ome(s, "", v, key)),
        "bioformats2raw-series-string": ("The OME group's series is the string '0'.", lambda s, v: edit_ome(s, "OME", v, series)),
        "bioformats2raw-series-missing-image": (
            "The OME group's series lists 0 and 2; there is no image 2.",
            lambda s, v: edit_ome(s, "OME", v, lambda o: o.update(series=["0", "2"])),
        ),
        "valid-bioformats2raw-no-series": (
            "The OME group has no series: the images are found by their numbers, 0 and 1.",
            lambda s, v: edit_ome(s, "OME", v, no_series),
        ),
        "bioformats2raw-not-numbered": (
            "The OME group has no series, and image 1 is renamed 2: images 0 and 2.",
            renumber,
        ),
        "bioformats2raw-no-ome-xml": (
            "OME/METADATA.ome.xml is removed.",
            lambda s, v: (s / "OME" / "METADATA.ome.xml").unlink(),
        ),
        "bioformats2raw-ome-xml-bindata": (
            "OME/METADATA.ome.xml's Image 1 holds its pixels as BinData, not MetadataOnly.",
            lambda s, v: write_ome_xml(s, 2, '<BinData BigEndian="false" Length="4">AAAAAA==</BinData>'),
        ),
        "bioformats2raw-ome-xml-one-image": (
            "OME/METADATA.ome.xml has one Image; series lists 0 and 1, and images 0 and 1 are stored.",
            lambda s, v: write_ome_xml(s, 1),
        ),
    }


def _legacy(version: str):
    def declare(new):
        def fn(o):
            if version == "0.5":
                o["version"] = new
            else:
                o["plate"]["version"] = new

        return fn

    def undeclare(store: Path, v: str) -> None:
        for key in store.rglob(".zattrs" if v == "0.4" else "zarr.json"):
            doc = json.loads(key.read_text())
            ome = doc.get("attributes", {}).get("ome") if v == "0.5" else doc
            if not ome:
                continue
            ome.pop("version", None)
            for k in ("plate", "well", "image-label"):
                if isinstance(ome.get(k), dict):
                    ome[k].pop("version", None)
            for ms in ome.get("multiscales", []):
                ms.pop("version", None)
            key.write_text(json.dumps(doc, indent=2))

    return {
        "version-0.3": ("The root declares version 0.3.", lambda s, v: edit_ome(s, "", v, declare("0.3"))),
        "version-9.9": ("The root declares version 9.9.", lambda s, v: edit_ome(s, "", v, declare("9.9"))),
        "version-undeclared": ("No group declares a version.", undeclare),
    }


METADATA = {".zattrs", ".zgroup", ".zarray", "zarr.json", "METADATA.ome.xml"}


def _metadata_only(directory: str, names: list[str]) -> list[str]:
    """What a changed copy leaves out: every chunk. Its arrays read as their fill value, which Zarr allows, and the
    corpus stays small; the valid stores keep their data. Metadata (bioformats2raw's OME-XML among it) is kept."""
    here = Path(directory)
    is_array = (here / ".zarray").exists() or (
        (here / "zarr.json").exists() and json.loads((here / "zarr.json").read_text()).get("node_type") == "array"
    )
    return [n for n in names if n not in METADATA and (is_array or (here / n).is_file())]


def copy(valid: Path, path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(valid, path, ignore=_metadata_only)


def main(only: str | None = None) -> None:
    """Write every store; with `only` (case names, comma-separated), only those changed stores, from the committed
    valid stores (the writers are not run again)."""
    if only:
        names = set(only.split(","))
        for version, (folder, _, _) in LAYOUTS.items():
            out = HERE / folder
            cases = {k: m for k, m in {**MUTATIONS, **_legacy(version)}.items() if k not in ONLY_OTHER[version]}
            for name, (_, how) in cases.items():
                if name in names:
                    copy(out / "valid-every-element.zarr", out / f"{name}.zarr")
                    how(out / f"{name}.zarr", version)
            for name, (_, how) in _bf2raw_mutations(version).items():
                if name in names:
                    copy(out / "valid-bioformats2raw.zarr", out / f"{name}.zarr")
                    how(out / f"{name}.zarr", version)
        return
    for version, (folder, _, _) in LAYOUTS.items():
        out = HERE / folder
        out.mkdir(exist_ok=True)
        stores = {
            "ome-zarr-py-image": write_image_store,
            "ome-zarr-py-plate": write_plate_store,
        }
        for name, write in stores.items():
            path = out / f"{name}.zarr"
            shutil.rmtree(path, ignore_errors=True)
            write(path, version)
        valid = out / "valid-every-element.zarr"
        shutil.rmtree(valid, ignore_errors=True)
        write_plate_store(valid, version)
        complete(valid, version)
        bf2raw = out / "valid-bioformats2raw.zarr"
        shutil.rmtree(bf2raw, ignore_errors=True)
        write_bf2raw_store(bf2raw, version)
        cases = {k: m for k, m in MUTATIONS.items() if k not in ONLY_OTHER[version]}
        for name, (_, how) in {**cases, **_legacy(version)}.items():
            path = out / f"{name}.zarr"
            copy(valid, path)
            how(path, version)
        for name, (_, how) in DATA_MUTATIONS.items():
            path = out / f"{name}.zarr"
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(valid, path)
            how(path, version)
        for name, (_, how) in _bf2raw_mutations(version).items():
            path = out / f"{name}.zarr"
            copy(bf2raw, path)
            how(path, version)


if __name__ == "__main__":
    main(*sys.argv[1:])
