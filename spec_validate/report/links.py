"""Where a rule's documentation is: the one place --explain, the reports and SARIF take it from.

The documentation ships with the tool: `spec-validate --explain <rule-id>` prints a rule's page. Reports point
there unless the user names a documentation site (`--docs-url`, `docs-url` in the settings file, `docs_url=` from
Python): a copy of the site built from this repository (`mkdocs build`) served somewhere they can reach. No site is
assumed: a link to one that is not published is a dead end.
"""

from __future__ import annotations

from spec_validate.errors import SpecValidateError

# The site lays out one page per rule as rules/<id>.html (mkdocs.yml: use_directory_urls is off).
RULE_PAGE = "rules/{}.html"
DOCS_URL_SCHEMES = ("http", "https", "file")


def docs_base(url: str) -> str:
    """`url` as the base every page's address is built on (ending in `/`); SpecValidateError, in one line, for a
    value that is no http(s):// or file:// URL."""
    from urllib.parse import urlsplit  # here: a run that names no site never loads urllib (tests/test_imports.py)

    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in DOCS_URL_SCHEMES or not (parts.netloc or parts.path):
        raise SpecValidateError(f"docs-url: expected an http://, https:// or file:// URL of the documentation site, got {url!r}")
    return text.rstrip("/") + "/"


def rule_page(rule_id: str, docs_url: str | None) -> str | None:
    """The address of a built-in rule's page on the documentation site at `docs_url`; None without a site."""
    if not docs_url:
        return None
    return docs_base(docs_url) + RULE_PAGE.format(rule_id)


def explain_command(rule_id: str) -> str:
    """The command that prints a rule's documentation, shipped with the tool."""
    return f"spec-validate --explain {rule_id}"


def rule_reference(rule_id: str, docs_url: str | None) -> str:
    """Where a report sends the reader for a built-in rule: its page on the site at `docs_url`, else --explain."""
    return rule_page(rule_id, docs_url) or explain_command(rule_id)
