"""moto's S3 server on loopback, counting the requests it answers, with the environment that points the AWS tools
(and obstore) at it."""

from __future__ import annotations

import logging
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs

import pytest


@dataclass(frozen=True)
class S3Request:
    """One request the server answered: its method, bucket, key ("" for the bucket itself), query, and whether it
    was signed (an Authorization header)."""

    method: str
    bucket: str
    key: str
    query: dict[str, str]
    signed: bool

    @property
    def operation(self) -> str:
        """The S3 operation: "list", "get", "head" or the method."""
        if self.method == "GET" and not self.key and self.query.get("list-type") == "2":
            return "list"
        if self.method in ("GET", "HEAD") and self.key:
            return self.method.lower()
        return self.method


class CountingMotoServer:
    """moto's server app behind a WSGI wrapper that records every request (path-style: /bucket/key?query)."""

    def __init__(self) -> None:
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        self.requests: list[S3Request] = []
        self._lock = threading.Lock()
        counting = self._counting

        class Server(ThreadedMotoServer):
            def _server_entry(self) -> None:  # ThreadedMotoServer's, with its app wrapped
                app = counting(DomainDispatcherApplication(create_backend_app))
                self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
                self._server_ready_event.set()
                self._server.serve_forever()

        self._server = Server(ip_address="127.0.0.1", port=0, verbose=False)

    def _counting(self, app):  # type: ignore[no-untyped-def]
        def counted(environ, start_response):  # type: ignore[no-untyped-def]
            bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
            query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).items()}
            with self._lock:
                self.requests.append(S3Request(environ["REQUEST_METHOD"], bucket, key, query, "HTTP_AUTHORIZATION" in environ))
            return app(environ, start_response)

        return counted

    def start(self) -> str:
        """Start the server; its endpoint URL."""
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto logs each request
        self._server.start()
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.stop()

    def listings(self, flat: bool) -> list[str]:
        """ "bucket/prefix" of each listing begun (its first page): with a delimiter (a folder), or without (flat)."""
        return [
            f"{r.bucket}/{r.query.get('prefix', '')}".rstrip("/")
            for r in self.requests
            if r.operation == "list" and "continuation-token" not in r.query and ("delimiter" in r.query) != flat
        ]

    def count(self, operation: str) -> int:
        return sum(1 for r in self.requests if r.operation == operation)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()


@contextmanager
def s3_server(buckets: dict[str, dict[str, bytes]]) -> Iterator[CountingMotoServer]:
    """A counting moto server holding `buckets` ({bucket: {key: bytes}}), with fake credentials, its endpoint and
    no other AWS configuration in the environment while it runs."""
    pytest.importorskip("moto.server")
    pytest.importorskip("obstore")
    import boto3

    server = CountingMotoServer()
    endpoint = server.start()
    # moto keeps its buckets in the process, across servers: a bucket an earlier test made would still be there.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30).close()
    with pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_SKIP_SIGNATURE", "FSSPEC_S3_ANON"):
            mp.delenv(name, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "fake-key-id")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        mp.setenv("AWS_ENDPOINT_URL", endpoint)  # read by botocore and by obstore
        client = boto3.client("s3")
        from concurrent.futures import ThreadPoolExecutor

        for bucket, keys in buckets.items():
            client.create_bucket(Bucket=bucket)
            with ThreadPoolExecutor(8) as pool:  # a few hundred small objects: the server's threads take them together
                list(pool.map(lambda kv, b=bucket: client.put_object(Bucket=b, Key=kv[0], Body=kv[1]), keys.items()))
        server.clear()
        try:
            yield server
        finally:
            server.stop()
