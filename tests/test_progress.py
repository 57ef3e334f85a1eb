"""The progress bar: on a terminal's stderr only, never with --quiet, TERM=dumb or a pipe; the report is the same either way."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from corpus_paths import CASES, VALID_H5AD

from spec_validate.cli import build_parser
from spec_validate.progress import DELAY_ENV, bar_wanted, human, progress_delay

SECOND_H5AD = CASES / "h5ad" / "anndata-var-missing.h5ad"


@dataclass(frozen=True)
class Run:
    code: int
    stdout: bytes
    stderr: bytes  # what the pseudo-terminal or the pipe on stderr received


def spec_validate(args, *, terminal: bool, env_extra=None, cwd=None, argv_prefix=("-m", "spec_validate")) -> Run:
    """Run the CLI with stdout on a pipe and stderr on a pseudo-terminal (terminal=True) or a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TTY_COMPATIBLE")}
    env.update({"TERM": "xterm-256color", DELAY_ENV: "0"})
    env.update(env_extra or {})
    env = {k: v for k, v in env.items() if v is not None}
    command = [sys.executable, *argv_prefix, *map(str, args)]
    if not terminal:
        done = subprocess.run(command, capture_output=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL, timeout=60)
        return Run(done.returncode, done.stdout, done.stderr)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows, 100 columns
    chunks: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the slave side
                return
            if not data:
                return
            chunks.append(data)

    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        os.close(slave)
        reader = threading.Thread(target=read_terminal, daemon=True)
        reader.start()
        stdout, _ = proc.communicate(timeout=60)
        reader.join(timeout=10)
    finally:
        os.close(master)
    return Run(proc.returncode, stdout, b"".join(chunks))


MODES = {
    "terminal": dict(terminal=True),
    "terminal-quiet": dict(terminal=True, quiet=True),
    "pipe": dict(terminal=False),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[tuple[str, str], Run]:
    """Each report format in each mode, once for the module (from an empty directory: no [tool.spec-validate])."""
    cwd = tmp_path_factory.mktemp("cwd")

    def one(fmt: str, mode: str) -> Run:
        how = MODES[mode]
        args = [VALID_H5AD, "--format", fmt] + (["--quiet"] if how.get("quiet") else [])
        return spec_validate(args, terminal=how["terminal"], cwd=cwd)

    keys = [(fmt, mode) for fmt in ("json", "sarif") for mode in MODES]
    with ThreadPoolExecutor(3) as pool:  # six short subprocesses, mostly start-up: overlap them
        return dict(zip(keys, pool.map(lambda key: one(*key), keys), strict=True))


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_bar_drawn_on_a_terminal_and_erased(runs, fmt):
    run = runs[fmt, "terminal"]
    assert run.code == 0, run.stderr
    text = run.stderr.decode("utf-8", "replace")
    assert "valid-every-element.h5ad" in text  # the input's name
    assert re.search(r"\d+/\d+ elements", text)  # elements done / total
    assert "%" in text
    assert text.endswith("\x1b[2K")  # transient: the last thing written erases the bar's line


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_quiet_draws_nothing_on_a_terminal(runs, fmt):
    assert runs[fmt, "terminal-quiet"].stderr == b""


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_no_bar_when_stderr_is_not_a_terminal(runs, fmt):
    assert runs[fmt, "pipe"].stderr == b""


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_report_is_byte_identical_with_and_without_the_bar(runs, fmt):
    outputs = {mode: runs[fmt, mode].stdout for mode in MODES}
    assert outputs["terminal"] == outputs["terminal-quiet"] == outputs["pipe"]
    json.loads(outputs["terminal"])  # and it is the whole report, untouched by the bar
    assert b"\x1b" not in outputs["terminal"]


def test_term_dumb_draws_nothing(tmp_path):
    run = spec_validate([VALID_H5AD, "--format", "json"], terminal=True, env_extra={"TERM": "dumb"}, cwd=tmp_path)
    assert run.code == 0
    assert run.stderr == b""


def test_no_colour_with_no_color_set(tmp_path):
    run = spec_validate([VALID_H5AD, "--format", "json"], terminal=True, env_extra={"NO_COLOR": "1"}, cwd=tmp_path)
    assert b"valid-every-element.h5ad" in run.stderr
    assert not re.search(rb"\x1b\[[0-9;]*m", run.stderr)  # cursor movement only, no colour or style


def test_several_inputs_in_worker_processes_count_files(tmp_path):
    run = spec_validate([VALID_H5AD, SECOND_H5AD, "--jobs", "2", "--format", "json"], terminal=True, cwd=tmp_path)
    text = run.stderr.decode("utf-8", "replace")
    assert re.search(r"\d/2 files", text), text
    assert "elements" not in text  # workers draw no per-input bars
    assert len(json.loads(run.stdout)["reports"]) == 2


PROBE = """
import json, sys
from spec_validate.cli import main
code = main(sys.argv[1:] + ["--format", "json", "--output", "/dev/null"])
print(json.dumps({"code": code, "rich": any(m.split(".")[0] == "rich" for m in sys.modules)}))
"""


def test_scan_shorter_than_the_delay_never_imports_rich(tmp_path):
    run = spec_validate([VALID_H5AD], terminal=True, env_extra={DELAY_ENV: None}, cwd=tmp_path, argv_prefix=("-c", PROBE))
    assert json.loads(run.stdout) == {"code": 0, "rich": False}
    assert run.stderr == b""


TIMING = """
import io, json, sys, time
from spec_validate.progress import TerminalProgress

class Terminal(io.StringIO):
    def isatty(self):
        return True

early = Terminal()
with TerminalProgress("x.h5ad", stream=early, delay=60) as bar:
    bar.start(100)
    bar.advance(100)
early_rich = "rich" in sys.modules

late = Terminal()
with TerminalProgress("x.h5ad", stream=late, delay=0.05) as bar:
    bar.start(100)
    time.sleep(0.4)  # no advance: the bar appears once the delay has passed, as a long first block reads
    drawn = bar.drawn
print(json.dumps({"early": early.getvalue(), "early_rich": early_rich, "drawn": drawn, "late": late.getvalue()}))
"""


def test_bar_appears_only_after_the_delay():
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR",)}
    env["TERM"] = "xterm-256color"
    done = subprocess.run([sys.executable, "-c", TIMING], capture_output=True, text=True, env=env, timeout=60, check=True)
    got = json.loads(done.stdout)
    assert got["early"] == "" and got["early_rich"] is False
    assert got["drawn"] is True
    assert "x.h5ad" in got["late"]


class FakeTerminal:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    "tty,quiet,term,expected",
    [
        pytest.param(True, False, "xterm", True, id="terminal"),
        pytest.param(True, True, "xterm", False, id="quiet"),
        pytest.param(True, False, "dumb", False, id="term-dumb"),
        pytest.param(False, False, "xterm", False, id="not-a-terminal"),
    ],
)
def test_bar_wanted(monkeypatch, tty, quiet, term, expected):
    monkeypatch.setenv("TERM", term)
    assert bar_wanted(FakeTerminal(tty), quiet) is expected


@pytest.mark.parametrize(
    "value,expected",
    [
        pytest.param(None, 1.0, id="default"),
        pytest.param("0", 0.0, id="zero"),
        pytest.param("2.5", 2.5, id="float"),
        pytest.param("soon", 1.0, id="not-a-number"),
        pytest.param("-1", 1.0, id="negative"),
    ],
)
def test_progress_delay_from_environment(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(DELAY_ENV, raising=False)
    else:
        monkeypatch.setenv(DELAY_ENV, value)
    assert progress_delay() == expected


@pytest.mark.parametrize(
    "n,expected", [(0, "0"), (950, "950"), (12_345, "12.3k"), (4_194_304, "4.19M"), (1.5e9, "1.5G"), (2.5, "2.5")]
)
def test_human_counts(n, expected):
    assert human(n) == expected


def test_quiet_flag_parses():
    parser = build_parser()
    assert parser.parse_args(["-q", "x.h5ad"]).quiet is True
    assert parser.parse_args(["--quiet", "x.h5ad"]).quiet is True
    assert parser.parse_args(["x.h5ad"]).quiet is False
