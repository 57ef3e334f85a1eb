"""A streamed run (a format with a `stream`, such as --format jsonl): each input's report is written as the input
finishes, and only a small digest of it is kept for the summary at the end. With --resume FILE, a jsonl run that was
cut short goes on: the inputs FILE completed are read back, the others are validated and appended, and the summary
and exit code count them all, as an uninterrupted run would.

A resumed run must be the same run: the first line of FILE records what decides each input's report (tool version,
packs, selection, --fail-on, ...), and a FILE recording anything else is a one-line error.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from spec_validate.errors import InputError, SpecValidateError
from spec_validate.model import Level, Report
from spec_validate.report import archive
from spec_validate.report.options import RenderOptions
from spec_validate.version import __version__

if TYPE_CHECKING:
    from spec_validate.config import Settings
    from spec_validate.inputs import Input
    from spec_validate.model import Pack
    from spec_validate.report.baseline import Baseline

# What a sink is handed: the input's position in the list validated, and its report.
Sink = Callable[[int, Report], None]
ValidateAll = Callable[[argparse.Namespace, "Settings", list["Input"], Sink], object]

RUN_LINE_LIMIT = 1 << 20  # bytes: a run line is far shorter; a FILE whose first line is longer is none of ours
# The fields of the run line, as a message names them.
LABELS = {
    "version": "tool version",
    "packs": "rule packs",
    "select": "--select",
    "ignore": "--ignore",
    "extend_select": "--extend-select",
    "per_path_ignores": "per-path-ignores",
    "fail_on": "--fail-on",
    "fail_on_unchecked": "--fail-on-unchecked",
    "deep": "--deep",
    "all_clauses": "--all-clauses",
    "list_folders": "--no-list",
    "baseline": "--baseline",
}


def run_identity(
    args: argparse.Namespace, settings: Settings, packs: Sequence[Pack], baseline: Baseline | None
) -> dict[str, Any]:
    """What decides each input's report and verdict, as plain JSON: what a resumed run must share with the run it
    resumes. Packs by name, version and a hash of their YAML (a pack edited between the runs is another pack); the
    baseline by a hash of its fingerprints."""
    return {
        "version": __version__,
        "packs": [{"name": p.name, "version": p.version, "sha256": _file_hash(p.path)} for p in packs],
        "select": list(settings.select),
        "ignore": list(settings.ignore),
        "extend_select": list(settings.extend_select),
        "per_path_ignores": {glob: list(ids) for glob, ids in sorted(settings.per_path_ignores.items())},
        "fail_on": settings.fail_on.lower(),
        "fail_on_unchecked": settings.fail_on_unchecked,
        "deep": bool(args.deep),
        "all_clauses": bool(args.all_clauses),
        "list_folders": not args.no_list,
        "baseline": None if baseline is None else _hash("\n".join(sorted(baseline.fingerprints)).encode()),
    }


def input_key(item: Input) -> str:
    """The input as the search named it, without a URL's credentials or query (it is written to the file): what a
    resumed run matches its inputs by."""
    from spec_validate import _shown

    path = _shown(item.path)
    return path if item.node == "/" else path.rstrip("/") + item.node


def run_streamed(
    args: argparse.Namespace,
    settings: Settings,
    packs: Sequence[Pack],
    inputs: list[Input],
    validate_all: ValidateAll,
) -> int:
    """Validate `inputs` (those FILE does not hold, with --resume), writing each report as its input finishes;
    the summary last. Returns the exit code over every input, FILE's included."""
    from spec_validate.report import baseline as bl
    from spec_validate.report import formats
    from spec_validate.report.verdict import verdict

    fail_on = Level(settings.fail_on.upper())
    known = bl.load(args.baseline) if args.baseline else None
    options = RenderOptions(
        fail_on=fail_on, baseline=known, fail_on_unchecked=settings.fail_on_unchecked, docs_url=settings.docs_url
    )
    identity = run_identity(args, settings, packs, known)
    keys = [input_key(item) for item in inputs]
    done: list[tuple[int, archive.Digest]] | None = None  # None: the run starts here
    if args.resume:
        done = _resume(args.resume, identity, keys)
        out = open(args.resume, "a", encoding="utf-8")  # noqa: SIM115 (closed below)
    else:
        out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115 (closed below)
    try:
        if done is not None:
            from spec_validate.report.jsonl import JsonlStream

            stream = JsonlStream(out, options, done)
        else:
            stream = formats.get(args.format).stream(out, options)
            stream.start(identity)
        finished = {position for position, _ in done or ()}
        remaining = [position for position in range(len(inputs)) if position not in finished]
        outcomes = list(done or ())

        def sink(k: int, report: Report) -> None:
            position = remaining[k]
            stream.add(report, position, keys[position])
            v = verdict(report, fail_on, known, settings.fail_on_unchecked)
            outcomes.append((position, archive.Digest(report.name, v.outcome, (), report.error)))

        validate_all(args, settings, [inputs[position] for position in remaining], sink)
        stream.finish()
    finally:
        if out is not sys.stdout:
            out.close()
    outcomes.sort(key=lambda item: item[0])
    for _, d in outcomes:  # the report is JSON: an input that could not be opened is named on stderr too
        if d.error is not None:
            print(f"spec-validate: error: {d.error}", file=sys.stderr)
    return archive.exit_code((d for _, d in outcomes), exit_zero=bool(args.exit_zero))


def _resume(path: str, identity: dict[str, Any], keys: list[str]) -> list[tuple[int, archive.Digest]] | None:
    """The inputs FILE holds, as (position among `keys`, digest), once FILE is cut after the last of them (to be
    appended to); None where FILE does not exist or is empty: the run starts there."""
    from spec_validate.report import jsonl

    try:
        with open(path, "rb") as fh:
            first = fh.readline(RUN_LINE_LIMIT)  # bounded: FILE may be anything, a large file with no newline too
            if not first:
                return None
            if len(first) == RUN_LINE_LIMIT and not first.endswith(b"\n"):
                raise SpecValidateError(f"{path}: not a spec-validate --format jsonl file (its first line is no run line)")
            previous = jsonl.read(itertools.chain([first], fh), path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    _same_run(path, previous.run, identity)
    where = {key: position for position, key in enumerate(keys)}
    seen: dict[str, int] = {}
    done = []
    for record in previous.records:
        if record.key in seen:
            raise SpecValidateError(f"{path}: line {record.line} repeats the input {record.key} (line {seen[record.key]})")
        seen[record.key] = record.line
        if record.key not in where:
            raise SpecValidateError(
                f"{path}: line {record.line} is the report of {record.key}, which the paths given do not name "
                "(resume with the paths of the run that wrote it)"
            )
        done.append((where[record.key], record.digest))
    try:
        with open(path, "r+b") as fh:  # what follows the last input's line (a summary, a line cut short) goes
            fh.truncate(previous.keep)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return done


def _same_run(path: str, recorded: dict[str, Any], identity: dict[str, Any]) -> None:
    """A one-line error unless the run that wrote FILE is this one."""
    for key, value in identity.items():
        if key not in recorded:
            raise SpecValidateError(
                f"{path}: not written by a run of spec-validate --format jsonl this --resume can continue "
                f"(its first line records no {LABELS.get(key, key)})"
            )
        if recorded[key] != value:
            there, here = _packs_differ(recorded[key], value) if key == "packs" else (recorded[key], value)
            raise SpecValidateError(
                f"{path}: written by another run: {LABELS.get(key, key)} {_shown(there)} there, {_shown(here)} here "
                "(resume with the settings of that run, or write another file)"
            )


def _packs_differ(there: Any, here: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The first pack the two runs do not share, each as `name version (hash)`; the whole lists when that is
    not one pack (one run has a pack more)."""

    def shown(pack: Any) -> Any:
        return f"{pack.get('name')} {pack.get('version')} ({pack.get('sha256')})" if isinstance(pack, dict) else pack

    if isinstance(there, list) and len(there) == len(here):
        for a, b in zip(there, here, strict=True):
            if a != b:
                return shown(a), shown(b)
    return [shown(p) for p in there] if isinstance(there, list) else there, [shown(p) for p in here]


def _shown(value: Any, limit: int = 120) -> str:
    from spec_validate.excerpt import cut

    return cut(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), limit)


def _file_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return _hash(fh.read())
    except OSError:
        return None


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
