"""Remote stores: over HTTP (a loopback http.server) and S3 (moto's server) the clause results equal the local ones,
and no message shows a URL's credentials. HTTP and S3 are read through obstore."""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest
from loopback import serve
from s3_server import s3_server

from spec_validate import validate
from spec_validate.cli import main
from spec_validate.errors import InputError, NodeError
from spec_validate.inputs import Input, discover, store_root
from spec_validate.storage.remote import redact_url, scrub
from spec_validate.storage.urls import is_url

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"


@dataclass(frozen=True)
class Case:
    id: str
    file: str  # relative to conformance-corpus/
    fails: tuple[str, ...] = ()  # rules the manifest says fail: the comparison is not vacuous
    deep: bool = False

    @property
    def name(self) -> str:
        return Path(self.file).name


CASES = [
    Case("h5ad-valid", "anndata/h5ad/valid-every-element.h5ad"),
    Case("h5ad-indptr-decreasing", "anndata/h5ad/csr-indptr-decreasing.h5ad", ("anndata.csr_matrix.indptr-monotonic",)),
    Case("zarr-v2-anndata-code-too-large", "anndata/zarr-v2/categorical-code-too-large.zarr", ("anndata.categorical.codes-max",)),
    Case("zarr-v3-anndata-valid", "anndata/zarr-v3/valid-every-element.zarr"),
    Case("zarr-v2-chunk-truncated", "zarr/zarr-v2/chunk-truncated.zarr", ("zarr.chunks.decoded-size",), deep=True),
    Case(
        "zarr-v2-chunks-nested-without-separator",
        "zarr/zarr-v2/array-chunks-nested-without-separator.zarr",
        ("zarr.array.chunk-keys",),
    ),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Path:
    """A copy of the cases, flat, so that the servers never see the repository itself."""
    root = tmp_path_factory.mktemp("served")
    for case in CASES:
        src = CORPUS / case.file
        (shutil.copytree if src.is_dir() else shutil.copyfile)(src, root / case.name)
    return root


# --- the comparison --------------------------------------------------------------------------------------


def clauses(report) -> list[tuple]:
    """Everything a clause result says, findings included, in a form that compares with ==."""
    return [
        (
            r.rule.id,
            r.status.value,
            r.reason,
            r.nodes_checked,
            r.finding_count,
            [(f.path, f.message, f.index, json.dumps(f.details, sort_keys=True, default=repr)) for f in r.findings],
        )
        for r in report.results
    ]


@functools.cache
def local_report(path: str, deep: bool):
    return validate(path, deep=deep, jobs=2)


def cli_json(path: str, deep: bool, tmp_path: Path) -> tuple[int, dict]:
    out = tmp_path / f"report-{abs(hash(path))}.json"
    code = main(
        [path, "--format", "json", "--output", str(out), "--quiet", "--jobs", "2", "--isolated"] + (["--deep"] if deep else [])
    )
    return code, json.loads(out.read_text(encoding="utf-8"))


def without_source(doc: dict) -> dict:
    """The JSON without the input's name: in each report, and in the archive summary's lists of failing inputs."""
    for report in doc["reports"]:
        report.pop("source")
    for rule in doc.get("archive", {}).get("rules", []):
        rule.pop("first", None)
    return doc


def assert_same_as_local(url: str, local: Path, case: Case, tmp_path: Path, cli: bool = True) -> None:
    remote = validate(url, deep=case.deep, jobs=2)
    here = local_report(str(local), case.deep)
    assert remote.format == here.format
    assert clauses(remote) == clauses(here)
    failed = {r.rule.id for r in remote.results if r.status.value == "failed"}
    assert set(case.fails) <= failed
    assert not [r.rule.id for r in remote.results if r.status.value == "error"]
    if not cli:
        return
    remote_code, remote_doc = cli_json(url, case.deep, tmp_path)
    local_code, local_doc = cli_json(str(local), case.deep, tmp_path)
    assert remote_code == local_code == (1 if case.fails else 0)
    assert remote_doc["reports"][0]["source"] == redact_url(url)
    assert without_source(remote_doc) == without_source(local_doc)


# --- HTTP ------------------------------------------------------------------------------------------------


class RangeHandler(SimpleHTTPRequestHandler):
    """http.server with single-range requests (it has none of its own), as every real file server has."""

    def log_message(self, *args) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def do_GET(self) -> None:
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        path = self.translate_path(self.path)
        if match is None or not os.path.isfile(path):
            return super().do_GET()
        data = Path(path).read_bytes()
        start = int(match[1])
        stop = min(int(match[2]) + 1 if match[2] else len(data), len(data))
        body = data[start:stop]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class UnlistedHandler(RangeHandler):
    """A server that refuses directory listings (403), as most static hosting and S3 websites do."""

    def list_directory(self, path):
        self.send_error(403)
        return None


@pytest.fixture(scope="module")
def http_base(served):
    server, thread = serve(RangeHandler, served)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def unlisted_base(served):
    server, thread = serve(UnlistedHandler, served)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_http_store_gives_the_local_results(case, served, http_base, tmp_path):
    assert_same_as_local(f"{http_base}/{case.name}", served / case.name, case, tmp_path)


# The clauses on the keys stored below a node: a store read without listing knows only the keys its consolidated
# metadata names.
ON_STORED_KEYS = {
    "zarr.array.chunk-keys",
    "zarr.array.chunk-keys-in-grid",
    "zarr.array.only-chunk-keys",
    "zarr.group.unread-keys",
    "zarr.consolidated.matches-documents",
    "zarr.keys.normalized",
    "zarr.keys.ascii",
    "zarr3.array.chunk-keys",
    "zarr3.array.chunk-keys-in-grid",
    "zarr3.array.unread-keys",
    "zarr3.array.metadata-document",
    "zarr3.group.unread-keys",
    "zarr3.consolidated.matches-documents",
}


@pytest.mark.parametrize("name", ["categorical-code-too-large.zarr", "valid-every-element.zarr"])
def test_http_store_without_listings_is_read_from_consolidated_metadata(name, served, unlisted_base):
    # Every clause as locally, but those on the keys stored: nothing names those keys, so they are not checked
    # (each node named in the report), never passed on the few keys the consolidated metadata names.
    remote = validate(f"{unlisted_base}/{name}", jobs=2)
    local = local_report(str(served / name), False)
    differing = {a[0] for a, b in zip(clauses(remote), clauses(local), strict=True) if a != b}
    assert differing and differing <= ON_STORED_KEYS
    for result in (r for r in remote.results if r.rule.id in differing):
        here = next(r for r in local.results if r.rule.id == result.rule.id)
        assert result.status.value == "not_checked" and here.status.value == "passed"
        assert result.unchecked_count == here.nodes_checked
        assert all("was not listed" in reason for _, reason in result.unchecked)


def test_http_store_without_listings_or_consolidated_metadata_is_unreadable_below_its_root(tmp_path, capsys):
    # Nothing names the root group's members: the run says so and fails, rather than passing on the root alone.
    shutil.copytree(CORPUS / "anndata" / "zarr-v2" / "valid-every-element.zarr", tmp_path / "store.zarr")
    (tmp_path / "store.zarr" / ".zmetadata").unlink()
    server, thread = serve(UnlistedHandler, tmp_path)
    url = f"http://127.0.0.1:{server.server_address[1]}/store.zarr"
    try:
        report = validate(url, jobs=1)
        code = main([url, "--quiet", "--isolated"])
    finally:
        server.shutdown()
        thread.join()
    assert [(p.key, "members of its groups cannot be found" in p.message) for p in report.problems] == [("/", True)]
    assert code == 1
    assert "UNREADABLE /: the server lists no folders" in capsys.readouterr().out


def test_http_url_with_credentials_fails_without_showing_them(http_base, capsys):
    port = http_base.rsplit(":", 1)[1]
    for url in (
        f"http://user:secret@127.0.0.1:{port}/missing.h5ad",
        f"http://127.0.0.1:{port}/missing.h5ad?X-Amz-Signature=topsecret&X-Amz-Credential=AKIAEXAMPLE",
        f"https://user:secret@127.0.0.1:{port}/missing.h5ad?X-Amz-Signature=topsecret",
    ):  # TLS to a plain server
        with pytest.raises(InputError) as info:
            validate(url)
        message = str(info.value)
        assert "127.0.0.1" in message and "\n" not in message
        assert "secret" not in message and "AKIAEXAMPLE" not in message and "user" not in message, message

        assert main([url, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "secret" not in err and "AKIAEXAMPLE" not in err


def test_http_report_source_has_no_credentials(http_base):
    port = http_base.rsplit(":", 1)[1]
    report = validate(f"http://user:hunter22@127.0.0.1:{port}/csr-indptr-decreasing.h5ad?X-Amz-Signature=deadbeef")
    assert report.source == f"{http_base}/csr-indptr-decreasing.h5ad"


def test_http_404_exits_2_with_one_line(http_base, capsys):
    assert main([f"{http_base}/missing.zarr", "--quiet"]) == 2
    assert capsys.readouterr().err == f"spec-validate: error: {http_base}/missing.zarr: not found\n"


def test_http_refused_connection_is_one_line():
    with pytest.raises(InputError, match=r"^http://127\.0\.0\.1:1/x\.h5ad: cannot connect"):
        validate("http://127.0.0.1:1/x.h5ad")


def test_http_html_page_is_not_a_store(http_base):
    with pytest.raises(InputError, match="not an HDF5 file or a Zarr store"):
        validate(f"{http_base}/")


# --- a hostile server: bounded time, size and reach ------------------------------------------------------


class HostileHandler(RangeHandler):
    """Serves the cases, and under a prefix misbehaves: /elsewhere/ redirects to another host name of this server,
    /here/ redirects on this host, /stall/ sends headers and then nothing, /stall-one/ and /stall-folder/ do so
    for their keys (or folders) in STALLED only, /endless/ sends a body of no declared length, /declared/ declares a
    huge one, /gzip/ sends every document gzip-encoded."""

    release = threading.Event()
    STALLED: ClassVar[dict[str, tuple[str, ...]]] = {"stall-one": ("obs/.zattrs", "X/indptr/0"), "stall-folder": ("obsm/",)}
    # Keys that answer with a redirect: under /away/ to another path of this host, outside the store (a document
    # of someone else's, which must not be read for this one); under /inside/ to another path inside it.
    MOVED: ClassVar[dict[str, dict[str, str]]] = {
        "away": {"obs/.zattrs": "/secret/.zattrs", "X/indptr/0": "/secret/0"},
        "inside": {"obs/.zattrs": "/inside/{case}/obs/moved/../.zattrs?v=1", "X/indptr/0": "/inside/{case}/X/indptr/./0?v=1"},
    }

    def translate_path(self, path: str) -> str:
        prefix, _, rest = path.lstrip("/").partition("/")
        return super().translate_path(f"/{rest}" if prefix in self.STALLED or prefix in self.MOVED else path)

    def _moved(self, prefix: str, rest: str) -> None:
        case, _, key = rest.partition("/")
        if prefix == "secret":
            body = b'{"' + SECRET + b'": 1}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif key in self.MOVED[prefix]:
            self.send_response(302)
            self.send_header("Location", self.MOVED[prefix][key].format(case=case))
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            super().do_GET()  # served from below the prefix (`translate_path`)

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        prefix, _, rest = self.path.lstrip("/").partition("/")
        if prefix in (*self.MOVED, "secret"):
            return self._moved(prefix, rest)
        if prefix in self.STALLED:
            if rest.partition("/")[2] not in self.STALLED[prefix]:
                return super().do_GET()  # served from below the prefix (`translate_path`), redirects kept under it
            prefix = "stall"
        if prefix in ("elsewhere", "here"):
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/{rest}" if prefix == "elsewhere" else f"/{rest}")
            self.end_headers()
        elif prefix == "stall":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.flush()
            self.release.wait(120)
        elif prefix == "endless":
            self.send_response(200)
            self.end_headers()
            with contextlib.suppress(OSError):  # the reader hangs up once it has had enough
                for _ in range(64):
                    self.wfile.write(b"x" * 4096)
        elif prefix == "declared":
            self.send_response(200)
            self.send_header("Content-Length", str(2**40))
            self.end_headers()
        elif prefix == "gzip":
            data = (Path(self.directory) / rest).read_bytes() if (Path(self.directory) / rest).is_file() else None
            if data is None:
                return super().do_GET()
            body = gzip.compress(data)
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()


@pytest.fixture(scope="module")
def hostile_base(served):
    HostileHandler.release.clear()
    server, thread = serve(HostileHandler, served)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    HostileHandler.release.set()
    server.shutdown()
    thread.join()


ZARR_CASE = "categorical-code-too-large.zarr"
SECRET = b"SECRET-of-another-store-0123"


def test_http_redirect_to_another_host_is_not_followed(hostile_base):
    with pytest.raises(InputError, match=r"redirected to another host; not followed"):
        validate(f"{hostile_base}/elsewhere/{ZARR_CASE}")


def test_http_redirect_on_the_same_host_outside_the_store_is_not_followed(hostile_base):
    """Every key of /here/<case> redirects to /<case>, a store of the same host but not this one: not opened."""
    with pytest.raises(InputError, match=r"redirected to /categorical.*outside the store \(/here/categorical.*not followed"):
        validate(f"{hostile_base}/here/{ZARR_CASE}")


def test_http_redirect_of_a_document_and_a_chunk_outside_the_store_is_an_unreadable_record(hostile_base, tmp_path):
    """A document and a chunk answering 302 to another path of the host: each is one unreadable record naming the
    redirect, what lies there is never shown, and the rest is judged (exit 1, not 2)."""
    out = tmp_path / "report.json"
    code = main([f"{hostile_base}/away/{ZARR_CASE}", "--format", "json", "-o", str(out), "--quiet", "--isolated"])
    text = out.read_text()
    problems = {p["key"]: p["message"] for p in json.loads(text)["reports"][0]["problems"]}
    assert code == 1 and sorted(problems) == ["/X/indptr", "obs/.zattrs"], problems
    assert "redirected to /secret/.zattrs, outside the store" in problems["obs/.zattrs"]
    assert "redirected to /secret/0, outside the store" in problems["/X/indptr"]
    assert SECRET.decode() not in text


def test_http_redirect_inside_the_store_is_followed(hostile_base, served):
    """A document and a chunk answering 302 to another URL inside the store (dot segments, a query): followed, and
    the report is the local one."""
    redirected = validate(f"{hostile_base}/inside/{ZARR_CASE}")
    assert clauses(redirected) == clauses(local_report(str(served / ZARR_CASE), False))


def test_http_stalled_response_ends_at_the_read_timeout(hostile_base, monkeypatch):
    from spec_validate.storage import remote

    monkeypatch.setattr(remote, "HTTP_READ_TIMEOUT", 1.0)
    with pytest.raises(InputError, match="timed out"):
        validate(f"{hostile_base}/stall/{ZARR_CASE}")


def test_http_stalled_document_and_chunk_below_the_root_are_unreadable_records_the_rest_judged(
    hostile_base, served, tmp_path, monkeypatch
):
    """A read timeout on one document and one chunk (not the root's): each is one unreadable record, asked for
    once, and every clause has the verdict it has on a local copy where the same two cannot be read (each a folder
    where a file is expected)."""
    from spec_validate.nodes.open import open_url
    from spec_validate.storage import remote

    monkeypatch.setattr(remote, "HTTP_READ_TIMEOUT", 1.0)
    report = validate(f"{hostile_base}/stall-one/{ZARR_CASE}")
    problems = {p.key: p.message for p in report.problems}
    assert sorted(problems) == ["/X/indptr", "obs/.zattrs"] and all("timed out" in m for m in problems.values())
    local = tmp_path / ZARR_CASE
    shutil.copytree(served / ZARR_CASE, local)
    for part in ("obs/.zattrs", "X/indptr/0"):
        (local / part).unlink()
        (local / part).mkdir()
    assert [c[:2] for c in clauses(report)] == [c[:2] for c in clauses(local_report(str(local), False))]
    with open_url(f"{hostile_base}/stall-one/{ZARR_CASE}") as tree:
        with pytest.raises(NodeError, match="timed out"):
            tree.kv.get("obs/.zattrs")
        assert tree.kv.stored("obs/.zattrs")


def test_http_stalled_folder_listing_below_the_root_is_an_unreadable_record(hostile_base, monkeypatch):
    from spec_validate.storage import remote

    monkeypatch.setattr(remote, "HTTP_READ_TIMEOUT", 1.0)
    report = validate(f"{hostile_base}/stall-folder/{ZARR_CASE}")
    (problem,) = report.problems
    assert problem.key == "obsm" and "cannot be listed (timed out)" in problem.message
    assert any(r.status.value == "failed" for r in report.results)  # judged: the case's own failure still found


def test_http_stalled_document_below_the_root_exits_1_not_2(hostile_base, monkeypatch, capsys):
    from spec_validate.storage import remote

    monkeypatch.setattr(remote, "HTTP_READ_TIMEOUT", 1.0)
    assert main([f"{hostile_base}/stall-one/{ZARR_CASE}", "--quiet"]) == 1
    assert "obs/.zattrs: cannot be read" in capsys.readouterr().out


def test_http_response_larger_than_any_value_is_refused(hostile_base, monkeypatch):
    from spec_validate.storage import keyvalue

    monkeypatch.setattr(keyvalue, "MAX_VALUE_BYTES", 64 * 1024)
    with pytest.raises(InputError, match=r"the response holds \d+ bytes, more than the 65536"):
        validate(f"{hostile_base}/declared/{ZARR_CASE}")


def test_http_response_of_no_declared_length_is_refused(hostile_base):
    # obstore reads a body only of a declared length: one that ends when the server closes is never taken in.
    with pytest.raises(InputError, match=r"a body of no declared length \(no Content-Length\); not read"):
        validate(f"{hostile_base}/endless/{ZARR_CASE}")


def test_http_gzip_encoded_response_is_never_inflated(hostile_base):
    """A server's transfer compression is never undone (a gzip bomb would be): the documents read are the bytes sent."""
    report = validate(f"{hostile_base}/gzip/{ZARR_CASE}")
    assert any(p.key == ".zgroup" and "not UTF-8" in p.message for p in report.problems), report.problems


# --- S3 (moto) -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3(served):
    """moto's S3 server on loopback (requests counted), its bucket "corpus" holding the cases; fake credentials and
    the endpoint in the environment."""
    files = {p.relative_to(served).as_posix(): p.read_bytes() for p in sorted(served.rglob("*")) if p.is_file()}
    with s3_server({"corpus": files}) as server:
        yield server


@pytest.fixture
def s3_bucket(s3):
    s3.clear()
    return "s3://corpus"


# moto spends 5-10 ms of CPU on each request, so S3 runs what HTTP does not already cover: the valid h5ad is
# left out, and the CLI (the same code for every protocol once the URL is open) runs on the small stores only.
S3_CASES = [c for c in CASES if c.id != "h5ad-valid"]
S3_CLI = {"h5ad-indptr-decreasing", "zarr-v2-chunk-truncated", "zarr-v2-chunks-nested-without-separator"}


@pytest.mark.parametrize("case", S3_CASES, ids=[c.id for c in S3_CASES])
def test_s3_store_gives_the_local_results(case, served, s3_bucket, tmp_path):
    assert_same_as_local(f"{s3_bucket}/{case.name}", served / case.name, case, tmp_path, cli=case.id in S3_CLI)


@pytest.mark.parametrize(
    "path, reason",
    [
        ("corpus/missing.h5ad", "not found"),
        ("corpus/missing.zarr", "not found"),
        ("no-such-bucket/x.zarr", "NoSuchBucket"),
    ],
    ids=["missing-file", "missing-store", "missing-bucket"],
)
def test_s3_missing_is_one_line(path, reason, s3_bucket):
    with pytest.raises(InputError, match=rf"^s3://{re.escape(path)}: .*{reason}"):
        validate(f"s3://{path}")


def test_s3_without_credentials_says_so(s3_bucket, s3, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    with pytest.raises(InputError, match=r"^s3://corpus/csr-indptr-decreasing\.h5ad: no credentials found .*AWS_SKIP_SIGNATURE"):
        validate(f"{s3_bucket}/csr-indptr-decreasing.h5ad")
    assert s3.requests == []  # found missing before any request


@pytest.mark.parametrize("variable", ["AWS_SKIP_SIGNATURE", "FSSPEC_S3_ANON"])
def test_s3_anonymous_access_sends_no_signature(variable, served, s3_bucket, s3, monkeypatch):
    import boto3

    public = {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"]}
    policy = {"Version": "2012-10-17", "Statement": [{**public, "Resource": ["arn:aws:s3:::corpus", "arn:aws:s3:::corpus/*"]}]}
    client = boto3.client("s3")
    client.put_bucket_policy(Bucket="corpus", Policy=json.dumps(policy))
    s3.clear()
    try:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(name)
        monkeypatch.setenv(variable, "true")
        case = next(c for c in CASES if c.id == "zarr-v2-anndata-code-too-large")
        assert clauses(validate(f"{s3_bucket}/{case.name}")) == clauses(local_report(str(served / case.name), False))
        assert s3.requests and not any(r.signed for r in s3.requests)  # served as a public bucket serves them
    finally:
        monkeypatch.undo()
        client.delete_bucket_policy(Bucket="corpus")


def test_s3_credentials_from_a_profile(served, s3_bucket, s3, tmp_path, monkeypatch):
    """With no keys in the environment, botocore's chain finds them (here: AWS_PROFILE in a credentials file)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    credentials = tmp_path / "credentials"
    credentials.write_text("[reader]\naws_access_key_id = profile-key\naws_secret_access_key = profile-secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_PROFILE", "reader")
    report = validate(f"{s3_bucket}/csr-indptr-decreasing.h5ad")
    assert "profile-secret" not in json.dumps([str(p) for p in report.problems])
    assert s3.count("get") > 0 and all(r.signed for r in s3.requests)


# --- URLs in general -------------------------------------------------------------------------------------


def test_unknown_protocol_is_one_line():
    with pytest.raises(InputError, match=r"^nosuchproto://bucket/x\.zarr: unknown protocol 'nosuchproto'"):
        validate("nosuchproto://bucket/x.zarr")


def test_protocol_without_its_package_names_the_package():
    pytest.importorskip("fsspec")
    try:
        import adlfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("adlfs is installed")
    # s3://, gs:// and az:// are obstore's; the other protocols are fsspec's, each with its own package.
    with pytest.raises(InputError, match=r"^abfs://bucket/x\.zarr: the abfs:// protocol needs a package .*adlfs"):
        validate("abfs://bucket/x.zarr")


def test_cxg_url_is_refused_in_one_line():
    with pytest.raises(InputError, match=r"^s3://bucket/x\.cxg: CXG \(TileDB\) stores are read from local paths only"):
        validate("s3://bucket/x.cxg")


@pytest.mark.parametrize(
    "path, expected",
    [
        ("s3://bucket/x.zarr", True),
        ("https://host/x.h5ad", True),
        ("gs://b/x", True),
        ("data/x.zarr", False),
        ("/abs/x.h5ad", False),
        ("C://data/x.h5ad", False),
        ("x.zarr/X/.zattrs", False),
    ],
    ids=lambda v: str(v),
)
def test_is_url(path, expected):
    assert is_url(path) is expected


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://user:pw@host:8443/a/x.h5ad?X-Amz-Signature=abc#frag", "https://host:8443/a/x.h5ad"),
        ("s3://bucket/x.zarr", "s3://bucket/x.zarr"),
        ("https://token@host/x.zarr?sig=1", "https://host/x.zarr"),
    ],
    ids=["user-password-query", "plain", "token-user"],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_scrub_masks_url_secrets_anywhere_in_a_message():
    url = "https://alice:hunter22@host/x.h5ad?X-Amz-Signature=deadbeef"
    text = f"ClientResponseError: 403, url=URL('{url}') signature deadbeef rejected for hunter22"
    cleaned = scrub(text, url)
    assert "hunter22" not in cleaned and "deadbeef" not in cleaned and "alice" not in cleaned
    assert "https://host/x.h5ad" in cleaned


def test_cli_passes_urls_through_unchanged():
    urls = ["s3://bucket/x.zarr/X/.zattrs", "https://host/x.zarr", "s3://bucket/x.zarr/X/.zattrs"]
    assert store_root(urls[0]) == urls[0]
    assert discover(urls) == [Input(urls[0]), Input(urls[1])]


CONSOLIDATED = [c for c in CASES if c.id in ("zarr-v2-anndata-code-too-large", "zarr-v3-anndata-valid")]


@pytest.mark.parametrize("case", CONSOLIDATED, ids=[c.id for c in CONSOLIDATED])
def test_s3_store_with_consolidated_metadata_is_listed_flat_and_reads_as_locally(case, served, s3_bucket, s3, tmp_path):
    assert_same_as_local(f"{s3_bucket}/{case.name}", served / case.name, case, tmp_path, cli=False)
    # One flat listing of every key (1,000 keys a request), beside the root's own listing (made with the first
    # documents, before the consolidated metadata is read): no folder listed one by one. (The comparison runs the
    # remote validation once.)
    assert s3.listings(flat=True) == [f"corpus/{case.name}"]
    assert s3.listings(flat=False) == [f"corpus/{case.name}"]


def test_s3_store_without_consolidated_metadata_is_listed_flat_up_to_the_smaller_bound(
    served, s3_bucket, s3, tmp_path, monkeypatch
):
    from spec_validate.storage import remote

    case = next(c for c in CASES if c.id == "zarr-v2-chunks-nested-without-separator")
    stored = sum(1 for p in (served / case.name).rglob("*") if p.is_file())
    assert_same_as_local(f"{s3_bucket}/{case.name}", served / case.name, case, tmp_path, cli=False)
    assert s3.listings(flat=True) == [f"corpus/{case.name}"] and s3.listings(flat=False) == [f"corpus/{case.name}"]
    # One key more than the bound: the flat listing is given up, and the folders are listed as a walk asks.
    monkeypatch.setattr(remote, "MOST_UNMAPPED_FLAT_LISTING_KEYS", stored - 1)
    s3.clear()
    assert_same_as_local(f"{s3_bucket}/{case.name}", served / case.name, case, tmp_path, cli=False)
    assert len(s3.listings(flat=True)) == 1 and len(s3.listings(flat=False)) > 1


def test_s3_store_too_large_for_one_flat_listing_is_listed_folder_by_folder(served, s3_bucket, s3, tmp_path, monkeypatch):
    from spec_validate.storage import remote

    monkeypatch.setattr(remote, "MOST_FLAT_LISTING_KEYS", 3)  # fewer keys than the store's documents alone
    case = CONSOLIDATED[0]
    assert_same_as_local(f"{s3_bucket}/{case.name}", served / case.name, case, tmp_path, cli=False)
    assert s3.listings(flat=True) == [] and len(s3.listings(flat=False)) > 1


def test_s3_reads_each_object_with_one_request(served, s3_bucket, s3):
    case = CONSOLIDATED[0]
    validate(f"{s3_bucket}/{case.name}")
    stored = sum(1 for p in (served / case.name).rglob("*") if p.is_file())
    # No HEAD before a GET: one request per object read, and at most one HEAD in all (the input's kind, file or folder).
    assert s3.count("head") <= 1
    assert 0 < s3.count("get") <= stored
    assert {r.operation for r in s3.requests} <= {"get", "head", "list"}


def test_s3_store_holding_more_keys_than_it_declares_is_listed_by_folder(served, s3_bucket, s3, monkeypatch):
    import boto3

    from spec_validate.nodes.zarr import expect
    from spec_validate.storage import remote

    case = CONSOLIDATED[0]
    client = boto3.client("s3")
    for p in (served / case.name).rglob("*"):
        if p.is_file():
            client.put_object(
                Bucket="corpus", Key=f"junk/{case.name}/{p.relative_to(served / case.name).as_posix()}", Body=p.read_bytes()
            )
    for i in range(5):  # keys its consolidated metadata does not count
        client.put_object(Bucket="corpus", Key=f"junk/{case.name}/stray/{i}", Body=b"x")
    declared = expect.keys_expected(json.loads((served / case.name / ".zmetadata").read_text())["metadata"].items(), ".zarray")
    stored = sum(1 for p in (served / case.name).rglob("*") if p.is_file()) + 5
    monkeypatch.setattr(remote, "MOST_FLAT_LISTING_KEYS", max(declared, stored - 1))
    report = validate(f"s3://corpus/junk/{case.name}")
    assert s3.listings(flat=True) == [f"corpus/junk/{case.name}"]  # tried, and given up past the bound
    assert len(s3.listings(flat=False)) > 2  # then the folders, as before
    keys_rule = next(r for r in report.results if r.rule.id == "zarr.array.only-chunk-keys")  # reads stored keys
    assert keys_rule.status.value == "passed" and not keys_rule.unchecked_count


def test_s3_flat_listing_stops_at_the_page_that_passes_its_bound(s3):
    """A store of 2,100 keys: S3 pages 1,000 keys a request; a bound of 500 asks for one page, 1,500 for two."""
    import boto3

    from spec_validate.storage.cloudstore import CloudStoreFileSystem
    from spec_validate.storage.objectstore import sync

    client = boto3.client("s3")
    client.create_bucket(Bucket="flat")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: client.put_object(Bucket="flat", Key=f"big/k{i:05d}", Body=b"x"), range(2100)))
    fs = CloudStoreFileSystem("s3", 30.0, 60.0)
    for most, pages, found in ((500, 1, None), (1500, 2, None), (10_000, 3, 2100)):
        s3.clear()
        names = sync(fs.loop, fs.list_flat("s3://flat/big", most))
        assert (None if names is None else len(names)) == found
        assert s3.count("list") == pages
