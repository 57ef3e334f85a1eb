"""The spec-validate command: exit codes, selection, --list-rules, --explain, bad inputs, output files."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import jsonschema
import pytest
from corpus_paths import CASES
from docs_examples import extends_example

import spec_validate
from spec_validate import inputs
from spec_validate.checks import registry
from spec_validate.cli import main
from spec_validate.engine.loader import builtin_packs
from spec_validate.explain import quoted

SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())
RULES = [r for p in builtin_packs() for r in p.rules]


@pytest.fixture(autouse=True)
def outside_any_project(tmp_path, monkeypatch):
    """Run from an empty directory, so no pyproject.toml [tool.spec-validate] changes what these tests see."""
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def validator_json(path) -> str:
    return spec_validate.render(spec_validate.validate(path), "json")


def run_subprocess(*args):
    return subprocess.run([sys.executable, "-m", "spec_validate", *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "fixture,args,expected",
    [
        pytest.param("valid_h5ad", [], 0, id="valid-exits-0"),
        pytest.param("valid_zarr", [], 0, id="valid-zarr-exits-0"),
        pytest.param("broken_h5ad", [], 1, id="must-failure-exits-1"),
        pytest.param("broken_h5ad", ["--exit-zero"], 0, id="exit-zero"),
        pytest.param("should_failing_h5ad", [], 0, id="should-failure-exits-0-at-must"),
        pytest.param("should_failing_h5ad", ["--fail-on", "should"], 1, id="fail-on-should-exits-1"),
        pytest.param("should_failing_h5ad", ["--fail-on", "may"], 1, id="fail-on-may-exits-1"),
        pytest.param("broken_h5ad", ["--ignore", "anndata.csr_matrix"], 0, id="ignore-prefix"),
        pytest.param("broken_h5ad", ["--select", "anndata.dataframe"], 0, id="select-other-prefix"),
        pytest.param("broken_h5ad", ["--select", "anndata.csr_matrix.indptr-monotonic"], 1, id="select-failing-rule"),
        pytest.param(
            "broken_h5ad", ["--select", "anndata", "--ignore", "anndata.csr_matrix.indptr-monotonic"], 0, id="select-and-ignore"
        ),
    ],
)
def test_main_exit_code(request, capsys, fixture, args, expected):
    code, out, err = cli(capsys, request.getfixturevalue(fixture), *args)
    assert code == expected, out + err
    assert err == ""


def test_main_fails_unknown_rule_prefix_exits_2(capsys, valid_h5ad):
    code, out, err = cli(capsys, valid_h5ad, "--select", "anndata.csr_matrixx")
    assert code == 2 and out == ""
    assert err == "spec-validate: error: no rule matches 'anndata.csr_matrixx' (see --list-rules)\n"


def test_main_passes_select_limits_results(capsys, broken_h5ad):
    code, out, _ = cli(capsys, broken_h5ad, "--select", "anndata.csr_matrix", "--format", "json")
    assert code == 1  # the selected clause still fails
    ids = {r["id"] for r in json.loads(out)["reports"][0]["results"]}
    assert ids and all(i.startswith("anndata.csr_matrix.") for i in ids)


def test_main_passes_list_rules_lists_every_rule(capsys):
    code, out, _ = cli(capsys, "--list-rules")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == len(RULES)
    for line, rule in zip(lines, RULES, strict=True):
        level, rid = line.split()[:2]
        assert (level, rid) == (rule.level.value, rule.id)


def test_main_passes_list_rules_json(capsys):
    code, out, _ = cli(capsys, "--list-rules", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and [d["id"] for d in doc] == [r.id for r in RULES]
    assert all({"id", "level", "basis", "section", "clause"} <= set(d) for d in doc)


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.id) for r in RULES])
def test_main_passes_explain_every_rule(capsys, rule):
    code, out, _ = cli(capsys, "--explain", rule.id)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"# {rule.id} ({rule.level.value}{', derived' if rule.derived else ''})"
    assert f"Section: {rule.section}" in out
    assert f"> {quoted(rule.clause)}" in out  # the spec's words (its links to its own anchors as text)
    for step in rule.check:
        assert registry.get(step.primitive).summary in out


def test_main_passes_explain_dotted_prefix_explains_each_rule_it_selects(capsys):
    code, out, _ = cli(capsys, "--explain", "anndata.csr_matrix")
    wanted = [r.id for r in RULES if r.id.startswith("anndata.csr_matrix.")]
    assert code == 0 and [line[2:].split(" (")[0] for line in out.splitlines() if line.startswith("# ")] == wanted
    assert "Documentation: " not in out  # no documentation site named: --explain is the page
    assert "anndata.csr_matrixx" not in out
    code, out, _ = cli(capsys, "--explain", "anndata.csr_matrix", "--docs-url", "https://docs.example.org/sv")
    assert out.count("Documentation: https://docs.example.org/sv/rules/anndata.csr_matrix.") == len(wanted)


def test_main_passes_explain_shows_message_template_and_paths_in_words(capsys):
    code, out, _ = cli(capsys, "--explain", "anndata.element.encoding-type-known")
    assert code == 0 and "path /obs, /var, /X," in out and "//" not in out
    code, out, _ = cli(capsys, "--explain", "cxg.cxg.X-present", "--docs-url", "file:///srv/site")
    rule = next(r for r in RULES if r.id == "cxg.cxg.X-present")
    assert f"Message on failure: `{rule.message}`" in out
    assert out.rstrip().endswith("Documentation: file:///srv/site/rules/cxg.cxg.X-present.html")


def test_main_fails_explain_unknown_rule(capsys):
    code, _, err = cli(capsys, "--explain", "anndata.no.such")
    assert code == 2 and err.count("\n") == 1


def _non_hdf5(tmp_path):
    p = tmp_path / "notes.h5ad"
    p.write_text("just some text\n")
    return p


def _truncated(tmp_path, valid_h5ad):
    p = tmp_path / "truncated.h5ad"
    p.write_bytes(Path(valid_h5ad).read_bytes()[:4096])
    return p


def _empty(tmp_path):
    p = tmp_path / "empty.h5ad"
    p.write_bytes(b"")
    return p


def _plain_dir(tmp_path):
    d = tmp_path / "somedir"
    d.mkdir()
    (d / "file.txt").write_text("x")
    return d


def _not_zip_store(tmp_path):
    import zipfile

    p = tmp_path / "x.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("hello.txt", "hi")
    return p


def _text_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some text\n")
    return p


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_text_file, id="a-file-of-no-format-named-as-none"),
        pytest.param(lambda tmp: tmp / "missing.h5ad", id="missing-path"),
        pytest.param(_plain_dir, id="directory-not-a-store"),
        pytest.param(_not_zip_store, id="zip-not-a-store"),
    ],
)
def test_main_fails_bad_input_exits_2_with_one_line(tmp_path, valid_h5ad, make):
    path = make(tmp_path, valid_h5ad) if make.__code__.co_argcount == 2 else make(tmp_path)
    proc = run_subprocess(path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("spec-validate: error: "), proc.stderr
    if Path(path).is_dir():  # a folder with nothing to validate in it: no report at all
        assert proc.stdout == ""
    else:  # the input's one `error` entry in the report, as with several inputs
        assert proc.stdout.strip().splitlines() == [f"{path}: error: {proc.stderr.split(f'{path}: ', 1)[1].strip()}"]


def _empty_hdf5(tmp_path):
    import h5py

    p = tmp_path / "unfinished.h5ad"
    h5py.File(p, "w").close()  # a writer that failed before writing anything
    return p


def _named(name: str, content: bytes):
    def make(tmp_path):
        p = tmp_path / name
        p.write_bytes(content)
        return p

    return make


def _empty_zarr_dir(tmp_path):
    (tmp_path / "empty.zarr").mkdir()
    return tmp_path / "empty.zarr"


@pytest.mark.parametrize(
    "make,said",
    [
        pytest.param(_empty, "not an HDF5 file, as an .h5ad is: it is empty (0 bytes)", id="empty-h5ad"),
        pytest.param(_non_hdf5, "not an HDF5 file, as an .h5ad is: its first bytes are not that format's", id="text-h5ad"),
        pytest.param(lambda tmp, valid: _truncated(tmp, valid), "cannot open as HDF5 (", id="truncated-h5ad"),
        pytest.param(_named("e.h5Seurat", b""), "not an HDF5 file, as an .h5Seurat is: it is empty", id="empty-h5seurat"),
        pytest.param(_named("e.zarr", b""), "not a Zarr store, as a .zarr is: a file of 0 bytes", id="empty-zarr-file"),
        pytest.param(_named("e.zarr.zip", b""), "not a zip file, as a .zarr.zip is: it is empty", id="empty-zarr-zip"),
        pytest.param(_empty_zarr_dir, "not a Zarr store, as its name says: no .zgroup", id="empty-zarr-directory"),
        pytest.param(_empty_hdf5, "no AnnData object in it, as an .h5ad file holds", id="hdf5-h5ad-holding-nothing"),
    ],
)
def test_main_fails_a_file_that_is_not_what_its_name_says_is_a_failing_report(tmp_path, valid_h5ad, make, said):
    # An empty or cut-short .h5ad is a file that fails, not a path the tool cannot open (exit 2) nor one "no rule pack
    # applies" to: its report names what is wrong at its root, and the run exits 1 (#37).
    path = make(tmp_path, valid_h5ad) if make.__code__.co_argcount == 2 else make(tmp_path)
    proc = run_subprocess(path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[1].startswith(f"  UNREADABLE /: {said}"), proc.stdout
    assert lines[2].startswith("  does not conform at --fail-on must.")


def test_main_fails_a_damaged_file_found_in_a_folder_is_reported_not_skipped(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "empty.h5ad").write_bytes(b"")
    code, out, _ = cli(capsys, tmp_path / "data", "--format", "json")
    (report,) = json.loads(out)["reports"]
    assert code == 1 and report["problems"] == [
        {"key": "/", "message": "not an HDF5 file, as an .h5ad is: it is empty (0 bytes)", "path": "/"}
    ]


def test_main_fails_broken_root_zattrs_reports_and_exits_1(tmp_path, valid_zarr):
    store = tmp_path / "broken.zarr"
    shutil.copytree(valid_zarr, store)
    (store / ".zattrs").write_text("{not json")
    proc = run_subprocess(store)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr == ""
    assert ".zattrs: not valid JSON" in proc.stdout


def test_main_passes_input_byte_identical_after_validation(capsys, broken_h5ad, valid_zarr):
    def digest(path):
        p = Path(path)
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        return {str(f): (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mtime_ns) for f in files if f.is_file()}

    before = {**digest(broken_h5ad), **digest(valid_zarr)}
    cli(capsys, broken_h5ad)
    cli(capsys, valid_zarr)
    assert {**digest(broken_h5ad), **digest(valid_zarr)} == before


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_main_passes_output_writes_file(capsys, tmp_path, broken_h5ad, fmt):
    target = tmp_path / f"report.{fmt}"
    code, out, _ = cli(capsys, broken_h5ad, "--format", fmt, "--output", target)
    assert code == 1 and out == ""
    text = target.read_text()
    assert "anndata.csr_matrix.indptr-monotonic" in text
    assert "\033" not in text
    if fmt == "json":
        jsonschema.validate(json.loads(text), SCHEMA)


@pytest.mark.parametrize("fixture", ["valid_h5ad", "broken_h5ad", "valid_zarr"])
def test_main_passes_json_validates_against_schema(request, capsys, fixture):
    code, out, _ = cli(capsys, request.getfixturevalue(fixture), "--format", "json")
    assert code == (1 if fixture == "broken_h5ad" else 0)
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(out))


def test_main_passes_no_color_text_has_no_escapes(valid_h5ad, broken_h5ad):
    proc = run_subprocess(broken_h5ad)
    assert proc.returncode == 1 and "\033" not in proc.stdout
    assert "FAILED MUST (derived) anndata.csr_matrix.indptr-monotonic" in proc.stdout


def test_main_called_from_python_leaves_the_garbage_collector_alone(capsys, valid_h5ad):
    import gc

    frozen = gc.get_freeze_count()
    assert cli(capsys, valid_h5ad)[0] == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_console_collects_the_youngest_objects_less_often_after_start_up(monkeypatch):
    # The command's own process only: the node tree's objects all live to the end, so the youngest generation is
    # collected every YOUNG_OBJECTS allocations, not Python's 700; the older generations keep their thresholds.
    import gc

    import spec_validate.cli as command
    from spec_validate.codecs import decode

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    monkeypatch.setattr(command, "_OWN_PROCESS", True)
    monkeypatch.setattr(decode, "SKIP_CODEC_PLUGIN_SCAN", False)  # set for the rest of the run: restored after
    gc.disable()
    try:
        command._startup_finished()
        assert gc.isenabled() and gc.get_threshold() == (command.YOUNG_OBJECTS, *before[1:])
        assert decode.SKIP_CODEC_PLUGIN_SCAN
    finally:
        gc.set_threshold(*before)
        gc.enable()
        if frozen == 0:
            gc.unfreeze()


@pytest.mark.parametrize("fixture,expected", [("valid_h5ad", 0), ("broken_h5ad", 1)])
def test_console_exits_with_the_code_of_main(request, fixture, expected):
    # `python -m spec_validate` and the console script both go through `console`, which pauses the collector
    # during start-up: the report and exit code are those of `main`.
    path = request.getfixturevalue(fixture)
    done = run_subprocess(path, "--format", "json")
    assert done.returncode == expected, done.stderr
    assert json.loads(done.stdout) == json.loads(validator_json(path))


def test_help_is_laid_out_as_argparse_would_at_the_terminal_width(monkeypatch):
    # The parser finds the width itself (argparse would import shutil for it on every run): the same layout.
    import argparse

    from spec_validate.cli import build_parser

    texts = []
    for columns in ("50", "120"):
        monkeypatch.setenv("COLUMNS", columns)
        stock = build_parser()
        stock.formatter_class = argparse.HelpFormatter
        texts.append(build_parser().format_help())
        assert texts[-1] == stock.format_help()
    assert texts[0] != texts[1]  # the width is followed


# ---------------------------------------------------------------- a user pack that extends a built-in pack replaces it

OVERRIDDEN = "anndata.dataframe.chunks-shared"  # SHOULD in the spec; the docs' example pack makes it MUST
UNCHANGED = "anndata.dataframe.index-attr"  # MUST, inherited as it is
CHUNKS_NOT_SHARED = CASES / "h5ad" / "dataframe-chunks-not-shared.h5ad"  # fails OVERRIDDEN only (manifest)


@pytest.fixture
def lab_policy(tmp_path) -> Path:
    """The `extends: anndata` example of docs/packs.md, as a user would save it."""
    path = tmp_path / "lab-policy.yaml"
    path.write_text(extends_example(), encoding="utf-8")
    return path


@pytest.fixture
def two_clauses_fail(tmp_path) -> Path:
    """The corpus case, also without /var's `_index`: it fails OVERRIDDEN and UNCHANGED, one finding each."""
    path = tmp_path / "two-clauses.h5ad"
    shutil.copy(CHUNKS_NOT_SHARED, path)
    with h5py.File(path, "a") as f:
        del f["var"].attrs["_index"]
    return path


def _text_failed(out: str, rid: str) -> int:
    return len(re.findall(rf"^  FAILED .*\b{re.escape(rid)}$", out, flags=re.MULTILINE))


def _json_results(out: str, rid: str) -> int:
    return sum(r["id"] == rid for report in json.loads(out)["reports"] for r in report["results"])


def _sarif_results(out: str, rid: str) -> int:
    return sum(r["ruleId"] == rid for r in json.loads(out)["runs"][0]["results"])


def _github_annotations(out: str, rid: str) -> int:
    return sum(f",title=MUST {rid}::" in line for line in out.splitlines())


def _junit_testcases(out: str, rid: str) -> int:
    return sum(case.get("name") == rid for case in ET.fromstring(out).iter("testcase"))


def _markdown_rows(out: str, rid: str) -> int:
    return sum(line.startswith("|") and f"| `{rid}` |" in line for line in out.splitlines())


@pytest.mark.parametrize(
    "fmt,count",
    [
        pytest.param("text", _text_failed, id="text"),
        pytest.param("json", _json_results, id="json"),
        pytest.param("sarif", _sarif_results, id="sarif"),
        pytest.param("github", _github_annotations, id="github"),
        pytest.param("junit", _junit_testcases, id="junit"),
        pytest.param("markdown", _markdown_rows, id="markdown"),
    ],
)
def test_main_extending_pack_reports_each_clause_once(capsys, lab_policy, two_clauses_fail, fmt, count):
    code, out, err = cli(capsys, "--pack", lab_policy, "--format", fmt, two_clauses_fail)
    assert (code, err) == (1, "")
    assert (count(out, OVERRIDDEN), count(out, UNCHANGED)) == (1, 1)


def test_main_extending_pack_sets_the_exit_code_by_its_levels(capsys, lab_policy):
    assert cli(capsys, CHUNKS_NOT_SHARED)[0] == 0  # a SHOULD failure, at --fail-on must
    assert cli(capsys, "--pack", lab_policy, CHUNKS_NOT_SHARED)[0] == 1  # the pack makes the clause MUST


def test_main_extending_pack_json_keeps_spec_level_and_names_the_pack(capsys, lab_policy, two_clauses_fail):
    code, out, _ = cli(capsys, "--pack", lab_policy, "--format", "json", two_clauses_fail)
    assert code == 1
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    (report,) = doc["reports"]
    assert [p["name"] for p in report["packs"]] == ["lab-policy"]
    ids = [r["id"] for r in report["results"]]
    assert len(ids) == len(set(ids)) == len(builtin_packs()[0].rules)
    got = {r["id"]: r for r in report["results"]}
    assert {k: got[OVERRIDDEN][k] for k in ("status", "level", "spec_level", "pack")} == {
        "status": "failed",
        "level": "MUST",
        "spec_level": "SHOULD",
        "pack": "lab-policy",
    }
    assert {k: got[UNCHANGED][k] for k in ("level", "spec_level", "pack")} == {
        "level": "MUST",
        "spec_level": "MUST",
        "pack": "lab-policy",
    }


def test_main_extending_pack_sarif_has_no_duplicate_rules_or_fingerprints(capsys, lab_policy, two_clauses_fail):
    code, out, _ = cli(capsys, "--pack", lab_policy, "--format", "sarif", two_clauses_fail)
    assert code == 1
    run = json.loads(out)["runs"][0]
    rule_ids = [d["id"] for d in run["tool"]["driver"]["rules"]]
    prints = [r["partialFingerprints"]["specValidate/v1"] for r in run["results"]]
    assert len(rule_ids) == len(set(rule_ids)) and len(prints) == len(set(prints)) == 2
    descriptor = run["tool"]["driver"]["rules"][rule_ids.index(OVERRIDDEN)]
    assert descriptor["defaultConfiguration"]["level"] == "error"
    assert (descriptor["properties"]["rfc2119_level"], descriptor["properties"]["spec_level"]) == ("MUST", "SHOULD")
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_main_extending_pack_text_shows_both_levels(capsys, lab_policy):
    _, out, _ = cli(capsys, "--pack", lab_policy, CHUNKS_NOT_SHARED)
    assert f"  FAILED MUST (spec: SHOULD) {OVERRIDDEN}\n" in out
    assert "(hdf5; pack lab-policy 1; era: anndata >= 0.8" in out


def test_main_extending_pack_list_rules_and_explain_show_the_rules_as_they_run(capsys, lab_policy):
    code, out, _ = cli(capsys, "--pack", lab_policy, "--list-rules", "--format", "json")
    doc = json.loads(out)
    anndata_ids = [r.id for r in builtin_packs()[0].rules]
    assert code == 0 and sorted(d["id"] for d in doc) == sorted(r.id for r in RULES)  # each rule once
    assert {d["pack"] for d in doc if d["id"] in anndata_ids} == {"lab-policy"}
    (listed,) = [d for d in doc if d["id"] == OVERRIDDEN]
    assert (listed["level"], listed["spec_level"]) == ("MUST", "SHOULD")
    code, out, _ = cli(capsys, "--pack", lab_policy, "--explain", OVERRIDDEN)
    assert code == 0 and out.startswith(f"# {OVERRIDDEN} (MUST)\n")
    assert "the spec says SHOULD" in out and "Pack: lab-policy." in out


def test_main_fails_two_packs_extending_one_base_exits_2(capsys, lab_policy, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text(extends_example().replace("name: lab-policy", "name: other-lab"), encoding="utf-8")
    code, _, err = cli(capsys, "--pack", lab_policy, "--pack", other, CHUNKS_NOT_SHARED)
    assert code == 2 and err.count("\n") == 1
    assert "both lab-policy (" in err and ") and other-lab extend anndata; use one of them" in err


def test_main_passes_one_pack_in_config_and_on_the_command_line_runs_once(capsys, lab_policy):
    Path("pyproject.toml").write_text(f'[tool.spec-validate]\npacks = ["{lab_policy.as_posix()}"]\n', encoding="utf-8")
    code, out, _ = cli(capsys, "--pack", lab_policy, "--format", "json", CHUNKS_NOT_SHARED)
    assert code == 1 and _json_results(out, OVERRIDDEN) == 1


# ---------------------------------------------------------------- inputs: folders, stores, paths inside stores

ZARR_VALID = CASES / "zarr-v2" / "valid-every-element.zarr"
ZARR_FAILING = CASES / "zarr-v2" / "anndata-0.12-string-scalars.zarr"  # fails one MUST clause
SEURAT_VALID = CASES.parent / "h5seurat" / "valid-every-element.h5Seurat"


def _zip(store: Path, target: Path) -> None:
    import zipfile

    with zipfile.ZipFile(target, "w") as zf:
        for p in sorted(store.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(store).as_posix())


@pytest.fixture
def data_folder() -> Path:
    """data/ (in the working directory) holding an .h5ad, an .h5Seurat, a failing .zarr, a .zarr.zip and a text file."""
    data = Path("data")
    data.mkdir()
    shutil.copy(CASES / "h5ad" / "valid-every-element.h5ad", data / "cells.h5ad")
    shutil.copy(SEURAT_VALID, data / "pbmc.h5Seurat")
    shutil.copytree(ZARR_FAILING, data / "atlas.zarr")
    _zip(ZARR_VALID, data / "packed.zarr.zip")
    (data / "notes.txt").write_text("what is in here\n")
    return data


def test_main_folder_gives_a_report_per_store_and_one_line_for_the_text_file(capsys, data_folder):
    # Before, `spec-validate data/` ran the Zarr pack on the folder itself (inventing zarr.group.ancestors failures)
    # and skipped the .h5ad and .h5Seurat inside it.
    code, out, err = cli(capsys, "data/")
    assert (code, err) == (1, "")  # the worst over the inputs: atlas.zarr fails a MUST clause
    headers = [line.split(" (")[0] for line in out.splitlines() if re.match(r"^\S+ \((hdf5|zarr-v2); ", line)]
    assert headers == ["data/atlas.zarr", "data/cells.h5ad", "data/packed.zarr.zip", "data/pbmc.h5Seurat"]
    assert [line for line in out.splitlines() if "notes.txt" in line] == [
        "data/notes.txt: skipped: not a store or data file that spec-validate reads"
    ]
    assert "zarr.group.ancestors" not in out
    code, out, _ = cli(capsys, "data", "--format", "json")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [r["source"] for r in doc["reports"]] == headers
    assert doc["skipped"] == [{"path": "data/notes.txt", "reason": "not a store or data file that spec-validate reads"}]


def test_main_folder_respects_exclude_in_config_and_on_the_command_line(capsys, data_folder):
    Path("pyproject.toml").write_text('[tool.spec-validate]\nextend-exclude = ["data/atlas.zarr"]\n', encoding="utf-8")
    code, out, _ = cli(capsys, "data", "--extend-exclude", "*.zip", "--format", "json")
    assert code == 0
    assert [r["source"] for r in json.loads(out)["reports"]] == ["data/cells.h5ad", "data/pbmc.h5Seurat"]


def test_main_folder_holding_nothing_to_validate_exits_2(capsys, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("hi")
    code, out, err = cli(capsys, tmp_path / "docs")
    assert code == 2 and out == ""
    assert err == f"spec-validate: error: {tmp_path / 'docs'}: a folder holding no store or data file that spec-validate reads\n"


@pytest.fixture
def store_without_root_group() -> Path:
    """A valid AnnData Zarr store whose root lacks `.zgroup` (as tensorstore writes): only the root fails."""
    store = Path("atlas.zarr")
    shutil.copytree(ZARR_VALID, store)
    (store / ".zgroup").unlink()
    (store / ".zmetadata").unlink()
    return store


def test_main_path_inside_a_store_validates_that_node_with_its_ancestors_as_context(capsys, store_without_root_group):
    # Before, `atlas.zarr/obs` was widened to the whole store and failed on the root's missing .zgroup, while the
    # same group copied out of the store passed.
    assert cli(capsys, store_without_root_group)[0] == 1
    code, out, _ = cli(capsys, "atlas.zarr/obs")
    assert code == 0
    assert out.splitlines()[0] == (  # the header names the store's era and likely writers (provenance)
        "atlas.zarr/obs (zarr-v2; packs anndata 0.1.0, zarr 2; era: anndata >= 0.8 (encoding-version 0.1.0); "
        "likely written by anndata >=0.8, zarr-python >=3)"
    )
    assert "  Context: clauses failing on the ancestors of /obs (not counted for /obs):" in out
    assert out.count("FAILED MUST zarr.group.ancestors") == 1
    code, out, _ = cli(capsys, "atlas.zarr/obs", "--format", "json")
    (report,) = json.loads(out)["reports"]
    assert (report["source"], report["node"], report["verdict"]["outcome"]) == ("atlas.zarr", "/obs", "conforms")
    assert {r["id"] for r in report["context"]} == {"zarr.group.ancestors", "zarr.group.group-ancestors"}
    assert all(f["path"].startswith("/obs") for r in report["results"] for f in r["findings"])


def test_main_path_inside_a_store_that_is_no_node_is_an_error(capsys, store_without_root_group):
    (store_without_root_group / "notes").mkdir()
    code, _, err = cli(capsys, "atlas.zarr/notes")
    assert code == 2 and err == "spec-validate: error: atlas.zarr: no group or array at /notes\n"


def test_main_store_not_named_zarr_is_reported_as_given(capsys):
    # Before, a store found from a key inside it was named relative to the working directory.
    shutil.copytree(ZARR_VALID, "plain")
    key = str(Path("plain").resolve() / "obs" / ".zattrs")
    code, out, _ = cli(capsys, key)
    assert code == 0 and out.splitlines()[0].startswith(f"{Path('plain').resolve()} (zarr-v2; ")


# ---------------------------------------------------------------- outcomes that say what happened


def test_main_unreadable_zattrs_is_reported_unreadable_not_missing(capsys, tmp_path):
    # Before: "attribute 'encoding-type' is missing" MUST failures for a .zattrs that could not be read.
    store = Path("atlas.zarr")
    shutil.copytree(ZARR_VALID, store)
    (store / "obs" / ".zattrs").rename(tmp_path / "outside.json")
    (store / "obs" / ".zattrs").symlink_to(tmp_path / "outside.json")  # a symlink out of the store is never read
    code, out, _ = cli(capsys, store)
    assert code == 1
    assert "  UNREADABLE obs/.zattrs: a symlink that leads outside the store; not read" in out.splitlines()
    assert "is missing" not in out
    # Reported once, as unreadable; the clauses that need those attributes name /obs as not checked.
    assert sum(line.startswith("  UNREADABLE") for line in out.splitlines()) == 1
    assert "    not checked: /obs: cannot be read (/obs: obs/.zattrs is stored but cannot be read)" in out.splitlines()


def test_main_select_that_applies_to_nothing_says_so(capsys, valid_h5ad):
    # Before, `--select zarr` on an .h5ad said "conforms" after checking nothing.
    code, out, _ = cli(capsys, valid_h5ad, "--select", "zarr")
    assert code == 0
    assert out.splitlines()[1] == "  nothing checked: no selected rule belongs to a pack that applies here (anndata 0.1.0)."
    assert "conforms" not in out


def test_main_deep_says_what_it_could_not_decode(capsys):
    # Before, --deep on chunks it cannot decode said "conforms" without a word about them.
    store = Path("atlas.zarr")
    shutil.copytree(ZARR_VALID, store)
    for meta in store.rglob(".zarray"):
        doc = json.loads(meta.read_text())
        doc["compressor"] = {"id": "not-a-known-codec"}
        meta.write_text(json.dumps(doc))
    code, out, _ = cli(capsys, store, "--deep", "--select", "zarr.chunks")
    assert code == 0
    assert "  NOT CHECKED MUST zarr.chunks.decoded-size" in out.splitlines()
    verdict_line = out.rstrip().splitlines()[-1]
    assert "not fully checked" in verdict_line or "could not be checked" in verdict_line, verdict_line


# ------------------------------------------------------------------------------------------ not checked
# Without --deep, the clause on decoded chunks concerns every array of a Zarr v2 store and checks none: not checked,
# never passed nor not applicable. It fails nothing, unless --fail-on-unchecked (or the setting) asks.
@pytest.mark.parametrize(
    "args,expected",
    [
        pytest.param([], 0, id="not-checked-fails-nothing-by-default"),
        pytest.param(["--fail-on-unchecked"], 1, id="fail-on-unchecked-exits-1"),
        pytest.param(["--fail-on-unchecked", "--deep"], 0, id="fail-on-unchecked-with-everything-checked-exits-0"),
        pytest.param(["--fail-on-unchecked", "--ignore", "zarr.chunks"], 0, id="fail-on-unchecked-ignored-clause"),
        pytest.param(["--fail-on-unchecked", "--exit-zero"], 0, id="fail-on-unchecked-exit-zero"),
    ],
)
def test_main_exit_code_of_a_clause_not_checked(capsys, valid_zarr, args, expected):
    code, out, err = cli(capsys, valid_zarr, *args)
    assert code == expected, out + err


def test_main_text_says_what_was_not_checked(capsys, valid_zarr):
    code, out, _ = cli(capsys, valid_zarr)
    lines = out.splitlines()
    assert code == 0
    assert "  NOT CHECKED MUST zarr.chunks.decoded-size" in lines
    assert any(line.startswith("    not checked: needs --deep: /X/data, ") for line in lines), lines
    verdict = lines[-1] if lines[-1] else lines[-2]
    assert verdict.startswith("  conforms at --fail-on must (1 clause(s) not checked"), verdict
    assert ", 1 not checked;" in verdict
    code, out, _ = cli(capsys, valid_zarr, "--fail-on-unchecked")
    assert code == 1 and "  not fully checked at --fail-on must (--fail-on-unchecked: 1 clause(s)" in out


def test_main_json_counts_not_checked(capsys, valid_zarr):
    code, out, _ = cli(capsys, valid_zarr, "--format", "json")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    report = doc["reports"][0]
    assert code == 0 and report["verdict"]["outcome"] == "conforms"
    assert report["verdict"]["not_checked"] == 1 and report["verdict"]["fail_on_unchecked"] is False
    assert report["summary"]["MUST"]["not_checked"] == 1
    (deep,) = [r for r in report["results"] if r["id"] == "zarr.chunks.decoded-size"]
    assert deep["status"] == "not_checked" and deep["reason"] == "needs --deep" and deep["nodes_checked"] == 0
    assert deep["unchecked_count"] == len(deep["unchecked"]) > 1
    code, out, _ = cli(capsys, valid_zarr, "--format", "json", "--fail-on-unchecked")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert code == 1 and doc["reports"][0]["verdict"]["outcome"] == "not fully checked"


def test_main_sarif_gives_a_clause_not_checked_as_an_open_result(capsys, valid_zarr):
    schema = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
    code, out, _ = cli(capsys, valid_zarr, "--format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, schema)
    (result,) = doc["runs"][0]["results"]
    assert code == 0 and result["ruleId"] == "zarr.chunks.decoded-size"
    assert (result["kind"], result["level"]) == ("open", "none")  # "insufficient information to decide"
    assert result["message"]["text"] == "not checked: needs --deep"
    assert "/X/data" in [loc["fullyQualifiedName"] for loc in result["locations"][0]["logicalLocations"]]
    assert result["properties"]["fails_run"] is False
    _, out, _ = cli(capsys, valid_zarr, "--format", "sarif", "--fail-on-unchecked")
    assert json.loads(out)["runs"][0]["results"][0]["properties"]["fails_run"] is True


def test_main_junit_skips_a_clause_not_checked_or_fails_it(capsys, valid_zarr):
    code, out, _ = cli(capsys, valid_zarr, "--format", "junit")
    (case,) = [c for c in ET.fromstring(out).iter("testcase") if c.get("name") == "zarr.chunks.decoded-size"]
    assert code == 0 and case.find("skipped").get("message") == "not checked: needs --deep"
    assert "not checked: /X/data: needs --deep" in case.find("skipped").text
    code, out, _ = cli(capsys, valid_zarr, "--format", "junit", "--fail-on-unchecked")
    root = ET.fromstring(out)
    (case,) = [c for c in root.iter("testcase") if c.get("name") == "zarr.chunks.decoded-size"]
    assert code == 1 and case.find("failure").get("type") == "not checked" and root.get("failures") == "1"


def test_main_github_annotates_a_clause_not_checked(capsys, valid_zarr):
    _, out, _ = cli(capsys, valid_zarr, "--format", "github")
    (line,) = [line for line in out.splitlines() if "decoded-size" in line]
    assert line.startswith("::notice ") and "title=NOT CHECKED MUST zarr.chunks.decoded-size::not checked: needs --deep" in line
    _, out, _ = cli(capsys, valid_zarr, "--format", "github", "--fail-on-unchecked")
    assert next(line for line in out.splitlines() if "decoded-size" in line).startswith("::error ")


def test_main_markdown_and_html_say_what_was_not_checked(capsys, valid_zarr):
    _, out, _ = cli(capsys, valid_zarr, "--format", "markdown")
    assert "### Not checked" in out
    assert any(
        "| MUST | `zarr.chunks.decoded-size` | not checked |" in line and "needs --deep" in line for line in out.splitlines()
    )
    _, out, _ = cli(capsys, valid_zarr, "--format", "html")
    assert 'data-status="not-checked"' in out and "NOT CHECKED" in out
    assert "1 clause(s) not checked" in out


def test_main_statistics_count_the_inputs_a_rule_was_not_checked_on(capsys, valid_zarr, valid_h5ad):
    _, out, _ = cli(capsys, valid_zarr, valid_h5ad, "--statistics")
    assert out.splitlines()[:2] == ["No failures.", "Not checked (none of the rule's nodes):"]
    assert re.fullmatch(r"  MUST +zarr\.chunks\.decoded-size +\(1 input\)", out.splitlines()[2])
    _, out, _ = cli(capsys, valid_zarr, "--statistics", "--format", "json")
    (row,) = json.loads(out)
    assert (row["rule"], row["count"], row["not_checked"]) == ("zarr.chunks.decoded-size", 0, 1)


@pytest.mark.parametrize(
    "setting,args,expected",
    [
        pytest.param("fail-on-unchecked = true", [], 1, id="setting-fails"),
        pytest.param("fail-on-unchecked = true", ["--no-fail-on-unchecked"], 0, id="flag-beats-setting"),
        pytest.param("fail-on-unchecked = false", ["--fail-on-unchecked"], 1, id="flag-beats-setting-off"),
        pytest.param('fail-on-unchecked = true\nfail-on = "must"', ["--deep"], 0, id="setting-with-deep"),
    ],
)
def test_main_fail_on_unchecked_in_the_settings_file(capsys, valid_zarr, setting, args, expected):
    Path("pyproject.toml").write_text(f"[tool.spec-validate]\n{setting}\n", encoding="utf-8")
    code, out, err = cli(capsys, valid_zarr, *args)
    assert code == expected, out + err


def test_main_fail_on_unchecked_setting_must_be_a_boolean(capsys, valid_zarr):
    Path("spec-validate.toml").write_text('fail-on-unchecked = "yes"\n', encoding="utf-8")
    code, _, err = cli(capsys, valid_zarr)
    assert code == 2
    assert err.strip().endswith("fail-on-unchecked: expected true or false, got 'yes'")


def test_main_baseline_blocks_and_summary_agree_with_the_exit_code(capsys, broken_h5ad, valid_h5ad):
    # Before, each file's block said FAILED / "does not conform" while the summary said "conforms", exit 0.
    assert cli(capsys, "--write-baseline", "baseline.json", broken_h5ad)[0] == 0
    code, out, _ = cli(capsys, "--baseline", "baseline.json", broken_h5ad, valid_h5ad)
    assert code == 0
    assert "does not conform" not in out
    assert "  FAILED MUST (derived) anndata.csr_matrix.indptr-monotonic [baseline]" in out.splitlines()
    assert "0 of 2 do not conform at --fail-on must." in out


@pytest.mark.parametrize("level", ["SHOULD", "Should", "should"])
def test_main_fail_on_accepts_level_names_in_any_case(capsys, should_failing_h5ad, level):
    assert cli(capsys, should_failing_h5ad, "--fail-on", level)[0] == 1


def test_main_output_format_is_format(capsys, valid_h5ad):
    code, out, _ = cli(capsys, valid_h5ad, "--output-format", "json")
    assert code == 0 and json.loads(out)["reports"][0]["verdict"]["outcome"] == "conforms"


def test_main_statistics_counts_findings_per_rule(capsys, broken_h5ad, two_clauses_fail):
    code, out, _ = cli(capsys, "--statistics", broken_h5ad, two_clauses_fail)
    assert code == 1
    rows = [line.split() for line in out.splitlines()]
    assert ["1", "MUST", "anndata.csr_matrix.indptr-monotonic", "(1", "input)"] in rows
    assert [int(r[0]) for r in rows] == sorted((int(r[0]) for r in rows), reverse=True)  # most first
    code, out, _ = cli(capsys, "--statistics", "--format", "json", broken_h5ad, two_clauses_fail)
    got = {(r["rule"], r["count"], r["inputs"]) for r in json.loads(out)}
    assert ("anndata.dataframe.chunks-shared", 1, 1) in got and ("anndata.csr_matrix.indptr-monotonic", 1, 1) in got


ZARR_V3 = CASES.parent / "zarr" / "zarr-v3"


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ("valid-every-element.zarr", 0),  # a plain Zarr v3 store, no AnnData: the zarr3 pack applies (no 'no rule pack' exit 2)
        ("shard-index-checksum-wrong.zarr", 1),
        ("root-v2-and-v3-metadata.zarr", 0),  # both formats at the root: a notice, read as Zarr v3
    ],
)
def test_main_exit_code_on_plain_zarr_v3(capsys, store, expected):
    assert main([str(ZARR_V3 / store), "--format", "json"]) == expected
    report = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in report["reports"][0]["packs"]] == ["zarr3"] and report["reports"][0]["format"] == "zarr-v3"


def test_main_reports_root_v2_and_v3_metadata_as_a_notice_that_fails_nothing(capsys):
    # No sentence forbids Zarr v2 documents beside zarr.json: a notice, even at --fail-on may.
    assert main([str(ZARR_V3 / "root-v2-and-v3-metadata.zarr"), "--fail-on", "may"]) == 0
    assert "NOTICE (unread-key) zarr3.node.one-format" in capsys.readouterr().out


def test_cli_fails_a_file_whose_root_cannot_be_read_is_reported_not_called_no_pack(tmp_path, monkeypatch, capsys):
    # A damaged file that opens but whose root attributes cannot be read shows no pack's scope: that is a failing
    # report naming what could not be read (exit 1), never "no rule pack applies" (exit 2, nothing said).
    from spec_validate.model import Problem, Report

    path = tmp_path / "damaged.h5seurat"
    path.write_bytes(b"")
    unreadable = Problem("/", "its attributes cannot be listed (RuntimeError: ran off end of input buffer)", "/")
    monkeypatch.setattr(spec_validate, "validate", lambda p, **_: Report(str(p), "hdf5", (), "0", (), problems=(unreadable,)))
    code, out, err = cli(capsys, path)
    assert code == 1 and "its attributes cannot be listed" in out and "no rule pack applies" not in out + err


@pytest.mark.parametrize(
    "args",
    [["--bogus"], [], ["x.h5ad", "--format", "nope"], ["x.h5ad", "--statistics", "--format", "sarif"], ["coverage", "--bogus"]],
)
def test_cli_fails_a_usage_error_is_one_line(capsys, args):
    with pytest.raises(SystemExit) as stopped:
        main(args)
    out, err = capsys.readouterr()
    assert stopped.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--help)" in err


def test_cli_passes_output_file_is_output_under_ruffs_name(tmp_path, valid_h5ad, capsys):
    target = tmp_path / "report.json"
    code, out, _ = cli(capsys, valid_h5ad, "--format", "json", "--output-file", target)
    assert code == 0 and out == "" and json.loads(target.read_text())["reports"]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param("legacy-anndata-0-7-sparse", 0, id="intact-0.7-file-accepted"),
        pytest.param("legacy-anndata-0-7-indptr-decreasing", 1, id="0.7-file-indptr-decreasing"),
        pytest.param("legacy-anndata-0-7-codes-out-of-range", 1, id="0.7-file-codes-out-of-range"),
        pytest.param("legacy-anndata-pre-0-7-indptr-past-nnz", 1, id="pre-0.7-h5sparse-indptr-past-nnz"),
    ],
)
def test_ignore_legacy_accepts_the_era_never_a_broken_file(capsys, case, expected):
    # --ignore anndata.legacy accepts a file of an era before the spec; the clauses that hold in every era are still
    # checked, shown, and fail the run.
    code, out, _err = cli(capsys, CASES / "h5ad" / f"{case}.h5ad", "--ignore", "anndata.legacy")
    assert code == expected and "LEGACY" not in out and "nothing checked" not in out
    assert ("FAILED MUST" in out) == bool(expected)
    assert "Checked whatever the era" in out


def test_ignore_legacy_still_reports_a_chunk_of_a_legacy_file_that_does_not_decode(capsys, tmp_path):
    # The clauses that hold in every era read /X/indptr, so a legacy file's damaged chunk is found and reported.
    path = tmp_path / "legacy.h5ad"
    shutil.copyfile(CASES / "h5ad" / "legacy-anndata-0-7-sparse.h5ad", path)
    with h5py.File(path, "r+") as f:
        indptr = f["X/indptr"][:]
        del f["X/indptr"]
        f["X"].create_dataset("indptr", data=indptr, chunks=(5,), compression="gzip")
        chunk = f["X/indptr"].id.get_chunk_info(0)
    with open(path, "r+b") as fh:
        fh.seek(chunk.byte_offset)
        fh.write(b"\xff" * chunk.size)
    code, out, _err = cli(capsys, path, "--ignore", "anndata.legacy")
    assert code == 1 and "UNREADABLE /X/indptr: chunk 0 does not decode" in out
    assert "anndata.csr_matrix.indptr-monotonic" in out and "not checked: /X/indptr: chunk 0 does not decode" in out


def test_main_passes_folder_url_is_searched_and_what_it_skips_is_listed(tmp_path, valid_h5ad, capsys):
    # "A URL works wherever a path does": a folder URL was opened as one store and failed (#37).
    pytest.importorskip("obstore")
    from latency_server import LatencyServer

    from spec_validate.inputs import NOT_NAMED

    (tmp_path / "srv" / "data" / "sub").mkdir(parents=True)
    shutil.copy(valid_h5ad, tmp_path / "srv" / "data" / "sub" / "cells.h5ad")
    (tmp_path / "srv" / "data" / "notes.txt").write_text("hi")
    with LatencyServer(tmp_path / "srv") as server:
        code, out, _ = cli(capsys, f"{server.url}/data/", "--format", "json", "--quiet")
        doc = json.loads(out)
        assert code == 0 and [r["source"] for r in doc["reports"]] == [f"{server.url}/data/sub/cells.h5ad"]
        assert doc["skipped"] == [{"path": f"{server.url}/data/notes.txt", "reason": NOT_NAMED}]
        code, out, _ = cli(capsys, f"{server.url}/data", "--quiet")
        assert code == 0 and f"{server.url}/data/notes.txt: skipped: {NOT_NAMED}" in out.splitlines()


def _archive(folder: Path, broken_h5ad: str) -> None:
    """One of each kind of input a search finds, two failing, plus what it skips and leaves out."""
    from corpus_paths import FAILING_ZARR, VALID_H5AD

    (folder / "sub").mkdir(parents=True)
    shutil.copy(VALID_H5AD, folder / "cells.h5ad")
    shutil.copy(broken_h5ad, folder / "sub" / "broken.h5ad")
    shutil.copytree(FAILING_ZARR, folder / "sub" / "strings.zarr")
    shutil.copytree(CASES / "zarr-v3" / "valid-every-element.zarr", folder / "sub" / "plain")  # a store by its zarr.json
    (folder / "notes.txt").write_text("hi")
    (folder / "node_modules").mkdir()
    shutil.copy(VALID_H5AD, folder / "node_modules" / "left-out.h5ad")


def test_main_passes_folder_locally_over_http_and_on_s3_finds_the_same_stores_and_verdicts(tmp_path, broken_h5ad, capsys):
    # "spec-validate s3://bucket/prefix/ (moto) and spec-validate http://host/folder/ find the same stores as the
    # same folder locally, and give the same verdicts" (#41).
    pytest.importorskip("obstore")
    from latency_server import LatencyServer
    from s3_server import s3_server

    _archive(tmp_path / "srv" / "data", broken_h5ad)
    keys = {p.relative_to(tmp_path / "srv").as_posix(): p.read_bytes() for p in (tmp_path / "srv").rglob("*") if p.is_file()}

    def run(folder: str) -> tuple[int, dict]:
        code, out, _ = cli(capsys, folder, "--format", "json", "--quiet", "--jobs", "1")
        # Each input named relative to the folder searched, so that the three runs compare.
        return code, json.loads(out.replace(folder.rstrip("/") + "/", ""))

    local = run(str(tmp_path / "srv" / "data") + "/")
    with LatencyServer(tmp_path / "srv") as server:
        over_http = run(f"{server.url}/data/")
    with s3_server({"archive": keys}):
        on_s3 = run("s3://archive/data/")
    assert [r["source"] for r in local[1]["reports"]] == ["cells.h5ad", "sub/broken.h5ad", "sub/plain", "sub/strings.zarr"]
    assert local[0] == 1 and local[1]["skipped"] == [{"path": "notes.txt", "reason": inputs.NOT_A_STORE}]
    for remote in (over_http, on_s3):
        assert remote[0] == local[0] and remote[1]["reports"] == local[1]["reports"]
        assert remote[1]["skipped"] == [{"path": "notes.txt", "reason": inputs.NOT_NAMED}]  # by name only, behind a URL


def test_main_fails_folder_url_its_server_does_not_list_says_so_in_one_line(tmp_path, capsys):
    pytest.importorskip("obstore")
    from latency_server import LatencyServer

    (tmp_path / "data").mkdir()
    with LatencyServer(tmp_path, listings=False) as server:
        code, _, err = cli(capsys, f"{server.url}/data/", "--quiet")
    # One line naming the URL, the server's answer and that no listing was found; the answer's own wording varies
    # with how the open failed (the 403 of the page, or of a document the open asked for), so only its code is fixed.
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"spec-validate: error: {server.url}/data/: ")
    assert "403 Forbidden" in err and "nor is it a folder its server lists" in err


# ------------------------------------------------------------------------------------------------ --readers (#42)
@pytest.fixture
def reader_packs(tmp_path, monkeypatch):
    """The built-in reader packs replaced by a small synthetic pack: anndata 0.10.9 refuses a nullable-string-array."""
    from reader_packs import rule, write_readers

    from spec_validate.engine.readers import packs

    folder = write_readers(tmp_path / "readers", [rule()])
    monkeypatch.setattr(packs, "builtin_readers_dir", lambda: str(folder))
    return folder


def test_readers_flag_adds_verdicts_and_exits_0(capsys, reader_packs):
    from reader_packs import NULLABLE

    code, out, _ = cli(capsys, NULLABLE, "--readers", "--ignore", "anndata.dataframe.index-array")
    assert code == 0
    assert "Readers (anndata-h5ad; as measured 2026-11-29):" in out
    assert "does not open 0.10.9" in out


def test_readers_gate_exits_3_naming_version_and_fact(capsys, reader_packs):
    from reader_packs import NULLABLE

    code, _, err = cli(capsys, NULLABLE, "--readers", "anndata>=0.10,<0.13", "--ignore", "anndata.dataframe.index-array")
    assert code == 3
    assert "spec-validate: readers: " in err
    assert "anndata 0.10.9 does not open: an element encoded as nullable-string-array" in err
    code, _, err = cli(capsys, NULLABLE, "--readers=anndata>=0.11,<0.13", "--ignore", "anndata.dataframe.index-array")
    assert (code, err) == (0, "")


def test_readers_gate_precedence_and_exit_zero(capsys, reader_packs):
    from reader_packs import NULLABLE

    # The file fails a MUST clause as well: 1 wins over 3; --exit-zero turns both into 0.
    assert cli(capsys, NULLABLE, "--readers", "anndata>=0.10,<0.13")[0] == 1
    assert cli(capsys, NULLABLE, "--readers", "anndata>=0.10,<0.13", "--exit-zero")[0] == 0


def test_readers_gate_from_the_configuration(capsys, reader_packs, tmp_path):
    from reader_packs import NULLABLE

    config = tmp_path / "spec-validate.toml"
    config.write_text('readers = ["anndata>=0.10,<0.13"]\nignore = ["anndata.dataframe.index-array"]\n')
    assert cli(capsys, NULLABLE, "--config", config)[0] == 3


def test_readers_unknown_reader_is_an_error(capsys, reader_packs):
    from reader_packs import PLAIN

    code, _, err = cli(capsys, PLAIN, "--readers", "zarr>=3")
    assert code == 2
    assert err.strip() == "spec-validate: error: --readers 'zarr>=3': no reader named 'zarr' (known: anndata)"


def test_readers_gate_is_refused_with_a_streamed_format(capsys, reader_packs):
    from reader_packs import PLAIN

    with pytest.raises(SystemExit):
        main([str(PLAIN), "--readers", "anndata>=0.10", "--format", "jsonl"])
    assert "cannot be used with --format jsonl" in capsys.readouterr().err


def test_readers_path_given_as_requirement_is_refused(capsys, reader_packs):
    from reader_packs import PLAIN

    with pytest.raises(SystemExit):
        main(["--readers", str(PLAIN)])
    assert "is a path, not a reader requirement" in capsys.readouterr().err
