"""Benchmark spec-validate where the cost is metadata: many-node files, locally and over HTTP with latency.

    python bench/metadata.py [--cases obs-10,...] [--formats h5ad,zarr2,zarr3] [--reps 3] [--skip-anndata]
                             [--no-scaling] [--no-remote] [--latency 0.02] [--no-docs] [--check]

1. Generates the files that are not cached (bench/metadata_generate.py; the 5e7-value stores of the remote group
   with bench/generate.py).
2. local: every case (wide obs at 10, 100, 1,000 and 4,000 columns, uns with 5,000 entries, 5,000 arrays) in
   every format, within each repetition: the metadata floor (bench/metadata_floor.py: h5py reading every
   attribute value, or every JSON document of a Zarr store), for Zarr the same-work floor as well
   (`metadata_floor.py --arrays`: every folder listed and the chunks of the arrays a validation scans read and
   decoded, the paths from `spec_validate.engine.run.scan_plan`) and `spec-validate FILE --format json -o /dev/null`
   round-robin, the first rotating; anndata (`read_h5ad` / `read_zarr`) on every file after everything else of
   the repetition (between the short runs it made them slower and erratic).
3. scaling: spec-validate and the floor on obs-18,000 (about 30,000 nodes) as well, for time and memory per
   node from 100 to 30,000 nodes (the other sizes come from the local group).
4. remote: bench/latency_server (tests/latency_server.py) in its own process, serving bench/data with
   `--latency` seconds before every answer (an object store's usual is 10-30 ms): spec-validate on the
   1,000-column Zarr v2 and v3 stores, consolidated and not (copies without consolidated metadata), and on the
   5e7-value stores of bench/generate.py against the same stores read locally, in the same rounds; the
   consolidated Zarr stores also with --no-list (read from their consolidated metadata, no folder listed). The
   server counts every request by kind (listing, metadata document, chunk or range) for each run.
5. Writes bench/results/metadata-<time>.json and metadata-latest.json; unless --no-docs regenerates the metadata
   tables of docs/performance.md and docs/performance-metadata.png (bench/metadata_report.py).

Wall time is taken around each child process and peak RSS is the child's own (bench/launcher.py), as in
bench/run.py. One unrecorded warm-up round comes first, so every file is read from a warm page cache, and each
file's metadata is read once more (the floor, unrecorded) just before its tools are timed (see `rounds`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (bench/ is not a package)
import metadata_generate as mg  # noqa: E402
from run import Launcher, machine, spec_validate_exe  # noqa: E402

RESULTS = HERE / "results"
SERVER = ROOT / "tests" / "latency_server.py"
UNCONSOLIDATED = mg.DATA / "unconsolidated"
DOCUMENTS = frozenset({".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"})
REMOTE_CASE = "obs-1000"  # the wide store read over HTTP
REMOTE_SIZE = "5e7"  # the array-heavy store read over HTTP and locally
SV_TOOLS = ("spec-validate", "local", "remote")  # the tools that are spec-validate runs
NO_LIST = "consolidated, --no-list"  # a remote variant: the consolidated store read without listing


def floor_command(path: Path) -> list[str]:
    return [sys.executable, str(HERE / "metadata_floor.py"), str(path)]


PLANS = RESULTS / "plans"


def same_work_floor_command(path: Path) -> list[str]:
    """The Zarr floor that does a validation's reads: every folder listed, every document parsed, and every chunk
    of the arrays a run of the default packs scans read and decoded (their paths: `scan_plan`, written once)."""
    PLANS.mkdir(parents=True, exist_ok=True)
    plan = PLANS / f"{path.name}-{path.parent.name}.json"
    if not plan.exists():
        from spec_validate.engine.run import scan_plan

        plan.write_text(json.dumps([array for array, _ in scan_plan(str(path))]), encoding="utf-8")
    return [sys.executable, str(HERE / "metadata_floor.py"), str(path), "--arrays", str(plan)]


def anndata_command(path: Path) -> list[str]:
    reader = "read_h5ad" if path.suffix == ".h5ad" else "read_zarr"
    return [sys.executable, "-c", f"import sys, anndata; anndata.{reader}(sys.argv[1])", str(path)]


def sv_command(target: str, *options: str) -> list[str]:
    return [spec_validate_exe(), target, "--format", "json", "-o", os.devnull, *options]


def unconsolidated_copy(src: Path) -> Path:
    """A copy of the store without consolidated metadata: no .zmetadata, no consolidated_metadata in zarr.json."""
    dst = UNCONSOLIDATED / src.name
    if dst.exists():
        return dst
    tmp = dst.with_name(f".partial-{dst.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    (tmp / ".zmetadata").unlink(missing_ok=True)
    root = tmp / "zarr.json"
    if root.exists():
        doc = json.loads(root.read_text())
        doc.pop("consolidated_metadata", None)
        root.write_text(json.dumps(doc, indent=2))
    tmp.rename(dst)
    return dst


def store_counts(path: Path) -> dict:
    """A store's metadata documents and the stored chunks of the arrays spec-validate scans (the least any run
    reads): the bound on a remote run's requests."""
    from spec_validate.engine.run import scan_plan

    if not path.is_dir():
        return {}
    documents = sum(1 for p in path.rglob("*") if p.name in DOCUMENTS and p.is_file())
    arrays = [path / a.strip("/") for a, _ in scan_plan(str(path))]
    chunks = sum(1 for a in arrays for p in a.rglob("*") if p.is_file() and p.name not in DOCUMENTS)
    return {"documents": documents, "chunks_needed": chunks, "scanned_arrays": len(arrays)}


class Server:
    """tests/latency_server.py in its own process (its threads and counting cost the timed client nothing)."""

    def __init__(self, directory: Path, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(directory), "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def _get(self, path: str) -> dict:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as answer:  # our loopback server
            return json.loads(answer.read())

    def reset(self) -> None:
        self._get("/__reset__")

    def counts(self) -> dict:
        return self._get("/__counts__")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


Round = tuple[str, dict, dict[str, list[str]], list[str] | None]


def rounds(args: argparse.Namespace, server: Server | None) -> list[Round]:
    """(group, what is measured, {tool: command}, warm-up command) for one repetition; the tools of one entry run
    round-robin, after its warm-up command (unrecorded) where it has one.

    anndata runs after every other entry of the repetition, not between the floor and spec-validate: its runs (6 s,
    200 MB, tens of thousands of file operations) left the short runs after them slower and erratic on the
    benchmark's virtual machine, the floor more than spec-validate, which flattered the floor ratios. And each
    file's metadata is read once, unrecorded, before its tools run: the folders and files of the other stores
    (tens of thousands each) push a store's out of the kernel's caches, so the first tool to read it paid for
    reading them back (the floor of the 4,000-column Zarr v2 store took 0.28 s second and 0.76-0.88 s first)."""
    out: list[Round] = []
    anndata_last: list[Round] = []
    for name in args.cases:
        for fmt in args.formats:
            case = mg.Case(name, fmt)
            what = {"case": name, "format": fmt, "file": str(case.path.relative_to(ROOT))}
            warm = floor_command(case.path)
            tools = {"floor": warm, "spec-validate": sv_command(str(case.path))}
            if fmt != "h5ad":  # the HDF5 floor reads every attribute value already: a validation's metadata reads
                tools["same-work floor"] = same_work_floor_command(case.path)
            out.append(("local", what, tools, warm))
            if not args.skip_anndata:
                anndata_last.append(("local", what, {"anndata": anndata_command(case.path)}, warm))
    if not args.no_scaling:
        for fmt in args.formats:
            case = mg.Case(mg.SCALING[-1], fmt)
            warm = floor_command(case.path)
            out.append(
                (
                    "scaling",
                    {"case": case.name, "format": fmt, "file": str(case.path.relative_to(ROOT))},
                    {"floor": warm, "spec-validate": sv_command(str(case.path))},
                    warm,
                )
            )
    if server is not None:
        for fmt in ("zarr2", "zarr3"):
            case = mg.Case(REMOTE_CASE, fmt)
            variants = (
                ("consolidated", case.path, ()),
                (NO_LIST, case.path, ("--no-list",)),
                ("unconsolidated", unconsolidated_copy(case.path), ()),
            )
            for label, path, options in variants:
                url = f"{server.url}/{path.relative_to(generate.DATA).as_posix()}"
                what = {"case": REMOTE_CASE, "format": fmt, "variant": label, "file": str(path.relative_to(ROOT))}
                out.append(("remote", what, {"remote": sv_command(url, *options)}, None))
        for fmt in ("h5ad", "zarr2", "zarr3"):
            case = generate.Case(REMOTE_SIZE, fmt)
            url = f"{server.url}/{case.path.relative_to(generate.DATA).as_posix()}"
            what = {
                "case": f"anndata-{REMOTE_SIZE}",
                "format": fmt,
                "variant": "consolidated",
                "file": str(case.path.relative_to(ROOT)),
            }
            out.append(("remote", what, {"local": sv_command(str(case.path)), "remote": sv_command(url)}, None))
            if fmt != "h5ad":  # read without listing: the consolidated metadata as the map
                out.append(("remote", {**what, "variant": NO_LIST}, {"remote": sv_command(url, "--no-list")}, None))
    return out + anndata_last


def summarize(runs: list[dict]) -> list[dict]:
    """Median and min wall time, peak RSS and (remote) requests per (group, case, format, variant, tool)."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        if not r["warmup"]:
            key = (r["group"], r["case"], r["format"], r.get("variant"), r["tool"])
            groups.setdefault(key, []).append(r)
    rows = []
    for (group, case, fmt, variant, tool), rs in groups.items():
        walls = [r["wall_s"] for r in rs]
        row = {
            "group": group,
            "case": case,
            "format": fmt,
            "variant": variant,
            "tool": tool,
            "reps": len(rs),
            "min_s": min(walls),
            "median_s": statistics.median(walls),
            "peak_rss_mb": max(r["peak_rss_kib"] for r in rs) * 1024 / 1e6,
            "median_cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in rs),
            # spec-validate exits 1 when a clause fails (anndata's own Zarr strings fail one: see the docs); 2 is an error
            "bad_exit": sorted({r["rc"] for r in rs if r["rc"] not in ((0, 1) if tool in SV_TOOLS else (0,))}),
            "exit": sorted({r["rc"] for r in rs}),
        }
        floors = [r["floor"] for r in rs if "floor" in r]
        if floors:
            row["objects"] = floors[0]["objects"]
            row["read"] = floors[0]["read"]
        requests = [r["requests"] for r in rs if "requests" in r]
        if requests:
            row["requests"] = max(requests, key=lambda c: c["total"])
        rows.append(row)
    return rows


def measure(args: argparse.Namespace, server: Server | None) -> list[dict]:
    launcher = Launcher()
    runs: list[dict] = []
    plan = rounds(args, server)
    try:
        for rep in range(args.warmup + args.reps):
            warm = rep < args.warmup
            print(f"{'warm-up' if warm else 'repetition'} {rep + 1 - (0 if warm else args.warmup)}", flush=True)
            for round_, (group, what, tools, warm_command) in enumerate(plan):
                if warm_command is not None:
                    launcher.measure(warm_command)
                names = list(tools)
                shift = (rep + round_) % len(names)
                for tool in names[shift:] + names[:shift]:
                    remote = tool == "remote"
                    if remote and server is not None:
                        server.reset()
                    result = launcher.measure(tools[tool])
                    if remote and server is not None:
                        result["requests"] = server.counts()
                    stdout = result.pop("stdout")
                    if tool in ("floor", "same-work floor") and result["rc"] == 0:
                        result["floor"] = json.loads(stdout)
                    result.update({"group": group, "tool": tool, "rep": rep, "warmup": warm, "cmd": tools[tool], **what})
                    runs.append(result)
                    extra = f" {result['requests']['total']:5d} requests" if "requests" in result else ""
                    bad = f" exit {result['rc']}: {result['stderr_tail'][-200:]}" if result["rc"] not in (0, 1) else ""
                    label = f"{what['case']}-{what['format']}" + (f" ({what['variant']})" if what.get("variant") else "")
                    print(
                        f"  {group:<8} {label:<34} {tool:<14} {result['wall_s']:7.3f} s "
                        f"{result['peak_rss_kib'] / 1024:6.0f} MiB{extra}{bad}",
                        flush=True,
                    )
    finally:
        launcher.close()
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=generate.comma_list, default=list(mg.CASES), help=f"default: {','.join(mg.CASES)}")
    parser.add_argument("--formats", type=generate.comma_list, default=list(mg.FORMATS), help=f"default: {','.join(mg.FORMATS)}")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1, help="unrecorded rounds first (default: %(default)s)")
    parser.add_argument("--skip-anndata", action="store_true", help="do not time anndata")
    parser.add_argument("--no-scaling", action="store_true", help=f"do not measure {mg.SCALING[-1]}")
    parser.add_argument("--no-remote", action="store_true", help="do not measure over HTTP")
    parser.add_argument(
        "--latency", type=float, default=0.02, help="seconds before each answer of the server (default: %(default)s)"
    )
    parser.add_argument("--no-docs", action="store_true", help="do not regenerate docs/performance.md and the plot")
    parser.add_argument("--check", action="store_true", help="exit 1 when an acceptance target is not met")
    args = parser.parse_args(argv)

    wanted = set(args.cases) | (set() if args.no_scaling else {mg.SCALING[-1]})
    missing = [n for n in sorted(wanted) for f in args.formats if not mg.Case(n, f).path.exists()]
    if missing:
        subprocess.run(
            [
                sys.executable,
                str(HERE / "metadata_generate.py"),
                "--cases",
                ",".join(sorted(set(missing))),
                "--formats",
                ",".join(args.formats),
            ],
            check=True,
        )
    if not args.no_remote:
        for fmt in ("zarr2", "zarr3"):
            if not mg.Case(REMOTE_CASE, fmt).path.exists():
                subprocess.run(
                    [sys.executable, str(HERE / "metadata_generate.py"), "--cases", REMOTE_CASE, "--formats", fmt], check=True
                )
        sizes = [c for c in ("h5ad", "zarr2", "zarr3") if not generate.Case(REMOTE_SIZE, c).path.exists()]
        if sizes:
            subprocess.run(
                [sys.executable, str(HERE / "generate.py"), "--sizes", REMOTE_SIZE, "--formats", ",".join(sizes)], check=True
            )

    info = machine()
    started = dt.datetime.now(dt.UTC)
    server = None if args.no_remote else Server(generate.DATA, args.latency)
    try:
        stores = {}
        if server is not None:
            for fmt in ("zarr2", "zarr3"):
                path = mg.Case(REMOTE_CASE, fmt).path
                stores[f"{REMOTE_CASE}-{fmt}"] = store_counts(path)
                stores[f"{REMOTE_CASE}-{fmt}-unconsolidated"] = store_counts(unconsolidated_copy(path))
            for fmt in ("zarr2", "zarr3"):
                stores[f"anndata-{REMOTE_SIZE}-{fmt}"] = store_counts(generate.Case(REMOTE_SIZE, fmt).path)
        t0 = time.perf_counter()
        runs = measure(args, server)
    finally:
        if server is not None:
            server.close()
    info["load_average_end"] = os.getloadavg()
    doc = {
        "started": started.isoformat(timespec="seconds"),
        "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seconds": time.perf_counter() - t0,
        "machine": info,
        "config": {
            "reps": args.reps,
            "warmup": args.warmup,
            "cases": args.cases,
            "formats": args.formats,
            "scaling": None if args.no_scaling else mg.SCALING[-1],
            "latency_s": None if args.no_remote else args.latency,
            "peak_rss_unit": "MB = 10^6 bytes (ru_maxrss KiB x 1024 / 10^6)",
        },
        "stores": stores,
        "summary": summarize(runs),
        "runs": runs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(doc, indent=1)
    (RESULTS / f"metadata-{stamp}.json").write_text(text)
    (RESULTS / "metadata-latest.json").write_text(text)
    print(f"\nwrote bench/results/metadata-{stamp}.json and bench/results/metadata-latest.json")

    return publish(args, doc)


def publish(args: argparse.Namespace, doc: dict) -> int:
    """Print the targets; regenerate the tables and the plot from a whole run; 1 with --check when one is missed."""
    import metadata_report

    print(metadata_report.render(doc)["metadata-targets"])
    partial = set(args.cases) != set(mg.CASES) or set(args.formats) != set(mg.FORMATS) or args.no_remote or args.no_scaling
    if partial and not args.no_docs:
        # The tables in docs/performance.md are one whole interleaved run: a subset would replace some rows only.
        print("a partial run (--cases, --formats, --no-remote or --no-scaling): docs/performance.md left as it is")
    elif not args.no_docs:
        metadata_report.update_doc(doc)
        metadata_report.plot(doc)
        print("regenerated the metadata tables of docs/performance.md and docs/performance-metadata.png")
    missed = [t for t in metadata_report.targets(doc) if t["met"] is False]
    for t in missed:
        print(f"target not met: {t['target']} at {t['where']}: {t['shown']}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
