"""The HTTP server of the remote-store tests: threaded, on 127.0.0.1, with a listen backlog for many connections."""

from __future__ import annotations

import functools
import os
import sys
import threading
from http.server import ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    """socketserver's backlog of 5 drops the SYNs of a burst of connections (a Dask cluster's processes each open
    their own); the dropped ones wait out TCP's retransmission backoff. The tests that need a small server make
    one on purpose."""

    request_queue_size = 256

    def handle_error(self, request, client_address) -> None:
        # A client that hangs up mid-answer (it read the first bytes of a file sent whole, and had enough) is
        # no error of the server's; anything else is printed as socketserver prints it.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def serve(handler: type, directory: str | os.PathLike[str], server_class: type = LoopbackServer):
    """`handler` serving `directory` on a free port of 127.0.0.1, from a thread of its own: (server, thread);
    stop it with `server.shutdown()` and `thread.join()`."""
    server = server_class(("127.0.0.1", 0), functools.partial(handler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread
