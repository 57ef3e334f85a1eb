"""Stores behind URLs (https://, s3://, gs://, az://, ...): http(s) and the object stores read through obstore, other
protocols through fsspec, with credentials kept out of every message."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from spec_validate.errors import InputError, NodeError
from spec_validate.storage import keyvalue, request_gate
from spec_validate.storage.cloudstore import CLOUD_SCHEMES, CloudStoreFileSystem, MissingBucket, bucket_and_key
from spec_validate.storage.keyvalue import KeyValueStore
from spec_validate.storage.objectstore import RESPONSE_LIMIT, ObjectStoreFileSystem, RefusedResponse, ResponseTooLarge, sync
from spec_validate.storage.request_gate import FIRST_LIMIT, RequestGate
from spec_validate.storage.urls import URL_SCHEME

# obstore and fsspec are imported inside functions only: a local run never loads them.

_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{},]+")
HTTP_PROTOCOLS = ("http", "https")
# HDF5 over a URL is read in blocks kept in an LRU cache: HDF5 metadata reads are small and scattered, chunk
# reads are large and in order; 4 MiB blocks serve both in few requests, and 16 of them bound the memory.
HDF5_BLOCK_SIZE = 4 * 2**20
HDF5_MAX_BLOCKS = 16
# Requests in flight at once when many keys are fetched together: enough to hide an object store's latency, and a
# bound on the bytes held (documents are small; chunks are one block's worth). An HTTP server is given fewer until
# it shows it keeps its connections, and fewer for good where it stalls (request_gate).
MAX_CONCURRENT_REQUESTS = 64
# Object stores (s3://, gs://, az://) list every key below a prefix in one flat listing (S3's ListObjectsV2 without a
# delimiter, 1,000 keys a request), where listing folder by folder takes a request per folder.
# The flat listing is made where the format reader says the store holds at most this many keys (from its
# consolidated metadata: its documents, and every chunk its arrays' grids have room for), and stopped (the store
# then listed folder by folder, many folders at once, as before) where it finds more: its pages come one after
# another, so a store of millions of chunks would take minutes. A store whose size nothing says is listed flat up
# to the smaller bound.
MOST_FLAT_LISTING_KEYS = 100_000
MOST_UNMAPPED_FLAT_LISTING_KEYS = 10_000


def redact_url(url: str) -> str:
    """`url` without its user name, password, query string and fragment (signed-URL tokens live there)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unparseable URL (a bad IPv6 literal): keep only the scheme
        match = URL_SCHEME.match(url)
        return f"{match.group(1)}://..." if match else "..."
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def scrub(text: str, url: str | None = None) -> str:
    """`text` with every URL in it redacted, and the secrets of `url` (password, query values) masked wherever they occur."""
    text = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    for secret in _secrets(url) if url else ():
        text = text.replace(secret, "***")
    return text


def _secrets(url: str) -> list[str]:
    """The parts of `url` that may grant access, raw and percent-decoded, longest first."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: set[str] = set()
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at:
        found.update(x for x in userinfo.partition(":")[::2] if x)
    for pair in parts.query.split("&") + ([parts.fragment] if parts.fragment else []):
        value = pair.partition("=")[2] or pair
        if value:
            found.add(value)
    found |= {unquote(s) for s in found}
    # Very short values ("1", "us") would mangle the message and protect nothing; URLs in the text are redacted anyway.
    return sorted((s for s in found if len(s) >= 4), key=len, reverse=True)


def describe_error(exc: BaseException, url: str | None = None) -> str:
    """A one-line reason for a failed remote access, with no credentials in it."""
    exc = underlying_error(exc)
    name = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0]
    status = getattr(exc, "status", None)  # objectstore.HTTPStatusError, and what fsspec's file systems raise
    if isinstance(exc, FileNotFoundError):
        reason = "not found"
    elif isinstance(exc, (RefusedResponse, MissingBucket)):
        reason = first
    elif isinstance(exc, PermissionError):
        reason = f"access denied ({first})" if first else "access denied"
    elif name == "NoCredentialsError":
        reason = (
            "no credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE; "
            "for a public bucket set AWS_SKIP_SIGNATURE=true)"
        )
    elif isinstance(status, int):
        reason = f"HTTP {status} {getattr(exc, 'message', '') or ''}".rstrip()
    elif isinstance(exc, TimeoutError) or name in ("TimeoutError", "ServerTimeoutError", "ConnectTimeoutError"):
        reason = "timed out"
    elif name == "ClientConnectorDNSError" or "Name or service not known" in first or "nodename nor servname" in first:
        reason = f"cannot resolve the host name ({first})"
    elif name.startswith("ClientConnector") or isinstance(exc, ConnectionError) or name == "EndpointConnectionError":
        reason = f"cannot connect ({first})"
    else:
        reason = f"{name}: {first}" if first else name
    return scrub(reason, url)


def underlying_error(exc: BaseException) -> BaseException:
    """The error behind fsspec's FileNotFoundError when it stands for something else.

    fsspec's HTTP `info` reports every failure (refused connection, unknown host, TLS, HTTP 403) as
    FileNotFoundError, with the real error as its cause; only a 404 (or no cause) means absent.
    """
    cause = exc.__cause__
    if isinstance(exc, FileNotFoundError) and cause is not None and getattr(cause, "status", None) != 404:
        return cause
    return exc


class RemoteStore(KeyValueStore):
    """A store of keys below a URL: keys are fetched by the URL's transport, folders listed where the storage lists them.

    Object stores (S3, GCS, Azure) list, and an HTTP server lists when it serves directory pages with links
    (python's http.server, nginx `autoindex`, Apache `Indexes`): the store is then what is stored, as locally.
    The format reader says what it expects before it reads (`probe`, then `expect`): the keys it will read first
    are fetched in one batch, with the folders they lie in listed; where nothing lists, or the run was asked not to
    list (`list_folders` False), the keys it names are the map of the store: only those are seen, and no stored key
    it leaves out (`lists` is False: the clauses on stored keys are then not checked). Many keys asked for together
    (`get_many`, `list_many`) are fetched concurrently.

    `small_keys` are the names of keys read many times and probed for at every folder (a format's metadata
    documents): each is fetched once and kept, and one a listing shows absent is not asked for. `root_is_store`:
    the URL names the store itself (its root is listed even where it holds none of those keys).
    """

    def __init__(
        self,
        fs: Any,
        root: str,
        url: str,
        list_folders: bool = True,
        small_keys: frozenset[str] = frozenset(),
        root_is_store: bool = False,
    ) -> None:
        self.location = redact_url(url)
        self._fs = fs
        self._url = url  # with its credentials: used for requests, never shown
        self._http = protocol(url) in HTTP_PROTOCOLS
        self._root = root.rstrip("/")
        # An HTTP URL's query (a SAS-style token valid for the whole store) goes with every key's request.
        self._query = urlsplit(url).query if self._http else ""
        if self._http:
            self._root = urlunsplit(urlsplit(self._root)._replace(query="", fragment="")).rstrip("/")
        self._root_is_store = root_is_store
        self._small_keys = small_keys
        self._lock = threading.Lock()
        # False: where the format reader names every key it needs (`expect`), those are the map of the store, and
        # no folder is listed.
        self.list_folders = list_folders
        self._mode: str | None = None  # "list", "consolidated" or "blind": how directory contents are known
        self._index: list[str] = []  # the keys the format reader named, in "consolidated" mode
        self._complete = False  # whether those keys name every member of the store's groups
        self._mapped: dict[str, tuple[list[str], list[str]]] | None = None  # the directories those keys imply
        self._listings: dict[str, tuple[list[str], list[str]]] = {}
        self._documents: dict[str, bytes | None] = {}
        self._root_listing: tuple[list[str], list[str]] | None = None  # as `probe` found it
        self._probed = False
        self._flat = False  # whether every listing came from one flat listing of the store (nothing else is below)
        # Keys and folders below the root that could not be read or listed (a timeout, an error answer, a refused
        # response), with the reason: each is an unreadable record of its own and is not asked for again, and the
        # rest of the store is read. The root's own documents and listing decide whether the store opens at all.
        self._failed: dict[str, str] = {}
        self._unlisted: dict[str, str] = {}
        self._report: Callable[[str, str], None] | None = None
        self._unreported: list[tuple[str, str]] = []  # folders found unlisted before a tree listened (`expect`)
        self._gate = _gate_for(self._http)

    @property
    def batched(self) -> bool:  # type: ignore[override]
        return bool(getattr(self._fs, "async_impl", False))

    @property
    def lists(self) -> bool:
        return self._listing_mode() == "list"

    @property
    def members_known(self) -> bool:
        return self._listing_mode() == "list" or self._complete

    def raw_keys(self) -> list[str] | None:
        """The keys as listed; None where the store is not listed (the consolidated metadata names no stored key)."""
        return super().raw_keys() if self.lists else None

    # --- keys ---------------------------------------------------------------------------------------------

    def _path(self, key: str) -> str:
        path = f"{self._root}/{key}" if key else self._root
        return f"{path}?{self._query}" if self._query else path

    def _shown(self, key: str) -> str:
        return f"{self.location.rstrip('/')}/{key}" if key else self.location

    def get(self, key: str) -> bytes | None:
        """The stored bytes; None when absent (also without a request, where a listing shows a metadata document absent).
        NodeError for a key below the root that cannot be read (`_absent_or_raise`)."""
        if not _safe_key(key, self._http):
            return None
        self._raise_failed(key)
        parent, _, name = key.rpartition("/")
        if name not in self._small_keys:
            return self._fetch(key)
        # Metadata documents are small and read many times (tree, checks): one request each.
        if key in self._documents:
            return self._documents[key]
        if self._listing_mode() == "blind":
            raw = self._fetch(key)
        else:
            # Readers probe each node for several documents; the listing answers for the absent ones without a
            # request (and without guessing on servers that answer an absent key with 403, not 404), and the
            # present ones of this directory are fetched together: one round trip per node, not one per document.
            listed = [f"{parent}/{n}" if parent else n for n in self.list_dir(parent)[0] if n in self._small_keys]
            self._documents.update(self._fetch_many([k for k in listed if k not in self._documents]))
            self._raise_failed(key)
            raw = self._documents.get(key)
        self._documents[key] = raw
        return raw

    def stored(self, key: str) -> bool:
        """True for a key below the root whose read failed other than as absent: it is there, unread (so its
        absence is never inferred); False for any other (the store cannot tell without reading it)."""
        return key in self._failed

    def _raise_failed(self, key: str) -> None:
        """NodeError for a key whose read already failed (no second request, and no second wait for a timeout)."""
        if key in self._failed:
            raise NodeError(self._failed[key])

    def get_many(self, keys: list[str], limit: int | None = None) -> dict[str, bytes | None]:
        """`get` of every key, fetched concurrently; metadata documents are kept as `get` keeps them. A response
        past `limit` bytes (default: MAX_VALUE_BYTES) is cut off and its key left out (read alone by its caller,
        and refused there)."""
        out, wanted = self._answered_here(keys)
        out.update(self._keep_documents(self._fetch_many(wanted, limit=limit)))
        return out

    def get_and_list_many(
        self, keys: list[str], prefixes: list[str], limit: int | None = None
    ) -> tuple[dict[str, bytes | None], dict[str, tuple[list[str], list[str]]]]:
        """`get_many(keys, limit)` and `list_many(prefixes)` in one batch where the storage lists: one round trip for
        a level's documents and the next level's listings, not two."""
        if not self.batched or self._listing_mode() != "list":
            return super().get_and_list_many(keys, prefixes, limit)
        out, wanted = self._answered_here(keys)
        fetched, listed = self._fetch_and_list(wanted, self._not_listed(prefixes), limit=limit)
        out.update(self._keep_documents(fetched))
        self._keep_listings(listed)
        return out, {p: self.list_dir(p) for p in prefixes}

    def _answered_here(self, keys: list[str]) -> tuple[dict[str, bytes | None], list[str]]:
        """The keys answered without a request (no request may name them, a document a listing shows absent, a
        document already fetched), and the keys left to fetch, each once."""
        out: dict[str, bytes | None] = {}
        wanted: list[str] = []
        for key in keys:
            if key in out:
                continue
            if not _safe_key(key, self._http) or (self._is_document(key) and self._known_absent(key)):
                out[key] = None
            elif self._is_document(key) and key in self._documents:
                out[key] = self._documents[key]
            else:
                wanted.append(key)
        return out, wanted

    def _keep_documents(self, fetched: dict[str, bytes | None]) -> dict[str, bytes | None]:
        """`fetched`, its metadata documents kept (each is asked for once)."""
        self._documents.update((k, v) for k, v in fetched.items() if self._is_document(k))
        return fetched

    def get_many_soon(self, keys: list[str], limit: int | None = None) -> Callable[[], dict[str, bytes | None]]:
        """`get_many` of chunk keys, its requests started now on the store's event loop (through its gate) without
        waiting: the function returned waits for them, and raises what `get_many` would. Metadata documents, and
        keys no request may name, are left to `get_many`."""
        if not self.batched:
            return super().get_many_soon(keys, limit)
        wanted = [k for k in dict.fromkeys(keys) if _safe_key(k, self._http) and not self._is_document(k)]
        calls = [self._fs._cat_file(self._path(k)) for k in wanted]
        future = gather_soon(self._fs, self._gate, calls, limit)
        return lambda: self._values(wanted, future.result(), limit=limit)

    def _is_document(self, key: str) -> bool:
        return key.rpartition("/")[2] in self._small_keys

    def _known_absent(self, key: str) -> bool:
        """True when a listing (or the consolidated map) already shows the document is not stored."""
        if self._listing_mode() == "blind":
            return False
        parent, _, name = key.rpartition("/")
        return name not in self.list_dir(parent)[0]

    def _fetch(self, key: str, denied_is_absent: bool = False) -> bytes | None:
        self._raise_failed(key)
        try:
            if not self.batched:
                return self._fs.cat_file(self._path(key))
            # Through the gate as a batch's requests go: a single key read by a scan thread counts as one in flight.
            (result,) = self._gather([self._fs._cat_file(self._path(key))])
            if isinstance(result, BaseException):
                raise result
            return _settled(result, self._is_document(key))
        except Exception as exc:
            return self._absent_or_raise(key, exc, denied_is_absent)

    def _fetch_many(self, keys: list[str], denied_is_absent: bool = False, limit: int | None = None) -> dict[str, bytes | None]:
        """The keys' bytes, fetched concurrently where the file system is asynchronous (S3, GCS, HTTP). Each
        response is cut off past `limit` bytes (so a batch holds at most MAX_CONCURRENT_REQUESTS times that) and
        its key left out of the result."""
        return self._fetch_and_list(keys, [], denied_is_absent, limit)[0]

    def _gather(self, calls: list[Any], limit: int | None = None) -> list[Any]:
        return gather(self._fs, self._gate, calls, limit)

    def _absent_or_raise(self, key: str, exc: BaseException, denied_is_absent: bool = False) -> None:
        """None for an absent key. For a key below the root that cannot be read (a timeout, an error answer, a
        response refused), NodeError with the reason: that key is unreadable, kept as such, and the rest of the store
        is read. InputError, with the reason and no credentials, for any other failure: a root document, access
        denied (a credential's problem, not one key's), a missing bucket."""
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
            return None
        if isinstance(exc, PermissionError) and denied_is_absent:
            return None
        if isinstance(exc, MissingBucket):  # said of the store, not of the key that found it missing
            raise InputError(f"{self.location}: {describe_error(exc, self._url)}") from None
        if not isinstance(exc, Exception):
            raise exc
        if "/" in key and not isinstance(exc, PermissionError):
            self._failed[key] = describe_error(exc, self._url)
            raise NodeError(self._failed[key])
        raise InputError(f"{self._shown(key)}: cannot read ({describe_error(exc, self._url)})") from None

    # --- listings -----------------------------------------------------------------------------------------

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """(keys, sub-prefixes) directly below `prefix`, from the storage's listing or the consolidated metadata."""
        if prefix and not _safe_key(prefix, self._http):
            return [], []
        cached = self._listings.get(prefix)
        if cached is not None:
            return cached
        mode = self._listing_mode()
        if self._flat:  # the whole store was listed: nothing is stored below a prefix it did not show
            return self._listings.setdefault(prefix, ([], []))
        if mode == "list":
            self._keep_listings(self._fetch_and_list([], [prefix])[1])
            return self._listings[prefix]
        result = self._mapped_listings().get(prefix, ([], [])) if mode == "consolidated" else ([], [])
        self._listings[prefix] = result
        return result

    def list_many(self, prefixes: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        """`list_dir` of every prefix; where the storage lists, the listings not yet made are made concurrently."""
        if self._listing_mode() == "list":
            self._list_together(prefixes)
        return {p: self.list_dir(p) for p in prefixes}

    def _list_together(self, prefixes: list[str]) -> None:
        """Make the listings of `prefixes` not yet made, concurrently (where the file system is asynchronous)."""
        todo = self._not_listed(prefixes)
        if len(todo) > 1 and self.batched:
            self._keep_listings(self._fetch_and_list([], todo)[1])

    def _not_listed(self, prefixes: list[str]) -> list[str]:
        """The prefixes not yet listed that a request may name, each once."""
        return [p for p in dict.fromkeys(prefixes) if p not in self._listings and (not p or _safe_key(p, self._http))]

    def _keep_listings(self, listed: dict[str, tuple[list[str], list[str]] | Exception | None]) -> None:
        """Keep listings as `_fetch_and_list` gives them (none given: nothing below); InputError for a refused one. A
        folder below the root whose listing failed otherwise (`_listing`) is kept as unlisted, with the reason."""
        for prefix, found in listed.items():
            if isinstance(found, PermissionError):
                raise InputError(f"{self._shown(prefix)}: cannot list ({describe_error(found, self._url)})") from None
            if isinstance(found, Exception):
                why = self._unlisted[prefix] = f"cannot be listed ({describe_error(found, self._url)})"
                self.skip(prefix, f"{prefix}: {why}; nothing below it is read")
                found = None
            self._listings[prefix] = found if found is not None else ([], [])

    @property  # type: ignore[override]
    def report(self) -> Callable[[str, str], None] | None:
        return self._report

    @report.setter
    def report(self, hook: Callable[[str, str], None] | None) -> None:
        """The tree's hook; told at once what was left out before it was set (the listings `expect` made)."""
        self._report = hook
        if hook is not None:
            for key, why in self._unreported:
                hook(key, why)
            self._unreported.clear()

    def skip(self, key: str, why: str) -> None:
        if self._report is None:
            self._unreported.append((key, why))
        else:
            self._report(key, why)

    def unlisted(self, prefix: str, below: bool = False) -> str | None:
        if not self._unlisted or not below:
            return self._unlisted.get(prefix)
        inside = f"{prefix}/" if prefix else ""
        return next((why for p, why in self._unlisted.items() if p == prefix or p.startswith(inside)), None)

    def _mapped_listings(self) -> dict[str, tuple[list[str], list[str]]]:
        """The directories the consolidated metadata implies, computed once (a scan of the keys per directory
        was quadratic in the number of nodes)."""
        if self._mapped is None:
            self._mapped = _listings_of(self._index)
        return self._mapped

    def _listing_mode(self) -> str:
        with self._lock:
            if self._mode is None:
                # No format reader said what it expects: the root alone is probed, and listed where folders are.
                if not self._probed:
                    self._probe([])
                self._expect([], [], None, False, [])
            return self._mode  # type: ignore[return-value]

    def probe(self, keys: list[str]) -> dict[str, bytes | None]:
        """The first round trip: `keys` (a format's root documents) fetched, and where folders are listed the root's
        listing, together. Each key's bytes, None where it is absent (or access to it is denied)."""
        with self._lock:
            return self._probe(keys)

    def _probe(self, keys: list[str]) -> dict[str, bytes | None]:
        documents, listed = self._fetch_and_list(keys, [""] if self.list_folders else [], denied_is_absent=True)
        self._documents.update(documents)
        self._root_listing = self._store_listing(listed.get(""))
        self._probed = True
        return documents

    def expect(
        self,
        keys: list[str],
        folders: list[str] = (),  # type: ignore[assignment]
        most_keys: int | None = None,
        complete: bool = False,
        maybe: list[str] = (),  # type: ignore[assignment]
    ) -> None:
        """What the format reader expects of the store, after `probe`: the second round trip.

        `keys` (those it will read first) are fetched in one batch, and where the root was listed the `folders`
        they lie in are listed in it (the walk, a level at a time, then waits on none of them; a folder named that
        is not stored costs one request, found empty). `complete`: the keys name every member of the store's
        groups (consolidated metadata), so that where nothing lists they are the map of the store. `most_keys`: how
        many keys the store may hold (None: unknown), which decides whether it is listed flat in one listing.
        `maybe`: keys fetched too where the root's listing does not already answer for them, and mapped where stored.
        """
        with self._lock:
            if not self._probed:
                self._probe([])
            self._expect(keys, list(folders), most_keys, complete, list(maybe))

    def _expect(self, keys: list[str], folders: list[str], most_keys: int | None, complete: bool, maybe: list[str]) -> None:
        index = sorted(k for k in dict.fromkeys(keys) if _safe_key(k, self._http))
        self._complete = complete
        root = self._root_listing
        if not self.list_folders and not complete:
            # Nothing else names the members: listed all the same.
            root = self._store_listing(self._fetch_and_list([], [""])[1][""])
        wanted = [k for k in index if k not in self._documents]
        wanted += [k for k in maybe if k not in self._documents and (root is None or k in root[0]) and _safe_key(k, self._http)]
        folders = [p for p in dict.fromkeys(folders) if p and _safe_key(p, self._http)] if complete and root is not None else []
        most = self._flat_bound(complete, most_keys) if root is not None else None
        documents, listed = self._fetch_and_list(wanted, folders if most is None else [], denied_is_absent=True, flat=most)
        self._documents.update(documents)
        if most is not None and listed is None:  # more keys than the bound: listed folder by folder after all
            listed = self._fetch_and_list([], folders)[1] if folders else {}
        elif most is not None:
            self._flat = True
        self._keep_listings(listed)
        if self._flat:
            root = self._listings[""]
        index = sorted({*index, *(k for k in maybe if self._documents.get(k) is not None)})
        if root is not None:
            # Where the storage lists, the store is what is stored, whatever the reader expects: a node left out of
            # its consolidated metadata (consolidated before more was written) is still seen, as a local run sees
            # it, and the rules on stored keys see the keys stored.
            self._listings[""] = root
            self._mode = "list"
        elif index:  # no listing: the keys the reader named (or, without a map, the root's) are all that is known
            self._index = index
            self._mode = "consolidated"
        else:
            self._mode = "blind"

    def _flat_bound(self, complete: bool, most_keys: int | None) -> int | None:
        """The most keys a flat listing of the store may find before it is given up (see MOST_FLAT_LISTING_KEYS);
        None where the store is not listed flat: not an object store, or the reader says it holds more."""
        if not hasattr(self._fs, "list_flat"):
            return None
        if not complete:
            return MOST_UNMAPPED_FLAT_LISTING_KEYS
        return MOST_FLAT_LISTING_KEYS if most_keys is not None and most_keys <= MOST_FLAT_LISTING_KEYS else None

    def _store_listing(self, root: Any) -> tuple[list[str], list[str]] | None:
        """The root's listing as the store's, or None: none given, refused, or (HTTP) a page that is not a listing of
        this store (an index page, an error page: its links mean nothing). A URL ending in .zarr names a store, whose
        root may hold no document (arrays in folders below it, as tensorstore writes them): its listing is taken, as
        a local directory's is."""
        if root is None or isinstance(root, PermissionError):  # may read objects but not list them (no s3:ListBucket)
            return None
        if self._http and not self._small_keys & set(root[0]) and not self._root_is_store:
            return None
        return root

    def _fetch_and_list(
        self,
        keys: list[str],
        prefixes: list[str],
        denied_is_absent: bool = False,
        limit: int | None = None,
        flat: int | None = None,
    ) -> tuple[dict[str, bytes | None], Any]:
        """The keys' bytes (as `_fetch`; a response past `limit` bytes is cut off and its key left out) and each
        prefix's listing (None where the storage gives none, the PermissionError where it refuses), in one batch
        where the file system is asynchronous (S3, GCS, HTTP). With `flat` (a number of keys), the whole store is
        listed at once instead (`prefixes` must be empty): the listing of every prefix it implies, or None where it
        holds more than `flat` keys."""
        wheres = [self._where(p) for p in prefixes]
        flat_calls = 0 if flat is None else 1
        if not self.batched or len(keys) + len(prefixes) + flat_calls < 2:
            documents = {}
            for k in keys:
                try:
                    documents[k] = self._fetch(k, denied_is_absent)
                except NodeError:
                    continue  # unreadable, as `_values` leaves such a key out
            entries = [self._entries(w) for w in wheres]
            found = self._gather([self._flat_names(flat)])[0] if flat is not None else None
        else:
            calls = [self._fs._cat_file(self._path(k)) for k in keys] + [self._fs._ls(w, detail=True) for w in wheres]
            if flat is not None:
                calls.append(self._flat_names(flat))
            results = self._gather(calls, limit)
            documents = self._values(keys, results[: len(keys)], denied_is_absent, limit)
            entries = results[len(keys) : len(keys) + len(prefixes)]
            found = results[-1] if flat is not None else None
        if flat is not None:
            if isinstance(found, BaseException):
                if not isinstance(found, Exception):
                    raise found
                raise InputError(f"{self._shown('')}: cannot list ({describe_error(found, self._url)})") from None
            return documents, None if found is None else dict(_listings_of(self._relative_keys(found)))
        listings: dict[str, Any] = {}
        for prefix, where, found in zip(prefixes, wheres, entries, strict=True):
            try:
                listings[prefix] = self._listing(prefix, where, found)
            except PermissionError as exc:
                listings[prefix] = exc
            except InputError:
                if not prefix:  # the root's: the store cannot be read
                    raise
                listings[prefix] = found  # a folder below it: unlisted (`_keep_listings`), the rest read
        return documents, listings

    def _values(
        self, keys: list[str], results: list[Any], denied_is_absent: bool = False, limit: int | None = None
    ) -> dict[str, bytes | None]:
        """Each key's fetched bytes (None where absent); a response past its bound is left out (cut off by the
        HTTP client; fsspec's file systems read a value whole, and it is dropped here), as is a key below the root
        that cannot be read; any other failure raises InputError (`_absent_or_raise`)."""
        most = keyvalue.MAX_VALUE_BYTES if limit is None else limit
        out: dict[str, bytes | None] = {}
        for k, r in zip(keys, results, strict=True):
            if isinstance(r, ResponseTooLarge) or (not isinstance(r, BaseException) and len(r) > most):
                continue
            if not isinstance(r, BaseException):
                out[k] = _settled(r, self._is_document(k))
                continue
            try:
                out[k] = self._absent_or_raise(k, r, denied_is_absent)
            except NodeError:
                continue  # unreadable, and kept so: its caller, reading it alone, is told why without a request
        return out

    async def _flat_names(self, most: int) -> list[str] | None:
        """The name of every key below the root, from one flat listing, page after page; None as soon as it finds
        more than `most`."""
        return await self._fs.list_flat(self._root, most)

    def _relative_keys(self, names: Any) -> list[str]:
        """The keys of a flat listing's names ("bucket/path/key"), relative to the root; a name that is no key
        (a folder marker ending in "/", one that steps out of the store) left out, as a folder listing leaves it."""
        base = self._fs._strip_protocol(self._root).rstrip("/") + "/"
        keys = []
        for name in names:
            name = str(name)
            if name.startswith(base) and not name.endswith("/") and _safe_key(name[len(base) :], False):
                keys.append(name[len(base) :])
        return keys

    def _entries(self, where: str) -> Any:
        """The storage's entries at `where`, or the exception its listing raised (`_listing` tells them apart)."""
        try:
            return self._fs.ls(where, detail=True)
        except Exception as exc:
            return exc

    def _where(self, prefix: str) -> str:
        where = f"{self._root}/{prefix}" if prefix else self._root
        # An HTTP directory's own URL ends in "/": no redirect, and its relative links resolve below it.
        return where + "/" if self._http else where

    def _listing(self, prefix: str, where: str, entries: Any) -> tuple[list[str], list[str]] | None:
        """The (keys, sub-prefixes) of a listing's entries; None where the storage gives no listing; raises
        PermissionError as it comes, and InputError for any other failure (`entries` is then the exception)."""
        if isinstance(entries, FileNotFoundError):
            # An object store has no directories: nothing below the prefix. An HTTP server may just not list.
            return None if self._http else ([], [])
        if isinstance(entries, PermissionError):
            raise entries
        if isinstance(entries, BaseException):
            if self._http and isinstance(getattr(entries, "status", None), int):
                return None  # the server answers but will not list (403, 405): no listing, as with a 404
            if not isinstance(entries, Exception):
                raise entries
            raise InputError(f"{self._shown(prefix)}: cannot list ({describe_error(entries, self._url)})") from None
        # HTTP listings name full URLs; object stores name "bucket/path" without the protocol.
        where = where.rstrip("/") if self._http else where
        base = (where if self._http else self._fs._strip_protocol(where)).rstrip("/") + "/"
        return _names_below(entries, base, self._http)

    def close(self) -> None:
        self._listings.clear()
        self._documents.clear()
        if isinstance(self._fs, ObjectStoreFileSystem):
            self._fs.close()


def _names_below(entries: Any, base: str, http: bool) -> tuple[list[str], list[str]]:
    """(file names, folder names) of a listing's entries directly below `base`; links elsewhere, further down, or
    to names no request may read are left out."""
    keys, dirs = set(), set()
    for entry in entries:
        name = str(entry.get("name", ""))
        if http:
            name = name.split("?", 1)[0].split("#", 1)[0]
        if not name.startswith(base):
            continue  # a link elsewhere on the server
        rest = name[len(base) :]
        is_dir = rest.endswith("/") or entry.get("type") == "directory"
        rest = rest.rstrip("/")
        if http:
            rest = unquote(rest)  # directory pages percent-encode their links
        if not rest or "/" in rest or not _safe_key(rest, http):
            continue  # the directory itself, a link further down, or a name we would refuse to read
        (dirs if is_dir else keys).add(rest)
    return sorted(keys), sorted(dirs)


class FolderListings:
    """The folders of a folder search behind a URL (`spec_validate/inputs.py`): each folder URL's files and folders.

    Over http(s), as the links of its directory page name them (python's http.server, nginx `autoindex`, Apache
    `Indexes`); on an object store (s3://, gs://, az://), as its listing API gives a prefix's keys and common
    prefixes (one delimiter listing per folder). Bounded as a store's listings are: each page by the document bound,
    each request by the timeouts, the requests in flight by a gate, and no redirect off the server or endpoint."""

    def __init__(self, url: str) -> None:
        self._fs, _ = filesystem(url)
        self.http = protocol(url) in HTTP_PROTOCOLS
        self._gate = _gate_for(self.http)

    def list(self, urls: list[str]) -> list[tuple[list[str], list[str]] | str]:
        """For each folder URL, (file names, folder names) directly below it, read together; or why its server
        gives no listing of it, in a few words (an answer that is no directory page lists nothing)."""
        wheres = [_folder_url(url) if self.http else url.rstrip("/") + "/" for url in urls]
        found = gather(self._fs, self._gate, [self._fs._ls(where) for where in wheres])
        out: list[tuple[list[str], list[str]] | str] = []
        for url, where, entries in zip(urls, wheres, found, strict=True):
            if isinstance(entries, BaseException):
                if not isinstance(entries, Exception):
                    raise entries
                out.append(describe_error(entries, url))
            else:
                # HTTP pages link full URLs; object stores name "bucket/path", without the protocol.
                base = where.split("?", 1)[0] if self.http else self._fs._strip_protocol(where)
                out.append(_names_below(entries, base, self.http))
        return out

    def child(self, folder: str, name: str) -> str:
        """The URL of `name` in the folder at `folder`. Over HTTP the name is percent-encoded and the folder's query
        (a token) kept; an object store's key is written as it is ("?", "#" and "%" are no query, fragment or
        escape in an s3:// URL, as the AWS CLI reads one)."""
        if not self.http:
            return folder.rstrip("/") + "/" + name
        parts = urlsplit(folder)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + quote(name), fragment=""))

    def close(self) -> None:
        if isinstance(self._fs, ObjectStoreFileSystem):
            self._fs.close()


def _folder_url(url: str) -> str:
    """A folder's own URL, ending in "/" (no redirect, and its page's relative links resolve below it), query kept."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/", fragment=""))


def _settled(value: bytes | bytearray, small: bool) -> bytes | bytearray:
    """A fetched value as the store hands it out: a small key (a metadata document) as bytes (documents are parsed once per
    distinct content, keyed by their bytes), a chunk as the client received it (the tool's HTTP client writes a
    body into a bytearray, and copying megabytes of chunks into bytes would undo that)."""
    return bytes(value) if isinstance(value, bytearray) and small else value


def _listings_of(keys: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """Every directory's (keys, sub-prefixes) that a list of keys implies, built in one pass over them."""
    files: dict[str, set[str]] = {"": set()}
    dirs: dict[str, set[str]] = {"": set()}
    for key in keys:
        parts = key.split("/")
        for depth in range(len(parts)):
            prefix = "/".join(parts[:depth])
            files.setdefault(prefix, set())
            dirs.setdefault(prefix, set())
            (files if depth == len(parts) - 1 else dirs)[prefix].add(parts[depth])
    return {p: (sorted(files[p]), sorted(dirs[p])) for p in files}


def _safe_key(key: str, http: bool) -> bool:
    # The same keys DirectoryStore refuses (nothing may step out of the store), and for HTTP the characters
    # that would turn a key into a query or a fragment of another URL.
    if any(part in ("", ".", "..") for part in key.split("/")) or "\\" in key:
        return False
    return not (http and ("?" in key or "#" in key))


def protocol(url: str) -> str:
    match = URL_SCHEME.match(url)
    return match.group(1).lower() if match else "file"


def _netrc_login(host: str | None) -> tuple[str, str] | None:
    """(login, password) for `host` from $NETRC or ~/.netrc (its `default` entry too), as curl reads them; None
    when there is no such file or entry."""
    import netrc

    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    if not host or not os.path.isfile(path):
        return None
    try:
        entry = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return (entry[0] or "", entry[2] or "") if entry else None


# A server that does not answer, or stops sending, is given up on after these many seconds (per connection attempt,
# and between two reads of a response): a stalled read never hangs the run.
HTTP_CONNECT_TIMEOUT = 30.0
HTTP_READ_TIMEOUT = 60.0


def _gate_for(http: bool) -> RequestGate:
    """The bound on a store's or file's requests in flight: a few until an HTTP server (whose capacity is unknown)
    shows it keeps its connections; at once MAX_CONCURRENT_REQUESTS for an object store's API."""
    return RequestGate(MAX_CONCURRENT_REQUESTS, first=FIRST_LIMIT if http else MAX_CONCURRENT_REQUESTS)


def gather(fs: Any, gate: RequestGate, calls: list[Any], limit: int | None = None) -> list[Any]:
    """Run the file system's coroutines on its event loop, as many at a time as `gate` lets through, each response
    bounded by `limit` bytes; each one's result or exception, in order."""
    return sync(fs.loop, _gated(gate, calls, limit))


def gather_soon(fs: Any, gate: RequestGate, calls: list[Any], limit: int | None = None) -> Future[list[Any]]:
    """`gather`, started on the file system's event loop without waiting for it: its future."""
    return asyncio.run_coroutine_threadsafe(_gated(gate, calls, limit), fs.loop)


async def _gated(gate: RequestGate, calls: list[Any], limit: int | None) -> list[Any]:
    async def one(call: Any) -> Any:
        # Each call runs in its own task: the bound and the gate set here are the ones its response reads.
        RESPONSE_LIMIT.set(limit)
        async with gate as in_flight:
            request_gate.CURRENT.set((gate, in_flight))
            return await call

    return await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)


class RangeReader:
    """Byte ranges of one remote file (an HDF5 file's chunks), fetched concurrently through a request gate.

    HDF5 reads a file object one block at a time; a scan knows from the chunk index where each chunk of a block
    lies, so it asks for all of them at once: a remote scan waits on the network once per block, not per chunk.
    """

    def __init__(self, fs: Any, path: str, url: str, size: int) -> None:
        self.size = size
        self._fs, self._path, self._url = fs, path, url
        self._shown = redact_url(url)
        self._gate = _gate_for(protocol(url) in HTTP_PROTOCOLS)

    def read(self, ranges: list[tuple[int, int]]) -> list[memoryview]:
        """The bytes at each (offset, size), fetched together; ranges that lie together in the file (a dataset's
        chunks are written one after the other) in one request. Raises InputError when the file cannot be read
        (as any failed remote read), NodeError when an answer is not the range asked for."""
        return self.read_soon(ranges)()

    def read_soon(self, ranges: list[tuple[int, int]]) -> Callable[[], list[memoryview]]:
        """`read`, its requests started now on the file system's event loop without waiting: the function returned
        waits for them and gives (or raises) what `read` would."""
        if not ranges:
            return list
        spans = _spans(ranges)
        calls = [self._fs._cat_file(self._path, start=start, end=stop) for start, stop, _ in spans]
        future = gather_soon(self._fs, self._gate, calls, max(stop - start for start, stop, _ in spans))
        return lambda: self._pieces(ranges, spans, future.result())

    def _pieces(
        self, ranges: list[tuple[int, int]], spans: list[tuple[int, int, list[int]]], answers: list[Any]
    ) -> list[memoryview]:
        """Each range's bytes, cut from the answers to the requests for `spans`."""
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        for (start, stop, members), got in zip(spans, answers, strict=True):
            where = f"{self._shown}: bytes {start} to {stop}"
            if isinstance(got, ResponseTooLarge):
                raise NodeError(f"{where}: the server sent more than the range asked for")
            if isinstance(got, BaseException):
                if not isinstance(got, Exception):
                    raise got
                raise InputError(f"{where}: cannot read ({describe_error(got, self._url)})") from None
            if len(got) != stop - start:
                raise NodeError(f"{where}: the server sent {len(got)} bytes for a range of {stop - start}")
            view = memoryview(got)
            for i in members:
                offset, size = ranges[i]
                out[i] = view[offset - start : offset - start + size]  # no copy: the span lives until decoded
        return out


# Ranges of one file closer than this are asked for in one request (the gap is read and dropped), up to a request
# of MAX_SPAN_BYTES: a block's chunks, written one after the other, come in one or a few requests.
MAX_GAP_BYTES = 64 * 2**10
MAX_SPAN_BYTES = 8 * 2**20


def _spans(ranges: list[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """(start, stop, indexes of the ranges it holds) for each request that covers `ranges`."""
    spans: list[tuple[int, int, list[int]]] = []
    for i in sorted(range(len(ranges)), key=lambda i: ranges[i][0]):
        offset, size = ranges[i]
        if spans:
            start, stop, members = spans[-1]
            end = max(stop, offset + size)
            if offset - stop <= MAX_GAP_BYTES and end - start <= MAX_SPAN_BYTES:
                members.append(i)  # in place: a span of thousands of small chunks is not copied once per chunk
                spans[-1] = (start, end, members)
                continue
        spans.append((offset, offset + size, [i]))
    return spans


def filesystem(url: str) -> tuple[Any, str]:
    """The file system for `url` (obstore's for `http(s)://`, `s3://`, `gs://` and `az://`, else fsspec's) and the path
    on it; InputError when the protocol cannot be used here."""
    shown = redact_url(url)
    scheme = protocol(url)
    if scheme in HTTP_PROTOCOLS or scheme in CLOUD_SCHEMES:
        try:
            import obstore  # noqa: F401
        except ImportError:
            raise InputError(f"{shown}: reading {scheme}:// URLs needs obstore: pip install 'spec-validate[remote]'") from None
        if scheme in CLOUD_SCHEMES:
            if not bucket_and_key(url)[0]:
                raise InputError(f"{shown}: no bucket named")
            try:
                return CloudStoreFileSystem(scheme, HTTP_CONNECT_TIMEOUT, HTTP_READ_TIMEOUT), url
            except Exception as exc:
                raise InputError(f"{shown}: {describe_error(exc, url)}") from None
        login = None if urlsplit(url).username is not None else _netrc_login(urlsplit(url).hostname)
        return ObjectStoreFileSystem(HTTP_CONNECT_TIMEOUT, HTTP_READ_TIMEOUT, login, within=url), url
    try:
        import fsspec.core
    except ImportError:
        raise InputError(f"{shown}: reading {scheme}:// URLs needs fsspec: pip install 'spec-validate[remote]'") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise InputError(
            f"{shown}: the {scheme}:// protocol needs a package that is not installed ({scrub(str(exc), url)})"
        ) from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise InputError(f"{shown}: unknown protocol {scheme!r} (fsspec has no file system for it)") from None
        raise InputError(f"{shown}: cannot open ({describe_error(exc, url)})") from None
    except Exception as exc:
        raise InputError(f"{shown}: cannot open ({describe_error(exc, url)})") from None
