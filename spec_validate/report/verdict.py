"""One input's verdict and the run's exit code, decided once for every format: a summary never contradicts the exit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from spec_validate.model import Level, Status
from spec_validate.report.baseline import Baseline, located, new_failures

if TYPE_CHECKING:
    from spec_validate.model import Report

CONFORMS = "conforms"
DOES_NOT_CONFORM = "does not conform"
NOTHING_CHECKED = "nothing checked"
ERROR = "error"
SKIPPED = "skipped"


class Verdict(NamedTuple):
    """What one input came to at `--fail-on`, with the baseline applied."""

    outcome: str  # one of CONFORMS, DOES_NOT_CONFORM, NOTHING_CHECKED, ERROR, SKIPPED
    new: int = 0  # failing findings at or above --fail-on that are not in the baseline: these fail the run
    known: int = 0  # failing findings (any level) that the baseline holds: reported, not failing
    unchecked: int = 0  # clauses with selected nodes that could not be checked (not decoded, unreadable)
    reason: str = ""  # why nothing was checked, why the input was skipped, or the error

    @property
    def fails(self) -> bool:
        return self.outcome in (DOES_NOT_CONFORM, ERROR)

    def describe(self) -> str:
        """The outcome with what qualifies it, in one phrase: `conforms (1 known failure in the baseline)`."""
        if self.outcome in (ERROR, SKIPPED, NOTHING_CHECKED):
            return f"{self.outcome}: {self.reason}" if self.reason else self.outcome
        notes = []
        if self.known:
            notes.append(f"{self.known} known failure(s) in the baseline")
        if self.unchecked:
            notes.append(f"{self.unchecked} clause(s) not fully checked")
        return self.outcome + (f" ({'; '.join(notes)})" if notes else "")


def verdict(report: Report, fail_on: Level, baseline: Baseline | None = None) -> Verdict:
    """The verdict on `report`: failures are counted with the baseline, as the exit code counts them."""
    if report.error is not None:
        return Verdict(ERROR, reason=report.error)
    if report.skipped is not None:
        return Verdict(SKIPPED, reason=report.skipped)
    new = len(new_failures(report, fail_on, baseline))
    known = sum(1 for item in located(report) if baseline is not None and baseline.is_known(item))
    unchecked = sum(1 for r in report.results if r.unchecked)
    if new:
        return Verdict(DOES_NOT_CONFORM, new, known, unchecked)
    if (
        not known
        and not report.problems
        and not any(r.status in (Status.PASSED, Status.FAILED, Status.ERROR) for r in report.results)
    ):
        return Verdict(NOTHING_CHECKED, unchecked=unchecked, reason=_why_nothing(report))
    return Verdict(CONFORMS, new, known, unchecked)


def sentence(report: Report, v: Verdict, fail_on: Level) -> str:
    """The verdict as the text and HTML reports print it, starting with the outcome:
    `conforms at --fail-on must (...). MUST: 0 failed, 85 passed, 4 n/a; ...`, or `nothing checked: why.`"""
    if v.outcome not in (CONFORMS, DOES_NOT_CONFORM):
        return f"{v.outcome}: {v.reason}."
    summary = report.summary()
    parts = []
    for lvl in ("MUST", "SHOULD", "MAY"):
        c = summary[lvl]
        if sum(c.values()):
            parts.append(
                f"{lvl}: {c['failed']} failed, {c['passed']} passed, {c['not_applicable']} n/a"
                + (f", {c['error']} error" if c["error"] else "")
                + (f", {c['notice']} notice" if c.get("notice") else "")
            )
    notes = []
    if report.legacy and v.outcome == DOES_NOT_CONFORM:  # one verdict standing for the clauses of a legacy file
        notes.append(f"legacy: {', '.join(lv.id for lv in report.legacy)}; --ignore it to accept such files")
    if v.known:
        notes.append(f"{v.new} new failure(s), {v.known} known in the baseline")
    if v.unchecked:
        notes.append(f"{v.unchecked} clause(s) not fully checked: nodes not decoded, not readable or not listed")
    qualified = f" ({'; '.join(notes)})" if notes else ""
    return f"{v.outcome} at --fail-on {fail_on.value.lower()}{qualified}. " + "; ".join(parts)


def _why_nothing(report: Report) -> str:
    packs = ", ".join(f"{p.name} {p.version}" for p in report.packs)
    if not report.results:
        return f"no selected rule belongs to a pack that applies here ({packs})"
    if report.results and all((r.reason or "").startswith("legacy: ") for r in report.results):
        return "the store is of an era before the spec (legacy); --all-clauses checks its clauses"
    if any(r.unchecked for r in report.results):
        return (
            f"the nodes the {len(report.results)} selected clause(s) apply to could not be checked (not decoded or "
            "not readable), listed above"
        )
    where = "at or below " + report.node if report.node != "/" else "in this store"
    return f"none of the {len(report.results)} selected clause(s) applies to a node {where}"


def exit_code(reports: Sequence[Report], fail_on: Level, baseline: Baseline | None = None, exit_zero: bool = False) -> int:
    """2 when an input could not be opened; else 1 when an input does not conform (unless `exit_zero`); else 0."""
    verdicts = [verdict(r, fail_on, baseline) for r in reports]
    if any(v.outcome == ERROR for v in verdicts):
        return 2
    if not exit_zero and any(v.fails for v in verdicts):
        return 1
    return 0
