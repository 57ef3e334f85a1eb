"""Peak memory of spec-validate on an h5ad with a 50,000,000-nnz CSR X (not part of the test suite).

Run as `python bench/memory_50m_nnz.py`. The file is generated once into bench/data/ (git-ignored) with
h5py directly, row block by row block, so generation itself stays memory-bounded; then `spec-validate`
runs on it in a subprocess and the script prints wall time and the child's peak RSS, and whether the
peak stays under 500 MB.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

DATA = Path(__file__).resolve().parent / "data"
N_OBS = 1_000_000
N_VAR = 20_000
PER_ROW = 50  # 50,000,000 stored values
ROW_BLOCK = 50_000
CHUNK = 1 << 20
LIMIT_MB = 500


def string_dtype() -> h5py.Datatype:
    return h5py.string_dtype(encoding="utf-8")


def write_dataframe(f: h5py.File, name: str, labels_count: int, prefix: str) -> None:
    """A dataframe with a string index and no columns, written in blocks."""
    g = f.create_group(name)
    g.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index"})
    g.attrs["column-order"] = np.array([], dtype=object).astype(string_dtype())
    idx = g.create_dataset("_index", shape=(labels_count,), dtype=string_dtype(), chunks=(min(CHUNK, labels_count),))
    idx.attrs.update({"encoding-type": "string-array", "encoding-version": "0.2.0"})
    for start in range(0, labels_count, 200_000):
        stop = min(start + 200_000, labels_count)
        idx[start:stop] = np.array([f"{prefix}{i}" for i in range(start, stop)], dtype=object)


def generate(path: Path) -> None:
    rng = np.random.default_rng(50_000_000)
    nnz = N_OBS * PER_ROW
    tmp = path.with_suffix(".partial")
    with h5py.File(tmp, "w") as f:
        f.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        x = f.create_group("X")
        x.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": np.array([N_OBS, N_VAR])})
        indptr = x.create_dataset("indptr", shape=(N_OBS + 1,), dtype=np.int64, chunks=(min(CHUNK, N_OBS + 1),))
        indices = x.create_dataset("indices", shape=(nnz,), dtype=np.int32, chunks=(CHUNK,))
        data = x.create_dataset("data", shape=(nnz,), dtype=np.float32, chunks=(CHUNK,))
        indptr[:] = np.arange(N_OBS + 1, dtype=np.int64) * PER_ROW
        for row in range(0, N_OBS, ROW_BLOCK):
            lo, hi = row * PER_ROW, min(row + ROW_BLOCK, N_OBS) * PER_ROW
            indices[lo:hi] = rng.integers(0, N_VAR, hi - lo, dtype=np.int32)
            data[lo:hi] = rng.random(hi - lo, dtype=np.float32)
        write_dataframe(f, "obs", N_OBS, "cell")
        write_dataframe(f, "var", N_VAR, "gene")
    tmp.rename(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regenerate", action="store_true", help="rewrite the cached file")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"csr_{N_OBS * PER_ROW // 1_000_000}m_nnz.h5ad"
    if args.regenerate or not path.exists():
        t0 = time.perf_counter()
        generate(path)
        print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    exe = shutil.which("spec-validate", path=str(Path(sys.executable).parent)) or "spec-validate"
    t0 = time.perf_counter()
    proc = subprocess.run([exe, str(path), "--format", "json"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    print(f"spec-validate exit code {proc.returncode}")
    if proc.returncode == 2:
        print(proc.stderr.strip())
    print(f"wall time: {wall:.1f} s")
    print(f"peak RSS:  {peak_mb:.0f} MB")
    ok = peak_mb < LIMIT_MB
    print(f"peak RSS < {LIMIT_MB} MB: {'yes' if ok else 'NO'}")
    return 0 if ok and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
