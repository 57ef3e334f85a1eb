"""Validate fuzz inputs, each in its own process, and check what must hold for every input whatever it holds.

Each input is run as a user runs the tool: with its default flags (no `--timeout`, no `--memory-limit`; `flags`
adds others, as `python -m tests.fuzz --flag=--timeout=20` does). The harness is the judge of time and memory: a
run still going after `LIMIT` seconds is killed and is a defect, and so is a peak resident memory above `PEAK_MB`.
For every input: exit code 0 or 1, or 2 only for an input that cannot be opened at all (`OPEN_FAILURES`: its one
error line says so); no traceback and no `internal error` line; no crash (a native reader's crash that the tool
contained and reported as an unreadable part is counted, not a defect: that is the guarantee holding); a JSON
report valid against `spec_validate/report/report.schema.json` that names the path given (never an enclosing
folder); the input's files keep their bytes, modes and modification times; the canary beside the input keeps its
access times and none of its bytes appear in anything the tool printed.

`remote=True` validates each input over HTTP instead: the inputs are served by tests/latency_server.py (in
this process, one server per worker) and the tool is given the input's URL (one input in four with `--no-list`,
which reads a Zarr store from its consolidated metadata alone). The same checks hold but two: the
server, not the tool, resolves a symlink inside the input (to the canary too), so the canary's access times and
bytes say nothing about the tool there; and the report names the URL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz import mutators

REPO = mutators.REPO
SCHEMA = REPO / "spec_validate" / "report" / "report.schema.json"
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
LIMIT = 60.0  # seconds an input may take, judged here: the tool runs with no --timeout of its own
PEAK_MB = 500.0  # peak resident memory an input may take (the largest of the tool's process and its children)
# What an exit 2 may say: the input cannot be opened at all (not a store this tool reads, or nothing there), or no
# pack describes it. Any other exit 2 is an input the tool gave up on: a defect.
OPEN_FAILURES = (
    "no such file or directory",
    "not a regular file or directory",
    "permission denied",
    "a directory, but not a Zarr store",
    "a .cxg directory, but no TileDB group or array",
    "not an HDF5 file or a Zarr store",
    "a zip file, but not a zipped Zarr store",
    "cannot open as a zip store",
    "cannot open as HDF5",
    "its root group cannot be opened",
    "not a TileDB group or array",
    "no rule pack applies",
)
# What the tool reports when a native reader it runs apart (TileDB's) crashed: that part unreadable, the rest reported.
CONTAINED_CRASH = b"TileDB reader crashed"


@dataclass
class Result:
    index: int
    format: str
    base: str
    mutations: list[str]
    code: int | None = None
    peak_mb: float = 0.0
    seconds: float = 0.0
    defects: list[str] = field(default_factory=list)
    timed_out: bool = False  # the tool reported its own timeout (under --timeout only; not a defect)
    contained: bool = False  # a native reader crashed, and the tool reported that part unreadable (not a defect)

    def line(self) -> str:
        return (
            f"#{self.index} {self.format} {self.base} exit={self.code} {self.peak_mb:.0f}MB {self.seconds:.1f}s\n"
            f"    mutations: {'; '.join(self.mutations)}\n"
            + ("    timed out (the tool's own --timeout: reported, not a defect)\n" if self.timed_out else "")
            + ("    a reader crash, contained and reported unreadable (not a defect)\n" if self.contained else "")
            + "".join(f"    DEFECT: {d}\n" for d in self.defects)
        )


class Zygote:
    """A warm process (tests/fuzz/zygote.py) started through a launcher so the children's peak RSS is their own."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        # A pack cache of its own, removed on close (one left behind per run filled /tmp).
        self._cache = None if "SPEC_VALIDATE_CACHE_DIR" in env else tempfile.mkdtemp(prefix="spec-validate-fuzz-cache-")
        if self._cache is not None:
            env["SPEC_VALIDATE_CACHE_DIR"] = self._cache
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, sys.executable, "-m", "tests.fuzz.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError("the fuzz zygote did not start")

    def run(self, argv: list[str], stdout: Path, stderr: Path, limit: float) -> dict:
        self.proc.stdin.write(json.dumps({"argv": argv, "stdout": str(stdout), "stderr": str(stderr), "limit": limit}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the fuzz zygote died")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)


_validator = None
_lock = threading.Lock()


def schema_validator():
    global _validator
    with _lock:
        if _validator is None:
            import jsonschema

            _validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    return _validator


def leaked(token: bytes, texts: list[bytes]) -> str | None:
    """What of the canary's bytes a text shows: the token, or one of its 8-byte words read as an integer."""
    needles = [token, token[:12]]
    for i in range(0, 40, 8):
        word = token.ljust(48, b"!")[i : i + 8]
        needles += [str(int.from_bytes(word, "little", signed=True)).encode(), str(int.from_bytes(word, "little")).encode()]
    for text in texts:
        for needle in needles:
            if needle in text:
                return needle.decode(errors="replace")
    return None


def fuzz_one(
    index: int,
    seed: int,
    zygote: Zygote,
    root: Path,
    limit: float = LIMIT,
    peak_mb: float = PEAK_MB,
    formats: tuple[str, ...] = mutators.FORMATS,
    keep: bool = False,
    served_at: str | None = None,
    flags: tuple[str, ...] = (),
) -> Result:
    """Make input `index` of run `seed` under `root`, validate it in a child of `zygote`, check it; remove it unless kept.

    `served_at`: the URL of a server of `root`; the input is then validated by its URL (see the module's doc).
    `flags`: the tool's flags beyond its defaults (none by default).
    """
    work = root / f"{index:05d}"
    if work.exists():
        mutators.remove_tree(work)
    work.mkdir(parents=True)
    inp = mutators.make_input(index, seed, work, formats)
    return check_input(inp, index, work, zygote, root, limit, peak_mb, keep, served_at, flags)


def check_input(
    inp: mutators.Input,
    index: int,
    work: Path,
    zygote: Zygote,
    root: Path,
    limit: float = LIMIT,
    peak_mb: float = PEAK_MB,
    keep: bool = False,
    served_at: str | None = None,
    flags: tuple[str, ...] = (),
) -> Result:
    """Validate the input made in `work` in a child of `zygote` (`index` picks --jobs and --deep) and check it."""
    result = Result(index, inp.format, inp.base, inp.mutations)
    before = mutators.snapshot(inp.path)
    canary = inp.canary
    atimes = canary.access_times()
    report, out, err = work / "report.json", work / "stdout", work / "stderr"
    target = str(inp.path) if served_at is None else f"{served_at}/{inp.path.relative_to(root).as_posix()}"
    argv = [target, "--format", "json", "--output", str(report), "--jobs", str(1 + index % 2), "--isolated", "--quiet"]
    argv += list(flags)
    if index % 3 == 0:
        argv.append("--deep")
    if served_at is not None and index % 4 == 1:
        argv.append("--no-list")  # a remote Zarr store read from its consolidated metadata alone: a map the input made
    got = zygote.run(argv, out, err, limit)
    result.code, result.peak_mb, result.seconds = got["code"], got["peak_mb"], got["seconds"]
    stderr = err.read_bytes()
    stdout = out.read_bytes()
    text = report.read_bytes() if report.exists() else b""
    d = result.defects
    d.extend(_run_defects(got, stderr, limit, peak_mb))
    if got["code"] in (0, 1, 2):  # exit 2 too: an input that cannot be opened has a report carrying the error
        d.extend(_check_report(text, target))
        result.timed_out = b"timed out after" in text
        result.contained = CONTAINED_CRASH in text
    after = mutators.snapshot(inp.path)
    if after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        d.append(f"input modified: {changed[:5]}")
    if served_at is None and canary.access_times() != atimes:
        d.append("the canary outside the input was read (its access time moved)")
    shown = leaked(canary.token, [stdout, stderr, text]) if served_at is None else None
    if shown:
        d.append(f"canary bytes in the output: {shown!r}")
    if not keep and not d and not result.timed_out and not result.contained:  # kept to look at, not defects
        mutators.remove_tree(work)
    return result


def _run_defects(got: dict, stderr: bytes, limit: float, peak_mb: float) -> list[str]:
    """What is wrong with how the run ended: a run past the time limit, a signal, an exit code other than 0/1/2, a
    traceback or `internal error` line, an exit 2 without its one error line or for an input that can be opened,
    too much memory."""
    d = []
    if got["killed"]:
        d.append(f"still running {limit:.0f} s after it started (killed by the harness)")
    elif got["signal"] is not None:
        d.append(f"killed by signal {got['signal']}")
    elif got["code"] not in (0, 1, 2):
        d.append(f"exit code {got['code']}")
    if b"Traceback" in stderr or b"internal error" in stderr:
        d.append("stderr: " + stderr.decode(errors="replace").strip().splitlines()[-1][:300])
    if got["code"] == 2:
        lines = stderr.decode(errors="replace").strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("spec-validate: error:"):
            d.append(f"exit 2 without one error line: {lines[-3:]}")
        elif not any(phrase in lines[0] for phrase in OPEN_FAILURES):
            d.append(f"exit 2 for an input that opens: {lines[0][:300]}")
    if got["peak_mb"] > peak_mb:
        d.append(f"peak RSS {got['peak_mb']:.0f} MB > {peak_mb:.0f} MB")
    return d


def _check_report(text: bytes, path: str) -> list[str]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return [f"report is not JSON ({exc})"]
    errors = sorted(schema_validator().iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        return [f"report fails its schema: {errors[0].message[:200]} at {list(errors[0].path)}"]
    out = []
    if b"internal error" in text or b"Traceback" in text:
        line = next(ln for ln in text.decode(errors="replace").splitlines() if "internal error" in ln or "Traceback" in ln)
        out.append(f"internal error in the report: {line.strip()[:300]}")
    if b"the reader crashed" in text:
        # Under --timeout (a flag the harness can be given) the whole input is read in a child process, whose crash
        # the parent reports as unreadable: the run survives, but without --timeout the process would have died.
        line = next(ln for ln in text.decode(errors="replace").splitlines() if "the reader crashed" in ln)
        out.append(f"killed by signal in the reader (reported under --timeout): {line.strip()[:300]}")
    sources = [r["source"] for r in doc["reports"]]
    if sources != [path]:
        out.append(f"report names {sources}, not the input {path!r}")
    return out


def fuzz(
    n: int,
    seed: int,
    root: Path,
    jobs: int = 2,
    limit: float = LIMIT,
    peak_mb: float = PEAK_MB,
    formats: tuple[str, ...] = mutators.FORMATS,
    start: int = 0,
    progress=None,
    keep: bool = False,
    remote: bool = False,
    flags: tuple[str, ...] = (),
) -> list[Result]:
    """Inputs start..start+n-1 of run `seed`, on `jobs` zygotes in parallel; the results in index order. `remote`:
    each validated by its URL, from a server of `root` (see the module's doc); `flags`: the tool's flags beyond its
    defaults."""
    results: list[Result] = []
    lock = threading.Lock()
    queue = iter(range(start, start + n))

    def worker() -> None:
        zygote = Zygote()
        server = _server(root) if remote else None
        served_at = server.url if server is not None else None
        try:
            while True:
                with lock:
                    index = next(queue, None)
                if index is None:
                    return
                try:
                    result = fuzz_one(index, seed, zygote, root, limit, peak_mb, formats, keep, served_at, flags)
                except Exception as exc:  # noqa: BLE001 (the harness's own failure on this input: shown, not hidden)
                    result = Result(index, "?", "?", [], defects=[f"harness: {type(exc).__name__}: {exc}"])
                    if "zygote died" in str(exc):
                        zygote.close()
                        zygote = Zygote()
                with lock:
                    results.append(result)
                    if progress is not None:
                        progress(result)
        finally:
            zygote.close()
            if server is not None:
                server.stop()

    threads = [threading.Thread(target=worker) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(results, key=lambda r: r.index)


def _server(root: Path):
    """tests/latency_server.py serving `root` (no latency: it is the inputs, not the network, under test)."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from latency_server import LatencyServer
    finally:
        sys.path.remove(str(REPO / "tests"))
    return LatencyServer(root, lifetime=24 * 3600).start()


def tally(results: list[Result]) -> str:
    """The counts the issue asks for, per format and in all."""
    lines = []
    by_format = Counter(r.format for r in results)
    defects = Counter()
    for r in results:
        for d in r.defects:
            defects[_kind(d)] += 1
    codes = Counter(r.code for r in results)
    peak = max((r.peak_mb for r in results), default=0.0)
    lines.append(f"inputs: {len(results)} ({', '.join(f'{f} {c}' for f, c in sorted(by_format.items()))})")
    lines.append(f"exit codes: {', '.join(f'{c}: {n}' for c, n in sorted(codes.items(), key=lambda x: str(x[0])))}")
    lines.append(f"tool-reported timeouts: {sum(r.timed_out for r in results)}")
    lines.append(f"reader crashes contained (reported unreadable): {sum(r.contained for r in results)}")
    for kind in (
        "traceback or internal error",
        "past the time limit",
        "crash (signal)",
        "bad exit code",
        "exit 2 for an input that opens",
        "input modified",
        "read outside the input",
        "canary bytes shown",
        "peak RSS over the limit",
        "report invalid",
        "wrong input validated",
        "harness",
    ):
        lines.append(f"{kind}: {defects.get(kind, 0)}")
    lines.append(f"peak RSS: max {peak:.0f} MB")
    slowest = max(results, key=lambda r: r.seconds, default=None)
    if slowest is not None:
        lines.append(f"time: max {slowest.seconds:.1f} s (#{slowest.index}, {slowest.format})")
    lines.append(f"inputs with a defect: {sum(1 for r in results if r.defects)}")
    return "\n".join(lines)


def _kind(defect: str) -> str:
    if defect.startswith(("stderr", "internal error")):
        return "traceback or internal error"
    if defect.startswith("still running"):
        return "past the time limit"
    if defect.startswith("killed by signal"):
        return "crash (signal)"
    if defect.startswith("exit 2 for an input that opens"):
        return "exit 2 for an input that opens"
    if defect.startswith("exit"):
        return "bad exit code"
    if defect.startswith("input modified"):
        return "input modified"
    if defect.startswith("the canary"):
        return "read outside the input"
    if defect.startswith("canary bytes"):
        return "canary bytes shown"
    if defect.startswith("peak RSS"):
        return "peak RSS over the limit"
    if defect.startswith("report names"):
        return "wrong input validated"
    if defect.startswith("report"):
        return "report invalid"
    return "harness"
