"""--format markdown: a summary table for $GITHUB_STEP_SUMMARY, then the failures."""

from __future__ import annotations

import shutil

import pytest
from corpus_paths import VALID_H5AD

from spec_validate.cli import main

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


def test_markdown_summary_table_and_failures(broken_h5ad_here, tmp_path, capsys):
    shutil.copy(VALID_H5AD, tmp_path / "valid.h5ad")
    assert main(["--format", "markdown", broken_h5ad_here, "valid.h5ad"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = lines.index(
        "| File | Format | Result | MUST failed | SHOULD failed | MAY failed | Passed | Not applicable | Not checked |"
    )
    assert lines[header + 1].startswith("|---")
    assert lines[header + 2].startswith("| `broken.h5ad` | hdf5 | \u274c does not conform | 1 | 0 | 0 |")
    assert lines[header + 3].startswith("| `valid.h5ad` | hdf5 | \u2705 conforms | 0 | 0 | 0 |")
    assert "### Failures" in out
    assert "| `broken.h5ad` | MUST | `anndata.dataframe.index-attr` | `/obs` | attribute '_index' is missing |" in lines


def test_markdown_escapes_pipes_in_cells():
    from spec_validate.report.markdown import _cell

    assert _cell("a|b\nc") == "a\\|b c"
