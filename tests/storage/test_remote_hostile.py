"""Every hostile HDF5 case of the corpus read over HTTP gets the report it gets locally: the checks that keep the
HDF5 library off structures it would loop, recurse or run out of memory on read the file's bytes from wherever they
come. (A file of one block, as these are, has no range reader: its chunk indexes are checked through its file
object; before, the library walked them unchecked over HTTP, and the cyclic chunk index crashed the process.)

Each run is a process of its own, under a time limit: a case that crashes or hangs fails the test, not the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from latency_server import LatencyServer

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "conformance-corpus" / "hostile"
CASES = sorted(p.relative_to(HOSTILE).as_posix() for p in (HOSTILE / "h5ad").glob("*.h5ad"))


@pytest.fixture(scope="module")
def server():
    with LatencyServer(HOSTILE) as served:
        yield served


def report(source: str, out: Path) -> dict:
    """The CLI's JSON report of `source` (its `source` field left out), from a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [sys.executable, "-m", "spec_validate", source, "--format", "json", "--output", str(out), "--quiet", "--isolated"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=out.parent)
    assert run.returncode in (0, 1), f"exit {run.returncode}: {run.stderr[-2000:]}"
    found = json.loads(out.read_text(encoding="utf-8"))["reports"][0]
    found.pop("source")
    return found


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_case_over_http_gets_its_local_report(case, server, tmp_path):
    remote = report(f"{server.url}/{case}", tmp_path / "remote.json")
    assert remote == report(str(HOSTILE / case), tmp_path / "local.json")
