"""Zarr v3 layout from zarr.json (chunk keys, shard layout) and shard indexes read from stores zarr-python wrote."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from spec_validate.engine.run import compute_facts
from spec_validate.kernels.facts import FactRequest
from spec_validate.nodes.open import open_store
from spec_validate.nodes.zarr.v3 import EMPTY_PAIR, KeyForm, key_form, read_shard_indexes, shard_layout
from spec_validate.storage.keyvalue import DirectoryStore

META = {
    "shape": [10, 6],
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
    "chunk_key_encoding": {"name": "default"},
}


@pytest.mark.parametrize(
    ("encoding", "index", "key"),
    [
        ({"name": "default"}, (1, 0), "c/1/0"),
        ({"name": "default", "configuration": {"separator": "."}}, (2, 1), "c.2.1"),
        ({"name": "v2"}, (1, 1), "1.1"),
        ({"name": "v2", "configuration": {"separator": "/"}}, (0, 1), "0/1"),
    ],
)
def test_key_form_passes_keys_as_the_encodings_form_them(encoding, index, key):
    form = key_form({**META, "chunk_key_encoding": encoding})
    assert form.key(index) == key and form.parse(key, 2) == index and form.grid == (3, 2)


@pytest.mark.parametrize("encoding", [{"name": "default", "configuration": {"separator": "-"}}, {"name": "v3"}, "default", []])
def test_key_form_fails_unusable_or_unknown_encodings(encoding):
    assert (key_form({**META, "chunk_key_encoding": encoding}) is None) == (encoding != "default")


def test_key_form_passes_scalar_keys():
    assert KeyForm("c/", "/", "c", ()).key(()) == "c" and KeyForm("", ".", "0", ()).key(()) == "0"


def sharded(path, index_location="end", **kwargs):
    import zarr
    from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(
            str(path),
            shape=(12, 6),
            chunks=(4, 6),
            dtype="int32",
            fill_value=0,
            zarr_format=3,
            compressors=None,
            serializer=ShardingCodec(
                chunk_shape=(2, 3), index_location=index_location, index_codecs=[BytesCodec(endian="little"), Crc32cCodec()]
            ),
            **kwargs,
        )
        a[:8] = np.arange(48, dtype="int32").reshape(8, 6)
        a[8:10, :3] = 1  # the last shard: one inner chunk stored, three empty
    return a


@pytest.mark.parametrize("location", ["end", "start"])
def test_read_shard_indexes_passes_pairs_that_frame_the_inner_chunks(tmp_path, location):
    sharded(tmp_path / "a.zarr", location)
    with open_store(str(tmp_path / "a.zarr")) as tree:
        layout = shard_layout(tree.root.metadata)
        assert layout.per_shard == (2, 2) and layout.at_start == (location == "start") and layout.index_bytes == 68
        shards = read_shard_indexes(DirectoryStore(str(tmp_path / "a.zarr")), "", layout, 0, 12)
    assert [s.key for s in shards] == ["c/0/0", "c/1/0", "c/2/0"]
    last = shards[2]
    assert last.problem is None and (last.pairs == EMPTY_PAIR).all(axis=1).sum() == 3
    stored = last.pairs[~(last.pairs == EMPTY_PAIR).all(axis=1)]
    assert ((stored[:, 0] >= last.data_start) & (stored[:, 0] + stored[:, 1] <= last.data_stop)).all()


def test_read_shard_indexes_passes_only_the_shards_of_the_rows(tmp_path):
    sharded(tmp_path / "a.zarr")
    with open_store(str(tmp_path / "a.zarr")) as tree:
        block = tree.root.read_shard_indexes((4, 8))
    assert [s.key for s in block.shards] == ["c/1/0"] and block.values.size == 0 and block.start == 24


@pytest.mark.parametrize(
    ("codecs", "why"),
    [
        ([{"name": "bytes", "configuration": {"endian": "little"}}], "not sharding_indexed"),
        ([{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "index_codecs": [{"name": "bytes"}]}}], "endian"),
        ([{"name": "sharding_indexed", "configuration": {"chunk_shape": [3, 3]}}], "does not divide"),
        (
            [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [2, 3],
                        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}],
                    },
                }
            ],
            "not bytes then crc32c",
        ),
    ],
)
def test_shard_layout_fails_with_the_reason_it_is_not_read(codecs, why):
    got = shard_layout({**META, "codecs": codecs})
    assert isinstance(got, str) and why in got


def test_shard_index_scan_passes_without_decoding_a_value(tmp_path, monkeypatch):
    sharded(tmp_path / "a.zarr")
    with open_store(str(tmp_path / "a.zarr")) as tree:
        node = tree.root
        monkeypatch.setattr(type(node), "read_block", lambda *a: pytest.fail("a value was decoded"))
        facts = compute_facts(node, {FactRequest("shard_index_problems", (("limit", 5),))})
    (result,) = facts.values()
    assert result.read == 3 and result.counts == {}


def test_read_shard_indexes_passes_shards_under_a_whole_shard_codec(tmp_path):
    # zarr-python's default: zstd over each whole shard, index included; the codec module undoes it first.
    import zarr
    from zarr.codecs import ShardingCodec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(
            str(tmp_path / "a.zarr"),
            shape=(16,),
            chunks=(8,),
            dtype="int64",
            fill_value=0,
            zarr_format=3,
            serializer=ShardingCodec(chunk_shape=(4,)),
        )
        a[:] = np.arange(16)
    with open_store(str(tmp_path / "a.zarr")) as tree:
        assert shard_layout(tree.root.metadata).after == ("zstd",)
        block = tree.root.read_shard_indexes((0, 16))
    assert [s.key for s in block.shards] == ["c/0", "c/1"] and all(s.problem is None for s in block.shards)
