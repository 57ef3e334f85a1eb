"""The HTTP transport of remote stores (spec_validate.storage.objectstore): obstore's client, with every bound a
hostile server calls for held through its options or around its calls, checked against scripted servers."""

from __future__ import annotations

import base64
import gzip
import os
import socket
import threading

import pytest

from spec_validate import validate
from spec_validate.errors import InputError
from spec_validate.storage import keyvalue, remote
from spec_validate.storage.objectstore import ObjectStoreFileSystem, RefusedResponse, ResponseTooLarge, page_links, sync


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    """A proxy in the environment would not reach the loopback servers."""
    for name in [k for k in os.environ if k.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)


class ScriptedServer:
    """Answers each request on 127.0.0.1 with what `answer(request_head, port)` returns: (bytes, keep the
    connection), or a callable that writes to the socket itself. Records every request's head."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        buffered = b""
        with connection:
            while True:
                while b"\r\n\r\n" not in buffered:
                    try:
                        piece = connection.recv(65536)
                    except OSError:  # the client hung up (a body refused, a timeout)
                        return
                    if not piece:
                        return
                    buffered += piece
                head, _, buffered = buffered.partition(b"\r\n\r\n")
                self.requests.append(head)
                data, keep = self.answer(head, self.port)
                try:
                    data(connection) if callable(data) else connection.sendall(data)
                except OSError:
                    return
                if not keep:
                    return

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def scripted():
    servers: list[ScriptedServer] = []

    def make(answer) -> ScriptedServer:
        servers.append(ScriptedServer(answer))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def ok(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]) + "\r\n\r\n").encode() + body


def fetch(url: str, read_timeout: float = 5.0, **kwargs) -> bytes:
    fs = ObjectStoreFileSystem(5.0, read_timeout)
    return sync(fs.loop, fs._cat_file(url, **kwargs))


def path_of(head: bytes) -> str:
    return head.split(b"\r\n")[0].split(b" ")[1].decode()


# --- bodies --------------------------------------------------------------------------------------------------------


def test_a_declared_body_past_the_bound_is_refused_before_it_is_read(scripted, monkeypatch):
    monkeypatch.setattr(keyvalue, "MAX_VALUE_BYTES", 1000)
    server = scripted(lambda head, port: (b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n", False))
    with pytest.raises(ResponseTooLarge, match="holds 1099511627776 bytes, more than the 1000"):
        fetch(f"{server.url}/k")


def test_a_body_of_no_declared_length_is_refused(scripted):
    for answer in (
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 100_000,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ):
        server = scripted(lambda head, port, answer=answer: (answer, False))
        with pytest.raises(RefusedResponse, match="no declared length"):
            fetch(f"{server.url}/k")


def test_a_range_is_asked_for_and_a_whole_file_answer_refused(scripted):
    data = bytes(range(256)) * 4

    def ranged(head, port):
        line = next((x for x in head.split(b"\r\n") if x.lower().startswith(b"range:")), None)
        if line is None or path_of(head) == "/whole":
            return ok(data), True
        start, end = (int(v) for v in line.split(b"=")[1].split(b"-"))
        body = data[start : end + 1]
        return ok(body, f"Content-Range: bytes {start}-{end}/{len(data)}", status="206 Partial Content"), True

    server = scripted(ranged)
    assert fetch(f"{server.url}/f", start=10, end=14) == data[10:14]
    assert any(b"range: bytes=10-13" in h.lower() for h in server.requests)
    with pytest.raises(ValueError, match="support range requests"):
        fetch(f"{server.url}/whole", start=10, end=14)


def test_a_compressed_body_is_never_inflated(scripted):
    body = gzip.compress(b"q" * 100_000)
    server = scripted(lambda head, port: (ok(body, "Content-Encoding: gzip"), True))
    assert fetch(f"{server.url}/k") == body
    assert b"gzip" not in server.requests[0].lower()


# --- redirects, timeouts ---------------------------------------------------------------------------------------------


def redirecting(head, port):
    path = path_of(head)
    if path.startswith("/same"):
        return b"HTTP/1.1 302 Found\r\nLocation: /target\r\nContent-Length: 0\r\n\r\n", True
    if path.startswith("/other"):
        return f"HTTP/1.1 302 Found\r\nLocation: http://localhost:{port}/target\r\nContent-Length: 0\r\n\r\n".encode(), True
    return ok(b"target"), True


def test_a_redirect_on_the_same_host_is_followed_and_to_another_host_refused(scripted):
    server = scripted(redirecting)
    assert fetch(f"{server.url}/same/k") == b"target"
    server.requests.clear()
    with pytest.raises(RefusedResponse, match="redirected to another host; not followed"):
        fetch(f"{server.url}/other/k")
    assert {path_of(h) for h in server.requests} == {"/other/k"}  # the target never asked for (the refusal retried)


def test_a_body_that_stops_coming_ends_at_the_read_timeout(scripted):
    release = threading.Event()

    def stall(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
        release.wait(30)

    server = scripted(lambda head, port: (stall, False))
    with pytest.raises(TimeoutError):
        fetch(f"{server.url}/k", read_timeout=0.5)
    release.set()


def test_a_refused_connection_is_a_connection_error():
    with pytest.raises(ConnectionError):
        fetch("http://127.0.0.1:1/k")


# --- credentials and proxies -------------------------------------------------------------------------------------------


def test_credentials_of_the_url_are_sent_as_basic_auth_and_never_in_the_request_line(scripted):
    server = scripted(lambda head, port: (ok(b"in"), True))
    assert fetch(f"http://us%40er:p%3Ass@127.0.0.1:{server.port}/k") == b"in"
    expected = base64.b64encode(b"us@er:p:ss").decode()
    assert f"authorization: basic {expected}".lower().encode() in server.requests[0].lower().split(b"\r\n")
    assert b"p%3Ass" not in server.requests[0]


def test_netrc_login_is_sent_where_the_url_names_no_user(scripted, tmp_path, monkeypatch):
    server = scripted(lambda head, port: (ok(b"in"), True))
    (tmp_path / "netrc").write_text("machine 127.0.0.1 login alice password wonder\n")
    (tmp_path / "netrc").chmod(0o600)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    fs, _ = remote.filesystem(f"{server.url}/k")
    assert sync(fs.loop, fs._cat_file(f"{server.url}/k")) == b"in"
    assert f"basic {base64.b64encode(b'alice:wonder').decode()}".lower().encode() in server.requests[0].lower()


def test_a_signed_urls_query_goes_with_every_key(scripted):
    server = scripted(lambda head, port: (ok(b"signed"), True))
    assert fetch(f"{server.url}/store/k?sig=abcdef") == b"signed"
    assert path_of(server.requests[0]) == "/store/k?sig=abcdef"


def test_http_goes_through_the_proxy_the_environment_names_and_no_proxy_sends_a_host_direct(scripted, monkeypatch):
    forward = scripted(lambda head, port: (ok(b"via proxy"), True))
    origin = scripted(lambda head, port: (ok(b"direct"), True))
    monkeypatch.setenv("http_proxy", forward.url)
    assert fetch("http://example.invalid/k") == b"via proxy"
    assert path_of(forward.requests[0]) == "http://example.invalid/k"  # the absolute form a proxy is asked with
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert fetch(f"{origin.url}/k") == b"direct"
    assert len(forward.requests) == 1


def test_a_failure_naming_credentials_is_one_line_without_them(scripted):
    server = scripted(lambda head, port: (ok(b"", status="403 Forbidden"), True))
    with pytest.raises(InputError) as info:
        validate(f"http://user:hunter22@127.0.0.1:{server.port}/x.zarr?sig=deadbeef")
    message = str(info.value)
    assert "\n" not in message and "hunter22" not in message and "deadbeef" not in message and "user" not in message


# --- files and listings ------------------------------------------------------------------------------------------------


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


def test_a_directory_page_is_fetched_through_the_library_and_its_links_listed(scripted):
    def pages(head, port):
        if path_of(head) == "/dir":
            return b"HTTP/1.1 301 Moved\r\nLocation: /dir/\r\nContent-Length: 0\r\n\r\n", True
        return ok(b'<a href="a">a</a><a href="sub/">sub</a>', "Content-Type: text/html"), True

    server = scripted(pages)
    fs = ObjectStoreFileSystem(5.0, 5.0)
    assert fs.ls(f"{server.url}/dir/") == [
        {"name": f"{server.url}/dir/a", "size": None, "type": "file"},
        {"name": f"{server.url}/dir/sub/", "size": None, "type": "directory"},
    ]


def test_a_file_is_read_in_blocks_and_from_a_server_without_ranges_only_when_it_is_one_block(scripted):
    data = bytes(range(256)) * 40  # 10,240 bytes

    def ranged(head, port):
        line = next((x for x in head.split(b"\r\n") if x.lower().startswith(b"range:")), None)
        if line is None:
            return ok(data), True
        start, end = (int(v) for v in line.split(b"=")[1].split(b"-"))
        body = data[start : end + 1]
        return ok(body, f"Content-Range: bytes {start}-{end}/{len(data)}", status="206 Partial Content"), True

    server = scripted(ranged)
    fs = ObjectStoreFileSystem(5.0, 5.0)
    with fs.open(f"{server.url}/f", block_size=4096) as f:
        f.seek(4000)
        assert f.read(200) == data[4000:4200]  # across two blocks, fetched together
        f.seek(-10, 2)
        assert f.read() == data[-10:]
    whole = scripted(lambda head, port: (ok(data), True))
    with fs.open(f"{whole.url}/f", block_size=len(data)) as f:
        assert f.read() == data  # one block: asked for whole
    with fs.open(f"{whole.url}/f", block_size=4096) as f, pytest.raises(ValueError, match="support range requests"):
        f.read(10)


@pytest.mark.parametrize("head_status", ["403 Forbidden", "405 Method Not Allowed"])
def test_a_file_whose_head_is_refused_is_sized_by_a_range(scripted, head_status):
    def answer(head, port):
        if head.startswith(b"HEAD"):
            return ok(b"", status=head_status), True
        return ok(b"x", "Content-Range: bytes 0-0/1000", status="206 Partial Content"), True

    server = scripted(answer)
    assert ObjectStoreFileSystem(5.0, 5.0).info(f"{server.url}/f.h5ad")["size"] == 1000


# --- object stores: the same bounds on an S3 endpoint ----------------------------------------------------------------


@pytest.fixture
def s3_endpoint(scripted, monkeypatch):
    """A scripted server as the S3 endpoint (path-style: /bucket/key), with fake keys in the environment."""
    from spec_validate.storage.cloudstore import CloudStoreFileSystem

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_SKIP_SIGNATURE", "FSSPEC_S3_ANON"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-value")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    def make(answer, read_timeout: float = 5.0):
        server = scripted(answer)
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        return server, CloudStoreFileSystem("s3", 5.0, read_timeout)

    return make


def test_s3_a_declared_body_past_the_bound_is_refused_before_it_is_read(s3_endpoint, monkeypatch):
    monkeypatch.setattr(keyvalue, "MAX_VALUE_BYTES", 1000)
    server, fs = s3_endpoint(lambda head, port: (b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n", False))
    with pytest.raises(ResponseTooLarge, match="holds 1099511627776 bytes, more than the 1000"):
        sync(fs.loop, fs._cat_file("s3://bkt/k"))
    assert path_of(server.requests[0]) == "/bkt/k"


def test_s3_a_range_answered_with_more_is_refused(s3_endpoint):
    server, fs = s3_endpoint(lambda head, port: (ok(b"x" * 1000), True))  # Range ignored: the whole object
    with pytest.raises(ValueError, match="support range requests"):
        sync(fs.loop, fs._cat_file("s3://bkt/k", start=10, end=14))
    assert any(b"range: bytes=10-13" in h.lower() for h in server.requests)


def test_s3_a_redirect_to_another_host_is_refused(s3_endpoint):
    server, fs = s3_endpoint(lambda head, port: redirecting(b"GET /other/k HTTP/1.1", port))
    with pytest.raises(RefusedResponse, match="redirected to another host; not followed"):
        sync(fs.loop, fs._cat_file("s3://bkt/k"))
    assert all(path_of(h) == "/bkt/k" for h in server.requests)  # the target never asked for


def test_s3_a_body_that_stops_coming_ends_at_the_read_timeout(s3_endpoint):
    release = threading.Event()

    def stall(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
        release.wait(30)

    _, fs = s3_endpoint(lambda head, port: (stall, False), read_timeout=0.5)
    with pytest.raises(TimeoutError):
        sync(fs.loop, fs._cat_file("s3://bkt/k"))
    release.set()


def test_s3_errors_name_the_code_and_never_the_credentials(s3_endpoint):
    denied = ok(b"<Error><Code>AccessDenied</Code><Message>fake-key-id may not</Message></Error>", status="403 Forbidden")
    server, fs = s3_endpoint(lambda head, port: (denied, True))
    with pytest.raises(PermissionError, match=r"^AccessDenied$"):  # a GET's answer names its code
        sync(fs.loop, fs._cat_file("s3://bkt/k"))
    with pytest.raises(InputError) as caught:
        validate("s3://bkt/x.h5ad")  # a HEAD first, whose answer has no body: the status's reason
    message = str(caught.value)
    assert message == "s3://bkt/x.h5ad: access denied (Forbidden)", message
    assert "fake-secret-value" not in message and "fake-key-id" not in message
    assert any(b"authorization: aws4-hmac-sha256" in h.lower() for h in server.requests)  # signed, in a header
