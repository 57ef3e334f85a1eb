"""`spec-validate coverage`: which statements of each spec the built-in packs check, which they cannot, and why.

Read from the clause catalogues (`rules/<folder>/catalogue*.yaml`, one per built-in pack; spec_validate/catalogue.py).
Exit codes as for a validation run: 0, or 1 when `--specs DIR` finds a catalogue that has drifted from its spec
files or its pack, and 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence

from spec_validate.catalogue import STATUSES, Catalogue, Statement, builtin_catalogues, check_against, where
from spec_validate.errors import SpecValidateError
from spec_validate.report.links import docs_base, rule_page
from spec_validate.usage import Parser

FORMATS = ("text", "json", "markdown")
LABELS = {"covered": "covered", "partial": "partial", "not-checkable": "not checkable", "deferred": "deferred"}


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="spec-validate coverage",
        description="Per spec: its normative statements, how many the built-in rules cover (fully or in part), how many "
        "cannot be checked from stored data and how many are deferred, then each statement that is not fully "
        "covered with the reason. Read from rules/<folder>/catalogue*.yaml, one per built-in pack.",
    )
    p.add_argument(
        "--spec",
        action="append",
        default=[],
        metavar="NAME",
        help="only this spec (a pack name: anndata, zarr, zarr3, h5seurat, hdmf-zarr, cxg; repeatable)",
    )
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--all", action="store_true", help="list every statement, covered ones too")
    p.add_argument(
        "--specs",
        metavar="DIR",
        help="also check each catalogue against the spec files in DIR (every sentence with a key word listed, "
        "every statement verbatim) and against its pack; exit 1 if one has drifted",
    )
    p.add_argument(
        "--docs-url",
        type=_docs_url,
        default=None,
        metavar="URL",
        help="markdown: link each rule to its page on the documentation site at URL (URL/rules/<id>.html); "
        "default: no links (`spec-validate --explain <id>` prints a rule's page)",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    return p


def _docs_url(text: str) -> str:
    try:
        return docs_base(text)
    except SpecValidateError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("docs-url: ")) from None


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    catalogues = select(args.spec)
    drift = {c.name: check_against(c, args.specs) for c in catalogues} if args.specs else {}
    if args.format == "json":
        text = render_json(catalogues, drift)
    elif args.format == "markdown":
        docs_url = args.docs_url
        text = render_markdown(catalogues, every=args.all, link=(lambda r: rule_page(r, docs_url)) if docs_url else None)
    else:
        text = render_text(catalogues, every=args.all, drift=drift)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    problems = sum(len(v) for v in drift.values())
    if problems and args.format != "text":
        for name, lines in drift.items():
            for line in lines:
                print(f"spec-validate coverage: {name}: {line}", file=sys.stderr)
    return 1 if problems else 0


def select(names: Sequence[str]) -> list[Catalogue]:
    catalogues = list(builtin_catalogues())
    if not names:
        return catalogues
    known = {c.name: c for c in catalogues}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SpecValidateError(f"no catalogue for spec {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return [known[n] for n in dict.fromkeys(names)]


def counts(catalogue: Catalogue) -> dict[str, int]:
    """statements, then one count per status."""
    return {"statements": len(catalogue.statements), **{s: catalogue.count(s) for s in STATUSES}}


def _rule_count(name: str) -> int:
    from spec_validate.engine.loader import builtin_packs

    return sum(len(p.rules) for p in builtin_packs() if p.name == name)


def _why(s: Statement) -> str:
    return s.missing or s.reason or s.note or ""


# ------------------------------------------------------------------------------------------------ text
def render_text(catalogues: Sequence[Catalogue], every: bool = False, drift: dict[str, list[str]] | None = None) -> str:
    header = ("spec", "statements", "covered", "partial", "not checkable", "deferred", "rules")
    rows = [(c.name, *(str(v) for v in counts(c).values()), str(_rule_count(c.name))) for c in catalogues]
    if len(catalogues) > 1:
        totals = [sum(int(r[i]) for r in rows) for i in range(1, len(header))]
        rows.append(("total", *map(str, totals)))
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()

    out = [
        "Normative statements of each spec and what the built-in rules check (rules/<folder>/catalogue*.yaml)",
        "",
        line(header),
        *map(line, rows),
        "",
    ]
    for c in catalogues:
        shown = [s for s in c.statements if every or s.status != "covered"]
        out.append(f"{c.name}: {c.title} ({sources(c)}): {_tally(c)}")
        if c.derived_rules:
            out.append(f"  {'derived rules':<14} {', '.join(c.derived_rules)}")
            out.append(f"  {'':<14} {DERIVED}")
        for s in shown:
            out.append(f"  {LABELS[s.status]:<14} [{where(c, s.source, s.section)}] \u201c{_short(s.text)}\u201d")
            if s.rules:
                out.append(f"  {'':<14} rules: {', '.join(s.rules)}")
            if _why(s):
                out.append(f"  {'':<14} {_why(s)}")
        for problem in (drift or {}).get(c.name, []):
            out.append(f"  DRIFT          {problem}")
        out.append("")
    return "\n".join(out)


DERIVED = "follow from a definition, not from a listed statement (this catalogue lists keyword sentences only)"


def sources(c: Catalogue, code: str = "") -> str:
    """The spec file, or for a spec of several files their folder and number (`zarr-v3/, 15 files`); `code`
    quotes the names (Markdown's backtick)."""
    if len(c.sources) == 1:
        return f"{code}{c.sources[0]}{code}"
    folders = {os.path.dirname(s) for s in c.sources}
    if len(folders) == 1 and folders != {""}:
        return f"{code}{folders.pop()}/{code}, {len(c.sources)} files"
    return ", ".join(f"{code}{s}{code}" for s in c.sources)


def _tally(c: Catalogue) -> str:
    n = counts(c)
    return ", ".join(f"{n[s]} {LABELS[s]}" for s in STATUSES)


def _short(text: str, width: int = 110) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


# ------------------------------------------------------------------------------------------------ JSON
def as_dict(c: Catalogue) -> dict:
    return {
        "name": c.name,
        "title": c.title,
        "sources": list(c.sources),
        "rules": _rule_count(c.name),
        "derived_rules": list(c.derived_rules),
        "counts": counts(c),
        "statements": [
            {
                "source": s.source,
                "section": s.section,
                "text": s.text,
                "status": s.status,
                "keyword": c.has_keyword(s),
                **{
                    k: v
                    for k, v in (
                        ("rules", list(s.rules)),
                        ("missing", s.missing),
                        ("reason", s.reason),
                        ("note", s.note),
                        ("occurrences", s.occurrences if s.occurrences > 1 else None),
                    )
                    if v
                },
            }
            for s in c.statements
        ],
    }


def render_json(catalogues: Sequence[Catalogue], drift: dict[str, list[str]] | None = None) -> str:
    specs = []
    for c in catalogues:
        doc = as_dict(c)
        if drift is not None and c.name in drift:
            doc["drift"] = drift[c.name]
        specs.append(doc)
    return json.dumps({"specs": specs}, indent=2, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------------------------------------ Markdown
def render_markdown(
    catalogues: Sequence[Catalogue], every: bool = False, link: Callable[[str], str | None] | None = None, heading: str = "##"
) -> str:
    """A summary table, then per spec the statements (every one, or those not fully covered) with their rules, each
    linked to `link(rule id)` where given."""

    def rule(rule_id: str) -> str:
        page = link(rule_id) if link is not None else None
        return f"[`{rule_id}`]({page})" if page else f"`{rule_id}`"

    out = ["| spec | statements | covered | partial | not checkable | deferred | rules |", "|---|--:|--:|--:|--:|--:|--:|"]
    for c in catalogues:
        n = counts(c)
        out.append(
            f"| [{c.title}](#{_slug(c.title)}) | {n['statements']} | {n['covered']} | {n['partial']} | {n['not-checkable']} "
            f"| {n['deferred']} | {_rule_count(c.name)} |"
        )
    out.append("")
    for c in catalogues:
        shown = [s for s in c.statements if every or s.status != "covered"]
        out += [f"{heading} {c.title}", "", f"{sources(c, code='`')}: {_tally(c)}.", ""]
        if c.derived_rules:
            rules = ", ".join(rule(r) for r in c.derived_rules)
            out += [f"Rules that {DERIVED}: {rules}.", ""]
        if not shown:
            out += ["Every statement is covered.", ""]
            continue
        out += ["| status | section | statement | rules | what is missing, or why |", "|---|---|---|---|---|"]
        for s in shown:
            rules = ", ".join(rule(r) for r in s.rules)
            section = _cell(s.section) if len(c.sources) == 1 else f"`{os.path.basename(s.source)}`: {_cell(s.section)}"
            out.append(f"| {LABELS[s.status]} | {section} | {_cell(s.text)} | {rules} | {_cell(_why(s))} |")
        out.append("")
    return "\n".join(out)


def _slug(title: str) -> str:
    """The anchor GitHub and Python-Markdown's toc both give a heading."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title.lower())).strip("-")


def _cell(text: str) -> str:
    """Text for a table cell: pipes escaped; outside code spans, Markdown's own characters too."""
    parts = re.split(r"(`+[^`]*?`+)", text)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"([\\*_\[\]])", r"\\\1", parts[i]).replace("<", "&lt;")
    return "".join(parts).replace("|", "\\|")
