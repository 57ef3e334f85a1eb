"""SARIF 2.1.0 for code scanning: one run per invocation, one rules[] entry per rule evaluated."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from spec_validate.model import Level
from spec_validate.report.baseline import INPUT_ERROR, artifact_uri, fingerprint, fingerprint_pack, located
from spec_validate.report.formats import output_format
from spec_validate.report.json import writer_to_json
from spec_validate.report.links import docs_base, rule_page
from spec_validate.report.options import RenderOptions

if TYPE_CHECKING:
    from spec_validate.model import Report, Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {Level.MUST: "error", Level.SHOULD: "warning", Level.MAY: "note"}


def rule_descriptor(rule: Rule, help_text: Callable[[Rule], str] | None = None, docs_url: str | None = None) -> dict[str, Any]:
    """The reportingDescriptor for one rule: clause, rationale, help (`help_text`: what --explain prints, as the
    front ends give it; else the clause and rationale), its page where a documentation site is named, level."""
    full = rule.clause + (f"\n\nDerived: {rule.rationale}" if rule.rationale else "")
    help_md = help_text(rule) if help_text is not None else full
    descriptor = {
        "id": rule.id,
        "name": rule.id,
        "shortDescription": {"text": rule.clause},
        "fullDescription": {"text": full},
        "help": {"text": help_md, "markdown": help_md},
        # Only the built-in rules have a page on the site, and only where the user names a site (--docs-url): the
        # help above carries the whole page, as --explain prints it, so no link is needed to read it.
        **({"helpUri": rule_page(rule.id, docs_url)} if rule.builtin and docs_url else {}),
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


def _legacy_descriptor(v: Any) -> dict[str, Any]:
    text = f"The store follows the spec this pack checks, not an era before it. {v.section}: \u201c{v.clause}\u201d"
    return {
        "id": v.id,
        "name": v.id,
        "shortDescription": {"text": v.clause},
        "fullDescription": {"text": text},
        "help": {"text": text},
        "defaultConfiguration": {"level": "error"},
        "properties": {"spec": v.pack, "section": v.section, "rfc2119_level": "MUST", "basis": "legacy"},
    }


def _notice_results(report: Report, root: str, index: dict, descriptors: list) -> list[dict[str, Any]]:
    """Findings of `notice:` rules (the pickle codec): informational results, never failures."""
    from spec_validate.model import Status

    out = []
    for r in report.results:
        if r.status is not Status.NOTICE:
            continue
        for f in r.findings:
            uri = f"{root}/{quote(report.metadata_keys[f.path])}" if f.path in report.metadata_keys else root
            out.append(
                {
                    "ruleId": r.rule.id,
                    "ruleIndex": index[r.rule.key],
                    "kind": "informational",
                    "level": "note",
                    "message": {"text": f"{f.path or '/'}: {f.message}"},
                    "locations": [
                        {
                            "physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": 1}},
                            "logicalLocations": [{"fullyQualifiedName": f.path or "/", "kind": "object"}],
                        }
                    ],
                    "properties": {"notice": r.rule.notice},
                }
            )
    return out


def _open_results(report: Report, root: str, index: dict, fail_on_unchecked: bool, fail_on: Level) -> list[dict[str, Any]]:
    """A clause not judged on every node it selects: one result of kind "open" (SARIF's "the tool could not decide
    whether the result is pass or fail"), level "none" as SARIF asks of any kind but "fail", its logical locations
    the nodes not checked (the first ones; `properties.unchecked_count` counts them all). Not checked at all, or
    passed on the other nodes; `properties.fails_run` is set where --fail-on-unchecked fails the run on it."""
    from spec_validate.model import Status

    failing = {id(r) for r in report.unchecked_at(fail_on)} if fail_on_unchecked else set()
    file = artifact_uri(report.source)
    out = []
    for r in report.results:
        if not r.unchecked or r.status not in (Status.NOT_CHECKED, Status.PASSED):
            continue
        total = max(r.unchecked_count, len(r.unchecked))
        what = "not checked" if r.status is Status.NOT_CHECKED else f"passed where checked; not checked on {total} node(s)"
        out.append(
            {
                "ruleId": r.rule.id,
                "ruleIndex": index[r.rule.key],
                "kind": "open",
                "level": "none",
                "message": {"text": f"{what}: {r.reason or r.unchecked[0][1]}"},
                "locations": [
                    {
                        "physicalLocation": {"artifactLocation": {"uri": root}, "region": {"startLine": 1}},
                        "logicalLocations": [
                            {"fullyQualifiedName": path, "kind": "object"} for path in dict.fromkeys(p for p, _ in r.unchecked)
                        ],
                    }
                ],
                # Its own print, never a failure's: the clause's key with a mark no rule id holds.
                "partialFingerprints": {
                    "specValidate/v1": fingerprint(f"{r.rule.id}#not-checked", file, "", fingerprint_pack(r.rule))
                },
                "properties": {
                    "status": r.status.value,
                    "rfc2119_level": r.rule.level.value,
                    "unchecked": [{"path": path, "reason": reason} for path, reason in r.unchecked],
                    "unchecked_count": total,
                    "fails_run": id(r) in failing,
                },
            }
        )
    return out


def _reader_results(report: Report, root: str, index: dict, descriptors: list) -> list[dict[str, Any]]:
    """Each reader rule that stops measured versions of its reader from opening the store (`--readers`): one result,
    naming the versions; level warning where the reader gate fails on one of them, else note."""
    from spec_validate.report.readers import does_not_open
    from spec_validate.report.verdict import reader_gate

    gated = {(m.reader, m.version) for m in reader_gate(report)}
    stopped: dict[str, list[str]] = {}
    facts: dict[str, Any] = {}
    for reader, version in does_not_open(report):
        for fact in version.facts:
            stopped.setdefault(fact.rule, []).append(version.version)
            facts[fact.rule] = (reader.reader, fact)
    file = artifact_uri(report.source)
    out = []
    for rule_id, versions in stopped.items():
        reader, fact = facts[rule_id]
        key = ("readers", rule_id)
        if key not in index:
            index[key] = len(descriptors)
            descriptors.append(_reader_descriptor(rule_id, reader, fact))
        out.append(
            {
                "ruleId": rule_id,
                "ruleIndex": index[key],
                "level": "warning" if any((reader, v) in gated for v in versions) else "note",
                "message": {"text": f"{reader} {', '.join(versions)} does not open it: {fact.fact} ({fact.outcome})"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": root}, "region": {"startLine": 1}}}],
                "partialFingerprints": {"specValidate/v1": fingerprint(rule_id, file, "", "readers")},
                "properties": {"reader": reader, "versions": versions, "outcome": fact.outcome, "cases": list(fact.cases)},
            }
        )
    return out


def _reader_descriptor(rule_id: str, reader: str, fact: Any) -> dict[str, Any]:
    text = f"Measured versions of {reader} open the store. They do not open one with {fact.fact}."
    return {
        "id": rule_id,
        "name": rule_id,
        "shortDescription": {"text": fact.fact},
        "fullDescription": {"text": text},
        "help": {"text": text + " Measured on: " + ", ".join(fact.cases)},
        "defaultConfiguration": {"level": "note"},
        "properties": {"reader": reader, "basis": "measured", "tags": ["readers", reader]},
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


def sarif_log(reports: Sequence[Report], options: RenderOptions) -> dict[str, Any]:
    """The SARIF log for every report of one invocation (one run)."""
    tool_version, baseline = options.tool_version, options.baseline
    descriptors: list[dict[str, Any]] = []
    # (pack, rule id) -> position in rules[]: one descriptor per rule of each pack, however many inputs report it
    index: dict[tuple[str, str], int] = {}
    for report in reports:
        for r in report.results:
            if r.rule.key not in index:
                index[r.rule.key] = len(descriptors)
                descriptors.append(rule_descriptor(r.rule, options.rule_help, options.docs_url))
    results: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    provenance: list[dict[str, Any]] = []
    for report in reports:
        if report.skipped is not None:  # found in a folder, not a store: nothing to locate
            continue
        root = _uri(artifact_uri(report.source))
        about = report.provenance.to_json() if report.provenance is not None else {"eras": [], "writers": []}
        listing = {} if report.listed else {"listed": False}
        artifacts.append({"location": {"uri": root}, "properties": {"format": report.format or "unknown", **listing, **about}})
        provenance.append(
            {
                "artifact": root,
                "summary": report.provenance.describe() if report.provenance is not None else "",
                **about,
                "legacy": [lv.id for lv in report.legacy],
            }
        )
        for item in located(report):
            key = (item.pack, item.rule_id)
            if key not in index:
                index[key] = len(descriptors)
                descriptors.append(_descriptor_without_rule(item))
            uri = _location(item, report, root)
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
            if item.finding is not None and item.finding.writers:
                result["properties"] = {"writers": [writer_to_json(w) for w in item.finding.writers]}
            results.append(result)
        results.extend(_notice_results(report, root, index, descriptors))
        results.extend(_open_results(report, root, index, options.fail_on_unchecked, options.fail_on))
        results.extend(_reader_results(report, root, index, descriptors))
    driver: dict[str, Any] = {"name": "spec-validate", "version": tool_version, "semanticVersion": tool_version}
    if options.docs_url:  # the tool's documentation, where the user names a site (informationUri is optional)
        driver["informationUri"] = docs_base(options.docs_url)
    driver["rules"] = descriptors
    run = {
        "tool": {"driver": driver},
        "artifacts": artifacts,
        "results": results,
        "columnKind": "unicodeCodePoints",
        # Per input: the eras its layout shows and its likely writers (the report header of the other formats).
        "properties": {"provenance": provenance},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _descriptor_without_rule(item: Any) -> dict[str, Any]:
    """The descriptor of a failing thing that no pack rule is: an input that cannot be opened, a legacy verdict,
    an unreadable key."""
    if item.rule_id == INPUT_ERROR:
        return _input_error_descriptor()
    if item.legacy is not None:
        return _legacy_descriptor(item.legacy)
    return _unreadable_descriptor()


def _location(item: Any, report: Report, root: str) -> str:
    """Where a failing thing is: the input itself (it cannot be opened; a legacy verdict is about the whole store),
    an unreadable key, or the metadata document of the node a finding is on (the Zarr key), else the input."""
    if item.rule_id == INPUT_ERROR or item.legacy is not None:
        return root
    if item.result is None:  # an unreadable key: point at it
        return f"{root}/{quote(item.path)}"
    if item.path in report.metadata_keys:
        return f"{root}/{quote(report.metadata_keys[item.path])}"
    return root


def _uri(path: str) -> str:
    """A relative path as a URI reference; an absolute one (outside the working directory) as a file: URI."""
    p = PurePosixPath(path)
    return p.as_uri() if p.is_absolute() else quote(path)


def _message(item: Any) -> str:
    """`<node path>: <what was found>` plus the offending values the primitive recorded."""
    if item.rule_id == INPUT_ERROR:
        return f"cannot be opened: {item.message}"
    if item.legacy is not None:
        return f"{item.path}: {item.message}"
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
    for w in f.writers if f is not None else ():
        text += f" (note: {w.label}: {w.note})"
    return text


@output_format("sarif")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """SARIF 2.1.0 for code scanning: one run, a result per failing finding, a rules[] entry per rule evaluated."""
    return json.dumps(sarif_log(reports, options), indent=2, ensure_ascii=False) + "\n"
