"""--format github: workflow-command annotations, one per failure, escaped as the runner expects."""

from __future__ import annotations

import shutil

import pytest
from corpus_paths import VALID_H5AD

from spec_validate.cli import main
from spec_validate.report.github import escape_data, escape_property

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


def test_github_escape_data_encodes_percent_and_newlines():
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"


def test_github_escape_property_also_encodes_colon_and_comma():
    assert escape_property("MUST a.b: x, y") == "MUST a.b%3A x%2C y"


def annotations(out: str) -> list[str]:
    """The workflow commands of the output (its other lines are plain log lines, such as the provenance header)."""
    return [line for line in out.splitlines() if line.startswith("::")]


def test_github_one_error_annotation_per_failure(broken_h5ad_here, capsys):
    assert main(["--format", "github", broken_h5ad_here]) == 1
    lines = annotations(capsys.readouterr().out)
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("::error file=broken.h5ad,line=1,title=MUST anndata.dataframe.index-attr::")
    message = line.split("::", 2)[2]
    assert message.startswith("/obs: attribute '_index' is missing%0A")
    assert "\n" not in message


def test_github_valid_file_has_no_annotations(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(VALID_H5AD, tmp_path / "valid.h5ad")
    assert main(["--format", "github", "valid.h5ad"]) == 0
    out = capsys.readouterr().out
    assert annotations(out) == []
    assert out.splitlines() == [
        "spec-validate: valid.h5ad: era: anndata >= 0.8 (encoding-version 0.1.0); likely written by anndata >=0.8"
    ]
