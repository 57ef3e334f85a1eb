"""GitHub Actions workflow commands: one `::error file=...,title=...::message` annotation per failure."""

from __future__ import annotations

from collections.abc import Sequence

from validator.report.baseline import INPUT_ERROR, Baseline, located
from validator.report.model import Level, Report

COMMAND = {Level.MUST: "error", Level.SHOULD: "warning", Level.MAY: "notice"}


def escape_data(text: str) -> str:
    """The message part, escaped as the Actions runner unescapes it (`%`, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file`, `title`): also `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(reports: Sequence[Report], baseline: Baseline | None = None) -> str:
    """One annotation per failing finding; findings in the baseline become notices marked [baseline]."""
    lines: list[str] = []
    for report in reports:
        for item in located(report):
            known = baseline is not None and baseline.is_known(item)
            command = "notice" if known else COMMAND[item.level]
            title = f"{'[baseline] ' if known else ''}{item.level.value} {item.rule_id}"
            if item.rule_id == INPUT_ERROR:
                message = f"cannot be opened: {item.message}"
            elif item.result is not None:
                message = f"{item.path}: {item.message}" if item.path else item.message
                message += f"\n{item.result.rule.section}: \u201c{item.result.rule.clause}\u201d"
            else:
                message = f"{item.path}: unreadable: {item.message}"
            file = item.file
            if item.result is not None and item.path in report.metadata_keys:  # the Zarr key, as in SARIF
                file = f"{file}/{report.metadata_keys[item.path]}"
            props = f"file={escape_property(file)},line=1,title={escape_property(title)}"
            lines.append(f"::{command} {props}::{escape_data(message)}")
    return "".join(line + "\n" for line in lines)
