"""Rule pages (spec_validate/explain.py)."""

from __future__ import annotations

from spec_validate.engine.loader import builtin_packs
from spec_validate.explain import explain, quoted


def test_quoted_keeps_the_words_of_a_link_to_the_specs_own_anchor_and_other_links_whole():
    clause = "It MUST implement the [plate specification](#plate-md); see [the site](https://example.org/#x)."
    assert quoted(clause) == "It MUST implement the plate specification; see [the site](https://example.org/#x)."


def test_rule_pages_link_to_no_anchor_of_the_spec_page():
    rules = [r for pack in builtin_packs() for r in pack.rules if "](#" in r.clause]
    assert rules, "a built-in clause quotes such a link: the test is not vacuous"
    for rule in rules:
        page = explain(rule)
        assert "](#" not in page, rule.id
        assert quoted(rule.clause) in page
