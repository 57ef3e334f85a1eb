"""Benchmark spec-validate against the read floor and anndata's full read; one command does everything.

    python bench/run.py [--sizes 1e7,5e7,2e8] [--formats h5ad,h5ad-gzip,zarr2,zarr3] [--reps 5]
                        [--skip-anndata] [--jobs N] [--no-docs] [--check]

1. Generates the files that are not cached yet (bench/generate.py, with anndata).
2. Works out which arrays spec-validate scans in each file (`spec_validate.engine.run.scan_plan`, or the
   fallback list in bench/floor.py), once, so the timed floor process imports only numpy and h5py/zarr.
3. Runs, `--reps` times, round-robin over the tools within each repetition (the starting tool rotates),
   each tool as its own process, exactly as a user runs it:
   floor (`python bench/floor.py FILE --full ...`), anndata (`anndata.read_h5ad`/`read_zarr`), and
   `spec-validate FILE --format json -o /dev/null`; plus startup: `python -c "import numpy, h5py"`,
   `spec-validate --version` and spec-validate on a small corpus file. One unrecorded warm-up round comes
   first, so every timed run reads from a warm page cache.
   Wall time is taken around each child; peak RSS is the child's own `ru_maxrss` from `os.wait4`. Children
   are started by bench/launcher.py, a small process, so that figure is not inflated by this one's size.
4. Prints the table and writes every raw figure and the machine description to
   bench/results/<timestamp>.json and bench/results/latest.json.
5. Unless `--no-docs`: regenerates the tables in docs/performance.md (bench/report.py) and the plot
   docs/performance.png (bench/plot.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import floor  # noqa: E402  (bench/ is not a package)
import generate  # noqa: E402

RESULTS = HERE / "results"
CORPUS_FILE = ROOT / "conformance-corpus" / "anndata" / "h5ad" / "valid-every-element.h5ad"
EXPECTED_RC = 0  # every tool; spec-validate exits 1 when a clause fails, and the generated files are conformant
STARTUP_TOOLS = (
    "python -c 'import numpy, h5py'",
    "spec-validate --version",
    "spec-validate small file",
    "spec-validate small file, empty pack cache",
    "spec-validate small file, pack cache off",
)
# An empty cache directory, emptied again before each of its runs: a fresh CI runner's first run. An installed
# wheel then reads the built-in packs as its build validated them (hatch_build.py); a checkout (an editable
# install) validates them, as with the cache off.
EMPTY_CACHE = Path(tempfile.gettempdir()) / "spec-validate-bench-empty-cache"
# Extra environment per tool. With the cache off, spec-validate parses and validates its YAML packs on every
# run, except the built-in packs of an installed wheel.
TOOL_ENV = {STARTUP_TOOLS[3]: {"SPEC_VALIDATE_CACHE_DIR": str(EMPTY_CACHE)}, STARTUP_TOOLS[4]: {"SPEC_VALIDATE_NO_CACHE": "1"}}


def spec_validate_exe() -> str:
    return (
        shutil.which("spec-validate", path=str(Path(sys.executable).parent)) or shutil.which("spec-validate") or "spec-validate"
    )


class Launcher:
    """Runs each timed command through bench/launcher.py (a `python -S` process of about 10 MB).

    Spawned from this process, a child's ru_maxrss would include this process's own size (see
    launcher.py); spawned from the launcher, it is the child's.
    """

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-S", str(HERE / "launcher.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.tmp = tempfile.TemporaryDirectory(prefix="spec-validate-bench-")

    def measure(self, cmd: list[str], env: dict[str, str] | None = None) -> dict:
        """Run `cmd` as a child; its wall time, its own peak RSS and CPU times, exit code and output."""
        out, err = Path(self.tmp.name, "stdout"), Path(self.tmp.name, "stderr")
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(
            json.dumps({"cmd": cmd, "cwd": str(ROOT), "stdout": str(out), "stderr": str(err), "env": env or {}}) + "\n"
        )
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise SystemExit(f"cannot run {cmd[0]}: {reply['error']}")
        reply["stderr_tail"] = err.read_text(errors="replace")[-2000:]
        reply["stdout"] = out.read_text(errors="replace")
        return reply

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
        self.tmp.cleanup()


def tool_commands(case: generate.Case, plan: list[tuple[str, str]], jobs: int | None, skip_anndata: bool) -> dict[str, list[str]]:
    path = str(case.path)
    full = [p for p, m in plan if m == "full"]
    edges = [p for p, m in plan if m == "edges"]
    floor_cmd = [sys.executable, str(HERE / "floor.py"), path]
    if full:
        floor_cmd += ["--full", *full]
    if edges:
        floor_cmd += ["--edges", *edges]
    reader = "read_h5ad" if case.format.startswith("h5ad") else "read_zarr"
    sv = [spec_validate_exe(), path, "--format", "json", "-o", os.devnull]
    if jobs is not None:
        sv += ["--jobs", str(jobs)]
    commands = {
        "floor": floor_cmd,
        "anndata": [sys.executable, "-c", f"import sys, anndata; anndata.{reader}(sys.argv[1])", path],
        "spec-validate": sv,
    }
    if skip_anndata:
        del commands["anndata"]
    return commands


def startup_commands() -> dict[str, list[str]]:
    exe = spec_validate_exe()
    return {
        STARTUP_TOOLS[0]: [sys.executable, "-c", "import numpy, h5py"],
        STARTUP_TOOLS[1]: [exe, "--version"],
        STARTUP_TOOLS[2]: [exe, str(CORPUS_FILE)],
        STARTUP_TOOLS[3]: [exe, str(CORPUS_FILE)],
        STARTUP_TOOLS[4]: [exe, str(CORPUS_FILE)],
    }


def git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine() -> dict:
    """CPU, cores, memory, OS, Python, library versions, spec-validate version and commit."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": mem_gib,
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            d: version(d) for d in ("numpy", "h5py", "zarr", "numcodecs", "anndata", "scipy", "pandas", "spec-validate")
        },
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "load_average_start": os.getloadavg(),
    }


def summarize(runs: list[dict]) -> list[dict]:
    """Min/median wall time and peak RSS per (group, format, size, tool), timed runs only."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        if not r["warmup"]:
            groups.setdefault((r["group"], r.get("format"), r.get("size"), r["tool"]), []).append(r)
    rows = []
    for (group, fmt, size, tool), rs in groups.items():
        walls = [r["wall_s"] for r in rs]
        rows.append(
            {
                "group": group,
                "format": fmt,
                "size": size,
                "stored_values": generate.SIZES.get(size) if size else None,
                "tool": tool,
                "reps": len(rs),
                "min_s": min(walls),
                "median_s": statistics.median(walls),
                "peak_rss_mb": max(r["peak_rss_kib"] for r in rs) * 1024 / 1e6,
                "median_cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in rs),
                "median_read_s": statistics.median(r["read_s"] for r in rs) if all("read_s" in r for r in rs) else None,
                "bad_exit": sorted({r["rc"] for r in rs if r["rc"] != EXPECTED_RC}),
            }
        )
    index = {(r["group"], r["format"], r["size"], r["tool"]): r for r in rows}
    for r in rows:
        if r["group"] == "file" and r["tool"] == "spec-validate":
            fl = index.get(("file", r["format"], r["size"], "floor"))
            an = index.get(("file", r["format"], r["size"], "anndata"))
            r["sv_over_floor"] = r["median_s"] / fl["median_s"] if fl else None
            r["anndata_over_sv"] = an["median_s"] / r["median_s"] if an else None
    return rows


def print_table(rows: list[dict]) -> None:
    import report

    rows = sorted(rows, key=lambda r: (r["group"] != "startup", *report.sort_key(r)))
    print()
    print(
        f"{'format':<10} {'values':>6} {'tool':<42} {'min s':>7} {'median s':>8} {'peak MB':>8} {'sv/floor':>8} {'anndata/sv':>10}"
    )
    for r in rows:
        ratio = lambda k, r=r: f"{r[k]:.2f}" if r.get(k) is not None else ""  # noqa: E731
        print(
            f"{r['format'] or '-':<10} {r['size'] or '-':>6} {r['tool']:<42} {r['min_s']:>7.3f} {r['median_s']:>8.3f} "
            f"{r['peak_rss_mb']:>8.0f} {ratio('sv_over_floor'):>8} {ratio('anndata_over_sv'):>10}"
            + (f"  exit {r['bad_exit']}!" if r["bad_exit"] else "")
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=generate.comma_list, help=f"comma-separated sizes (default: {','.join(generate.SIZES)})")
    parser.add_argument(
        "--formats", type=generate.comma_list, help=f"comma-separated formats (default: {','.join(generate.FORMATS)})"
    )
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions of every tool (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1, help="unrecorded rounds first (default: %(default)s)")
    parser.add_argument(
        "--startup-rounds",
        type=int,
        default=4,
        help="start-up commands are timed this many times per repetition (default: %(default)s)",
    )
    parser.add_argument("--skip-anndata", action="store_true", help="do not time anndata's full read")
    parser.add_argument("--jobs", type=int, help="passed to spec-validate as --jobs N")
    parser.add_argument("--no-docs", action="store_true", help="do not regenerate docs/performance.md and docs/performance.png")
    parser.add_argument("--check", action="store_true", help="exit 1 when an acceptance target (docs/performance.md) is not met")
    args = parser.parse_args(argv)

    chosen = generate.cases(args.sizes, args.formats)
    missing = [c for c in chosen if not c.path.exists()]
    if missing:
        # A separate process, so the generator's memory is not held by the harness while it measures.
        subprocess.run(
            [
                sys.executable,
                str(HERE / "generate.py"),
                "--sizes",
                ",".join(sorted({c.size for c in missing})),
                "--formats",
                ",".join(sorted({c.format for c in missing})),
            ],
            check=True,
        )

    plans = {}
    for case in chosen:
        plan, source = floor.default_plan(str(case.path))
        plans[case] = {"source": source, "arrays": plan}
        print(f"{case.path.name}: scans {len(plan)} arrays ({source})")

    info = machine()
    started = dt.datetime.now(dt.UTC)
    runs: list[dict] = []
    launcher = Launcher()
    total = args.warmup + args.reps
    for rep in range(total):
        warm = rep < args.warmup
        print(
            f"{'warm-up' if warm else 'repetition'} {rep + 1 - (0 if warm else args.warmup)}/{args.warmup if warm else args.reps}",
            flush=True,
        )
        # Start-up runs take a tenth of a second and vary by a few hundredths: several rounds per repetition,
        # so their medians rest on more samples than a file's.
        batches = [("startup", None, startup_commands())] * args.startup_rounds
        batches += [("file", case, tool_commands(case, plans[case]["arrays"], args.jobs, args.skip_anndata)) for case in chosen]
        for round_, (group, case, commands) in enumerate(batches):
            names = list(commands)
            shift = (rep + round_) % len(names)
            for tool in names[shift:] + names[:shift]:
                if tool == STARTUP_TOOLS[3]:
                    shutil.rmtree(EMPTY_CACHE, ignore_errors=True)
                result = launcher.measure(commands[tool], TOOL_ENV.get(tool))
                result.update(
                    {
                        "group": group,
                        "tool": tool,
                        "rep": rep,
                        "warmup": warm,
                        "cmd": commands[tool],
                        "env": TOOL_ENV.get(tool, {}),
                    }
                )
                if case is not None:
                    result.update({"format": case.format, "size": case.size, "file": str(case.path.relative_to(ROOT))})
                stdout = result.pop("stdout")
                if tool == "floor" and result["rc"] == EXPECTED_RC:
                    # the floor's own time for opening and reading, without interpreter start and imports
                    result["read_s"] = json.loads(stdout)["seconds"]
                else:
                    result["stdout_head"] = stdout[:500]
                if result["rc"] != EXPECTED_RC:
                    print(
                        f"  {tool} {case.path.name if case else ''}: exit {result['rc']}: {result['stderr_tail'][-300:]}",
                        flush=True,
                    )
                runs.append(result)
                print(
                    f"  {(case.path.name if case else 'startup'):<32} {tool:<42} {result['wall_s']:7.3f} s "
                    f"{result['peak_rss_kib'] / 1024:7.0f} MiB",
                    flush=True,
                )

    launcher.close()
    info["load_average_end"] = os.getloadavg()
    rows = summarize(runs)
    print_table(rows)
    doc = {
        "started": started.isoformat(timespec="seconds"),
        "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": info,
        "config": {
            "reps": args.reps,
            "startup_rounds": args.startup_rounds,
            "warmup": args.warmup,
            "jobs": args.jobs,
            "skip_anndata": args.skip_anndata,
            "sizes": sorted({c.size for c in chosen}, key=generate.SIZES.get),
            "formats": sorted({c.format for c in chosen}),
            "block_elements": floor.DEFAULT_BLOCK_ELEMENTS,
            "peak_rss_unit": "MB = 10^6 bytes (ru_maxrss KiB x 1024 / 10^6)",
        },
        "files": {
            c.path.name: {
                "format": c.format,
                "size": c.size,
                "stored_values": c.nnz,
                "bytes_on_disk": generate.du(c.path),
                "plan_source": plans[c]["source"],
                "plan": plans[c]["arrays"],
            }
            for c in chosen
        },
        "summary": rows,
        "runs": runs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(doc, indent=1)
    (RESULTS / f"{stamp}.json").write_text(text)
    (RESULTS / "latest.json").write_text(text)
    print(f"\nwrote bench/results/{stamp}.json and bench/results/latest.json")

    if not args.no_docs:
        import plot
        import report

        report.update_doc(doc)
        plot.plot(doc)
        print("regenerated docs/performance.md and docs/performance.png")
    import report

    missed = [t for t in report.targets(doc) if t["met"] is False]
    for t in missed:
        print(f"target not met: {t['target']} at {t['where']}: {t['value']:.2f}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
