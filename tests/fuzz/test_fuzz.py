"""The fuzzer in the test suite: a few hundred seeded hostile inputs across every format, each with a report.

Each input is a corpus file mutated (tests/fuzz/mutators.py) and validated in its own process with the tool's default
flags (tests/fuzz/runner.py), which checks: exit 0 or 1, or 2 only for an input that cannot be opened; no traceback
and no `internal error` line; no crash; a JSON report valid against its schema naming the input given; the run within
the harness's time limit and under its peak RSS; the input unchanged (bytes, modes, modification times); nothing read
outside the input (the canary's access times) and none of its bytes shown. A few inputs of each HDF5 and Zarr
format are validated over HTTP as well (`remote=True`). `python -m tests.fuzz --n 10000` runs the long version on
demand (`--remote` over HTTP).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fuzz import mutators, runner  # noqa: E402

SEED = 20260518
PER_FORMAT = 40  # 200 inputs in all: under a minute on two cores when no one else is busy


@pytest.mark.parametrize("fmt", mutators.FORMATS)
def test_fuzz_passes_every_input_gets_a_bounded_report(fmt, tmp_path):
    results = runner.fuzz(PER_FORMAT, SEED, tmp_path, jobs=2, formats=(fmt,))
    assert len(results) == PER_FORMAT
    bad = [r for r in results if r.defects]
    assert not bad, "\n" + "".join(r.line() for r in bad) + runner.tally(results)


REMOTE_PER_FORMAT = 8  # each over HTTP from a loopback server: the remote readers meet the same hostile inputs


@pytest.mark.parametrize("fmt", ["hdf5", "zarr-v2", "zarr-v3"])
def test_fuzz_passes_every_input_over_http_gets_a_bounded_report(fmt, tmp_path):
    results = runner.fuzz(REMOTE_PER_FORMAT, SEED + 1, tmp_path, jobs=2, formats=(fmt,), remote=True)
    assert len(results) == REMOTE_PER_FORMAT
    bad = [r for r in results if r.defects]
    assert not bad, "\n" + "".join(r.line() for r in bad) + runner.tally(results)


@pytest.mark.parametrize("name", mutators.REGRESSIONS)
def test_fuzz_passes_each_defect_of_the_issue_gets_a_bounded_report(name, tmp_path):
    """Each reproduction of the issue "Bounded by default", rebuilt from its description, at the tool's default flags
    (with --deep): a report, within the harness's time and memory limits, no crash."""
    zygote = runner.Zygote()
    try:
        work = tmp_path / "case"
        work.mkdir()
        result = runner.check_input(mutators.regression_input(name, work), 0, work, zygote, tmp_path, keep=True)
    finally:
        zygote.close()
    assert not result.defects and not result.contained, result.line()
    assert result.code in (0, 1), result.line()


def test_fuzz_passes_same_seed_same_inputs(tmp_path):
    for index in range(len(mutators.FORMATS)):
        made = [mutators.make_input(index, SEED, tmp_path / f"{index}{name}") for name in ("a", "b")]
        assert made[0].mutations == made[1].mutations and made[0].base == made[1].base


def test_fuzz_passes_a_reader_crash_reported_under_timeout_is_a_defect():
    """Under --timeout a crash of the whole input's reader is one unreadable record, and the run goes on; without it
    the process would die: given --timeout as a flag, the fuzzer still counts that record as a crash."""
    from spec_validate.report import json as json_report
    from spec_validate.report.options import RenderOptions
    from spec_validate.watchdog import _report

    crashed = _report("in.h5ad", "/", "hdf5", "reading /X/indices", "the reader crashed (killed by signal 11) while reading")
    defects = runner._check_report(json_report.render([crashed], RenderOptions(tool_version="0")).encode(), "in.h5ad")
    assert [runner._kind(d) for d in defects] == ["crash (signal)"]
    timed_out = _report("in.h5ad", "/", "hdf5", "reading /X/indices", "timed out after 20 s while reading /X/indices")
    assert runner._check_report(json_report.render([timed_out], RenderOptions(tool_version="0")).encode(), "in.h5ad") == []


def _run(code: int | None, stderr: str, killed: bool = False, signal: int | None = None, peak_mb: float = 50.0) -> list[str]:
    got = {"code": code, "signal": signal, "killed": killed, "peak_mb": peak_mb}
    return [runner._kind(d) for d in runner._run_defects(got, stderr.encode(), runner.LIMIT, runner.PEAK_MB)]


def test_fuzz_passes_exit_2_only_for_an_input_that_cannot_be_opened():
    assert _run(2, "spec-validate: error: x.h5ad: not an HDF5 file or a Zarr store\n") == []
    assert _run(2, "spec-validate: error: x.zarr: a directory, but not a Zarr store (no .zgroup, ...)\n") == []
    # An input that opens, given up on (a memory error, a bound turned into an error): a defect.
    assert _run(2, "spec-validate: error: x.h5ad: needed more memory than --memory-limit allows\n") == [
        "exit 2 for an input that opens"
    ]
    assert _run(2, "spec-validate: error: x.h5ad: internal error: SystemError: ...\n") == [
        "traceback or internal error",
        "exit 2 for an input that opens",
    ]


def test_fuzz_fails_a_run_past_the_harness_limit_or_its_memory():
    assert _run(None, "", killed=True) == ["past the time limit"]
    assert _run(None, "", signal=11) == ["crash (signal)"]
    assert _run(1, "", peak_mb=runner.PEAK_MB + 1) == ["peak RSS over the limit"]


def test_fuzz_passes_a_contained_tiledb_reader_crash_is_counted_not_a_defect():
    """A crash of the TileDB reader process is that part's unreadable record (the guarantee holding): not a defect,
    but counted in the tally, and kept to look at."""
    from spec_validate.model import Problem, Report
    from spec_validate.report import json as json_report
    from spec_validate.report.options import RenderOptions

    message = "the TileDB reader crashed (killed by signal 11, SIGSEGV) while opening /Xc"
    report = Report("in.cxg", "tiledb", (), "0", (), (Problem("/Xc", message, "/Xc"),))
    text = json_report.render([report], RenderOptions(tool_version="0")).encode()
    assert runner._check_report(text, "in.cxg") == []
    assert runner.CONTAINED_CRASH in text
