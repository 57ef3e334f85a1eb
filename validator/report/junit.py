"""JUnit XML: one testsuite per input file, one testcase per clause; failed -> <failure>, not_applicable -> <skipped>."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from validator.report.baseline import Baseline, artifact_uri, located
from validator.report.model import Report, Status


def render(reports: Sequence[Report], baseline: Baseline | None = None) -> str:
    suites = ET.Element("testsuites", name="spec-validate")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in (r for r in reports if r.skipped is None):  # a file found in a folder and skipped: no test
        file = artifact_uri(report.source)
        suite = ET.SubElement(suites, "testsuite", name=file)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if report.error is not None:
            _input_error(suite, file, report.error, counts)
        items = list(located(report))
        if report.problems:
            case = ET.SubElement(suite, "testcase", name="unreadable", classname=file, file=file)
            counts["tests"] += 1
            text = "\n".join(f"{p.key}: {p.message}" for p in report.problems)
            _failure_or_known(
                case, "error", "parts of the store cannot be read", text, [i for i in items if i.result is None], baseline, counts
            )
        for r in report.results:
            rule = r.rule
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", name=rule.id, classname=rule.pack, file=file)
            header = (
                f"{rule.level.value}{' (derived)' if rule.derived else ''} {rule.id}\n{rule.section}: \u201c{rule.clause}\u201d"
            )
            mine = [i for i in items if i.result is r]
            if r.status is Status.FAILED:
                body = "\n".join(f"{f.path}: {f.message}" for f in r.findings)
                if r.finding_count > len(r.findings):
                    body += f"\n... and {r.finding_count - len(r.findings)} more"
                for w in rule.writers:
                    body += f"\nnote: {w.name} {w.versions}: {w.note}"
                first = r.findings[0].message if r.findings else "failed"
                _failure_or_known(
                    case, "failure", f"{rule.level.value}: {first}", f"{header}\n{body}", mine, baseline, counts, rule.level.value
                )
            elif r.status is Status.ERROR:
                _failure_or_known(case, "error", r.reason or "error", f"{header}\nerror: {r.reason}", mine, baseline, counts)
            elif r.status is Status.NOT_APPLICABLE:
                ET.SubElement(case, "skipped", message=r.reason or "not applicable")
                counts["skipped"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _input_error(suite: ET.Element, file: str, error: str, counts: dict[str, int]) -> None:
    """An input that cannot be opened: one test, opening it, in error."""
    case = ET.SubElement(suite, "testcase", name="open", classname=file, file=file)
    ET.SubElement(case, "error", message="the input cannot be opened").text = error
    counts["tests"] += 1
    counts["errors"] += 1


def _failure_or_known(case, tag, message, text, items, baseline, counts, type_=None) -> None:
    """A <failure>/<error>; when every failing thing of the clause is in the baseline, a <skipped> saying so."""
    if baseline is not None and items and all(baseline.is_known(i) for i in items):
        ET.SubElement(case, "skipped", message=f"baseline: known {tag}").text = text
        counts["skipped"] += 1
        return
    el = ET.SubElement(case, tag, message=message, **({"type": type_} if type_ else {}))
    el.text = text
    counts["failures" if tag == "failure" else "errors"] += 1
