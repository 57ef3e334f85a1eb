"""The JSON report: one document per run, holding one report per input (schema: report.schema.json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spec_validate.model import Finding, Level
from spec_validate.report import archive
from spec_validate.report.formats import output_format
from spec_validate.report.options import RenderOptions

if TYPE_CHECKING:
    from spec_validate.model import ClauseResult, LegacyVerdict, Report, WriterNote
    from spec_validate.report.baseline import Baseline


def finding_to_json(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {"path": f.path, "message": f.message}
    if f.index is not None:
        out["index"] = list(f.index)
    if f.details:
        out["details"] = {k: _plain(v) for k, v in f.details.items()}
    if f.writers:
        out["writers"] = [writer_to_json(w) for w in f.writers]
    return out


def writer_to_json(w: WriterNote) -> dict[str, Any]:
    """A writer note on a finding: the writer, the note, and whether the store shows that writer (`detected`, with
    its `evidence`) or the note is only likely (`evidence` says why)."""
    return {"name": w.name, "versions": w.versions, "note": w.note, "detected": w.detected, "evidence": w.evidence}


def result_to_json(r: ClauseResult) -> dict[str, Any]:
    rule = r.rule
    out: dict[str, Any] = {
        "id": rule.id,
        "status": r.status.value,
        "level": rule.level.value,
        "spec_level": rule.spec_level.value,
        "basis": rule.basis,
        "pack": rule.pack,
        "section": rule.section,
        "spec_version": rule.spec_version,
        "clause": rule.clause,
        "nodes_checked": r.nodes_checked,
        "findings": [finding_to_json(f) for f in r.findings],
        "finding_count": r.finding_count,
    }
    if r.reason:
        out["reason"] = r.reason
    if r.unchecked:
        out["unchecked"] = [{"path": path, "reason": reason} for path, reason in r.unchecked]
        out["unchecked_count"] = max(r.unchecked_count, len(r.unchecked))
    if rule.rationale:
        out["rationale"] = rule.rationale
    notes = r.writer_notes  # each describes a listed finding and fits the store
    if notes:
        out["writers"] = [writer_to_json(w) for w in notes]
    if rule.notice:
        out["notice"] = rule.notice
    return out


def legacy_to_json(v: LegacyVerdict) -> dict[str, Any]:
    return {
        "id": v.id,
        "pack": v.pack,
        "path": v.path,
        "level": v.level.value,
        "era": v.era,
        "era_id": v.era_id,
        "writers": list(v.writers),
        "message": v.message,
        "clause": v.clause,
        "section": v.section,
        "evidence": list(v.evidence),
        "clauses_checked": v.clauses_checked,
        "still_checked": list(v.still_checked),
        "stands_for": v.stands_for,
    }


def readers_to_json(report: Report) -> dict[str, Any]:
    """The reader verdicts (`--readers`): per reader each measured version's prediction, and the gate's misses."""
    from spec_validate.report.verdict import reader_gate

    verdicts = report.readers
    assert verdicts is not None
    out: dict[str, Any] = {
        "format": verdicts.format,
        "measured": verdicts.measured,
        "readers": [
            {
                "reader": r.reader,
                "title": r.title,
                "versions": [
                    {
                        "version": v.version,
                        "verdict": v.verdict,
                        "facts": [
                            {"rule": f.rule, "fact": f.fact, "outcome": f.outcome, "cases": list(f.cases)} for f in v.facts
                        ],
                        **({"reason": v.reason} if v.reason else {}),
                    }
                    for v in r.versions
                ],
            }
            for r in verdicts.readers
        ],
        "unseen": list(verdicts.unseen),
        "required": list(verdicts.required),
        "gate": [
            {"requirement": m.requirement, "reader": m.reader, "version": m.version, "verdict": m.verdict, "message": m.message}
            for m in reader_gate(report)
        ],
    }
    if verdicts.note:
        out["note"] = verdicts.note
    return out


def report_to_json(
    report: Report, fail_on: Level = Level.MUST, baseline: Baseline | None = None, fail_on_unchecked: bool = False
) -> dict[str, Any]:
    """One input's report; `verdict` is the one the text report prints and the exit code follows (at `fail_on`,
    with `baseline`, and `fail_on_unchecked` as --fail-on-unchecked). An input that could not be opened has
    `error` and nothing checked."""
    from spec_validate.report.verdict import verdict

    v = verdict(report, fail_on, baseline, fail_on_unchecked)
    out: dict[str, Any] = {
        "source": report.source,
        "node": report.node,
        "format": report.format or None,
        "listed": report.listed,
        "verdict": {
            "outcome": v.outcome,
            "fail_on": fail_on.value,
            "new": v.new,
            "known": v.known,
            "unchecked": v.unchecked,
            "not_checked": v.not_checked,
            "fail_on_unchecked": fail_on_unchecked,
        },
        "packs": [{"name": p.name, "title": p.title, "version": p.version, "scopes": list(p.scopes)} for p in report.packs],
        "summary": report.summary(),
        "provenance": report.provenance.to_json() if report.provenance is not None else {"eras": [], "writers": []},
        "legacy": [legacy_to_json(lv) for lv in report.legacy],
        "problems": [{"key": p.key, "message": p.message, **({"path": p.path} if p.path else {})} for p in report.problems],
        "results": [result_to_json(r) for r in report.results],
    }
    if report.readers is not None:
        out["readers"] = readers_to_json(report)
    if v.reason:
        out["verdict"]["reason"] = v.reason
    if report.error is not None:
        out["error"] = report.error
    if report.context:
        out["context"] = [result_to_json(r) for r in report.context]
    if baseline is not None:
        from spec_validate.report.baseline import located

        out["baseline"] = [
            {
                "fingerprint": i.fingerprint,
                "rule": i.rule_id,
                "path": i.path,
                "state": "baseline" if baseline.is_known(i) else "new",
            }
            for i in located(report)
        ]
    return out


@output_format("json")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """One document: a report per input checked (or that could not be opened), and the files a folder search skipped."""
    if options.statistics:
        from spec_validate.report import statistics

        return statistics.as_json(reports, options.baseline)
    checked: list[dict[str, Any]] = []
    digests: list[archive.Digest] = []  # every input's, in input order
    for r in reports:
        if r.skipped is None:
            checked.append(report_to_json(r, options.fail_on, options.baseline, options.fail_on_unchecked))
        digests.append(archive.skipped(r.name) if r.skipped is not None else archive.digest(checked[-1]))
    doc: dict[str, Any] = {"tool": {"name": "spec-validate", "version": options.tool_version}, "reports": checked}
    skipped = [{"path": r.name, "reason": r.skipped} for r in reports if r.skipped is not None]
    if skipped:
        doc["skipped"] = skipped
    doc["archive"] = archive.summarize(digests, options.fail_on)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def archive_summary(reports: Sequence[Report], options: RenderOptions) -> dict[str, Any]:
    """The archive summary of finished reports (report/archive.py), made from their JSON as a jsonl run makes it."""
    o = options
    digests = []
    for r in reports:
        if r.skipped is not None:
            digests.append(archive.skipped(r.name))
        else:
            digests.append(archive.digest(report_to_json(r, o.fail_on, o.baseline, o.fail_on_unchecked)))
    return archive.summarize(digests, options.fail_on)


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return repr(value)
