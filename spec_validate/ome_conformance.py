"""`spec-validate ome-conformance PATH`: one verdict on one OME-Zarr input, in the form the OME-Zarr specification
project's conformance harness reads.

The harness (ome/ngff-spec, `conformance/ome_zarr_conformance.py`) runs a command on each of its test cases, the path
of an attributes JSON file ("attributes" mode) or of a Zarr hierarchy's root ("zarr" mode) appended, and reads one
JSON object from its standard output: `valid`, a boolean, and `message`, free text. A command exiting non-zero is
counted as an error of the command, not as an invalid case; so this one exits 0 whenever it printed a verdict, and
2 only for a usage error.

`valid` is true when no clause at `--fail-on` (default MUST) or stricter failed or errored, nothing in the input was
unreadable, no scope was of a version no pack checks (a legacy verdict), and an OME-Zarr pack applied: an input
that is no OME-Zarr is not a valid one. `message` is "valid", or the first reason it is not: the rule id, its level,
the node path and what was found, then the clause. An attributes document is judged without its hierarchy (the
clauses about it are not checked, which is no failure); a store without `--deep` without reading chunks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from spec_validate.errors import SpecValidateError
from spec_validate.model import Level, Report, Status
from spec_validate.usage import Parser

OME_PACKS = "ome-zarr"  # the prefix of the OME-Zarr packs' names (ome-zarr04, ome-zarr05)


def build_parser() -> Parser:
    p = Parser(
        prog="spec-validate ome-conformance",
        description='Print {"valid": bool, "message": str} for one OME-Zarr input, as the conformance harness of the '
        "OME-Zarr specification reads it: an attributes document (a .json file: the clauses about the hierarchy are "
        "not checked) or a Zarr hierarchy. Exit code 0 whenever a verdict is printed.",
    )
    p.add_argument("path", metavar="PATH", help="an attributes JSON file, or the root of an OME-Zarr hierarchy")
    p.add_argument("--deep", action="store_true", help="also read and decode every stored chunk (a hierarchy with data)")
    p.add_argument(
        "--fail-on",
        choices=("must", "should", "may"),
        default="must",
        help="the level at which a failed clause makes the input invalid (default: must)",
    )
    return p


def verdict(report: Report, fail_on: Level | str = Level.MUST) -> dict[str, object]:
    """{"valid": ..., "message": ...} for one report: "valid", or the first reason it is not."""
    level = Level(fail_on.upper()) if isinstance(fail_on, str) and not isinstance(fail_on, Level) else fail_on
    reason = _first_reason(report, level)
    return {"valid": reason is None, "message": reason or "valid"}


def _first_reason(report: Report, level: Level) -> str | None:
    if report.error is not None:
        return f"error: {report.error}"
    if report.problems:
        p = report.problems[0]
        return f"unreadable: {p.key}: {p.message}" + _more(len(report.problems))
    for r in report.results:
        if r.status is Status.ERROR and r.rule.level.rank >= level.rank:
            return f"{r.rule.id} ({r.rule.level.value}): error: {r.reason}"
    if report.legacy:
        v = report.legacy[0]
        return f"{v.id} ({v.level.value}) at {v.path}: {v.era}; {v.message}"
    failed = [r for r in report.results if r.status is Status.FAILED and r.rule.level.rank >= level.rank]
    if failed:
        r = failed[0]
        where = f" at {r.findings[0].path}: {r.findings[0].message}" if r.findings else ""
        clause = " ".join(r.rule.clause.split())
        return f"{r.rule.id} ({r.rule.level.value}){where}; the clause: “{clause}”" + _more(len(failed), "clauses")
    if not any(p.name.startswith(OME_PACKS) for p in report.packs):
        return "not OME-Zarr: no OME-Zarr metadata found (no OME-Zarr pack applies)"
    return None


def _more(count: int, what: str = "") -> str:
    return f" (and {count - 1} more{' ' + what if what else ''} failing)" if count > 1 else ""


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    import spec_validate

    try:
        report = spec_validate.validate(args.path, deep=args.deep)
        answer = verdict(report, args.fail_on)
    except SpecValidateError as exc:  # the input cannot be opened, or is of no format this tool reads: not valid
        answer = {"valid": False, "message": f"error: {exc}"}
    print(json.dumps(answer, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
