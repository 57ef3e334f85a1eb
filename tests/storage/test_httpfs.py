"""The HTTP client of remote stores (spec_validate.storage.httpfs): HTTP/1.1 as servers speak it (kept connections, chunked
bodies, interim answers, connections closed between requests), within bounds (redirects, header and body sizes,
malformed answers), and the choice between it and fsspec's."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from loopback import LoopbackServer

from spec_validate import validate
from spec_validate.errors import InputError
from spec_validate.storage import httpfs, keyvalue, remote
from spec_validate.storage.httpfs import (
    BadResponse,
    HTTPFileSystem,
    HTTPStatusError,
    RefusedResponse,
    ResponseTooLarge,
    page_links,
)

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"


@pytest.fixture(autouse=True)
def no_proxy_or_fsspec_options(monkeypatch):
    """These tests read through the tool's client: a proxy or fsspec options in the environment would hand HTTP to
    fsspec (and a proxy would not reach the loopback servers)."""
    for name in [k for k in os.environ if k.lower().endswith("_proxy") or k.upper().startswith("FSSPEC_HTTP")]:
        monkeypatch.delenv(name)


class TCPServer:
    """A TCP server on 127.0.0.1 handling each connection on a thread of its own (`handle(connection, number)`)."""

    def __init__(self) -> None:
        self.connections = 0
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.handle, args=(connection, self.connections), daemon=True).start()

    def handle(self, connection: socket.socket, number: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._socket.close()


def read_head(connection: socket.socket, buffered: bytes = b"") -> tuple[bytes, bytes] | None:
    """(the next request's head, the bytes read past it) on `connection`; None where the peer hung up first."""
    while b"\r\n\r\n" not in buffered:
        piece = connection.recv(65536)
        if not piece:
            return None
        buffered += piece
    head, _, rest = buffered.partition(b"\r\n\r\n")
    return head, rest


class ScriptedServer(TCPServer):
    """Answers each request with what `answer(request_head, connection_number)` returns: bytes to send, and whether
    to keep the connection for the next request. Counts connections and requests."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        super().__init__()

    def handle(self, connection: socket.socket, number: int) -> None:
        with connection:
            buffered = b""
            while (got := read_head(connection, buffered)) is not None:
                head, buffered = got
                self.requests.append(head)
                data, keep = self.answer(head, number)
                self.send(connection, data)
                if not keep:
                    return

    def send(self, connection: socket.socket, data: bytes) -> None:
        connection.sendall(data)


@pytest.fixture
def scripted():
    servers = []

    def make(answer) -> ScriptedServer:
        servers.append(ScriptedServer(answer))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def ok(body: bytes, *headers: str) -> bytes:
    head = ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def fetch(url: str, **kwargs) -> bytes:
    fs = HTTPFileSystem(5.0, 5.0)
    try:
        return httpfs.sync(fs.loop, fs._cat_file(url, **kwargs))
    finally:
        fs.close()


# --- HTTP as servers speak it ----------------------------------------------------------------------------------


def test_kept_connections_are_reused(scripted):
    server = scripted(lambda head, n: (ok(b"x" * 10), True))
    fs = HTTPFileSystem(5.0, 5.0)
    for i in range(20):
        assert httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k{i}")) == b"x" * 10
    fs.close()
    assert len(server.requests) == 20 and server.connections == 1


def test_a_kept_connection_the_server_closed_is_asked_again_on_a_new_one(scripted):
    # HTTP/1.1 without "Connection: close", then the server hangs up: the client's next request finds it closed.
    server = scripted(lambda head, n: (ok(b"answer"), False))
    fs = HTTPFileSystem(5.0, 5.0)
    assert [httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k{i}")) for i in range(3)] == [b"answer"] * 3
    fs.close()
    assert server.connections == 3


def test_connection_close_and_http_1_0_answers_are_not_kept(scripted):
    answers = [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na",
        b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nb",
    ]
    server = scripted(lambda head, n: (answers[(n - 1) % 2], True))
    fs = HTTPFileSystem(5.0, 5.0)
    assert [httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k")) for _ in range(4)] == [b"a", b"b", b"a", b"b"]
    fs.close()
    assert server.connections == 4


def test_a_body_without_length_ends_with_the_connection(scripted):
    server = scripted(lambda head, n: (b"HTTP/1.1 200 OK\r\n\r\n" + b"y" * 100_000, False))
    assert fetch(f"{server.url}/k") == b"y" * 100_000


def test_a_chunked_body_is_joined(scripted):
    body = b"5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer: x\r\n\r\n"
    server = scripted(lambda head, n: (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body, True))
    fs = HTTPFileSystem(5.0, 5.0)
    assert [httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k")) for _ in range(2)] == [b"hello world!"] * 2
    fs.close()
    assert server.connections == 1  # the trailer read to its end: the connection is kept


def test_an_interim_answer_comes_before_the_real_one(scripted):
    server = scripted(lambda head, n: (b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"real"), True))
    assert fetch(f"{server.url}/k") == b"real"


def test_a_range_is_asked_for_as_bytes_first_to_last(scripted):
    server = scripted(lambda head, n: (b"HTTP/1.1 206 Partial Content\r\nContent-Length: 4\r\n\r\nabcd", True))
    assert fetch(f"{server.url}/k", start=10, end=14) == b"abcd"
    assert b"\r\nRange: bytes=10-13" in server.requests[0]


def test_a_partial_answer_from_another_offset_is_refused(scripted):
    answer = b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/100\r\nContent-Length: 4\r\n\r\nabcd"
    server = scripted(lambda head, n: (answer, True))
    with pytest.raises(BadResponse, match="bytes from 0 for a range from 10"):
        fetch(f"{server.url}/k", start=10, end=14)


def test_requests_ask_for_no_encoding_and_name_the_host(scripted):
    server = scripted(lambda head, n: (ok(b""), True))
    fetch(f"{server.url}/k")
    lines = server.requests[0].split(b"\r\n")
    assert lines[0] == b"GET /k HTTP/1.1"
    assert b"Accept-Encoding: identity" in lines and f"Host: {server.url[7:]}".encode() in lines


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("/a b/ü.zarr", "/a%20b/%C3%BC.zarr"),
        ("/already%20escaped", "/already%20escaped"),
        ("/lone%zz", "/lone%25zz"),
        ("/x?sig=a%2Fb&t=1 2", "/x?sig=a%2Fb&t=1%202"),
    ],
)
def test_request_targets_are_percent_encoded(path, sent):
    assert httpfs._target(f"http://h{path}", {}).path == sent


def test_no_request_line_or_header_can_be_injected():
    target = httpfs._target("http://h/a\r\nX-Injected: 1", {})
    assert "\r" not in target.path and "\n" not in target.path
    with pytest.raises(BadResponse):
        httpfs._target("http://h\r\nX: 1/a", {})


@pytest.mark.parametrize("head_status", [403, 405])
def test_a_file_whose_head_is_refused_is_sized_by_the_headers_of_a_get(scripted, head_status):
    # A signed URL covers GET only (S3 answers its HEAD with 403); some servers have no HEAD (405).
    def answer(head, n):
        if head.startswith(b"HEAD"):
            return b"HTTP/1.1 %d No\r\nContent-Length: 0\r\n\r\n" % head_status, True
        return ok(b"x" * 1000), True

    server = scripted(answer)
    fs = HTTPFileSystem(5.0, 5.0)
    assert fs.info(f"{server.url}/f.h5ad")["size"] == 1000
    fs.close()


# --- credentials -----------------------------------------------------------------------------------------------


def test_credentials_of_the_url_are_sent_as_basic_auth_and_never_in_the_request_line(scripted):
    server = scripted(lambda head, n: (ok(b"in"), True))
    port = server.url.rsplit(":", 1)[1]
    assert fetch(f"http://us%40er:p%3Ass@127.0.0.1:{port}/k") == b"in"
    expected = base64.b64encode(b"us@er:p:ss").decode()
    assert f"Authorization: Basic {expected}".encode() in server.requests[0].split(b"\r\n")
    assert b"p%3Ass" not in server.requests[0] and b"127.0.0.1" in server.requests[0]


def test_netrc_login_is_sent_where_the_url_names_no_user(scripted, tmp_path, monkeypatch):
    server = scripted(lambda head, n: (ok(b"in"), True))
    (tmp_path / "netrc").write_text("machine 127.0.0.1 login alice password wonder\n")
    (tmp_path / "netrc").chmod(0o600)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    fs, _ = remote.filesystem(f"{server.url}/k")
    assert isinstance(fs, HTTPFileSystem)
    assert httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k")) == b"in"
    assert f"Authorization: Basic {base64.b64encode(b'alice:wonder').decode()}".encode() in server.requests[0].split(b"\r\n")


# --- bounds ----------------------------------------------------------------------------------------------------


def test_a_redirect_loop_ends(scripted):
    server = scripted(lambda head, n: (b"HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n", True))
    with pytest.raises(RefusedResponse, match="more than 10 redirects"):
        fetch(f"{server.url}/k")
    assert len(server.requests) == httpfs.MAX_REDIRECTS + 1


def test_a_redirect_to_another_scheme_is_not_followed(scripted):
    server = scripted(lambda head, n: (b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n", True))
    with pytest.raises(RefusedResponse, match=r"redirected to a file: URL; not followed"):
        fetch(f"{server.url}/k")


def test_an_unfollowed_redirect_is_not_a_body(scripted):
    server = scripted(lambda head, n: (b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n", True))
    with pytest.raises(HTTPStatusError, match="302"):
        fetch(f"{server.url}/k")


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", BadResponse, "not an HTTP answer"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", BadResponse, "malformed header"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * (httpfs.MAX_HEADER_BYTES + 10) + b"\r\n\r\n", BadResponse, "longer than"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", BadResponse, "closed 95 bytes before"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", BadResponse, "not a number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", BadResponse, "malformed chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n" + b"x" * 100, BadResponse, "malformed chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n", BadResponse, "not a number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n", BadResponse, "does not end where"),
        (b"HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n", HTTPStatusError, "503 Slow Down"),
        (b"HTTP/1.1 200 OK\r\n", BadResponse, "closed the connection before its answer"),
        (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", BadResponse, "status 101 where a final one"),
    ],
    ids=[
        "not-http",
        "header",
        "huge-header",
        "short-body",
        "bad-length",
        "bad-chunk",
        "negative-chunk",
        "superscript-length",
        "chunk-overrun",
        "503",
        "closed",
        "101",
    ],
)
def test_a_malformed_or_failed_answer_is_an_error_naming_it(scripted, answer, error, message):
    server = scripted(lambda head, n: (answer, False))
    with pytest.raises(error, match=message):
        fetch(f"{server.url}/k")


@pytest.mark.parametrize("how", ["declared", "chunked", "unbounded"])
def test_a_body_past_the_bound_is_refused(scripted, monkeypatch, how):
    monkeypatch.setattr(keyvalue, "MAX_VALUE_BYTES", 1000)
    body = b"z" * 1001
    answers = {
        "declared": ok(body),
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n" + body + b"\r\n0\r\n\r\n",
        "unbounded": b"HTTP/1.1 200 OK\r\n\r\n" + body,
    }
    server = scripted(lambda head, n: (answers[how], False))
    with pytest.raises(ResponseTooLarge, match="1000"):
        fetch(f"{server.url}/k")


def test_a_stalled_answer_ends_at_the_read_timeout(scripted):
    release = threading.Event()

    def stall(head, n):
        release.wait(30)
        return b"", False

    server = scripted(stall)
    fs = HTTPFileSystem(5.0, 0.5)
    with pytest.raises((TimeoutError, asyncio.TimeoutError)):  # one class from Python 3.11
        httpfs.sync(fs.loop, fs._cat_file(f"{server.url}/k"))
    release.set()


# --- files and listings ----------------------------------------------------------------------------------------


def test_page_links_are_absolute_and_without_query_or_fragment():
    html = """<html><a href="a.zarr/">a</a> <A HREF='b%20c'>b</A> <a class=x href=d?x=1#f>d</a>
    <a href="/root/e">e</a> <a href="http://other/f">f</a> <a href="#top">top</a> <a href="x&amp;y">xy</a>
    <a href="http://[::1">broken</a>"""
    assert page_links(html, "http://h/dir/") == [
        "http://h/dir/a.zarr/",
        "http://h/dir/b%20c",
        "http://h/dir/d",
        "http://h/root/e",
        "http://other/f",
        "http://h/dir/x&y",
    ]


def test_a_file_is_read_in_blocks_and_from_a_server_without_ranges_only_its_first(scripted):
    data = bytes(range(256)) * 40  # 10,240 bytes

    def ranged(head, n):
        line = next(x for x in head.split(b"\r\n") if x.startswith(b"Range:"))
        start, end = (int(v) for v in line.split(b"=")[1].split(b"-"))
        return b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n\r\n" % (end - start + 1) + data[start : end + 1], True

    server = scripted(ranged)
    fs = HTTPFileSystem(5.0, 5.0)
    fs._sizes[f"{server.url}/f"] = len(data)
    with fs.open(f"{server.url}/f", block_size=4096) as f:
        f.seek(4000)
        assert f.read(200) == data[4000:4200]  # across two blocks, fetched together
        f.seek(-10, 2)
        assert f.read() == data[-10:]
    whole = scripted(lambda head, n: (ok(data), True))
    fs._sizes[f"{whole.url}/f"] = len(data)
    with fs.open(f"{whole.url}/f", block_size=4096) as f:
        assert f.read(100) == data[:100]
        f.seek(5000)
        with pytest.raises(ValueError, match="support range requests"):
            f.read(10)


# --- which client ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variables", "expected"),
    [({}, False), ({"HTTPS_PROXY": "http://proxy:3128"}, False), ({"FSSPEC_HTTP_X": "1"}, True)],
)
def test_fsspec_reads_http_only_where_its_options_are_set(variables, expected, monkeypatch, tmp_path):
    pytest.importorskip("fsspec")
    for name in [k for k in os.environ if k.startswith("FSSPEC")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FSSPEC_CONFIG_DIR", str(tmp_path))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert remote._http_through_fsspec("http") is expected
    (tmp_path / "conf.json").write_text(json.dumps({"http": {"client_kwargs": {}}}))
    monkeypatch.setattr("fsspec.config.conf", {"http": {"client_kwargs": {"trust_env": True}}})
    assert remote._http_through_fsspec("http") is True


def test_an_http_run_imports_neither_fsspec_nor_aiohttp(scripted):
    probe = (
        "import json, sys; from spec_validate.nodes.open import open_url\n"
        "try: open_url(sys.argv[1])\nexcept Exception: pass\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    server = scripted(lambda head, n: (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", True))
    out = subprocess.run(
        [sys.executable, "-c", probe, f"{server.url}/x.zarr"], capture_output=True, text=True, check=True, env=dict(os.environ)
    )
    assert not set(json.loads(out.stdout)) & {"fsspec", "aiohttp", "yarl", "multidict"}


FORK_PROBE = """
import os, sys
from spec_validate.storage import httpfs
fs = httpfs.HTTPFileSystem(5.0, 5.0)
assert httpfs.sync(fs.loop, fs._cat_file(sys.argv[1])) == b"forked"  # the parent's loop thread runs
pid = os.fork()
if pid == 0:
    child = httpfs.HTTPFileSystem(5.0, 5.0)
    os._exit(0 if httpfs.sync(child.loop, child._cat_file(sys.argv[1])) == b"forked" else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_reads_on_a_loop_of_its_own(scripted):
    # A run under --timeout forks: the parent's loop thread is not in the child. (In a process of its own: this
    # one has other libraries' threads, which a fork here would warn about.)
    server = scripted(lambda head, n: (ok(b"forked"), True))
    subprocess.run([sys.executable, "-c", FORK_PROBE, f"{server.url}/k"], check=True, timeout=60)


def test_a_store_behind_a_malformed_server_is_a_one_line_input_error(scripted):
    server = scripted(lambda head, n: (b"garbage\r\n\r\n", False))
    with pytest.raises(
        InputError, match=r"^http://127\.0\.0\.1:\d+/store\.zarr/\.zmetadata: cannot read \(BadResponse: not an HTTP answer\)$"
    ):
        validate(f"{server.url}/store.zarr")


# --- TLS -----------------------------------------------------------------------------------------------------------


LARGE_BODY = os.urandom(2**20 + 5)


class TLSServer(LoopbackServer):
    context: ssl.SSLContext

    def server_bind(self) -> None:
        super().server_bind()
        self.socket = self.context.wrap_socket(self.socket, server_side=True)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def tls_store(tmp_path_factory):
    """(https URL of a Zarr store on a loopback server with a self-signed certificate for 127.0.0.1, the certificate)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a certificate with")
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    shutil.copytree(CORPUS / "anndata" / "zarr-v2" / "categorical-code-too-large.zarr", folder / "served" / "store.zarr")
    (folder / "served" / "large.bin").write_bytes(LARGE_BODY)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server_class = type("BoundTLSServer", (TLSServer,), {"context": context})
    server = server_class(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder / "served")))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/store.zarr", cert
    server.shutdown()
    thread.join()


def test_https_is_read_where_the_certificate_is_trusted(tls_store, monkeypatch):
    url, cert = tls_store
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # read by the default context the client makes
    report = validate(url)
    assert report.format.startswith("zarr")
    assert "anndata.categorical.codes-max" in {r.rule.id for r in report.results if r.status.value == "failed"}


def test_https_bodies_of_many_tls_records_arrive_whole(tls_store, monkeypatch):
    # The TLS transport writes decrypted bytes into slices of the buffer the connection gives it: a body of many
    # records, larger than a read, must land where the plain-TCP one does.
    url, cert = tls_store
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert bytes(fetch(url.replace("store.zarr", "large.bin"))) == LARGE_BODY


def test_https_with_an_untrusted_certificate_is_a_one_line_input_error(tls_store, monkeypatch):
    url, _ = tls_store
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(InputError, match="certificate verify failed") as info:
        validate(url)
    assert "\n" not in str(info.value)


# --- proxies -------------------------------------------------------------------------------------------------------


class Proxy(TCPServer):
    """A forward proxy: absolute-form requests relayed to their origin (one per connection), CONNECT tunnels relayed
    byte for byte; `refuse` answers every request with that status. Keeps each request's head."""

    def __init__(self, refuse: int | None = None) -> None:
        self.refuse = refuse
        self.heads: list[bytes] = []
        super().__init__()

    def handle(self, client: socket.socket, number: int) -> None:
        with client:
            got = read_head(client)
            if got is None:
                return
            head, rest = got
            self.heads.append(head)
            if self.refuse:
                client.sendall(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\n\r\n" % self.refuse)
                return
            method, target, _ = head.split(b"\r\n")[0].split(b" ")
            if method == b"CONNECT":
                host, port = target.decode().rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self._relay(client, upstream)
                return
            origin = urlsplit_bytes(target)
            upstream = socket.create_connection((origin.hostname, origin.port))
            lines = head.split(b"\r\n")
            path = origin.path.encode() + (b"?" + origin.query.encode() if origin.query else b"")
            lines[0] = b" ".join([method, path or b"/", b"HTTP/1.1"])
            lines = [x for x in lines if not x.lower().startswith((b"connection:", b"proxy-authorization:"))]
            upstream.sendall(b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + rest)
            answer = b""
            while piece := upstream.recv(65536):
                answer += piece
            upstream.close()
            top, _, body = answer.partition(b"\r\n\r\n")
            top = b"\r\n".join(x for x in top.split(b"\r\n") if not x.lower().startswith(b"connection:"))
            client.sendall(top + b"\r\nConnection: close\r\n\r\n" + body)

    @staticmethod
    def _relay(a: socket.socket, b: socket.socket) -> None:
        def pump(source: socket.socket, sink: socket.socket) -> None:
            try:
                while piece := source.recv(65536):
                    sink.sendall(piece)
            except OSError:
                pass
            finally:
                for end in (source, sink):
                    with contextlib.suppress(OSError):
                        end.shutdown(socket.SHUT_RDWR)

        other = threading.Thread(target=pump, args=(b, a), daemon=True)
        other.start()
        pump(a, b)
        other.join(30)
        b.close()


def urlsplit_bytes(target: bytes):
    from urllib.parse import urlsplit

    return urlsplit(target.decode())


@pytest.fixture
def proxy():
    made: list[Proxy] = []

    def make(refuse: int | None = None) -> Proxy:
        made.append(Proxy(refuse))
        return made[-1]

    yield make
    for p in made:
        p.close()


def test_http_goes_through_the_proxy_the_environment_names(scripted, proxy, monkeypatch):
    origin = scripted(lambda head, n: (ok(b"via proxy"), False))  # the proxy relays until the origin hangs up
    forward = proxy()
    monkeypatch.setenv("http_proxy", forward.url.replace("http://", "http://pa%3Ass:word@"))
    assert fetch(f"{origin.url}/k?x=1") == b"via proxy"
    (head,) = forward.heads
    first, *fields = head.split(b"\r\n")
    assert first == f"GET {origin.url}/k?x=1 HTTP/1.1".encode()  # the absolute form
    assert f"Proxy-Authorization: Basic {base64.b64encode(b'pa:ss:word').decode()}".encode() in fields
    assert origin.requests and b"Proxy-Authorization" not in origin.requests[0]


def test_https_goes_through_a_tunnel_of_the_proxy(tls_store, proxy, monkeypatch):
    url, cert = tls_store
    forward = proxy()
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setenv("HTTPS_PROXY", forward.url)
    report = validate(url)
    assert "anndata.categorical.codes-max" in {r.rule.id for r in report.results if r.status.value == "failed"}
    authority = url.split("/")[2]
    assert forward.heads and all(h.startswith(f"CONNECT {authority} HTTP/1.1".encode()) for h in forward.heads)


def test_no_proxy_sends_a_host_direct(scripted, proxy, monkeypatch):
    origin = scripted(lambda head, n: (ok(b"direct"), True))
    forward = proxy()
    monkeypatch.setenv("http_proxy", forward.url)
    monkeypatch.setenv("no_proxy", "example.org, 127.0.0.0/8")
    assert fetch(f"{origin.url}/k") == b"direct"
    assert not forward.heads


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_refusing_is_a_one_line_input_error(scheme, proxy, monkeypatch):
    forward = proxy(refuse=407)
    monkeypatch.setenv(f"{scheme}_proxy", forward.url.replace("http://", "http://user:secret@"))
    with pytest.raises(InputError) as info:
        validate(f"{scheme}://127.0.0.1:9/store.zarr")
    message = str(info.value)
    assert "HTTP 407" in message and "\n" not in message and "secret" not in message


def test_a_proxy_of_another_scheme_is_a_one_line_input_error(monkeypatch):
    monkeypatch.setenv("http_proxy", "socks5://user:secret@127.0.0.1:1080")
    with pytest.raises(InputError, match="only http:// proxies are supported") as info:
        validate("http://127.0.0.1:9/store.zarr")
    assert "secret" not in str(info.value)
