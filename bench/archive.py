"""The archive benchmark (#41): many small stores behind a latency server, validated from their folder URL on a
Dask LocalCluster of 1, 2 and 4 workers, and the same folder locally with --jobs (on demand, never in tests).

    python bench/archive.py [--stores 1000] [--latency 0.02] [--workers 1,2,4] [--jobs 1,2,4] [--per-thread 8]

Writes `--stores` stores under bench/data/archive/stores/ (git-ignored; kept between runs): copies of the
conformance corpus's valid AnnData cases, Zarr v2, Zarr v3 and .h5ad in turn, 100 to a folder. Serves that
folder with tests/latency_server.py (another process, `--latency` seconds before each answer) and, for each
worker count, starts a `LocalCluster(n_workers=W, threads_per_worker=1, processes=True)` here, warms its workers
up on one folder of stores, then times `spec-validate URL/ --dask ADDRESS --format json` (the client is its own
process, started by bench/launcher.py so that its peak RSS is its own). Then times `spec-validate FOLDER --jobs N
--format json` on the local folder. Each run's report must equal the local `--jobs 1` run's (sources aside), or
its figures mean nothing.

Printed, one Markdown row per configuration: wall time, stores/s, speed-up over the first row of its kind, the
client's peak RSS, and for Dask the workers' busy fraction: the CPU time the worker processes used during the
run / (workers x wall), and in brackets how much of the run they were runnable (a thread running or waiting for a
core, sampled from /proc every 50 ms): on a loaded machine a worker may be runnable, its latency hidden, and still
not busy, for want of a core. `--per-thread` sets the inputs a worker validates at once per thread
(`spec_validate.engine.dask_scan.INPUTS_PER_THREAD`); `--per-thread 1,4,8` times each.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "bench" / "data" / "archive"
CORPUS = ROOT / "conformance-corpus" / "anndata"
# The valid cases of each format, taken in turn: small stores as an archive holds them.
CASES = {
    "zarr-v2": ["valid-every-element.zarr", "valid-zero-obs.zarr"],
    "zarr-v3": ["valid-every-element.zarr", "valid-zero-obs.zarr", "valid-sharded.zarr"],
    "h5ad": ["valid-every-element.h5ad", "valid-zero-obs.h5ad", "valid-uns-rec-array.h5ad", "valid-awkward-array.h5ad"],
}
PER_FOLDER = 100
# The client command, with the inputs validated at once per worker thread set first (a module constant, read when
# the run submits its tasks).
CLIENT = (
    "import sys; import spec_validate.engine.dask_scan as d; d.INPUTS_PER_THREAD = int(sys.argv.pop(1)); "
    "from spec_validate.cli import console; sys.argv[0] = 'spec-validate'; console()"
)


def generate(count: int) -> Path:
    """`count` stores under DATA/stores, 100 to a folder; written once (a marker file records the count)."""
    stores = DATA / "stores"
    marker = DATA / f"stores-{count}.done"
    if marker.exists():
        return stores
    shutil.rmtree(stores, ignore_errors=True)
    for old in DATA.glob("stores-*.done"):
        old.unlink()
    formats = list(CASES)
    for i in range(count):
        fmt = formats[i % len(formats)]
        names = CASES[fmt]
        name = names[(i // len(formats)) % len(names)]
        source = CORPUS / fmt / name
        suffix = ".h5ad" if fmt == "h5ad" else ".zarr"
        target = stores / f"g{i // PER_FOLDER:02d}" / f"s{i:04d}-{fmt}-{name.rsplit('.', 1)[0]}{suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    marker.write_text(str(count))
    return stores


class Server:
    """tests/latency_server.py in a process of its own, serving DATA/stores."""

    def __init__(self, folder: Path, latency: float) -> None:
        script = ROOT / "tests" / "latency_server.py"
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(folder), "--latency", str(latency), "--lifetime", "86400"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        port = self.process.stdout.readline().strip()
        self.url = f"http://127.0.0.1:{port}"

    def counts(self, reset: bool = False) -> dict:
        with urllib.request.urlopen(f"{self.url}/{'__reset__' if reset else '__counts__'}") as answer:
            return json.loads(answer.read())

    def cpu_seconds(self) -> float:
        return _process_cpu(self.process.pid)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(10)


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Runnable:
    """How often each worker process had a thread running or waiting for a core, sampled from /proc in a thread.

    CPU time alone cannot tell a worker waiting on the network from one waiting for a core on a loaded machine;
    this can. A worker always runnable never waited on the network: its latency was hidden, and only the cores
    it was given limited it."""

    def __init__(self, pids: list[int], interval: float = 0.05) -> None:
        import threading

        self.pids, self.interval = pids, interval
        self.samples = 0
        self.runnable = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples += 1
            for pid in self.pids:
                if any(_state(task) == "R" for task in Path(f"/proc/{pid}/task").iterdir()):
                    self.runnable[pid] += 1

    def stop(self) -> float:
        """The mean over the workers of the share of samples in which they were runnable."""
        self._stop.set()
        self._thread.join()
        return sum(self.runnable.values()) / (len(self.pids) * max(1, self.samples))


def _state(task: Path) -> str:
    try:
        return (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:  # a thread that ended between the listing and the read
        return ""


class Launcher:
    """bench/launcher.py: starts each timed command, so its peak RSS is its own."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-S", str(ROOT / "bench" / "launcher.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, cmd: list[str], out: Path) -> dict:
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        request = {"cmd": cmd, "cwd": str(ROOT), "stdout": str(out), "stderr": str(out) + ".err", "env": env}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        if reply.get("rc") not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)}: exit {reply.get('rc')}: {Path(str(out) + '.err').read_text()[-2000:]}")
        return reply

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(10)


def reports(path: Path, prefix: str) -> list[dict]:
    """The run's reports, each named relative to the folder validated."""
    text = path.read_text().replace(prefix.rstrip("/") + "/", "")
    return json.loads(text)["reports"]


def cpu_seconds() -> float:
    """CPU time of this process so far (user + system, all threads); run on each worker."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def row(name: str, stores: int, wall: float, base: float | None, rss_kib: int, busy: str, extra: str) -> str:
    speed = stores / wall
    ratio = f"{speed / base:.2f}x" if base else "1.00x"
    return f"| {name} | {wall:.1f} | {speed:.1f} | {ratio} | {rss_kib / 1024:.0f} | {busy} | {extra} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds before each answer (default: %(default)s)")
    parser.add_argument("--workers", default="1,2,4", help="LocalCluster worker counts (1 thread each)")
    parser.add_argument("--jobs", default="1,2,4", help="--jobs of the local runs; empty for none")
    parser.add_argument("--per-thread", default="8", help="inputs a worker validates at once per thread, comma-separated")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    stores = generate(args.stores)
    python = sys.executable
    work = Path(tempfile.mkdtemp(prefix="archive-bench-"))
    launcher = Launcher()
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {sys.version.split()[0]}; {args.stores} stores"
    )
    local = stores.as_posix()
    reference = None
    header = "| configuration | wall s | stores/s | speed-up | client peak RSS (MiB) | workers busy | notes |\n|---|---:|---:|---:|---:|---:|---|"
    print(header)
    base = None
    for jobs in [int(n) for n in args.jobs.split(",") if n]:
        out = work / f"local-{jobs}.json"
        r = launcher.run(
            [python, "-m", "spec_validate", local, "--jobs", str(jobs), "--format", "json", "--quiet", "-o", str(out)], out
        )
        found = reports(out, local)
        reference = reference or found
        assert found == reference, f"--jobs {jobs}: not the --jobs 1 report"
        cpu = r["user_s"] + r["sys_s"]
        busy = f"{cpu / (min(jobs, os.cpu_count() or 1) * r['wall_s']):.0%} of {min(jobs, os.cpu_count() or 1)} cores"
        notes = f"CPU {cpu:.0f} s; load average {os.getloadavg()[0]:.1f}"
        print(row(f"local folder, --jobs {jobs}", len(found), r["wall_s"], base, r["peak_rss_kib"], busy, notes))
        sys.stdout.flush()
        base = base or len(found) / r["wall_s"]
    server = Server(stores, args.latency)
    try:
        url = f"{server.url}/"
        for per_thread in [int(n) for n in args.per_thread.split(",")]:
            base = None
            for workers in [int(n) for n in args.workers.split(",")]:
                t0 = time.perf_counter()
                with (
                    LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=":0",
                        silence_logs=logging.CRITICAL,
                    ) as cluster,
                    Client(cluster, set_as_default=False) as client,
                ):
                    started = time.perf_counter() - t0
                    address = cluster.scheduler_address
                    command = [python, "-c", CLIENT, str(per_thread)]
                    warm = work / "warm.json"  # imports and packs loaded on every worker, as on a running cluster
                    launcher.run(
                        [*command, f"{url}g00/", "--dask", address, "--format", "json", "--quiet", "-o", str(warm)], warm
                    )
                    out = work / f"dask-{workers}-{per_thread}.json"
                    server.counts(reset=True)
                    before, served = sum(client.run(cpu_seconds).values()), server.cpu_seconds()
                    sampler = Runnable(list(client.run(os.getpid).values()))
                    r = launcher.run([*command, url, "--dask", address, "--format", "json", "--quiet", "-o", str(out)], out)
                    runnable = sampler.stop()
                    worked = sum(client.run(cpu_seconds).values()) - before
                    served = server.cpu_seconds() - served
                    counts = server.counts()
                found = reports(out, url)
                if reference is not None:
                    assert found == reference, f"{workers} workers: not the local report"
                busy = f"{worked / (workers * r['wall_s']):.0%} (runnable {runnable:.0%})"
                notes = (
                    f"{per_thread} inputs/thread; worker CPU {worked:.0f} s, client {r['user_s'] + r['sys_s']:.0f} s, "
                    f"server {served:.0f} s; {counts['total'] / len(found):.0f} requests/store; cluster start {started:.1f} s; "
                    f"load average {os.getloadavg()[0]:.1f}"
                )
                name = f"Dask, {workers} worker{'s' if workers > 1 else ''} x 1 thread, folder URL"
                print(row(name, len(found), r["wall_s"], base, r["peak_rss_kib"], busy, notes))
                sys.stdout.flush()
                base = base or len(found) / r["wall_s"]
    finally:
        server.close()
        launcher.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
