"""A sharded Zarr v3 array of 2e8 values: spec-validate --deep against decoding the same shards with zarr-python.

    python bench/zarr3_sharded.py [--values 2e8] [--reps 3] [--data bench/data]

Writes (once, cached under --data) a 1-D int32 array of `--values` elements with zarr-python 3: shards of 2**22
elements, inner chunks of 2**16 (zstd), index at the end with crc32c. Then times, each in a fresh process started
from this stdlib-only parent (so each peak RSS is the child's own), best of `--reps`:

- zarr-python: open the array and read it shard by shard (`a[i:i + shard]`), which decodes every inner chunk once
  in bounded memory, with zarr-python's own concurrency;
- spec-validate: `python -m spec_validate STORE --deep --quiet --exit-zero` (all built-in packs; the zarr3 pack reads the
  array once: every inner chunk decoded through spec_validate/codecs/decode.py, every shard index checked).

Prints the figures and the ratio; the acceptance target is spec-validate at most 1.3x zarr-python. Run on an idle
machine: both read from the page cache after the first repetition.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARD = 2**22
INNER = 2**16
TARGET = 1.3

WRITE = """
import sys, warnings, numpy as np, zarr
from zarr.codecs import ZstdCodec
warnings.simplefilter("ignore")
path, n, shard, inner = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
a = zarr.create_array(path, shape=(n,), chunks=(inner,), shards=(shard,), dtype="int32", fill_value=0, zarr_format=3,
                      compressors=[ZstdCodec(level=1)])
for start in range(0, n, shard):
    stop = min(n, start + shard)
    a[start:stop] = (np.arange(start, stop, dtype=np.int64) * 2654435761 % 100_003).astype("int32")
"""

READ_ZARR = """
import sys, zarr
a = zarr.open_array(sys.argv[1], mode="r")
n, shard, total = a.shape[0], int(sys.argv[2]), 0
for start in range(0, n, shard):
    total += int(a[start:start + shard][-1])
print(total)
"""


def spawn(cmd: list[str]) -> dict:
    """Run `cmd`; its wall time and its own peak RSS (os.wait4 on a child of this stdlib-only process)."""
    t0 = time.perf_counter()
    pid = os.posix_spawnp(
        cmd[0], cmd, {**os.environ, "PYTHONPATH": ROOT}, file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
    )
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:3]} failed with {os.waitstatus_to_exitcode(status)}")
    return {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=float, default=2e8)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data", default=os.path.join(ROOT, "bench", "data"))
    args = parser.parse_args(argv)
    n = int(args.values)
    store = os.path.join(args.data, f"zarr3-sharded-{n:.0e}.zarr".replace("+", ""))
    if not os.path.isfile(os.path.join(store, "zarr.json")):
        os.makedirs(args.data, exist_ok=True)
        print(f"writing {store} ...", file=sys.stderr)
        spawn([sys.executable, "-c", WRITE, store, str(n), str(SHARD), str(INNER)])
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store) for f in fs)
    runs = {
        "zarr-python": [sys.executable, "-c", READ_ZARR, store, str(SHARD)],
        "spec-validate --deep": [sys.executable, "-m", "spec_validate", store, "--deep", "--quiet", "--exit-zero"],
    }
    best: dict[str, dict] = {}
    for _ in range(args.reps):
        for name, cmd in runs.items():
            got = spawn(cmd)
            if name not in best or got["wall_s"] < best[name]["wall_s"]:
                best[name] = got
    ratio = best["spec-validate --deep"]["wall_s"] / best["zarr-python"]["wall_s"]
    print(
        f"sharded Zarr v3, {n:.1e} int32 values ({n * 4 / 2**20:.0f} MiB decoded, {size / 2**20:.0f} MiB stored), "
        f"shards of {SHARD} values, inner chunks of {INNER} (zstd); {os.cpu_count()} cores; best of {args.reps}"
    )
    for name, got in best.items():
        print(f"  {name:<22} {got['wall_s']:7.2f} s wall  {got['cpu_s']:7.2f} s cpu  {got['peak_rss_mib']:7.0f} MiB peak RSS")
    print(f"  ratio {ratio:.2f}x (target <= {TARGET}x): {'met' if ratio <= TARGET else 'NOT met'}")
    print(json.dumps({"values": n, "ratio": round(ratio, 3), **{k: v for k, v in best.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
