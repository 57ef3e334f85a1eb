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

from spec_validate import __version__
from spec_validate.errors import InputError, PackError, SpecValidateError
from spec_validate.model import Level, Report
from spec_validate.report import formats
from spec_validate.usage import Parser

if TYPE_CHECKING:
    from spec_validate.config import Settings
    from spec_validate.inputs import Input
    from spec_validate.model import Pack

# Set by `console`: this process runs one validation and exits (see there); `main` called from Python leaves the
# garbage collector alone.
_OWN_PROCESS = False
LEVELS = ("must", "should", "may")
# Hands on one input's report as it finishes: its position in the list of jobs, and the report.
Emit = Callable[[int, Report], None]


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
    p = Parser(
        prog="spec-validate",
        formatter_class=_HelpFormatter,
        description="Check scientific array stores (AnnData .h5ad/.zarr, Zarr, h5Seurat, NWB-Zarr, CXG) clause by clause "
        "against their format specs.",
        epilog="spec-validate coverage [--spec NAME] [--format text|json|markdown]: which statements of each spec the "
        "rules check, and why the others are not (spec-validate coverage --help). spec-validate ome-conformance PATH: "
        '{"valid": bool, "message": str} for one OME-Zarr input, for the OME-Zarr spec\'s conformance harness.',
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files, stores, paths inside stores, and folders to search for stores (.gitignore respected)",
    )
    p.add_argument(
        "--format",
        "--output-format",
        dest="format",
        type=str.lower,
        choices=formats.Names(),  # the registered output formats (spec_validate/report/formats.py)
        default="text",
        metavar="FORMAT",
        help="output format: %(choices)s (default: %(default)s); --output-format is the same option under ruff's name",
    )
    p.add_argument(
        "--output",
        "--output-file",
        "-o",
        dest="output",
        metavar="FILE",
        help="write the report to FILE instead of stdout (--output-file is the same option under ruff's name)",
    )
    p.add_argument(
        "--resume",
        metavar="FILE",
        help="with --format jsonl: go on with the run that wrote FILE and was cut short: the inputs FILE holds are not "
        "validated again, the others are appended, and the summary and exit code count them all (FILE must be of a "
        "run with the same settings; a FILE not there yet starts the run)",
    )
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
        type=str.lower,
        choices=LEVELS,
        default=None,
        help="lowest level whose failure fails the run, in any case (default: must, or fail-on in [tool.spec-validate])",
    )
    p.add_argument(
        "--fail-on-unchecked",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also fail an input when a clause at or above --fail-on was not judged on every node it selects (it "
        "needs --deep, a codec is not decoded, a reader is not available); without it such clauses are reported as "
        "not checked and fail nothing (default: off, or fail-on-unchecked in [tool.spec-validate])",
    )
    p.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when clauses fail (still 2 when an input cannot be opened)"
    )
    p.add_argument("--pack", action="append", default=[], metavar="FILE", help="also use this YAML rule pack")
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave paths matching GLOB out of folder searches, instead of the defaults and the configuration's "
        "`exclude` (repeatable, or comma-separated)",
    )
    p.add_argument(
        "--extend-exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="also leave paths matching GLOB out of folder searches",
    )
    p.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of failing findings per rule instead of the report (with --format json: as JSON)",
    )
    p.add_argument("--list-rules", action="store_true", help="list every rule (with --format json: as JSON)")
    p.add_argument(
        "--explain",
        metavar="ID",
        help="print a rule's documentation: clause, section, level, checks, examples; a dotted prefix explains "
        "every rule it selects",
    )
    p.add_argument(
        "--docs-url",
        type=_docs_url,
        default=None,
        metavar="URL",
        help="base URL of a copy of the documentation site (built with `mkdocs build`) that reports link each rule's "
        "page to (URL/rules/<id>.html), and SARIF's helpUri; default: docs-url in the configuration, else no site: "
        "reports name `spec-validate --explain <id>`, which prints the page",
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
        help="validate on a Dask cluster: a scheduler address (tcp://host:8786), or local / local:N to start N local "
        "worker processes; one input's array blocks are the tasks, several inputs are one task each; workers must "
        "reach the inputs at the same path or URL (--jobs is then unused; see docs/scaling.md)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="read the settings from this file: a pyproject.toml with [tool.spec-validate], or a spec-validate.toml "
        "(default: the nearest from the cwd upwards)",
    )
    p.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    p.add_argument("--verbose", "-v", action="store_true", help="text: also list passed and not-applicable clauses")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument(
        "--deep",
        action="store_true",
        help="also read and decode every stored chunk of Zarr v2 and v3 arrays, the inner chunks of shards included "
        "(allow-listed codecs only; pickle is read as data, never unpickled); HDF5 and TileDB arrays are read as their clauses "
        "need, with or without it",
    )
    p.add_argument(
        "--no-list",
        action="store_true",
        help="remote Zarr stores with consolidated metadata: read the store as it describes it, listing no folder "
        "(one request per document and per chunk): a node it leaves out is not seen, as a reader of consolidated "
        "metadata does not see it, and the clauses on the keys stored (chunk keys, stray keys, documents it leaves "
        "out) are not checked; an array declaring over 2**20 chunks is not read (each would be a request). Stores "
        "without it are listed (on S3, a store of at most 100,000 keys with consolidated metadata, or 10,000 without, "
        "in one flat listing, 1,000 keys a request); local stores always are",
    )
    p.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="give each input at most SECONDS: it runs in a child process (with --dask, of its worker), and one "
        "that is still reading then is reported as timed out, naming what it was reading (the other inputs are "
        "still validated)",
    )
    p.add_argument(
        "--memory-limit",
        type=_positive_int,
        default=None,
        metavar="MB",
        help="cap the data memory of the validating processes at MB megabytes (RLIMIT_DATA: heap and thread "
        "stacks): an allocation past it fails, in HDF5 or TileDB too, and what was being read is reported "
        "unreadable; 1024 leaves room for a run with a few scan threads",
    )
    _add_all_clauses(p)
    p.add_argument(
        "--readers",
        nargs="?",
        const="",
        action="append",
        type=_reader_requirement,
        default=None,
        metavar="REQ",
        help="add whether the measured versions of real readers (anndata, zarr-python, h5py, ...) open each input: "
        "opens, does not open (with the fact and the measured case), or unknown (docs/readers.md); with a "
        "requirement such as 'anndata>=0.10' (repeatable), also a gate: exit 3 when a measured version in the range "
        "is not predicted to open an input (default: off, or readers in the configuration)",
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


def _add_all_clauses(p: argparse.ArgumentParser) -> None:
    """--all-clauses: a legacy file (an era before the spec, such as an .h5ad of anndata < 0.8) gets one verdict,
    `<pack>.legacy`, counted as a MUST failure, for the clauses that depend on the era (those that hold in every era
    are checked either way); with this flag every clause is checked as well."""
    p.add_argument(
        "--all-clauses",
        action="store_true",
        help="also check every clause of a legacy file (one written before the spec, e.g. by anndata < 0.8), "
        "where one verdict, <pack>.legacy (a MUST failure; --ignore it to accept such files), otherwise stands for "
        "the clauses that depend on the era",
    )


def _reader_requirement(text: str) -> str:
    """A --readers value: a requirement string (checked against the reader packs later), or "" for a bare flag."""
    if text and os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a path, not a reader requirement: give the paths first, or --readers=REQ")
    return text


def _docs_url(text: str) -> str:
    from spec_validate.report.links import docs_base

    try:
        return docs_base(text)
    except SpecValidateError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("docs-url: ")) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def _validate_one(
    item: Input,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend: tuple[str, ...],
    pack_files: tuple[str, ...],
    threads: int = 1,
    scanner=None,
    deep: bool = False,
    progress=None,
    all_clauses: bool = False,
    list_folders: bool = True,
    readers: bool | tuple[str, ...] = False,
) -> Report:
    """One input; runs in a worker process under --jobs (or a Dask task under --dask), so it takes pack file names,
    not Pack objects. An input that cannot be opened gives a report carrying the error, so the others still run."""
    from spec_validate import validate

    try:
        report = validate(
            item.path,
            select=select,
            ignore=ignore,
            extend_select=extend,
            packs=_packs(pack_files),
            jobs=threads,
            scanner=scanner,
            deep=deep,
            progress=progress,
            node=item.node,
            all_clauses=all_clauses,
            list_folders=list_folders,
            readers=readers,
        )
    except PackError:
        raise  # a bad pack is the run's error, not one input's
    except SpecValidateError as exc:
        return _unchecked(item, error=str(exc) + _unlisted(item, str(exc)))
    except OSError as exc:
        return _unchecked(item, error=_os_error(exc))
    except MemoryError:  # past --memory-limit outside a read that reports it (a read that does is unreadable)
        return _unchecked(item, error=f"{item.path}: needed more memory than --memory-limit allows")
    except Exception as exc:  # a bug met on one input: that input's error; the others are still reported
        if _no_thread_started(exc):
            return _unchecked(item, error=f"{item.path}: needed more memory than --memory-limit allows (for a thread)")
        if os.environ.get("SPEC_VALIDATE_DEBUG"):
            raise
        return _unchecked(
            item, error=f"{item.path}: internal error: {type(exc).__name__}: {exc} (set SPEC_VALIDATE_DEBUG=1 for a traceback)"
        )
    if not report.packs and not report.problems:
        # A store whose root could not be read (its attributes, its members) is no store "no pack describes": its
        # report names what could not be read, and fails.
        what = f"no rule pack applies (a {report.format} file, but not a store that spec-validate's packs describe)"
        # Named on the command line, that is an error; found in a folder (any HDF5 file is), it is skipped.
        return _unchecked(item, **({"error": f"{report.source}: {what}"} if item.explicit else {"skipped": what}))
    return report


def _unlisted(item: Input, error: str) -> str:
    """For a URL that may have named a folder, and could not be opened: that its server lists no folder there (so
    nothing was searched), said once, with why where the error does not already say it."""
    if item.unlisted is None:
        return ""
    why = "" if error.endswith(item.unlisted) else f" ({item.unlisted})"
    return f"; nor is it a folder its server lists{why}"


def _no_thread_started(exc: BaseException) -> bool:
    """Whether `exc` is Python's failure to start a thread: its stack is memory, which --memory-limit caps (the
    data limit counts every thread's stack), so a run near the limit fails there rather than with MemoryError."""
    return isinstance(exc, RuntimeError) and str(exc) == "can't start new thread"


def _unchecked(item: Input, error: str | None = None, skipped: str | None = None) -> Report:
    """The report of an input that was not checked: it could not be opened, or was found in a folder and skipped."""
    from spec_validate import __version__ as version

    return Report(item.path, "", (), version, (), node=item.node, error=error, skipped=skipped)


def _os_error(exc: OSError) -> str:
    return f"{exc.filename or ''}: {exc.strerror or exc}".replace(": : ", ": ").lstrip(": ")


def _label(path: str) -> str:
    """The input's name for the progress bar: its last path segment, never a URL's credentials or query."""
    if "://" in path:
        from spec_validate.storage.remote import redact_url

        path = redact_url(path)
    return os.path.basename(os.path.normpath(path.rstrip("/"))) or path


def _ids(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _emit(text: str | bytes, output: str | None) -> None:
    # Names read from a store can hold what no encoding writes (lone surrogates from undecodable file or member
    # names): written as backslash escapes, which in JSON text are the string's own escapes.
    if isinstance(text, bytes):  # a binary output format: written as it is
        if output:
            with open(output, "wb") as fh:
                fh.write(text)
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
            sys.stdout.buffer.flush()
        return
    if output:
        with open(output, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
    else:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _packs(extra: Sequence[str]) -> list[Pack]:
    """The built-in packs with the pack files given: one that extends a built-in pack replaces it."""
    from spec_validate.engine.loader import builtin_packs, load_pack, packs_to_run

    return packs_to_run(builtin_packs(), [load_pack(p) for p in extra])


def _subcommand(argv: Sequence[str] | None) -> int | None:
    """`spec-validate coverage ...` (spec_validate/coverage.py) and `spec-validate ome-conformance PATH`
    (spec_validate/ome_conformance.py) are the subcommands; None for a validation run. A store named `coverage` in
    the working directory is validated as `./coverage`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["coverage"]:
        from spec_validate import coverage

        return coverage.main(args[1:])
    if args[:1] == ["ome-conformance"]:
        from spec_validate import ome_conformance

        return ome_conformance.main(args[1:])
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
    if args.memory_limit is not None and args.dask:
        parser.error("--memory-limit caps the processes here; it cannot be used with --dask")
    if args.statistics and args.format not in ("text", "json"):
        parser.error(f"--statistics is a table (text) or JSON; it cannot be written as {args.format}")
    streamed = formats.get(args.format).stream is not None  # each report written as its input finishes
    _check_streamed(parser, args, streamed)
    settings = _settle(args, packs)
    if streamed and settings.readers:
        parser.error(
            f"the reader gate (--readers REQ) needs every report at the end; it cannot be used with --format {args.format}"
        )
    inputs = _inputs(args, settings)
    if streamed:
        from spec_validate.resume import run_streamed

        return run_streamed(args, settings, _packs(settings.packs), inputs, _validate_all)
    return _finish(args, settings, _validate_all(args, settings, inputs))


def _check_streamed(parser: argparse.ArgumentParser, args: argparse.Namespace, streamed: bool) -> None:
    """--resume continues a jsonl file, and a streamed run keeps no report for what needs them all at the end."""
    if args.resume and args.format != "jsonl":
        parser.error("--resume continues a --format jsonl run: give --format jsonl")
    if args.resume and args.output and os.path.abspath(args.output) != os.path.abspath(args.resume):
        parser.error("--resume FILE appends to FILE: give no other --output")
    if streamed and args.write_baseline:
        parser.error(f"--write-baseline needs every report at the end; it cannot be used with --format {args.format}")


def _inputs(args: argparse.Namespace, settings: Settings) -> list[Input]:
    """The inputs the paths name (folders searched); an error when nothing at all is left to validate."""
    from spec_validate.inputs import discover

    inputs = discover(args.paths, settings.exclude)
    if inputs and all(item.skipped is not None for item in inputs):  # only folders, with nothing to validate in them
        first = inputs[0]
        others = f" (nor do the {len(args.paths) - 1} other paths given)" if len(args.paths) > 1 else ""
        raise InputError(f"{first.path}: {first.skipped}{others}")
    return inputs


def _explain(args: argparse.Namespace, packs: list[Pack]) -> int:
    """--explain ID: the rule, or every rule a dotted prefix selects (as --select reads it), each with its page on
    the documentation site where one is named (--docs-url, or docs-url in the configuration)."""
    from spec_validate import config as cfg
    from spec_validate.engine.rule_selection import prefix_matches
    from spec_validate.explain import explain, explain_legacy
    from spec_validate.report.links import rule_page

    rules = [r for pack in packs for r in pack.rules]
    legacies = [pack for pack in packs if pack.legacy is not None]
    redirects = {k: v for pack in packs for k, v in pack.redirects.items()}
    wanted = redirects.get(args.explain, args.explain)
    match = [r for r in rules if r.id == wanted]
    legacy = [pack for pack in legacies if pack.legacy_id == wanted]
    if not match and not legacy:  # a dotted prefix: every rule it selects, and the legacy verdicts it names
        match = [r for r in rules if prefix_matches(wanted, r.id)]
        legacy = [pack for pack in legacies if prefix_matches(wanted, pack.legacy_id)]
    if not match and not legacy:
        raise SpecValidateError(f"no rule matches {wanted!r} (see --list-rules)")
    docs_url = args.docs_url or (None if args.isolated else cfg.load_config(args.config).docs_url)
    pages = [explain_legacy(pack) for pack in legacy]
    pages += [explain(r) + (f"\nDocumentation: {rule_page(r.id, docs_url)}\n" if r.builtin and docs_url else "") for r in match]
    _emit("\n".join(pages), args.output)
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
    from spec_validate import config as cfg
    from spec_validate.engine.rule_selection import unknown_prefixes

    settings = cfg.merge(
        cfg.Config() if args.isolated else cfg.load_config(args.config),
        select=_ids(args.select),
        ignore=_ids(args.ignore),
        extend_select=_ids(args.extend_select),
        fail_on=args.fail_on,
        fail_on_unchecked=args.fail_on_unchecked,
        packs=args.pack,
        exclude=_ids(args.exclude),
        extend_exclude=_ids(args.extend_exclude),
        docs_url=args.docs_url,
        readers=args.readers,
    )
    if settings.readers:  # a bad requirement is the run's error, said once, not each input's
        from spec_validate.engine.readers.packs import load_readers
        from spec_validate.engine.readers.predict import check_requirements

        check_requirements(settings.readers, load_readers())
    if settings.packs != tuple(args.pack):
        packs = _packs(settings.packs)
    known = [r.id for pack in packs for r in pack.rules] + [k for pack in packs for k in pack.redirects]
    known += [pack.legacy_id for pack in packs if pack.legacy is not None]  # a legacy verdict is selected like a rule
    unknown = unknown_prefixes(settings.all_prefixes(), known)
    if unknown:
        raise SpecValidateError(f"no rule matches {unknown[0]!r} (see --list-rules)")
    return settings


def _validate_all(args: argparse.Namespace, settings: Settings, inputs: list[Input], sink: Emit | None = None) -> list[Report]:
    """A report per input, in input order: on a Dask cluster, in worker processes (several inputs), or here.
    Files found in a folder and skipped get their one-line report without being opened. With `sink`, each report
    is handed to it (with its input's position in `inputs`) as its input finishes, skipped files first, and none
    is kept: the list returned is empty."""
    from spec_validate.engine.scan import default_workers

    _startup_finished()
    if args.memory_limit is not None:
        _limit_memory(args.memory_limit)
    todo = [item for item in inputs if item.skipped is None]
    emit = None
    if sink is not None:
        positions = [i for i, item in enumerate(inputs) if item.skipped is None]
        for i, item in enumerate(inputs):
            if item.skipped is not None:
                sink(i, _unchecked(item, skipped=item.skipped))

        def emit(k: int, report: Report) -> None:
            sink(positions[k], report)

    workers = args.jobs or default_workers()
    processes = min(workers, len(todo))
    # Several inputs: one process each, up to N at once, sharing the N workers as scan threads.
    threads = max(1, workers // max(1, processes))
    jobs = [(i, settings.select, settings.ignore_for(i.path), settings.extend_select, settings.packs, threads) for i in todo]
    validate_one = functools.partial(
        _validate_one,
        deep=args.deep,
        all_clauses=args.all_clauses,
        list_folders=not args.no_list,
        readers=False if settings.readers is None else settings.readers or True,
    )  # a partial of a module function still pickles
    if args.dask:
        done = _on_dask(args, jobs, validate_one, emit)
    elif args.timeout is not None:
        done = _with_timeout(jobs, validate_one, args.timeout, args.quiet, workers, emit)
    elif processes > 1:
        done = _in_processes(jobs, validate_one, processes, args.quiet, emit)
    else:
        done = _serially(jobs, validate_one, args.quiet, emit)
    if sink is not None:
        return []
    checked = iter(done)
    return [_unchecked(item, skipped=item.skipped) if item.skipped is not None else next(checked) for item in inputs]


def _on_dask(
    args: argparse.Namespace, jobs: list[tuple], validate_one: Callable[..., Report], emit: Emit | None = None
) -> list[Report]:
    """The inputs on the Dask cluster --dask names; several inputs (or any under --timeout) one task each, with one
    bar counting finished inputs. Under --timeout each task validates its input in a child process of its worker,
    given that many seconds (as `_with_timeout` does here). With `emit`, each report is handed to it as its input
    finishes, not kept."""
    from spec_validate.engine.dask_scan import validate_on_dask
    from spec_validate.progress import TerminalProgress

    children = args.timeout is not None
    if children:
        validate_one = functools.partial(_within, validate_one=validate_one, seconds=args.timeout)
    if len(jobs) == 1 and not children:  # its blocks are the tasks: the scan's own bar
        return validate_on_dask(args.dask, jobs, validate_one, emit=emit)
    with TerminalProgress("validating", unit="files", quiet=args.quiet) as bar:
        return validate_on_dask(args.dask, jobs, validate_one, children=children, progress=bar, emit=emit)


def _within(*job: object, validate_one: Callable[..., Report], seconds: float) -> Report:
    """`validate_one(*job)` in a child process given `seconds` (on a Dask worker, under --timeout): its report, or
    one naming the timeout or crash and what was being read."""
    from spec_validate.watchdog import run_with_timeout

    item = job[0]
    return run_with_timeout(job, validate_one, seconds, _shown(item.path), item.node)  # type: ignore[attr-defined]


def _in_processes(
    jobs: list[tuple], validate_one: Callable[..., Report], processes: int, quiet: bool, emit: Emit | None = None
) -> list[Report]:
    """Each input in a worker process, with one bar counting finished inputs; with `emit`, each report is handed
    to it as its input finishes (see `_gather`)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from spec_validate.progress import TerminalProgress

    # spawn, not fork: TileDB and HDF5 hold threads and locks that a forked child would inherit half-taken.
    with (
        ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn")) as pool,
        TerminalProgress("validating", unit="files", quiet=quiet) as bar,
    ):
        # In input order; or, with emit, each handed on as it finishes.
        return _gather([pool.submit(validate_one, *job) for job in jobs], bar, emit)


def _limit_memory(megabytes: int) -> None:
    """Cap this process's data (and so its children's: they inherit it) at `megabytes`."""
    try:
        import resource

        limit = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
    except (ImportError, AttributeError, ValueError, OSError) as exc:
        raise SpecValidateError(f"--memory-limit cannot be set here ({exc})") from None


def _with_timeout(
    jobs: list[tuple], validate_one: Callable[..., Report], seconds: float, quiet: bool, workers: int, emit: Emit | None = None
) -> list[Report]:
    """Each input in turn in a child process given `seconds`, with all the scan threads (see `spec_validate.watchdog`);
    with `emit`, each report is handed to it, not kept."""
    from spec_validate.watchdog import run_with_timeout

    reports = []
    rules: dict = {}  # each child's report brings its own copies of the rules: one kept (Report.sharing_rules)
    for k, job in enumerate(jobs):
        item = job[0]
        job = (*job[:5], workers)
        report = run_with_timeout(job, validate_one, seconds, _shown(item.path), item.node, _label(item.path), quiet)
        report = report.sharing_rules(rules)
        if emit is None:
            reports.append(report)
        else:
            emit(k, report)
    return reports


def _shown(path: str) -> str:
    from spec_validate import _shown as shown

    return shown(path)


def _serially(jobs: list[tuple], validate_one: Callable[..., Report], quiet: bool, emit: Emit | None = None) -> list[Report]:
    """Each input in turn in this process; with `emit`, each report is handed to it, not kept."""
    from spec_validate.progress import TerminalProgress

    reports = []
    for k, job in enumerate(jobs):  # a bar per input, named for it, once its scan has lasted a second
        with TerminalProgress(_label(job[0].path), quiet=quiet) as bar:
            report = validate_one(*job, progress=bar)
        if emit is None:
            reports.append(report)
        else:
            emit(k, report)
    return reports


def _finish(args: argparse.Namespace, settings: Settings, reports: list[Report]) -> int:
    """The baseline written or read, the report (or --statistics) emitted, each input that could not be opened
    named on stderr; the exit code, the worst over the inputs."""
    from spec_validate.report import baseline as bl
    from spec_validate.report.verdict import exit_code, reader_gate

    fail_on = Level(settings.fail_on.upper())
    if args.write_baseline:
        _write_baseline(args.write_baseline, reports)
    known = bl.load(args.baseline) if args.baseline else None
    _emit(_render(args, reports, fail_on, known, settings.docs_url, settings.fail_on_unchecked), args.output)
    # An input that could not be opened is named on stderr too (CI logs keep stderr when the report goes to a file),
    # except where the text report is already on the same terminal: said once there.
    said_on_terminal = args.format == "text" and not args.output and sys.stdout.isatty() and sys.stderr.isatty()
    for report in reports:
        if report.error is not None and not said_on_terminal:
            print(f"spec-validate: error: {report.error}", file=sys.stderr)
        for miss in reader_gate(report):  # which version, and which fact, whatever the format
            print(f"spec-validate: readers: {report.name}: {miss.message}", file=sys.stderr)
    return exit_code(
        reports,
        fail_on,
        known,
        exit_zero=bool(args.exit_zero or args.write_baseline),
        fail_on_unchecked=settings.fail_on_unchecked,
    )


def _write_baseline(path: str, reports: list[Report]) -> None:
    from spec_validate.report import baseline as bl

    bl.write(path, reports)
    count = sum(1 for r in reports for item in bl.located(r) if item.rule_id != bl.INPUT_ERROR)
    print(f"spec-validate: wrote {count} finding(s) to baseline {path}", file=sys.stderr)


def _gather(futures, progress, emit: Emit | None = None) -> list[Report]:
    """The futures' results in input order, counting finished inputs on `progress`; a failure cancels those not yet
    started. With `emit`: each result handed to it (with its future's place in `futures`) as it finishes, on this
    thread, and not kept (nor is its future), so memory does not grow with the inputs; the list returned is empty."""
    from concurrent.futures import as_completed

    progress.start(len(futures))
    for future in futures:
        future.add_done_callback(lambda _: progress.advance(1))  # on the pool's thread: TerminalProgress locks
    place = {future: k for k, future in enumerate(futures)}
    rules: dict = {}  # each worker's report brings its own copies of the rules: one kept (Report.sharing_rules)
    try:
        if emit is None:
            return [future.result().sharing_rules(rules) for future in futures]
        futures = None  # as_completed lets go of each future it yields: then nothing holds a finished report
        for future in as_completed(list(place)):
            emit(place.pop(future), future.result().sharing_rules(rules))
        return []
    except BaseException:
        for future in place:
            future.cancel()
        raise
    finally:
        progress.finish()


def _render(
    args: argparse.Namespace,
    reports: list[Report],
    fail_on: Level,
    known,
    docs_url: str | None = None,
    fail_on_unchecked: bool = False,
) -> str | bytes:
    """The report (or --statistics: as JSON with --format json, else as text) in the format the flags name."""
    from spec_validate import render

    name = ("json" if args.format == "json" else "text") if args.statistics else args.format
    colour = False
    if not args.output:
        from spec_validate.report.text import use_colour

        colour = use_colour(sys.stdout)
    return render(
        reports,
        name,
        fail_on=fail_on,
        baseline=known,
        verbose=args.verbose,
        colour=colour,
        statistics=args.statistics,
        docs_url=docs_url,
        fail_on_unchecked=fail_on_unchecked,
    )


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
        print(f"spec-validate: error: {_os_error(exc)}", file=sys.stderr)
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
    its view (`gc.freeze`), and it runs for the rest of the run, whose memory must stay bounded, collecting the
    youngest objects every YOUNG_OBJECTS allocations rather than Python's 700: the node tree grows by tens of
    thousands of objects that all live to the end, and collecting it so often cost a fifth of a 30,000-node
    Zarr v3 run. At exit the same is done again, so the interpreter's final collections do not walk everything
    once more.
    """
    global _OWN_PROCESS
    _OWN_PROCESS = True
    gc.disable()
    code = main()
    gc.freeze()
    sys.exit(code)


# Allocations (net of frees) between two collections of the youngest generation in the command's own process:
# at most this many objects of cyclic garbage wait for the collector (Python's default is 700).
YOUNG_OBJECTS = 10_000


def _startup_finished() -> None:
    if not _OWN_PROCESS:
        return
    from spec_validate.codecs import decode

    decode.SKIP_CODEC_PLUGIN_SCAN = True  # this process decodes nothing but the tool's allow-list: see there
    if not gc.isenabled():
        gc.freeze()
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(YOUNG_OBJECTS, older, oldest)
        gc.enable()


if __name__ == "__main__":
    console()
