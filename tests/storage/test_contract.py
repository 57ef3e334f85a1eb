"""The contract every transport keeps, as zarr-python's StoreTests states it for its stores: whole keys, byte
ranges, listings, missing keys, keys outside the store, size bounds, many keys at once. Run against the directory
store, the zip store, a remote store over HTTP (tests/latency_server.py, read through obstore), over S3 (moto's
server, read through obstore), the in-memory store of the tests (tests/dict_store.py) and the package's own
(storage/memory.py: an attributes document read as a one-group store)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from dict_store import DictStore
from latency_server import LatencyServer
from s3_server import s3_server

from spec_validate.errors import TooLarge
from spec_validate.storage.keyvalue import DirectoryStore, KeyValueStore, ValueTooLarge, ZipStore
from spec_validate.storage.memory import MemoryStore
from spec_validate.storage.remote import RemoteStore, filesystem

CONTENT = {
    "a": b"alpha",
    "dir/b": b"0123456789",
    "dir/sub/c": b"x" * 100,
    "dir/sub/d": b"",
}
KEYS = sorted(CONTENT)


def write(root: Path) -> Path:
    for key, value in CONTENT.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(value)
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("contract")
    (base / "secret").write_bytes(b"outside the store")
    return write(base / "store")


@pytest.fixture(scope="module")
def http_url(tree):
    with LatencyServer(tree.parent) as server:
        yield f"{server.url}/store"


@pytest.fixture(scope="module")
def s3_url(tree):
    keys = {f"store/{key}": value for key, value in CONTENT.items()} | {"secret": b"outside the store"}
    with s3_server({"contract": keys}):
        yield "s3://contract/store"


def remote(url: str) -> RemoteStore:
    fs, path = filesystem(url)
    return RemoteStore(fs, path, url, root_is_store=True)


@pytest.fixture(params=["directory", "zip", "http", "s3", "memory", "memory-store"])
def store(request, tree, tmp_path) -> KeyValueStore:
    kind = request.param
    if kind == "directory":
        made: KeyValueStore = DirectoryStore(str(tree))
    elif kind == "zip":
        with zipfile.ZipFile(tmp_path / "store.zip", "w") as zf:
            for key, value in CONTENT.items():
                zf.writestr(key, value)
        made = ZipStore(str(tmp_path / "store.zip"))
    elif kind == "http":
        made = remote(request.getfixturevalue("http_url"))
    elif kind == "s3":
        made = remote(request.getfixturevalue("s3_url"))
    elif kind == "memory-store":
        made = MemoryStore("memory", CONTENT)
    else:
        made = DictStore(CONTENT)
    yield made
    made.close()


class TestStoreContract:
    def test_whole_keys_are_their_bytes(self, store):
        assert {k: store.get(k) for k in KEYS} == CONTENT

    def test_missing_keys_are_none(self, store):
        assert store.get("missing") is None
        assert store.get("dir/missing") is None
        assert store.get("dir/sub/c/deeper") is None

    def test_keys_outside_the_store_are_refused(self, store):
        for key in ("../secret", "dir/../../secret", "/secret", "dir//b", "./a"):
            assert store.get(key) is None, key

    def test_byte_ranges(self, store):
        assert store.read_part("dir/b", 2, 3) == (b"234", 10)
        assert store.read_part("dir/b", -4, 10) == (b"6789", 10)
        assert store.read_part("dir/b", 8, 100) == (b"89", 10)
        assert store.read_part("missing", 0, 1) is None

    def test_listings(self, store):
        assert store.list_dir("") == (["a"], ["dir"])
        assert store.list_dir("dir") == (["b"], ["sub"])
        assert store.list_dir("dir/sub") == (["c", "d"], [])
        assert store.list_dir("missing") == ([], [])
        assert store.list_many(["dir", "dir/sub"]) == {"dir": (["b"], ["sub"]), "dir/sub": (["c", "d"], [])}
        assert store.list_keys("") == KEYS
        assert store.raw_keys() == KEYS

    def test_size_bounds(self, store):
        assert store.get_bounded("dir/sub/c", 100) == CONTENT["dir/sub/c"]
        with pytest.raises(ValueTooLarge):
            store.get_bounded("dir/sub/c", 99)

    def test_read_past_its_limit_is_too_large_naming_the_bound(self, store):
        assert store.read("dir/sub/c", "/g", 100) == CONTENT["dir/sub/c"]
        with pytest.raises(TooLarge, match=r"^/g: .*100 bytes, more than the 99 read for it"):
            store.read("dir/sub/c", "/g", 99)

    def test_many_keys_at_once(self, store):
        asked = ["a", "dir/b", "missing", "dir/sub/c"]
        assert store.get_many(asked) == {"a": b"alpha", "dir/b": b"0123456789", "missing": None, "dir/sub/c": b"x" * 100}
        # A value past the batch's bound is left out, for its caller to read alone and refuse there.
        assert store.get_many(asked, limit=50) == {"a": b"alpha", "dir/b": b"0123456789", "missing": None}
        assert store.get_many_soon(["a", "dir/b"])() == {"a": b"alpha", "dir/b": b"0123456789"}


def test_a_symlink_out_of_a_directory_store_is_refused(tree, tmp_path):
    write(tmp_path / "linked")
    (tmp_path / "linked" / "link").symlink_to(tree.parent / "secret")
    store = DirectoryStore(str(tmp_path / "linked"))
    assert store.get("link") is None and store.read_part("link", 0, 5) is None
    assert "link" not in store.list_dir("")[0]
