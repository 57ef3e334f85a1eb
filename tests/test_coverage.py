"""`spec-validate coverage`: per spec, statements and what covers them; what is not covered, with why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_validate import cli, coverage
from spec_validate.catalogue import builtin_catalogues

SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs"
NAMES = sorted(c.name for c in builtin_catalogues())


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["coverage", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_coverage_passes_text_table_for_every_spec(capsys):
    code, out, _ = run(capsys)
    assert code == 0
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["spec", "statements", "covered", "partial", "not", "checkable", "deferred", "rules"]
    assert [row.split()[0] for row in table[1:]] == [*NAMES, "total"]
    for c in builtin_catalogues():
        row = next(r.split() for r in table if r.split()[0] == c.name)
        n = coverage.counts(c)
        assert [int(v) for v in row[1:6]] == [n["statements"], n["covered"], n["partial"], n["not-checkable"], n["deferred"]]
        assert n["statements"] == sum(n[s] for s in ("covered", "partial", "not-checkable", "deferred"))


def test_coverage_passes_lists_what_is_not_covered_with_why(capsys):
    # A spec with deferred statements (the Zarr v2 catalogue has none left since issue #16's key rules).
    catalogue = next(c for c in builtin_catalogues() if any(s.status == "deferred" for s in c.statements))
    code, out, _ = run(capsys, "--spec", catalogue.name)
    assert code == 0
    deferred = [s for s in catalogue.statements if s.status == "deferred"]
    for s in deferred:
        assert s.reason in out


@pytest.mark.parametrize("name", NAMES)
def test_coverage_passes_json_statements_each_explained(capsys, name):
    code, out, _ = run(capsys, "--spec", name, "--format", "json")
    assert code == 0
    spec = json.loads(out)["specs"][0]
    assert spec["name"] == name and spec["counts"]["statements"] == len(spec["statements"])
    for s in spec["statements"]:  # acceptance: no statement neither covered nor explained
        assert s["rules"] if s["status"] == "covered" else (s.get("missing") or s.get("reason")), s


def test_coverage_passes_markdown_escapes_cells(capsys):
    code, out, _ = run(capsys, "--spec", "hdmf-zarr", "--format", "markdown", "--all")
    assert code == 0
    assert out.startswith("| spec | statements |")
    assert "/specifications/&lt;namespace-name&gt;" not in out  # only "<" is escaped; ">" is harmless
    assert "/specifications/&lt;namespace-name>/&lt;version>" in out
    assert "`hdmf-zarr.specloc.group`" in out and "rules/" not in out  # no documentation site named: no links
    code, out, _ = run(
        capsys, "--spec", "hdmf-zarr", "--format", "markdown", "--all", "--docs-url", "https://docs.example.org/sv"
    )
    assert "[`hdmf-zarr.specloc.group`](https://docs.example.org/sv/rules/hdmf-zarr.specloc.group.html)" in out


def test_coverage_passes_checked_against_the_spec_files(capsys):
    if not SPECS.is_dir():
        pytest.skip(f"{SPECS} not present")
    code, out, _ = run(capsys, "--specs", str(SPECS))
    assert code == 0 and "DRIFT" not in out


def test_coverage_fails_drifted_catalogue_exit_1(capsys, tmp_path):
    (tmp_path / "cxg-0.3.0-spec.md").write_text("# CXG\n\n## CXG\n\nA new sentence MUST be listed.\n", encoding="utf-8")
    code, out, _ = run(capsys, "--spec", "cxg", "--specs", str(tmp_path))
    assert code == 1
    assert "DRIFT" in out and "A new sentence MUST be listed." in out


def test_coverage_fails_unknown_spec_exit_2(capsys):
    code, _, err = run(capsys, "--spec", "nwb")
    assert code == 2 and "no catalogue for spec 'nwb'" in err


def test_coverage_passes_output_file(capsys, tmp_path):
    code, out, _ = run(capsys, "--format", "json", "-o", str(tmp_path / "c.json"))
    assert code == 0 and out == ""
    assert [s["name"] for s in json.loads((tmp_path / "c.json").read_text())["specs"]] == NAMES


def test_coverage_passes_spec_of_several_files_names_each_statements_file(capsys):
    code, out, _ = run(capsys, "--spec", "zarr3", "--format", "json")
    assert code == 0
    spec = json.loads(out)["specs"][0]
    assert len(spec["sources"]) > 1 and "zarr-v3/core.rst" in spec["sources"]
    assert {s["source"] for s in spec["statements"]} == set(spec["sources"])
    assert spec["derived_rules"] and all(s["keyword"] for s in spec["statements"])  # keyword sentences only
    code, out, _ = run(capsys, "--spec", "zarr3")
    assert code == 0 and "(zarr-v3/, 15 files)" in out and "[core.rst: Node names]" in out
