"""Time one validation serially, on threads and on a Dask LocalCluster of 1 and 2 worker processes (on demand, not in tests).

Run as `python bench/dask_scaling.py [--file F.h5ad ...] [--repeat 3] [--threads 2,4] [--workers 1,2]`
(thread and worker counts default to the powers of two up to the number of cores). Without --file it uses the anndata-written
5e7-value files of bench/generate.py when they are there, else writes bench/data/dask-scaling-5e7.h5ad with h5py
(a CSR X of 5e7 stored values: int64 indptr, int32 indices, float32 data, gzip level 1, 2**20-element chunks).
Every configuration is timed `--repeat` times after one warm-up run (the file then sits in the page cache);
the median (and best) wall time is printed as a Markdown table, with the CPU seconds of every process involved
(client, scheduler and workers: robust to other load on the machine) and the peak resident memory of the
process(es) doing the scan (for Dask: the largest worker).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "bench" / "data"
ANNDATA_FILES = ("anndata-5e7-h5ad-gzip.h5ad", "anndata-5e7-h5ad.h5ad")
STORED = 50_000_000


def generate(path: Path, stored: int = STORED, rows: int = 50_000) -> Path:
    """A CSR X with `stored` values, written block by block with h5py (never the whole array in memory)."""
    import h5py

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    per_row = stored // rows
    comp = dict(compression="gzip", compression_opts=1, shuffle=True)
    chunk = lambda n: (min(n, 1 << 20),)  # noqa: E731
    rng = np.random.default_rng(0)
    with h5py.File(tmp, "w") as f:
        f.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        x = f.create_group("X")
        x.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": np.array([rows, 20_000])})
        x.create_dataset("indptr", data=np.arange(rows + 1, dtype=np.int64) * per_row, chunks=chunk(rows + 1), **comp)
        indices = x.create_dataset("indices", shape=(rows * per_row,), dtype=np.int32, chunks=chunk(rows * per_row), **comp)
        data = x.create_dataset("data", shape=(rows * per_row,), dtype=np.float32, chunks=chunk(rows * per_row), **comp)
        step = 1 << 22
        for start in range(0, rows * per_row, step):
            n = min(step, rows * per_row - start)
            indices[start : start + n] = rng.integers(0, 20_000, size=n, dtype=np.int32)
            data[start : start + n] = rng.integers(1, 4, size=n).astype(np.float32)
        for group, n in (("obs", rows), ("var", 20_000)):
            g = f.create_group(group)
            g.attrs.update(
                {
                    "encoding-type": "dataframe",
                    "encoding-version": "0.2.0",
                    "_index": "_index",
                    "column-order": np.array([], dtype=h5py.string_dtype()),
                }
            )
            idx = g.create_dataset("_index", data=np.array([f"{group[0]}{i}" for i in range(n)], dtype=h5py.string_dtype()))
            idx.attrs.update({"encoding-type": "string-array", "encoding-version": "0.2.0"})
    os.replace(tmp, path)
    return path


class Count:
    """A Progress that keeps the number of elements the scans read."""

    total = 0

    def start(self, total: int) -> None:
        self.total = total

    def advance(self, elements: int) -> None:
        pass

    def finish(self) -> None:
        pass


def scanned_elements(path: Path) -> int:
    from spec_validate import validate

    count = Count()
    validate(path, jobs=1, progress=count)
    return count.total


def disk_bytes(path: Path) -> int:
    """A file's size, or the total size of the files in a directory store."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def cpu_seconds() -> float:
    """CPU time of this process so far (user + system, all threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn, repeat: int, worker_cpu=lambda: 0.0) -> tuple[float, float, float]:
    """(median wall, best wall, median CPU seconds of every process involved) over `repeat` runs after a warm-up."""
    fn()  # warm-up: page cache, imports, worker-side imports
    walls, cpus = [], []
    for _ in range(repeat):
        c, w, t = cpu_seconds(), worker_cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(cpu_seconds() - c + worker_cpu() - w)
    return statistics.median(walls), min(walls), statistics.median(cpus)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", action="append", type=Path, help="the store(s) to validate")
    parser.add_argument("--repeat", type=int, default=5)
    doubling = ",".join(str(2**i) for i in range(max(1, (os.cpu_count() or 1).bit_length())) if 2**i <= (os.cpu_count() or 1))
    parser.add_argument(
        "--threads", default=doubling, help="thread counts to time (--jobs N), comma-separated (default: %(default)s)"
    )
    parser.add_argument(
        "--workers",
        default=doubling,
        help="LocalCluster worker processes (1 thread each) to time, comma-separated; 0 for none (default: %(default)s)",
    )
    args = parser.parse_args()
    thread_counts = [int(n) for n in args.threads.split(",") if int(n) > 1]
    worker_counts = [int(n) for n in args.workers.split(",") if int(n) > 0]
    files = args.file or [DATA / n for n in ANNDATA_FILES if (DATA / n).exists()] or [generate(DATA / "dask-scaling-5e7.h5ad")]

    from distributed import Client, LocalCluster

    from spec_validate import to_json, validate
    from spec_validate.engine.dask_scan import DaskScanner

    print(f"machine: {os.cpu_count()} cores; {sys.version.split()[0]}")
    print(
        "| file | elements scanned | configuration | wall s, median (best) | elements/s (median) | vs serial | CPU s, all processes | peak RSS per process (MiB) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in files:
        n = scanned_elements(path)
        size = f"{path.name} ({disk_bytes(path) / 2**20:.0f} MiB)"
        reference = to_json(validate(path, jobs=1))
        serial = timed(lambda path=path: validate(path, jobs=1), args.repeat)
        rows = [("serial (jobs=1)", serial, peak_rss_mib())]
        for threads in thread_counts:
            rows.append(
                (
                    f"threads (jobs={threads})",
                    timed(lambda path=path, threads=threads: validate(path, jobs=threads), args.repeat),
                    peak_rss_mib(),
                )
            )
        # The Dask rows count the workers' CPU too: the client's alone would hide the scan.
        for workers in worker_counts:
            t0 = time.perf_counter()
            with (
                LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL
                ) as cluster,
                Client(cluster, set_as_default=False) as client,
            ):
                started = time.perf_counter() - t0
                scanner = DaskScanner(client)
                assert to_json(validate(path, scanner=scanner)) == reference  # the same report, or the timing means nothing
                wall = timed(
                    lambda path=path, scanner=scanner: validate(path, scanner=scanner),
                    args.repeat,
                    lambda client=client: sum(client.run(cpu_seconds).values()),
                )
                rss = max(client.run(peak_rss_mib).values())
            rows.append(
                (f"dask LocalCluster {workers} worker{'s' if workers > 1 else ''} x 1 thread (start {started:.1f} s)", wall, rss)
            )
        for name, (median, best, cpu), rss in rows:
            print(
                f"| {size} | {n:.2e} | {name} | {median:.2f} ({best:.2f}) | {n / median:.2e} | {serial[0] / median:.2f}x | {cpu:.2f} | {rss:.0f} |"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
