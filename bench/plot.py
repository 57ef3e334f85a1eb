"""Plot median wall time against stored values (log-log), one panel per format: docs/performance.png.

python bench/plot.py [RESULTS.json] [-o docs/performance.png]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PNG = HERE.parent / "docs" / "performance.png"
LATEST = HERE / "results" / "latest.json"
FORMAT_ORDER = ("h5ad", "h5ad-gzip", "zarr2", "zarr3")
STYLE = {"floor": ("tab:gray", "s", "--"), "anndata": ("tab:orange", "^", "-"), "spec-validate": ("tab:blue", "o", "-")}


def plot(doc: dict, out: Path = PNG) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    rows = [r for r in doc["summary"] if r["group"] == "file"]
    formats = [f for f in FORMAT_ORDER if any(r["format"] == f for r in rows)]
    formats += sorted({r["format"] for r in rows} - set(formats))
    baseline = next((r["median_s"] for r in doc["summary"] if r["group"] == "startup" and r["tool"].startswith("python")), None)
    cols = 2 if len(formats) > 1 else 1
    nrows = max(1, -(-len(formats) // cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.6 * nrows), sharex=True, sharey=True, squeeze=False)
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for ax, fmt in zip(axes.flat, formats, strict=True):
        for tool, (colour, marker, line) in STYLE.items():
            pts = sorted((r["stored_values"], r["median_s"]) for r in rows if r["format"] == fmt and r["tool"] == tool)
            if pts:
                ax.plot(*zip(*pts, strict=True), color=colour, marker=marker, linestyle=line, label=tool)
        if baseline is not None:
            ax.axhline(baseline, color="black", linestyle=":", linewidth=1, label='python -c "import numpy, h5py"')
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(fmt)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.flat[len(formats) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("stored values (nnz of X)")
    for ax in axes[:, 0]:
        ax.set_ylabel("median wall time (s)")
    axes[0][0].legend(loc="upper left", fontsize="small")
    m = doc.get("machine", {})
    fig.suptitle(
        f"Whole-process wall time: spec-validate {m.get('versions', {}).get('spec-validate')}, the read floor and anndata\n"
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
    parser.add_argument("-o", "--output", type=Path, default=PNG)
    args = parser.parse_args(argv)
    plot(json.loads(args.results.read_text()), args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
