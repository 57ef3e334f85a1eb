"""Markdown for people reading a CI page ($GITHUB_STEP_SUMMARY): a summary table, then the failures."""

from __future__ import annotations

from collections.abc import Sequence

from spec_validate.model import Report, Status
from spec_validate.report import readers
from spec_validate.report.baseline import artifact_uri, located
from spec_validate.report.formats import output_format
from spec_validate.report.links import explain_command, rule_page
from spec_validate.report.options import RenderOptions
from spec_validate.report.verdict import (
    CONFORMS,
    DOES_NOT_CONFORM,
    ERROR,
    NOT_FULLY_CHECKED,
    NOTHING_CHECKED,
    legacy_checks,
    reader_gate,
    stood_for,
    verdict,
)

ICONS = {
    CONFORMS: "\u2705",
    DOES_NOT_CONFORM: "\u274c",
    NOT_FULLY_CHECKED: "\u2753",
    ERROR: "\u26a0\ufe0f",
    NOTHING_CHECKED: "\u2796",
}


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


@output_format("markdown")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """Markdown for a CI page: a summary table, then the failures and the clauses not checked."""
    fail_on, baseline, strict = options.fail_on, options.baseline, options.fail_on_unchecked
    lines = ["## spec-validate", ""]
    lines.append("| File | Format | Result | MUST failed | SHOULD failed | MAY failed | Passed | Not applicable | Not checked |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for report in reports:
        if report.skipped is not None:
            continue
        s = report.summary()
        v = verdict(report, fail_on, baseline, strict)
        # An error's message is in the failures table below; the table says only that the input was not checked.
        result = f"{ICONS[v.outcome]} {_cell(v.outcome if report.error is not None else v.describe())}"
        if report.legacy and v.outcome == DOES_NOT_CONFORM:
            result += " (legacy)"
        passed = sum(s[lvl]["passed"] for lvl in s)
        # The clauses a legacy verdict stands for were not checked: not counted as not applicable.
        na = sum(s[lvl]["not_applicable"] for lvl in s) - sum(1 for r in report.results if stood_for(r))
        unchecked = sum(s[lvl]["not_checked"] for lvl in s)
        name = artifact_uri(report.source) + (report.node if report.node != "/" else "")
        lines.append(
            f"| `{_cell(name)}` | {report.format or '-'} | {result} | "
            f"{s['MUST']['failed'] + s['MUST']['error']} | {s['SHOULD']['failed'] + s['SHOULD']['error']} | "
            f"{s['MAY']['failed'] + s['MAY']['error']} | {passed} | {na} | {unchecked} |"
        )
    lines.append("")
    for report in reports:
        about = report.provenance.describe() if report.provenance is not None else ""
        if about:
            lines.append(f"- `{_cell(artifact_uri(report.source))}`: {about}")
        for lv in report.legacy:
            more = "" if lv.clauses_checked else f" {legacy_checks(report, lv)}."
            lines.append(f"- `{_cell(artifact_uri(report.source))}`: **legacy** ({lv.id} at `{lv.path}`): {lv.message}{more}")
    if any((r.provenance is not None and r.provenance.describe()) or r.legacy for r in reports):
        lines.append("")
    lines.append(
        f"Fails on: {fail_on.value} and stricter"
        + (", and on clauses at that level not checked on every node (--fail-on-unchecked)." if strict else ".")
    )
    skipped = [r for r in reports if r.skipped is not None]
    if skipped:
        listed = ", ".join(f"`{_cell(r.name)}` ({_cell(r.skipped or '')})" for r in skipped)
        lines += ["", f"Skipped {len(skipped)} file(s) found in folders: {listed}"]
    failing = [(report, item) for report in reports for item in located(report)]
    if failing:
        lines += ["", "### Failures", "", "| File | Level | Rule | Node | Message |", "|---|---|---|---|---|"]
        for _, item in failing:
            known = baseline is not None and baseline.is_known(item)
            page = rule_page(item.rule_id, options.docs_url) if item.result is not None and item.result.rule.builtin else None
            rule = (f"[`{item.rule_id}`]({page})" if page else f"`{item.rule_id}`") + (" (baseline)" if known else "")
            message = item.message + "".join(
                f" (note: {w.label}: {w.note})" for w in (item.finding.writers if item.finding else ())
            )
            lines.append(
                f"| `{_cell(item.file)}` | {item.level.value} | {rule} | `{_cell(item.path or '/')}` | {_cell(message)} |"
            )
        if not options.docs_url:  # no documentation site named: the pages ship with the tool
            lines += ["", f"A rule's documentation: `{explain_command('<rule-id>')}`."]
    lines += _not_checked(reports)
    lines += _readers(reports)
    return "\n".join(lines) + "\n"


def _readers(reports: Sequence[Report]) -> list[str]:
    """The reader verdicts (--readers) as a table, and the reader gate's misses (exit code 3)."""
    rows = [(report, row) for report in reports for row in readers.table_rows(report)]
    misses = [(report, m) for report in reports for m in reader_gate(report)]
    if not rows and not misses:
        return []
    lines = ["", "### Readers", "", "| File | Reader | Versions | Verdict | Why |", "|---|---|---|---|---|"]
    for report, (reader, versions, said, why) in rows:
        lines.append(f"| `{_cell(artifact_uri(report.source))}` | {reader} | {versions} | {said} | {_cell(why)} |")
    for report, m in misses:
        lines.append(f"- **reader gate** `{_cell(artifact_uri(report.source))}`: {_cell(m.message)}")
    return lines


def _not_checked(reports: Sequence[Report]) -> list[str]:
    """The clauses not checked (none of their nodes) and those that passed with nodes not checked, as a table."""
    rows = [
        (report, r)
        for report in reports
        for r in report.results
        if r.status is Status.NOT_CHECKED or (r.status is Status.PASSED and r.unchecked)
    ]
    if not rows:
        return []
    lines = ["", "### Not checked", "", "| File | Level | Rule | Status | Nodes | Why |", "|---|---|---|---|---:|---|"]
    for report, r in rows:
        status = "not checked" if r.status is Status.NOT_CHECKED else "passed, not all checked"
        why = r.reason if r.status is Status.NOT_CHECKED and r.reason else r.unchecked[0][1]
        lines.append(
            f"| `{_cell(artifact_uri(report.source))}` | {r.rule.level.value} | `{r.rule.id}` | {status} | "
            f"{max(r.unchecked_count, len(r.unchecked))} | {_cell(why)} |"
        )
    return lines
