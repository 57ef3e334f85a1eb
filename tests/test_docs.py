"""docs/rules/ is generated from the packs and docstrings; a stale, missing or extra page fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("generate_docs", ROOT / "scripts" / "generate_docs.py")
generate_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generate_docs)

PAGES = generate_docs.pages()
FIX = f"docs/rules is out of date; regenerate it with `{generate_docs.COMMAND}`"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_docs_passes_page_is_current(name):
    path = ROOT / "docs" / "rules" / name
    assert path.is_file(), f"docs/rules/{name} is missing. {FIX}"
    assert path.read_text(encoding="utf-8") == PAGES[name], f"docs/rules/{name} is stale. {FIX}"


def test_docs_passes_no_page_for_a_removed_rule():
    extra = sorted(p.name for p in (ROOT / "docs" / "rules").glob("*.md") if p.name not in PAGES)
    assert not extra, f"docs/rules has pages for rules that no longer exist: {extra}. {FIX}"


def test_docs_passes_every_rule_has_a_page():
    from validator.engine.loader import builtin_packs

    ids = {r.id for p in builtin_packs() for r in p.rules}
    assert {f"{i}.md" for i in ids} | {"index.md"} == set(PAGES)


def test_docs_fails_stale_detects_edited_and_missing_page(tmp_path):
    generate_docs.write(tmp_path)
    assert generate_docs.stale(tmp_path) == []
    first = sorted(n for n in PAGES if n != "index.md")[0]
    (tmp_path / first).write_text("edited by hand\n")
    (tmp_path / "index.md").unlink()
    (tmp_path / "anndata.old.rule.md").write_text("gone\n")
    assert generate_docs.stale(tmp_path) == sorted([first, "index.md"]) + ["anndata.old.rule.md"]


def test_docs_passes_page_starts_with_explain_heading():
    from validator.engine.loader import builtin_packs

    rule = builtin_packs()[0].rules[0]
    assert f"\n# {rule.id} ({rule.level.value}" in PAGES[f"{rule.id}.md"]


def test_docs_passes_spec_notes_are_current():
    path = ROOT / "docs" / "spec-notes.md"
    assert path.is_file(), f"docs/spec-notes.md is missing. {FIX}"
    assert path.read_text(encoding="utf-8") == generate_docs.spec_notes(), f"docs/spec-notes.md is stale. {FIX}"
