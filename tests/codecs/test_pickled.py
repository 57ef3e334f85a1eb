"""Pickle chunks read as data: plain object arrays decode, anything that would call code is refused unrun, bounds hold.

Test data is written with `pickle.dumps` (this test writing its own data) or by hand, opcode by opcode.
"""

from __future__ import annotations

import os
import pickle
import struct

import numcodecs
import numpy as np
import pytest

from spec_validate.codecs import pickled
from spec_validate.codecs.decode import ChunkError, PickleNotRebuilt, decode_chunk, v2_codec
from spec_validate.codecs.pickled import Malformed, NotRebuilt, object_array

ELEMENTS = [
    {"source": ".", "path": "/general/devices/probe", "object_id": "d3v1ce"},
    [1, 2, [3]],
    "text é",
    None,
    3.5,
    -(2**70),
    b"\x00\xff",
    (1, "two"),
    True,
    bytearray(b"q"),
    {1, 2},
    frozenset({3}),
]


def objects(values, shape=None):
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out if shape is None else out.reshape(shape)


@pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
def test_pickled_passes_plain_object_array_every_protocol(protocol):
    elements, shape = object_array(pickle.dumps(objects(ELEMENTS), protocol=protocol))
    assert (elements, shape) == (ELEMENTS, (len(ELEMENTS),))
    assert type(elements[9]) is bytearray and type(elements[11]) is frozenset


def test_pickled_passes_shapes_and_memory_order():
    assert object_array(pickle.dumps(np.array(5, dtype=object))) == ([5], ())
    assert object_array(pickle.dumps(np.empty((0, 3), dtype=object))) == ([], (0, 3))
    # Fortran order: the elements in the order stored, as zarr-python flattens a decoded chunk (order "A").
    f = np.asfortranarray(np.arange(6, dtype=object).reshape(2, 3))
    assert object_array(pickle.dumps(f, protocol=5)) == ([0, 3, 1, 4, 2, 5], (2, 3))


def test_pickled_passes_older_numpy_module_name():
    data = pickle.dumps(objects(["a"]), protocol=2).replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert object_array(data) == (["a"], (1,))


def test_pickled_passes_hdmf_zarr_corpus_chunk():
    chunk = "conformance-corpus/hdmf-zarr/zarr-v2/reference-dataset-pickle.zarr/general/electrodes/group/0"
    with open(os.path.join(os.path.dirname(__file__), "..", "..", chunk), "rb") as f:
        elements, shape = object_array(f.read())
    assert shape == (2,) and all(e["path"] == "/general/devices/probe" for e in elements)


# ------------------------------------------------------------------------------------------ nothing is run
class Touch:
    """Unpickled, this runs `touch marker` through os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Opens:
    """Unpickled, this creates the file `marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


class ZarrReference(dict):
    """Like hdmf_zarr.utils.ZarrReference: a dict subclass, pickled by NEWOBJ of its class."""


class Sub(np.ndarray):
    pass


@pytest.mark.parametrize("protocol", [2, 5])
@pytest.mark.parametrize("kind", ["os.system", "open"])
def test_pickled_fails_calling_a_global_is_refused_never_run(tmp_path, protocol, kind):
    marker = tmp_path / "PWNED"
    probe = tmp_path / "probe"
    maker = Touch if kind == "os.system" else Opens
    payload = pickle.dumps(objects([maker(str(marker))]), protocol=protocol)
    # Sanity: unpickling the same kind of payload really does create its file.
    loaded = pickle.loads(pickle.dumps(maker(str(probe))))
    if kind == "open":
        loaded.close()
    assert probe.exists()
    with pytest.raises(NotRebuilt) as got:
        object_array(payload)
    expected = f"{os.name if os.name != 'nt' else 'nt'}.system" if kind == "os.system" else "io.open"
    assert got.value.calls == expected
    assert str(got.value) == f"calls {expected} (REDUCE), which is not rebuilt (nothing from a file is executed)"
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [2, 5])
def test_pickled_fails_newobj_of_a_class_names_it(protocol):
    with pytest.raises(NotRebuilt, match=r"calls \S+\.ZarrReference \(NEWOBJ\), which is not rebuilt") as got:
        object_array(pickle.dumps(objects([ZarrReference(source=".", path="/a")]), protocol=protocol))
    assert got.value.calls.endswith(".ZarrReference")


def test_pickled_fails_ndarray_subclass_and_nested_array_and_bare_global():
    with pytest.raises(NotRebuilt, match=r"calls \S+\.Sub \(REDUCE\)"):
        object_array(pickle.dumps(objects([1]).view(Sub)))
    with pytest.raises(NotRebuilt, match=r"holds a numpy\.ndarray as an element"):
        object_array(pickle.dumps(objects([np.array([1, 2], dtype=object)])))
    with pytest.raises(NotRebuilt, match=r"holds the global posix\.system, which is not imported") as got:
        object_array(pickle.dumps(objects([os.system])))
    assert got.value.calls == "posix.system"


def test_pickled_fails_non_object_and_non_array_pickles():
    with pytest.raises(Malformed, match="pickles an array of dtype 'f8', not of objects"):
        object_array(pickle.dumps(np.arange(3.0)))
    with pytest.raises(Malformed, match="pickles a list, not a numpy array"):
        object_array(pickle.dumps([1, 2]))


# ------------------------------------------------------------------------------------------ malformed streams
def array_pickle(count: int, elements: bytes) -> bytes:
    """A protocol-2 pickle of a 1-D object array of `count` items, its element list made by `elements` (opcodes
    leaving one list on the stack), written by hand."""
    return (
        b"\x80\x02cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85U\x01b\x87R"
        + b"(K\x01J"
        + struct.pack("<i", count)
        + b"\x85cnumpy\ndtype\nU\x02O8\x89\x88\x87R(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89"
        + elements
        + b"tb."
    )


def test_array_pickle_helper_is_a_real_array_pickle():
    assert list(pickle.loads(array_pickle(2, b"](K\x01K\x02e"))) == [1, 2]
    assert object_array(array_pickle(2, b"](K\x01K\x02e")) == ([1, 2], (2,))


def test_pickled_fails_every_truncation_and_trailing_bytes():
    data = pickle.dumps(objects(ELEMENTS), protocol=5)
    for end in range(len(data)):
        with pytest.raises(Malformed):
            object_array(data[:end])
    with pytest.raises(Malformed, match="has 1 bytes after its pickle's STOP"):
        object_array(data + b"\x00")


@pytest.mark.parametrize(
    "data,match",
    [
        pytest.param(b"", "pickle exhausted before seeing STOP", id="empty"),
        pytest.param(b"\x02\x01garbage", "opcode", id="garbage"),
        pytest.param(b"\x80\x09N.", "declares pickle protocol 9", id="protocol"),
        pytest.param(array_pickle(1, b"]h\x09a"), r"reads memo entry 9 \(BINGET\), which was never stored", id="memo-get"),
        pytest.param(array_pickle(1, b"]K\x01K\x02a"), r"adds items \(APPEND\) to an int, not a list", id="append-to-an-int"),
        pytest.param(array_pickle(1, b"}]K\x01s]"), r"uses a list as a key \(SETITEM\), which cannot be one", id="list-key"),
        pytest.param(array_pickle(1, b"}K\x01a"), r"adds items \(APPEND\) to a dict, not a list", id="append-to-dict"),
        pytest.param(array_pickle(1, b"]\x97a"), "NEXT_BUFFER", id="out-of-band-buffer"),
        pytest.param(array_pickle(2, b"](K\x01e"), r"shape \[2\] from a list", id="count-mismatch"),
        pytest.param(b"\x80\x02]K\x01R.", "calls a list, which is not callable", id="reduce-non-callable"),
        pytest.param(b"\x80\x02]K\x01b.", r"sets the state of a list \(BUILD\)", id="build-on-a-list"),
    ],
)
def test_pickled_fails_malformed_stream_one_line(data, match):
    with pytest.raises(Malformed, match=match) as got:
        object_array(data)
    assert "\n" not in str(got.value)


@pytest.mark.parametrize(
    "elements,match",
    [
        pytest.param(b"]Pid\na", "persistent id", id="persid"),
        pytest.param(b"]\x82\x01a", "extension code 1", id="ext1"),
        pytest.param(b"](cos\nsystem\nVtouch x\n\x85\x81e", r"calls os.system \(NEWOBJ\)", id="newobj"),
        pytest.param(b"](cos\nsystem\nVtouch x\nVx\n\x86}\x92e", r"calls os.system \(NEWOBJ_EX\)", id="newobj-ex"),
        pytest.param(b"](ios\nsystem\nVtouch x\ne", r"calls os.system \(INST\)", id="inst"),
        pytest.param(b"]((cos\nsystem\nVtouch x\noe", r"calls os.system \(OBJ\)", id="obj"),
    ],
)
def test_pickled_fails_other_constructions_not_rebuilt(elements, match):
    with pytest.raises(NotRebuilt, match=match):
        object_array(array_pickle(1, elements))


# ------------------------------------------------------------------------------------------ bounds
def test_pickled_fails_shared_lists_doubling_stop_at_the_item_bound():
    # Each list holds the one before twice (memo GETs): 40 levels of 2 are 2**41 values to whoever walks them.
    ops = b"](K\x00K\x00eq\x00"
    for level in range(1, 41):
        ops += b"0](h" + bytes([level - 1]) + b"h" + bytes([level - 1]) + b"eq" + bytes([level])
    with pytest.raises(Malformed, match=f"holds more than {pickled.MAX_ITEMS} values"):
        object_array(array_pickle(2, ops))


def test_pickled_fails_deep_nesting_and_cycles():
    deep = b"]" * 300 + b"a" * 299
    with pytest.raises(Malformed, match=f"nests containers more than {pickled.MAX_DEPTH} deep"):
        object_array(array_pickle(1, deep))
    with pytest.raises(Malformed, match="nests MARKs"):
        object_array(array_pickle(1, b"(" * 300))
    with pytest.raises(Malformed, match="holds a container that contains itself"):
        object_array(array_pickle(1, b"]q\x00h\x00a"))
    deep_tuple = b"K\x01" + b"\x85" * 100_000  # hashing it would recurse 100,000 deep
    with pytest.raises(Malformed):
        object_array(array_pickle(1, b"]}" + deep_tuple + b"K\x01sa"))


def test_pickled_fails_big_int_and_memo_bound(monkeypatch):
    big = b"]\x8a" + bytes([255]) + b"\x01" * 255 + b"a"  # LONG1: 2040 bits, within the bound
    assert object_array(array_pickle(1, big))[0][0].bit_length() <= pickled.MAX_INT_BITS
    huge = b"]\x8b" + struct.pack("<i", 2000) + b"\x01" * 2000 + b"a"
    with pytest.raises(Malformed, match="holds an int of 15993 bits"):
        object_array(array_pickle(1, huge))
    monkeypatch.setattr(pickled, "MAX_MEMO", 3)
    with pytest.raises(Malformed, match="more than 3 memo entries"):
        object_array(pickle.dumps(objects(ELEMENTS), protocol=5))


# ------------------------------------------------------------------------------------------ through the codec module
def pickle_codec(shape, compressor=None):
    meta = {"filters": [{"id": "pickle", "protocol": 5}], "compressor": compressor, "order": "C"}
    return v2_codec(meta, np.dtype(object), shape, "/x")


def encode(values, compressor=None):
    out = numcodecs.Pickle(protocol=5).encode(values)
    return numcodecs.get_codec(compressor).encode(out) if compressor else out


@pytest.mark.parametrize("compressor", [None, {"id": "zlib", "level": 1}, {"id": "blosc", "cname": "lz4"}])
def test_decode_passes_pickle_chunk_2d_lists_stay_elements(compressor):
    values = objects([[1, 2], {"a": [3]}, "x", None, [], ()], (2, 3))
    got = decode_chunk(pickle_codec((2, 3), compressor), encode(values, compressor), "/x: chunk 0.0")
    assert got.shape == (2, 3) and got.dtype == object
    assert got.tolist() == values.tolist()


def test_decode_fails_pickle_chunk_count_and_malformed_are_chunk_errors():
    with pytest.raises(ChunkError, match=r"/x: chunk 0: its pickle holds an array of shape \[2\], 2 items, expected 3"):
        decode_chunk(pickle_codec((3,)), encode(objects([1, 2])), "/x: chunk 0")
    with pytest.raises(ChunkError, match=r"/x: chunk 0 is not a readable pickle \(ValueError"):
        decode_chunk(pickle_codec((3,)), b"\x80\x05junk", "/x: chunk 0")


def test_decode_fails_pickle_calling_a_global_not_decoded_names_it(tmp_path):
    marker = tmp_path / "PWNED"
    with pytest.raises(PickleNotRebuilt, match=r"^/x: chunk 0: not decoded: its pickle calls io.open") as got:
        decode_chunk(pickle_codec((1,)), encode(objects([Opens(str(marker))])), "/x: chunk 0")
    assert got.value.calls == "io.open"
    assert pickle.loads(pickle.dumps(got.value)).calls == "io.open"  # kept across processes (Dask workers)
    assert not marker.exists()
