"""A small process that starts the timed children, so their peak RSS is their own.

On Linux a child's `ru_maxrss` is the larger of its own peak and the resident size of the process it was
forked from at exec time (exec records the old address space's high-water mark). Started from the
harness, which has numpy, h5py and zarr loaded, every child would report at least the harness's size.
This launcher imports only the standard library (run with `python -S`, about 10 MB, less than any timed
Python process), so the figure from `os.wait4` is the child's.

Protocol: one JSON object per line on stdin, {"cmd": [...], "cwd": ..., "stdout": path, "stderr": path,
"env": {extra variables}};
one JSON line back per command: wall time measured here around spawn and wait, and the child's rusage.
"""

import json
import os
import sys
import time


def run(request: dict) -> dict:
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        (os.POSIX_SPAWN_OPEN, 2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
    ]
    cwd = request.get("cwd")
    if cwd:
        os.chdir(cwd)
    t0 = time.perf_counter()
    env = {**os.environ, **request.get("env", {})}
    # Measure Python as users run it: with bytecode caches. Some sandboxes and CI images set this variable,
    # which makes every run recompile the modules without a cache (spec-validate's own, not numpy's).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pid = os.posix_spawnp(request["cmd"][0], request["cmd"], env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "peak_rss_kib": usage.ru_maxrss,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "rc": os.waitstatus_to_exitcode(status),
    }


def main() -> None:
    for line in sys.stdin:
        try:
            reply = run(json.loads(line))
        except OSError as exc:  # the command could not be started
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
