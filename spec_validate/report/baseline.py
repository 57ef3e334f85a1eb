"""Fingerprints of findings, and baselines: known findings that are reported but do not fail the run."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from spec_validate.errors import InputError
from spec_validate.model import Finding, Level, Status

if TYPE_CHECKING:
    from spec_validate.model import ClauseResult, LegacyVerdict, Report, Rule

BASELINE_VERSION = 1
UNREADABLE = "unreadable"  # the rule id of a store key that cannot be read
INPUT_ERROR = "input-error"  # the rule id of an input that cannot be opened: never recorded in a baseline
# The message of a node whose findings the report does not list (past the first of each rule): it fails all the same.
UNLISTED = "fails here as well (the report lists the first findings of each rule; this node's are not among them)"


def artifact_uri(source: str) -> str:
    """The data file as a URI reference relative to the working directory (absolute when outside it)."""
    absolute = os.path.abspath(source)
    try:
        rel = os.path.relpath(absolute, os.getcwd())
    except ValueError:  # another drive on Windows
        return absolute.replace(os.sep, "/")
    if rel == os.curdir or rel.startswith(os.pardir):
        return absolute.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def fingerprint(rule_id: str, file: str, node_path: str, pack: str | None = None) -> str:
    """A stable hash of (pack, rule id, file, node path): the same finding gets the same print in every run.

    `pack` is None for a rule defined in a built-in pack (see `fingerprint_pack`): the hash is then the one
    of (rule id, file, node path) that baselines were written with before packs were part of the key.
    """
    parts = (rule_id, file, node_path) if pack is None else (pack, rule_id, file, node_path)
    text = "\x1f".join(parts)
    import hashlib  # only when fingerprints are wanted (SARIF, JSON, baselines), not on every run

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def fingerprint_pack(rule: Rule) -> str | None:
    """The pack part of a rule's fingerprints: None for a rule defined in a built-in pack, whose ids are unique
    among the built-ins, so existing baselines keep matching (also when a user pack extends that pack and now
    carries the rule); the name of the user pack that carries it otherwise."""
    return None if rule.builtin else rule.pack


class Located(NamedTuple):
    """One failing thing in a report: a finding of a failed clause, a clause that errored, an unreadable key, or a
    legacy verdict (a scope of an era before its spec)."""

    rule_id: str
    level: Level
    file: str  # artifact_uri of the report's source
    path: str  # the node path (or the store key for an unreadable part)
    fingerprint: str
    result: ClauseResult | None
    finding: Finding | None
    message: str
    pack: str = ""  # the pack whose rule failed (none for an unreadable key): with rule_id, the rule's key
    legacy: LegacyVerdict | None = None  # set for a legacy verdict (rule_id is then `<pack>.legacy`)


def located(report: Report) -> Iterator[Located]:
    """Every failing thing in `report`, one per finding, in report order (an input that cannot be opened: one)."""
    file = artifact_uri(report.source)
    if report.error is not None:
        yield Located(INPUT_ERROR, Level.MUST, file, "", fingerprint(INPUT_ERROR, file, ""), None, None, report.error)
        return
    for problem in report.problems:
        fp = fingerprint(UNREADABLE, file, problem.key)
        yield Located(UNREADABLE, Level.MUST, file, problem.key, fp, None, None, problem.message)
    for v in report.legacy:
        fp = fingerprint(v.id, file, v.path)
        yield Located(v.id, v.level, file, v.path, fp, None, None, f"legacy: {v.era}: {v.message}", v.pack, v)
    for r in report.results:
        pack = fingerprint_pack(r.rule)
        if r.status is Status.ERROR:
            yield Located(
                r.rule.id,
                r.rule.level,
                file,
                "",
                fingerprint(r.rule.id, file, "", pack),
                r,
                None,
                f"error: {r.reason}",
                r.rule.pack,
            )
        elif r.status is Status.FAILED:
            seen: set[str] = set()
            for f in r.findings or (Finding("failed", path="/"),):
                fp = fingerprint(r.rule.id, file, f.path, pack)
                if fp in seen:  # two findings on one node (two bad indices): one fingerprint, one baseline entry
                    continue
                seen.add(fp)
                yield Located(r.rule.id, r.rule.level, file, f.path, fp, r, f, f.message, r.rule.pack)
            for path in r.unlisted_paths:  # nodes whose findings the report does not list: known all the same
                fp = fingerprint(r.rule.id, file, path, pack)
                if fp not in seen:
                    seen.add(fp)
                    yield Located(r.rule.id, r.rule.level, file, path, fp, r, None, UNLISTED, r.rule.pack)


class Baseline(NamedTuple):
    """Fingerprints of known findings (`--baseline FILE`)."""

    fingerprints: frozenset[str] = frozenset()

    def __contains__(self, fp: object) -> bool:
        return fp in self.fingerprints

    def is_known(self, item: Located) -> bool:
        """True for a finding recorded in the baseline; an input that cannot be opened is never known."""
        return item.rule_id != INPUT_ERROR and item.fingerprint in self.fingerprints


def new_failures(report: Report, fail_on: Level, baseline: Baseline | None) -> list[Located]:
    """Failing things at or above `fail_on` that are not in the baseline: these fail the run."""
    return [
        item for item in located(report) if item.level.rank >= fail_on.rank and (baseline is None or not baseline.is_known(item))
    ]


def fails(report: Report, fail_on: Level, baseline: Baseline | None) -> bool:
    """Whether `report` fails the run; without a baseline the same as `report.fails_at(fail_on)`."""
    if baseline is None:
        return report.fails_at(fail_on)
    return bool(new_failures(report, fail_on, baseline))


def load(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline written by `--write-baseline`. Raises InputError when it is missing or malformed."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.loads(fh.read())
    except FileNotFoundError:
        raise InputError(f"{path}: no such baseline file") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a spec-validate baseline ({exc})") from None
    entries = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries):
        raise InputError(f'{path}: not a spec-validate baseline (expected {{"findings": [{{"fingerprint": ...}}]}})')
    return Baseline(frozenset(e["fingerprint"] for e in entries))


def dump(reports: Sequence[Report]) -> str:
    """The baseline document for every failing thing in `reports` (all levels, so --fail-on may change later)."""
    entries = [
        {"fingerprint": item.fingerprint, "rule": item.rule_id, "file": item.file, "path": item.path}
        for report in reports
        for item in located(report)
        if item.rule_id != INPUT_ERROR
    ]
    entries.sort(key=lambda e: (e["file"], e["rule"], e["path"]))
    doc = {"tool": "spec-validate", "version": BASELINE_VERSION, "findings": entries}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write(path: str | os.PathLike[str], reports: Iterable[Report]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dump(list(reports)))
