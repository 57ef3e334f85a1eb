"""`python -m tests.fuzz --n 10000`: the fuzzer on demand; prints every input with a defect and the tally at the end."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tests.fuzz import mutators, runner


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    p.add_argument("--n", type=int, default=1000, help="inputs to make and validate (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="the run's seed: the same seed makes the same inputs")
    p.add_argument("--start", type=int, default=0, help="the first input's index (to replay one: --start I --n 1)")
    p.add_argument("--jobs", type=int, default=2, help="inputs validated at once (default 2)")
    p.add_argument(
        "--limit", type=float, default=runner.LIMIT, help=f"seconds an input may take (default {runner.LIMIT:g}): killed past it"
    )
    p.add_argument("--peak-mb", type=float, default=runner.PEAK_MB, help="peak resident memory allowed per input")
    p.add_argument("--format", action="append", choices=mutators.FORMATS, help="only these formats (repeatable)")
    p.add_argument(
        "--work", help="where inputs are made (default: a temporary folder); inputs with a defect or a timeout are kept"
    )
    p.add_argument("--keep", action="store_true", help="keep every input, not only those with a defect")
    p.add_argument("--remote", action="store_true", help="validate each input by its URL, from a loopback HTTP server")
    p.add_argument(
        "--flag",
        action="append",
        default=[],
        help="a flag of the tool beyond its defaults (repeatable; --flag=--timeout=20): by default none",
    )
    args = p.parse_args(argv)
    root = Path(args.work or tempfile.mkdtemp(prefix="spec-validate-fuzz-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = 0

    def progress(result: runner.Result) -> None:
        nonlocal done
        done += 1
        if result.defects or result.timed_out:
            print(result.line(), end="", flush=True)
        if done % 100 == 0:
            print(f"... {done}/{args.n} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    results = runner.fuzz(
        args.n,
        args.seed,
        root,
        args.jobs,
        args.limit,
        args.peak_mb,
        tuple(args.format or mutators.FORMATS),
        args.start,
        progress,
        args.keep,
        args.remote,
        tuple(args.flag),
    )
    print(
        f"\nseed {args.seed}, inputs {args.start}..{args.start + args.n - 1}, {time.monotonic() - started:.0f} s, "
        f"tool flags: {' '.join(args.flag) or 'the defaults'}; inputs with defects kept under {root}"
    )
    print(runner.tally(results))
    timed_out = [r.index for r in results if r.timed_out and not r.defects]
    if timed_out:
        # Not counted as defects (a slow machine can time out a sound input), but each has been a hang so far (an
        # index the library iterated for hours, a declared grid asked for chunk by chunk): look at every one.
        print(f"to look at: inputs {timed_out} ran into the tool's own --timeout (replay one: --start I --n 1 --keep)")
    contained = [r.index for r in results if r.contained and not r.defects]
    if contained:
        # Not defects (the crash is the input's finding), but each is a corrupt field no check found first.
        print(f"to look at: inputs {contained} crashed a native reader, contained (replay one: --start I --n 1 --keep)")
    return 1 if any(r.defects for r in results) or timed_out or contained else 0


if __name__ == "__main__":
    sys.exit(main())
