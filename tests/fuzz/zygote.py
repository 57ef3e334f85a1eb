"""A warm process that forks one child per fuzz input: each child runs `spec_validate.cli.main` once and exits.

Starting a Python process and importing numpy, h5py and the tool costs most of a small input's run; a child forked
from this process starts with all of that done. Each child is its own process group (so a grandchild, such as the
one `--timeout` starts, dies with it), writes stdout and stderr to files, and is killed when it outlives its limit.
Its peak resident memory comes from `os.wait4` (the largest of its own and its reaped children's). No store is
ever opened here before a fork, so no child inherits a half-held HDF5 or TileDB lock.

Protocol: one JSON object per line on stdin, {"argv": [...], "stdout": path, "stderr": path, "limit": seconds};
one JSON line back per input: {"code", "signal", "peak_mb", "seconds", "killed"}.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time


def warm() -> None:
    import h5py  # noqa: F401
    import jsonschema  # noqa: F401
    import numcodecs  # noqa: F401
    import numpy  # noqa: F401

    import spec_validate.cli  # noqa: F401
    from spec_validate.engine.loader import builtin_packs

    builtin_packs()


def child(request: dict) -> None:
    os.setpgid(0, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    code = 99
    try:
        from spec_validate.cli import main

        code = main(request["argv"])
    except BaseException:  # noqa: BLE001 (what main lets through is a defect the harness reports)
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 98)


def run(request: dict) -> dict:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child(request)
    deadline = start + float(request["limit"])
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            killed = True
            _kill_group(pid)
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    _kill_group(pid)  # anything the child left behind
    return {
        "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "peak_mb": usage.ru_maxrss / 1024,
        "seconds": time.monotonic() - start,
        "killed": killed,
    }


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def main() -> None:
    warm()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
