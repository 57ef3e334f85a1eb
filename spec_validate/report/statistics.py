"""--statistics: how many failing findings each rule has over every input, most first (ruff's `--statistics`).

The text and JSON formats write these instead of the report when `RenderOptions.statistics` is set."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from spec_validate.model import Report
from spec_validate.report.baseline import Baseline, located


def counts(reports: Sequence[Report], baseline: Baseline | None = None) -> list[dict[str, Any]]:
    """One entry per rule that failed somewhere: its id, pack, level, findings, inputs, and findings the baseline holds."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for report in reports:
        for item in located(report):
            entry = table.setdefault(
                (item.pack, item.rule_id),
                {
                    "rule": item.rule_id,
                    "pack": item.pack or None,
                    "level": item.level.value,
                    "count": 0,
                    "inputs": 0,
                    "baseline": 0,
                    "_seen": set(),
                },
            )
            entry["count"] += 1
            entry["baseline"] += int(baseline is not None and baseline.is_known(item))
            entry["_seen"].add(report.name)
    rows = []
    for entry in table.values():
        entry["inputs"] = len(entry.pop("_seen"))
        rows.append(entry)
    rows.sort(key=lambda e: (-e["count"], e["rule"]))
    return rows


def as_json(reports: Sequence[Report], baseline: Baseline | None = None) -> str:
    """The counts as a JSON list (`--statistics --format json`)."""
    return json.dumps(counts(reports, baseline), indent=2, ensure_ascii=False) + "\n"


def table(reports: Sequence[Report], baseline: Baseline | None = None) -> str:
    """The counts as text, one line per rule (`--statistics`)."""
    rows = counts(reports, baseline)
    if not rows:
        return "No failures.\n"
    width = max(len(str(r["count"])) for r in rows)
    rule_width = max(len(r["rule"]) for r in rows)
    lines = []
    for r in rows:
        where = f"{r['inputs']} input{'s' if r['inputs'] != 1 else ''}"
        known = f", {r['baseline']} in the baseline" if r["baseline"] else ""
        lines.append(f"{r['count']:>{width}}  {r['level']:<6}  {r['rule']:<{rule_width}}  ({where}{known})")
    return "\n".join(lines) + "\n"
