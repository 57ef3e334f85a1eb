"""Where a metadata-heavy validation spends its time, phase by phase, in one process.

    python bench/metadata_phases.py FILE [--reps 5]

Prints one JSON line of medians over `--reps` runs (after one unrecorded run) of:
- `imports`: importing spec_validate and what a validation imports (timed once, in a fresh process: the first
  run's, since modules stay imported);
- `open`: opening the store; `detect`: writer and era detection, the first to read the root's members;
- `evaluate`: the engine's run on the opened store, every document and listing read for the first time;
- `evaluate_warm`: the same run again on the same opened store, every document and listing already read: what the
  clauses themselves cost (selectors, checks, the array scans), with no reading of metadata;
- `metadata_reads`: `evaluate` - `evaluate_warm`, what reading the metadata cost inside the engine's run;
- `scan`: the array scans alone (within `evaluate_warm`).
CPU seconds of this process (`time.process_time`), which other work on the machine disturbs less than wall time.
The garbage collector is set as the command sets it (`cli.console`: off during imports, then the objects alive frozen
and the youngest collected every `cli.YOUNG_OBJECTS` allocations), or each phase would carry the collections
Python's defaults make. A figure for comparing the phases with each other and with bench/metadata_floor.py, not a
target.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

gc.disable()
started = time.process_time()
import spec_validate  # noqa: E402  (timed)
from spec_validate.cli import YOUNG_OBJECTS  # noqa: E402
from spec_validate.engine import run as engine_run  # noqa: E402
from spec_validate.engine.loader import builtin_packs, packs_to_run  # noqa: E402
from spec_validate.engine.provenance import detect  # noqa: E402
from spec_validate.engine.scan import SerialScanner  # noqa: E402
from spec_validate.nodes.open import open_store  # noqa: E402

IMPORTS = time.process_time() - started
gc.freeze()
gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
gc.enable()


class TimedScanner(SerialScanner):
    """The serial scanner, its time added up (one thread: the phases are not interleaved)."""

    spent = 0.0

    def run(self, *args, **kwargs):
        start = time.process_time()
        try:
            return super().run(*args, **kwargs)
        finally:
            TimedScanner.spent += time.process_time() - start


def phases(path: str) -> dict[str, float]:
    packs = packs_to_run(builtin_packs(), [])
    selection = spec_validate.Selection()
    out = {}
    t = time.process_time()
    with open_store(path, True) as tree:
        out["open"] = time.process_time() - t
        engine_run.prefer_attributes(tree, packs, selection)
        t = time.process_time()
        provenance = detect(tree)
        out["detect"] = time.process_time() - t
        for name in ("evaluate", "evaluate_warm"):
            TimedScanner.spent = 0.0
            t = time.process_time()
            engine_run.evaluate(tree, packs, selection, scanner=TimedScanner(), provenance=provenance)
            out[name] = time.process_time() - t
        out["scan"] = TimedScanner.spent
    out["metadata_reads"] = out["evaluate"] - out["evaluate_warm"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    phases(args.path)  # unrecorded: lazily imported modules, the page cache
    runs = [phases(args.path) for _ in range(args.reps)]
    medians = {key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]}
    print(json.dumps({"file": args.path, "imports": round(IMPORTS, 3), **medians}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
