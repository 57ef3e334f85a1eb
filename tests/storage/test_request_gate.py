"""The requests a remote store has in flight: few until the server keeps a connection, fewer where it stalls."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from loopback import serve

from spec_validate import validate
from spec_validate.engine.loader import builtin_packs
from spec_validate.engine.run import iter_results
from spec_validate.nodes.open import open_url
from spec_validate.storage import request_gate
from spec_validate.storage.remote import MAX_CONCURRENT_REQUESTS
from spec_validate.storage.request_gate import FIRST_LIMIT, RequestGate

CASE = Path(__file__).resolve().parents[2] / "conformance-corpus" / "anndata" / "zarr-v2" / "categorical-code-too-large.zarr"


# --- the gate ----------------------------------------------------------------------------------------------


def run_through(gate: RequestGate, answers: list[float], keeps_connection: bool | None = True) -> int:
    """Pass one request per answer time through `gate` at once; the most that were ever in flight together."""
    peak = 0

    async def one(seconds: float) -> None:
        nonlocal peak
        async with gate as in_flight:
            peak = max(peak, in_flight)
            await asyncio.sleep(0)
            gate.answered(seconds, in_flight, keeps_connection)

    async def every() -> None:
        await asyncio.gather(*(one(s) for s in answers))

    asyncio.run(every())
    return peak


def test_gate_opens_to_its_ceiling_once_the_server_keeps_a_connection():
    gate = RequestGate(16)
    assert (gate.limit, gate.ceiling) == (FIRST_LIMIT, 16)
    assert run_through(gate, [0.01] * 200) == 16
    assert gate.limit == gate.ceiling == 16 and gate.in_flight == 0 and gate.stalls == 0


def test_error_answers_leave_the_gate_as_it_was():
    gate = RequestGate(64)
    assert run_through(gate, [0.01] * 50, keeps_connection=None) == FIRST_LIMIT
    assert (gate.limit, gate.ceiling) == (FIRST_LIMIT, 64)


def test_gate_never_lets_more_than_its_limit_through():
    gate = RequestGate(64)
    assert run_through(gate, [request_gate.STALL_SECONDS] * 50) == FIRST_LIMIT  # every answer stalls: never opened


def test_a_waiter_cancelled_in_the_queue_holds_no_place():
    async def scenario() -> list[str]:
        gate = RequestGate(1, first=1)
        order: list[str] = []
        release = asyncio.Event()

        async def request(name: str, hold: bool = False) -> None:
            async with gate:
                order.append(name)
                if hold:
                    await release.wait()

        first = asyncio.create_task(request("first", hold=True))
        await asyncio.sleep(0)
        cancelled = asyncio.create_task(request("cancelled"))
        last = asyncio.create_task(request("last"))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, last)
        assert gate.in_flight == 0 and not gate._waiting
        return order

    assert asyncio.run(scenario()) == ["first", "last"]


def test_a_stalled_answer_lowers_the_ceiling_to_half_the_requests_in_flight_when_it_started():
    gate = RequestGate(64, first=64)
    gate.answered(0.01, 40, True)
    assert gate.ceiling == gate.limit == 64
    gate.answered(request_gate.STALL_SECONDS, 40, True)
    assert (gate.ceiling, gate.limit, gate.stalls) == (20, 20, 1)
    gate.answered(0.01, 10, True)
    assert gate.limit == 20  # the ceiling never rises again
    gate.answered(5.0, 3)
    assert gate.ceiling == gate.limit == request_gate.LEAST_LIMIT  # and never falls below the least


def test_a_server_that_closes_its_connections_is_kept_at_the_first_limit():
    gate = RequestGate(64)
    peak = run_through(gate, [0.01] * 100, keeps_connection=False)
    assert gate.ceiling == gate.limit == FIRST_LIMIT and peak == FIRST_LIMIT


# --- against servers -----------------------------------------------------------------------------------------


class CountingHandler(SimpleHTTPRequestHandler):
    """http.server (HTTP/1.0 by default: a connection per request) that counts the requests it is answering at
    once; a request for a path ending in one of `slow_paths` is answered `delay` seconds late."""

    lock = threading.Lock()
    answering = 0
    peak = 0
    slow_paths: tuple[str, ...] = ()
    delay = 0.0

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.answering += 1
            cls.peak = max(cls.peak, cls.answering)
        try:
            if self.path.partition("?")[0].endswith(cls.slow_paths):
                time.sleep(cls.delay)
            super().do_GET()
        finally:
            with cls.lock:
                cls.answering -= 1


@pytest.fixture
def served(tmp_path) -> Path:
    shutil.copytree(CASE, tmp_path / CASE.name)
    return tmp_path


def read_through(handler: type, served: Path) -> RequestGate:
    """The store's gate as a run left it, the case read from `handler` at python's own backlog of 5 (its results
    checked to be the local ones)."""
    server, thread = serve(handler, served, ThreadingHTTPServer)
    try:
        tree = open_url(f"http://127.0.0.1:{server.server_address[1]}/{CASE.name}")
        with tree:
            results = list(iter_results(tree, builtin_packs()))
            gate = tree.kv._gate
    finally:
        server.shutdown()
        thread.join()
    assert [(r.rule.id, r.status) for r in results] == [(r.rule.id, r.status) for r in validate(CASE, jobs=1).results]
    assert "anndata.categorical.codes-max" in {r.rule.id for r in results if r.status.value == "failed"}
    assert gate.in_flight == 0
    return gate


def test_pythons_own_http_server_is_read_a_few_requests_at_a_time(served):
    # `python -m http.server`: HTTP/1.0 (each answer closes its connection) behind a listen backlog of 5. Before
    # the gate, 64 connections at once lost their SYNs to the backlog and waited out TCP's backoff: seconds per
    # small store, and a read timeout where the last ACK of a handshake was the one dropped.
    handler = type("Handler", (CountingHandler,), {})
    gate = read_through(handler, served)
    assert gate.ceiling <= FIRST_LIMIT
    # The server counts an answer until its thread is done with it, a little after the client has it and has sent
    # the next request: its count runs ahead of the gate's by the answers still closing, never near 64.
    assert handler.peak <= 2 * FIRST_LIMIT


def test_a_server_that_stalls_is_given_fewer_requests_for_the_rest_of_the_run(served, monkeypatch):
    monkeypatch.setattr(request_gate, "STALL_SECONDS", 0.2)
    # Keeps its connections (HTTP/1.1), and answers two documents late: as a dropped connection's retransmission.
    slow = ("/obs/.zattrs", "/obs/float/.zattrs")
    handler = type("Handler", (CountingHandler,), {"protocol_version": "HTTP/1.1", "slow_paths": slow, "delay": 0.3})
    gate = read_through(handler, served)
    # Each stall set the ceiling to half the requests in flight when the late one started, at most half of 64.
    assert gate.stalls >= 1 and request_gate.LEAST_LIMIT <= gate.ceiling <= MAX_CONCURRENT_REQUESTS // 2
    assert gate.limit <= gate.ceiling
