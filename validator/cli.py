"""The `spec-validate` command: exit 0 conforms, 1 failures at or above --fail-on, 2 usage or input errors."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from validator import __version__
from validator.errors import SpecValidateError
from validator.report.model import Level, Report

FORMATS = ("text", "json")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="spec-validate",
        description="Check scientific array stores (AnnData .h5ad/.zarr, Zarr) clause by clause against their format specs.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or store directories to validate")
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--select", action="append", default=[], metavar="ID", help="only these rule ids or dotted prefixes (repeatable, or comma-separated)")
    p.add_argument("--extend-select", action="append", default=[], metavar="ID", help="add rules to the selection")
    p.add_argument("--ignore", action="append", default=[], metavar="ID", help="skip these rule ids or prefixes")
    p.add_argument("--fail-on", choices=("must", "should", "may"), default="must", help="lowest level whose failure fails the run (default: must)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when clauses fail")
    p.add_argument("--pack", action="append", default=[], metavar="FILE", help="also use this YAML rule pack")
    p.add_argument("--list-rules", action="store_true", help="list every rule (with --format json: as JSON)")
    p.add_argument("--explain", metavar="RULE_ID", help="print a rule's clause, section, level and checks")
    p.add_argument("--verbose", "-v", action="store_true", help="text: also list passed and not-applicable clauses")
    p.add_argument("--version", action="version", version=f"spec-validate {__version__}")
    return p


def _ids(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _emit(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def _packs(extra: Sequence[str]):
    from validator.engine.loader import builtin_packs, load_pack

    return list(builtin_packs()) + [load_pack(p) for p in extra]


def run(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    packs = _packs(args.pack)
    rules = [r for pack in packs for r in pack.rules]
    if args.explain:
        from validator.explain import explain

        redirects = {k: v for pack in packs for k, v in pack.redirects.items()}
        wanted = redirects.get(args.explain, args.explain)
        match = [r for r in rules if r.id == wanted]
        if not match:
            raise SpecValidateError(f"no rule {args.explain!r} (see --list-rules)")
        _emit(explain(match[0]), args.output)
        return 0
    if args.list_rules:
        if args.format == "json":
            doc = [{"id": r.id, "level": r.level.value, "basis": r.basis, "pack": r.pack, "section": r.section, "clause": r.clause} for r in rules]
            _emit(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", args.output)
        else:
            width = max((len(r.id) for r in rules), default=0)
            _emit("".join(f"{r.level.value:<6} {r.id:<{width}}  {'derived ' if r.derived else ''}{r.section}\n" for r in rules), args.output)
        return 0
    if not args.paths:
        parser.error("give at least one PATH (or --list-rules / --explain)")
    from validator.engine.rule_selection import unknown_prefixes

    select, ignore, extend = _ids(args.select), _ids(args.ignore), _ids(args.extend_select)
    unknown = unknown_prefixes(select + ignore + extend, [r.id for r in rules] + [k for p in packs for k in p.redirects])
    if unknown:
        raise SpecValidateError(f"no rule matches {unknown[0]!r} (see --list-rules)")
    from validator import validate

    reports: list[Report] = []
    for path in args.paths:
        report = validate(path, select=select, ignore=ignore, extend_select=extend, packs=packs)
        if not report.packs:
            raise SpecValidateError(f"{path}: no rule pack applies (not an AnnData or Zarr store that spec-validate knows)")
        reports.append(report)
    fail_on = Level(args.fail_on.upper())
    if args.format == "json":
        from validator.report.json import render as render_json

        _emit(render_json(reports, __version__), args.output)
    else:
        from validator.report.text import render as render_text, use_colour

        _emit(render_text(reports, fail_on, colour=not args.output and use_colour(sys.stdout), verbose=args.verbose), args.output)
    if args.exit_zero:
        return 0
    return 1 if any(r.fails_at(fail_on) for r in reports) else 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except SpecValidateError as exc:
        print(f"spec-validate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spec-validate: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"spec-validate: error: {exc.filename or ''}: {exc.strerror or exc}".replace(": : ", ": "), file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: still one line, and how to see more
        print(f"spec-validate: internal error: {type(exc).__name__}: {exc} (set SPEC_VALIDATE_DEBUG=1 for a traceback)", file=sys.stderr)
        if os.environ.get("SPEC_VALIDATE_DEBUG"):
            raise
        return 2


if __name__ == "__main__":
    sys.exit(main())
