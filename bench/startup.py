"""Start-up of a small run, first and warm, from this checkout and from an installed wheel, against `import numpy, h5py`.

    python bench/startup.py [--rounds 30]

Builds the wheel (`pip wheel . --no-deps`, which runs hatch_build.py) and installs it with `pip install
--target` into a temporary directory, so the installed tool reads the built-in packs its build validated;
the same interpreter and dependencies serve both. Each command is `spec-validate` on the small corpus file
with `PYTHONPATH` naming the checkout or the installed copy. Every round runs each command once, in an order
rotated by one each round (round 0 is a discarded warm-up), so drift in the machine's load hits all alike.
"first run" gets a new empty `SPEC_VALIDATE_CACHE_DIR` each time (a fresh CI runner), "warm" one filled
before the rounds. Byte-code goes to a temporary `PYTHONPYCACHEPREFIX`, compiled once, as an installed
tool's is. Prints each command's median and minimum wall time and its median over `import numpy, h5py`'s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL_FILE = ROOT / "conformance-corpus" / "anndata" / "h5ad" / "valid-every-element.h5ad"
BASELINE = "python -c 'import numpy, h5py'"


def install_wheel(work: Path) -> Path:
    """This checkout built as a wheel and installed under `work`; the directory to put on PYTHONPATH."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(work / "wheel")], check=True)
    (wheel,) = (work / "wheel").glob("*.whl")
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True)
    return site


def commands(trees: dict[str, Path], work: Path) -> dict[str, tuple[list[str], dict[str, str], bool]]:
    """Name -> (command, extra environment, whether each run gets a new empty cache directory)."""
    exe = shutil.which("spec-validate", path=str(Path(sys.executable).parent)) or "spec-validate"
    out: dict[str, tuple[list[str], dict[str, str], bool]] = {BASELINE: ([sys.executable, "-c", "import numpy, h5py"], {}, False)}
    for label, tree in trees.items():
        warm = work / f"cache-{label}"
        env = {"PYTHONPATH": str(tree), "SPEC_VALIDATE_CACHE_DIR": str(warm)}
        subprocess.run([exe, str(SMALL_FILE)], env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=True)
        out[f"{label}, warm"] = ([exe, str(SMALL_FILE)], env, False)
        out[f"{label}, first run"] = ([exe, str(SMALL_FILE)], {"PYTHONPATH": str(tree)}, True)
    return out


def measure(cmds: dict[str, tuple[list[str], dict[str, str], bool]], rounds: int, work: Path) -> dict[str, list[float]]:
    names = list(cmds)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 1):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            cmd, env, fresh = cmds[name]
            env = dict(env)
            if fresh:
                env["SPEC_VALIDATE_CACHE_DIR"] = tempfile.mkdtemp(dir=work, prefix="empty-")
            start = time.perf_counter()
            subprocess.run(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=True)
            elapsed = time.perf_counter() - start
            if fresh:
                shutil.rmtree(env["SPEC_VALIDATE_CACHE_DIR"])
            if round_:  # round 0 warms the page and byte-code caches
                times[name].append(elapsed)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed rounds (default 30)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spec-validate-startup-") as tmp:
        work = Path(tmp)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        trees = {"checkout": ROOT, "installed wheel": install_wheel(work)}
        load = os.getloadavg()
        times = measure(commands(trees, work), args.rounds, work)
    base = statistics.median(times[BASELINE])
    print(f"{'command':<34} {'median (s)':>10} {'min (s)':>8} {'/ import numpy, h5py':>21}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<34} {median:>10.3f} {min(samples):>8.3f} {median / base:>21.2f}")
    print(f"{args.rounds} rounds; load average {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
