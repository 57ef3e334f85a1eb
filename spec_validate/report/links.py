"""Where a rule's documentation page lives: the one place --explain, the text report and SARIF take it from."""

from __future__ import annotations

import os

# The documentation site (`mkdocs build`, from mkdocs.yml). SPEC_VALIDATE_DOCS_URI points elsewhere, for a copy
# of the site served inside an organisation or read from disk (file:///.../site/).
SITE_URL = "https://spec-validate.github.io/spec-validate/"


def docs_base() -> str:
    return os.environ.get("SPEC_VALIDATE_DOCS_URI", SITE_URL).rstrip("/") + "/"


def rule_page(rule_id: str) -> str:
    """The page of a built-in rule on the documentation site (the site is built with directory URLs off)."""
    return f"{docs_base()}rules/{rule_id}.html"
