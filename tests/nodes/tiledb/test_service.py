"""The TileDB reader process (spec_validate/nodes/tiledb/service.py): a crash of libtiledb costs the part being read."""

from __future__ import annotations

import os
import pickle
import signal
from pathlib import Path

import numpy as np
import pytest

from spec_validate.nodes.tiledb import service
from spec_validate.nodes.tiledb.library import Failure

pytest.importorskip("tiledb")

REPO = Path(__file__).resolve().parents[3]
STORE = REPO / "conformance-corpus" / "cxg" / "cxg-0.3.0" / "valid-sparse-X.cxg"


def _round_trip(message):
    read, write = os.pipe()
    try:
        service.send(write, message)
        return service.receive(read)
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(("ok", {"a": np.arange(5, dtype=np.uint32), "": np.ones(3, dtype="<f4")}), id="fields"),
        pytest.param(("ok", np.array(["a", "bb", ""], dtype=object)), id="strings"),
        pytest.param(("ok", {"fill": np.float32(1.5), "s": np.bytes_(b"x"), "none": None}), id="scalars"),
        pytest.param(("ok", np.zeros(3, dtype=[("obs", "<u4"), ("", "<f4")])), id="structured"),
    ],
)
def test_receive_passes_what_replies_hold(message):
    got = _round_trip(message)
    assert pickle.dumps(got) == pickle.dumps(message)


def test_receive_fails_a_reply_naming_anything_else():
    # Replies are unpickled from an allow-list: a message naming a callable is refused, never imported or run.
    with pytest.raises(pickle.UnpicklingError, match=r"posix\.system is not a type a reply holds"):
        _round_trip(("ok", os.system))


def _kill(reader: service.IsolatedReader, sig: int = signal.SIGSEGV) -> None:
    reader._process.send_signal(sig)
    reader._process.wait()


def test_isolated_reader_fails_a_crash_as_the_part_being_read_then_reads_on():
    reader = service.IsolatedReader()
    try:
        assert "cxg_version" in reader.call("array_info", str(STORE / "cxg_group_metadata"), what="x")["meta"]
        _kill(reader)
        with pytest.raises(Failure, match=r"the TileDB reader crashed \(killed by signal 11, SIGSEGV\) while reading /Xr"):
            reader.call("array_info", str(STORE / "Xr"), what="reading /Xr")
        info = reader.call("array_info", str(STORE / "Xr"), what="reading /Xr")  # a new reader
        assert info["sparse"] and [a["name"] for a in info["attrs"]] == ["", "var"]
    finally:
        reader.close()
    assert reader._process is None


def test_isolated_reader_fails_every_call_after_its_last_start():
    reader = service.IsolatedReader()
    try:
        for _ in range(service.MAX_STARTS):
            reader._ensure("starting")
            _kill(reader, signal.SIGABRT)
            with pytest.raises(Failure, match="SIGABRT"):
                reader.call("array_info", str(STORE / "Xr"), what="opening /Xr")
        with pytest.raises(Failure, match=f"not read: the TileDB reader crashed {service.MAX_STARTS} times"):
            reader.call("array_info", str(STORE / "Xr"), what="opening /Xr")
    finally:
        reader.close()


def test_isolated_reader_fails_a_scan_whose_reader_crashed_names_its_rows():
    from spec_validate.nodes.open import open_store

    with open_store(str(STORE)) as tree:
        node = tree.get("/Xr/__cells")
        blocks = node.blocks()
        next(blocks)
        _kill(tree.reader)
        with pytest.raises(Exception, match=r"/Xr: rows 0\.\.\d+ cannot be read \(the TileDB reader crashed"):
            list(blocks)
        assert tree.get("/Xc").shape  # read by a new reader


def test_validate_keeps_every_other_clause_when_the_reader_crashes_on_one_array(monkeypatch):
    """The reader dies (a real SIGSEGV) opening /Xc: /Xc is one unreadable record naming the crash, the clauses that
    need it are not checked, and every other clause has the verdict it has on the intact store."""
    from spec_validate import validate
    from spec_validate.model import Status

    intact = {r.rule.id: r.status for r in validate(STORE).results}
    call = service.IsolatedReader.call

    def crash_on_xc(self, op, *args, what):
        if op == "array_info" and args[0].endswith("/Xc"):
            self._ensure(what)
            _kill(self)
        return call(self, op, *args, what=what)

    monkeypatch.setattr(service.IsolatedReader, "call", crash_on_xc)
    report = validate(STORE)
    assert [(p.key, p.message) for p in report.problems] == [
        ("/Xc", "the TileDB reader crashed (killed by signal 11, SIGSEGV) while opening /Xc")
    ]
    unchecked = {r.rule.id for r in report.results if r.unchecked}
    assert "cxg.Xc.shape" in unchecked
    # The clauses on /Xc and its columns are not checked, or find no column of an array that cannot be opened.
    kept = {r.rule.id: r.status for r in report.results if r.rule.id not in unchecked and ".Xc." not in r.rule.id}
    assert kept == {rule: status for rule, status in intact.items() if rule in kept}
    assert sum(status is Status.PASSED for status in kept.values()) > 20
