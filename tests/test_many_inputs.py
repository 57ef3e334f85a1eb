"""Several inputs in one run: a summary table after the text report, --jobs N in processes, input order kept."""

from __future__ import annotations

import json
import shutil

import h5py
import pytest
from corpus_paths import FAILING_ZARR as ZARR
from corpus_paths import VALID_H5AD

from validator.cli import main

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


@pytest.fixture
def inputs(tmp_path, monkeypatch) -> list[str]:
    monkeypatch.chdir(tmp_path)
    shutil.copy(VALID_H5AD, "valid.h5ad")
    shutil.copy(VALID_H5AD, "broken.h5ad")
    with h5py.File("broken.h5ad", "a") as f:
        del f["obs"].attrs["_index"]
    shutil.copytree(ZARR, "rich.zarr")
    shutil.copy(VALID_H5AD, "valid2.h5ad")
    return ["valid.h5ad", "broken.h5ad", "rich.zarr", "valid2.h5ad"]


def test_many_inputs_text_ends_with_a_summary_table(inputs, capsys):
    assert main(inputs) == 1
    out = capsys.readouterr().out
    table = out[out.index("Summary (4 inputs") :].splitlines()
    assert table[1].split() == ["file", "format", "MUST", "SHOULD", "MAY", "result"]
    assert table[2].split() == ["valid.h5ad", "hdf5", "0", "0", "0", "conforms"]
    assert table[3].split() == ["broken.h5ad", "hdf5", "1", "0", "0", "does", "not", "conform"]
    assert table[4].split() == ["rich.zarr", "zarr-v2", "1", "0", "0", "does", "not", "conform"]
    assert table[5].split() == ["valid2.h5ad", "hdf5", "0", "0", "0", "conforms"]
    assert table[6] == "2 of 4 do not conform at --fail-on must."


def test_many_inputs_single_input_has_no_summary_table(inputs, capsys):
    main(["valid.h5ad"])
    assert "Summary" not in capsys.readouterr().out


def test_many_inputs_jobs_gives_the_same_json_in_input_order(inputs, capsys):
    assert main(["--format", "json", *inputs]) == 1
    serial = json.loads(capsys.readouterr().out)
    assert main(["--format", "json", "--jobs", "3", *inputs]) == 1
    parallel = json.loads(capsys.readouterr().out)
    assert [r["source"] for r in parallel["reports"]] == inputs
    assert parallel == serial


def test_many_inputs_jobs_with_sarif_holds_every_input(inputs, capsys):
    assert main(["--format", "sarif", "--jobs", "2", *inputs]) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert [a["location"]["uri"] for a in run["artifacts"]] == inputs


def test_many_inputs_jobs_rejects_zero(inputs, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--jobs", "0", *inputs])
    assert exc.value.code == 2


def test_many_inputs_unreadable_input_in_a_worker_is_exit_2(inputs, capsys):
    assert main(["--jobs", "2", "valid.h5ad", "missing.h5ad"]) == 2
    assert "missing.h5ad: no such file or directory" in capsys.readouterr().err
