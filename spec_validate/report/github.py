"""GitHub Actions workflow commands: one `::error file=...,title=...::message` annotation per failure, and one
`::notice` per clause not checked (an `::error` where --fail-on-unchecked fails the run on it)."""

from __future__ import annotations

from collections.abc import Sequence

from spec_validate.model import Level, Report, Status
from spec_validate.report.baseline import INPUT_ERROR, Located, artifact_uri, located
from spec_validate.report.formats import output_format
from spec_validate.report.links import rule_reference
from spec_validate.report.options import RenderOptions
from spec_validate.report.verdict import reader_gate

COMMAND = {Level.MUST: "error", Level.SHOULD: "warning", Level.MAY: "notice"}


def escape_data(text: str) -> str:
    """The message part, escaped as the Actions runner unescapes it (`%`, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file`, `title`): also `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@output_format("github")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """GitHub Actions annotations: one per failing finding; findings in the baseline become notices marked [baseline]."""
    baseline = options.baseline
    lines: list[str] = []
    for report in reports:
        about = report.provenance.describe() if report.provenance is not None else ""
        if about:  # the report header, a plain log line (no annotation): what the store shows of its era and writers
            lines.append(f"spec-validate: {artifact_uri(report.source)}: {about}".replace("\n", " "))
        for item in located(report):
            known = baseline is not None and baseline.is_known(item)
            command = "notice" if known else COMMAND[item.level]
            title = f"{'[baseline] ' if known else ''}{item.level.value} {item.rule_id}"
            message = _message(item, options.docs_url)
            file = item.file
            if item.result is not None and item.path in report.metadata_keys:  # the Zarr key, as in SARIF
                file = f"{file}/{report.metadata_keys[item.path]}"
            props = f"file={escape_property(file)},line=1,title={escape_property(title)}"
            lines.append(f"::{command} {props}::{escape_data(message)}")
        for r in report.results:  # notices (the pickle codec): reported, never failures
            if r.status is Status.NOTICE:
                title = escape_property(f"NOTICE ({r.rule.notice}) {r.rule.id}")
                for f in r.findings:
                    props = f"file={escape_property(artifact_uri(report.source))},line=1,title={title}"
                    lines.append(f"::notice {props}::{escape_data(f'{f.path}: {f.message}')}")
        lines.extend(_unchecked(report, options))
        for miss in reader_gate(report):  # the reader gate (--readers REQ): exit code 3
            title = escape_property(f"reader gate {miss.requirement}")
            props = f"file={escape_property(artifact_uri(report.source))},line=1,title={title}"
            lines.append(f"::error {props}::{escape_data(miss.message)}")
    return "".join(line + "\n" for line in lines)


def _message(item: Located, docs_url: str | None) -> str:
    """An annotation's message: what failed where, the clause, the writer notes, and where the rule is documented."""
    if item.rule_id == INPUT_ERROR:
        return f"cannot be opened: {item.message}"
    if item.legacy is not None:
        return f"{item.path}: {item.message}\n{item.legacy.section}: \u201c{item.legacy.clause}\u201d"
    if item.result is None:
        return f"{item.path}: unreadable: {item.message}"
    message = f"{item.path}: {item.message}" if item.path else item.message
    message += f"\n{item.result.rule.section}: \u201c{item.result.rule.clause}\u201d"
    for w in item.finding.writers if item.finding is not None else ():
        message += f"\nnote: {w.label}: {w.note}"
    if item.result.rule.builtin:  # the rule's page, or the command that prints it where no site is named
        message += f"\nsee {rule_reference(item.rule_id, docs_url)}"
    return message


def _unchecked(report: Report, options: RenderOptions) -> list[str]:
    """One annotation per clause not checked (none of its nodes): a notice, never a failure, unless
    --fail-on-unchecked fails the run on it (an error then, as for every clause it fails on: those that passed
    with nodes not checked too). A clause that passed with nodes not checked is otherwise not annotated."""
    failing = report.unchecked_at(options.fail_on) if options.fail_on_unchecked else []
    shown = [r for r in report.results if r.status is Status.NOT_CHECKED or any(r is f for f in failing)]
    lines = []
    for r in shown:
        fails = any(r is f for f in failing)
        label = "NOT CHECKED" if r.status is Status.NOT_CHECKED else "NOT ALL CHECKED"
        title = escape_property(f"{label} {r.rule.level.value} {r.rule.id}")
        total = max(r.unchecked_count, len(r.unchecked))
        nodes = ", ".join(path for path, _ in r.unchecked) + (
            f" and {total - len(r.unchecked)} more" if total > len(r.unchecked) else ""
        )
        message = f"not checked: {r.reason or (r.unchecked[0][1] if r.unchecked else '')}\nnodes: {nodes}"
        props = f"file={escape_property(artifact_uri(report.source))},line=1,title={title}"
        lines.append(f"::{'error' if fails else 'notice'} {props}::{escape_data(message)}")
    return lines
