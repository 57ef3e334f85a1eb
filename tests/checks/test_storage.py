"""Storage primitives: string storage, codecs, shared chunking."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import Arr, fails, findings, passes, tree

from spec_validate.nodes.base import Storage, StringStorage

VLEN = Storage("zarr-v2", StringStorage("variable", "utf-8", "|O"), codecs=("vlen-utf8", "blosc"), compressor="blosc")
FIXED_ASCII = Storage("hdf5", StringStorage("fixed", "ascii", "fixed[1] ascii string"))


def arr(values, storage=None, chunks=None):
    return tree({"a": Arr(values, storage=storage, chunks=chunks)}).get("/a")


STRING_STORAGE = [
    pytest.param((np.array(["a"], dtype=object), VLEN), {"length": "variable", "charset": "utf-8"}, 0, id="vlen-utf8"),
    pytest.param((np.array(["a"], dtype=object), VLEN), {"length": "variable", "dtype_kind": "O"}, 0, id="dtype-kind"),
    pytest.param((np.array([b"a"]), FIXED_ASCII), {"length": "fixed", "charset": "ascii"}, 0, id="fixed-ascii-wanted"),
    pytest.param((np.array([b"a"]), FIXED_ASCII), {"length": "variable", "charset": "utf-8"}, 1, id="fixed-ascii"),
    pytest.param((np.array(["a"]), None), {"length": "variable"}, 1, id="numpy-U-is-fixed"),
    pytest.param((np.arange(3), Storage("hdf5")), {"length": "variable"}, 1, id="not-strings"),
]


@passes("node_args,options,expected", STRING_STORAGE)
def test_string_storage_passes(node_args, options, expected):
    assert findings("string_storage", arr(*node_args), options) == []


@fails("node_args,options,expected", STRING_STORAGE)
def test_string_storage_fails(node_args, options, expected):
    assert len(findings("string_storage", arr(*node_args), options)) == expected


def test_string_storage_fails_message_names_stored_type():
    (f,) = findings("string_storage", arr(np.array([b"a"]), FIXED_ASCII), {"length": "variable", "charset": "utf-8"})
    assert f.message == "stores strings as fixed[1] ascii string (fixed-length, charset ascii), expected variable-length utf-8"


def test_string_storage_fails_details_name_the_stored_dtype_length_and_charset():
    # what a writer note's `when` matches (anndata 0.12's variable-length UTF-8 strings)
    (f,) = findings("string_storage", arr(np.array(["a"], dtype=object), VLEN), {"length": "fixed", "dtype_kind": "U"})
    assert f.details == {"stored": "|O", "length": "variable", "charset": "utf-8"}


HAS_CODEC = [pytest.param("vlen-utf8", 0, id="present"), pytest.param("zstd", 1, id="absent")]


@passes("codec,expected", HAS_CODEC)
def test_has_codec_passes(codec, expected):
    assert findings("has_codec", arr(np.array(["a"], dtype=object), VLEN), {"id": codec}) == []


@fails("codec,expected", HAS_CODEC)
def test_has_codec_fails(codec, expected):
    (f,) = findings("has_codec", arr(np.array(["a"], dtype=object), VLEN), {"id": codec})
    assert f.details == {"codecs": ["vlen-utf8", "blosc"]}


def _df(chunk_b):
    return tree(
        {
            "df": {
                "@attrs": {"encoding-type": "dataframe", "_index": "idx"},
                "idx": Arr(np.arange(10), chunks=(5,)),
                "b": Arr(np.arange(10), chunks=(chunk_b,)),
                "cat": {"codes": Arr(np.zeros(10, int), chunks=(5,)), "categories": Arr(np.array(["x"]), chunks=(1,))},
            }
        }
    )


CHUNKS_SHARED = [pytest.param(5, 0, id="same-chunks-categories-ignored"), pytest.param(4, 1, id="different-chunks")]


@passes("chunk_b,expected", CHUNKS_SHARED)
def test_chunks_shared_passes(chunk_b, expected):
    assert findings("chunks_shared", _df(chunk_b).get("/df")) == []


@fails("chunk_b,expected", CHUNKS_SHARED)
def test_chunks_shared_fails(chunk_b, expected):
    (f,) = findings("chunks_shared", _df(chunk_b).get("/df"))
    assert f.details == {"chunk_lengths": [4, 5]}
