"""Write the Zarr v2 storage conformance corpus: a valid store written by zarr-python, and broken copies.

Run as `python conformance-corpus/zarr/generate_zarr.py`. It (re)writes the stores under
conformance-corpus/zarr/zarr-v2/ and nothing else; manifest.yaml beside this file lists each case with
the exact set of rule ids it fails. Every case is one function named like the case (`order_not_c_or_f`
writes `order-not-c-or-f.zarr`).

Broken cases write a small store with zarr-python, then edit exactly one thing in the stored JSON (or
add or remove one key), so that exactly one clause breaks. Nothing is read back through zarr-python.
"""

from __future__ import annotations

import json
import shutil
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


def case(function: Callable[[Path], None]) -> Callable[[Path], None]:
    CASES[function.__name__.replace("_", "-")] = function
    return function


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def write_json(path: Path, doc: Any) -> None:
    # allow_nan: the bare-NaN case writes the literal on purpose; every other document is plain JSON.
    path.write_text(json.dumps(doc, indent=4, sort_keys=True, allow_nan=True))


def consolidate(path: Path) -> None:
    """Write `.zmetadata` as zarr-python 2's consolidate_metadata does: a copy of every metadata document.

    Written here, not with zarr-python 3, which adds a "consolidated_metadata" key to the entries of nested
    groups that their stored `.zgroup` does not hold (the rule's writers note).
    """
    names = (".zarray", ".zgroup", ".zattrs")
    docs = {p.relative_to(path).as_posix(): read_json(p) for p in sorted(path.rglob(".z*")) if p.name in names}
    write_json(path / ".zmetadata", {"metadata": docs, "zarr_consolidated_format": 1})


@case
def valid_every_element(path: Path) -> None:
    """Nested groups with attributes, and arrays of each dtype family, written by zarr-python (zarr_format=2)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.attrs["title"] = "zarr v2 conformance store"
    sub = root.create_group("sub")
    sub.attrs["answer"] = 42
    deep = sub.create_group("deep")
    a = root.create_array("int32_2d", shape=(5, 7), chunks=(2, 3), dtype="<i4", fill_value=7)
    a[:] = np.arange(35, dtype="<i4").reshape(5, 7)
    f = root.create_array("float64_nan_fill", shape=(10,), chunks=(4,), dtype="<f8", fill_value=np.nan, order="F")
    f[:4] = np.linspace(0, 1, 4)  # chunks 1 and 2 stay absent: filled with NaN
    b = root.create_array("bool", shape=(6,), chunks=(6,), dtype="|b1", fill_value=False, compressors=None)
    b[:] = [True, False] * 3
    s = sub.create_array("bytes_S4", shape=(3,), chunks=(2,), dtype="|S4", fill_value=b"ab")
    s[:] = [b"x", b"yy", b"zzz"]
    u = sub.create_array("unicode_U5", shape=(3,), chunks=(3,), dtype="<U5", fill_value="")
    u[:] = ["a", "bb", "ccc"]
    t = sub.create_array("datetime_ns", shape=(3,), chunks=(3,), dtype="<M8[ns]")
    t[:] = np.array(["2020-01-01", "NaT", "2021-06-01"], dtype="M8[ns]")
    # zarr-python 3.1 cannot write a field with a subarray shape; tests/checks covers [name, type, shape].
    rec = np.dtype([("i", "<i4"), ("x", "<f8")])
    r = deep.create_array("structured", shape=(2,), chunks=(2,), dtype=rec)
    r[:] = np.array([(1, 0.5), (2, 1.5)], dtype=rec)
    c = deep.create_array("complex128", shape=(2,), chunks=(1,), dtype="<c16")
    c[:] = [1 + 2j, 3 - 4j]
    big = root.create_array("big_endian_u8", shape=(4,), chunks=(2,), dtype=">u8", fill_value=3)
    big[:] = [1, 2, 3, 4]
    z = root.create_array("scalar", shape=(), dtype="<f4", fill_value=0.5)
    z[()] = 1.25
    sl = root.create_array(
        "slash_separated",
        shape=(4, 4),
        chunks=(2, 2),
        dtype="<i2",
        fill_value=0,
        chunk_key_encoding={"name": "v2", "separator": "/"},
    )
    sl[:2, :] = 1
    d = root.create_array(
        "delta_filtered", shape=(8,), chunks=(4,), dtype="<i4", fill_value=0, filters=[numcodecs.Delta(dtype="<i4")]
    )
    d[:] = np.arange(8)
    v = sub.create_array("void_V8", shape=(3,), chunks=(2,), dtype="|V8", fill_value=b"\0" * 8)
    v[:] = np.array([b"abcdefgh", b"12345678", b"zzzzzzzz"], dtype="V8")
    o = sub.create_array("vlen_strings", shape=(3,), chunks=(3,), dtype=str)  # "|O" with vlen-utf8: not decoded
    o[:] = ["a", "bb", "ccc"]
    z = root.create_array(
        "zlib_compressed", shape=(10,), chunks=(4,), dtype="<f4", fill_value=0.0, compressors=numcodecs.Zlib(level=1)
    )
    z[:] = np.linspace(0, 1, 10, dtype="<f4")
    consolidate(path)


def small_store(path: Path, dtype: str = "<i4", fill_value: Any = 0, **kwargs: Any) -> Path:
    """A root group holding one array `x` of 4 elements in chunks of 2; returns the path of x/.zarray."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_array("x", shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill_value, **kwargs)
    return path / "x" / ".zarray"


def zarray_case(name: str, edit: Callable[[dict], None], doc: str, **store: Any) -> None:
    def write(path: Path) -> None:
        meta_path = small_store(path, **store)
        meta = read_json(meta_path)
        edit(meta)
        write_json(meta_path, meta)

    write.__doc__ = doc
    CASES[name] = write


def setter(key: str, value: Any) -> Callable[[dict], None]:
    return lambda meta: meta.__setitem__(key, value)


zarray_case("array-metadata-missing-order", lambda m: m.pop("order"), ".zarray without the required key order")
zarray_case("array-zarr-format-3", setter("zarr_format", 3), ".zarray says zarr_format 3")
zarray_case("array-shape-negative", setter("shape", [-4]), "shape holds a negative length")
zarray_case("array-chunks-length-mismatch", setter("chunks", [2, 2]), "a 1-d array with two chunk lengths")
zarray_case("array-dtype-unknown-kind", setter("dtype", "<x4"), "dtype kind letter x is not a NumPy kind")
zarray_case("array-compressor-without-id", setter("compressor", {"level": 1}), "compressor object has no id")
zarray_case("array-filter-without-id", setter("filters", [{"dtype": "<i4"}]), "a filter object has no id")
zarray_case("array-order-k", setter("order", "K"), "order is K, neither C nor F")
zarray_case("array-dimension-separator-dash", setter("dimension_separator", "-"), "dimension_separator is -")
zarray_case("array-extra-key", setter("storage_transformers", []), "a key the spec does not define")
zarray_case("dtype-without-byte-order", setter("dtype", "i4"), "dtype i4 has no byte order character")
zarray_case("dtype-byte-order-not-relevant", setter("dtype", "|i4"), "dtype |i4: '|' on a four-byte integer")
zarray_case("dtype-item-size-unknown", setter("dtype", "<f3"), "dtype <f3: no float has three bytes")
zarray_case(
    "dtype-datetime-without-unit", setter("dtype", "<M8"), "datetime64 dtype without [unit]", dtype="<M8[s]", fill_value=None
)
zarray_case(
    "fill-value-bare-nan",
    setter("fill_value", float("nan")),
    "float fill_value written as the bare NaN literal",
    dtype="<f8",
    fill_value=1.0,
)
zarray_case(
    "fill-value-bytes-not-base64",
    setter("fill_value", "not base64!"),
    "|S4 fill_value is not Base64",
    dtype="|S4",
    fill_value=b"ab",
)
zarray_case("fill-value-int-as-string", setter("fill_value", "0"), 'an int32 array with fill_value the string "0"')
zarray_case(
    "fill-value-complex-not-a-pair",
    setter("fill_value", 0),
    "a complex128 array with fill_value 0, not [real, imag]",
    dtype="<c16",
    fill_value=0,
)
zarray_case(
    "fill-value-datetime-as-string",
    setter("fill_value", "NaT"),
    'a datetime64[ns] array with fill_value "NaT"',
    dtype="<M8[ns]",
    fill_value=None,
)
zarray_case(
    "fill-value-void-not-base64",
    setter("fill_value", 0),
    "a |V8 array with fill_value 0, not Base64",
    dtype="|V8",
    fill_value=b"\0" * 8,
)


@case
def consolidated_stale(path: Path) -> None:
    """.zmetadata written, then an array y added and x's attributes changed: the copy is stale."""
    small_store(path)
    consolidate(path)
    root = zarr.open_group(str(path), mode="r+", zarr_format=2)
    root.create_array("y", shape=(2,), chunks=(2,), dtype="<i4", fill_value=0)
    root["x"].attrs["units"] = "m"


def chunk_store(path: Path, **kwargs: Any) -> Path:
    """x: 4 int32 elements in chunks of 2, both chunks written; returns the array's directory."""
    small_store(path, **kwargs)
    zarr.open_array(str(path / "x"), mode="r+", zarr_format=2)[:] = [1, 2, 3, 4]
    return path / "x"


@case
def chunk_truncated(path: Path) -> None:
    """Chunk x/1 (zlib) cut to half its stored bytes: it does not decompress (seen only with --deep)."""
    x = chunk_store(path, compressors=numcodecs.Zlib(level=1))
    raw = (x / "1").read_bytes()
    (x / "1").write_bytes(raw[: len(raw) // 2])


@case
def chunk_wrong_size(path: Path) -> None:
    """Chunk x/0 (no compressor) holds 12 bytes, not 2 x 4 (seen only with --deep)."""
    x = chunk_store(path, compressors=None)
    (x / "0").write_bytes((x / "0").read_bytes() + b"\0" * 4)


@case
def array_chunk_key_outside_grid(path: Path) -> None:
    """A chunk stored under key 5 of an array whose grid has 2 chunks."""
    small_store(path)
    zarr.open_array(str(path / "x"), mode="r+", zarr_format=2)[:2] = [1, 2]
    (path / "x" / "5").write_bytes((path / "x" / "0").read_bytes())


@case
def group_ancestor_missing(path: Path) -> None:
    """An array at sub/x with no sub/.zgroup: the ancestor is an implicit group."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_group("sub").create_array("x", shape=(2,), chunks=(2,), dtype="<i4", fill_value=0)
    (path / "sub" / ".zgroup").unlink()


@case
def group_ancestor_of_group_missing(path: Path) -> None:
    """A group at sub/inner with no sub/.zgroup, and no array below it."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_group("sub").create_group("inner")
    (path / "sub" / ".zgroup").unlink()


@case
def attrs_not_an_object(path: Path) -> None:
    """sub/.zattrs is a JSON list, not an object (also a metadata problem of the store)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_group("sub").attrs["a"] = 1
    write_json(path / "sub" / ".zattrs", [1, 2])


@case
def array_metadata_not_an_object(path: Path) -> None:
    """x/.zarray is a JSON list, not an object (also a metadata problem of the store)."""
    meta_path = small_store(path)
    write_json(meta_path, [2, [4], [2]])


def zgroup_case(name: str, doc_json: dict, doc: str) -> None:
    def write(path: Path) -> None:
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        root.create_group("sub").create_array("x", shape=(2,), chunks=(2,), dtype="<i4", fill_value=0)
        write_json(path / "sub" / ".zgroup", doc_json)

    write.__doc__ = doc
    CASES[name] = write


zgroup_case("group-metadata-missing-zarr-format", {}, "sub/.zgroup is an empty object")
zgroup_case("group-zarr-format-3", {"zarr_format": 3}, "sub/.zgroup says zarr_format 3")
zgroup_case("group-extra-key", {"zarr_format": 2, "attributes": {}}, "sub/.zgroup holds a key besides zarr_format")


@case
def group_bare_infinity(path: Path) -> None:
    """sub/.zgroup holds a bare Infinity token, which is not JSON (and a key besides zarr_format to carry it)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_group("sub")
    (path / "sub" / ".zgroup").write_text('{\n    "scale": Infinity,\n    "zarr_format": 2\n}')


@case
def attrs_bare_nan(path: Path) -> None:
    """sub/.zattrs holds a bare NaN token (Python's json writes it), which is not JSON."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_group("sub").attrs["a"] = 1
    (path / "sub" / ".zattrs").write_text('{\n    "a": 1,\n    "missing": NaN\n}')


@case
def array_chunks_nested_without_separator(path: Path) -> None:
    """A 2-d array whose chunks are stored under 0/0-style keys while .zarray sets no dimension_separator."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    x = root.create_array(
        "x", shape=(4, 4), chunks=(2, 2), dtype="<i4", fill_value=0, chunk_key_encoding={"name": "v2", "separator": "/"}
    )
    x[:] = np.arange(16, dtype="<i4").reshape(4, 4)
    meta = read_json(path / "x" / ".zarray")
    meta.pop("dimension_separator", None)
    write_json(path / "x" / ".zarray", meta)


@case
def valid_array_stray_files(path: Path) -> None:
    """Files in array directories that are no chunk keys: an editor's backup, .DS_Store, netcdf-c's .nczarray and .nczattrs."""
    small_store(path)
    zarr.open_array(str(path / "x"), mode="r+", zarr_format=2)[:] = [1, 2, 3, 4]
    x = path / "x"
    (x / ".zarray~").write_text((x / ".zarray").read_text())
    (x / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (x / ".nczarray").write_text('{"dimrefs": ["/dim0"], "storage": "chunked"}')
    (x / ".nczattrs").write_text('{"types": {}}')


@case
def valid_group_stray_files(path: Path) -> None:
    """Files beside groups' .zgroup that belong to no node: .DS_Store, a README, netcdf-c's .nczgroup, a folder of notes."""
    small_store(path)
    (path / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (path / "README.md").write_text("Written by hand.\n")
    (path / ".nczgroup").write_text('{"dims": {}, "vars": ["x"], "groups": []}')


@case
def valid_zstd_checksum(path: Path) -> None:
    """An array compressed by zstd whose configuration holds the `checksum` member, as zarr-python 2.18 writes it
    with numcodecs 0.13 to 0.15 (zarr-python 3 leaves a default member out): conforming (a compressor's
    configuration is the codec's own), and a fact some readers refuse."""
    meta_path = small_store(path, compressors=numcodecs.Zstd(level=3))
    zarr.open_array(str(path / "x"), mode="r+", zarr_format=2)[:] = [1, 2, 3, 4]
    meta = read_json(meta_path)
    meta["compressor"] = {"checksum": False, "id": "zstd", "level": 3}
    write_json(meta_path, meta)


def arrays_case(name: str, dtypes: dict[str, tuple[Any, Any]], doc: str) -> None:
    """A root group with one small array per entry, each's .zarray then given the dtype and fill_value named."""

    def write(path: Path) -> None:
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        for array, (dtype, fill) in dtypes.items():
            root.create_array(array, shape=(4,), chunks=(2,), dtype="<i4", fill_value=0)
            meta = read_json(path / array / ".zarray")
            meta["dtype"], meta["fill_value"] = dtype, fill
            write_json(path / array / ".zarray", meta)

    write.__doc__ = doc
    CASES[name] = write


arrays_case(
    "fill-value-outside-dtype-range",
    {"i1": ("|i1", 300), "u1": ("|u1", 256), "u8": ("<u8", 2**64)},
    "integer fill values their dtype cannot hold: 300 for |i1, 256 for |u1, 2**64 for <u8",
)
arrays_case(
    "dtype-no-such-size",
    {"f3": ("<f3", 0.0), "i3": ("<i3", 0), "b2": ("|b2", False)},
    "typestrs naming no NumPy type: <f3, <i3, |b2",
)
arrays_case("dtype-duplicate-field", {"rec": ([["a", "<i4"], ["a", "<f8"]], None)}, "a structured dtype naming the field a twice")


@case
def keys_backslash(path: Path) -> None:
    """A directory store holding a file whose name has a backslash (a Windows path written as one key)."""
    small_store(path)
    (path / "x\\.zattrs").write_text("{}")


@case
def keys_not_ascii(path: Path) -> None:
    """An array at a path with non-ASCII characters (donn\u00e9es)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.create_array("donn\u00e9es", shape=(2,), chunks=(2,), dtype="<i4", fill_value=0)


def main(wanted: list[str]) -> None:
    OUT.mkdir(exist_ok=True)
    for name, write in CASES.items():
        if wanted and name not in wanted:
            continue
        path = OUT / f"{name}.zarr"
        shutil.rmtree(path, ignore_errors=True)
        write(path)
        print(path.relative_to(HERE.parent))


def zip_case(name: str, entries: dict[str, bytes], doc: str) -> None:
    """A zipped store holding `entries` (raw names, as a zip writer may store them) beside a valid group and array."""

    def write(path: Path) -> None:
        import zipfile

        path = path.with_suffix(".zip")
        path.unlink(missing_ok=True)
        with zipfile.ZipFile(path, "w") as z:
            # ZipInfo entries carry a fixed date, so a rerun writes the same bytes.
            z.writestr(zipfile.ZipInfo(".zgroup"), json.dumps({"zarr_format": 2}))
            z.writestr(
                zipfile.ZipInfo("x/.zarray"),
                json.dumps(
                    {
                        "zarr_format": 2,
                        "shape": [2],
                        "chunks": [2],
                        "dtype": "<i4",
                        "compressor": None,
                        "fill_value": 0,
                        "order": "C",
                        "filters": None,
                    }
                ),
            )
            for key, value in entries.items():
                z.writestr(zipfile.ZipInfo(key), value)

    write.__doc__ = doc
    CASES[name] = write


zip_case(
    "keys-not-normalized-zip",
    {"y//z/.zattrs": b"{}", "/x/.zattrs": b"{}", "../w/.zattrs": b"{}"},
    "A zipped store with entries y//z/.zattrs (an empty segment), /x/.zattrs (a leading slash) and ../w/.zattrs",
)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
