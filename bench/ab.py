"""Interleaved A/B runs of two trees of the tool on the same inputs: whole processes, median wall time, peak RSS.

    git worktree add --detach /tmp/before <commit>
    python bench/ab.py --before /tmp/before --after . FILE [FILE ...] [--reps 5]

Each side is a source tree run as `python -m <package> FILE --format json -o /dev/null` with its own folder first on
PYTHONPATH and a pack cache of its own; `--before-package validator` for trees from before the package was renamed.
Each input is run once per side (page and pack caches warm), then `--reps` times per side in turn, so a host's drift
falls on both sides alike. Prints one line per input; the ratio is after / before.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(root: str, package: str, cache: str, path: str) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one whole run of the tree at `root` on `path`."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(root), "SPEC_VALIDATE_CACHE_DIR": cache}
    command = [sys.executable, "-P", "-m", package, path, "--quiet", "--exit-zero", "--format", "json", "-o", os.devnull]
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    return wall, int(done.stderr.strip().splitlines()[-1]) / 1024, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--before", required=True, help="the source tree to compare against")
    parser.add_argument("--after", default=".", help="the source tree measured (default: this checkout)")
    parser.add_argument("--before-package", default="spec_validate")
    parser.add_argument("--after-package", default="spec_validate")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    sides = {"before": (args.before, args.before_package), "after": (args.after, args.after_package)}
    caches = {side: tempfile.mkdtemp(prefix=f"spec-validate-ab-{side}-") for side in sides}
    for path in args.files:
        for side, (root, package) in sides.items():
            run(root, package, caches[side], path)
        samples: dict[str, list[tuple[float, float, int]]] = {side: [] for side in sides}
        for _ in range(args.reps):
            for side, (root, package) in sides.items():
                samples[side].append(run(root, package, caches[side], path))
        wall = {side: statistics.median(s[0] for s in got) for side, got in samples.items()}
        rss = {side: max(s[1] for s in got) for side, got in samples.items()}
        codes = {side: sorted({s[2] for s in got}) for side, got in samples.items()}
        print(
            f"{os.path.basename(path.rstrip('/')):40s} before {wall['before']:7.3f} s  after {wall['after']:7.3f} s  "
            f"ratio {wall['after'] / wall['before']:5.2f}  rss {rss['before']:.0f}/{rss['after']:.0f} MB  "
            f"exit {codes['before']}/{codes['after']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
