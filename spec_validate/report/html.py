"""A self-contained HTML report for people who read rather than parse: one file, no network, filters by level and
status, failures first with the clause, node path and offending values, and links to each rule's page."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Sequence
from typing import Any

from spec_validate.excerpt import cut
from spec_validate.model import ClauseResult, Finding, Level, Report, Status
from spec_validate.report import readers
from spec_validate.report.baseline import Baseline, located
from spec_validate.report.formats import output_format
from spec_validate.report.links import explain_command, rule_page
from spec_validate.report.options import RenderOptions
from spec_validate.report.text import pack_list
from spec_validate.report.verdict import CONFORMS, Verdict, legacy_checks, reader_gate, sentence, verdict

# The order a clause is shown in, within an input: what needs reading first comes first.
STATUS_ORDER = {
    "failed": 0,
    "error": 1,
    "baseline": 2,
    "not-checked": 3,
    "partly-checked": 4,
    "notice": 5,
    "passed": 6,
    "not_applicable": 7,
}
STATUS_LABEL = {
    "failed": "FAILED",
    "error": "ERROR",
    "baseline": "BASELINE",
    "not-checked": "NOT CHECKED",  # none of the clause's nodes could be checked (needs --deep, not decoded, ...)
    "partly-checked": "PASSED, NOT ALL CHECKED",  # passed where checked; some nodes could not be
    "notice": "NOTICE",  # a `notice:` rule's findings (the hdmf-zarr pickle codec): reported, never a failure
    "passed": "passed",
    "not_applicable": "not applicable",
}
SHOWN_AT_FIRST = (
    "failed",
    "error",
    "baseline",
    "not-checked",
    "partly-checked",
    "notice",
)  # passed and not-applicable clauses: one click away

STYLE = """
:root { --must: #b3261e; --should: #8a5a00; --may: #0b6e99; --ok: #1b6e3a; --dim: #5f6368; --rule: #e0e0e0; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #202124;
       background: #fafafa; }
header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--rule); padding: .6rem 1.2rem; z-index: 1; }
h1 { font-size: 1.2rem; margin: 0 0 .3rem; }
fieldset { display: inline-block; border: 1px solid var(--rule); border-radius: 6px; margin: 0 .6rem .3rem 0;
           padding: .2rem .6rem; }
legend { font-size: .8rem; color: var(--dim); }
label { margin-right: .7rem; white-space: nowrap; }
main { padding: .6rem 1.2rem 2rem; }
section.input { background: #fff; border: 1px solid var(--rule); border-radius: 8px; margin: .8rem 0; padding: .6rem 1rem; }
section.input > h2 { font-size: 1.05rem; margin: .2rem 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace;
                     word-break: break-all; }
.verdict { font-weight: 600; margin: .2rem 0 .5rem; }
.verdict.fails { color: var(--must); } .verdict.conforms { color: var(--ok); } .verdict.other { color: var(--should); }
.meta, .section, .none-shown { color: var(--dim); font-size: .85rem; }
article.clause { border-top: 1px solid var(--rule); padding: .4rem 0; }
article.clause h3 { font-size: .95rem; margin: 0; font-weight: 600; }
.badge { display: inline-block; min-width: 6.5em; font-size: .75rem; padding: 0 .35em; border-radius: 4px;
         border: 1px solid currentColor; text-align: center; }
.s-failed, .s-error { color: var(--must); } .s-baseline, .s-not-checked, .s-partly-checked { color: var(--should); }
.s-passed { color: var(--ok); }
.s-not_applicable { color: var(--dim); } .s-notice { color: var(--may); }
.level { display: inline-block; min-width: 4.2em; font-weight: 700; }
.l-MUST { color: var(--must); } .l-SHOULD { color: var(--should); } .l-MAY { color: var(--may); }
blockquote { margin: .25rem 0 .25rem 1rem; padding-left: .6rem; border-left: 3px solid var(--rule); }
ul.findings { margin: .2rem 0; padding-left: 1.3rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .88em; background: #f1f3f4; padding: 0 .2em;
       border-radius: 3px; }
.values { color: var(--dim); font-size: .85rem; }
.known { color: var(--should); font-size: .8rem; }
details.context { margin-top: .5rem; }
.hidden { display: none !important; }
table { border-collapse: collapse; font-size: .88rem; }
th, td { text-align: left; vertical-align: top; padding: .15rem .6rem .15rem 0; border-bottom: 1px solid var(--rule); }
"""

SCRIPT = """
(function () {
  "use strict";
  var form = document.getElementById("filters");
  function wanted(name) {
    var on = {};
    form.querySelectorAll("input[name=" + name + "]").forEach(function (box) { on[box.value] = box.checked; });
    return on;
  }
  function apply() {
    var levels = wanted("level"), statuses = wanted("status"), shown = 0;
    document.querySelectorAll("section.input").forEach(function (section) {
      var here = 0;
      section.querySelectorAll("article.clause").forEach(function (clause) {
        var visible = levels[clause.dataset.level] && statuses[clause.dataset.status];
        clause.classList.toggle("hidden", !visible);
        if (visible) { here += 1; }
      });
      var none = section.querySelector(".none-shown");
      if (none) { none.classList.toggle("hidden", here > 0 || !section.querySelector("article.clause")); }
      shown += here;
    });
    document.getElementById("shown").textContent = shown + " clause(s) shown";
  }
  form.addEventListener("change", apply);
  apply();
}());
"""


@output_format("html")
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """The whole report as one HTML document: inline style and script, no request to anywhere (a CSP says so)."""
    fail_on, baseline, tool_version = options.fail_on, options.baseline, options.tool_version
    strict = options.fail_on_unchecked
    checked = [r for r in reports if r.skipped is None]
    skipped = [r for r in reports if r.skipped is not None]
    counts = _counts(checked, baseline)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # No network: nothing but this file's own style and script may load.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>spec-validate report: {_e(_title(reports))}</title>",
        f"<style>{STYLE}</style></head><body>",
        "<header>",
        f'<h1>spec-validate report</h1><p class="meta">spec-validate {_e(tool_version)}; failing at --fail-on '
        f"{_e(fail_on.value.lower())} and stricter"
        + (" (and on clauses not checked, --fail-on-unchecked)" if strict else "")
        + f"; {len(checked)} input(s)"
        + (f", {len(skipped)} file(s) skipped" if skipped else "")
        + (", with a baseline" if baseline is not None else "")
        + "</p>",
        _filters(counts),
        "</header><main>",
        _overview(checked, fail_on, baseline, strict),
        _archive(reports, options) if len(checked) > 1 else "",
        *(_input(report, fail_on, baseline, i, options.docs_url, strict) for i, report in enumerate(checked)),
        _skipped(skipped),
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _title(reports: Sequence[Report]) -> str:
    names = [r.name for r in reports if r.skipped is None]
    return names[0] if len(names) == 1 else f"{len(names)} inputs"


def _filters(counts: dict[str, dict[str, int]]) -> str:
    """Checkboxes for each level and each status, with how many clauses each has."""
    levels = "".join(
        f'<label><input type="checkbox" name="level" value="{lvl}" checked> <span class="level l-{lvl}">{lvl}</span> '
        f"({counts['level'].get(lvl, 0)})</label>"
        for lvl in ("MUST", "SHOULD", "MAY")
    )
    statuses = "".join(
        f'<label><input type="checkbox" name="status" value="{s}"{" checked" if s in SHOWN_AT_FIRST else ""}> '
        f"{_e(STATUS_LABEL[s])} ({counts['status'].get(s, 0)})</label>"
        for s in STATUS_ORDER
    )
    return (
        f'<form id="filters"><fieldset><legend>Level</legend>{levels}</fieldset>'
        f'<fieldset><legend>Status</legend>{statuses}</fieldset> <span id="shown" class="meta"></span></form>'
    )


def _counts(reports: Sequence[Report], baseline: Baseline | None) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {"level": {}, "status": {}}
    for report in reports:
        known = _known(report, baseline)
        for r in report.results:
            out["level"][r.rule.level.value] = out["level"].get(r.rule.level.value, 0) + 1
            status = _status(r, known)
            out["status"][status] = out["status"].get(status, 0) + 1
    return out


Known = dict[tuple[int, str], bool]  # (id of a failing clause result, node path) -> the baseline holds it


def _known(report: Report, baseline: Baseline | None) -> Known:
    if baseline is None:
        return {}
    return {(id(item.result), item.path): baseline.is_known(item) for item in located(report) if item.result is not None}


def _status(r: ClauseResult, known: Known) -> str:
    """The clause's status as the filters name it: a failure the baseline holds entirely is `baseline`; a clause
    checked on none of its nodes is `not-checked`, one that passed where it could check is `partly-checked`."""
    mine = [k for (owner, _), k in known.items() if owner == id(r)]
    if r.status in (Status.FAILED, Status.ERROR) and mine and all(mine):
        return "baseline"
    if r.status is Status.NOT_CHECKED:
        return "not-checked"
    if r.status is Status.PASSED and r.unchecked:
        return "partly-checked"
    return r.status.value


def _overview(reports: Sequence[Report], fail_on: Level, baseline: Baseline | None, strict: bool = False) -> str:
    """Several inputs: one line each, its outcome linking to its section."""
    if len(reports) < 2:
        return ""
    rows = []
    for i, report in enumerate(reports):
        v = verdict(report, fail_on, baseline, strict)
        rows.append(
            f'<li><a href="#input-{i}"><code>{_e(report.name)}</code></a>: '
            f'<span class="verdict {_verdict_class(v)}">{_e(v.describe() if report.error is None else v.outcome)}</span></li>'
        )
    return f'<section class="input overview"><h2>Inputs</h2><ul>{"".join(rows)}</ul></section>'


def _archive(reports: Sequence[Report], options: RenderOptions) -> str:
    """Several inputs: per pack and rule, how many inputs fail it and the first of them, at or above --fail-on
    first (report/archive.py)."""
    from spec_validate.report.json import archive_summary

    summary = archive_summary(reports, options)
    fail_on = summary["fail_on"].lower()
    heading = '<section class="input archive"><h2>Failing inputs per rule</h2>'
    if not summary["rules"]:
        return f'{heading}<p class="meta">No rule fails on any input.</p></section>'
    rows = []
    for r in summary["rules"]:
        names = ", ".join(f"<code>{_e(name)}</code>" for name in r["first"])
        more = r["inputs"] - len(r["first"])
        names += f" and {more} more" if more else ""
        where = "at or above" if r["at_fail_on"] else "below (fails nothing)"
        rows.append(
            f'<tr data-at-fail-on="{str(r["at_fail_on"]).lower()}"><td><span class="level l-{_e(r["level"])}">'
            f"{_e(r['level'])}</span></td><td>{_e(where)}</td><td><code>{_e(r['rule'])}</code></td>"
            f"<td>{_e(r['pack'] or '')}</td><td>{r['inputs']}</td><td>{names}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("level", f"--fail-on {_e(fail_on)}", "rule", "pack", "inputs", "first inputs"))
    return f"{heading}<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"


def _input(
    report: Report,
    fail_on: Level,
    baseline: Baseline | None,
    number: int = 0,
    docs_url: str | None = None,
    strict: bool = False,
) -> str:
    """One input: its name, the verdict line, what it is, then its clauses, failures first."""
    v = verdict(report, fail_on, baseline, strict)
    head = f'<section class="input" id="input-{number}" data-outcome="{_e(v.outcome)}"><h2>{_e(report.name)}</h2>'
    said = sentence(report, v, fail_on) if report.error is None else f"error: {report.error}"
    line = f'<p class="verdict {_verdict_class(v)}">{_e(said)}</p>'
    if report.error is not None:
        return head + line + "</section>"
    packs = pack_list(report)
    about = report.provenance.describe() if report.provenance is not None else ""  # the eras and likely writers
    meta = f"{report.format}; {packs or 'no pack applies'}" + (f"; {about}" if about else "")
    body = [head, line, f'<p class="meta">{_e(meta)}</p>']
    for problem in report.problems:
        body.append(
            f'<p class="s-failed"><span class="badge s-failed">UNREADABLE</span> <code>{_e(problem.key)}</code>: '
            f"{_e(problem.message)}</p>"
        )
    for lv in report.legacy:  # one verdict standing for the clauses of a scope that depend on its era
        more = "" if lv.clauses_checked else f" {legacy_checks(report, lv)}."
        body.append(
            f'<p class="s-failed"><span class="badge s-failed">LEGACY</span> <code>{_e(lv.id)}</code> at '
            f"<code>{_e(lv.path)}</code>: {_e(lv.era)}: {_e(lv.message)}{_e(more)}</p>"
        )
    body.extend(_readers(report))
    known = _known(report, baseline)
    ordered = sorted(report.results, key=lambda r: (STATUS_ORDER[_status(r, known)], -r.rule.level.rank, r.rule.id))
    body.extend(
        _clause(r, _status(r, known), {path for (owner, path), k in known.items() if owner == id(r) and k}, docs_url)
        for r in ordered
    )
    if report.results:
        body.append('<p class="none-shown hidden">No clause of this input matches the filters.</p>')
    if report.context:
        body.append(
            f'<details class="context"><summary>Clauses failing on the ancestors of <code>{_e(report.node)}</code> '
            f"(context, not counted)</summary>"
        )
        body.extend(_clause(r, "context", set(), docs_url) for r in report.context)
        body.append("</details>")
    body.append("</section>")
    return "\n".join(body)


def _readers(report: Report) -> list[str]:
    """The reader verdicts (--readers) as a table, then the reader gate's misses (exit code 3)."""
    rows = readers.table_rows(report)
    if not rows and not (report.readers and report.readers.required):
        return []
    fmt = report.readers.format if report.readers else None
    out = [f'<table class="readers"><caption>Readers ({_e(fmt or "no measured format")})</caption>']
    out.append("<tr><th>Reader</th><th>Versions</th><th>Verdict</th><th>Why</th></tr>")
    out.extend(f"<tr><td>{_e(r)}</td><td>{_e(v)}</td><td>{_e(said)}</td><td>{_e(why)}</td></tr>" for r, v, said, why in rows)
    out.append("</table>")
    badge = '<span class="badge s-failed">READER GATE</span>'
    out.extend(f'<p class="s-failed">{badge} {_e(m.message)}</p>' for m in reader_gate(report))
    return out


def _verdict_class(v: Verdict) -> str:
    return "fails" if v.fails else "conforms" if v.outcome == CONFORMS else "other"


def _clause(r: ClauseResult, status: str, known: set[str], docs_url: str | None = None) -> str:
    """One clause: status, level and linked id; the quoted clause and its section; findings with their values."""
    rule = r.rule
    level = rule.level.value
    tags = " (derived)" if rule.derived else ""
    if rule.spec_level is not rule.level:
        tags += f" (spec: {rule.spec_level.value})"
    shown_status = r.status.value if status == "context" else status
    attrs = f'data-level="{level}" data-status="{_e(shown_status)}"' if status != "context" else 'data-context="1"'
    label = STATUS_LABEL.get(shown_status, shown_status)
    # Only the built-in rules have a page on the documentation site (where --docs-url names one; else the page
    # --explain prints, shipped with the tool); a rule of the user's own pack has none.
    page = rule_page(rule.id, docs_url) if rule.builtin else None
    name = f'<a href="{_e(page)}">{_e(rule.id)}</a>' if page else _e(rule.id)
    explained = f" · <code>{_e(explain_command(rule.id))}</code>" if rule.builtin and not page else ""
    out = [
        f'<article class="clause" {attrs}><h3><span class="badge s-{_e(shown_status)}">{_e(label)}</span> '
        f'<span class="level l-{level}">{level}</span>{_e(tags)} {name}</h3>',
        f'<blockquote>{_e(rule.clause)}</blockquote><p class="section">{_e(rule.section)}{explained}</p>',
    ]
    if r.status is Status.ERROR:
        out.append(f"<p>error: {_e(r.reason or '')}</p>")
    elif r.status is Status.NOT_APPLICABLE and r.reason:
        out.append(f'<p class="meta">{_e(r.reason)}</p>')
    if r.findings:
        items = "".join(_finding(f, f.path in known and status != "baseline") for f in r.findings)
        more = f"<li>... and {r.finding_count - len(r.findings)} more</li>" if r.finding_count > len(r.findings) else ""
        out.append(f'<ul class="findings">{items}{more}</ul>')
    if r.status is Status.FAILED:  # the writer notes that describe a finding and fit the store
        out.extend(f'<p class="meta">note: {_e(w.label)}: {_e(w.note)}</p>' for w in r.writer_notes)
    if r.unchecked:
        rows = "".join(f"<li>not checked: <code>{_e(path)}</code>: {_e(reason)}</li>" for path, reason in r.unchecked)
        out.append(f'<ul class="findings">{rows}</ul>')
    out.append("</article>")
    return "\n".join(out)


def _finding(f: Finding, known: bool) -> str:
    where = f.path + (f"[{', '.join(map(str, f.index))}]" if f.index is not None else "")
    values = "".join(_values(f))
    mark = ' <span class="known">[baseline]</span>' if known else ""
    return f"<li><code>{_e(where)}</code>: {_e(f.message)}{mark}{values}</li>"


def _values(f: Finding) -> Iterator[str]:
    """The offending values the primitive recorded, as `key = value`."""
    if not f.details:
        return
    pairs = "; ".join(f"{k} = {_short(v)}" for k, v in f.details.items())
    yield f'<div class="values">{_e(pairs)}</div>'


def _short(value: Any, limit: int = 200) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, limit)


def _skipped(reports: Sequence[Report]) -> str:
    if not reports:
        return ""
    rows = "".join(f"<li><code>{_e(r.name)}</code>: {_e(r.skipped or '')}</li>" for r in reports)
    return f'<section class="input skipped"><h2>Skipped</h2><ul>{rows}</ul></section>'


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)
