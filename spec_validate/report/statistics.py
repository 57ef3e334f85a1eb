"""--statistics: how many failing findings each rule has over every input, most first (ruff's `--statistics`), and
on how many inputs each rule was not checked (none of its nodes: it needs --deep, a codec is not decoded, ...).

The text and JSON formats write these instead of the report when `RenderOptions.statistics` is set."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from spec_validate.model import Report, Status
from spec_validate.report.baseline import Baseline, located


def counts(reports: Sequence[Report], baseline: Baseline | None = None) -> list[dict[str, Any]]:
    """One entry per rule that failed or was not checked somewhere: its id, pack, level, failing findings, the
    inputs they are on, findings the baseline holds, and `not_checked`: the inputs on which the rule was checked on
    none of its nodes. Failures first (most findings first), then the rules only not checked."""
    table: dict[tuple[str, str], dict[str, Any]] = {}

    def entry(pack: str, rule: str, level: str) -> dict[str, Any]:
        return table.setdefault(
            (pack, rule),
            {
                "rule": rule,
                "pack": pack or None,
                "level": level,
                "count": 0,
                "inputs": 0,
                "baseline": 0,
                "not_checked": 0,
                "_seen": set(),
            },
        )

    for report in reports:
        for item in located(report):
            found = entry(item.pack, item.rule_id, item.level.value)
            found["count"] += 1
            found["baseline"] += int(baseline is not None and baseline.is_known(item))
            found["_seen"].add(report.name)
        for r in report.results:
            if r.status is Status.NOT_CHECKED:
                entry(r.rule.pack, r.rule.id, r.rule.level.value)["not_checked"] += 1
    rows = []
    for found in table.values():
        found["inputs"] = len(found.pop("_seen"))
        rows.append(found)
    rows.sort(key=lambda e: (-e["count"], -e["not_checked"], e["rule"]))
    return rows


def as_json(reports: Sequence[Report], baseline: Baseline | None = None) -> str:
    """The counts as a JSON list (`--statistics --format json`)."""
    return json.dumps(counts(reports, baseline), indent=2, ensure_ascii=False) + "\n"


def table(reports: Sequence[Report], baseline: Baseline | None = None) -> str:
    """The counts as text, one line per rule that failed (`--statistics`), then one per rule not checked."""
    rows = counts(reports, baseline)
    failed = [r for r in rows if r["count"]]
    unchecked = [r for r in rows if r["not_checked"]]
    lines = [] if failed else ["No failures."]
    width = max((len(str(r["count"])) for r in failed), default=1)
    rule_width = max((len(r["rule"]) for r in rows), default=0)
    for r in failed:
        where = _inputs(r["inputs"])
        known = f", {r['baseline']} in the baseline" if r["baseline"] else ""
        lines.append(f"{r['count']:>{width}}  {r['level']:<6}  {r['rule']:<{rule_width}}  ({where}{known})")
    if unchecked:
        lines.append("Not checked (none of the rule's nodes):")
        for r in unchecked:
            lines.append(f"  {r['level']:<6}  {r['rule']:<{rule_width}}  ({_inputs(r['not_checked'])})")
    return "\n".join(lines) + "\n"


def _inputs(n: int) -> str:
    return f"{n} input{'s' if n != 1 else ''}"
