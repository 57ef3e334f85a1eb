"""Rule documentation from the pack and the primitives' docstrings: --explain and docs/rules/<id>.md."""

from __future__ import annotations

import json
import re

from spec_validate.checks import registry
from spec_validate.engine.selectors import describe
from spec_validate.engine.writer_notes import values_explained
from spec_validate.model import Rule

# A link inside the quoted spec text to an anchor of the spec's own page ("the [well specification](#well-md)"):
# that anchor is on no page here, so the quote keeps the link's words without it.
_SPEC_ANCHOR_LINK = re.compile(r"\[([^\]]*)\]\(#[^)\s]*\)")


def quoted(clause: str) -> str:
    """A clause as a rule page quotes it: the spec's words, its links to its own anchors as their text."""
    return _SPEC_ANCHOR_LINK.sub(r"\1", clause)


def notes_for(rule: Rule) -> list:
    """The spec notes (contradictions, and the side the pack takes) that concern `rule`, from the built-in packs."""
    from spec_validate.engine.loader import builtin_packs

    return [n for pack in builtin_packs() for n in pack.notes if rule.id in n.rules]


def explain(rule: Rule, notes=None) -> str:
    """The rule in Markdown: level, section, the quoted clause, rationale, selector, what each step checks, and
    the spec notes about it (docs/spec-notes.md)."""
    head = f"# {rule.id} ({rule.level.value}{', derived' if rule.derived else ''})"
    lines = [head, ""]
    if rule.level is not rule.spec_level:
        lines += [f"Level raised or lowered by a pack override; the spec says {rule.spec_level.value}.", ""]
    source = f" of {rule.spec_source}" if rule.spec_source else ""
    lines += [f"Pack: {rule.pack}. Section: {rule.section}{source} (spec version {rule.spec_version}).", ""]
    lines += [f"> {quoted(rule.clause)}", ""]
    if rule.rationale:
        lines += [f"Derived: {rule.rationale}", ""]
    lines += [f"Applies to: {describe(rule.applies_to)}.", "", "Checks, in order (stopping at the first that fails):", ""]
    for step in rule.check:
        primitive = registry.get(step.primitive)
        options = json.dumps(dict(step.options), sort_keys=True) if step.options else ""
        summary = primitive.summary if primitive else "(unknown primitive)"
        lines.append(f"- `{step.primitive}` {options}".rstrip() + f": {summary}")
    if rule.message:
        lines += ["", f"Message on failure: `{rule.message}` ({{path}} is the node, {{detail}} what the step found)."]
    for w in rule.writers:
        values = values_explained(w)
        shown = f" (shown on findings with {values})" if values else ""
        lines += ["", f"Known writer departure: {w.name} {w.versions}: {w.note}{shown}"]
    for note in notes_for(rule) if notes is None else notes:
        lines += ["", f"Spec note ({note.title}): {note.text}"]
    return "\n".join(lines) + "\n"


def explain_legacy(pack) -> str:
    """The pack's legacy verdict in Markdown: the spec's sentence, and each era it stands for."""
    legacy = pack.legacy
    lines = [
        f"# {pack.legacy_id} (MUST, legacy verdict)",
        "",
        f"Pack: {pack.name}. Section: {legacy.section}.",
        "",
        f"> {quoted(legacy.clause)}",
        "",
        "A scope of one of these eras gets this one verdict instead of the clauses of the pack that depend on the "
        "era (--all-clauses checks them as well). It counts as a MUST failure at every --fail-on; --ignore it (or "
        "record it in a baseline) to accept such files.",
        "",
    ]
    for era, texts in legacy.eras.items():
        for storage, text in texts.items():
            lines.append(f"- `{era}`{'' if storage == '*' else f' ({storage})'}: {text}")
    if legacy.still_checked:
        kept = ", ".join(f"`{k}`" for k in legacy.still_checked)
        lines += ["", f"Checked on such a scope all the same, as they hold in every era: {kept}."]
    return "\n".join(lines) + "\n"
