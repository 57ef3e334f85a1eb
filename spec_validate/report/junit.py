"""JUnit XML: one testsuite per input file, one testcase per clause; failed -> <failure>, not_applicable and
not_checked -> <skipped> (not checked: a <failure> with --fail-on-unchecked at or above --fail-on)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from spec_validate.model import ClauseResult, Level, Report, Status
from spec_validate.report.baseline import Baseline, Located, artifact_uri, located
from spec_validate.report.formats import output_format
from spec_validate.report.options import RenderOptions
from spec_validate.report.verdict import reader_gate


@output_format("junit")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """JUnit XML: a testsuite per input, a testcase per clause."""
    baseline = options.baseline
    suites = ET.Element("testsuites", name="spec-validate")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in (r for r in reports if r.skipped is None):  # a file found in a folder and skipped: no test
        file = artifact_uri(report.source)
        suite = ET.SubElement(suites, "testsuite", name=file)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if report.error is not None:
            _input_error(suite, file, report.error, counts)
        items = list(located(report))
        _provenance(suite, report)
        for item in items:
            if item.legacy is not None:
                _legacy_case(suite, file, item, baseline, counts)
        if report.problems:
            case = ET.SubElement(suite, "testcase", name="unreadable", classname=file, file=file)
            counts["tests"] += 1
            text = "\n".join(f"{p.key}: {p.message}" for p in report.problems)
            unreadable = [i for i in items if i.result is None and i.legacy is None]
            _failure_or_known(case, "error", "parts of the store cannot be read", text, unreadable, baseline, counts)
        strict = {id(r) for r in report.unchecked_at(options.fail_on)} if options.fail_on_unchecked else set()
        for r in report.results:
            _clause_case(suite, file, r, [i for i in items if i.result is r], baseline, counts, options.fail_on, id(r) in strict)
        for requirement in report.readers.required if report.readers is not None else ():
            _reader_gate_case(suite, file, requirement, [m for m in reader_gate(report) if m.requirement == requirement], counts)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _provenance(suite: ET.Element, report: Report) -> None:
    """The eras and likely writers the store shows, as the suite's properties."""
    if report.provenance is None or not (report.provenance.eras or report.provenance.writers):
        return
    props = ET.SubElement(suite, "properties")
    for era in report.provenance.eras:
        ET.SubElement(props, "property", name=f"era {era.path}", value=era.label)
    for w in report.provenance.writers:
        ET.SubElement(props, "property", name=f"writer ({w.role})", value=w.label)


def _legacy_case(suite: ET.Element, file: str, item: Located, baseline: Baseline | None, counts: dict[str, int]) -> None:
    """A legacy verdict: one test, failing at MUST, standing for the clauses of its scope."""
    v = item.legacy
    case = ET.SubElement(suite, "testcase", name=v.id, classname=v.pack, file=file)
    counts["tests"] += 1
    text = f"{v.section}: \u201c{v.clause}\u201d\n{item.message}"
    _failure_or_known(case, "failure", f"MUST: legacy: {v.era}", text, [item], baseline, counts, "MUST")


def _clause_case(
    suite: ET.Element,
    file: str,
    r: ClauseResult,
    mine: list[Located],
    baseline: Baseline | None,
    counts: dict[str, int],
    fail_on: Level,
    unchecked_fails: bool = False,
) -> None:
    """One clause: failed -> <failure>, error -> <error>, not applicable -> <skipped>, not checked -> <skipped>
    naming why, a notice -> its output.

    A clause failed below `fail_on` (a SHOULD failure at --fail-on must) fails nothing, as the verdict and the exit
    code say: the test passes and its output says what failed. A clause not judged on every node fails the test
    only where it fails the run (`unchecked_fails`: --fail-on-unchecked, at or above `fail_on`); a test that
    passed with nodes not checked says which in its output."""
    rule = r.rule
    counts["tests"] += 1
    case = ET.SubElement(suite, "testcase", name=rule.id, classname=rule.pack, file=file)
    header = f"{rule.level.value}{' (derived)' if rule.derived else ''} {rule.id}\n{rule.section}: \u201c{rule.clause}\u201d"
    if r.status is Status.FAILED:
        body = "\n".join(f"{f.path}: {f.message}" for f in r.findings)
        if r.finding_count > len(r.findings):
            body += f"\n... and {r.finding_count - len(r.findings)} more"
        for w in r.writer_notes:
            body += f"\nnote: {w.label}: {w.note}"
        if rule.level.rank < fail_on.rank:
            below = f"FAILED {rule.level.value}, below --fail-on {fail_on.value.lower()}: it does not fail the run"
            ET.SubElement(case, "system-out").text = f"{below}\n{header}\n{body}"
            return
        first = r.findings[0].message if r.findings else "failed"
        _failure_or_known(
            case, "failure", f"{rule.level.value}: {first}", f"{header}\n{body}", mine, baseline, counts, rule.level.value
        )
    elif r.status is Status.ERROR:
        _failure_or_known(case, "error", r.reason or "error", f"{header}\nerror: {r.reason}", mine, baseline, counts)
    elif unchecked_fails:  # --fail-on-unchecked: a clause not judged on every node fails, as the exit code says
        el = ET.SubElement(case, "failure", message=f"{rule.level.value}: not checked: {_why(r)}", type="not checked")
        el.text = f"{header}\n{_unchecked_text(r)}"
        counts["failures"] += 1
    elif r.status is Status.NOT_CHECKED:
        ET.SubElement(case, "skipped", message=f"not checked: {_why(r)}").text = _unchecked_text(r)
        counts["skipped"] += 1
    elif r.status is Status.NOT_APPLICABLE:
        ET.SubElement(case, "skipped", message=r.reason or "not applicable")
        counts["skipped"] += 1
    elif r.status is Status.PASSED and r.unchecked:  # passed where checked: the output names the nodes not checked
        ET.SubElement(case, "system-out").text = f"PASSED, NOT ALL CHECKED\n{_unchecked_text(r)}"
    elif r.status is Status.NOTICE:  # reported, never a failure
        findings = "\n".join(f"{f.path}: {f.message}" for f in r.findings)
        ET.SubElement(case, "system-out").text = f"NOTICE ({rule.notice})\n{findings}"


def _why(r: ClauseResult) -> str:
    """Why a clause was not checked: its reason, or (one that passed elsewhere) its first node's."""
    return r.reason or (r.unchecked[0][1] if r.unchecked else "not checked")


def _unchecked_text(r: ClauseResult) -> str:
    """The nodes a clause could not check, each with why, and how many more."""
    lines = [f"not checked: {path}: {reason.removeprefix(path + ': ')}" for path, reason in r.unchecked]
    total = max(r.unchecked_count, len(r.unchecked))
    if total > len(r.unchecked):
        lines.append(f"... and {total - len(r.unchecked)} more not checked")
    return "\n".join(lines)


def _input_error(suite: ET.Element, file: str, error: str, counts: dict[str, int]) -> None:
    """An input that cannot be opened: one test, opening it, in error."""
    case = ET.SubElement(suite, "testcase", name="open", classname=file, file=file)
    ET.SubElement(case, "error", message="the input cannot be opened").text = error
    counts["tests"] += 1
    counts["errors"] += 1


def _reader_gate_case(suite: ET.Element, file: str, requirement: str, misses: list, counts: dict[str, int]) -> None:
    """One requirement of the reader gate (--readers REQ): a test that fails when a measured version in its range is
    not predicted to open the input."""
    case = ET.SubElement(suite, "testcase", name=f"readers {requirement}", classname="readers", file=file)
    counts["tests"] += 1
    if misses:
        el = ET.SubElement(case, "failure", message=f"the reader gate {requirement} fails", type="reader-gate")
        el.text = "\n".join(m.message for m in misses)
        counts["failures"] += 1


def _failure_or_known(case, tag, message, text, items, baseline, counts, type_=None) -> None:
    """A <failure>/<error>; when every failing thing of the clause is in the baseline, a <skipped> saying so."""
    if baseline is not None and items and all(baseline.is_known(i) for i in items):
        ET.SubElement(case, "skipped", message=f"baseline: known {tag}").text = text
        counts["skipped"] += 1
        return
    el = ET.SubElement(case, tag, message=message, **({"type": type_} if type_ else {}))
    el.text = text
    counts["failures" if tag == "failure" else "errors"] += 1
