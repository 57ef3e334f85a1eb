"""How many requests to a remote store are in flight at once: a limit that grows while the server answers promptly
and is cut where an answer stalls.

A server's listen backlog bounds the connections it has not yet accepted: python's `http.server` keeps 5, so a
burst of 64 new connections (HTTP/1.0 servers close every connection, so every request is one) loses most of its
SYNs, and each lost one waits out TCP's retransmission backoff (1, 3, 7, 15, 31 s); a connection whose last ACK was
dropped hangs until the read timeout. Object stores take thousands of connections. So the gate starts small and
adds one request in flight per prompt answer (a doubling per round, as TCP's slow start: new connections are
opened one or two at a time, never in a burst) up to its ceiling. A server that closes the connection after each
answer gets a new connection for every request, so it is kept at FIRST_LIMIT; and an answer that took
STALL_SECONDS or more (the shortest retransmission timeout, RFC 6298) lowers the ceiling to half the requests that
were in flight when the stalled one started. The ceiling never rises again in a run: a store learns once what its
server takes.
"""

from __future__ import annotations

import asyncio
import contextvars

STALL_SECONDS = 1.0
FIRST_LIMIT = 4
LEAST_LIMIT = 2


class RequestGate:
    """At most `limit` requests in flight; used as `async with gate:` around each request, on one event loop."""

    def __init__(self, most: int, first: int = FIRST_LIMIT, least: int = LEAST_LIMIT) -> None:
        self.ceiling = most
        self.limit = min(first, most)
        self.least = min(least, most)
        self.in_flight = 0
        self.stalls = 0
        self._opened: asyncio.Condition | None = None  # made on first use, on the loop that uses the gate

    async def __aenter__(self) -> int:
        """Wait for a place; the number of requests in flight when this one started (itself included)."""
        if self._opened is None:
            self._opened = asyncio.Condition()
        async with self._opened:
            await self._opened.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self.in_flight

    async def __aexit__(self, *exc: object) -> None:
        assert self._opened is not None
        async with self._opened:
            self.in_flight -= 1
            self._opened.notify_all()

    def answered(self, seconds: float, in_flight_at_start: int, closes_connection: bool = False) -> None:
        """Record how long a request took to its answer's headers (or its failure), how many were in flight when
        it began, and whether the server closed the connection after it."""
        if closes_connection:
            self.ceiling = max(self.least, min(self.ceiling, FIRST_LIMIT))
            self.limit = min(self.limit, self.ceiling)
        if seconds >= STALL_SECONDS:
            self.stalls += 1
            self.ceiling = max(self.least, min(self.ceiling, in_flight_at_start // 2))
            self.limit = min(self.limit, self.ceiling)
        elif self.limit < self.ceiling:
            self.limit += 1  # waiters see it when the next request leaves the gate


# The gate of the request running in this task, and the requests in flight when it passed the gate: set by the
# store for each request it makes, read by the HTTP session's trace when the answer's headers arrive.
CURRENT: contextvars.ContextVar[tuple[RequestGate, int] | None] = contextvars.ContextVar("request_gate", default=None)
