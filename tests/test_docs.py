"""The generated pages of the documentation site (scripts/generate_docs.py): current, one per rule, and each rule
page's corpus examples real cases that fail or pass the rule as the page says."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import spec_validate
from spec_validate.engine.loader import builtin_packs
from spec_validate.model import Status

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("generate_docs", ROOT / "scripts" / "generate_docs.py")
generate_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generate_docs)

PAGES = generate_docs.pages()
FIX = f"the generated docs are out of date; regenerate them with `{generate_docs.COMMAND}`"
RULES = [r for p in builtin_packs() for r in p.rules]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_docs_passes_page_is_current(name):
    path = ROOT / "docs" / name
    assert path.is_file(), f"docs/{name} is missing. {FIX}"
    assert path.read_text(encoding="utf-8") == PAGES[name], f"docs/{name} is stale. {FIX}"


def test_docs_passes_no_page_for_a_removed_rule():
    extra = sorted(p.name for p in (ROOT / "docs" / "rules").glob("*.md") if f"rules/{p.name}" not in PAGES)
    assert not extra, f"docs/rules has pages for rules that no longer exist: {extra}. {FIX}"


def test_docs_passes_every_rule_has_a_page():
    assert {f"rules/{r.id}.md" for r in RULES} | {"rules/index.md", *generate_docs.TOP_PAGES} == set(PAGES)


def test_docs_fails_stale_detects_edited_and_missing_page(tmp_path):
    generate_docs.write(tmp_path)
    assert generate_docs.stale(tmp_path) == []
    first = sorted(n for n in PAGES if n.startswith("rules/") and n != "rules/index.md")[0]
    (tmp_path / first).write_text("edited by hand\n")
    (tmp_path / "rules" / "index.md").unlink()
    (tmp_path / "cli.md").unlink()
    (tmp_path / "rules" / "anndata.old.rule.md").write_text("gone\n")
    assert generate_docs.stale(tmp_path) == sorted(["cli.md", first, "rules/index.md"]) + ["rules/anndata.old.rule.md"]


def test_docs_passes_page_starts_with_explain_heading_and_says_how_to_suppress():
    rule = RULES[0]
    page = PAGES[f"rules/{rule.id}.md"]
    assert f"\n# {rule.id} ({rule.level.value}" in page
    assert f"`--ignore {rule.id}`" in page and f'ignore = ["{rule.id}"]' in page


def test_docs_install_commands_name_what_exists():
    # `pip install spec-validate` named a package that is not on the index: the docs install from a checkout or
    # from the git repository, which work today.
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    from_index = re.compile(r"""pip install\s+['"]?spec-validate(\[[^\]]*\])?(?!\s*@)['"]?(\s|$|`)""")  # not `name @ url`
    found = [
        f"{page.name}: {m.group(0).strip()}" for page in pages for m in from_index.finditer(page.read_text(encoding="utf-8"))
    ]
    assert not found, found


# ------------------------------------------------------------------------------------------------ examples are real
EXAMPLE = re.compile(
    r"^(Fails|Reports|Passes): `conformance-corpus/([^`]+)`.*?\n\n```sh\nspec-validate "
    r"conformance-corpus/\2 --select (\S+)( --deep)?( --all-clauses)?\n```",
    re.MULTILINE | re.DOTALL,
)
# What each kind of example shows the rule doing: a notice rule (the pickle codec) reports, it never fails.
SHOWN = {"Fails": Status.FAILED, "Reports": Status.NOTICE, "Passes": Status.PASSED}


def page_examples(rule_id: str) -> list[tuple[str, str, bool, bool]]:
    """(Fails|Reports|Passes, corpus file, deep, all clauses) for each example the rule's page shows."""
    found = []
    for kind, file, selected, deep, every in EXAMPLE.findall(PAGES[f"rules/{rule_id}.md"]):
        assert selected == rule_id
        found.append((kind, file, bool(deep), bool(every)))
    return found


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_docs_passes_rule_page_examples_fail_and_pass_as_shown(rule):
    shown = page_examples(rule.id)
    first = "Reports" if rule.notice else "Fails"
    assert [k for k, *_ in shown] == [first, "Passes"], f"{rule.id}: the page shows {shown}"
    for kind, file, deep, every in shown:
        path = generate_docs.CORPUS / file
        assert path.exists(), path
        report = spec_validate.validate(path, select=[rule.id], deep=deep, all_clauses=every)
        statuses = {r.rule.id: r.status for r in report.results}
        assert statuses[rule.id] is SHOWN[kind], (kind, file)


def test_docs_passes_spec_notes_are_a_generated_page():
    # docs/spec-notes.md (the packs' notes, writers' departures and legacy eras) is checked like every page above.
    assert PAGES["spec-notes.md"] == generate_docs.spec_notes()
    assert "# Spec notes" in PAGES["spec-notes.md"]


def test_docs_passes_security_page_names_tests_and_cases_that_exist():
    """docs/security.md says which tests hold each guarantee: every test, file and corpus case it names exists."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    defined = {m[1] for path in (ROOT / "tests").rglob("*.py") for m in re.finditer(r"^def (test_\w+)", path.read_text(), re.M)}
    named = set(re.findall(r"(test_\w+)`", text)) | set(re.findall(r"::(test_\w+)", text))
    assert named and named <= defined, sorted(named - defined)
    paths = re.findall(r"`((?:tests|conformance-corpus|spec_validate)/[\w/.\-]+?)(?:::\w+)?`", text)
    missing = [p for p in paths if not (ROOT / p).exists() and not list((ROOT / "conformance-corpus/hostile").glob(p))]
    assert paths and not missing, missing
