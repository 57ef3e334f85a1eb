"""Input discovery: files, stores, paths inside stores and folders, as ruff takes files and folders."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from spec_validate import inputs
from spec_validate.inputs import (
    DEFAULT_EXCLUDE,
    LINKED_FOLDER,
    NOT_A_STORE,
    NOT_NAMED,
    NOT_REGULAR,
    NOTHING_FOUND,
    REMOTE_CXG,
    STRAY,
    TOO_MANY_FOLDERS,
    Exclude,
    Input,
    discover,
    is_data_file,
    store_root,
)

HDF5 = b"\x89HDF\r\n\x1a\n" + bytes(100)


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """data/ holding one of each: stores by name and by document, data files by name and by signature, and others."""
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    (data / "a.zarr" / "X").mkdir(parents=True)  # named: one input, never descended into
    (data / "a.zarr" / "X" / ".zarray").write_text("{}")
    (data / "plain" / "X").mkdir(parents=True)  # not named, but a Zarr root document
    (data / "plain" / ".zgroup").write_text("{}")
    (data / "plain" / "X" / ".zgroup").write_text("{}")
    (data / "sub" / "deeper").mkdir(parents=True)
    (data / "sub" / "deeper" / "cells.H5AD").write_bytes(b"not even hdf5")  # by name, any case: opened, then judged
    (data / "sub" / "signed.bin").write_bytes(HDF5)  # by signature
    (data / "sub" / "notes.txt").write_text("notes")
    (data / ".hidden").mkdir()
    (data / ".hidden" / "x.h5ad").write_bytes(HDF5)
    (data / "node_modules").mkdir()
    (data / "node_modules" / "y.h5ad").write_bytes(HDF5)
    with zipfile.ZipFile(data / "packed.zip", "w") as zf:
        zf.writestr(".zgroup", "{}")
    with zipfile.ZipFile(data / "other.zip", "w") as zf:
        zf.writestr("readme.md", "hi")
    return data


def test_discover_passes_folder_finds_stores_and_data_files_and_skips_the_rest(folder):
    assert discover(["data/"]) == [
        Input("data/a.zarr", explicit=False),
        Input("data/other.zip", explicit=False, skipped=NOT_A_STORE),
        Input("data/packed.zip", explicit=False),
        Input("data/plain", explicit=False),
        Input("data/sub/deeper/cells.H5AD", explicit=False),
        Input("data/sub/notes.txt", explicit=False, skipped=NOT_A_STORE),
        Input("data/sub/signed.bin", explicit=False),
    ]


def test_discover_passes_exclude_replaces_the_defaults_and_extends(folder):
    found = [i.path for i in discover(["data"], [Exclude("sub", str(folder.parent))]) if i.skipped is None]
    assert "data/node_modules/y.h5ad" in found and not any(p.startswith("data/sub") for p in found)
    defaults = [Exclude(p, str(folder.parent)) for p in DEFAULT_EXCLUDE]
    found = [i.path for i in discover(["data"], [*defaults, Exclude("data/sub/deeper/*", str(folder.parent))])]
    assert "data/sub/deeper/cells.H5AD" not in found and "data/sub/signed.bin" in found


def test_discover_passes_excludes_never_apply_to_a_path_named_outright(folder):
    assert discover(["data/node_modules/y.h5ad"], [Exclude("node_modules", os.getcwd())]) == [Input("data/node_modules/y.h5ad")]


@pytest.mark.skipif(shutil.which("git") is None, reason="git missing")
def test_discover_passes_gitignore_is_respected(folder):
    subprocess.run(["git", "init", "-q", str(folder.parent)], check=True)
    (folder.parent / ".gitignore").write_text("data/plain/\n*.bin\n")
    found = [i.path for i in discover(["data"])]
    assert "data/plain" not in found and "data/sub/signed.bin" not in found and "data/a.zarr" in found
    assert [i.path for i in discover(["data"], respect_gitignore=False)].count("data/plain") == 1


def test_discover_passes_path_inside_a_store_names_its_node(folder):
    assert discover(["data/a.zarr/X"]) == [Input("data/a.zarr", "/X")]
    assert discover(["data/plain/X/"]) == [Input("data/plain", "/X")]
    assert discover(["data/plain/X/.zgroup"]) == [Input("data/plain")]  # a key (pre-commit): the whole store


def test_discover_passes_paths_are_spelled_as_given(folder):
    absolute = str(folder / "plain" / "X" / ".zgroup")
    assert discover([absolute]) == [Input(str(folder / "plain"))]  # not made relative to the working directory
    os.chdir(folder / "sub")
    assert discover(["../plain/X"]) == [Input("../plain", "/X")]


def test_discover_passes_each_store_once(folder):
    keys = ["data/a.zarr/X/.zarray", "data/a.zarr", "data/a.zarr/X", "data/plain/X", "data/plain/X/.zgroup"]
    assert discover(keys) == [Input("data/a.zarr"), Input("data/plain")]


def test_discover_passes_folder_without_stores_is_one_skipped_line(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.md").write_text("hi")
    got = discover([str(tmp_path / "empty")])
    assert got[0] == Input(str(tmp_path / "empty"), skipped=NOTHING_FOUND)
    assert [i.skipped for i in got[1:]] == [NOT_A_STORE]


def test_discover_passes_url_and_missing_path_unchanged(tmp_path):
    assert discover(["s3://bucket/a.zarr", str(tmp_path / "missing.h5ad")]) == [
        Input("s3://bucket/a.zarr"),
        Input(str(tmp_path / "missing.h5ad")),
    ]


@pytest.mark.parametrize(
    "name,content,expected",
    [
        pytest.param("x.h5Seurat", b"", True, id="name-any-case"),
        pytest.param("x.zarr.zip", b"", True, id="zarr-zip-name"),
        pytest.param("x.nwb", HDF5, True, id="hdf5-signature"),
        pytest.param("x.dat", bytes(512) + HDF5, True, id="hdf5-after-user-block"),
        pytest.param("x.txt", b"text", False, id="text"),
    ],
)
def test_is_data_file(tmp_path, name, content, expected):
    (tmp_path / name).write_bytes(content)
    assert is_data_file(str(tmp_path / name)) is expected


def test_store_root_maps_a_deleted_key_to_its_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.zarr" / "X").mkdir(parents=True)
    assert store_root("x.zarr/X/0") == "x.zarr"
    assert store_root("missing.h5ad") == "missing.h5ad"


def test_discover_passes_a_stray_zattrs_does_not_make_a_folder_a_store(tmp_path, monkeypatch):
    # A `.zattrs` describes a group or an array only beside its `.zgroup` or `.zarray`: a folder holding a stray one
    # is searched, so the data file in it is checked rather than hidden behind a "store" that conforms.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / ".zattrs").write_text("{}")
    (tmp_path / "results" / "cells.h5ad").write_bytes(HDF5)
    assert discover(["results"]) == [
        Input("results/.zattrs", explicit=False, skipped=STRAY),  # said, not silently left out as hidden entries are
        Input("results/cells.h5ad", explicit=False),
    ]
    assert store_root("results/cells.h5ad") == "results/cells.h5ad"


def test_discover_passes_what_a_search_meets_and_does_not_open_is_listed_skipped(tmp_path, monkeypatch):
    # A link to a folder (never followed), a FIFO and a broken link (never opened) were left out without a word.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "real").mkdir(parents=True)
    (tmp_path / "data" / "real" / "a.h5ad").write_bytes(HDF5)
    (tmp_path / "data" / "linked").symlink_to(tmp_path / "data" / "real")
    (tmp_path / "data" / "gone.h5ad").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "data" / "pipe")
    (tmp_path / "data" / ".DS_Store").write_bytes(b"")  # hidden: left out, as ruff leaves them out
    assert discover(["data"]) == [
        Input("data/gone.h5ad", explicit=False, skipped=NOT_REGULAR),
        Input("data/linked", explicit=False, skipped=LINKED_FOLDER),
        Input("data/pipe", explicit=False, skipped=NOT_REGULAR),
        Input("data/real/a.h5ad", explicit=False),
    ]


# ---------------------------------------------------------------- folders behind URLs


@pytest.fixture
def served(tmp_path):
    """srv/data as the local search test's folder, plus a stray .zattrs, a CXG and a store named by its document."""
    data = tmp_path / "srv" / "data"
    (data / "a.zarr").mkdir(parents=True)
    (data / "a.zarr" / ".zgroup").write_text('{"zarr_format": 2}')
    (data / "plain").mkdir()
    (data / "plain" / ".zgroup").write_text('{"zarr_format": 2}')  # a store by its root document, not its name
    (data / "sub" / "deeper").mkdir(parents=True)
    (data / "sub" / "deeper" / "cells.H5AD").write_bytes(HDF5)
    (data / "sub" / "signed.bin").write_bytes(HDF5)  # found locally by its signature; behind a URL, by name only
    (data / "stray").mkdir()
    (data / "stray" / ".zattrs").write_text("{}")
    (data / "stray" / "x.h5Seurat").write_bytes(HDF5)
    (data / "atlas.cxg").mkdir()
    (data / ".hidden").mkdir()
    (data / ".hidden" / "x.h5ad").write_bytes(HDF5)
    (data / "node_modules").mkdir()
    (data / "node_modules" / "y.h5ad").write_bytes(HDF5)
    return tmp_path / "srv"


def _server(directory, **options):
    pytest.importorskip("obstore")
    from latency_server import LatencyServer

    return LatencyServer(directory, **options)


@pytest.mark.parametrize("slash", ["", "/"], ids=["no-slash", "slash"])
def test_discover_passes_folder_url_is_searched_as_a_local_folder(served, slash):
    with _server(served) as server:
        base = f"{server.url}/data"
        assert discover([base + slash]) == [
            Input(f"{base}/a.zarr", explicit=False),
            Input(f"{base}/atlas.cxg", explicit=False, skipped=REMOTE_CXG),
            Input(f"{base}/plain", explicit=False),
            Input(f"{base}/stray/.zattrs", explicit=False, skipped=STRAY),
            Input(f"{base}/stray/x.h5Seurat", explicit=False),
            Input(f"{base}/sub/deeper/cells.H5AD", explicit=False),
            Input(f"{base}/sub/signed.bin", explicit=False, skipped=NOT_NAMED),
        ]


def test_discover_passes_url_named_as_a_store_or_file_costs_no_request(served):
    with _server(served) as server:
        urls = [f"{server.url}/data/a.zarr", f"{server.url}/data/sub/deeper/cells.H5AD"]
        assert discover(urls) == [Input(u) for u in urls]
        assert sum(server.counts.values()) == 0


def test_discover_passes_url_of_a_store_without_its_name_is_one_input(served):
    with _server(served) as server:
        assert discover([f"{server.url}/data/plain/"]) == [Input(f"{server.url}/data/plain/")]


def test_discover_passes_url_whose_server_lists_nothing_is_opened_as_given(served):
    # Static hosting and S3 websites answer a folder's URL with 403: no search, and the input says why.
    with _server(served, listings=False) as server:
        url = f"{server.url}/data/"
        assert discover([url]) == [Input(url, unlisted="HTTP 403 Forbidden")]
        assert discover([f"{server.url}/nothing-here"]) == [Input(f"{server.url}/nothing-here")]  # said once, by opening


def test_discover_passes_folder_url_search_stops_at_its_bound(served, monkeypatch):
    monkeypatch.setattr(inputs, "MOST_REMOTE_FOLDERS", 3)  # the root, plain (a store, known by its listing) and stray
    with _server(served) as server:
        found = discover([f"{server.url}/data"])
        base = f"{server.url}/data"
        assert Input(f"{base}/sub", explicit=False, skipped=TOO_MANY_FOLDERS) in found
        assert f"{base}/stray/x.h5Seurat" in [i.path for i in found if i.skipped is None]  # listed within the bound


def test_discover_passes_folder_url_leaves_out_excluded_names(served):
    with _server(served) as server:
        found = [i.path for i in discover([f"{server.url}/data"], [Exclude("sub", os.getcwd()), Exclude("node_modules", "")])]
        assert not any("/sub/" in p or "node_modules" in p or ".hidden" in p for p in found) and found


def _bucket(folder: Path) -> dict[str, bytes]:
    """The files under `folder` as an S3 bucket's keys (S3 has no empty folders: each one here holds a file)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def bucket(served):
    """The `served` folder's files as the keys of bucket "archive" on a moto S3 server (atlas.cxg given its marker)."""
    from s3_server import s3_server

    (served / "data" / "atlas.cxg" / "__tiledb_group.tdb").write_bytes(b"")
    with s3_server({"archive": _bucket(served)}) as server:
        yield server


@pytest.mark.parametrize("slash", ["", "/"], ids=["no-slash", "slash"])
def test_discover_passes_s3_prefix_is_searched_as_the_folder_url_is(served, bucket, slash):
    with _server(served) as server:
        over_http = discover([f"{server.url}/data/"])
    found = discover([f"s3://archive/data{slash}"])
    assert found == [i._replace(path=i.path.replace(f"{server.url}/", "s3://archive/")) for i in over_http]
    assert Input("s3://archive/data/plain", explicit=False) in found  # a store by its root document, not its name
    # One delimiter listing per folder searched; stores named as such (a.zarr), CXGs and excluded folders are not listed.
    listed = ["archive/data", "archive/data/plain", "archive/data/stray", "archive/data/sub", "archive/data/sub/deeper"]
    assert sorted(bucket.listings(flat=False)) == listed


def test_discover_passes_s3_bucket_root_is_searched(bucket):
    found = [i.path for i in discover(["s3://archive"]) if i.skipped is None]
    assert found == [f"s3://archive/data/{name}" for name in ("a.zarr", "plain", "stray/x.h5Seurat", "sub/deeper/cells.H5AD")]


def test_discover_passes_s3_prefix_of_a_store_without_its_name_is_one_input(bucket):
    assert discover(["s3://archive/data/plain/"]) == [Input("s3://archive/data/plain/")]


def test_discover_passes_s3_url_named_as_a_store_or_file_costs_no_request(bucket):
    urls = ["s3://archive/data/a.zarr", "s3://archive/data/sub/deeper/cells.H5AD", "s3://archive/data/a.zarr/.zgroup"]
    assert discover(urls) == [Input(u) for u in urls]
    assert not bucket.requests


@pytest.mark.parametrize(
    "url,why",
    [
        pytest.param("s3://archive/nothing/", "no key is stored below it", id="empty-prefix"),
        pytest.param("s3://archive/data/sub/signed.bin", "no key is stored below it", id="a-key-not-named-as-a-file"),
        pytest.param("s3://missing-bucket/data/", "no such bucket (NoSuchBucket)", id="no-bucket"),
    ],
)
def test_discover_passes_s3_prefix_listing_nothing_is_opened_as_given(bucket, url, why):
    assert discover([url]) == [Input(url, unlisted=why)]


def test_discover_passes_s3_prefix_leaves_out_excluded_names_and_stops_at_its_bound(bucket, monkeypatch):
    found = [i.path for i in discover(["s3://archive/data"], [Exclude("sub", os.getcwd()), Exclude("node_modules", "")])]
    assert not any("/sub/" in p or "node_modules" in p or ".hidden" in p for p in found) and found
    monkeypatch.setattr(inputs, "MOST_REMOTE_FOLDERS", 3)
    assert Input("s3://archive/data/sub", explicit=False, skipped=TOO_MANY_FOLDERS) in discover(["s3://archive/data"])
