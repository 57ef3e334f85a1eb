"""DirectoryStore: keys read inside the store only, whatever symlinks, FIFOs or odd keys it holds."""

from __future__ import annotations

import os

import pytest

from spec_validate.errors import NodeError
from spec_validate.storage import keyvalue
from spec_validate.storage.keyvalue import DirectoryStore


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "s.zarr"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "0").write_bytes(b"chunk")
    (root / ".zgroup").write_bytes(b"{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    return root, outside


def test_reads_keys_at_every_depth(store):
    root, _ = store
    kv = DirectoryStore(str(root))
    assert kv.get(".zgroup") == b"{}"
    assert kv.get("a/b/0") == b"chunk"
    assert kv.get("a/b/1") is None


@pytest.mark.parametrize("key", ["", "a//b/0", "a/./b/0", "a/../a/b/0", "a/b/0/", "a\\b\\0", ".."])
def test_malformed_keys_read_nothing(store, key):
    assert DirectoryStore(str(store[0])).get(key) is None


def test_a_symlinked_key_is_read_only_when_it_stays_inside(store):
    root, outside = store
    os.symlink(root / "a" / "b" / "0", root / "a" / "b" / "alias")
    os.symlink(outside / "secret", root / "a" / "b" / "escape")
    kv = DirectoryStore(str(root))
    assert kv.get("a/b/alias") == b"chunk"
    assert kv.get("a/b/escape") is None
    assert kv.resolve("a/b/escape") is None


def test_a_symlinked_directory_leading_outside_hides_its_keys(store):
    root, outside = store
    os.symlink(outside, root / "a" / "out")
    kv = DirectoryStore(str(root))
    assert kv.get("a/out/secret") is None
    assert kv.list_dir("a") == ([], ["b"])


def test_a_directory_or_fifo_under_a_key_is_no_value_and_never_blocks(store):
    root, _ = store
    os.mkfifo(root / "a" / "b" / "fifo")
    kv = DirectoryStore(str(root))
    assert kv.get("a/b/fifo") is None  # opened without blocking, then refused as not a regular file
    assert kv.get("a/b") is None


def test_listing_keeps_symlinks_that_stay_inside_and_drops_names_that_are_no_keys(store):
    root, outside = store
    os.symlink(root / "a" / "b" / "0", root / "a" / "b" / "alias")
    os.symlink(outside / "secret", root / "a" / "b" / "escape")
    (root / "a" / "b" / "odd\\name").write_bytes(b"x")
    kv = DirectoryStore(str(root))
    assert kv.list_dir("a/b") == (["0", "alias"], [])
    assert kv.list_keys("") == [".zgroup", "a/b/0", "a/b/alias"]


def test_read_passes_absent_key_is_none(tmp_path):
    (tmp_path / "s").mkdir()
    assert DirectoryStore(str(tmp_path / "s")).read("nothing/.zattrs") is None


def test_read_fails_on_a_key_stored_but_unreadable(tmp_path):
    """A document that is there but cannot be read is not "absent": read raises, naming the key."""
    (tmp_path / "outside.json").write_text("{}")
    store = tmp_path / "s"
    store.mkdir()
    (store / ".zattrs").symlink_to(tmp_path / "outside.json")  # leads out of the store: never read
    with pytest.raises(NodeError, match=r"\.zattrs is stored but cannot be read"):
        DirectoryStore(str(store)).read(".zattrs")


@pytest.mark.parametrize(
    ("offset", "length", "expected"), [(0, 2, b"ch"), (-3, 3, b"unk"), (3, 10, b"nk"), (-10, 4, b"chun"), (9, 2, b"")]
)
def test_read_part_passes_same_bytes_as_a_whole_read_sliced(store, offset, length, expected):
    kv = DirectoryStore(str(store[0]))
    assert kv.read_part("a/b/0", offset, length) == (expected, 5)
    assert super(DirectoryStore, kv).read_part("a/b/0", offset, length) == (expected, 5)  # the fallback: a whole read


def test_read_part_passes_none_for_absent_and_outside_keys(store):
    root, outside = store
    os.symlink(outside / "secret", root / "a" / "leak")
    kv = DirectoryStore(str(root))
    assert kv.read_part("a/b/9", 0, 4) is None
    assert kv.read_part("a/leak", 0, 4) is None
    assert kv.read_part("a/b", 0, 4) is None  # a directory is no value


def test_directory_get_many_leaves_out_a_value_past_its_bound(tmp_path):
    """The batch read every store has: a value past the bound is not in the batch (its caller reads and refuses it)."""
    (tmp_path / "small").write_bytes(b"x" * 10)
    (tmp_path / "large").write_bytes(b"y" * 100)
    store = DirectoryStore(str(tmp_path))
    assert store.get_many(["small", "large", "absent"], limit=50) == {"small": b"x" * 10, "absent": None}


def _odd_store(root, outside):
    """Every kind of entry a listing leaves out or reads: symlinks in and out, to files and folders, dangling;
    a FIFO; names with a backslash, a file and a folder with keys below it."""
    os.symlink(root / "a" / "b" / "0", root / "a" / "b" / "alias")
    os.symlink(outside / "secret", root / "a" / "leak")
    os.symlink(outside, root / "a" / "out")
    os.symlink(root / "a" / "b", root / "a" / "loop")
    os.symlink(root / "nowhere", root / "a" / "dangling")
    os.mkfifo(root / "a" / "pipe")
    (root / "a" / "back\\slash").write_bytes(b"x")
    (root / "dir\\name" / "deeper").mkdir(parents=True)
    (root / "dir\\name" / "deeper" / "k").write_bytes(b"x")


def test_raw_keys_passes_same_keys_from_listings_as_from_a_walk(store):
    """Read from the listings a tree keeps and the names they left out, the raw keys are the walk's, entry for
    entry (a folder with a backslash in its name still walked as stored)."""
    root, outside = store
    _odd_store(root, outside)
    walked = DirectoryStore(str(root)).raw_keys()
    kv = DirectoryStore(str(root))
    listings: dict = {}

    def list_dir(prefix):
        if prefix not in listings:
            listings[prefix] = kv.list_dir(prefix)
        return listings[prefix]

    assert kv.raw_keys(list_dir) == walked
    assert "dir\\name/deeper/k" in walked and "a/pipe" in walked and "a/dangling" in walked


def test_left_out_passes_only_for_listed_folders_with_every_unlisted_name(store):
    root, outside = store
    _odd_store(root, outside)
    kv = DirectoryStore(str(root))
    assert kv.left_out("a") is None  # not listed yet: it cannot say
    keys, dirs = kv.list_dir("a")
    assert kv.left_out("a") == frozenset(os.listdir(root / "a")) - set(keys) - set(dirs)
    assert {"leak", "out", "loop", "dangling", "pipe", "back\\slash"} <= kv.left_out("a")
    kv.list_dir("a/b")
    assert kv.left_out("a/b") == frozenset()


@pytest.mark.parametrize("size", [0, 5, keyvalue.DIRECT_READ_BYTES - 1, keyvalue.DIRECT_READ_BYTES + 7])
def test_get_passes_every_byte_of_small_and_large_files(tmp_path, size):
    # Under DIRECT_READ_BYTES one os.read; at or over it, a buffered reader: the same bytes either way.
    data = os.urandom(size)
    (tmp_path / "k").write_bytes(data)
    assert DirectoryStore(str(tmp_path)).get("k") == data


def test_get_passes_a_file_whose_first_read_is_short(tmp_path, monkeypatch):
    # A network file system may answer a read with fewer bytes than asked: the rest is read on.
    data = os.urandom(5000)
    (tmp_path / "k").write_bytes(data)
    real_read = os.read
    monkeypatch.setattr(keyvalue.os, "read", lambda fd, n: real_read(fd, min(n, 1000)))
    assert DirectoryStore(str(tmp_path)).get("k") == data


@pytest.mark.parametrize("size", [100, keyvalue.DIRECT_READ_BYTES + 100])
def test_get_fails_on_a_file_that_grows_while_read(tmp_path, monkeypatch, size):
    # The size is taken first; a file holding more by the time it is read is not a value this run can trust.
    (tmp_path / "k").write_bytes(bytes(size))
    real_fstat = os.fstat

    def stale_fstat(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, size - 10, 0, 0, 0))

    monkeypatch.setattr(keyvalue.os, "fstat", stale_fstat)
    with pytest.raises(NodeError, match="changed while it was read"):
        DirectoryStore(str(tmp_path)).get("k")


def _denied(monkeypatch, *ends: str) -> None:
    """os.scandir refused (EACCES) for folders whose path ends so: a listing that fails, as under a permission
    the process lacks (which root, running these tests, never does)."""
    import errno

    real = os.scandir

    def scandir(path):
        if str(path).endswith(ends):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(keyvalue.os, "scandir", scandir)


def test_a_folder_that_cannot_be_listed_is_unlisted_and_reported_not_empty(store, monkeypatch):
    root, _ = store
    reported: list[tuple[str, str]] = []
    kv = DirectoryStore(str(root))
    kv.report = lambda key, why: reported.append((key, why))
    _denied(monkeypatch, os.sep + "b")
    assert kv.list_dir("a/b") == ([], []) and kv.list_dir("a") == ([], ["b"])
    assert kv.unlisted("a/b") == "cannot be listed (Permission denied)"
    assert kv.unlisted("a") is None and kv.unlisted("a", below=True) == kv.unlisted("a/b")
    assert reported == [("a/b", "a/b: cannot be listed (Permission denied); nothing below it is read")]


def test_a_folder_that_is_gone_or_a_file_is_empty_not_unlisted(store):
    root, _ = store
    kv = DirectoryStore(str(root))
    assert kv.list_dir("a/b/0") == ([], []) and kv.list_dir("nowhere") == ([], [])
    assert kv.unlisted("a/b/0") is None and kv.unlisted("nowhere") is None and kv.unlisted("", below=True) is None


def test_a_key_in_a_folder_that_cannot_be_searched_is_stored_not_absent(store, monkeypatch):
    # Read permission without execute: the folder lists its names, but no file in it can be opened or seen by lstat.
    root, _ = store
    kv = DirectoryStore(str(root))
    assert not kv.stored("a/b/1")
    monkeypatch.setattr(keyvalue.os, "access", lambda path, mode: not str(path).endswith(os.sep + "b"))
    assert kv.stored("a/b/1") and not kv.stored("a/c/1")  # a folder that is not there holds nothing
