"""Benchmark spec-validate on OME-Zarr HCS plates over HTTP with latency: wall time and requests per metadata document.

    python bench/ome_plate.py [--wells 96,384] [--versions 0.4,0.5] [--variants unconsolidated,consolidated]
                              [--reps 3] [--latency 0.02] [--no-local] [--before TREE]

1. Writes the plates not yet written, under bench/data/ome-plate/ (zarr-python 3, the OME metadata as ome-zarr-py
   writes it): 96 wells (8 x 12) or 384 (16 x 24), 4 fields of view per well, each a multiscale image of 3
   resolution levels (1x1x1x64x64, 32x32 and 16x16 uint16 in chunks of 32x32: 4, 1 and 1 chunks); OME-Zarr 0.4 on
   Zarr v2 and 0.5 on Zarr v3, each without consolidated metadata (as ome-zarr-py writes a plate) and with it at
   the root (`zarr.consolidate_metadata`).
2. Serves bench/data/ome-plate/ with tests/latency_server.py (its own process, `--latency` seconds before every
   answer) and runs `python -m spec_validate URL --format json` (the default flags) on each plate, then on the same
   plate locally, `--reps` times after one unrecorded round, each run a whole process (bench/launcher.py: its own
   peak RSS and CPU time). With `--before TREE` (a source tree of another commit: `git worktree add --detach
   /tmp/before COMMIT`) that tree runs too, in turn with this checkout on every plate of every round, so that
   both sides are measured under the same load.
3. Prints, per plate and tree: the median and the range of the wall time over HTTP, the client's CPU time, the
   median locally, the requests by kind as the server counts them (listings: two per folder, as obstore drops a
   folder URL's final "/" and follows the server's redirect; metadata documents, asked for against those stored;
   other keys: chunks), how many keys were asked for more than once, the most requests in flight, peak RSS, and
   the load average at the start and the end. Writes bench/results/ome-plate-<time>.json.

Figures, and how they were taken: docs/performance.md, "Remote OME-Zarr plates".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from metadata import DOCUMENTS, Server  # noqa: E402  (bench/ is not a package)
from run import Launcher, machine  # noqa: E402

DATA = HERE / "data" / "ome-plate"
RESULTS = HERE / "results"
FIELDS = 4  # fields of view per well
LEVELS = ((64, 64), (32, 32), (16, 16))  # y, x of each resolution level
CHUNK = (32, 32)
LAYOUTS = {"0.4": 2, "0.5": 3}  # OME-Zarr version -> Zarr format
PLATES = {96: (8, 12), 384: (16, 24)}  # wells -> rows, columns
VARIANTS = ("unconsolidated", "consolidated")


def row_names(rows: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(rows)]


def ome(version: str, doc: dict) -> dict:
    """Group attributes holding OME metadata `doc`: as they are (0.4, each object carrying its version) or in the
    `ome` object with the version once (0.5)."""
    if version == "0.4":
        return doc
    return {"ome": {"version": version, **doc}}


def multiscales(version: str) -> list[dict]:
    axes = [
        {"name": "t", "type": "time", "unit": "second"},
        {"name": "c", "type": "channel"},
        *({"name": n, "type": "space", "unit": "micrometer"} for n in "zyx"),
    ]
    datasets = [
        {"path": str(i), "coordinateTransformations": [{"type": "scale", "scale": [1.0, 1.0, 1.0, 2.0**i, 2.0**i]}]}
        for i in range(len(LEVELS))
    ]
    ms = {"name": "field", "axes": axes, "datasets": datasets, "type": "local_mean", "metadata": {"method": "bench"}}
    return [{"version": version, **ms} if version == "0.4" else ms]


def write_field(path: Path, version: str) -> None:
    """One field of view: a multiscale image group with its LEVELS arrays, written by zarr-python."""
    import numpy as np
    import zarr

    zarr_format = LAYOUTS[version]
    group = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    group.attrs.update(ome(version, {"multiscales": multiscales(version)}))
    for i, (y, x) in enumerate(LEVELS):
        extra: dict = (
            {"dimension_names": list("tczyx")} if zarr_format == 3 else {"chunk_key_encoding": {"name": "v2", "separator": "/"}}
        )
        array = group.create_array(str(i), shape=(1, 1, 1, y, x), chunks=(1, 1, 1, *CHUNK), dtype="uint16", **extra)
        array[...] = (np.arange(y * x, dtype="uint16") % 251 + 1).reshape(1, 1, 1, y, x)


def write_plate(path: Path, wells: int, version: str, consolidated: bool) -> None:
    """A plate of `wells` wells, FIELDS fields each; the fields are copies of one written by zarr-python."""
    import zarr

    rows, columns = PLATES[wells]
    zarr_format = LAYOUTS[version]
    tmp = path.with_name(f".partial-{path.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    template = tmp / ".field"
    write_field(template, version)
    names = row_names(rows)
    well_paths = [f"{r}/{c + 1}" for r in names for c in range(columns)]
    plate = {
        "name": "bench",
        "rows": [{"name": r} for r in names],
        "columns": [{"name": str(c + 1)} for c in range(columns)],
        "wells": [{"path": f"{r}/{c + 1}", "rowIndex": i, "columnIndex": c} for i, r in enumerate(names) for c in range(columns)],
        "field_count": FIELDS,
        "acquisitions": [{"id": 0, "name": "first", "maximumfieldcount": FIELDS}],
    }
    if version == "0.4":
        plate["version"] = version
    root = zarr.open_group(str(tmp), mode="a", zarr_format=zarr_format)
    root.attrs.update(ome(version, {"plate": plate}))
    well = {"images": [{"path": str(f), "acquisition": 0} for f in range(FIELDS)]}
    if version == "0.4":
        well["version"] = version
    for row in names:
        root.require_group(row)
    for where in well_paths:
        group = root.require_group(where)
        group.attrs.update(ome(version, {"well": well}))
        for f in range(FIELDS):
            shutil.copytree(template, tmp / where / str(f))
    shutil.rmtree(template)
    if consolidated:
        zarr.consolidate_metadata(str(tmp), zarr_format=zarr_format)
    tmp.rename(path)


def plate_path(wells: int, version: str, variant: str) -> Path:
    return DATA / f"plate-{wells}-{version}-{variant}.zarr"


def documents_stored(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.name in DOCUMENTS and p.is_file())


def sv_command(target: str) -> list[str]:
    # A source tree's own package (PYTHONPATH set per side), not whichever spec-validate is installed; -P: not the
    # working directory's either (`python -m` puts it first on sys.path, and the runs start in this checkout).
    return [sys.executable, "-P", "-m", "spec_validate", target, "--format", "json", "-o", os.devnull]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wells", default="96,384", help="plate sizes, of 96 and 384 (default: %(default)s)")
    parser.add_argument("--versions", default="0.4,0.5", help="OME-Zarr versions (default: %(default)s)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="default: %(default)s")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions (default: %(default)s)")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds before each answer (default: %(default)s)")
    parser.add_argument("--no-local", action="store_true", help="do not time the plates read locally")
    parser.add_argument(
        "--before",
        metavar="TREE",
        action="append",
        default=[],
        help="also run this source tree of the tool (`git worktree add --detach /tmp/before COMMIT`), in turn with this "
        "checkout in every repetition: before and after measured under the same load; may be given more than once "
        "(each tree then named by its folder)",
    )
    args = parser.parse_args(argv)
    plates = [
        (int(w), v, variant)
        for w in args.wells.split(",")
        for v in args.versions.split(",")
        for variant in args.variants.split(",")
    ]
    for wells, version, variant in plates:
        path = plate_path(wells, version, variant)
        if not path.exists():
            print(f"writing {path.relative_to(ROOT)}", flush=True)
            DATA.mkdir(parents=True, exist_ok=True)
            write_plate(path, wells, version, variant == "consolidated")

    trees = [Path(t).resolve() for t in args.before]
    sides = {"before": trees[0]} if len(trees) == 1 else {t.name: t for t in trees}
    sides["after"] = ROOT
    caches = {side: tempfile.mkdtemp(prefix=f"spec-validate-plate-{side}-") for side in sides}
    info = machine()
    launcher = Launcher()
    server = Server(DATA, args.latency)
    runs: list[dict] = []
    try:
        for rep in range(1 + args.reps):  # the first unrecorded: caches warm
            for wells, version, variant in plates:
                path = plate_path(wells, version, variant)
                for side, tree in sides.items():
                    env = {"PYTHONPATH": str(tree), "SPEC_VALIDATE_CACHE_DIR": caches[side]}
                    tools = {"remote": sv_command(f"{server.url}/{path.name}")}
                    if not args.no_local:
                        tools["local"] = sv_command(str(path))
                    for tool, command in tools.items():
                        if tool == "remote":
                            server.reset()
                        result = launcher.measure(command, env)
                        result.pop("stdout")
                        if tool == "remote":
                            result["requests"] = server.counts()
                        if result["rc"] not in (0, 1):
                            print(f"exit {result['rc']}: {result['stderr_tail'][-400:]}", flush=True)
                        result.update(wells=wells, version=version, variant=variant, side=side, tool=tool, warmup=rep == 0)
                        runs.append(result)
                        counts = f" {result['requests']['total']:6d} requests" if tool == "remote" else ""
                        label = f"{'warm-up' if rep == 0 else f'rep {rep}'} {wells}-well {version} {variant} {side} {tool}"
                        print(
                            f"  {label:<56} {result['wall_s']:7.2f} s  CPU {result['user_s'] + result['sys_s']:5.2f} s "
                            f"{result['peak_rss_kib'] / 1024:5.0f} MiB{counts}  load {os.getloadavg()[0]:.1f}",
                            flush=True,
                        )
    finally:
        server.close()
        launcher.close()
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
    info["load_average_end"] = os.getloadavg()
    rows = summarize(runs, {p: documents_stored(plate_path(*p)) for p in plates}, list(sides))
    print(table(rows))
    print(f"load average (1, 5, 15 min): start {info['load_average_start']}, end {info['load_average_end']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"ome-plate-{stamp}.json"
    document = {"machine": info, "latency_s": args.latency, "sides": {k: str(v) for k, v in sides.items()}, "summary": rows}
    out.write_text(json.dumps({**document, "runs": runs}, indent=1))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def summarize(runs: list[dict], stored: dict[tuple, int], sides: list[str]) -> list[dict]:
    """Per plate and side: median wall time over HTTP and locally (and the range over HTTP), the client's median CPU
    time, the requests of the run that made the most, and peak RSS."""
    rows = []
    for key, documents in stored.items():
        for side in sides:
            mine = [r for r in runs if not r["warmup"] and r["side"] == side and (r["wells"], r["version"], r["variant"]) == key]
            remote = [r for r in mine if r["tool"] == "remote"]
            local = [r for r in mine if r["tool"] == "local"]
            requests = max((r["requests"] for r in remote), key=lambda c: c["total"])
            walls = [r["wall_s"] for r in remote]
            rows.append(
                {
                    "wells": key[0],
                    "version": key[1],
                    "variant": key[2],
                    "side": side,
                    "remote_s": statistics.median(walls),
                    "remote_range_s": (min(walls), max(walls)),
                    "remote_cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in remote),
                    "local_s": statistics.median(r["wall_s"] for r in local) if local else None,
                    "documents_stored": documents,
                    "requests": requests,
                    "documents_per_document": requests["counts"]["document"] / documents,
                    "peak_rss_mb": max(r["peak_rss_kib"] for r in remote) * 1024 / 1e6,
                    "exit": sorted({r["rc"] for r in mine}),
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    """The summary as a Markdown table (docs/performance.md takes it as it is)."""
    lines = [
        "| plate | OME-Zarr | metadata | tree | over HTTP (s) | client CPU (s) | locally (s) | listings | "
        "documents asked / stored | other | all requests | keys asked twice | most in flight | peak RSS (MB) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        c = r["requests"]["counts"]
        local = f"{r['local_s']:.2f}" if r["local_s"] is not None else ""
        low, high = r["remote_range_s"]
        lines.append(
            f"| {r['wells']} wells | {r['version']} | {r['variant']} | {r['side']} | {r['remote_s']:.2f} ({low:.2f}-{high:.2f}) | "
            f"{r['remote_cpu_s']:.2f} | {local} | {c['listing']} | {c['document']} / {r['documents_stored']} | "
            f"{c['other'] + c['range']} | {r['requests']['total']} | {r['requests']['repeated']} | {r['requests']['peak']} | "
            f"{r['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
