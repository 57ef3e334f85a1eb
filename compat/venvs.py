"""Build (or reuse) one virtual environment per reader or writer release, under compat/.venvs/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from readers import Reader

VENVS = Path(__file__).resolve().parent / ".venvs"


def venv_python(reader: Reader) -> Path:
    return VENVS / reader.venv / "bin" / "python"


def _stamp(reader: Reader) -> str:
    return json.dumps({"python": str(reader.python), "requirements": list(reader.requirements)}, sort_keys=True)


def ensure(reader: Reader, log=print) -> Path:
    """The venv's interpreter, building the venv first unless one with the same pins is there already.

    A stamp file records the interpreter and pins the venv was built with, so changing a pin rebuilds it rather
    than measuring with a stale environment.
    """
    root = VENVS / reader.venv
    stamp = root / "compat-stamp.json"
    python = venv_python(reader)
    if stamp.is_file() and stamp.read_text() == _stamp(reader) and python.exists():
        return python
    log(f"building {root.relative_to(VENVS.parent)} ({reader.python.parent.parent.name}: {' '.join(reader.requirements)})")
    subprocess.run([str(reader.python), "-m", "venv", "--clear", str(root)], check=True)
    # nice: the machine is shared, and installs (some compile) are the heaviest part of a first run.
    cmd = ["nice", "-n", "5", str(python), "-m", "pip", "install", "--quiet", "--no-input", *reader.requirements]
    result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PIP_NO_CACHE_DIR": "0"})
    if result.returncode != 0:
        raise RuntimeError(f"pip install failed for {reader.key}:\n{result.stderr[-3000:]}")
    stamp.write_text(_stamp(reader))
    return python


def frozen(reader: Reader) -> dict[str, str]:
    """The recorded packages' versions as `pip freeze` reports them in the reader's venv."""
    out = subprocess.run([str(venv_python(reader)), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    versions = {}
    for line in out.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            versions[name.lower().replace("_", "-")] = version
    return {name: versions[name] for name in sorted(reader.recorded) if name in versions}


if __name__ == "__main__":
    # Build the named venvs (all when none is named): `python compat/venvs.py anndata@0.7.8 ...`.
    from readers import READERS, WRITERS, by_key

    wanted = [by_key()[k] for k in sys.argv[1:]] or list(READERS + WRITERS)
    for r in wanted:
        try:
            ensure(r)
            print(f"ok {r.key}", flush=True)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"FAILED {r.key}: {exc}", flush=True)
