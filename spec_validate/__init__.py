"""spec-validate: clause-by-clause conformance checks for scientific array stores."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spec_validate.engine.rule_selection import Selection
from spec_validate.errors import InputError
from spec_validate.model import LEGACY_REASON, ClauseResult, Finding, LegacyVerdict, Level, Pack, Report, Rule, Status
from spec_validate.version import __version__

if TYPE_CHECKING:
    from spec_validate.engine.scan import Progress, Scanner

__all__ = [
    "ClauseResult",
    "Finding",
    "LegacyVerdict",
    "Level",
    "Report",
    "Selection",
    "Status",
    "__version__",
    "assert_conforms",
    "render",
    "to_json",
    "to_sarif",
    "validate",
]


def validate(
    path: str | os.PathLike[str],
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    packs: Sequence[Pack] | None = None,
    extra_packs: Sequence[str | os.PathLike[str]] = (),
    jobs: int | None = None,
    scanner: Scanner | None = None,
    progress: Progress | None = None,
    deep: bool = False,
    node: str = "/",
    all_clauses: bool = False,
    list_folders: bool = True,
    readers: bool | Sequence[str] = False,
    reader_packs: str | os.PathLike[str] | None = None,
) -> Report:
    """Validate one store against every rule pack that applies to it.

    Args:
        path: an HDF5 file or a Zarr store (directory or zip).
        node: validate only this node of the store and what lies below it (`/X`). Rules still see the whole
            store; failures on the node's ancestors are reported as `Report.context`, not as the node's.
        select, ignore, extend_select: rule ids or dotted prefixes (`anndata.csr_matrix`).
        packs: the packs to use instead of the built-in ones.
        extra_packs: paths of further YAML packs to load and use as well; one that extends a pack in use
            (`extends: anndata`) replaces it, so each clause is reported once.
        jobs: threads for the array scans (default: the cores available; 1 scans in this thread).
        scanner: runs the array scans instead (for example a Dask scanner); `jobs` is then unused.
        progress: told the elements to scan and the elements scanned (a progress bar).
        deep: also run the rules that read and decode every stored chunk (Zarr v2 chunk decoding); without
            it they are not applicable ("needs --deep").
        all_clauses: also check every clause where the store is of an era before the spec (a legacy file,
            such as an .h5ad written before anndata 0.8); without it one legacy verdict stands for the clauses that
            depend on the era (those that hold in every era, such as sparse structure, are checked either way).
        list_folders: False to read a remote Zarr store that has consolidated metadata from it alone, listing no
            folder: one request per metadata document and per chunk; a node it leaves out is not seen (as a reader
            of consolidated metadata does not see it), and the clauses on the keys stored are not checked
            (`ClauseResult.unchecked` names the nodes). Local stores are always listed.
        readers: True to predict whether the measured versions of real readers (anndata, zarr-python, h5py, ...)
            open the store (`Report.readers`, docs/readers.md); or requirement strings (`["anndata>=0.10"]`), which
            also make the verdicts a gate: `report.verdict.reader_gate` names each measured version inside one that
            is not predicted to open, and the command exits 3 for it.
        reader_packs: a folder of reader packs and their `measured.yaml` to predict with, instead of the built-in
            ones (`rules/readers/`).

    Returns:
        The Report: one ClauseResult per selected rule of each pack that applies, the store's eras and likely
        writers (`provenance`), and a legacy verdict per scope of an era before its spec (`legacy`). An input
        that is not what its name or signature says (an empty or cut-short `.h5ad`, a `.zarr` with no Zarr
        document, an `.h5ad` holding no AnnData object) is a report with an unreadable record at `/`: it fails.

    Raises:
        InputError: the store cannot be opened (missing, not readable, of a format this tool does not read), or
            holds no node `node`.
        PackError: a pack is invalid, two packs extend the same pack, or two packs define one rule id.
    """
    from spec_validate.engine import activity
    from spec_validate.engine.loader import builtin_packs, load_pack, packs_to_run
    from spec_validate.engine.provenance import detect
    from spec_validate.engine.run import evaluate, in_reach, prefer_attributes
    from spec_validate.engine.scan import make_scanner
    from spec_validate.errors import DamagedInput
    from spec_validate.model import PackInfo, Problem
    from spec_validate.nodes.open import open_store

    chosen = packs_to_run(builtin_packs() if packs is None else packs, [load_pack(p) for p in extra_packs])
    selection = Selection(tuple(select), tuple(extend_select), tuple(ignore))
    known_readers = _readers(readers, reader_packs)
    activity.reading(f"opening {_shown(os.fspath(path))}")
    try:
        opened = open_store(os.fspath(path), list_folders)
    except DamagedInput as exc:  # there, but not what its name says: a file that fails, not one that cannot be opened
        unreadable = (Problem("/", exc.reason, "/"),)
        unread = None
        if known_readers is not None:
            from spec_validate.engine.readers.predict import predict

            unread = predict(None, None, known_readers[0], known_readers[1])
        return Report(_shown(os.fspath(path)), exc.format, (), __version__, (), unreadable, node=node, readers=unread)
    with opened as tree:
        activity.opened(tree.format)
        tree.tell = activity.reading  # a node that takes long to read is named, wherever the engine is
        if node != "/" and _found(tree, node) is None:
            raise InputError(f"{_shown(os.fspath(path))}: no group or array at {node}")
        prefer_attributes(tree, chosen, selection)  # before the writer detection walks the store
        provenance = detect(tree)

        def skip_scope(scope) -> str | None:
            era = _legacy_era(scope, provenance)
            if era is None or all_clauses:
                return None
            return f"{LEGACY_REASON}{era.label}; {scope.pack.legacy_id} stands for this clause (--all-clauses checks it)"

        done = evaluate(
            tree,
            chosen,
            selection,
            scanner=scanner or make_scanner(jobs),
            progress=progress,
            deep=deep,
            within=node,
            skip_scope=skip_scope,
            provenance=provenance,
        )
        infos = [
            PackInfo(pack.name, pack.title, pack.version, tuple(s.root.path for s in scopes))
            for pack, scopes in zip(chosen, done.scopes, strict=True)
            if scopes
        ]
        legacy = tuple(
            _legacy_verdict(scope, era, provenance, all_clauses, selection, tree.format)
            for pack, scopes in zip(chosen, done.scopes, strict=True)
            for scope in scopes
            if (era := _legacy_era(scope, provenance)) is not None
            and selection.redirected(pack.redirects).includes(pack.legacy_id)
        )
        # A node run keeps the unreadable keys of the node, what lies below it and its ancestors, not its siblings'.
        # In key order: the order they are met in depends on how the store is read (locally, over HTTP, on threads).
        problems = tuple(
            sorted(
                (
                    Problem(p.key, p.message, getattr(p, "path", None))
                    for p in getattr(tree, "problems", ())
                    if in_reach(_problem_node(p), node)
                ),
                key=lambda p: p.key,
            )
        )
        if node == "/" and not infos and not problems:
            missing = _not_what_its_name_says(os.fspath(path), chosen)
            problems = (Problem("/", missing, "/"),) if missing else ()
        verdicts = None
        if known_readers is not None:
            verdicts = _reader_verdicts(tree, chosen, done, legacy, *known_readers)
        return Report(
            _shown(os.fspath(path)),
            tree.format,
            tuple(infos),
            __version__,
            tuple(done.results),
            problems,
            _metadata_keys(tree, done.results),
            node,
            tuple(done.context),
            provenance=provenance,
            legacy=legacy,
            listed=tree.root.keys_listed,
            readers=verdicts,
        )


def _readers(readers: bool | Sequence[str], directory: str | os.PathLike[str] | None):
    """The reader packs and the gate's requirements, checked, when reader verdicts are asked for; else None."""
    if readers is False or readers is None:
        return None
    from spec_validate.engine.readers.packs import load_readers
    from spec_validate.engine.readers.predict import check_requirements

    known = load_readers(directory)
    required = () if readers is True else check_requirements([str(r) for r in readers], known)
    return known, required


def _reader_verdicts(tree, chosen: Sequence[Pack], done, legacy, known, required):
    """The reader verdicts on the opened, validated store (facts from its nodes and its clause results)."""
    from spec_validate.engine.readers.predict import store_verdicts

    applied: dict[str, list[str]] = {}
    for pack, scopes in zip(chosen, done.scopes, strict=True):
        for name in (pack.name, *pack.bases) if scopes else ():  # a pack that found no scope did not apply
            applied.setdefault(name, []).extend(s.root.path for s in scopes)
    failed = {r.rule.id for r in done.results if r.status is Status.FAILED}
    # A clause is decided when it failed, or passed (or did not apply) with every node it selected checked: one not
    # checked on some node (it decodes chunks and --deep is off, a codec is not decoded) or that errored says
    # nothing about the nodes it skipped, so a reader rule naming it is undecided, never "opens".
    evaluated = failed | {
        r.rule.id
        for r in done.results
        if r.status in (Status.PASSED, Status.NOT_APPLICABLE, Status.NOTICE) and not r.unchecked_count
    }
    # A legacy verdict is a clause of its own: evaluated wherever its pack applied, failed where it was given.
    evaluated |= {p.legacy_id for p, scopes in zip(chosen, done.scopes, strict=True) if scopes and p.legacy is not None}
    failed |= {v.id for v in legacy}
    # A notice rule that reported findings (the pickled chunks call a class) is a fact of the store, never a failure.
    noticed = {r.rule.id for r in done.results if r.status is Status.NOTICE}
    return store_verdicts(tree, applied, failed, evaluated, known, required, noticed)


# The pack a data file's name says it follows, and what that pack finds in such a file. A file so named in which the
# pack finds nothing (an HDF5 file left empty by a writer that failed) fails: it is no file "no pack describes".
NAMED_FOR_PACK = {
    ".h5ad": ("anndata", "AnnData object", "an .h5ad file"),
    ".h5seurat": ("h5seurat", "h5Seurat object", "an .h5Seurat file"),
}


def _not_what_its_name_says(path: str, packs: Sequence[Pack]) -> str | None:
    """Why an input in which no pack applies fails, where its name says which pack should (and that pack is in
    use); None otherwise."""
    from urllib.parse import urlsplit

    name = os.path.basename((urlsplit(path).path if "://" in path else path).rstrip("/")).lower()
    for suffix, (pack, holds, named) in NAMED_FOR_PACK.items():
        if name.endswith(suffix) and any(p.name == pack or pack in p.bases for p in packs):
            return f"no {holds} in it, as {named} holds: the {pack} pack finds none (an empty or unfinished file?)"
    return None


def _found(tree, path: str):
    """The node at `path`, or None where there is none or a group on the way could not be listed."""
    from spec_validate.errors import NodeError

    try:
        return tree.get(path)
    except NodeError:
        return None


def _problem_node(problem) -> str:
    """The node an unreadable record belongs to: its own path where the backend knows it, else the folder of its
    store key (`X/indptr/.zarray` -> `/X/indptr`)."""
    if getattr(problem, "path", None):
        return problem.path
    if problem.key.startswith("/"):
        return problem.key
    return "/" + problem.key.rpartition("/")[0]


def _legacy_era(scope, provenance):
    """The era of a scope's root when its pack calls that era legacy (before the spec), else None."""
    legacy = scope.pack.legacy
    if legacy is None:
        return None
    return next((e for e in provenance.eras if e.path == scope.root.path and e.id in legacy.eras), None)


def _legacy_verdict(scope, era, provenance, clauses_checked: bool, selection: Selection, storage: str) -> LegacyVerdict:
    """The verdict on a scope of an era before its pack's spec, in the words of the storage read (`storage`, the
    tree's format: an HDF5 file is not a Zarr store), naming the selected clauses checked there whatever the era."""
    pack = scope.pack
    writers = tuple(w.label for w in provenance.writers if w.role == era.family)
    chosen = [r.id for r in pack.rules if selection.redirected(pack.redirects).includes(r.id)]
    kept = tuple(r for r in chosen if pack.legacy.keeps(r))
    return LegacyVerdict(
        pack.name,
        pack.legacy_id,
        scope.root.path,
        era.label,
        era.id,
        writers,
        pack.legacy.text(era.id, storage),
        pack.legacy.clause,
        pack.legacy.section,
        era.evidence,
        clauses_checked,
        kept,
        0 if clauses_checked else len(chosen) - len(kept),
    )


def _shown(source: str) -> str:
    """The input as reports name it: a URL without user:password or query string (signed-URL tokens)."""
    if "://" not in source:
        return source
    from spec_validate.storage.remote import redact_url

    return redact_url(source)


def _metadata_keys(tree, results) -> dict[str, str]:
    """Node path -> metadata document key, for the nodes of failing findings (SARIF points at these keys)."""
    keys: dict[str, str] = {}
    paths = {f.path for r in results if r.status is Status.FAILED for f in r.findings if f.path}
    for path in sorted(paths):
        node = _found(tree, path)
        key = node.metadata_key if node is not None else None
        if key is None:
            continue
        if node.kind == "group" and key.endswith(".zgroup"):
            # A group's clauses are about its attributes: point at .zattrs when one is stored.
            try:
                attrs = node.read_document(".zattrs") is not None
            except Exception:  # noqa: BLE001 (a key we cannot read is not one to point at)
                attrs = False
            if attrs:
                key = key[: -len(".zgroup")] + ".zattrs"
        keys[path] = key
    return keys


def to_json(report: Report) -> dict[str, Any]:
    """One report as the data of the JSON output format (its schema: `spec_validate/report/report.schema.json`)."""
    from spec_validate.report.json import report_to_json

    return report_to_json(report)


def to_sarif(reports: Report | Sequence[Report], docs_url: str | None = None) -> dict[str, Any]:
    """Reports as one SARIF 2.1.0 log (one run), as `--format sarif` writes it; `docs_url` as `render` takes it."""
    from spec_validate.report.links import docs_base
    from spec_validate.report.options import RenderOptions
    from spec_validate.report.sarif import sarif_log

    chosen = RenderOptions(rule_help=_rule_help, docs_url=docs_base(docs_url) if docs_url else None)
    return sarif_log([reports] if isinstance(reports, Report) else list(reports), chosen)


def render(reports: Report | Sequence[Report], format: str = "text", **options: Any) -> str | bytes:
    """Reports in an output format, as `spec-validate --format FORMAT` writes them.

    Args:
        reports: one report, or several (one document for all, as the command line writes for several inputs).
        format: the output format's name: text, json, jsonl, sarif, github, junit, markdown, html, or one registered
            with `spec_validate.report.formats.output_format`.
        options: the fields of `spec_validate.report.options.RenderOptions`: fail_on ("must", "should", "may" or
            a Level), baseline (a `report.baseline.Baseline`), fail_on_unchecked (as --fail-on-unchecked),
            tool_version, verbose, colour, statistics, rule_help (a rule's documentation; by default what
            --explain prints), and docs_url (the base URL of a copy of the documentation site that rule links point
            at; by default none, and reports name `spec-validate --explain <id>` instead).

    Raises:
        SpecValidateError: no output format is named `format`, or `docs_url` is no http(s):// or file:// URL.
    """
    from spec_validate.report.formats import get
    from spec_validate.report.links import docs_base
    from spec_validate.report.options import RenderOptions

    if isinstance(options.get("fail_on"), str):
        options["fail_on"] = Level(options["fail_on"].upper())
    if options.get("docs_url"):
        options["docs_url"] = docs_base(options["docs_url"])
    chosen = RenderOptions(**{"rule_help": _rule_help, **options})
    return get(format).render([reports] if isinstance(reports, Report) else list(reports), chosen)


def _rule_help(rule: Rule) -> str:
    """A rule's documentation as --explain prints it (its checks' summaries and the packs' spec notes included)."""
    from spec_validate.explain import explain

    return explain(rule)


def assert_conforms(
    path: str | os.PathLike[str],
    fail_on: str | Level = "must",
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    extra_packs: Sequence[str | os.PathLike[str]] = (),
    deep: bool = False,
    all_clauses: bool = False,
    list_folders: bool = True,
    fail_on_unchecked: bool = False,
    readers: Sequence[str] = (),
) -> Report:
    """Validate `path` and raise AssertionError listing each failed clause at or above `fail_on` (and, with
    `fail_on_unchecked`, each clause at or above it not judged on every node it selects), and each reader
    requirement of `readers` the store is not predicted to meet.

    Args:
        path: the store to validate.
        fail_on: "must", "should" or "may" (or a Level): the lowest level whose failure fails.
        select, ignore, extend_select: rule ids or dotted prefixes, as on the command line.
        extra_packs: further YAML packs (one that extends a pack in use replaces it, as in `validate`).
        deep: also decode every stored chunk (as --deep).
        all_clauses: also check every clause of a legacy file (as --all-clauses).
        list_folders: False reads a remote store with consolidated metadata without listing (as --no-list).
        fail_on_unchecked: also fail when a clause at or above `fail_on` could not be checked on some or all of
            its nodes (it needs `deep`, a codec is not decoded, a reader is not available), as --fail-on-unchecked.
            Without it such clauses are not checked, and fail nothing.
        readers: reader requirements (`["anndata>=0.10", "zarr-python>=3"]`), the gate of `--readers`: every
            measured version inside each range must be predicted to open the store (docs/readers.md).

    Returns:
        The Report, when nothing at or above `fail_on` failed (nor, with `fail_on_unchecked`, went unchecked) and
        every reader requirement is met.
    """
    __tracebackhide__ = True  # pytest: a failure shows the report, not this function's source
    level = fail_on if isinstance(fail_on, Level) else Level(str(fail_on).upper())
    report = validate(
        path,
        select=select,
        ignore=ignore,
        extend_select=extend_select,
        extra_packs=extra_packs,
        deep=deep,
        all_clauses=all_clauses,
        list_folders=list_folders,
        readers=list(readers) or False,
    )
    failure = describe_gate_failures(report, level, fail_on_unchecked)
    if failure is not None:
        raise AssertionError(failure)
    return report


def describe_gate_failures(report: Report, fail_on: Level, fail_on_unchecked: bool = False) -> str | None:
    """Why `report` fails: its failed clauses at or above `fail_on` (`describe_failures`), then the reader
    requirements it does not meet (`report.verdict.reader_gate`); None when it passes both."""
    from spec_validate.report.verdict import reader_gate

    parts = []
    if report.fails_at(fail_on, unchecked=fail_on_unchecked):
        parts.append(describe_failures(report, fail_on, fail_on_unchecked))
    misses = reader_gate(report)
    if misses:
        parts.append(f"{report.source} does not meet the reader requirements: {len(misses)} miss(es)")
        parts.extend(f"  READERS {miss.message}" for miss in misses)
    return "\n".join(parts) if parts else None


def describe_failures(report: Report, fail_on: Level, fail_on_unchecked: bool = False) -> str:
    """The failed clauses of `report` at or above `fail_on`, one block per clause, for people; with
    `fail_on_unchecked`, then the clauses at or above it not judged on every node, with the nodes not checked."""
    bad = [r for r in report.results if r.status in (Status.FAILED, Status.ERROR) and r.rule.level.rank >= fail_on.rank]
    # A legacy verdict is a failure of its own: "does not conform: 0 clause(s) failed" would contradict itself.
    legacy = f", {len(report.legacy)} legacy verdict(s)" if report.legacy else ""
    unchecked = report.unchecked_at(fail_on) if fail_on_unchecked else []
    lines = [f"{report.source} does not conform (fail_on={fail_on.value.lower()}): {len(bad)} clause(s) failed{legacy}"]
    if unchecked:
        lines[0] += f", {len(unchecked)} not checked on every node (fail_on_unchecked)"
    for problem in report.problems:
        lines.append(f"  UNREADABLE {problem.key}: {problem.message}")
    for v in report.legacy:
        lines.append(f"  LEGACY {v.id} at {v.path}: {v.era}: {v.message}")
    for r in sorted(bad, key=lambda r: (-r.rule.level.rank, r.rule.id)):
        status = "FAILED" if r.status is Status.FAILED else "ERROR"
        lines.append(f"  {status} {r.rule.level.value}{' (derived)' if r.rule.derived else ''} {r.rule.id}")
        lines.append(f"    {r.rule.section}: \u201c{r.rule.clause}\u201d")
        if r.status is Status.ERROR:
            lines.append(f"    error: {r.reason}")
        for f in r.findings:
            lines.append(f"    {f.path}: {f.message}")
        if r.finding_count > len(r.findings):
            lines.append(f"    ... and {r.finding_count - len(r.findings)} more")
        for w in r.writer_notes:
            lines.append(f"    note: {w.label}: {w.note}")
    for r in sorted(unchecked, key=lambda r: (-r.rule.level.rank, r.rule.id)):
        status = "NOT CHECKED" if r.status is Status.NOT_CHECKED else "PASSED, NOT ALL CHECKED"
        lines.append(f"  {status} {r.rule.level.value} {r.rule.id}")
        for path, reason in r.unchecked:
            lines.append(f"    not checked: {path}: {reason.removeprefix(path + ': ')}")
        more = max(r.unchecked_count, len(r.unchecked)) - len(r.unchecked)
        if more > 0:
            lines.append(f"    ... and {more} more not checked")
    return "\n".join(lines)
