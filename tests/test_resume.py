"""A streamed run (--format jsonl) writes each input's line as it finishes; --resume FILE goes on with a run that was
cut short: the inputs FILE holds are not validated again, and the summary and exit code are an uninterrupted run's."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from corpus_paths import CASES

from spec_validate import cli
from spec_validate.cli import main

VALID = CASES / "h5ad" / "valid-every-element.h5ad"
MUST_FAILS = CASES / "h5ad" / "csr-indptr-decreasing.h5ad"
SHOULD_FAILS = CASES / "h5ad" / "scalar-outside-uns.h5ad"

pytestmark = pytest.mark.skipif(not VALID.exists(), reason="conformance corpus not generated")

CASES_BY_NAME = {"a": VALID, "b": MUST_FAILS, "c": SHOULD_FAILS, "d": VALID, "e": MUST_FAILS, "f": VALID}
NAMES = [f"archive/{name}.h5ad" for name in CASES_BY_NAME]  # as the folder search names them


@pytest.fixture
def archive(tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    Path("archive").mkdir()
    for name, case in CASES_BY_NAME.items():
        shutil.copy(case, f"archive/{name}.h5ad")
    return "archive"


@pytest.fixture
def validated(monkeypatch) -> Counter:
    """The inputs validated in this process (run with --jobs 1), each counted."""
    seen: Counter = Counter()
    real = cli._validate_one

    def counting(item, *args, **kwargs):
        seen[item.path] += 1
        return real(item, *args, **kwargs)

    monkeypatch.setattr(cli, "_validate_one", counting)
    return seen


def lines(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def by_input(path: str) -> dict[str, dict]:
    return {line["input"]: line for line in lines(path) if line["type"] == "report"}


def test_jsonl_run_writes_each_line_as_its_input_finishes(archive, monkeypatch):
    written_before: list[int] = []
    real = cli._validate_one

    def looking(item, *args, **kwargs):  # what the file holds when the next input starts
        written_before.append(sum(1 for line in lines("out.jsonl") if line["type"] == "report"))
        return real(item, *args, **kwargs)

    monkeypatch.setattr(cli, "_validate_one", looking)
    assert main([archive, "--format", "jsonl", "-o", "out.jsonl", "--jobs", "1"]) == 1
    assert written_before == [0, 1, 2, 3, 4, 5]
    types = [line["type"] for line in lines("out.jsonl")]
    assert types == ["run", "report", "report", "report", "report", "report", "report", "summary"]
    run = lines("out.jsonl")[0]["run"]
    assert {"version", "packs", "select", "ignore", "fail_on", "deep", "baseline"} <= set(run)
    summary = lines("out.jsonl")[-1]["archive"]
    assert summary["outcomes"]["does not conform"] == 2 and summary["outcomes"]["conforms"] == 4
    assert [(r["rule"], r["inputs"], r["first"]) for r in summary["rules"]] == [
        ("anndata.csr_matrix.indptr-monotonic", 2, ["archive/b.h5ad", "archive/e.h5ad"]),
        ("anndata.scalar.only-in-uns", 1, ["archive/c.h5ad"]),
    ]


def test_jsonl_run_in_processes_writes_every_input_once_and_the_same_summary(archive):
    assert main([archive, "--format", "jsonl", "-o", "serial.jsonl", "--jobs", "1"]) == 1
    assert main([archive, "--format", "jsonl", "-o", "pool.jsonl", "--jobs", "2"]) == 1
    assert sorted(by_input("pool.jsonl")) == NAMES
    assert lines("pool.jsonl")[-1] == lines("serial.jsonl")[-1]


def test_jsonl_goes_to_stdout_without_output(archive, capsys):
    assert main([archive, "--format", "jsonl", "--jobs", "1", "--select", "anndata.csr_matrix"]) == 1
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out[0]["type"] == "run" and out[-1]["type"] == "summary" and len(out) == 8


@pytest.mark.parametrize("done", [0, 1, 3, 5, 6])
def test_resume_validates_only_the_rest_once_and_sums_up_as_an_uninterrupted_run(archive, validated, done):
    assert main([archive, "--format", "jsonl", "-o", "full.jsonl", "--jobs", "1"]) == 1
    full = Path("full.jsonl").read_bytes().splitlines(keepends=True)
    # Killed while writing the line after the first `done` inputs: their lines, and part of the next one.
    Path("cut.jsonl").write_bytes(b"".join(full[: 1 + done]) + full[1 + done][:25])
    validated.clear()
    assert main([archive, "--format", "jsonl", "--resume", "cut.jsonl", "--jobs", "1"]) == 1
    assert validated == Counter({name: 1 for name in NAMES[done:]})  # each of the rest once, none of the others
    assert lines("cut.jsonl")[-1] == lines("full.jsonl")[-1]  # the same summary
    assert by_input("cut.jsonl") == by_input("full.jsonl")  # one line per input, the same
    assert [line["type"] for line in lines("cut.jsonl")].count("run") == 1


def test_resume_of_a_finished_run_validates_nothing_and_writes_its_summary_again(archive, validated):
    assert main([archive, "--format", "jsonl", "-o", "run.jsonl", "--jobs", "1", "--fail-on", "should"]) == 1
    before = Path("run.jsonl").read_text()
    validated.clear()
    assert main([archive, "--format", "jsonl", "--resume", "run.jsonl", "--fail-on", "should", "-o", "run.jsonl"]) == 1
    assert not validated
    assert Path("run.jsonl").read_text() == before


def test_resume_of_a_file_not_there_yet_starts_the_run(archive):
    assert main([archive, "--format", "jsonl", "--resume", "new.jsonl", "--jobs", "1"]) == 1
    assert main([archive, "--format", "jsonl", "-o", "plain.jsonl", "--jobs", "1"]) == 1
    assert Path("new.jsonl").read_text() == Path("plain.jsonl").read_text()


def test_resume_exit_code_counts_an_input_that_could_not_be_opened_before_the_kill(archive, validated, capsys):
    assert main(["gone.h5ad", archive, "--format", "jsonl", "-o", "full.jsonl", "--jobs", "1"]) == 2
    full = Path("full.jsonl").read_bytes().splitlines(keepends=True)
    Path("cut.jsonl").write_bytes(b"".join(full[:3]))  # the run line, gone.h5ad's (no such file) and a.h5ad's
    capsys.readouterr()
    validated.clear()
    assert main(["gone.h5ad", archive, "--format", "jsonl", "--resume", "cut.jsonl", "--jobs", "1"]) == 2
    assert "gone.h5ad" not in validated and sum(validated.values()) == 5
    assert "spec-validate: error: gone.h5ad: " in capsys.readouterr().err
    assert lines("cut.jsonl")[-1] == lines("full.jsonl")[-1]
    rules = {r["rule"]: r for r in lines("cut.jsonl")[-1]["archive"]["rules"]}
    assert (rules["input-error"]["inputs"], rules["input-error"]["first"]) == (1, ["gone.h5ad"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--fail-on", "should"], "--fail-on must there, should here", id="fail-on"),
        pytest.param(["--select", "anndata.csr_matrix"], '--select [] there, ["anndata.csr_matrix"] here', id="select"),
        pytest.param(["--deep"], "--deep false there, true here", id="deep"),
        pytest.param(["--fail-on-unchecked"], "--fail-on-unchecked false there, true here", id="fail-on-unchecked"),
    ],
)
def test_resume_of_another_runs_file_is_a_one_line_error(archive, flags, message, capsys):
    assert main([archive, "--format", "jsonl", "-o", "run.jsonl", "--jobs", "1"]) == 1
    before = Path("run.jsonl").read_bytes()
    capsys.readouterr()
    assert main([archive, "--format", "jsonl", "--resume", "run.jsonl", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spec-validate: error: run.jsonl: written by another run: ") and err.count("\n") == 1
    assert message in err
    assert Path("run.jsonl").read_bytes() == before  # left as it was


def test_resume_of_another_pack_names_the_pack(archive, capsys):
    assert main([archive, "--format", "jsonl", "-o", "run.jsonl", "--jobs", "1"]) == 1
    doc = lines("run.jsonl")
    doc[0]["run"]["packs"][0]["sha256"] = "0" * 16  # as if the pack's YAML had been edited since
    Path("run.jsonl").write_text("".join(json.dumps(line) + "\n" for line in doc))
    capsys.readouterr()
    assert main([archive, "--format", "jsonl", "--resume", "run.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "rule packs anndata 0.1.0 (0000000000000000) there, anndata 0.1.0 (" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param('{"tool": "spec-validate", "findings": []}\n', "not a spec-validate --format jsonl file", id="baseline"),
        pytest.param('{"type": "run", "run": {}}\n', "its first line records no tool version", id="no-version"),
        pytest.param('{"type": "run", "run": {"version": "0.0.1"}}\n', "tool version 0.0.1 there, ", id="other-version"),
    ],
)
def test_resume_of_a_file_no_jsonl_run_wrote_is_a_one_line_error(archive, content, message, capsys):
    Path("other.json").write_text(content)
    assert main([archive, "--format", "jsonl", "--resume", "other.json"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert Path("other.json").read_text() == content


def test_resume_with_other_paths_is_a_one_line_error(archive, capsys):
    assert main([archive, "--format", "jsonl", "-o", "run.jsonl", "--jobs", "1"]) == 1
    capsys.readouterr()
    assert main(["archive/a.h5ad", "--format", "jsonl", "--resume", "run.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "run.jsonl: line 3 is the report of archive/b.h5ad, which the paths given do not name" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--resume", "run.jsonl"], "--resume continues a --format jsonl run", id="resume-text"),
        pytest.param(
            ["--format", "jsonl", "--resume", "run.jsonl", "-o", "other.jsonl"],
            "--resume FILE appends to FILE",
            id="other-output",
        ),
        pytest.param(["--format", "jsonl", "--write-baseline", "b.json"], "--write-baseline needs every report", id="baseline"),
    ],
)
def test_streamed_run_usage_errors(archive, flags, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main([archive, *flags])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
