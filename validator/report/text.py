"""The text report for people: failures grouped by clause, with level, path and the quoted clause."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

from validator.report.links import rule_page
from validator.report.model import ClauseResult, Level, Report, Status

COLOURS = {"MUST": "\033[31m", "SHOULD": "\033[33m", "MAY": "\033[36m", "ok": "\033[32m", "dim": "\033[2m", "bold": "\033[1m"}
RESET = "\033[0m"
UNCHECKED_SHOWN = 3  # nodes listed per clause that could not be checked; the rest are counted


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


def render(reports: Sequence[Report], fail_on: Level, colour: bool = False, verbose: bool = False) -> str:
    paint = (lambda key, text: f"{COLOURS[key]}{text}{RESET}") if colour else (lambda key, text: text)
    lines: list[str] = []
    for report in reports:
        packs = ", ".join(
            f"{p.name} {p.version}" + (f" at {', '.join(p.scopes)}" if p.scopes != ("/",) else "") for p in report.packs
        )
        lines.append(paint("bold", f"{report.source}") + f" ({report.format}; {packs or 'no pack applies'})")
        for problem in report.problems:
            lines.append(f"  {paint('MUST', 'UNREADABLE')} {problem.key}: {problem.message}")
        shown = [r for r in report.results if r.status in (Status.FAILED, Status.ERROR)]
        shown.sort(key=lambda r: (-r.rule.level.rank, r.rule.id))
        for r in shown:
            level = r.rule.level.value + (" (derived)" if r.rule.derived else "")
            if r.rule.spec_level is not r.rule.level:  # a pack's override: the spec's own word is shown too
                level += f" (spec: {r.rule.spec_level.value})"
            status = "FAILED" if r.status is Status.FAILED else "ERROR"
            lines.append(f"  {paint(r.rule.level.value, f'{status} {level}')} {r.rule.id}")
            lines.append(paint("dim", f"    {r.rule.section}: \u201c{r.rule.clause}\u201d"))
            if r.status is Status.ERROR:
                lines.append(f"    error: {r.reason}")
            for f in r.findings:
                where = f.path + (f"[{', '.join(map(str, f.index))}]" if f.index is not None else "")
                lines.append(f"    {where}: {f.message}")
            if r.finding_count > len(r.findings):
                lines.append(f"    ... and {r.finding_count - len(r.findings)} more")
            for w in r.rule.writers:
                lines.append(f"    note: {w.name} {w.versions}: {w.note}")
            if r.rule.builtin:  # the rule's page: what it checks, examples that fail and pass, how to suppress it
                lines.append(paint("dim", f"    see {rule_page(r.rule.id)}"))
            lines.extend(_unchecked_lines(r))
        # A clause that passed on some nodes but could not check others says so, verbose or not.
        for r in report.results:
            if r.status is Status.PASSED and r.unchecked:
                lines.append(f"  {paint('SHOULD', 'PASSED, NOT ALL CHECKED')} {r.rule.level.value} {r.rule.id}")
                lines.extend(_unchecked_lines(r))
        if verbose:
            for r in report.results:
                if r.status in (Status.PASSED, Status.NOT_APPLICABLE):
                    extra = f" ({r.reason})" if r.reason else ""
                    lines.append(paint("dim", f"  {r.status.value:<14} {r.rule.level.value:<6} {r.rule.id}{extra}"))
        summary = report.summary()
        parts = []
        for lvl in ("MUST", "SHOULD", "MAY"):
            c = summary[lvl]
            if sum(c.values()):
                parts.append(
                    f"{lvl}: {c['failed']} failed, {c['passed']} passed, {c['not_applicable']} n/a"
                    + (f", {c['error']} error" if c["error"] else "")
                )
        verdict = paint("MUST", "does not conform") if report.fails_at(fail_on) else paint("ok", "conforms")
        lines.append(f"  {verdict} at --fail-on {fail_on.value.lower()}. " + "; ".join(parts))
        lines.append("")
    return "\n".join(lines)


def write(text: str, stream: TextIO = sys.stdout) -> None:
    stream.write(text)


def _unchecked_lines(r: ClauseResult) -> list[str]:
    """The nodes a clause could not check, the first few of them."""
    shown = [
        f"    not checked: {reason if reason.startswith(path) else f'{path}: {reason}'}"
        for path, reason in r.unchecked[:UNCHECKED_SHOWN]
    ]
    if len(r.unchecked) > UNCHECKED_SHOWN:
        shown.append(f"    ... and {len(r.unchecked) - UNCHECKED_SHOWN} more not checked")
    return shown
