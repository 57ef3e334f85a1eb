"""The text report for people: failures grouped by clause, with level, path and the quoted clause; a verdict per
input that agrees with the exit code; a summary table after several inputs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from spec_validate.model import ClauseResult, Level, Report, Status
from spec_validate.report import archive, readers
from spec_validate.report.baseline import Baseline, located, new_failures
from spec_validate.report.formats import output_format
from spec_validate.report.links import rule_reference
from spec_validate.report.options import RenderOptions
from spec_validate.report.verdict import (
    CONFORMS,
    DOES_NOT_CONFORM,
    NOT_FULLY_CHECKED,
    Verdict,
    legacy_checks,
    sentence,
    verdict,
)

COLOURS = {"MUST": "\033[31m", "SHOULD": "\033[33m", "MAY": "\033[36m", "ok": "\033[32m", "dim": "\033[2m", "bold": "\033[1m"}
RESET = "\033[0m"
UNCHECKED_SHOWN = 3  # nodes listed per clause that could not be checked, each with its reason; the rest are counted
UNCHECKED_PATHS = 5  # nodes named on one line when they share one reason (needs --deep); the rest are counted

Paint = Callable[[str, str], str]


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


@output_format("text")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """For people at a terminal: a block per input, one line per file skipped in a folder, the baseline's states,
    and a summary table after several inputs."""
    if options.statistics:
        from spec_validate.report import statistics

        return statistics.table(reports, options.baseline)
    fail_on, colour, verbose, baseline = options.fail_on, options.colour, options.verbose, options.baseline
    strict = options.fail_on_unchecked
    paint: Paint = (lambda key, text: f"{COLOURS[key]}{text}{RESET}") if colour else (lambda key, text: text)
    lines: list[str] = []
    for report in reports:
        if report.skipped is None:
            lines.extend(_block(report, fail_on, paint, verbose, baseline, options.docs_url, strict))
            lines.append("")
    skipped = [r for r in reports if r.skipped is not None]
    for report in skipped:
        lines.append(paint("dim", f"{report.name}: skipped: {report.skipped}"))
    if skipped:
        lines.append("")
    text = "\n".join(lines) + ("\n" if lines else "")
    if baseline is not None:
        text += _baseline_text(reports, fail_on, baseline)
    if len(reports) - len(skipped) > 1:
        from spec_validate.report.json import archive_summary  # several inputs only: one input's run imports less

        # The rules failing on most inputs, between the table and its last line: after an archive's thousand rows,
        # what fails most is still on screen, and the run's verdict is still the last line.
        rules = "\n" + archive.as_text(archive_summary(reports, options))
        text += _summary_table(reports, fail_on, baseline, strict, rules)
    return text


def _block(
    report: Report,
    fail_on: Level,
    paint: Paint,
    verbose: bool,
    baseline: Baseline | None,
    docs_url: str | None = None,
    strict: bool = False,
) -> list[str]:
    """One input: its header, what failed, what could not be checked, the context above a node, the verdict."""
    if report.error is not None:
        return [paint("bold", report.name) + ": " + paint("MUST", "error") + f": {_without(report.source, report.error)}"]
    states = _baseline_states(report, baseline)
    lines = _head(report, paint, states)
    failing = (r for r in report.results if r.status in (Status.FAILED, Status.ERROR))
    shown = sorted(failing, key=lambda r: (-r.rule.level.rank, r.rule.id))
    for r in shown:
        lines.extend(_failed_clause(r, paint, states, docs_url))
    for r in report.results:  # notices (the hdmf-zarr pickle codec): reported, never failures
        if r.status is Status.NOTICE:
            lines.extend(_notice(r, paint, docs_url))
    # A clause that could not check some of its nodes says so, verbose or not, whether it passed or not; in red
    # where it fails the run (--fail-on-unchecked).
    failing_unchecked = {id(r) for r in report.unchecked_at(fail_on)} if strict else set()
    for r in report.results:
        if r.status is Status.NOT_CHECKED or (r.unchecked and r.status is Status.PASSED):
            label = "PASSED, NOT ALL CHECKED" if r.status is Status.PASSED else "NOT CHECKED"
            colour = "MUST" if id(r) in failing_unchecked else "SHOULD"
            lines.append(f"  {paint(colour, label)} {r.rule.level.value} {r.rule.id}")
            lines.extend(_unchecked_lines(r))
    if report.context:
        heading = f"  Context: clauses failing on the ancestors of {report.node} (not counted for {report.node}):"
        lines.append(paint("dim", heading))
        for r in sorted(report.context, key=lambda r: (-r.rule.level.rank, r.rule.id)):
            lines.extend("  " + line for line in _failed_clause(r, paint, {}, docs_url))
    if verbose:
        for r in report.results:
            if r.status in (Status.PASSED, Status.NOT_APPLICABLE):
                extra = f" ({r.reason})" if r.reason else ""
                lines.append(paint("dim", f"  {r.status.value:<14} {r.rule.level.value:<6} {r.rule.id}{extra}"))
    lines.extend(readers.text_lines(report))
    lines.append("  " + _verdict_line(report, verdict(report, fail_on, baseline, strict), fail_on, paint))
    return lines


def _head(report: Report, paint: Paint, states: dict[tuple, bool]) -> list[str]:
    """The input's name, format, packs, era and likely writers; its unreadable keys and legacy verdicts."""
    packs = pack_list(report)
    about = report.provenance.describe() if report.provenance is not None else ""  # the eras and likely writers
    # An input cut short under --timeout (or whose reader crashed) has an unreadable record and no results, and no
    # format when it was not even opened.
    fmt = report.format or "format unknown"
    if not report.listed:
        fmt += ", not listed: its members as its consolidated metadata names them"
    checked = packs or ("not checked" if report.problems and not report.results else "no pack applies")
    lines = [paint("bold", report.name) + f" ({fmt}; {checked}{'; ' + about if about else ''})"]
    for problem in report.problems:
        mark = " [baseline]" if states.get((None, problem.key)) else ""
        lines.append(f"  {paint('MUST', 'UNREADABLE')} {problem.key}: {problem.message}{mark}")
    for lv in report.legacy:  # one verdict standing for the clauses of a scope that depend on its era
        where = f" at {lv.path}" if lv.path != "/" else ""
        more = "" if lv.clauses_checked else f" {legacy_checks(report, lv)}."
        mark = " [baseline]" if states.get((None, lv.path, lv.id)) else ""
        lines.append(f"  {paint('MUST', 'LEGACY')} {lv.id}{where}: {lv.era}: {lv.message}{more}{mark}")
    return lines


def _failed_clause(r: ClauseResult, paint: Paint, states: dict[tuple, bool], docs_url: str | None = None) -> list[str]:
    """A failed or errored clause: level, id, the quoted clause, each finding; `[baseline]` on the clause when the
    baseline holds all its findings, else on each finding it holds."""
    level = r.rule.level.value + (" (derived)" if r.rule.derived else "")
    if r.rule.spec_level is not r.rule.level:  # a pack's override: the spec's own word is shown too
        level += f" (spec: {r.rule.spec_level.value})"
    status = "FAILED" if r.status is Status.FAILED else "ERROR"
    mine = [known for (owner, *_), known in states.items() if owner == id(r)]
    in_baseline = bool(mine) and all(mine)
    lines = [f"  {paint(r.rule.level.value, f'{status} {level}')} {r.rule.id}" + (" [baseline]" if in_baseline else "")]
    lines.append(paint("dim", f"    {r.rule.section}: \u201c{r.rule.clause}\u201d"))
    if r.status is Status.ERROR:
        lines.append(f"    error: {r.reason}")
    for f in r.findings:
        where = f.path + (f"[{', '.join(map(str, f.index))}]" if f.index is not None else "")
        mark = " [baseline]" if states.get((id(r), f.path)) and not in_baseline else ""
        lines.append(f"    {where}: {f.message}{mark}")
    if r.finding_count > len(r.findings):
        lines.append(f"    ... and {r.finding_count - len(r.findings)} more")
    for w in r.writer_notes:  # each describes a finding and fits the store; detected, or likely and why
        lines.append(f"    note: {w.label}: {w.note}")
    if r.rule.builtin:  # the rule's page: what it checks, examples that fail and pass, how to suppress it
        lines.append(paint("dim", f"    see {rule_reference(r.rule.id, docs_url)}"))
    lines.extend(_unchecked_lines(r))
    return lines


def _notice(r: ClauseResult, paint: Paint, docs_url: str | None = None) -> list[str]:
    """A `notice:` rule's findings: a fact worth knowing (a security notice), never a failure."""
    lines = [f"  {paint('MAY', f'NOTICE ({r.rule.notice})')} {r.rule.id}"]
    lines.append(paint("dim", f"    {r.rule.section}: \u201c{r.rule.clause}\u201d"))
    for f in r.findings:
        where = f.path + (f"[{', '.join(map(str, f.index))}]" if f.index is not None else "")
        lines.append(f"    {where}: {f.message}")
    if r.finding_count > len(r.findings):
        lines.append(f"    ... and {r.finding_count - len(r.findings)} more")
    if r.rule.builtin:
        lines.append(paint("dim", f"    see {rule_reference(r.rule.id, docs_url)}"))
    return lines


def _baseline_states(report: Report, baseline: Baseline | None) -> dict[tuple, bool]:
    """(id of the clause result, or None for an unreadable key; node path or key) -> whether the baseline holds it,
    for each failing thing of the report (a legacy verdict: (None, its path, its id)); empty without a baseline."""
    if baseline is None:
        return {}
    states: dict[tuple, bool] = {}
    for item in located(report):
        if item.legacy is not None:
            states[(None, item.path, item.rule_id)] = baseline.is_known(item)
        else:
            states[(id(item.result) if item.result is not None else None, item.path)] = baseline.is_known(item)
    return states


def _verdict_line(report: Report, v: Verdict, fail_on: Level, paint: Paint) -> str:
    """The verdict sentence with its outcome painted: red when it fails the run, green when it conforms."""
    line = sentence(report, v, fail_on)
    key = "MUST" if v.fails else "ok" if v.outcome == CONFORMS else "SHOULD"
    return paint(key, v.outcome) + line[len(v.outcome) :]


def _without(source: str, message: str) -> str:
    """An error message without the input's name in front (the line names it already)."""
    return message[len(source) + 2 :] if message.startswith(f"{source}: ") else message


def write(text: str, stream: TextIO = sys.stdout) -> None:
    stream.write(text)


def _unchecked_lines(r: ClauseResult) -> list[str]:
    """The nodes a clause could not check: on one line when they share one reason (`needs --deep` on every array),
    else the first few with their reasons."""
    total = max(r.unchecked_count, len(r.unchecked))
    reasons = {_why(path, reason) for path, reason in r.unchecked}
    if len(r.unchecked) > 1 and len(reasons) == 1:
        paths = ", ".join(path for path, _ in r.unchecked[:UNCHECKED_PATHS])
        more = total - min(len(r.unchecked), UNCHECKED_PATHS)
        return [f"    not checked: {reasons.pop()}: {paths}" + (f" and {more} more" if more else "")]
    shown = [
        f"    not checked: {reason if reason.startswith(path) else f'{path}: {reason}'}"
        for path, reason in r.unchecked[:UNCHECKED_SHOWN]
    ]
    total = max(r.unchecked_count, len(r.unchecked))
    if total > UNCHECKED_SHOWN:
        shown.append(f"    ... and {total - UNCHECKED_SHOWN} more not checked")
    return shown


def _why(path: str, reason: str) -> str | None:
    """A node's reason without its path, where the path leads it as `path: ` or is not in it; None where the reason
    names the node in its own words (`/x has an unusable dtype`): such reasons are not put on one line."""
    if reason.startswith(path + ": "):
        return reason[len(path) + 2 :]
    return None if path in reason else reason


def _baseline_text(reports: Sequence[Report], fail_on: Level, baseline: Baseline) -> str:
    """After the reports: each failing finding marked `baseline` (known) or `new`."""
    lines = ["Baseline:"]
    for report in reports:
        for item in located(report):
            state = "baseline" if baseline.is_known(item) else "new"
            lines.append(f"  {state:<8} {item.level.value:<6} {item.rule_id} {item.file} {item.path}")
    new = sum(len(new_failures(r, fail_on, baseline)) for r in reports)
    lines.append(f"  {new} new failure(s) at --fail-on {fail_on.value.lower()}")
    return "\n".join(lines) + "\n\n"


def _summary_table(
    reports: Sequence[Report], fail_on: Level, baseline: Baseline | None, strict: bool = False, before_tail: str = ""
) -> str:
    """The table after several inputs: one row per input checked, failures per level and the verdict; then
    `before_tail`, then the line that counts the verdicts."""
    header = ("file", "format", "MUST", "SHOULD", "MAY", "result")
    rows = []
    verdicts = []
    for report in reports:
        if report.skipped is not None:
            continue
        v = verdict(report, fail_on, baseline, strict)
        verdicts.append(v)
        if report.error is not None:
            rows.append((report.name, "-", "-", "-", "-", v.outcome))
            continue
        s = report.summary()
        failed = (str(s[level]["failed"] + s[level]["error"]) for level in ("MUST", "SHOULD", "MAY"))
        legacy = " (legacy)" if report.legacy and v.outcome == DOES_NOT_CONFORM else ""
        rows.append((report.name, report.format, *failed, v.describe() + legacy))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def fmt(row: tuple[str, ...]) -> str:  # file, format and result left-aligned; the counts right-aligned
        cells = (cell.ljust(w) if i in (0, 1, 5) else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
        return "  ".join(cells).rstrip()

    failing = sum(1 for v in verdicts if v.outcome == DOES_NOT_CONFORM)
    lines = [f"Summary ({len(rows)} inputs; failed clauses per level):", fmt(header), *map(fmt, rows)]
    tail = f"{failing} of {len(rows)} do not conform at --fail-on {fail_on.value.lower()}"
    errors = sum(1 for v in verdicts if v.outcome == "error")
    nothing = sum(1 for v in verdicts if v.outcome == "nothing checked")
    partly = sum(1 for v in verdicts if v.outcome == NOT_FULLY_CHECKED)
    unchecked = sum(1 for v in verdicts if v.outcome in (CONFORMS, NOT_FULLY_CHECKED, DOES_NOT_CONFORM) and v.unchecked)
    skipped = len(reports) - len(rows)
    extra = [f"{partly} not fully checked (--fail-on-unchecked)"] * bool(partly)
    extra += [f"{errors} could not be opened"] * bool(errors) + [f"{nothing} had nothing checked"] * bool(nothing)
    extra += [f"{unchecked} with clauses not checked"] * bool(unchecked)
    extra += [f"{skipped} file(s) skipped"] * bool(skipped)
    return "\n".join(lines) + "\n" + before_tail + tail + (f"; {', '.join(extra)}" if extra else "") + ".\n"


def pack_list(report: Report) -> str:
    """The packs applied, as a header names them: "pack anndata 0.1.0" or "packs anndata 0.1.0, zarr 2" (the word
    says that the version is the pack's, not the writer's: "anndata 0.1.0" alone read like an anndata release)."""
    named = [f"{p.name} {p.version}" + (f" at {', '.join(p.scopes)}" if p.scopes != ("/",) else "") for p in report.packs]
    return f"{'pack' if len(named) == 1 else 'packs'} {', '.join(named)}" if named else ""
