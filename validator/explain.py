"""Rule documentation from the pack and the primitives' docstrings: --explain and docs/rules/<id>.md."""

from __future__ import annotations

import json

from validator.checks import registry
from validator.engine.model import Rule
from validator.engine.selectors import describe


def explain(rule: Rule) -> str:
    """The rule in Markdown: level, section, the quoted clause, rationale, selector and what each step checks."""
    head = f"# {rule.id} ({rule.level.value}{', derived' if rule.derived else ''})"
    lines = [head, ""]
    if rule.level is not rule.spec_level:
        lines += [f"Level raised or lowered by a pack override; the spec says {rule.spec_level.value}.", ""]
    source = f" of {rule.spec_source}" if rule.spec_source else ""
    lines += [f"Pack: {rule.pack}. Section: {rule.section}{source} (spec version {rule.spec_version}).", ""]
    lines += [f"> {rule.clause}", ""]
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
        lines += ["", f"Known writer departure: {w.name} {w.versions}: {w.note}"]
    return "\n".join(lines) + "\n"
