"""Where a rule's page is: the site's URL, or SPEC_VALIDATE_DOCS_URI's."""

from __future__ import annotations

from spec_validate.report.links import SITE_URL, rule_page


def test_rule_page_passes_default_site(monkeypatch):
    monkeypatch.delenv("SPEC_VALIDATE_DOCS_URI", raising=False)
    assert rule_page("zarr.array.order") == f"{SITE_URL}rules/zarr.array.order.html"


def test_rule_page_passes_docs_uri_with_or_without_slash(monkeypatch):
    for base in ("file:///srv/site", "file:///srv/site/"):
        monkeypatch.setenv("SPEC_VALIDATE_DOCS_URI", base)
        assert rule_page("zarr.array.order") == "file:///srv/site/rules/zarr.array.order.html"
