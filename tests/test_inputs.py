"""Input discovery: files, stores, paths inside stores and folders, as ruff takes files and folders."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from spec_validate.inputs import DEFAULT_EXCLUDE, NOT_A_STORE, NOTHING_FOUND, Exclude, Input, discover, is_data_file, store_root

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
    assert discover(["results"]) == [Input("results/cells.h5ad", explicit=False)]
    assert store_root("results/cells.h5ad") == "results/cells.h5ad"
