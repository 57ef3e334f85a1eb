"""The forwarding proxy that keeps a plain-HTTP store's redirects inside it (spec_validate.storage.redirect_guard),
spoken to as any HTTP client speaks to a proxy: answers relayed as the server sends them, redirects out of the
store's prefix refused, and the reason kept for the store."""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler

import pytest
from loopback import serve

from spec_validate.storage.redirect_guard import FOLDER_HEADER, REFUSED_STATUS, RedirectGuard, Refusal

BODY = b"x" * 300_000  # more than one piece of the relay
ASKED: dict[str, list[str]] = {}  # upstream URL -> the paths its server was asked for, in order


class Upstream(BaseHTTPRequestHandler):
    """Answers by path: a body, a chunked body, redirects of every kind, and an HTTP/1.0 answer."""

    protocol_version = "HTTP/1.1"

    def __init__(self, *args, directory: str = "", **kwargs) -> None:  # `loopback.serve` names a folder: none used
        super().__init__(*args, **kwargs)

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        self.server.paths.append(path)  # type: ignore[attr-defined]
        # A folder, as file servers answer one: its URL without the final "/" redirected to the one with it.
        if path == "/store/folder":
            self.send_response(301)
            self.send_header("Location", "/store/folder/")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/store/folder/":
            self.send_response(200)
            self.send_header("Content-Length", "7")
            self.end_headers()
            self.wfile.write(b"listing")
        elif path == "/store/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"abc", b"defgh"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        elif path.startswith("/store/to"):
            self.send_response(302)
            self.send_header("Location", self.headers["X-Location"])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/store/old":
            self.protocol_version = "HTTP/1.0"
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"old")
            self.close_connection = True
        else:
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)


@pytest.fixture
def upstream(tmp_path):
    server, thread = serve(Upstream, tmp_path)
    server.paths = []
    url = f"http://127.0.0.1:{server.server_address[1]}"
    ASKED[url] = server.paths
    yield url
    server.shutdown()
    thread.join()


@pytest.fixture
def guard(upstream):
    found = RedirectGuard(f"{upstream}/store", 5.0, 5.0)
    yield found
    found.close()


def ask(guard: RedirectGuard, url: str, location: str | None = None, headers: dict | None = None) -> tuple[int, bytes, dict]:
    """GET `url` through the guard, as a client of a proxy asks (the absolute URL as the request's target)."""
    port = int(guard.url.rpartition(":")[2])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", url, headers={**({"X-Location": location} if location else {}), **(headers or {})})
        answer = connection.getresponse()
        return answer.status, answer.read(), dict(answer.getheaders())
    finally:
        connection.close()


def test_redirect_guard_passes_bodies_as_the_server_sends_them(guard, upstream):
    assert ask(guard, f"{upstream}/store/big")[:2] == (200, BODY)
    assert ask(guard, f"{upstream}/store/chunked")[:2] == (200, b"abcdefgh")
    assert ask(guard, f"{upstream}/store/old")[:2] == (200, b"old")  # HTTP/1.0: its connection closes after it


def test_redirect_guard_asks_for_a_folder_listing_by_the_folders_own_url(guard, upstream):
    # obstore drops the final "/" of every path, so a folder's listing cost the server's redirect and a second
    # request; asked for as a folder's listing, the guard restores the "/": one request, and the header itself never
    # reaches the server (a "Proxy-" header).
    server_paths = ASKED[upstream]
    assert ask(guard, f"{upstream}/store/folder", headers={FOLDER_HEADER: "1"})[:2] == (200, b"listing")
    assert server_paths == ["/store/folder/"]
    status, _, headers = ask(guard, f"{upstream}/store/folder")  # any other request: the redirect passed on
    assert (status, headers["Location"]) == (301, "/store/folder/")


@pytest.mark.parametrize(
    "location",
    ["/store/a/.zattrs", "a/b", "/store/x/../y", "/store", "/store/a?v=1"],
    ids=["absolute-path", "relative", "dot-segments-inside", "the-prefix-itself", "query"],
)
def test_redirect_guard_passes_a_redirect_inside_the_store_on(guard, upstream, location):
    status, _, headers = ask(guard, f"{upstream}/store/to", location)
    assert status == 302 and headers["Location"] == location


@pytest.mark.parametrize(
    "location,reason",
    [
        ("/other/.zattrs", "redirected to /other/.zattrs, outside the store (/store); not followed"),
        ("/store/../secret", "redirected to /secret, outside the store (/store); not followed"),
        ("/store%2f..%2fsecret", "redirected to /secret, outside the store (/store); not followed"),
        ("/storefront/x", "redirected to /storefront/x, outside the store (/store); not followed"),
        ("http://localhost:1/store/x", "redirected to another host; not followed"),
    ],
    ids=["another-path", "dot-segments-out", "percent-encoded-out", "a-longer-name", "another-host"],
)
def test_redirect_guard_fails_a_redirect_out_of_the_store_is_refused_and_kept(guard, upstream, location, reason):
    status, body, _ = ask(guard, f"{upstream}/store/to", location)
    assert (status, body) == (REFUSED_STATUS, b"")
    refused = guard.refused(f"{upstream}/store/to")
    assert isinstance(refused, Refusal) and str(refused) == reason
    assert guard.refused(f"{upstream}/store/to") is None  # told once


def test_redirect_guard_fails_a_host_that_cannot_be_reached_is_kept_as_the_client_would_meet_it():
    guard = RedirectGuard("http://127.0.0.1:1/store", 5.0, 5.0)
    try:
        assert ask(guard, "http://127.0.0.1:1/store/x")[0] == REFUSED_STATUS
        refused = guard.refused("http://127.0.0.1:1/store/x")
        assert isinstance(refused, ConnectionError) and str(refused) == "connection refused"
    finally:
        guard.close()
