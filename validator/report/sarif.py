"""SARIF 2.1.0 for code scanning: one run per invocation, one rules[] entry per rule evaluated."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from validator.primitive_api import Level
from validator.report.baseline import INPUT_ERROR, Baseline, artifact_uri, located
from validator.report.links import rule_page

if TYPE_CHECKING:
    from validator.report.model import Report

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
# Where the project lives. helpUri is the rule's page on the documentation site (validator/report/links.py).
INFORMATION_URI = "https://github.com/spec-validate/spec-validate"
SARIF_LEVEL = {Level.MUST: "error", Level.SHOULD: "warning", Level.MAY: "note"}


def rule_descriptor(rule: Any) -> dict[str, Any]:
    """The reportingDescriptor for one rule: clause, rationale, help from --explain, docs page, level."""
    from validator.explain import explain

    full = rule.clause + (f"\n\nDerived: {rule.rationale}" if rule.rationale else "")
    help_md = explain(rule)
    descriptor = {
        "id": rule.id,
        "name": rule.id,
        "shortDescription": {"text": rule.clause},
        "fullDescription": {"text": full},
        "help": {"text": help_md, "markdown": help_md},
        # Only the built-in rules have a page on the site; a rule of the user's own pack has none.
        **({"helpUri": rule_page(rule.id)} if rule.builtin else {}),
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.level]},
        "properties": {
            "spec": rule.pack,
            "spec_version": rule.spec_version,
            "section": rule.section,
            "rfc2119_level": rule.level.value,
            "spec_level": rule.spec_level.value,
            "basis": rule.basis,
            "tags": [rule.pack, rule.level.value, rule.basis],
        },
    }
    return descriptor


def _unreadable_descriptor() -> dict[str, Any]:
    text = "Every key of the store can be read as metadata or data."
    return {
        "id": "unreadable",
        "name": "unreadable",
        "shortDescription": {"text": text},
        "fullDescription": {"text": text + " A key that cannot be parsed hides the node it describes from every rule."},
        "help": {"text": text},
        "defaultConfiguration": {"level": "error"},
        "properties": {"rfc2119_level": "MUST", "basis": "tool"},
    }


def _input_error_descriptor() -> dict[str, Any]:
    text = "Every input can be opened as a store that spec-validate reads."
    return {
        "id": INPUT_ERROR,
        "name": INPUT_ERROR,
        "shortDescription": {"text": text},
        "fullDescription": {"text": f"{text} An input that cannot be opened (missing, truncated, not a store) is not checked."},
        "help": {"text": text},
        "defaultConfiguration": {"level": "error"},
        "properties": {"rfc2119_level": "MUST", "basis": "tool"},
    }


def sarif_log(reports: Sequence[Report], tool_version: str, baseline: Baseline | None = None) -> dict[str, Any]:
    """The SARIF log for every report of one invocation (one run)."""
    descriptors: list[dict[str, Any]] = []
    # (pack, rule id) -> position in rules[]: one descriptor per rule of each pack, however many inputs report it
    index: dict[tuple[str, str], int] = {}
    for report in reports:
        for r in report.results:
            if r.rule.key not in index:
                index[r.rule.key] = len(descriptors)
                descriptors.append(rule_descriptor(r.rule))
    results: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    for report in reports:
        if report.skipped is not None:  # found in a folder, not a store: nothing to locate
            continue
        root = _uri(artifact_uri(report.source))
        artifacts.append({"location": {"uri": root}, "properties": {"format": report.format or "unknown"}})
        for item in located(report):
            key = (item.pack, item.rule_id)
            if key not in index:
                index[key] = len(descriptors)
                descriptors.append(_input_error_descriptor() if item.rule_id == INPUT_ERROR else _unreadable_descriptor())
            uri = root
            if item.rule_id == INPUT_ERROR:
                pass  # the input itself
            elif item.result is None:  # an unreadable key: point at it
                uri = f"{root}/{quote(item.path)}"
            elif item.path in report.metadata_keys:
                uri = f"{root}/{quote(report.metadata_keys[item.path])}"
            message = _message(item)
            result: dict[str, Any] = {
                "ruleId": item.rule_id,
                "ruleIndex": index[key],
                "level": SARIF_LEVEL[item.level],
                "message": {"text": message},
                "locations": [
                    {
                        "physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": 1}},
                        "logicalLocations": [{"fullyQualifiedName": item.path or "/", "kind": "object"}],
                    }
                ],
                "partialFingerprints": {"specValidate/v1": item.fingerprint},
            }
            if baseline is not None:
                result["baselineState"] = "unchanged" if baseline.is_known(item) else "new"
            results.append(result)
    run = {
        "tool": {
            "driver": {
                "name": "spec-validate",
                "version": tool_version,
                "semanticVersion": tool_version,
                "informationUri": INFORMATION_URI,
                "rules": descriptors,
            }
        },
        "artifacts": artifacts,
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _uri(path: str) -> str:
    """A relative path as a URI reference; an absolute one (outside the working directory) as a file: URI."""
    p = PurePosixPath(path)
    return p.as_uri() if p.is_absolute() else quote(path)


def _message(item: Any) -> str:
    """`<node path>: <what was found>` plus the offending values the primitive recorded."""
    if item.rule_id == INPUT_ERROR:
        return f"cannot be opened: {item.message}"
    if item.result is None:
        return f"{item.path}: unreadable: {item.message}"
    text = f"{item.path or '/'}: {item.message}" if item.path else item.message
    f = item.finding
    if f is not None:
        if f.index is not None:
            text += f" (at index {', '.join(map(str, f.index))})"
        if f.details:
            values = ", ".join(f"{k}={v!r}" for k, v in f.details.items())
            text += f" [{values}]"
    r = item.result
    if r is not None and r.finding_count > len(r.findings) and f is r.findings[-1]:
        text += f"; and {r.finding_count - len(r.findings)} more"
    return text


def render(reports: Sequence[Report], tool_version: str, baseline: Baseline | None = None) -> str:
    return json.dumps(sarif_log(reports, tool_version, baseline), indent=2, ensure_ascii=False) + "\n"
