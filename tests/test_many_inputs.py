"""Several inputs in one run: a summary table after the text report, --jobs N in processes, input order kept."""

from __future__ import annotations

import json
import re
import shutil

import h5py
import pytest
from corpus_paths import FAILING_ZARR as ZARR
from corpus_paths import VALID_H5AD

from spec_validate.cli import main

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
    # The Zarr store's chunk decoding clause needs --deep: not checked, which its result and the tail say.
    assert table[4].split() == [
        "rich.zarr",
        "zarr-v2",
        "1",
        "0",
        "0",
        "does",
        "not",
        "conform",
        "(1",
        "clause(s)",
        "not",
        "checked)",
    ]
    assert table[5].split() == ["valid2.h5ad", "hdf5", "0", "0", "0", "conforms"]
    # Then the rules failing, each with how many inputs fail it and their names (report/archive.py), and the
    # verdicts counted on the last line.
    assert table[6:9] == [
        "",
        "Rules failing at or above --fail-on must (inputs that fail each):",
        "  MUST    1 input  anndata.dataframe.index-attr              broken.h5ad",
    ]
    assert table[9].split() == ["MUST", "1", "input", "anndata.string.zarr-fixed-length-unicode", "rich.zarr"]
    assert table[10:] == ["2 of 4 do not conform at --fail-on must; 1 with clauses not checked."]


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


def _text_entry(out):
    assert "notes.txt: error: not an HDF5 file or a Zarr store" in out.splitlines()
    return [line.split(" (")[0] for line in out.splitlines() if re.match(r"^\S+ \((hdf5|zarr-v2); ", line)]


def _json_entry(out):
    import jsonschema
    from test_cli import SCHEMA

    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    (bad,) = [r for r in doc["reports"] if "error" in r]
    assert bad["source"] == "notes.txt" and bad["verdict"]["outcome"] == "error" and bad["results"] == []
    return [r["source"] for r in doc["reports"] if "error" not in r and r["results"]]


def _sarif_entry(out):
    import jsonschema
    from report.test_sarif import SCHEMA as SARIF

    doc = json.loads(out)
    jsonschema.validate(doc, SARIF)
    run = doc["runs"][0]
    (bad,) = [r for r in run["results"] if r["ruleId"] == "input-error"]
    assert bad["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "notes.txt" and bad["level"] == "error"
    return [a["location"]["uri"] for a in run["artifacts"] if a["location"]["uri"] != "notes.txt"]


def _github_entry(out):
    (bad,) = [line for line in out.splitlines() if "file=notes.txt," in line]
    assert bad.startswith("::error ") and "title=MUST input-error::cannot be opened: notes.txt" in bad
    annotations = [line for line in out.splitlines() if line.startswith("::")]  # not the era/writer log lines
    annotated = {line.split("file=")[1].split(",")[0].split("/")[0] for line in annotations} - {"notes.txt"}
    return [*annotated, "valid.h5ad"]  # a conforming file has nothing to annotate


def _junit_entry(out):
    import xml.etree.ElementTree as ET

    suites = {s.get("name"): s for s in ET.fromstring(out).iter("testsuite")}
    assert suites["notes.txt"].find("testcase/error") is not None and suites["notes.txt"].get("errors") == "1"
    return [name for name, s in suites.items() if name != "notes.txt" and int(s.get("tests")) > 1]


def _markdown_entry(out):
    assert "| `notes.txt` | - | \u26a0\ufe0f error |" in out  # its row in the table
    assert "| `notes.txt` | MUST | `input-error` | `/` | notes.txt: not an HDF5 file or a Zarr store |" in out
    return [line.split("`")[1] for line in out.splitlines() if line.startswith("| `") and "conform" in line]


def _html_entry(out):
    assert "<h2>notes.txt</h2>" in out and "error: notes.txt: not an HDF5 file or a Zarr store" in out
    return [name for name in ("valid.h5ad", "broken.h5ad", "rich.zarr") if f"<h2>{name}</h2>" in out]


@pytest.mark.parametrize(
    "fmt,entry",
    [
        pytest.param("text", _text_entry, id="text"),
        pytest.param("json", _json_entry, id="json"),
        pytest.param("sarif", _sarif_entry, id="sarif"),
        pytest.param("github", _github_entry, id="github"),
        pytest.param("junit", _junit_entry, id="junit"),
        pytest.param("markdown", _markdown_entry, id="markdown"),
        pytest.param("html", _html_entry, id="html"),
    ],
)
def test_many_inputs_one_that_cannot_be_opened_is_one_error_entry_and_the_others_are_reported(inputs, capsys, fmt, entry):
    # Before, `spec-validate a.h5ad b.h5ad notes.txt` exited 2 with no report at all (the JSON output was empty).
    with open("notes.txt", "w") as fh:
        fh.write("just some notes\n")
    assert main(["--format", fmt, "valid.h5ad", "broken.h5ad", "notes.txt", "rich.zarr"]) == 2
    out, err = capsys.readouterr()
    assert err == "spec-validate: error: notes.txt: not an HDF5 file or a Zarr store\n"
    assert sorted(entry(out)) == ["broken.h5ad", "rich.zarr", "valid.h5ad"]


def test_many_inputs_jobs_reports_the_input_that_cannot_be_opened_with_the_others(inputs, capsys):
    assert main(["--jobs", "2", "--format", "json", "valid.h5ad", "missing.h5ad", "broken.h5ad"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [(r["source"], r["verdict"]["outcome"]) for r in doc["reports"]] == [
        ("valid.h5ad", "conforms"),
        ("missing.h5ad", "error"),
        ("broken.h5ad", "does not conform"),
    ]
