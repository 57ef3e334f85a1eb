"""The summary of a run over many inputs (an archive): per pack and rule, how many inputs fail it, with the first few
of their names, and how many inputs came to each outcome.

It is built from each input's JSON report (`json.report_to_json`, which is also a `--format jsonl` line), never from
the `Report` objects: a resumed jsonl run holds only the lines of the inputs validated before it, and sums them up
with the new ones exactly as an uninterrupted run sums up its reports. What is kept per input is a `Digest`, small
whatever the report's size, so a run over an archive keeps no report in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from spec_validate.model import Level
from spec_validate.report.baseline import INPUT_ERROR, UNREADABLE
from spec_validate.report.verdict import (
    CONFORMS,
    DOES_NOT_CONFORM,
    ERROR,
    NOT_FULLY_CHECKED,
    NOTHING_CHECKED,
    SKIPPED,
    Verdict,
)

FIRST_NAMES = 5  # input names kept per rule (JSON, HTML); the others are counted
TEXT_NAMES = 3  # of those, named on a line of the text report
TEXT_RULES = 20  # rules listed by the text report; the others are counted (the JSON lists them all)
OUTCOMES = (CONFORMS, DOES_NOT_CONFORM, NOT_FULLY_CHECKED, NOTHING_CHECKED, ERROR, SKIPPED)
FAILED_STATUSES = ("failed", "error")  # as the summary table counts failed clauses


class Failing(NamedTuple):
    """A rule an input fails: a clause failed or in error, a legacy verdict, `unreadable` metadata, or the
    `input-error` of an input that could not be opened (these two as the baseline and SARIF name them)."""

    pack: str | None
    rule: str
    level: str


class Digest(NamedTuple):
    """What the summary keeps of one input."""

    name: str  # as the reports name it: the store, and the node when a path inside it was given
    outcome: str  # the verdict's outcome (verdict.py), SKIPPED for a file a folder search skipped
    failing: tuple[Failing, ...] = ()  # each rule it fails, once
    error: str | None = None  # why it could not be opened


def digest(report: Mapping[str, Any]) -> Digest:
    """The digest of one input's JSON report (`report_to_json`, or a --format jsonl report line)."""
    source, node = report["source"], report["node"]
    name = source if node == "/" else source.rstrip("/") + node  # as `Report.name`
    outcome = report["verdict"]["outcome"]
    if report.get("error") is not None:
        return Digest(name, outcome, (Failing(None, INPUT_ERROR, Level.MUST.value),), report["error"])
    failing: dict[Failing, None] = {}  # ordered, each once
    if report["problems"]:
        failing[Failing(None, UNREADABLE, Level.MUST.value)] = None
    for legacy in report["legacy"]:
        failing[Failing(legacy["pack"], legacy["id"], legacy["level"])] = None
    for result in report["results"]:
        if result["status"] in FAILED_STATUSES:
            failing[Failing(result["pack"], result["id"], result["level"])] = None
    return Digest(name, outcome, tuple(failing))


def skipped(name: str) -> Digest:
    """A file a folder search found and skipped: counted, never failing."""
    return Digest(name, SKIPPED)


def summarize(inputs: Iterable[Digest], fail_on: Level) -> dict[str, Any]:
    """The archive summary as JSON, of digests in input order (the first names of each rule are the first inputs
    of the run that fail it, however the inputs were scheduled).

    `rules` lists each rule failing somewhere: `inputs` that fail it, the `first` of their names, and `at_fail_on`:
    whether its level is at or above `fail_on` (its failures fail the run, unless a baseline holds them) or below
    (reported, failing nothing). Rules at `fail_on` come first, then by inputs, most first."""
    outcomes = dict.fromkeys(OUTCOMES, 0)
    table: dict[tuple[str | None, str], dict[str, Any]] = {}
    total = 0
    for d in inputs:
        total += 1
        outcomes[d.outcome] = outcomes.get(d.outcome, 0) + 1
        for f in d.failing:
            row = table.get((f.pack, f.rule))
            if row is None:
                at = Level(f.level).rank >= fail_on.rank
                row = table[(f.pack, f.rule)] = {
                    "pack": f.pack,
                    "rule": f.rule,
                    "level": f.level,
                    "at_fail_on": at,
                    "inputs": 0,
                    "first": [],
                }
            row["inputs"] += 1
            if len(row["first"]) < FIRST_NAMES:
                row["first"].append(d.name)
    rules = sorted(table.values(), key=lambda r: (not r["at_fail_on"], -r["inputs"], -Level(r["level"]).rank, r["rule"]))
    return {
        "fail_on": fail_on.value,
        "inputs": total - outcomes[SKIPPED],
        "skipped": outcomes[SKIPPED],
        "outcomes": {k: v for k, v in outcomes.items() if k != SKIPPED},
        "rules": rules,
    }


def exit_code(inputs: Iterable[Digest], exit_zero: bool = False) -> int:
    """The run's exit code from its inputs' outcomes, as `verdict.exit_code` decides it from the reports."""
    outcomes = {d.outcome for d in inputs}
    if ERROR in outcomes:
        return 2
    if not exit_zero and any(Verdict(o).fails for o in outcomes):
        return 1
    return 0


def as_text(summary: Mapping[str, Any]) -> str:
    """The summary for the text report: the rules failing on most inputs first, at most TEXT_RULES of them, each
    with its count and the first input names."""
    rules = summary["rules"]
    fail_on = summary["fail_on"].lower()
    if not rules:
        return "No rule fails on any input.\n"
    lines: list[str] = []
    shown = rules[:TEXT_RULES]
    count_width = max(len(_inputs(r["inputs"])) for r in shown)
    rule_width = max(len(_rule(r)) for r in shown)
    for at, heading in (
        (True, f"Rules failing at or above --fail-on {fail_on} (inputs that fail each):"),
        (False, f"Rules failing below --fail-on {fail_on} (they fail no input; inputs that fail each):"),
    ):
        group = [r for r in shown if r["at_fail_on"] is at]
        if not group:
            continue
        lines.append(heading)
        for r in group:
            names = ", ".join(r["first"][:TEXT_NAMES])
            more = r["inputs"] - min(len(r["first"]), TEXT_NAMES)
            names += f" and {more} more" if more else ""
            lines.append(f"  {r['level']:<6}  {_inputs(r['inputs']):>{count_width}}  {_rule(r):<{rule_width}}  {names}")
    if len(rules) > len(shown):
        lines.append(f"... and {len(rules) - len(shown)} more rule(s) failing (--format json lists them all)")
    return "\n".join(lines) + "\n"


def _rule(row: Mapping[str, Any]) -> str:
    """The rule id, with its pack where the id does not start with it (a rule of a user's pack that extends a
    built-in one)."""
    pack = row["pack"]
    return row["rule"] if pack is None or row["rule"].startswith(pack + ".") else f"{row['rule']} [{pack}]"


def _inputs(n: int) -> str:
    return f"{n} input{'s' if n != 1 else ''}"
