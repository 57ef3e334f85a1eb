"""How many requests to a remote store are in flight at once: few until the server shows what it takes.

A server's listen backlog bounds the connections it has not yet accepted: python's `http.server` keeps 5, so a
burst of 64 new connections (HTTP/1.0 servers close every connection, so every request is one) loses most of its
SYNs, and each lost one waits out TCP's retransmission backoff (1, 3, 7, 15, 31 s); a connection whose last ACK was
dropped hangs until the read timeout. Servers that keep connections open (nginx, Apache, Go and Python application
servers, object stores) listen with backlogs of 128 to thousands, and open connections are reused.

So an HTTP store starts at FIRST_LIMIT requests in flight. The first successful answer on a connection the server
keeps opens the gate to its ceiling; one on a connection the server closes keeps it at FIRST_LIMIT for good. An
answer that took STALL_SECONDS or more (the shortest retransmission timeout, RFC 6298) lowers the ceiling to half
the requests in flight when the stalled one started. The ceiling never rises again in a run: a store learns once
what its server takes.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars

STALL_SECONDS = 1.0
FIRST_LIMIT = 4
LEAST_LIMIT = 2


class RequestGate:
    """At most `limit` requests in flight; used as `async with gate:` around each request, on one event loop.

    Waiters are let through in the order they came, each handed its place by the request that leaves (or by a
    raised limit): one wake-up per request, however many wait (a batch queues thousands).
    """

    def __init__(self, most: int, first: int = FIRST_LIMIT, least: int = LEAST_LIMIT) -> None:
        self.ceiling = most
        self.limit = min(first, most)
        self.least = min(least, most)
        self.in_flight = 0
        self.stalls = 0
        self._waiting: collections.deque[asyncio.Future[int]] = collections.deque()

    async def __aenter__(self) -> int:
        """Wait for a place; the number of requests in flight when this one started (itself included)."""
        if self.in_flight < self.limit and not self._waiting:
            self.in_flight += 1
            return self.in_flight
        place = asyncio.get_running_loop().create_future()
        self._waiting.append(place)
        try:
            return await place
        except asyncio.CancelledError:
            if place.done() and not place.cancelled():  # handed a place, then cancelled: give it on
                self.in_flight -= 1
                self._hand_on()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.in_flight -= 1
        self._hand_on()

    def _hand_on(self) -> None:
        while self._waiting and self.in_flight < self.limit:
            place = self._waiting.popleft()
            if not place.done():  # a waiter cancelled while queued holds no place
                self.in_flight += 1
                place.set_result(self.in_flight)

    def answered(self, seconds: float, in_flight_at_start: int, keeps_connection: bool | None = None) -> None:
        """Record how long a request took to its answer's headers (or its failure), how many were in flight when
        it began, and, for a successful answer, whether the server keeps its connection (None: an error answer,
        or no answer, which says neither)."""
        if keeps_connection is False:
            self.ceiling = max(self.least, min(self.ceiling, FIRST_LIMIT))
        if seconds >= STALL_SECONDS:
            self.stalls += 1
            self.ceiling = max(self.least, min(self.ceiling, in_flight_at_start // 2))
        elif keeps_connection and self.limit < self.ceiling:
            self.limit = self.ceiling
            self._hand_on()
        self.limit = min(self.limit, self.ceiling)


# The gate of the request running in this task, and the requests in flight when it passed the gate: set by the
# store for each request it makes, read by the HTTP session's trace when the answer's headers arrive.
CURRENT: contextvars.ContextVar[tuple[RequestGate, int] | None] = contextvars.ContextVar("request_gate", default=None)
