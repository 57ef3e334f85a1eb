"""Render the benchmark results (bench/results/latest.json) as markdown and regenerate docs/performance.md.

    python bench/report.py [RESULTS.json] [--print]

Replaces each block between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in docs/performance.md
(NAME: results, startup, targets, machine) with tables rendered from the JSON; text outside the markers is
left as written. `--print` writes the markdown to stdout instead.
"""

from __future__ import annotations

import argparse
import json
import operator
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "performance.md"
LATEST = HERE / "results" / "latest.json"

FLOOR_RATIO_MAX = 1.3  # spec-validate median / floor median
ANNDATA_SPEEDUP_MIN = 5.0  # anndata median / spec-validate median, uncompressed h5ad
PEAK_RSS_MB_MAX = 500.0
STARTUP_RATIO_MAX = 1.5  # spec-validate / `python -c "import numpy, h5py"`
TARGET_SIZES = ("5e7", "2e8")  # the throughput targets apply from 5e7 stored values up
FORMAT_ORDER = ("h5ad", "h5ad-gzip", "zarr2", "zarr3")
TOOL_ORDER = ("floor", "anndata", "spec-validate")
STARTUP_ORDER = (
    "python -c 'import numpy, h5py'",
    "spec-validate --version",
    "spec-validate small file",
    "spec-validate small file, empty pack cache",
    "spec-validate small file, pack cache off",
)  # bench/run.py STARTUP_TOOLS
STARTUP_TARGETS = STARTUP_ORDER[1:3]  # the runs with an empty cache or none are shown, not held to the target


def _num(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def sort_key(row: dict) -> tuple:
    """Formats, then sizes, then tools, in a fixed order (startup rows: in STARTUP order)."""
    if row["group"] == "startup":
        return (0, 0, STARTUP_ORDER.index(row["tool"]) if row["tool"] in STARTUP_ORDER else len(STARTUP_ORDER))
    fmt = FORMAT_ORDER.index(row["format"]) if row["format"] in FORMAT_ORDER else len(FORMAT_ORDER)
    tool = TOOL_ORDER.index(row["tool"]) if row["tool"] in TOOL_ORDER else len(TOOL_ORDER)
    return (fmt, row["stored_values"] or 0, tool)


def results_table(doc: dict) -> str:
    rows = sorted((r for r in doc["summary"] if r["group"] == "file"), key=sort_key)
    lines = [
        "| format | stored values | tool | min (s) | median (s) | floor: open + read only (s) | peak RSS (MB) | spec-validate / floor | anndata / spec-validate |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        bad = f" (exit {', '.join(map(str, r['bad_exit']))})" if r.get("bad_exit") else ""
        lines.append(
            f"| {r['format']} | {r['size']} | {r['tool']}{bad} | {r['min_s']:.3f} | {r['median_s']:.3f} | {_num(r.get('median_read_s'), 3)} | {r['peak_rss_mb']:.0f} "
            f"| {_num(r.get('sv_over_floor'))} | {_num(r.get('anndata_over_sv'), 1)} |"
        )
    return "\n".join(lines)


def startup_table(doc: dict) -> str:
    rows = sorted((r for r in doc["summary"] if r["group"] == "startup"), key=sort_key)
    base = next((r for r in rows if r["tool"].startswith("python")), None)
    lines = ['| command | min (s) | median (s) | peak RSS (MB) | / python -c "import numpy, h5py" |', "|---|---:|---:|---:|---:|"]
    for r in rows:
        ratio = r["median_s"] / base["median_s"] if base else None
        lines.append(f"| `{r['tool']}` | {r['min_s']:.3f} | {r['median_s']:.3f} | {r['peak_rss_mb']:.0f} | {_num(ratio)} |")
    return "\n".join(lines)


def targets(doc: dict) -> list[dict]:
    """Each acceptance target with its measured value and whether it is met."""
    rows = doc["summary"]
    out = []

    def add(target: str, where: str, value: float | None, limit: float, holds) -> None:
        met = None if value is None else bool(holds(value, limit))
        out.append({"target": target, "where": where, "value": value, "limit": limit, "met": met})

    for r in sorted((r for r in rows if r["group"] == "file" and r["tool"] == "spec-validate"), key=sort_key):
        where = f"{r['format']} {r['size']}"
        if r["size"] in TARGET_SIZES:
            add(f"spec-validate / floor <= {FLOOR_RATIO_MAX}", where, r.get("sv_over_floor"), FLOOR_RATIO_MAX, operator.le)
            if r["format"] == "h5ad":
                add(
                    f"anndata / spec-validate >= {ANNDATA_SPEEDUP_MIN:g}",
                    where,
                    r.get("anndata_over_sv"),
                    ANNDATA_SPEEDUP_MIN,
                    operator.ge,
                )
        add(f"peak RSS < {PEAK_RSS_MB_MAX:g} MB", where, r["peak_rss_mb"], PEAK_RSS_MB_MAX, operator.lt)
    startup = {r["tool"]: r for r in rows if r["group"] == "startup"}
    base = startup.get(STARTUP_ORDER[0])
    for name in STARTUP_TARGETS:
        r = startup.get(name)
        if base is not None and r is not None:
            add(
                f'startup <= {STARTUP_RATIO_MAX}x `python -c "import numpy, h5py"`',
                f"`{name}`",
                r["median_s"] / base["median_s"],
                STARTUP_RATIO_MAX,
                operator.le,
            )
    return out


def targets_table(doc: dict) -> str:
    lines = ["| target | where | measured | met |", "|---|---|---:|---|"]
    for t in targets(doc):
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        value = "" if t["value"] is None else (f"{t['value']:.0f} MB" if "RSS" in t["target"] else f"{t['value']:.2f}")
        lines.append(f"| {t['target']} | {t['where']} | {value} | {met} |")
    return "\n".join(lines)


def machine_block(doc: dict) -> str:
    m = doc["machine"]
    v = m.get("versions", {})
    commit = (m.get("git_commit") or "unknown")[:12] + (" (with uncommitted changes)" if m.get("git_dirty") else "")
    load = lambda xs: ", ".join(f"{x:.2f}" for x in xs) if xs else "?"  # noqa: E731
    cfg = doc.get("config", {})
    startup = f", start-up commands timed {cfg['startup_rounds']} times in each" if cfg.get("startup_rounds") else ""
    return "\n".join(
        [
            f"- CPU: {m.get('cpu')}; {m.get('cores')} cores ({m.get('usable_cores')} usable); {m.get('memory_gib')} GiB RAM",
            f"- OS: {m.get('os')}; Python {m.get('python')}",
            "- " + ", ".join(f"{name} {ver}" for name, ver in v.items() if ver),
            f"- spec-validate commit {commit}",
            f"- run {doc.get('started')} to {doc.get('finished')}; {cfg.get('reps')} timed repetitions after {cfg.get('warmup')} warm-up round(s)"
            f"{startup}; "
            f"load average {load(m.get('load_average_start'))} at the start, {load(m.get('load_average_end'))} at the end",
        ]
    )


BLOCKS = {"results": results_table, "startup": startup_table, "targets": targets_table, "machine": machine_block}


def render(doc: dict) -> dict[str, str]:
    return {name: fn(doc) for name, fn in BLOCKS.items()}


def update_doc(doc: dict, path: Path = DOC) -> None:
    """Replace the generated blocks of `path` with this benchmark's."""
    replace_blocks(path, render(doc))


def replace_blocks(path: Path, blocks: dict[str, str]) -> None:
    """Replace each `<!-- bench:NAME -->` ... `<!-- /bench:NAME -->` block of `path` with `blocks[NAME]`; a block
    whose markers are missing is an error."""
    text = path.read_text()
    for name, body in blocks.items():
        pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"{path}: no <!-- bench:{name} --> ... <!-- /bench:{name} --> block")
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=LATEST)
    parser.add_argument("--print", action="store_true", help="print the markdown instead of updating docs/performance.md")
    args = parser.parse_args(argv)
    doc = json.loads(args.results.read_text())
    if args.print:
        for name, body in render(doc).items():
            print(f"## {name}\n\n{body}\n")
    else:
        update_doc(doc)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
