"""Zarr backend: metadata read raw from `.zarray`/`.zgroup`/`.zattrs`/`zarr.json`; data chunk by chunk (direct)."""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Hashable, Iterator, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.errors import NodeError, NotDecoded, TooLarge
from spec_validate.kernels.block import Block
from spec_validate.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    RowRange,
    RowRanges,
    Storage,
    StoreProblem,
    StringStorage,
    Tree,
    Unreadable,
    plan_rows,
    row_elements,
    stored_in,
)
from spec_validate.nodes.zarr import direct
from spec_validate.nodes.zarr.v3 import element_codec_names
from spec_validate.storage.keyvalue import (
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    DirectoryStore,
    KeyValueStore,
    ValueTooLarge,
    ZipStore,
    join_key,
    keys_below,
    read_checked,
)

V2_DOCUMENTS = (".zarray", ".zgroup", ".zattrs")
# The most shards whose indexes are looked up for one block: a declared grid can name any number, but what is
# stored is bounded by the store (rows with nothing stored are skipped by the listing).
MAX_SHARDS_PER_BLOCK = 1 << 16
# The most chunks of an array whose store cannot say which it holds (not listed) that are asked for one by one.
MOST_UNLISTED_CHUNKS = 1 << 20
V3_DOCUMENT = "zarr.json"
# The stored metadata documents: small, read by the tree and by several rules, so each is read once.
DOCUMENTS = frozenset((*V2_DOCUMENTS, ".zmetadata", V3_DOCUMENT))

V3_DTYPES = {
    "bool": "|b1",
    "int8": "|i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint8": "|u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
    "string": "|O",
    "variable_length_bytes": "|O",
    "bytes": "|O",
}


# A stored metadata document that is missing, not JSON, not a JSON object, too large or nested too deeply.
MetadataProblem = StoreProblem


def _unknown(problem: StoreProblem | None, path: str) -> str | None:
    """Why a node's document says nothing known (`ZarrNode(unread=...)`): it was stored and not read."""
    return f"{path}: {problem.key} {problem.message}" if isinstance(problem, UnreadDocument) else None


class UnreadDocument(StoreProblem):
    """A metadata document stored but not read (it cannot be opened, or is larger than the bound): what it says is
    unknown, unlike a document read and found broken (MetadataProblem)."""


def _unread(key: str, exc: NodeError) -> UnreadDocument:
    if isinstance(exc, ValueTooLarge):
        return UnreadDocument(key, str(exc).removeprefix(f"{key} "))
    return UnreadDocument(key, str(exc))


class _Failed:
    """A read or a parse that failed, and its error, raised again each time the key is asked for."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _tupled(fields: Any) -> Any:
    if isinstance(fields, list):
        return [tuple(_tupled(x) for x in f) if isinstance(f, list) else f for f in fields]
    return fields


def numpy_dtype_v2(spec: Any) -> np.dtype | None:
    try:
        if isinstance(spec, str):
            return np.dtype(spec)
        if isinstance(spec, list):
            return np.dtype([tuple(_tupled(f) if isinstance(f, list) else f for f in field) for field in spec])
    except (TypeError, ValueError):
        return None
    return None


def numpy_dtype_v3(data_type: Any, codecs: list[Any]) -> np.dtype | None:
    name = data_type if isinstance(data_type, str) else data_type.get("name") if isinstance(data_type, dict) else None
    config = data_type.get("configuration", {}) if isinstance(data_type, dict) else {}
    endian = _v3_endian(codecs)
    try:
        if name in V3_DTYPES:
            typestr = V3_DTYPES[name]
            return np.dtype(typestr if typestr[0] in "|" else endian + typestr[1:])
        if name == "fixed_length_utf32" and isinstance(config, dict):
            return np.dtype(f"{endian}U{int(config['length_bytes']) // 4}")
        if name in ("numpy.datetime64", "numpy.timedelta64") and isinstance(config, dict):
            scale = config.get("scale_factor", 1)
            unit = f"{scale if scale != 1 else ''}{config.get('unit', 'ns')}"
            return np.dtype(f"{endian}{'M' if 'datetime' in name else 'm'}8[{unit}]")
        if isinstance(name, str) and name.startswith("r") and name[1:].isdigit():
            return np.dtype(f"V{int(name[1:]) // 8}")
        if name == "raw_bytes" and isinstance(config, dict):
            return np.dtype(f"V{int(config['length_bytes'])}")
        if name == "null_terminated_bytes" and isinstance(config, dict):
            return np.dtype(f"S{int(config['length_bytes'])}")
        if name == "structured" and isinstance(config, dict) and isinstance(config.get("fields"), list):
            fields = [(f[0], numpy_dtype_v3(f[1], codecs)) for f in config["fields"]]
            if all(isinstance(n, str) and d is not None and not d.hasobject for n, d in fields):
                return np.dtype(fields)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return None


def _v3_endian(codecs: list[Any]) -> str:
    """ "<" or ">" as the `bytes` codec says (inside a sharding codec too); "<" when it says nothing."""
    for codec in codecs:
        if not isinstance(codec, dict):
            continue
        config = codec.get("configuration") or {}
        if codec.get("name") == "bytes" and isinstance(config, dict):
            return {"little": "<", "big": ">"}.get(config.get("endian"), "<")
        if codec.get("name") == "sharding_indexed" and isinstance(config, dict) and isinstance(config.get("codecs"), list):
            return _v3_endian(config["codecs"])
    return "<"


class ZarrNode(Node):
    def __init__(
        self,
        tree: ZarrTree,
        path: str,
        kind: str,
        metadata: dict[str, Any] | None,
        implicit: bool = False,
        unread: str | None = None,
    ):
        self.tree = tree
        self.path = path
        self.prefix = path.strip("/")  # its key prefix in the store ("" at the root): asked for on every read
        self.kind = kind  # type: ignore[assignment]
        self._document = metadata  # the stored .zarray / .zgroup / zarr.json document as written
        self._implicit = implicit  # a directory with no group document (v2 writers such as tensorstore)
        self.unread = unread  # why its document, stored, was not read: what it says (shape, dtype...) is unknown

    @property
    def metadata(self) -> dict[str, Any] | None:
        if self.unread is not None:
            raise Unreadable(self.unread)
        return self._document

    @property
    def implicit(self) -> bool:
        return self._implicit

    @property
    def metadata_key(self) -> str | None:
        if self._implicit:
            return None
        if self.tree.zarr_format == 3:
            return self.key(V3_DOCUMENT)
        return self.key(".zarray" if self.kind == "array" else ".zgroup")

    @cached_property
    def signature(self) -> Hashable | None:
        """(kind, implicit, the stored bytes of its document, and of its .zattrs for Zarr v2), as the tree's token
        for it (`Tree.signature_token`): everything the node's metadata, attributes, dtype, shape, chunks and storage
        are read from. None where a document is stored but cannot be read: such a node is checked alone (its own
        problem reported under its own key)."""
        key = self.metadata_key
        document = self.tree.stored_bytes(key) if key is not None else None
        attrs = self.tree.stored_bytes(self.key(".zattrs")) if self.tree.zarr_format == 2 else None
        if document is False or attrs is False:
            return None
        return self.tree.signature_token((self.kind, self._implicit, document, attrs))

    def stored_keys(self) -> list[str]:
        keys = self.__dict__.get("_stored_keys")
        if keys is None:  # listed once: several rules (chunk keys, consolidated metadata) read them
            prefix = self.prefix
            names, folders = self.tree.list_dir(prefix)
            if not folders:  # no folder below (an array's chunks, mostly): the keys are its listing's names
                keys = sorted(names)
            else:
                cut = len(prefix) + 1 if prefix else 0
                keys = sorted(k[cut:] for k in self.tree.list_keys(prefix))
            self.__dict__["_stored_keys"] = keys
        why = self.tree.kv.unlisted(self.prefix, below=True)
        if why is not None:  # some keys below it are unknown: not "none stored"
            raise Unreadable(f"{self.path}: the keys stored below it are not all known: a folder {why}")
        return list(keys)

    @property
    def keys_listed(self) -> bool:
        return self.tree.kv.lists

    def stored_raw_keys(self) -> list[str] | None:
        return self.tree.raw_keys() if self.path == "/" else None

    def read_document(self, name: str) -> bytes | None:
        return self.read_key(name)

    def read_key(self, key: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes | None:
        return self.tree.read(self.key(key), self.path, limit)

    def read_json(self, key: str) -> Any:
        return self.tree.read_json(self.key(key), self.path)

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    @cached_property
    def attrs(self) -> Mapping[str, Any]:
        if self.tree.zarr_format == 3:
            attrs = (self.metadata or {}).get("attributes", {})
            return attrs if isinstance(attrs, dict) else {}
        try:
            raw = self.tree.read(self.key(".zattrs"), self.path)  # bounded (keyvalue.MAX_DOCUMENT_BYTES)
        except NodeError as exc:
            # Stored but unreadable (a symlink out of the store, a directory or FIFO in its place, too large): the
            # attributes are unknown, not absent. Reported once; each clause that reads them skips the node.
            raise self.tree.unreadable(self.key(".zattrs"), f"cannot be read ({exc})", self.path) from None
        doc, problem = self.tree.parse(self.key(".zattrs"), raw)
        if problem:
            # Not JSON, nested too deeply, too large: unknown as well, never empty ("missing" would be a false claim).
            self.tree.note_problem(problem)
            raise Unreadable(f"{self.key('.zattrs')}: {problem.message}")
        if doc is not None and not isinstance(doc, dict):
            self.tree.note_problem(MetadataProblem(self.key(".zattrs"), f"not a JSON object but {type(doc).__name__}"))
            return {}
        return doc or {}

    @cached_property  # the document is read once and never changes: rules and scans ask tens of thousands of times
    def shape(self) -> tuple[int, ...] | None:
        if self.kind != "array" or not isinstance(self.metadata, dict):
            return None
        shape = self.metadata.get("shape")
        if isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            return tuple(shape)
        return None

    @cached_property
    def dtype(self) -> np.dtype | None:
        if self.kind != "array" or not self.metadata:
            return None
        if self.tree.zarr_format == 3:
            return numpy_dtype_v3(self.metadata.get("data_type"), self._v3_codecs)
        return numpy_dtype_v2(self.metadata.get("dtype"))

    @property
    def _v3_codecs(self) -> list[Any]:
        codecs = self.metadata.get("codecs") if isinstance(self.metadata, dict) else []
        return codecs if isinstance(codecs, list) else []

    @cached_property
    def chunks(self) -> tuple[int, ...] | None:
        if self.kind != "array" or not self.metadata:
            return None
        if self.tree.zarr_format == 3:
            grid = self.metadata.get("chunk_grid") or {}
            chunks = (grid.get("configuration") or {}).get("chunk_shape") if isinstance(grid, dict) else None
        else:
            chunks = self.metadata.get("chunks")
        if isinstance(chunks, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in chunks):
            return tuple(chunks)
        return None

    @cached_property
    def storage(self) -> Storage | None:
        if self.kind != "array" or self.metadata is None:
            return None
        meta = self.metadata
        if self.tree.zarr_format == 3:
            # A sharded array's elements pass through the sharding codec's inner codecs (anndata 0.13 shards every
            # array): they are its codecs too, or a sharded vlen-bytes array would not read as strings, and its
            # compressor would be "sharding_indexed".
            codecs = tuple(n if isinstance(n, str) else "?" for n in element_codec_names(self._v3_codecs))
            compressor = next(
                (c for c in codecs if c not in ("bytes", "transpose", "vlen-utf8", "vlen-bytes", "sharding_indexed")), None
            )
            data_type = meta.get("data_type")
            written = data_type if isinstance(data_type, str) else json.dumps(data_type)
            key = self.key(V3_DOCUMENT)
        else:
            filters = meta.get("filters") or []
            ids = [f.get("id", "?") if isinstance(f, dict) else str(f) for f in filters] if isinstance(filters, list) else []
            comp = meta.get("compressor")
            compressor = comp.get("id") if isinstance(comp, dict) else None
            codecs = tuple(ids + ([compressor] if compressor else []))
            written = json.dumps(meta.get("dtype")) if not isinstance(meta.get("dtype"), str) else meta["dtype"]
            key = self.key(".zarray")
        return Storage(
            format=self.tree.format,
            string=_string_storage(self.dtype, codecs, written),
            codecs=codecs,
            compressor=compressor,
            fill_value=meta.get("fill_value"),
            layout="chunked",
            metadata_key=key,
        )

    @cached_property
    def _children(self) -> dict[str, Node]:
        if self.kind != "group":
            return {}
        _, dirs = self.tree.list_dir(self.prefix)
        why = self.tree.kv.unlisted(self.prefix)
        if why is not None:
            self.members_unread = f"{self.path}: its members {why}"
        out: dict[str, Node] = {}
        for name in dirs:
            child = self.tree.node_at(f"{self.path.rstrip('/')}/{name}")
            if child is not None:
                out[name] = child
        return out

    def children(self) -> dict[str, Node]:
        return self._children

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> RowRanges | None:
        if self.kind != "array" or self.shape is None:
            raise NodeError(f"{self.path}: not a readable array")
        itemsize = self.dtype.itemsize if self.dtype is not None else 1
        rows = plan_rows(self.shape, self.chunks, max_elements, itemsize, self._stored_rows_or_few)
        self._list_wide_rows()
        return rows

    def _list_wide_rows(self) -> None:
        """Where an array's chunk rows hold more than `direct.LISTED_ROW_CHUNKS` chunks, find which are stored
        (`direct.stored_by_row`) as its blocks are planned, before any scan thread reads one: a block then reads
        those, not every chunk its rows declare (`_listed_by_row`)."""
        if "_by_row" in self.__dict__:
            return
        by_row = None
        try:
            plan = self.plan
            if direct.row_chunks(plan) > direct.LISTED_ROW_CHUNKS:
                by_row = direct.stored_by_row(self.tree.kv, plan)
        except Exception:  # an array not decoded, or a store failing to list: its blocks' reads say so
            by_row = None
        self.__dict__["_by_row"] = by_row

    def _listed_by_row(self) -> direct.ByRow | None:
        """What `_list_wide_rows` found, or None (not a wide array, not planned here, or the store cannot say)."""
        return self.__dict__.get("_by_row")

    def _stored_rows_or_few(self) -> list[int] | None:
        """`_stored_rows`, asked by a plan with many blocks; NodeError where the store cannot say which chunks it holds
        (not listed: `--no-list`, or a folder that cannot be listed) and the grid has more than MOST_UNLISTED_CHUNKS:
        each would be asked for by its key, a request each over HTTP (a declared 2**63 elements, never ending)."""
        stored = self._stored_rows()
        if stored is None and self.shape is not None:
            chunks = self.chunks if self.chunks and len(self.chunks) == len(self.shape) else self.shape
            count = math.prod(-(-n // max(1, c)) for n, c in zip(self.shape, chunks, strict=True))
            if count > MOST_UNLISTED_CHUNKS:
                raise NodeError(
                    f"{self.path}: declares {count} chunks, which cannot be listed here (--no-list, or a folder that "
                    f"cannot be listed) and are too many to ask for one by one (over {MOST_UNLISTED_CHUNKS}); not read"
                )
        return stored

    def _stored_rows(self) -> list[int] | None:
        """The axis-0 chunk indices of the chunks stored (from the store's listing), or None when it cannot say."""
        got = self.__dict__.get("_stored")
        if got is None:
            try:
                got = direct.stored_rows(self.tree.kv, self.plan)
            except NodeError:
                got = False
            self.__dict__["_stored"] = got
        return got if got is not False else None

    def fetch_ahead(self, rows: RowRange) -> direct.Fetched | None:
        """Start fetching the stored chunks of block `rows` where the store is remote (`direct.fetch_ahead`);
        None where nothing is started, whatever the reason (the block's read then meets it)."""
        if self.kind != "array" or self.shape is None or not self.metadata:
            return None
        try:
            return direct.fetch_ahead(self.tree.kv, self.plan, rows, self._listed_rows(), self._listed_by_row())
        except Exception:
            return None

    def read_block(self, rows: RowRange, fetched: direct.Fetched | None = None) -> Block:
        """One block, each stored chunk decoded through `codecs`; chunks that do not decode are listed in `Block.chunks`.

        Rows where the listing shows no stored chunk are the fill value, never materialised. `fetched`: the block's
        chunks as `fetch_ahead` started fetching them. Raises NotDecoded for an array whose codecs or layout are not
        read, NodeError for unusable metadata, a chunk outside the store or unreadable, or a block too large to hold.
        """
        if self.kind != "array" or self.shape is None or not self.metadata:
            raise NodeError(f"{self.path}: array metadata is unusable, data cannot be read")
        return direct.read_block(self.tree.kv, self.plan, rows, self._listed_rows(), fetched, self._listed_by_row())

    def _listed_rows(self) -> list[int] | None:
        """The axis-0 indices of the chunks stored, where `block_rows` listed them for its plan; None otherwise."""
        stored = self.__dict__.get("_stored")  # [] means none stored; False: the listing failed
        return stored if isinstance(stored, list) else None

    @property
    def plan(self) -> direct.ArrayPlan:
        """Where this array's chunks lie and how they decode; NotDecoded (or NodeError) when they are not read."""
        got = self.__dict__.get("_plan")
        if got is None:
            got = self.tree.plan_of(self)
            self.__dict__["_plan"] = got  # the refusal too: it is the same for every block
        if isinstance(got, NodeError):
            raise type(got)(str(got))
        return got

    def read_shard_indexes(self, rows: RowRange) -> Block:
        from spec_validate.codecs import decode as codecs
        from spec_validate.nodes.zarr import v3

        layout = v3.shard_layout(self.metadata or {}) if self.tree.zarr_format == 3 and self.kind == "array" else None
        if layout is None or isinstance(layout, str) or self.shape is None:
            raise NotDecoded(f"{self.path}: shard indexes not read ({layout or 'not a Zarr v3 array'})")
        start, stop = rows
        grid = layout.keys.grid or ()
        if grid:
            per_row = layout.shard_shape[0] or 1
            cells = max(0, min(grid[0], -(-stop // per_row)) - start // per_row) * math.prod(grid[1:])
            if cells > MAX_SHARDS_PER_BLOCK:
                # A declared shape far larger than what is written: only rows holding a stored shard are looked at.
                stored = self._stored_rows()
                if stored is not None and not stored_in(stored, per_row, (start, stop)):
                    return Block(start * row_elements(self.shape), np.empty(0, dtype=np.uint8))
                raise NotDecoded(
                    f"{self.path}: shard indexes not read: rows {start}..{stop} span {cells} shards, more than the "
                    f"{MAX_SHARDS_PER_BLOCK} looked at for one block"
                )
        # Codecs after sharding_indexed encode whole shards: undone by the codec module, as a data read would.
        unwrap = (lambda raw, where: codecs.shard_bytes(self.plan.codec, raw, f"{self.path}: {where}")) if layout.after else None
        shards = v3.read_shard_indexes(self.tree.kv, self.prefix, layout, start, stop, unwrap)
        return Block(start * row_elements(self.shape), np.empty(0, dtype=np.uint8), shards=shards)


def _string_storage(dtype: np.dtype | None, codecs: tuple[str, ...], written: str) -> StringStorage | None:
    if dtype is None:
        return None
    if dtype.kind == "U":
        return StringStorage("fixed", "utf-32", written)
    if dtype.kind == "S":
        return StringStorage("fixed", None, written)
    if dtype.kind == "O" and ("vlen-utf8" in codecs or written == "string"):
        return StringStorage("variable", "utf-8", written)
    if dtype.kind == "O" and "vlen-bytes" in codecs:
        return StringStorage("variable", None, written)
    return None


class ZarrTree(Tree):
    def __init__(self, kv: KeyValueStore, zarr_format: int) -> None:
        self.kv = kv
        self.source = kv.location
        self.zarr_format = zarr_format
        self.format = f"zarr-v{zarr_format}"
        kv.report = lambda key, why: self.note_problem(StoreProblem(key, why))
        self._nodes: dict[str, Node | None] = {}
        # Each metadata document is read once, parsed once, and each folder listed once, however many rules ask;
        # equal documents (the columns of one type in a wide dataframe) are held once, bytes and parsed value.
        self._documents: dict[str, Any] = {}  # key -> bytes, None (absent) or _Failed
        self._unreadable: dict[str, bool] = {}  # key -> stored though get_bounded found nothing
        self._parsed: dict[str, Any] = {}  # key -> the parsed document, or _Failed
        self._alike: dict[bytes, bytes] = {}
        self._parsed_alike: dict[bytes, Any] = {}
        self._listings: dict[str, tuple[list[str], list[str]]] = {}
        self._raw_keys: list[str] | None = None
        self._plans: dict[int, tuple[Any, direct.ArrayPlan]] = {}  # see plan_of
        if kv.batched:
            self._prefetch()
        root = self.node_at("/")
        # A store with no root document still has a root: report it as an implicit group.
        self._root = root if root is not None else ZarrNode(self, "/", "group", None, implicit=True)
        if self._root.kind == "group" and not kv.members_known:
            self.note_problem(
                StoreProblem(
                    "/",
                    "the server lists no folders and the store has no consolidated metadata: the members of its "
                    "groups cannot be found; nothing below the root is read",
                    "/",
                )
            )

    @property
    def root(self) -> Node:
        return self._root

    def plan_of(self, node: ZarrNode) -> direct.ArrayPlan | NodeError:
        """How the array `node` is read (`direct.plan`), or why it is not. Arrays whose metadata document is the
        same parsed one (equal documents are held once: the columns of a dataframe) share the planning of their
        codecs, grid and fill value; only the path and key prefix are each array's own."""
        meta = node.metadata or {}
        shared = self._plans.get(id(meta))
        if shared is not None and shared[0] is meta:
            return shared[1]._replace(path=node.path, key_prefix=f"{node.prefix}/" if node.prefix else "")
        try:
            got = direct.plan(meta, self.zarr_format, node.prefix, node.dtype, node.path)
        except NodeError as exc:
            return exc  # its message names the node: not shared
        if node.metadata is not None:
            self._plans[id(meta)] = (meta, got)  # the document is kept with the plan: its id stays its own
        return got

    def _raw(self, key: str) -> bytes | None:
        """`kv.get_bounded(key, MAX_DOCUMENT_BYTES)` of a metadata document, once: its bytes, None where absent, or
        the same NodeError (ValueTooLarge) again."""
        got = self._documents.get(key, _Failed)
        if got is _Failed:
            try:
                got = None if self._not_stored(key) else self._shared(self.kv.get_bounded(key, MAX_DOCUMENT_BYTES))
            except NodeError as exc:
                got = _Failed(exc)
            self._documents[key] = got
        if isinstance(got, _Failed):
            raise got.error
        return got

    def _shared(self, raw: bytes | None) -> bytes | None:
        return raw if raw is None else self._alike.setdefault(raw, raw)

    def document(self, key: str) -> tuple[Any, MetadataProblem | None]:
        """`read_document` of the metadata document `key`, read and parsed once for every reader."""
        try:
            raw = self._raw(key)
        except NodeError as exc:
            return None, _unread(key, exc)
        if raw is None and self._stored(key):  # a FIFO, a folder, a file that cannot be opened: not absent
            return None, UnreadDocument(key, "stored but cannot be read")
        return self.parse(key, raw)

    def stored_bytes(self, key: str) -> bytes | bool | None:
        """The stored bytes of the metadata document `key`; None where absent; False where stored but unreadable."""
        try:
            raw = self._raw(key)
        except NodeError:
            return False
        if raw is None and self._stored(key):
            return False
        return raw

    def _stored(self, key: str) -> bool:
        known = self._unreadable.get(key)
        if known is None:
            known = self._unreadable[key] = not self._not_stored(key) and self.kv.stored(key)
        return known

    def _not_stored(self, key: str) -> bool:
        """True when the listing of the key's folder, already made, shows nothing stored under its name (the four
        Zarr v2 documents a Zarr v3 group is asked for, absent from thousands of folders: no lookup each)."""
        prefix, _, name = key.rpartition("/")
        listing = self._listings.get(prefix)
        if listing is None:
            return False
        left_out = self.kv.left_out(prefix)
        if left_out is None or name in left_out:
            return False
        return not _in_sorted(listing[0], name) and not _in_sorted(listing[1], name)

    def read(self, key: str, where: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes | None:
        """`kv.read` (NodeError for a key stored but unreadable, TooLarge past `limit`), a metadata document read once
        for every reader (under its own bound, MAX_DOCUMENT_BYTES)."""
        if key.rpartition("/")[2] not in DOCUMENTS:
            return self.kv.read(key, where, limit)
        raw = read_checked(key, where, self._raw, self._stored)
        if raw is not None and len(raw) > limit:
            raise TooLarge(f"{where or key}: {key} holds {len(raw)} bytes, more than the {limit} read for it; not used")
        return raw

    def parse(self, key: str, raw: bytes | None) -> tuple[Any, MetadataProblem | None]:
        """`parse_json` of the document `key` whose stored bytes are `raw`; a metadata document parsed once."""
        if raw is None:
            return None, None
        got = self._parsed.get(key, _Failed)
        if got is _Failed:
            document = key.rpartition("/")[2] in DOCUMENTS
            got = self._parsed_alike.get(raw, _Failed) if document else _Failed
            if got is _Failed:
                try:
                    got = loads(raw)
                except JSONProblem as exc:
                    got = _Failed(exc)
                if document:
                    self._parsed_alike[raw] = got
            if document:
                self._parsed[key] = got
        if isinstance(got, _Failed):
            return None, MetadataProblem(key, str(got.error))
        return got, None

    def read_json(self, key: str, where: str) -> Any:
        """The stored document `key` parsed (`read`, then `loads`), a metadata document once for every reader: None
        when not stored; NodeError when it cannot be read, JSONProblem when it is not JSON. Shared: never modify it."""
        parsed = self._parsed.get(key, _Failed)
        if parsed is not _Failed and not isinstance(parsed, _Failed):
            return parsed  # read within its bound and parsed before (what `read` then `parse` would give again)
        raw = self.read(key, where)
        if raw is None:
            return None
        if key.rpartition("/")[2] not in DOCUMENTS:
            return loads(raw)
        self.parse(key, raw)
        got = self._parsed[key]
        if isinstance(got, _Failed):
            raise got.error
        return got

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """`kv.list_dir`, each folder listed once."""
        try:
            return self._listings[prefix]
        except KeyError:
            listing = self._listings[prefix] = self.kv.list_dir(prefix)
            return listing

    def list_keys(self, prefix: str) -> list[str]:
        """Every key below `prefix`, relative to the store root: `kv.iter_keys`, from the listings already made."""
        return list(self.iter_keys(prefix))

    def iter_keys(self, prefix: str) -> Iterator[str]:
        """`kv.iter_keys` (depth first, sorted, folders below MAX_DEPTH not entered), each folder listed once."""
        return keys_below(prefix, self.list_dir, self.kv.skip)

    def raw_keys(self) -> list[str] | None:
        """`kv.raw_keys`, walked once however many rules read it (a walk of the whole store)."""
        if self._raw_keys is None:
            # A local store's walk reads the folders from the listings the tree keeps: each is listed once.
            self._raw_keys = self.kv.raw_keys(self.list_dir) if isinstance(self.kv, DirectoryStore) else self.kv.raw_keys()
        return None if self._raw_keys is None else list(self._raw_keys)

    def _prefetch(self) -> None:
        """Read every folder listing and metadata document the run will need, a level of the hierarchy per round
        trip, instead of one request at a time: each round fetches the documents of the folders listed in the
        round before and lists the folders below them, together (a level's documents and the next level's listings
        wait on nothing of each other).

        Below an array lie chunks: its folders are listed (the chunk key rules read what is stored there) but no
        document is asked for. A store read from its consolidated metadata answers the listings without a
        request, so its documents come in a few batches. Documents larger than the bound are left to be read (and
        refused) one at a time.
        """
        names = (V3_DOCUMENT,) if self.zarr_format == 3 else V2_DOCUMENTS
        listed: list[str] = []  # folders listed in the round before: their documents are fetched in this one
        level = [""]  # folders to list in this round
        chunk_folders: set[str] = set()  # folders at or below an array
        for depth in range(MAX_DEPTH + 2):  # no deeper than a walk goes (iter_keys, base.walk), then its documents
            if not level and not listed:
                break
            keys = [join_key(p, n) for p in listed if p not in chunk_folders for n in self._listings[p][0] if n in names]
            # Larger documents are left out of the batch, to be read (and refused) one at a time.
            fetched, listings = self.kv.get_and_list_many(
                [k for k in keys if k not in self._documents], [p for p in level if p not in self._listings], MAX_DOCUMENT_BYTES
            )
            self._documents.update((k, self._shared(v)) for k, v in fetched.items())
            self._listings.update(listings)
            # A folder's documents say whether it holds an array: then what lies below it is chunks.
            for prefix in listed:
                if prefix not in chunk_folders and self._holds_array(prefix):
                    chunk_folders.update(join_key(prefix, name) for name in self._listings[prefix][1])
            below = []  # the folders to list next: none below the deepest level a walk enters
            for prefix in level if depth < MAX_DEPTH else []:
                for name in self._listings[prefix][1]:
                    below.append(join_key(prefix, name))
                    if prefix in chunk_folders:
                        chunk_folders.add(below[-1])
            listed, level = level, below

    def _holds_array(self, prefix: str) -> bool:
        key = lambda name: f"{prefix}/{name}" if prefix else name  # noqa: E731
        if self.zarr_format == 2:
            return isinstance(self._documents.get(key(".zarray")), bytes)
        raw = self._documents.get(key(V3_DOCUMENT))
        doc = self.parse(key(V3_DOCUMENT), raw)[0] if isinstance(raw, bytes) else None
        return isinstance(doc, dict) and doc.get("node_type") == "array"

    def node_at(self, path: str) -> Node | None:
        if path not in self._nodes:
            self._nodes[path] = self._load(path)
        return self._nodes[path]

    def _load(self, path: str) -> Node | None:
        prefix = path.strip("/")
        key = lambda name: f"{prefix}/{name}" if prefix else name  # noqa: E731
        if self.zarr_format == 3:
            doc, problem = self.document(key(V3_DOCUMENT))
            if problem:
                self.note_problem(problem)
                return ZarrNode(self, path, "group", None, unread=_unknown(problem, path))
            if doc is None:
                return self._implicit(path, prefix)
            if not isinstance(doc, dict):
                self.note_problem(MetadataProblem(key(V3_DOCUMENT), f"not a JSON object but {type(doc).__name__}"))
                return ZarrNode(self, path, "group", None)
            kind = "array" if doc.get("node_type") == "array" else "group"
            return ZarrNode(self, path, kind, doc)
        doc, problem = self.document(key(".zarray"))
        if doc is not None or problem is not None:
            if problem:
                self.note_problem(problem)
            elif not isinstance(doc, dict):
                self.note_problem(MetadataProblem(key(".zarray"), f"not a JSON object but {type(doc).__name__}"))
                doc = None
            return ZarrNode(self, path, "array", doc, unread=_unknown(problem, path))
        doc, problem = self.document(key(".zgroup"))
        if doc is not None or problem is not None:
            if problem:
                self.note_problem(problem)
            elif not isinstance(doc, dict):
                self.note_problem(MetadataProblem(key(".zgroup"), f"not a JSON object but {type(doc).__name__}"))
            return ZarrNode(self, path, "group", doc if isinstance(doc, dict) else None, unread=_unknown(problem, path))
        return self._implicit(path, prefix)

    def _implicit(self, path: str, prefix: str) -> Node | None:
        # Only directories that lead to some node document are nodes; other directories are not ours.
        documents = (V3_DOCUMENT,) if self.zarr_format == 3 else V2_DOCUMENTS
        if any(k.rsplit("/", 1)[-1] in documents for k in self.iter_keys(prefix)):
            return ZarrNode(self, path, "group", None, implicit=True)
        return None

    def close(self) -> None:
        self.kv.close()


def open_zarr(path: str) -> ZarrTree:
    """A Zarr store at `path` (a directory, or a `.zip`), in whichever format its root documents say."""
    import os

    kv: KeyValueStore = ZipStore(path) if os.path.isfile(path) else DirectoryStore(path)
    zarr_format = detect_zarr_format(kv)
    return ZarrTree(kv, zarr_format or 2)


def detect_zarr_format(kv: KeyValueStore) -> int | None:
    """3 when the root has `zarr.json`, 2 for v2 documents at the root or below; None when neither."""
    if _present(kv, V3_DOCUMENT):
        return 3
    if any(_present(kv, doc) for doc in V2_DOCUMENTS):
        return 2
    for key in kv.iter_keys(""):
        name = key.rsplit("/", 1)[-1]
        if name in V2_DOCUMENTS:
            return 2
        if name == V3_DOCUMENT:
            return 3
    return None


def _present(kv: KeyValueStore, key: str) -> bool:
    """True when something is stored at `key` (read within the document bound: a huge one is present, and reported later)."""
    try:
        return kv.get_bounded(key, MAX_DOCUMENT_BYTES) is not None
    except ValueTooLarge:
        return True
    except NodeError:
        return kv.stored(key)


def _in_sorted(names: list[str], name: str) -> bool:
    """`name in names` for a sorted list (a folder of thousands of chunks: no scan of it)."""
    at = bisect.bisect_left(names, name)
    return at < len(names) and names[at] == name
