"""Markdown for people reading a CI page ($GITHUB_STEP_SUMMARY): a summary table, then the failures."""

from __future__ import annotations

from collections.abc import Sequence

from validator.report.baseline import Baseline, artifact_uri, fails, located
from validator.report.model import Level, Report


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render(reports: Sequence[Report], fail_on: Level, baseline: Baseline | None = None) -> str:
    lines = ["## spec-validate", ""]
    lines.append("| File | Format | Result | MUST failed | SHOULD failed | MAY failed | Passed | Not applicable |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|")
    for report in reports:
        s = report.summary()
        verdict = "\u274c does not conform" if fails(report, fail_on, baseline) else "\u2705 conforms"
        passed = sum(s[lvl]["passed"] for lvl in s)
        na = sum(s[lvl]["not_applicable"] for lvl in s)
        lines.append(
            f"| `{_cell(artifact_uri(report.source))}` | {report.format} | {verdict} | "
            f"{s['MUST']['failed'] + s['MUST']['error']} | {s['SHOULD']['failed'] + s['SHOULD']['error']} | "
            f"{s['MAY']['failed'] + s['MAY']['error']} | {passed} | {na} |"
        )
    lines.append("")
    lines.append(f"Fails on: {fail_on.value} and stricter.")
    failing = [(report, item) for report in reports for item in located(report)]
    if failing:
        lines += ["", "### Failures", "", "| File | Level | Rule | Node | Message |", "|---|---|---|---|---|"]
        for report, item in failing:
            known = baseline is not None and baseline.is_known(item)
            rule = f"`{item.rule_id}`" + (" (baseline)" if known else "")
            lines.append(
                f"| `{_cell(item.file)}` | {item.level.value} | {rule} | `{_cell(item.path or '/')}` | {_cell(item.message)} |"
            )
    return "\n".join(lines) + "\n"
