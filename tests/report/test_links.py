"""Where a rule's documentation is: the site the user names (--docs-url), else `spec-validate --explain`, never a
site that is not published."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from spec_validate.errors import SpecValidateError
from spec_validate.report.links import docs_base, rule_page, rule_reference

ROOT = Path(__file__).resolve().parents[2]
# Addresses the project once linked to, which were never published (#37): no shipped file may name them.
UNPUBLISHED = ("spec-validate.github.io", "github.com/spec-validate")


def test_rule_page_passes_no_site_without_docs_url():
    assert rule_page("zarr.array.order", None) is None
    assert rule_reference("zarr.array.order", None) == "spec-validate --explain zarr.array.order"


def test_rule_page_passes_docs_url_with_or_without_slash():
    for base in ("file:///srv/site", "file:///srv/site/", "https://docs.example.org/sv"):
        expected = base.rstrip("/") + "/rules/zarr.array.order.html"
        assert rule_page("zarr.array.order", base) == expected == rule_reference("zarr.array.order", base)


@pytest.mark.parametrize("bad", ["site/", "ftp://host/docs", "https://", ""], ids=["path", "ftp", "no-host", "empty"])
def test_docs_base_fails_what_is_no_site_url(bad):
    with pytest.raises(SpecValidateError, match=r"^docs-url: expected an http://, https:// or file:// URL"):
        docs_base(bad)


def test_links_passes_no_shipped_file_names_an_unpublished_site():
    # What ships or is read by users: the package, the packs, the docs, the README, the project metadata. The tests
    # (this one names the addresses) are not shipped.
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    files = [name for name in listed.stdout.decode().split("\0") if name and not name.startswith(("tests/", "bench/"))]
    found = []
    for name in files:
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary (images, corpus files) or a submodule
        found += [f"{name}: {address}" for address in UNPUBLISHED if address in text]
    assert not found, found
