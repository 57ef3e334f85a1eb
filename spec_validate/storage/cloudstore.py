"""Object stores (s3://, gs://, az://) read through obstore, with the bounds of its HTTP(S) stores (`objectstore`).

The file system is `objectstore.ObjectStoreFileSystem`'s, on one obstore store per bucket (or container), and the
bounds are held as there:

- Body sizes: a whole key is read with `get`, whose answer declares the object's size before the body is read; a
  size above the request's bound is refused then, and no byte of the body taken in. A range is asked for with
  `get_range`, which refuses an answer that is not the range.
- Redirects: the library follows them on any host; every request to another host than the store's endpoint (and
  the provider's token and metadata hosts) goes to the refusing proxy, so a redirect off the endpoint fails.
- Timeouts: obstore's `connect_timeout` and `read_timeout`; a few retries.
- Credentials: from the environment as each provider's tools read it (`credentials`); signatures go in headers,
  never in a URL, and every message has its URLs redacted by `remote.describe_error`.
- Listings: a folder with `list_with_delimiter` (its pages, whole, as a folder listing is); a whole store with
  `list`, one stream of pages (1,000 keys each on S3), dropped as soon as it holds more keys than asked for.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

from spec_validate.storage.objectstore import (
    _STATUS,
    HTTPStatusError,
    ObjectStoreFileSystem,
    RefusedResponse,
    _environment_proxy,
    _error,
    _refusing_proxy_url,
    sync,
)

# URL schemes read through obstore's object stores, and which store each names.
CLOUD_SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure"}

# Hosts a provider's store talks to besides its endpoint (tokens, instance metadata): not sent to the refusing proxy.
# A name matches its subdomains too (reqwest's no-proxy rules).
_PROVIDER_HOSTS = {
    "s3": ("amazonaws.com", "169.254.169.254", "169.254.170.2"),
    "gcs": ("googleapis.com", "metadata.google.internal", "169.254.169.254"),
    "azure": ("core.windows.net", "microsoftonline.com", "169.254.169.254"),
}

# The error code an S3 (or GCS XML, or Azure) error body names: "NoSuchBucket", "AccessDenied", ...
_ERROR_CODE = re.compile(r"<Code>([A-Za-z0-9.]+)</Code>")
# Codes of a 404 that mean the bucket (or container) is not there, not one key: reported, never read as "absent".
_MISSING_BUCKET = ("NoSuchBucket", "ContainerNotFound")
# Keys a flat listing asks for at once (S3 answers at most 1,000 a request).
FLAT_LISTING_PAGE = 1000


class MissingBucket(Exception):
    """The bucket (or container) a URL names is not there: the whole store is missing, not one key."""


class NoCredentialsError(Exception):
    """No credentials for an S3 bucket anywhere the AWS tools look, and no anonymous access asked for."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def s3_settings() -> tuple[dict[str, Any], Any]:
    """(configuration beyond what obstore reads from the AWS_* variables itself, credential provider or None).

    Anonymous access: AWS_SKIP_SIGNATURE=true (obstore's), or FSSPEC_S3_ANON=true (the way documented before).
    Keys in the environment (AWS_ACCESS_KEY_ID, ...) are obstore's to read. Otherwise botocore's chain finds them, as
    the AWS CLI does (AWS_PROFILE, the config and credentials files, SSO, a container's or an instance's role), with
    the profile's region; none found: NoCredentialsError, before any request.
    """
    config: dict[str, Any] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3")  # botocore's service-specific endpoint, which obstore does not read
    if endpoint:
        config["endpoint"] = endpoint
    if _truthy(os.environ.get("FSSPEC_S3_ANON")):
        config["skip_signature"] = True
    if config.get("skip_signature") or _truthy(os.environ.get("AWS_SKIP_SIGNATURE")) or os.environ.get("AWS_ACCESS_KEY_ID"):
        return config, None
    try:
        import botocore.session
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:  # without boto3: obstore's own chain (web identity, container, instance metadata)
        return config, None
    session = botocore.session.Session()
    if session.get_credentials() is None:
        raise NoCredentialsError("no credentials found")
    region = session.get_config_variable("region")
    if region and not (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
        config["region"] = region
    return config, Boto3CredentialProvider(session)


def _endpoint(kind: str, config: dict[str, Any]) -> str | None:
    """The endpoint URL the environment (or `config`) names for the store, or None (the provider's own)."""
    if kind == "s3":
        names = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ENDPOINT_URL_S3")
    elif kind == "gcs":
        names = ("GOOGLE_BASE_URL",)
    else:
        names = ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT")
    found = config.get("endpoint") or next((os.environ[n] for n in names if os.environ.get(n)), None)
    return found or None


def bucket_and_key(url: str) -> tuple[str, str]:
    """(bucket, key) of "scheme://bucket/key", the key as written: an object's key may hold "?", "#" or "%", which
    are no query, fragment or escape here (as the AWS CLI reads such a URL)."""
    bucket, _, key = url.split("://", 1)[-1].partition("/")
    return bucket, key.strip("/")


class CloudStoreFileSystem(ObjectStoreFileSystem):
    """s3://, gs:// and az:// URLs ("scheme://bucket/key") through obstore's S3Store, GCSStore and AzureStore: one
    store per bucket, its client kept for the run. Paths are URLs, as for HTTP; listings name "bucket/key"."""

    def __init__(self, scheme: str, connect_timeout: float, read_timeout: float) -> None:
        super().__init__(connect_timeout, read_timeout)
        self.scheme = scheme
        self.kind = CLOUD_SCHEMES[scheme]
        # Resolved once, before any request: a missing credential is one line, not a failure per key.
        self._settings = s3_settings() if self.kind == "s3" else ({}, None)
        self._buckets: dict[str, tuple[Any, str | None]] = {}

    def _strip_protocol(self, url: str) -> str:
        """ "bucket/key" of "scheme://bucket/key"."""
        return url.split("://", 1)[-1]

    def _store(self, url: str) -> tuple[Any, str, str | None]:
        bucket, path = bucket_and_key(url)
        if bucket not in self._buckets:
            self._buckets[bucket] = self._make_store(bucket)
        store, refusing = self._buckets[bucket]
        return store, path, refusing

    def _make_store(self, bucket: str) -> tuple[Any, str | None]:
        from obstore.store import AzureStore, GCSStore, S3Store

        config, credentials = self._settings
        endpoint = _endpoint(self.kind, config)
        options: dict[str, Any] = {
            "connect_timeout": f"{int(self.connect_timeout * 1000)}ms",
            "read_timeout": f"{int(self.read_timeout * 1000)}ms",
            "timeout": "1d",  # the whole request: bounded by the read timeout between reads instead
            "user_agent": "spec-validate",
        }
        if endpoint is not None and endpoint.lower().startswith("http://"):
            options["allow_http"] = True
        endpoint_host = urlsplit(endpoint).hostname if endpoint else None
        proxy = _environment_proxy(urlsplit(endpoint).scheme if endpoint else "https", endpoint_host or "")
        refusing = None
        if proxy is not None:
            options["proxy_url"] = proxy
        else:
            refusing = options["proxy_url"] = _refusing_proxy_url()
            options["proxy_excludes"] = ",".join(filter(None, (endpoint_host, *_PROVIDER_HOSTS[self.kind])))
        retry = {"max_retries": 2}
        if self.kind == "s3":
            store = S3Store(
                bucket, config=config or None, client_options=options, retry_config=retry, credential_provider=credentials
            )
        elif self.kind == "gcs":
            store = GCSStore(bucket, client_options=options, retry_config=retry)
        else:
            store = AzureStore(bucket, client_options=options, retry_config=retry)
        return store, refusing

    def _error(self, exc: BaseException, refusing: str | None) -> BaseException:
        """As for HTTP, but a 401 or 403 is a PermissionError (a store may let keys be read but not listed), a 404
        of a missing bucket is not "absent", and the store's error code is said."""
        if isinstance(exc, (RefusedResponse, HTTPStatusError)):
            return exc
        text = str(exc)
        status = _STATUS.search(text)
        if status is not None:
            code = _ERROR_CODE.search(text)
            name = code[1] if code else status[2].strip()
            number = int(status[1])
            if number == 404:
                return MissingBucket(f"no such bucket ({name})") if name in _MISSING_BUCKET else FileNotFoundError("not found")
            if number in (401, 403):
                return PermissionError(name)
            return HTTPStatusError(number, name)
        return _error(exc, refusing)

    async def _ls(self, url: str, detail: bool = True) -> list[dict[str, Any]]:
        """The keys and folders directly below `url`, named "bucket/path" (folders of type "directory")."""
        import obstore

        bucket = bucket_and_key(url)[0]
        listed = await self._call(url, lambda s, p: obstore.list_with_delimiter_async(s, prefix=p or None))
        entries = [{"name": f"{bucket}/{m['path']}", "size": m["size"], "type": "file"} for m in listed["objects"]]
        entries += [{"name": f"{bucket}/{p}", "size": 0, "type": "directory"} for p in listed["common_prefixes"]]
        return entries

    def ls(self, url: str, detail: bool = True) -> list[dict[str, Any]]:
        return sync(self.loop, self._ls(url, detail))

    async def list_flat(self, url: str, most: int) -> list[str] | None:
        """Every key below `url`, named "bucket/path", from one listing of the store page after page; None as soon as
        it holds more than `most` (the stream is dropped: no page past the bound is asked for)."""
        import obstore

        bucket = bucket_and_key(url)[0]

        async def walk(store: Any, path: str) -> list[str] | None:
            names: list[str] = []
            stream = obstore.list(store, prefix=path or None, chunk_size=FLAT_LISTING_PAGE)
            async for batch in stream:
                names.extend(f"{bucket}/{m['path']}" for m in batch)
                if len(names) > most:
                    return None
            return names

        return await self._call(url, walk)

    def info(self, url: str) -> dict[str, Any]:
        """{"name", "size", "type": "file"} of the key at `url`; FileNotFoundError where there is none (a folder)."""
        import obstore

        meta = sync(self.loop, self._call(url, obstore.head_async))
        size = int(meta["size"])
        self._sizes[url] = size
        return {"name": url, "size": size, "type": "file"}

    def close(self) -> None:
        self._buckets.clear()
        super().close()
