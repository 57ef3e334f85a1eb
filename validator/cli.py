"""The `spec-validate` command: exit 0 conforms, 1 failures at or above --fail-on, 2 usage or input errors."""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from validator import __version__
from validator.errors import SpecValidateError
from validator.report.model import Level, Report

if TYPE_CHECKING:
    from validator.config import Settings
    from validator.engine.model import Pack

# Set by `console`: this process runs one validation and exits (see there); `main` called from Python leaves the
# garbage collector alone.
_OWN_PROCESS = False
FORMATS = ("text", "json", "sarif", "github", "junit", "markdown")
STORE_SUFFIXES = (".zarr", ".cxg")
STORE_DOCUMENTS = (".zgroup", ".zarray", "zarr.json")
FILE_SUFFIXES = (".h5ad", ".h5mu", ".h5seurat", ".h5", ".hdf5", ".nwb", ".zip", ".loom")


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout at the terminal's width, found without shutil, which argparse would import on
    every run (each add_argument builds a formatter), help or not."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


def _terminal_columns() -> int:
    """The width shutil.get_terminal_size would give: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="spec-validate",
        formatter_class=_HelpFormatter,
        description="Check scientific array stores (AnnData .h5ad/.zarr, Zarr) clause by clause against their format specs.",
        epilog="spec-validate coverage [--spec NAME] [--format text|json|markdown]: which statements of each spec the "
        "rules check, and why the others are not (spec-validate coverage --help).",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or store directories to validate")
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="ID",
        help="only these rule ids or dotted prefixes (repeatable, or comma-separated)",
    )
    p.add_argument("--extend-select", action="append", default=[], metavar="ID", help="add rules to the selection")
    p.add_argument("--ignore", action="append", default=[], metavar="ID", help="skip these rule ids or prefixes")
    p.add_argument(
        "--fail-on",
        choices=("must", "should", "may"),
        default=None,
        help="lowest level whose failure fails the run (default: must, or fail-on in [tool.spec-validate])",
    )
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when clauses fail")
    p.add_argument("--pack", action="append", default=[], metavar="FILE", help="also use this YAML rule pack")
    p.add_argument("--list-rules", action="store_true", help="list every rule (with --format json: as JSON)")
    p.add_argument(
        "--explain",
        metavar="ID",
        help="print a rule's clause, section, level, checks and documentation page; a dotted prefix explains every rule it selects",
    )
    p.add_argument(
        "--baseline", metavar="FILE", help="findings recorded in FILE are reported as baseline and do not fail the run"
    )
    p.add_argument("--write-baseline", metavar="FILE", help="record every current failure in FILE (as fingerprints) and exit 0")
    p.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        default=None,
        metavar="N",
        help="workers: array blocks are read and checked on N threads, and several inputs run in up to N processes "
        "(default: the cores available)",
    )
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="scan on a Dask cluster: a scheduler address (tcp://host:8786), or local / local:N to start N local "
        "worker processes; workers must reach the inputs at the same path or URL (--jobs is then unused; "
        "see docs/scaling.md)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="read [tool.spec-validate] from this pyproject.toml (default: the nearest from the cwd upwards)",
    )
    p.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    p.add_argument("--verbose", "-v", action="store_true", help="text: also list passed and not-applicable clauses")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument(
        "--deep",
        action="store_true",
        help="also read and decode every stored Zarr v2 chunk (allow-listed codecs only; never pickle or object codecs)",
    )
    p.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="give each input at most SECONDS: it runs in a child process, and one that is still reading then "
        "is reported as timed out, naming what it was reading (the other inputs are still validated)",
    )
    p.add_argument("--version", action="version", version=f"spec-validate {__version__}")
    return p


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def store_root(path: str) -> str:
    """The store a path belongs to: pre-commit passes inner keys (`x.zarr/X/.zattrs`); we validate `x.zarr` once.

    The nearest ancestor (or the path itself) whose name ends in .zarr/.cxg; otherwise, for a path inside a
    directory holding Zarr metadata, the highest such directory; otherwise the path unchanged. A URL is
    passed through unchanged: it names its store, and a remote store is not walked to find a root.
    """
    from validator.nodes.urls import is_url

    if is_url(path) or _is_store_file(path):
        return path  # a file that is a store itself is what was asked for, never an enclosing folder
    norm = os.path.normpath(path)
    parts = norm.split(os.sep)
    for i in range(len(parts), 0, -1):
        name = parts[i - 1]
        if name.lower().endswith(STORE_SUFFIXES):
            candidate = os.sep.join(parts[:i]) or os.sep
            if i == len(parts) or os.path.isdir(candidate):
                return candidate
    start = norm if os.path.isdir(norm) else os.path.dirname(norm) or os.curdir
    if not os.path.isdir(norm) and not _has_store_document(start):
        return path
    found = None
    here = os.path.abspath(start)
    while _has_store_document(here):
        found = here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if found is None:
        return path
    rel = os.path.relpath(found)
    return found if rel.startswith(os.pardir) else rel


def _is_store_file(path: str) -> bool:
    """True for a regular file that is a store of its own (HDF5, or a zip), by its name or its first bytes."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
    except OSError:
        return False
    if path.lower().endswith(FILE_SUFFIXES):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return False
    return head == b"\x89HDF\r\n\x1a\n" or head.startswith(b"PK\x03\x04")  # HDF5's signature, a zip's first entry


def _has_store_document(directory: str) -> bool:
    return any(os.path.isfile(os.path.join(directory, name)) for name in STORE_DOCUMENTS)


def store_roots(paths: Sequence[str]) -> list[str]:
    """Every path mapped to its store root, duplicates dropped, first-seen order kept."""
    from validator.nodes.urls import is_url

    seen: dict[str, str] = {}
    for path in paths:
        root = store_root(path)
        seen.setdefault(root if is_url(root) else os.path.abspath(root), root)
    return list(seen.values())


def _validate_one(
    path: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend: tuple[str, ...],
    pack_files: tuple[str, ...],
    threads: int = 1,
    scanner=None,
    deep: bool = False,
    progress=None,
) -> Report:
    """One input; runs in a worker process under --jobs (or a Dask task under --dask), so it takes pack file names,
    not Pack objects."""
    from validator import validate

    report = validate(
        path,
        select=select,
        ignore=ignore,
        extend_select=extend,
        packs=_packs(pack_files),
        jobs=threads,
        scanner=scanner,
        deep=deep,
        progress=progress,
    )
    if not report.packs:
        raise SpecValidateError(f"{report.source}: no rule pack applies (not an AnnData or Zarr store that spec-validate knows)")
    return report


def _label(path: str) -> str:
    """The input's name for the progress bar: its last path segment, never a URL's credentials or query."""
    if "://" in path:
        from validator.nodes.remote import redact_url

        path = redact_url(path)
    return os.path.basename(os.path.normpath(path.rstrip("/"))) or path


def _ids(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _emit(text: str, output: str | None) -> None:
    # Names read from a store can hold what no encoding writes (lone surrogates from undecodable file or member
    # names): written as backslash escapes, which in JSON text are the string's own escapes.
    if output:
        with open(output, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
    else:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _packs(extra: Sequence[str]) -> list[Pack]:
    """The built-in packs with the pack files given: one that extends a built-in pack replaces it."""
    from validator.engine.loader import builtin_packs, load_pack, packs_to_run

    return packs_to_run(builtin_packs(), [load_pack(p) for p in extra])


def _subcommand(argv: Sequence[str] | None) -> int | None:
    """`spec-validate coverage ...` is the one subcommand (validator/coverage.py); None for a validation run.
    A store named `coverage` in the working directory is validated as `./coverage`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["coverage"]:
        from validator import coverage

        return coverage.main(args[1:])
    return None


def run(argv: Sequence[str] | None = None) -> int:
    code = _subcommand(argv)
    if code is not None:
        return code
    parser = build_parser()
    args = parser.parse_args(argv)
    packs = _packs(args.pack)
    if args.explain:
        return _explain(args, packs)
    if args.list_rules:
        return _list_rules(args, packs)
    if not args.paths:
        parser.error("give at least one PATH (or --list-rules / --explain)")
    if args.timeout is not None and args.dask:
        parser.error("--timeout runs each input in a child process here; it cannot be used with --dask")
    settings = _settle(args, packs)
    reports = _validate_all(args, settings, store_roots(args.paths))
    return _finish(args, settings, reports)


def _explain(args: argparse.Namespace, packs: list[Pack]) -> int:
    """--explain ID: the rule, or every rule a dotted prefix selects (as --select reads it), each with its page."""
    from validator.engine.rule_selection import prefix_matches
    from validator.explain import explain
    from validator.report.links import rule_page

    rules = [r for pack in packs for r in pack.rules]
    redirects = {k: v for pack in packs for k, v in pack.redirects.items()}
    wanted = redirects.get(args.explain, args.explain)
    match = [r for r in rules if r.id == wanted] or [r for r in rules if prefix_matches(wanted, r.id)]
    if not match:
        raise SpecValidateError(f"no rule matches {wanted!r} (see --list-rules)")
    _emit("\n".join(explain(r) + (f"\nDocumentation: {rule_page(r.id)}\n" if r.builtin else "") for r in match), args.output)
    return 0


def _list_rules(args: argparse.Namespace, packs: list[Pack]) -> int:
    """--list-rules: every rule, as JSON or one line each."""
    rules = [r for pack in packs for r in pack.rules]
    if args.format == "json":
        doc = [
            {
                "id": r.id,
                "level": r.level.value,
                "spec_level": r.spec_level.value,
                "basis": r.basis,
                "pack": r.pack,
                "section": r.section,
                "clause": r.clause,
            }
            for r in rules
        ]
        _emit(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", args.output)
    else:
        width = max((len(r.id) for r in rules), default=0)
        lines = (f"{r.level.value:<6} {r.id:<{width}}  {'derived ' if r.derived else ''}{r.section}\n" for r in rules)
        _emit("".join(lines), args.output)
    return 0


def _settle(args: argparse.Namespace, packs: list[Pack]) -> Settings:
    """[tool.spec-validate] and the flags merged (flags win), with every selected or ignored id known to the packs
    they name (`packs`, loaded from --pack, is reloaded when the configuration names others)."""
    from validator import config as cfg
    from validator.engine.rule_selection import unknown_prefixes

    settings = cfg.merge(
        cfg.Config() if args.isolated else cfg.load_config(args.config),
        select=_ids(args.select),
        ignore=_ids(args.ignore),
        extend_select=_ids(args.extend_select),
        fail_on=args.fail_on,
        packs=args.pack,
    )
    if settings.packs != tuple(args.pack):
        packs = _packs(settings.packs)
    known = [r.id for pack in packs for r in pack.rules] + [k for pack in packs for k in pack.redirects]
    unknown = unknown_prefixes(settings.all_prefixes(), known)
    if unknown:
        raise SpecValidateError(f"no rule matches {unknown[0]!r} (see --list-rules)")
    return settings


def _validate_all(args: argparse.Namespace, settings: Settings, paths: list[str]) -> list[Report]:
    """A report per input, in input order: on a Dask cluster, in worker processes (several inputs), or here."""
    from validator.engine.scan import default_workers

    _startup_finished()
    workers = args.jobs or default_workers()
    processes = min(workers, len(paths))
    # Several inputs: one process each, up to N at once, sharing the N workers as scan threads.
    threads = max(1, workers // max(1, processes))
    jobs = [(p, settings.select, settings.ignore_for(p), settings.extend_select, settings.packs, threads) for p in paths]
    validate_one = functools.partial(_validate_one, deep=args.deep)  # a partial of a module function still pickles
    if args.timeout is not None:
        return _with_timeout(jobs, validate_one, args.timeout, args.quiet, workers)
    if args.dask:
        from validator.engine.dask_scan import validate_on_dask

        return validate_on_dask(args.dask, jobs, validate_one)
    if processes > 1:
        return _in_processes(jobs, validate_one, processes, args.quiet)
    return _serially(jobs, validate_one, args.quiet)


def _in_processes(jobs: list[tuple], validate_one: Callable[..., Report], processes: int, quiet: bool) -> list[Report]:
    """Each input in a worker process, with one bar counting finished inputs."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from validator.progress import TerminalProgress

    # spawn, not fork: TileDB and HDF5 hold threads and locks that a forked child would inherit half-taken.
    with (
        ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn")) as pool,
        TerminalProgress("validating", unit="files", quiet=quiet) as bar,
    ):
        return _gather([pool.submit(validate_one, *job) for job in jobs], bar)  # in input order


def _with_timeout(
    jobs: list[tuple], validate_one: Callable[..., Report], seconds: float, quiet: bool, workers: int
) -> list[Report]:
    """Each input in turn in a child process given `seconds`, with all the scan threads (see `validator.watchdog`)."""
    from validator.watchdog import run_with_timeout

    reports = []
    for job in jobs:
        job = (*job[:5], workers)
        reports.append(run_with_timeout(job, validate_one, seconds, _shown(job[0]), _label(job[0]), quiet))
    return reports


def _shown(path: str) -> str:
    from validator import _shown as shown

    return shown(path)


def _serially(jobs: list[tuple], validate_one: Callable[..., Report], quiet: bool) -> list[Report]:
    """Each input in turn in this process."""
    from validator.progress import TerminalProgress

    reports = []
    for job in jobs:  # a bar per input, named for it, once its scan has lasted a second
        with TerminalProgress(_label(job[0]), quiet=quiet) as bar:
            reports.append(validate_one(*job, progress=bar))
    return reports


def _finish(args: argparse.Namespace, settings: Settings, reports: list[Report]) -> int:
    """The baseline written or read, the report emitted; the exit code."""
    from validator.report import baseline as bl

    fail_on = Level(settings.fail_on.upper())
    if args.write_baseline:
        _write_baseline(args.write_baseline, reports)
    known = bl.load(args.baseline) if args.baseline else None
    _emit(_render(args, reports, fail_on, known), args.output)
    return _exit_code(args, reports, fail_on, known)


def _write_baseline(path: str, reports: list[Report]) -> None:
    from validator.report import baseline as bl

    bl.write(path, reports)
    count = sum(1 for r in reports for _ in bl.located(r))
    print(f"spec-validate: wrote {count} finding(s) to baseline {path}", file=sys.stderr)


def _exit_code(args: argparse.Namespace, reports: list[Report], fail_on: Level, known) -> int:
    """1 when a failure at or above --fail-on is not in the baseline; 0 otherwise, or with --exit-zero or
    --write-baseline."""
    from validator.report import baseline as bl

    if args.exit_zero or args.write_baseline:
        return 0
    return 1 if any(bl.fails(r, fail_on, known) for r in reports) else 0


def _gather(futures, progress) -> list[Report]:
    """The futures' results in input order, counting finished inputs on `progress`; a failure cancels those not yet started."""
    progress.start(len(futures))
    for future in futures:
        future.add_done_callback(lambda _: progress.advance(1))  # on the pool's thread: TerminalProgress locks
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    finally:
        progress.finish()


def _render(args: argparse.Namespace, reports: list[Report], fail_on: Level, known) -> str:
    if args.format == "json":
        from validator.report.json import render as render_json

        if known is None:
            return render_json(reports, __version__)
        return _json_with_baseline(reports, known)
    if args.format == "sarif":
        from validator.report.sarif import render as render_sarif

        return render_sarif(reports, __version__, known)
    if args.format == "github":
        from validator.report.github import render as render_github

        return render_github(reports, known)
    if args.format == "junit":
        from validator.report.junit import render as render_junit

        return render_junit(reports, known)
    if args.format == "markdown":
        from validator.report.markdown import render as render_markdown

        return render_markdown(reports, fail_on, known)
    from validator.report.text import render as render_text
    from validator.report.text import use_colour

    colour = not args.output and use_colour(sys.stdout)
    text = render_text(reports, fail_on, colour=colour, verbose=args.verbose)
    if known is not None:
        text += _baseline_text(reports, fail_on, known)
    if len(reports) > 1:
        text += _summary_table(reports, fail_on, known)
    return text


def _json_with_baseline(reports: list[Report], known) -> str:
    """The JSON report, each report carrying which of its failures are new and which are in the baseline."""
    from validator.report import baseline as bl
    from validator.report.json import report_to_json

    docs = []
    for report in reports:
        doc = report_to_json(report)
        doc["baseline"] = [
            {"fingerprint": i.fingerprint, "rule": i.rule_id, "path": i.path, "state": "baseline" if known.is_known(i) else "new"}
            for i in bl.located(report)
        ]
        docs.append(doc)
    doc = {"tool": {"name": "spec-validate", "version": __version__}, "reports": docs}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _baseline_text(reports: list[Report], fail_on: Level, known) -> str:
    """After the text report: each failing finding marked `baseline` (known) or `new`."""
    from validator.report import baseline as bl

    lines = ["Baseline:"]
    for report in reports:
        for item in bl.located(report):
            state = "baseline" if known.is_known(item) else "new"
            lines.append(f"  {state:<8} {item.level.value:<6} {item.rule_id} {item.file} {item.path}")
    new = sum(1 for r in reports for _ in bl.new_failures(r, fail_on, known))
    lines.append(f"  {new} new failure(s) at --fail-on {fail_on.value.lower()}")
    return "\n".join(lines) + "\n\n"


def _summary_table(reports: list[Report], fail_on: Level, known) -> str:
    """The table after several inputs: one row per input, failures per level and the verdict."""
    from validator.report import baseline as bl

    header = ("file", "format", "MUST", "SHOULD", "MAY", "result")
    rows = []
    for report in reports:
        s = report.summary()
        verdict = "does not conform" if bl.fails(report, fail_on, known) else "conforms"
        failed = (str(s[level]["failed"] + s[level]["error"]) for level in ("MUST", "SHOULD", "MAY"))
        rows.append((report.source, report.format, *failed, verdict))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def fmt(row: tuple[str, ...]) -> str:  # file, format and result left-aligned; the counts right-aligned
        cells = (cell.ljust(w) if i in (0, 1, 5) else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
        return "  ".join(cells).rstrip()

    failing = sum(1 for row in rows if row[5] != "conforms")
    lines = [f"Summary ({len(reports)} inputs; failed clauses per level):", fmt(header), *map(fmt, rows)]
    lines.append(f"{failing} of {len(reports)} do not conform at --fail-on {fail_on.value.lower()}.")
    return "\n".join(lines) + "\n"


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
        print(
            f"spec-validate: internal error: {type(exc).__name__}: {exc} (set SPEC_VALIDATE_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        if os.environ.get("SPEC_VALIDATE_DEBUG"):
            raise
        return 2


def console() -> None:
    """The `spec-validate` command: `main` in a process that exits when it returns.

    Start-up builds many objects that live until exit (numpy's and the tool's modules, the rule packs), and
    each full pass of the cyclic garbage collector would traverse them all again: on a small file that was a
    tenth of the run. So the collector waits until start-up is over, the objects alive then are moved out of
    its view (`gc.freeze`), and it runs as usual for the array scans, whose memory must stay bounded. At exit
    the same is done again, so the interpreter's final collections do not walk everything once more.
    """
    global _OWN_PROCESS
    _OWN_PROCESS = True
    gc.disable()
    code = main()
    gc.freeze()
    sys.exit(code)


def _startup_finished() -> None:
    if _OWN_PROCESS and not gc.isenabled():
        gc.freeze()
        gc.enable()


if __name__ == "__main__":
    console()
