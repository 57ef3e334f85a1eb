"""Render the metadata benchmark (bench/results/metadata-latest.json) as markdown tables and a plot.

    python bench/metadata_report.py [RESULTS.json] [--print]

Replaces each block between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in docs/performance.md (NAME:
metadata-local, metadata-scaling, metadata-remote, metadata-targets, metadata-machine) and writes
docs/performance-metadata.png. `--print` writes the markdown to stdout instead.
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
from pathlib import Path

from report import _num, machine_block, replace_blocks  # bench/report.py: the array benchmark's, the same blocks

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "performance.md"
PNG = HERE.parent / "docs" / "performance-metadata.png"
LATEST = HERE / "results" / "metadata-latest.json"

# The acceptance targets of the metadata issue.
TARGET_CASES = ("obs-4000", "uns-5000")  # the wide files the floor, anndata and memory targets name
FLOOR_RATIO_MAX = {"h5ad": 1.3, "zarr2": 1.5, "zarr3": 1.5}  # spec-validate / the floor of FLOOR_OF
# The floor each target is against: h5py reading every attribute value; for Zarr the floor that does a
# validation's reads (folders listed, documents parsed, the scanned arrays' chunks decoded).
FLOOR_OF = {"h5ad": "floor", "zarr2": "same-work floor", "zarr3": "same-work floor"}
ANNDATA_SPEEDUP_MIN = {"h5ad": 2.0, "zarr2": 5.0, "zarr3": 5.0}  # anndata / spec-validate
PEAK_RSS_MB_MAX = 150.0
REMOTE_WIDE_S_MAX = 10.0  # the 1,000-column store over HTTP, consolidated or not
REMOTE_OVER_LOCAL_MAX = 2.0  # the 5e7-value Zarr stores
ROOT_PROBES = 5  # root documents asked for before the format is known; those absent are requests for no document
FLAT_FROM_NODES = 1_000  # per-node costs compared from this size up
FLAT_RATIO_MAX = 1.5  # "flat": the largest per-node cost at most this many times the smallest
FORMATS = ("h5ad", "zarr2", "zarr3")
CASE_ORDER = ("obs-10", "obs-100", "obs-1000", "obs-4000", "obs-18000", "uns-5000", "arrays-5000")


def _rows(doc: dict, group: str | None = None) -> list[dict]:
    return [r for r in doc["summary"] if group is None or r["group"] == group]


def _index(doc: dict) -> dict[tuple, dict]:
    return {(r["case"], r["format"], r.get("variant"), r["tool"]): r for r in doc["summary"] if r["group"] != "remote"}


def _case_key(case: str) -> tuple:
    return (CASE_ORDER.index(case) if case in CASE_ORDER else len(CASE_ORDER), case)


def local_table(doc: dict) -> str:
    index = _index(doc)
    cases = sorted(
        {(r["case"], r["format"]) for r in doc["summary"] if r["group"] in ("local", "scaling")},
        key=lambda cf: (FORMATS.index(cf[1]) if cf[1] in FORMATS else 9, _case_key(cf[0])),
    )
    lines = [
        "| format | file | nodes | floor (s) | same-work floor (s) | anndata (s) | spec-validate (s) | spec-validate / floor "
        "| spec-validate / same-work floor | anndata / spec-validate | peak RSS: floor / anndata / spec-validate (MB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case, fmt in cases:
        fl, sw, an, sv = (index.get((case, fmt, None, t)) for t in ("floor", "same-work floor", "anndata", "spec-validate"))
        med = lambda r: r["median_s"] if r else None  # noqa: E731
        rss = " / ".join(f"{r['peak_rss_mb']:.0f}" if r else "-" for r in (fl, an, sv))
        bad = f" (exit {', '.join(map(str, sv['bad_exit']))})" if sv and sv["bad_exit"] else ""
        bad += " ¹" if sv and 1 in sv.get("exit", ()) else ""
        ratio = med(sv) / med(fl) if sv and fl else None
        same_work = med(sv) / med(sw) if sv and sw else None
        speedup = med(an) / med(sv) if sv and an else None
        lines.append(
            f"| {fmt} | {case}{bad} | {fl.get('objects', '') if fl else ''} | {_num(med(fl))} | {_num(med(sw))} "
            f"| {_num(med(an))} | {_num(med(sv))} | {_num(ratio)} | {_num(same_work)} | {_num(speedup, 1)} | {rss} |"
        )
    return "\n".join(lines)


def scaling(doc: dict) -> dict[str, list[dict]]:
    """Per format, the obs-N files by node count: spec-validate's wall time, CPU time and peak RSS, and CPU time and
    memory per node above the smallest file (CPU time: the machine's other load moves wall times, not it)."""
    index = _index(doc)
    out: dict[str, list[dict]] = {}
    for fmt in FORMATS:
        points = []
        for case in CASE_ORDER:
            if not case.startswith("obs-"):
                continue
            fl, sv = index.get((case, fmt, None, "floor")), index.get((case, fmt, None, "spec-validate"))
            if fl and sv and "objects" in fl:
                points.append({"case": case, "nodes": fl["objects"], "sv_s": sv["median_s"], "sv_cpu_s": sv["median_cpu_s"],
                               "sv_mb": sv["peak_rss_mb"], "floor_s": fl["median_s"], "floor_cpu_s": fl["median_cpu_s"],
                               "floor_mb": fl["peak_rss_mb"]})  # fmt: skip
        points.sort(key=lambda p: p["nodes"])
        if points:
            base = points[0]
            for p in points[1:]:
                extra = p["nodes"] - base["nodes"]
                p["us_per_node"] = (p["sv_cpu_s"] - base["sv_cpu_s"]) / extra * 1e6
                p["kb_per_node"] = (p["sv_mb"] - base["sv_mb"]) / extra * 1e3
                p["floor_us_per_node"] = (p["floor_cpu_s"] - base["floor_cpu_s"]) / extra * 1e6
            out[fmt] = points
    return out


def scaling_table(doc: dict) -> str:
    lines = [
        "| format | file | nodes | spec-validate: wall (s) | CPU (s) | peak RSS (MB) | CPU per node above obs-10 (µs) "
        "| memory per node above obs-10 (KB) | floor: CPU per node (µs) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, points in scaling(doc).items():
        for p in points:
            lines.append(
                f"| {fmt} | {p['case']} | {p['nodes']} | {p['sv_s']:.2f} | {p['sv_cpu_s']:.2f} | {p['sv_mb']:.0f} "
                f"| {_num(p.get('us_per_node'), 0)} | {_num(p.get('kb_per_node'), 1)} | {_num(p.get('floor_us_per_node'), 0)} |"
            )
    return "\n".join(lines)


def _remote_rows(doc: dict) -> list[tuple[dict, dict | None, dict]]:
    """(remote row, local row or None, the store's counts) for each remote measurement."""
    rows = _rows(doc, "remote")
    out = []
    for r in rows:
        if r["tool"] != "remote":
            continue
        local = next((x for x in rows if x["tool"] == "local" and x["case"] == r["case"] and x["format"] == r["format"]), None)
        key = f"{r['case']}-{r['format']}" + ("-unconsolidated" if r["variant"] == "unconsolidated" else "")
        out.append((r, local, doc.get("stores", {}).get(key, {})))
    return out


def remote_table(doc: dict) -> str:
    latency = doc.get("config", {}).get("latency_s")
    lines = [
        f"| store | metadata | local (s) | over HTTP, {latency * 1e3:.0f} ms a request (s) | HTTP / local | listings | documents "
        "asked / stored | chunks asked / needed | other | all requests | most in flight |"
        if latency
        else "| store | metadata | local (s) | over HTTP (s) | HTTP / local | listings | documents asked / stored | chunks asked / needed "
        "| other | all requests | most in flight |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r, local, store in _remote_rows(doc):
        req = r.get("requests", {})
        counts = req.get("counts", {})
        ratio = r["median_s"] / local["median_s"] if local else None
        docs = f"{counts.get('document', '')} / {store.get('documents', '')}" if store else str(counts.get("document", ""))
        chunks = f"{counts.get('other', 0)} / {store.get('chunks_needed', '')}" if store else ""
        other = str(counts.get("range", 0) + (0 if store else counts.get("other", 0)))
        lines.append(
            f"| {r['case']}-{r['format']} | {r['variant']} | {_num(local['median_s'] if local else None)} | {r['median_s']:.2f} "
            f"| {_num(ratio)} | {counts.get('listing', '')} | {docs} | {chunks} | {other} | {req.get('total', '')} | {req.get('peak', '')} |"
        )
    return "\n".join(lines)


def targets(doc: dict) -> list[dict]:
    """Each acceptance target with its measured value and whether it is met."""
    out: list[dict] = []
    index = _index(doc)

    def add(target: str, where: str, value: float | None, limit: float, holds, shown: str | None = None) -> None:
        met = None if value is None else bool(holds(value, limit))
        out.append(
            {
                "target": target,
                "where": where,
                "value": value,
                "limit": limit,
                "met": met,
                "shown": shown if shown is not None else _num(value),
            }
        )

    for fmt in FORMATS:
        for case in TARGET_CASES:
            fl, an, sv = (index.get((case, fmt, None, t)) for t in (FLOOR_OF[fmt], "anndata", "spec-validate"))
            if sv is None:
                continue
            where = f"{fmt} {case}"
            add(
                f"spec-validate / {FLOOR_OF[fmt]} <= {FLOOR_RATIO_MAX[fmt]}",
                where,
                sv["median_s"] / fl["median_s"] if fl else None,
                FLOOR_RATIO_MAX[fmt],
                operator.le,
            )
            add(
                f"anndata / spec-validate >= {ANNDATA_SPEEDUP_MIN[fmt]:g}",
                where,
                an["median_s"] / sv["median_s"] if an else None,
                ANNDATA_SPEEDUP_MIN[fmt],
                operator.ge,
            )
            add(
                f"peak RSS < {PEAK_RSS_MB_MAX:g} MB",
                where,
                sv["peak_rss_mb"],
                PEAK_RSS_MB_MAX,
                operator.lt,
                f"{sv['peak_rss_mb']:.0f} MB",
            )
    for r, local, store in _remote_rows(doc):
        where = f"{r['case']}-{r['format']} ({r['variant']})"
        if local is None:
            add(
                f"over HTTP with latency < {REMOTE_WIDE_S_MAX:g} s",
                where,
                r["median_s"],
                REMOTE_WIDE_S_MAX,
                operator.lt,
                f"{r['median_s']:.1f} s",
            )
        elif r["format"] != "h5ad":
            add(
                f"over HTTP with latency <= {REMOTE_OVER_LOCAL_MAX:g}x local",
                where,
                r["median_s"] / local["median_s"],
                REMOTE_OVER_LOCAL_MAX,
                operator.le,
            )
        if store and r["variant"] != "unconsolidated":
            # Requests beyond one per stored document (plus the root documents probed) and one per chunk needed.
            bound = store["documents"] + ROOT_PROBES + store["chunks_needed"]
            asked = r["requests"]["total"]
            add(
                "requests <= one per metadata document + one per chunk needed",
                where,
                asked / bound,
                1.0,
                operator.le,
                f"{asked} of at most {bound}",
            )
    for fmt, points in scaling(doc).items():
        # From 1,000 columns up: below, a file adds too few nodes to the 10-column one for a per-node figure.
        large = [p for p in points if "us_per_node" in p and p["nodes"] >= FLAT_FROM_NODES]
        if len(large) >= 2:
            for what, key in (("CPU time", "us_per_node"), ("memory", "kb_per_node")):
                values = [p[key] for p in large]
                where = f"{fmt}, {large[0]['nodes']:,} to {large[-1]['nodes']:,} nodes"
                add(f"{what} per node flat: largest / smallest <= {FLAT_RATIO_MAX}", where, max(values) / min(values),
                    FLAT_RATIO_MAX, operator.le)  # fmt: skip
    return out


def targets_table(doc: dict) -> str:
    lines = ["| target | where | measured | met |", "|---|---|---:|---|"]
    for t in targets(doc):
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        lines.append(f"| {t['target']} | {t['where']} | {t['shown']} | {met} |")
    return "\n".join(lines)


BLOCKS = {
    "metadata-local": local_table,
    "metadata-scaling": scaling_table,
    "metadata-remote": remote_table,
    "metadata-targets": targets_table,
    "metadata-machine": machine_block,
}


def render(doc: dict) -> dict[str, str]:
    return {name: fn(doc) for name, fn in BLOCKS.items()}


def update_doc(doc: dict, path: Path = DOC) -> None:
    """Replace the metadata blocks of `path` (docs/performance.md); the array benchmark's blocks stay."""
    replace_blocks(path, render(doc))


STYLE = {"h5ad": ("tab:blue", "o"), "zarr2": ("tab:orange", "s"), "zarr3": ("tab:green", "^")}


def plot(doc: dict, out: Path = PNG) -> None:
    """Wall time and peak RSS against nodes (spec-validate and the floor), and both per node above the smallest file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    data = scaling(doc)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    (time_ax, rss_ax), (per_time_ax, per_rss_ax) = axes
    for fmt, points in data.items():
        colour, marker = STYLE.get(fmt, ("black", "x"))
        nodes = [p["nodes"] for p in points]
        time_ax.plot(nodes, [p["sv_s"] for p in points], color=colour, marker=marker, label=f"spec-validate {fmt}")
        time_ax.plot(
            nodes, [p["floor_s"] for p in points], color=colour, marker=marker, linestyle="--", alpha=0.6, label=f"floor {fmt}"
        )
        rss_ax.plot(nodes, [p["sv_mb"] for p in points], color=colour, marker=marker, label=f"spec-validate {fmt}")
        rss_ax.plot(
            nodes, [p["floor_mb"] for p in points], color=colour, marker=marker, linestyle="--", alpha=0.6, label=f"floor {fmt}"
        )
        above = [p for p in points if "us_per_node" in p]
        per_time_ax.plot(
            [p["nodes"] for p in above],
            [p["us_per_node"] for p in above],
            color=colour,
            marker=marker,
            label=f"spec-validate {fmt}",
        )
        per_time_ax.plot(
            [p["nodes"] for p in above],
            [p["floor_us_per_node"] for p in above],
            color=colour,
            marker=marker,
            linestyle="--",
            alpha=0.6,
            label=f"floor {fmt}",
        )
        per_rss_ax.plot(
            [p["nodes"] for p in above],
            [p["kb_per_node"] for p in above],
            color=colour,
            marker=marker,
            label=f"spec-validate {fmt}",
        )
    for ax, title, ylabel, log_y in (
        (time_ax, "whole-process wall time", "median wall time (s)", True),
        (rss_ax, "peak RSS", "peak RSS (MB)", True),
        (per_time_ax, "CPU time per node, above the 10-column file", "µs per node", False),
        (per_rss_ax, "memory per node, above the 10-column file", "KB per node", False),
    ):
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_formatter(plain)
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("nodes (obs with 10 to 18,000 columns)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    time_ax.legend(fontsize="x-small", ncol=2)
    per_rss_ax.legend(fontsize="x-small")
    m = doc.get("machine", {})
    fig.suptitle(
        f"Metadata: spec-validate {m.get('versions', {}).get('spec-validate')} against the metadata floor\n"
        f"{m.get('cpu')}, {m.get('cores')} cores; median of {doc.get('config', {}).get('reps')} runs",
        fontsize="small",
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


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
        plot(doc)
        print(f"updated {DOC} and {PNG}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
