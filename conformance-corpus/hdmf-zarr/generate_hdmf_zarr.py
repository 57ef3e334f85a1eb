"""Write the hdmf-zarr conformance corpus: a small valid store laid out as hdmf-zarr does, and broken copies.

Run as `python conformance-corpus/hdmf-zarr/generate_hdmf_zarr.py`. It (re)writes the stores under
conformance-corpus/hdmf-zarr/zarr-v2/ and nothing else; manifest.yaml beside this file lists each case with
the exact set of rule ids it fails. hdmf-zarr itself is not needed: groups, attributes and the JSON-codec
arrays are written as raw JSON and numcodecs-encoded chunks, numeric and string arrays with zarr-python
(zarr_format=2). Each broken case writes the valid store, then changes exactly one thing.
The tests never run this script: the stores are committed.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import zarr

HERE = Path(__file__).resolve().parent
OUT = HERE / "zarr-v2"
CASES: dict[str, Callable[[Path], None]] = {}

warnings.filterwarnings("ignore")

JSON_FILTER = numcodecs.JSON().get_config()
ROOT_ID = "6baecfc5-c7e0-4cd8-90a3-2776581a7fff"
NAMESPACE = {"namespaces": [{"name": "core", "version": "2.7.0", "schema": [{"source": "nwb.base"}]}]}
BASE = {"groups": [{"neurodata_type_def": "NWBContainer", "doc": "a container"}]}


def case(function: Callable[[Path], None]) -> Callable[[Path], None]:
    CASES[function.__name__.replace("_", "-")] = function
    return function


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4, sort_keys=True))


def group(root: Path, rel: str, attrs: dict[str, Any] | None = None) -> None:
    write_json(root / rel / ".zgroup", {"zarr_format": 2})
    if attrs:
        write_json(root / rel / ".zattrs", attrs)


def set_attrs(root: Path, rel: str, **changes: Any) -> None:
    path = root / rel / ".zattrs"
    doc = read_json(path) if path.exists() else {}
    doc.update(changes)
    write_json(path, doc)


def object_array(root: Path, rel: str, values: list[Any], attrs: dict[str, Any], codec: str = "json2") -> None:
    """A 1-d object array as hdmf-zarr writes object references: JSON codec by default, or pickle."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    filt = JSON_FILTER if codec == "json2" else {"id": "pickle", "protocol": 5}
    write_json(
        root / rel / ".zarray",
        {
            "chunks": [len(values)],
            "compressor": None,
            "dtype": "|O",
            "fill_value": 0,
            "filters": [filt],
            "order": "C",
            "shape": [len(values)],
            "zarr_format": 2,
        },
    )
    write_json(root / rel / ".zattrs", attrs)
    chunk = numcodecs.JSON().encode(arr) if codec == "json2" else pickle.dumps(arr, protocol=5)
    (root / rel / "0").write_bytes(chunk)


# A typed dataset: an hdmf-common VectorData column of object references.
GROUP_COLUMN = {
    "zarr_dtype": "object",
    "neurodata_type": "VectorData",
    "namespace": "hdmf-common",
    "object_id": "e1ec-group",
    "description": "the electrode group of each electrode",
}


# A compound zarr_dtype with a reference field, as hdmf-zarr writes TimeSeriesReferenceVectorData.
COMPOUND_DTYPE = [
    {"name": "idx_start", "dtype": "int32"},
    {"name": "count", "dtype": "int32"},
    {"name": "timeseries", "dtype": "object"},
]


def spec_string(g: zarr.Group, name: str, text: str) -> None:
    """A cached specification file: a 0-d variable-length UTF-8 string (dtype |O, vlen-utf8)."""
    a = g.create_array(name, shape=(), dtype=str)
    a[()] = text
    a.attrs["zarr_dtype"] = "text"


@case
def valid_every_element(path: Path) -> None:
    """An NWB-like store: root markers and .specloc, cached spec, links, attribute and dataset references."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.attrs.update(
        {
            ".specloc": "specifications",
            "namespace": "core",
            "neurodata_type": "NWBFile",
            "nwb_version": "2.7.0",
            "object_id": ROOT_ID,
        }
    )
    version = root.create_group("specifications").create_group("core").create_group("2.7.0")
    spec_string(version, "namespace", json.dumps(NAMESPACE))
    spec_string(version, "nwb.base", json.dumps(BASE))
    ts = root.create_group("acquisition").create_group("ts")
    ts.attrs.update({"namespace": "core", "neurodata_type": "TimeSeries", "object_id": "0b5e-ts"})
    data = ts.create_array("data", shape=(6,), chunks=(6,), dtype="<i4", fill_value=0)
    data[:] = np.arange(6)
    data.attrs["zarr_dtype"] = "int32"
    stamps = ts.create_array("timestamps", shape=(6,), chunks=(6,), dtype="<f8", fill_value=0.0)
    stamps[:] = np.linspace(0, 1, 6)
    stamps.attrs["zarr_dtype"] = "float64"
    copy = root["acquisition"].create_group("ts_link")
    copy.attrs.update(
        {
            "namespace": "core",
            "neurodata_type": "TimeSeries",
            "object_id": "0b5e-copy",
            "zarr_link": [
                {"name": "data", "source": ".", "path": "/acquisition/ts/data", "object_id": None, "source_object_id": ROOT_ID},
                {
                    "name": "timestamps",
                    "source": ".",
                    "path": "/acquisition/ts/timestamps",
                    "object_id": None,
                    "source_object_id": ROOT_ID,
                },
            ],
        }
    )
    general = root.create_group("general")
    general.create_group("devices").create_group("probe").attrs.update(
        {"neurodata_type": "Device", "namespace": "core", "object_id": "d3v1ce"}
    )
    electrodes = general.create_group("electrodes")
    electrodes.attrs.update(
        {
            "neurodata_type": "DynamicTable",
            "namespace": "hdmf-common",
            "object_id": "e1ec-table",
            "table": {
                "value": {"path": "/general/devices/probe", "source": ".", "object_id": "d3v1ce", "source_object_id": ROOT_ID},
                "zarr_dtype": "object",
            },
        }
    )
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    object_array(path, "general/electrodes/group", [ref, ref], GROUP_COLUMN)
    # A compound dataset with a reference field (as TimeSeriesReferenceVectorData): rows of (start, count, reference).
    ts_ref = {"source": ".", "path": "/acquisition/ts", "object_id": "0b5e-ts", "source_object_id": ROOT_ID}
    object_array(path, "acquisition/ts_refs", [[0, 3, ts_ref], [3, 3, ts_ref]], {"zarr_dtype": COMPOUND_DTYPE})


def with_valid(change: Callable[[Path], None]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        valid_every_element(path)
        change(path)

    write.__name__ = change.__name__
    write.__doc__ = change.__doc__
    return case(write)


@with_valid
def specloc_not_on_root(path: Path) -> None:
    """/acquisition/ts carries .specloc, which is reserved for the root group."""
    set_attrs(path, "acquisition/ts", **{".specloc": "specifications"})


@with_valid
def specloc_missing_group(path: Path) -> None:
    """The root .specloc names "specs", which is no group of the store."""
    set_attrs(path, "", **{".specloc": "specs"})


@with_valid
def zarr_dtype_not_in_table(path: Path) -> None:
    """/acquisition/ts/data has zarr_dtype "int128", which names no type: not in the table, and no spelling hdmf-zarr writes."""
    set_attrs(path, "acquisition/ts/data", zarr_dtype="int128")


@with_valid
def link_without_path(path: Path) -> None:
    """The first zarr_link entry of /acquisition/ts_link has no path."""
    doc = read_json(path / "acquisition/ts_link/.zattrs")
    del doc["zarr_link"][0]["path"]
    write_json(path / "acquisition/ts_link/.zattrs", doc)


@with_valid
def link_target_missing(path: Path) -> None:
    """The first zarr_link entry (source ".") points at /acquisition/ts/nothing, which does not exist."""
    doc = read_json(path / "acquisition/ts_link/.zattrs")
    doc["zarr_link"][0]["path"] = "/acquisition/ts/nothing"
    write_json(path / "acquisition/ts_link/.zattrs", doc)


@with_valid
def reference_attribute_without_source(path: Path) -> None:
    """The object reference in the `table` attribute of /general/electrodes has no source."""
    doc = read_json(path / "general/electrodes/.zattrs")
    del doc["table"]["value"]["source"]
    write_json(path / "general/electrodes/.zattrs", doc)


@with_valid
def reference_attribute_target_missing(path: Path) -> None:
    """The `table` attribute of /general/electrodes references /general/devices/gone, which does not exist."""
    doc = read_json(path / "general/electrodes/.zattrs")
    doc["table"]["value"]["path"] = "/general/devices/gone"
    write_json(path / "general/electrodes/.zattrs", doc)


@with_valid
def specifications_namespace_missing(path: Path) -> None:
    """/specifications/core/2.7.0 holds nwb.base but no namespace dataset."""
    shutil.rmtree(path / "specifications/core/2.7.0/namespace")


@with_valid
def specifications_not_scalar(path: Path) -> None:
    """/specifications/core/2.7.0/nwb.base is a 1-d array of one string, not a scalar (no zarr_dtype "scalar" either)."""
    meta = read_json(path / "specifications/core/2.7.0/nwb.base/.zarray")
    meta.update(shape=[1], chunks=[1])
    write_json(path / "specifications/core/2.7.0/nwb.base/.zarray", meta)


@with_valid
def specifications_not_json(path: Path) -> None:
    """/specifications/core/2.7.0/nwb.base holds a string that is not JSON."""
    a = zarr.open_array(str(path / "specifications/core/2.7.0/nwb.base"), mode="r+", zarr_format=2)
    a[()] = "groups: [not json"


@with_valid
def reference_dataset_target_missing(path: Path) -> None:
    """The second element of /general/electrodes/group (JSON codec) references /general/devices/gone, which does not exist."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(path, "general/electrodes/group", [ref, {**ref, "path": "/general/devices/gone"}], GROUP_COLUMN)


@with_valid
def reference_dataset_pickle(path: Path) -> None:
    """/general/electrodes/group holds its object references (plain dicts) with the pickle codec, hdmf-zarr's default.

    The pickle is read as data, never unpickled: its references are checked."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(path, "general/electrodes/group", [ref, ref], GROUP_COLUMN, codec="pickle")


@with_valid
def reference_dataset_external_source(path: Path) -> None:
    """The second element of /general/electrodes/group (JSON codec) references a node of "../other.nwb.zarr".

    The reference is not followed; it is reported."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    other = {**ref, "source": "../other.nwb.zarr", "path": "/general/devices/elsewhere", "source_object_id": "f00d-other"}
    object_array(path, "general/electrodes/group", [ref, other], GROUP_COLUMN)


@with_valid
def link_external_source(path: Path) -> None:
    """The second zarr_link entry of /acquisition/ts_link has source "../other.nwb.zarr": not followed, reported."""
    doc = read_json(path / "acquisition/ts_link/.zattrs")
    doc["zarr_link"][1].update(source="../other.nwb.zarr", source_object_id="f00d-other")
    write_json(path / "acquisition/ts_link/.zattrs", doc)


@with_valid
def reference_attribute_external_source(path: Path) -> None:
    """The `table` attribute of /general/electrodes references a node of "../other.nwb.zarr": not followed, reported."""
    doc = read_json(path / "general/electrodes/.zattrs")
    doc["table"]["value"].update(source="../other.nwb.zarr", path="/general/devices/elsewhere")
    write_json(path / "general/electrodes/.zattrs", doc)


def move_spec_cache(path: Path, name: str) -> None:
    """The specification cache moved from /specifications to /<name>, and the root's .specloc says so."""
    (path / "specifications").rename(path / name)
    set_attrs(path, "", **{".specloc": name})


@with_valid
def specloc_custom_location(path: Path) -> None:
    """.specloc names "cached_specs", where the cache is; a /specifications group that is not the cache holds no namespace."""
    move_spec_cache(path, "cached_specs")
    group(path, "specifications")
    group(path, "specifications/not-a-cache")
    group(path, "specifications/not-a-cache/0.0.0")


@with_valid
def specloc_custom_namespace_missing(path: Path) -> None:
    """.specloc names "cached_specs", whose core/2.7.0 holds nwb.base but no namespace dataset."""
    move_spec_cache(path, "cached_specs")
    shutil.rmtree(path / "cached_specs/core/2.7.0/namespace")


def drop_attr(path: Path, rel: str, key: str) -> None:
    doc = read_json(path / rel / ".zattrs")
    del doc[key]
    write_json(path / rel / ".zattrs", doc)


@with_valid
def group_namespace_missing(path: Path) -> None:
    """/acquisition/ts has neurodata_type TimeSeries but no namespace."""
    drop_attr(path, "acquisition/ts", "namespace")


@with_valid
def group_object_id_missing(path: Path) -> None:
    """/acquisition/ts has neurodata_type TimeSeries but no object_id."""
    drop_attr(path, "acquisition/ts", "object_id")


@with_valid
def group_type_missing(path: Path) -> None:
    """/general/devices/probe has namespace and object_id but no neurodata_type (nor data_type)."""
    drop_attr(path, "general/devices/probe", "neurodata_type")


@with_valid
def dataset_namespace_missing(path: Path) -> None:
    """/general/electrodes/group has neurodata_type VectorData but no namespace."""
    drop_attr(path, "general/electrodes/group", "namespace")


@with_valid
def dataset_object_id_missing(path: Path) -> None:
    """/general/electrodes/group has neurodata_type VectorData but no object_id."""
    drop_attr(path, "general/electrodes/group", "object_id")


@with_valid
def dataset_type_not_string(path: Path) -> None:
    """/general/electrodes/group has neurodata_type ["VectorData"], a list, not a string."""
    set_attrs(path, "general/electrodes/group", neurodata_type=["VectorData"])


# ---------------------------------------------------------------------------------------------- what hdmf-zarr does
@with_valid
def valid_relative_paths(path: Path) -> None:
    """Link, attribute and dataset references with paths without a leading "/": hdmf-zarr resolves them from the root."""
    doc = read_json(path / "acquisition/ts_link/.zattrs")
    for link in doc["zarr_link"]:
        link["path"] = link["path"].lstrip("/")
    write_json(path / "acquisition/ts_link/.zattrs", doc)
    doc = read_json(path / "general/electrodes/.zattrs")
    doc["table"]["value"]["path"] = "general/devices/probe"
    write_json(path / "general/electrodes/.zattrs", doc)
    ref = {"source": ".", "path": "general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(path, "general/electrodes/group", [ref, ref], GROUP_COLUMN)


@with_valid
def zarr_dtype_scalar_and_bytes(path: Path) -> None:
    """As hdmf-zarr writes them: a cached spec as a one-element array marked zarr_dtype "scalar", and "bytes" on a
    byte-string dataset; neither value is in the dtype mappings table (a SHOULD; the reader reads both back)."""
    root = zarr.open_group(str(path), mode="r+", zarr_format=2)
    version = root["specifications/core/2.7.0"]
    del version["nwb.base"]
    a = version.create_array("nwb.base", shape=(1,), dtype=str)
    a[0] = json.dumps(BASE)
    a.attrs["zarr_dtype"] = "scalar"
    b = root.create_array("file_create_date", shape=(1,), dtype="|S19")
    b[0] = b"2024-01-01T00:00:00"
    b.attrs["zarr_dtype"] = "bytes"


# ---------------------------------------------------------------------------------------------- references
@with_valid
def compound_reference_target_missing(path: Path) -> None:
    """A compound dataset (zarr_dtype with a reference field, as hdmf-zarr writes TimeSeriesReferenceVectorData) whose
    second row references /acquisition/gone, which does not exist."""
    ok = {"source": ".", "path": "/acquisition/ts", "object_id": "0b5e-ts", "source_object_id": ROOT_ID}
    rows = [[0, 3, ok], [3, 3, {**ok, "path": "/acquisition/gone"}]]
    shutil.rmtree(path / "acquisition/ts_refs")
    object_array(path, "acquisition/ts_refs", rows, {"zarr_dtype": COMPOUND_DTYPE})


@with_valid
def reference_dataset_ref_dtype_target_missing(path: Path) -> None:
    """/general/electrodes/group says zarr_dtype "reference" (a synonym the dtype table gives for object) and its
    second element references /general/devices/gone, which does not exist."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(
        path,
        "general/electrodes/group",
        [ref, {**ref, "path": "/general/devices/gone"}],
        {**GROUP_COLUMN, "zarr_dtype": "reference"},
    )


@with_valid
def reference_dataset_unmarked(path: Path) -> None:
    """/general/electrodes/group holds reference objects (JSON codec) but has no zarr_dtype."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(path, "general/electrodes/group", [ref, ref], {k: v for k, v in GROUP_COLUMN.items() if k != "zarr_dtype"})


@with_valid
def reference_dataset_dtype_contradicts(path: Path) -> None:
    """/acquisition/ts/data (stored <i4) says zarr_dtype "object": an integer dtype cannot hold reference objects."""
    set_attrs(path, "acquisition/ts/data", zarr_dtype="object")


@with_valid
def reference_attribute_unmarked(path: Path) -> None:
    """The `table` attribute of /general/electrodes holds the bare reference object, without {zarr_dtype, value}."""
    doc = read_json(path / "general/electrodes/.zattrs")
    doc["table"] = doc["table"]["value"]
    write_json(path / "general/electrodes/.zattrs", doc)


# ---------------------------------------------------------------------------------------------- cached specifications
@with_valid
def specifications_version_missing(path: Path) -> None:
    """/specifications/core holds namespace and nwb.base directly: the <version> level is missing."""
    version = path / "specifications/core/2.7.0"
    for name in ("namespace", "nwb.base"):
        (version / name).rename(path / "specifications/core" / name)
    shutil.rmtree(version)


@with_valid
def zarr_dtype_storage_mismatch(path: Path) -> None:
    """/acquisition/ts/timestamps (float64, "<f8") says zarr_dtype "float32" (a SHOULD: the table's single precision)."""
    set_attrs(path, "acquisition/ts/timestamps", zarr_dtype="float32")


@with_valid
def specifications_source_missing(path: Path) -> None:
    """The cached core namespace lists source nwb.base, but /specifications/core/2.7.0/nwb.base is not stored."""
    shutil.rmtree(path / "specifications/core/2.7.0/nwb.base")


@with_valid
def specifications_source_with_extension_missing(path: Path) -> None:
    """The cached namespace lists the sources nwb.base and nwb.misc.yaml; /specifications/core/2.7.0 has no nwb.misc."""
    a = zarr.open_array(str(path / "specifications/core/2.7.0/namespace"), mode="r+", zarr_format=2)
    namespace = json.loads(json.dumps(NAMESPACE))
    namespace["namespaces"][0]["schema"].append({"source": "nwb.misc.yaml"})
    a[()] = json.dumps(namespace)


# ---------------------------------------------------------------------------------------------- the root
@with_valid
def root_specloc_missing(path: Path) -> None:
    """The root (namespace core, neurodata_type NWBFile) has no .specloc, though the specifications are cached."""
    drop_attr(path, "", ".specloc")


@with_valid
def root_namespace_and_specloc_missing(path: Path) -> None:
    """The root says neurodata_type NWBFile but has neither namespace nor .specloc."""
    drop_attr(path, "", ".specloc")
    drop_attr(path, "", "namespace")


# ---------------------------------------------------------------------------------------------- found unchecked (#37)
@with_valid
def specifications_version_renamed(path: Path) -> None:
    """/specifications/core/2.7.0 renamed 2.6.0; the cached namespace document still says core 2.7.0."""
    (path / "specifications/core/2.7.0").rename(path / "specifications/core/2.6.0")


@with_valid
def specifications_namespace_renamed(path: Path) -> None:
    """/specifications/core renamed kore; the cached namespace document still says core 2.7.0."""
    (path / "specifications/core").rename(path / "specifications/kore")


@with_valid
def reference_attribute_wrapper_unmarked(path: Path) -> None:
    """The `table` attribute of /general/electrodes is {"value": reference} without its zarr_dtype: read as a plain dict."""
    doc = read_json(path / "general/electrodes/.zattrs")
    del doc["table"]["zarr_dtype"]
    write_json(path / "general/electrodes/.zattrs", doc)


@with_valid
def reference_dataset_pickle_target_missing(path: Path) -> None:
    """The second element of /general/electrodes/group (pickle codec, plain dicts) references /general/devices/gone."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(path, "general/electrodes/group", [ref, {**ref, "path": "/general/devices/gone"}], GROUP_COLUMN, codec="pickle")


def zarr_reference_pickle(values: list[dict[str, Any]]) -> bytes:
    """A chunk's bytes as hdmf-zarr's pickle writes them: an object array of hdmf_zarr.utils.ZarrReference objects (a dict
    subclass: the global, then NEWOBJ and SETITEMS for each element). hdmf_zarr is never imported: a stand-in class,
    named as the real one, is pickled in its place from a module object that exists only while it is pickled."""
    module = types.ModuleType("hdmf_zarr.utils")

    class ZarrReference(dict):
        pass

    ZarrReference.__module__, ZarrReference.__qualname__ = module.__name__, "ZarrReference"
    module.ZarrReference = ZarrReference  # type: ignore[attr-defined]
    arr = np.empty(len(values), dtype=object)
    arr[:] = [ZarrReference(v) for v in values]
    package = types.ModuleType("hdmf_zarr")  # pickle imports the package first
    package.utils = module  # type: ignore[attr-defined]
    stand_ins = {"hdmf_zarr": package, "hdmf_zarr.utils": module}
    assert not set(stand_ins) & set(sys.modules), "hdmf_zarr is imported: the stand-in would shadow it"
    sys.modules.update(stand_ins)
    try:
        return pickle.dumps(arr, protocol=4)
    finally:
        for name in stand_ins:
            del sys.modules[name]


@with_valid
def reference_dataset_pickle_class(path: Path) -> None:
    """/general/electrodes/group holds its references as hdmf-zarr writes them with pickle: hdmf_zarr.utils.ZarrReference
    objects, which unpickling imports hdmf_zarr to rebuild (a reader without it cannot). The pickle is read as data,
    never unpickled: its chunk is not read, and the class it calls is named."""
    ref = {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce", "source_object_id": ROOT_ID}
    shutil.rmtree(path / "general/electrodes/group")
    object_array(path, "general/electrodes/group", [ref, ref], GROUP_COLUMN, codec="pickle")
    meta = read_json(path / "general/electrodes/group/.zarray")
    meta["filters"] = [{"id": "pickle", "protocol": 4}]
    write_json(path / "general/electrodes/group/.zarray", meta)
    (path / "general/electrodes/group/0").write_bytes(zarr_reference_pickle([ref, ref]))


def main(names: list[str]) -> None:
    """Write every case, or only the cases named."""
    OUT.mkdir(exist_ok=True)
    for name, write in CASES.items():
        if names and name not in names:
            continue
        path = OUT / f"{name}.zarr"
        shutil.rmtree(path, ignore_errors=True)
        write(path)
        print(path.relative_to(HERE.parent))


if __name__ == "__main__":
    main(sys.argv[1:])
