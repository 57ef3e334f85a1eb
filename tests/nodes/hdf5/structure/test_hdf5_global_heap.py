"""Global heap collections walked before the HDF5 library reads an attribute stored in one
(spec_validate.nodes.hdf5.structure.global_heap): a damaged collection, on which the library would loop forever, is
reported and its attributes never read; a sound one, and every other attribute, read as before."""

from __future__ import annotations

import contextlib
import shutil
import struct
from pathlib import Path

import h5py
import numpy as np
import pytest

from spec_validate import validate
from spec_validate.nodes.hdf5.structure import global_heap
from spec_validate.nodes.hdf5.structure.global_heap import GlobalHeaps
from spec_validate.nodes.open import open_store

REPO = Path(__file__).resolve().parents[4]
LOOPING = REPO / "tests" / "data" / "hdf5-global-heap-loop"


def collection(objects: list[tuple[int, int, bytes]], size: int = 4096) -> bytes:
    """A global heap collection of `size` bytes holding (index, stored size, data) objects, the rest free space."""
    out = bytearray(b"GCOL" + bytes([1, 0, 0, 0]) + struct.pack("<Q", size))
    for index, stored, data in objects:
        out += struct.pack("<HHIQ", index, 1, 0, stored) + data.ljust(-(-len(data) // 8) * 8, b"\0")
    if len(out) + 16 <= size:
        out += struct.pack("<HHIQ", 0, 0, 0, size - len(out))
    return bytes(out.ljust(size, b"\0"))


def heaps_over(data: bytes) -> GlobalHeaps:
    return GlobalHeaps(lambda offset, length: data[offset : offset + length], len(data), 8, 8)


def test_a_sound_collection_passes():
    assert heaps_over(collection([(1, 5, b"hello"), (2, 13, b"encoding-type")])).collection_problem(0) is None


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([(1, 5, b"hello"), (0, 0, b"")], "a free-space object of size 0"),
        ([(1, 5, b"hello"), (65535, 2**64 - 1, b"")], "claims 18446744073709551615 bytes, past the collection's end"),
        ([(1, 5000, b"x")], "claims 5000 bytes, past the collection's end"),
        ([(1, 5, b"hello"), (0, 9999, b"")], "object 0 at byte 40 claims 9999 bytes"),
    ],
    ids=["free-object-of-size-0", "size-wraps", "object-past-the-end", "free-space-past-the-end"],
)
def test_a_collection_whose_walk_would_not_end_or_run_past_it_is_damaged(objects, message):
    problem = heaps_over(collection(objects)).collection_problem(0)
    assert problem is not None and message in problem and "global heap collection at byte 0" in problem


@pytest.mark.parametrize("length", [2, 4, 8, 16])
def test_collections_of_every_length_size_are_walked(length):
    """A file's lengths (a collection's and each object's size) take 2, 4, 8 or 16 bytes (HDF5 allows 32 as well)."""

    def sized(objects: list[tuple[int, int, bytes]], size: int = 256) -> bytes:
        out = bytearray(b"GCOL" + bytes([1, 0, 0, 0]) + size.to_bytes(length, "little"))
        for index, stored, data in objects:
            out += (
                struct.pack("<HHI", index, 1, 0) + stored.to_bytes(length, "little") + data.ljust(-(-len(data) // 8) * 8, b"\0")
            )
        if len(out) + 8 + length <= size:  # the rest: one free-space object, its size counting its own header
            out += struct.pack("<HHI", 0, 0, 0) + (size - len(out)).to_bytes(length, "little")
        return bytes(out.ljust(size, b"\0"))

    def heaps(data: bytes) -> GlobalHeaps:
        return GlobalHeaps(lambda offset, n: data[offset : offset + n], len(data), 8, length)

    assert heaps(sized([(1, 5, b"hello"), (2, 3, b"abc")])).collection_problem(0) is None
    problem = heaps(sized([(1, 5, b"hello"), (0, 0, b"")])).collection_problem(0)
    assert problem is not None and "a free-space object of size 0" in problem


def _random_collection(rng: np.random.Generator) -> bytes:
    """A collection of random objects: mostly sound, sometimes with a size of 0, one past the end, an odd free-space
    object or stray bytes at the end."""
    size = int(rng.choice([64, 256, 4096]))
    objects = []
    for i in range(int(rng.integers(0, 40))):
        stored = int(rng.integers(0, 40))
        objects.append((int(rng.integers(0, 3)) and i + 1, stored, bytes(rng.integers(0, 256, stored, dtype=np.uint8))))
    if rng.random() < 0.3:
        objects.insert(int(rng.integers(0, len(objects) + 1)), (int(rng.integers(0, 3)), int(rng.integers(0, 2**16)), b""))
    return collection(objects, size)[:size]


def test_the_vectorised_walk_finds_what_the_walk_object_by_object_finds(monkeypatch):
    """`_chase`, the walk worked out for every 8-byte step at once, gives the objects the plain walk gives, or leaves a
    collection it cannot walk so (damage, odd sizes) to that walk."""
    rng = np.random.default_rng(39)
    decided = 0
    for _ in range(400):
        data = _random_collection(rng)
        fast = heaps_over(data)
        problem, objects, _ = fast._walk(0)
        with monkeypatch.context() as patched:
            patched.setattr(global_heap, "_chase", lambda *args: None)
            plain_problem, plain_objects, _ = heaps_over(data)._walk(0)
        assert problem == plain_problem
        assert (objects is None) == (plain_objects is None)
        if objects is not None:
            assert list(objects._indexes) == list(plain_objects._indexes)
            assert list(objects._headers) == list(plain_objects._headers)
        decided += global_heap._chase(data, len(data), 16) is not None
    assert 40 < decided < 400  # both ways were taken: the vectorised walk and the walk it leaves collections to


def test_a_collection_larger_than_the_bound_is_not_read(monkeypatch):
    monkeypatch.setattr(global_heap, "MOST_COLLECTION_BYTES", 1024)
    problem = heaps_over(collection([(1, 5, b"hello")])).collection_problem(0)
    assert problem is not None and "claims 4096 bytes, more than the 1024" in problem


def test_no_collection_at_the_address_is_left_to_the_library():
    assert heaps_over(b"\0" * 4096).collection_problem(0) is None


def test_an_address_past_the_end_of_the_file_is_left_to_the_library():
    """A damaged heap ID (found by the fuzzer: 2**64 - 9) once reached `pread`, which raised OverflowError: an internal
    error, no report. No collection lies there; the library refuses the read itself."""
    data = b"\0" * 4096

    def read_at(offset: int, length: int) -> bytes:  # as `os.pread` is asked: never past the end of the file
        assert offset >= 0 and offset + length <= len(data), f"read at {offset}, past the end of the file"
        return data[offset : offset + length]

    heaps = GlobalHeaps(read_at, len(data), 8, 8)
    for address in (4096, 2**63 - 1, 2**64 - 9):
        assert heaps.collection_problem(address) is None
        assert heaps.string_value((True, [(5, address, 1)])) is None


def write_h5ad(path: Path, userblock: int = 0, late_attributes: bool = False, libver: str = "earliest") -> None:
    with h5py.File(path, "w", userblock_size=userblock, libver=libver) as f:
        f.attrs["encoding-type"] = "anndata"
        f.attrs["encoding-version"] = "0.1.0"
        for name in ("obs", "var"):
            g = f.create_group(name)
            g.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index"})
            g.attrs["column-order"] = np.array(["a", "b"], dtype=object)
            g.create_dataset("_index", data=np.array(["x", "y"], dtype=object), dtype=h5py.string_dtype())
            for column in ("a", "b"):
                d = g.create_dataset(column, data=np.arange(2))
                if late_attributes:  # added after the dataset was written: its header gains a continuation block
                    d.attrs["encoding-type"] = "array"
                    d.attrs["encoding-version"] = "0.2.0"
                    d.attrs["note"] = "x" * 300


def damage_first_collection(path: Path) -> int:
    """Make the first global heap collection's second object a free-space object of size 0; its address."""
    data = bytearray(path.read_bytes())
    at = data.find(b"GCOL")
    first = at + 16
    second = first + 16 + -(-struct.unpack_from("<Q", data, first + 8)[0] // 8) * 8
    struct.pack_into("<HHIQ", data, second, 0, 0, 0, 0)
    path.write_bytes(bytes(data))
    return at


@pytest.mark.parametrize("userblock", [0, 512], ids=["no-user-block", "user-block"])
@pytest.mark.parametrize("late", [False, True], ids=["compact-headers", "continued-headers"])
@pytest.mark.parametrize("libver", ["earliest", "latest"], ids=["v1-headers", "v2-headers"])
def test_sound_files_read_every_attribute_as_before(tmp_path, userblock, late, libver, monkeypatch):
    write_h5ad(tmp_path / "a.h5ad", userblock, late, libver)
    walked: list[int] = []
    walk = GlobalHeaps._walk
    monkeypatch.setattr(GlobalHeaps, "_walk", lambda self, address: walked.append(address) or walk(self, address))
    report = validate(tmp_path / "a.h5ad")
    assert walked, "the attributes' collections were walked: the check is not vacuous"
    assert not report.problems


@pytest.mark.parametrize("userblock", [0, 512], ids=["no-user-block", "user-block"])
@pytest.mark.parametrize("libver", ["earliest", "latest"], ids=["v1-headers", "v2-headers"])
def test_attributes_in_a_damaged_collection_are_reported_not_read(tmp_path, userblock, libver):
    write_h5ad(tmp_path / "a.h5ad", userblock, libver=libver)
    at = damage_first_collection(tmp_path / "a.h5ad")
    report = validate(tmp_path / "a.h5ad")
    damaged = [p for p in report.problems if "global heap collection" in p.message]
    assert damaged, [p.message for p in report.problems]
    assert all(f"global heap collection at byte {at} is damaged" in p.message for p in damaged)
    assert all("is not read" in p.message for p in damaged)


@pytest.mark.parametrize("path", sorted(LOOPING.glob("*.h5ad")), ids=lambda p: p.stem)
def test_files_on_which_the_library_loops_are_reported_in_a_moment(path, tmp_path):
    shutil.copy(path, tmp_path / path.name)
    report = validate(tmp_path / path.name)
    assert any("global heap collection" in p.message and "damaged" in p.message for p in report.problems)


def test_a_remote_file_is_checked_through_its_file_object(tmp_path):
    from latency_server import LatencyServer

    served = tmp_path / "served"
    served.mkdir()
    write_h5ad(served / "a.h5ad")
    at = damage_first_collection(served / "a.h5ad")
    with LatencyServer(served) as server:
        report = validate(f"{server.url}/a.h5ad")
    assert any(f"global heap collection at byte {at} is damaged" in p.message for p in report.problems)


@pytest.mark.parametrize("remote", [False, True], ids=["local", "over-http"])
@pytest.mark.parametrize("chunked", [False, True], ids=["contiguous", "chunked"])
def test_a_string_dataset_in_a_damaged_collection_is_not_read(tmp_path, chunked, remote):
    """Over HTTP too: a file of one block is read through its file object (a contiguous dataset's strings were
    once handed to the library there unchecked, and its walk of the damaged collection never returned)."""
    from latency_server import LatencyServer

    from spec_validate.errors import NodeError
    from spec_validate.nodes.open import open_store

    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:  # no attribute: the dataset's strings are the file's only heap objects
        f.create_dataset(
            "s",
            data=np.array(["alpha", "beta", "gamma"], dtype=object),
            dtype=h5py.string_dtype(),
            chunks=(3,) if chunked else None,
        )
    with open_store(str(path)) as tree:
        assert list(tree.get("/s").read_block((0, 3)).values) == [b"alpha", b"beta", b"gamma"]
    at = damage_first_collection(path)
    with contextlib.ExitStack() as stack:
        source = f"{stack.enter_context(LatencyServer(tmp_path)).url}/s.h5" if remote else str(path)
        tree = stack.enter_context(open_store(source))
        node = tree.get("/s")
        if chunked:
            (chunk,) = node.read_block((0, 3)).chunks
            problem = chunk.problem
        else:
            with pytest.raises(NodeError) as raised:
                node.read_block((0, 3))
            problem = str(raised.value)
    assert f"global heap collection at byte {at} is damaged" in problem


# ---------------------------------------------------------------------------------------------- string values


def _library_values(path: Path) -> dict[tuple[str, str], object]:
    """Every attribute of every object as the tool reads it through the library (`hdf5._read_attribute`)."""
    from h5py import h5a

    from spec_validate.nodes.hdf5.tree import _read_attribute

    out: dict[tuple[str, str], object] = {}

    def visit(name: str, obj) -> None:
        names: list[bytes] = []
        h5a.iterate(obj.id, lambda n, *_: names.append(n))
        for stored in names:
            out[(name, stored.decode("utf-8", "surrogateescape"))] = _read_attribute(obj.id, stored)

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(lambda n, o: visit(n, o))
    return out


def _comparable(values: dict[tuple[str, str], object]) -> dict[tuple[str, str], object]:
    """Object references (anndata 0.7's `categories`) compare by the file handle they came from, and the tool and
    the library each open their own: such values are compared by kind; they are not read from the global heap."""
    return {k: "<object reference>" if isinstance(v, h5py.Reference) else v for k, v in values.items()}


def _tool_values(path: Path) -> dict[tuple[str, str], object]:
    from spec_validate.nodes.open import open_store

    out: dict[tuple[str, str], object] = {}
    with open_store(str(path)) as tree:
        for node in tree.walk():
            if node.kind == "link":
                continue
            for key in node.attrs:
                try:
                    out[(node.path.lstrip("/") or "/", key)] = node.attrs[key]
                except Exception as exc:  # noqa: BLE001 (compared: the library refuses it too)
                    out[(node.path.lstrip("/") or "/", key)] = type(exc).__name__
    return out


@pytest.mark.parametrize("libver", ["earliest", "latest"], ids=["v1-headers", "v2-headers"])
def test_strings_read_from_the_heap_are_what_the_library_reads(tmp_path, libver, monkeypatch):
    """Variable-length string attributes are read from their heap objects, not through the library: the same values
    whatever their shape, encoding, or bytes (bytes that are not UTF-8, an empty string; h5py writes no NUL)."""
    path = tmp_path / "strings.h5"
    utf8, ascii_ = h5py.string_dtype("utf-8"), h5py.string_dtype("ascii")
    with h5py.File(path, "w", libver=libver, track_order=libver == "latest") as f:
        g = f.create_group("g")  # at most 8 attributes an object: the latest format keeps them in the header
        g.attrs["scalar"] = "encoding-type"
        g.attrs["unicode"] = "ünïcødé ✓"
        g.attrs.create("ascii", "plain", dtype=ascii_)
        g.attrs.create("list", np.array(["a", "bb", "ccc"], dtype=object), dtype=utf8)
        g.attrs.create("matrix", np.array([["a", "b"], ["c", "d"]], dtype=object), dtype=utf8)
        g.attrs.create("one", np.array(["only"], dtype=object), dtype=utf8)
        g = f.create_group("h")
        g.attrs.create("empty", "", dtype=utf8)
        g.attrs.create("some-empty", np.array(["x", ""], dtype=object), dtype=utf8)
        g.attrs.create("not-utf8", b"\xff\xfe", dtype=h5py.string_dtype("ascii"))
        g.attrs["number"] = 3
        g.attrs["fixed"] = np.bytes_(b"fixed")
        many = f.create_group("many")  # dense attribute storage with the latest format: the library reads those
        for i in range(20):
            many.attrs[f"a{i:02d}"] = f"value {i}"
    from spec_validate.nodes.hdf5.tree import HDF5Node

    read_here: list[bytes] = []
    stored_string = HDF5Node.stored_string

    def spied(self, name):
        value = stored_string(self, name)
        if value is not None:
            read_here.append(name)
        return value

    monkeypatch.setattr(HDF5Node, "stored_string", spied)
    assert _tool_values(path) == _library_values(path)
    assert {b"scalar", b"unicode", b"ascii", b"list", b"matrix", b"one", b"not-utf8"} <= set(read_here)
    assert not {b"empty", b"some-empty", b"number", b"fixed"} & set(read_here)  # left to the library


def test_corpus_string_attributes_read_from_the_heap_are_what_the_library_reads():
    files = sorted((REPO / "conformance-corpus").glob("**/*.h5ad")) + sorted((REPO / "conformance-corpus").glob("**/*.h5seurat"))
    files = [f for f in files if "hostile" not in f.parts]
    compared = 0
    for path in files:
        tool, library = _comparable(_tool_values(path)), _comparable(_library_values(path))
        assert tool == library, path
        compared += len(tool)
    assert compared > 500


FLIP_CHILD = """
import sys
from spec_validate.nodes.open import open_store
with open_store(sys.argv[1]) as tree:
    node = tree.get(sys.argv[2])
    try:
        print(node.attrs["note"] if sys.argv[3] == "attribute" else node.read_block((0, 3)).values)
    except Exception as exc:
        print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("where", ["attribute", "dataset"])
def test_a_variable_length_type_the_format_forbids_is_never_read(tmp_path, where):
    """A variable-length string whose type says kind 3 (only 0, a sequence, and 1, a string, exist): the library
    reads it as a sequence of bytes and h5py crashes the process. In a child process: a regression crashes it, not
    the test session."""
    import subprocess
    import sys

    from spec_validate.nodes.hdf5.structure.global_heap import malformed_vlen

    assert malformed_vlen(0x01, 0x01) is None and malformed_vlen(0x00, 0x00) is None  # a UTF-8 string; a sequence
    assert "kind 3" in (malformed_vlen(0x03, 0x01) or "") and "padding 3" in (malformed_vlen(0x31, 0x00) or "")
    path = tmp_path / "v.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("s", data=np.array(["alpha", "beta", "gamma"], dtype=object), dtype=h5py.string_dtype())
        d.attrs["note"] = "x"  # h5py writes a scalar string attribute as a variable-length UTF-8 string
        header = h5py.h5g.get_objinfo(d.id).objno[0]
    data = bytearray(path.read_bytes())
    # The dataset's own type comes first in its header, its attribute's after the attribute's name.
    at = data.index(b"\x19\x01", data.index(b"note\0", header) if where == "attribute" else header)
    data[at + 1] = (data[at + 1] & 0xF0) | 3
    path.write_bytes(bytes(data))
    run = subprocess.run([sys.executable, "-c", FLIP_CHILD, str(path), "/s", where], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Unreadable" in run.stdout and "its datatype is malformed (variable-length kind 3" in run.stdout


def test_each_collection_is_walked_once_in_a_whole_run(tmp_path, monkeypatch):
    # anndata writes a string column's values and then its attributes: one collection holds both, so reading the
    # attributes must not walk its thousand values again (once to check it, once more for each value read).
    path = tmp_path / "columns.h5"
    with h5py.File(path, "w") as f:
        for i in range(40):
            column = f.create_dataset(f"obs/c{i}", data=np.array([f"v{i}-{j}" for j in range(300)], dtype=object))
            column.attrs["encoding-type"] = "string-array"
            column.attrs["encoding-version"] = "0.2.0"
    walks: dict[int, int] = {}
    walk = GlobalHeaps._walk

    def counted(self, address):
        walks[address] = walks.get(address, 0) + 1
        return walk(self, address)

    monkeypatch.setattr(GlobalHeaps, "_walk", counted)
    validate(path)
    assert walks and max(walks.values()) == 1


def test_object_places_kept_for_the_run_are_bounded(tmp_path, monkeypatch):
    # Past the bound a collection's places are not kept: its objects are still read right, by walking it again.
    monkeypatch.setattr(global_heap, "MOST_INDEXED_OBJECTS", 1)
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        f.attrs["a"] = "first-value"
        f.attrs["b"] = "second-value"
    tree = open_store(str(path))
    try:
        assert tree.root.attrs["a"] == "first-value" and tree.root.attrs["b"] == "second-value"
        heaps = tree._global_heaps()
        assert heaps is not None and heaps._indexed_objects <= 1 and not heaps._indexes
    finally:
        tree.close()


def test_an_element_longer_than_its_collection_is_never_handed_to_the_library(tmp_path):
    # One byte of a corpus file's root `encoding-type` length set to 0xA7: the library would allocate 2.8 GB for it.
    path = tmp_path / "long.h5ad"
    shutil.copyfile(Path(__file__).resolve().parents[4] / "conformance-corpus/anndata/h5ad/valid-zero-obs.h5ad", path)
    with open(path, "r+b") as fh:
        fh.seek(891)
        assert fh.read(1) == b"\x00"
        fh.seek(891)
        fh.write(b"\xa7")
    report = validate(path)
    assert [p.key for p in report.problems] == ["/@encoding-type"]
    assert "claims 2801795079 bytes, more than its global heap collection" in report.problems[0].message


# ---------------------------------------------------------------------------------------------- attribute types


def _library_types(path: Path) -> dict[tuple[str, str], object]:
    """Every attribute's string storage and type class as the library says them (`hdf5._attr_string_storage`,
    `_attr_type_class`: the attribute opened by name)."""
    from h5py import h5a

    from spec_validate.nodes.hdf5.tree import _attr_string_storage, _attr_type_class

    out: dict[tuple[str, str], object] = {}

    def visit(name: str, obj) -> None:
        names: list[bytes] = []
        h5a.iterate(obj.id, lambda n, *_: names.append(n))
        for stored in names:
            key = (name.lstrip("/") or "/", stored.decode("utf-8", "surrogateescape"))
            out[key] = (_attr_string_storage(obj.id, stored), _attr_type_class(obj.id, stored))

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(lambda n, o: visit(n, o))
    return out


def _tool_types(path: Path) -> tuple[dict[tuple[str, str], object], int]:
    """The same, as the tree says them, and how many of them it asked the library for."""
    from spec_validate.nodes.hdf5 import tree as hdf5

    asked = []
    storage, type_class = hdf5._attr_string_storage, hdf5._attr_type_class
    out: dict[tuple[str, str], object] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hdf5, "_attr_string_storage", lambda *a: asked.append(a) or storage(*a))
        patch.setattr(hdf5, "_attr_type_class", lambda *a: asked.append(a) or type_class(*a))
        with open_store(str(path)) as tree:
            for node in tree.walk():
                if node.kind != "link":
                    for key in node.attrs:
                        out[(node.path.lstrip("/") or "/", key)] = (node.attr_storage(key), node.attr_type_class(key))
    return out, len(asked)


@pytest.mark.parametrize("libver", ["earliest", "latest"], ids=["v1-headers", "v2-headers"])
def test_attribute_types_read_from_the_header_are_what_the_library_says(tmp_path, libver):
    """Every kind of datatype h5py writes, on a group and a dataset: read from the attribute messages in one pass,
    each the same as the library says when the attribute is opened by name; none of them asked of the library."""
    path = tmp_path / "types.h5"
    kinds = {
        "i8": np.int64(3),
        "u1": np.uint8(3),
        "f4": np.float32(0.5),
        "bool": np.bool_(True),
        "complex": np.complex64(1j),
        "fixed": np.bytes_(b"fixed"),
        "ints": np.arange(3),
        "compound": np.array([(1, 2.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
        "array": np.zeros(1, dtype=np.dtype(("<i4", (2,)))),
        "opaque": np.void(b"\x01\x02"),
        "enum": np.array(1, dtype=h5py.enum_dtype({"a": 0, "b": 1}, basetype="i1")),
    }
    with h5py.File(path, "w", libver=libver) as f:
        objects = [f.create_group("g"), f.create_dataset("d", data=np.arange(3))]
        for obj in objects:
            for name, value in list(kinds.items())[:4]:  # at most 8 attributes: the latest format keeps them in the header
                obj.attrs[name] = value
            obj.attrs.create("vlen-utf8", "x", dtype=h5py.string_dtype("utf-8"))
            obj.attrs.create("vlen-ascii", "x", dtype=h5py.string_dtype("ascii"))
            obj.attrs.create("fixed-utf8", "ab", dtype=h5py.string_dtype("utf-8", 2))
            sequence = np.empty(1, dtype=object)
            sequence[0] = np.arange(2, dtype="i4")
            obj.attrs.create("sequence", sequence, dtype=h5py.vlen_dtype("i4"))
        more = f.create_group("more")
        for name, value in list(kinds.items())[4:]:
            more.attrs[name] = value
        more.attrs["reference"] = f["g"].ref
    tool, asked = _tool_types(path)
    assert tool == _library_types(path) and len(tool) == 2 * 8 + 8
    assert asked == 0


def test_attribute_types_in_dense_storage_are_asked_of_the_library(tmp_path):
    path = tmp_path / "dense.h5"
    with h5py.File(path, "w", libver="latest") as f:
        for i in range(20):  # past 8: the latest format keeps them in dense storage, which is not read here
            f.attrs.create(f"a{i:02d}", "x" if i % 2 else i, dtype=h5py.string_dtype("utf-8") if i % 2 else None)
    tool, asked = _tool_types(path)
    assert tool == _library_types(path) and asked == 2 * 20


def test_corpus_attribute_types_read_from_the_header_are_what_the_library_says():
    files = sorted((REPO / "conformance-corpus").glob("**/*.h5ad")) + sorted((REPO / "conformance-corpus").glob("**/*.h5Seurat"))
    files = [f for f in files if "hostile" not in f.parts]
    compared = 0
    for path in files:
        tool, _ = _tool_types(path)
        assert tool == _library_types(path), path
        compared += len(tool)
    assert compared > 500


def test_an_attribute_naming_no_collection_with_a_huge_length_is_not_read(tmp_path):
    # The fuzzer's input 5100 (seed 7): an attribute's stored value overwritten, its length 0x905E1D65 and its heap
    # ID's collection past the end of the file. The library allocated the 2.4 GB before it refused the collection.
    # (Version 1 object headers, as the earliest format writes: a version 2 header's checksum would refuse the edit.)
    path = tmp_path / "a.h5ad"
    write_h5ad(path)
    data = bytearray(path.read_bytes())
    with h5py.File(path, "r") as f:
        header = h5py.h5g.get_objinfo(f["obs"].id).objno[0]
    # /obs's encoding-type, "dataframe": a scalar variable-length string stored as (length, collection, index).
    value = data.index(struct.pack("<IQ", len("dataframe"), data.index(b"GCOL")), header)
    struct.pack_into("<IQ", data, value, 0x905E1D65, 2**40)
    path.write_bytes(bytes(data))
    report = validate(path)
    assert any(
        p.path == "/obs" and "more than any global heap collection of this file holds" in p.message for p in report.problems
    ), [(p.path, p.message) for p in report.problems]


def test_a_collection_past_the_vectorised_walks_bound_is_walked_object_by_object(monkeypatch):
    """The vectorised walk's arrays take several times a collection's size: a larger one (real ones hold kilobytes)
    is walked object by object, to the same objects."""
    data = collection([(i + 1, 5, b"hello") for i in range(100)])
    assert global_heap._chase(data, len(data), 16) is not None
    monkeypatch.setattr(global_heap, "MOST_CHASED_BYTES", 1024)
    assert global_heap._chase(data, len(data), 16) is None
    problem, objects, _ = heaps_over(data)._walk(0)
    assert problem is None and objects is not None and len(objects) == 100
