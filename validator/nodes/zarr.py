"""Zarr backend: metadata read raw from `.zarray`/`.zgroup`/`.zattrs`/`zarr.json`; data chunk by chunk (zarr_direct)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np

from validator.kernels.block import Block
from validator.nodes import zarr_direct
from validator.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    NodeError,
    NotDecoded,
    RowRange,
    Storage,
    StringStorage,
    Tree,
    block_row_ranges,
    row_elements,
)
from validator.nodes.keyvalue import DirectoryStore, KeyValueStore, ZipStore

V2_DOCUMENTS = (".zarray", ".zgroup", ".zattrs")
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


class MetadataProblem:
    """A stored metadata document that is missing, not JSON, or not a JSON object."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message

    def __repr__(self) -> str:
        return f"{self.key}: {self.message}"


def parse_json(raw: bytes | None, key: str) -> tuple[Any, MetadataProblem | None]:
    if raw is None:
        return None, None
    try:
        # The stored JSON may carry NaN/Infinity (zarr v2 fill values); Python's parser accepts them.
        return json.loads(raw.decode("utf-8")), None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, _problem(key, exc)


def _problem(key: str, exc: UnicodeDecodeError | json.JSONDecodeError) -> MetadataProblem:
    if isinstance(exc, UnicodeDecodeError):
        return MetadataProblem(key, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    return MetadataProblem(key, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")


class _NotJSON:
    """A stored document that does not parse, and why (the error is raised again each time it is asked for)."""

    __slots__ = ("error",)

    def __init__(self, error: UnicodeDecodeError | json.JSONDecodeError) -> None:
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
    def __init__(self, tree: ZarrTree, path: str, kind: str, metadata: dict[str, Any] | None, implicit: bool = False):
        self.tree = tree
        self.path = path
        self.kind = kind  # type: ignore[assignment]
        self._document = metadata  # the stored .zarray / .zgroup / zarr.json document as written
        self._implicit = implicit  # a directory with no group document (v2 writers such as tensorstore)

    @property
    def metadata(self) -> dict[str, Any] | None:
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
    def signature(self) -> tuple[str, bool, bytes | None, bytes | None]:
        """(kind, implicit, the stored bytes of its document, and of its .zattrs for Zarr v2): everything the node's
        metadata, attributes, dtype, shape, chunks and storage are read from."""
        key = self.metadata_key
        document = self.tree.document(key) if key is not None else None
        attrs = self.tree.document(self.key(".zattrs")) if self.tree.zarr_format == 2 else None
        return (self.kind, self._implicit, document, attrs)

    def stored_keys(self) -> list[str]:
        keys = self.__dict__.get("_stored_keys")
        if keys is None:  # listed once: several rules (chunk keys, consolidated metadata) read them
            prefix = self.prefix
            cut = len(prefix) + 1 if prefix else 0
            keys = self.__dict__["_stored_keys"] = sorted(k[cut:] for k in self.tree.list_keys(prefix))
        return list(keys)

    def stored_raw_keys(self) -> list[str] | None:
        return self.tree.raw_keys() if self.path == "/" else None

    def read_document(self, name: str) -> bytes | None:
        return self.read_key(name)

    def read_key(self, key: str) -> bytes | None:
        return self.tree.read(self.key(key), self.path)

    def read_json(self, key: str) -> Any:
        return self.tree.read_json(self.key(key), self.path)

    @property
    def prefix(self) -> str:
        return self.path.strip("/")

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    @cached_property
    def attrs(self) -> Mapping[str, Any]:
        if self.tree.zarr_format == 3:
            attrs = (self.metadata or {}).get("attributes", {})
            return attrs if isinstance(attrs, dict) else {}
        try:
            raw = self.tree.read(self.key(".zattrs"), self.path)
        except NodeError as exc:
            # Stored but unreadable (a symlink out of the store, a directory in its place): the attributes are
            # unknown, not absent. Reported once as a problem; each clause that reads them is an error.
            self.tree.note_problem(MetadataProblem(self.key(".zattrs"), f"cannot be read ({exc})"))
            raise
        doc, problem = self.tree.parse(self.key(".zattrs"), raw)
        if problem:
            self.tree.note_problem(problem)
        elif doc is not None and not isinstance(doc, dict):
            self.tree.note_problem(MetadataProblem(self.key(".zattrs"), f"not a JSON object but {type(doc).__name__}"))
            return {}
        return doc or {}

    @property
    def shape(self) -> tuple[int, ...] | None:
        if self.kind != "array":
            return None
        shape = (self.metadata or {}).get("shape")
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
        codecs = (self.metadata or {}).get("codecs") or []
        return codecs if isinstance(codecs, list) else []

    @property
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
            codecs = tuple(c.get("name", "?") if isinstance(c, dict) else str(c) for c in self._v3_codecs)
            compressor = next((c for c in codecs if c not in ("bytes", "transpose", "vlen-utf8", "vlen-bytes")), None)
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
        out: dict[str, Node] = {}
        for name in dirs:
            child = self.tree.node_at(f"{self.path.rstrip('/')}/{name}")
            if child is not None:
                out[name] = child
        return out

    def children(self) -> dict[str, Node]:
        return self._children

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> list[RowRange] | None:
        if self.kind != "array" or self.shape is None:
            raise NodeError(f"{self.path}: not a readable array")
        return block_row_ranges(self.shape, self.chunks, max_elements)

    def read_block(self, rows: RowRange) -> Block:
        """One block, each stored chunk decoded through `codecs`; chunks that do not decode are listed in `Block.chunks`.

        Raises NotDecoded for an array whose codecs or layout are not read, NodeError for unusable metadata or a
        chunk outside the store or unreadable.
        """
        if self.kind != "array" or self.shape is None or not self.metadata:
            raise NodeError(f"{self.path}: array metadata is unusable, data cannot be read")
        return zarr_direct.read_block(self.tree.kv, self.plan, rows)

    @property
    def plan(self) -> zarr_direct.ArrayPlan:
        """Where this array's chunks lie and how they decode; NotDecoded (or NodeError) when they are not read."""
        got = self.__dict__.get("_plan")
        if got is None:
            try:
                got = zarr_direct.plan(self.metadata or {}, self.tree.zarr_format, self.prefix, self.dtype, self.path)
            except NodeError as exc:
                got = exc
            self.__dict__["_plan"] = got  # the refusal too: it is the same for every block
        if isinstance(got, NodeError):
            raise type(got)(str(got))
        return got

    def read_shard_indexes(self, rows: RowRange) -> Block:
        from validator.nodes import codecs, zarr_v3

        layout = zarr_v3.shard_layout(self.metadata or {}) if self.tree.zarr_format == 3 and self.kind == "array" else None
        if layout is None or isinstance(layout, str) or self.shape is None:
            raise NotDecoded(f"{self.path}: shard indexes not read ({layout or 'not a Zarr v3 array'})")
        start, stop = rows
        # Codecs after sharding_indexed encode whole shards: undone by the codec module, as a data read would.
        unwrap = (lambda raw, where: codecs.shard_bytes(self.plan.codec, raw, f"{self.path}: {where}")) if layout.after else None
        shards = zarr_v3.read_shard_indexes(self.tree.kv, self.prefix, layout, start, stop, unwrap)
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
        self.problems: list[MetadataProblem] = []
        self._nodes: dict[str, Node | None] = {}
        # Each metadata document is read once, parsed once, and each directory listed once, however many rules ask.
        self._documents: dict[str, bytes | None] = {}
        self._parsed: dict[str, Any] = {}  # key -> the parsed document, or _NotJSON
        # Equal documents (the columns of one type in a wide dataframe) are kept once, bytes and parsed value.
        self._alike: dict[bytes, bytes] = {}
        self._parsed_alike: dict[bytes, Any] = {}
        self._raw_keys: list[str] | None = None
        self._listings: dict[str, tuple[list[str], list[str]]] = {}
        if kv.batched:
            self._prefetch()
        root = self.node_at("/")
        # A store with no root document still has a root: report it as an implicit group.
        self._root = root if root is not None else ZarrNode(self, "/", "group", None, implicit=True)

    def document(self, key: str) -> bytes | None:
        """The stored bytes of the metadata document `key`, or None where it is absent or unreadable (`kv.get`)."""
        try:
            return self._documents[key]
        except KeyError:
            raw = self._documents[key] = self._shared(self.kv.get(key))
            return raw

    def raw_keys(self) -> list[str] | None:
        """`kv.raw_keys`, walked once however many rules read it (a walk of the whole store)."""
        if self._raw_keys is None:
            self._raw_keys = self.kv.raw_keys()
        return None if self._raw_keys is None else list(self._raw_keys)

    def _shared(self, raw: bytes | None) -> bytes | None:
        return raw if raw is None else self._alike.setdefault(raw, raw)

    def read(self, key: str, where: str) -> bytes | None:
        """`kv.read` (NodeError for a key stored but unreadable), served from the documents already read."""
        if key.rpartition("/")[2] not in DOCUMENTS:
            return self.kv.read(key, where)
        if key not in self._documents:
            self._documents[key] = self._shared(self.kv.read(key, where))
        raw = self._documents[key]
        if raw is None and self.kv.stored(key):
            raise NodeError(f"{where or key}: {key} is stored but cannot be read")
        return raw

    def parse(self, key: str, raw: bytes | None) -> tuple[Any, MetadataProblem | None]:
        """`parse_json` of the document `key` whose stored bytes are `raw`, parsed once for every reader."""
        got = self._parsed.get(key, _NotJSON) if raw is not None else None
        if got is _NotJSON:
            document = key.rpartition("/")[2] in DOCUMENTS
            got = self._parsed_alike.get(raw, _NotJSON) if document else _NotJSON  # type: ignore[arg-type]
            if got is _NotJSON:
                try:
                    got = json.loads(raw.decode("utf-8"))  # type: ignore[union-attr]
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    got = _NotJSON(exc)
                if document:
                    self._parsed_alike[raw] = got  # type: ignore[index]
            if document:
                self._parsed[key] = got
        if isinstance(got, _NotJSON):
            return None, _problem(key, got.error)
        return got, None

    def read_json(self, key: str, where: str) -> Any:
        """The stored document `key` parsed (`read`, then `json.loads`), a metadata document once for every reader:
        None when not stored; raises NodeError when it cannot be read, UnicodeDecodeError or JSONDecodeError when
        it is not JSON. The value is shared: never modify it."""
        raw = self.read(key, where)
        if raw is None:
            return None
        got = self._parsed.get(key, _NotJSON)
        if got is _NotJSON:
            self.parse(key, raw)
            got = self._parsed.get(key, _NotJSON)
            if got is _NotJSON:  # not a metadata document: not kept
                return json.loads(raw.decode("utf-8"))
        if isinstance(got, _NotJSON):
            raise got.error
        return got

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """`kv.list_dir`, each directory listed once."""
        try:
            return self._listings[prefix]
        except KeyError:
            listing = self._listings[prefix] = self.kv.list_dir(prefix)
            return listing

    def list_keys(self, prefix: str) -> list[str]:
        """Every key below `prefix`, recursively, relative to the store root (from the listings already made)."""
        keys, dirs = self.list_dir(prefix)
        out = [f"{prefix}/{k}" if prefix else k for k in keys]
        for d in dirs:
            out.extend(self.list_keys(f"{prefix}/{d}" if prefix else d))
        return out

    def _prefetch(self) -> None:
        """Read every directory listing and metadata document the run will need, a level of the hierarchy per
        round trip (listings together, then documents together), instead of one request at a time.

        Below an array lie chunks: its folders are listed (the chunk key rules read what is stored there) but no
        document is asked for. A store read from its consolidated metadata answers the listings without a
        request, so its documents come in a few batches.
        """
        names = (V3_DOCUMENT,) if self.zarr_format == 3 else V2_DOCUMENTS
        level = [""]
        chunk_folders: set[str] = set()  # folders at or below an array
        while level:
            self._listings.update(self.kv.list_many([p for p in level if p not in self._listings]))
            keys = [_join(p, n) for p in level if p not in chunk_folders for n in self._listings[p][0] if n in names]
            fetched = self.kv.get_many([k for k in keys if k not in self._documents])
            self._documents.update((k, self._shared(v)) for k, v in fetched.items())
            below = []
            for prefix in level:
                if prefix not in chunk_folders and self._holds_array(prefix):
                    chunk_folders.add(prefix)
                for name in self._listings[prefix][1]:
                    below.append(_join(prefix, name))
                    if prefix in chunk_folders:
                        chunk_folders.add(below[-1])
            level = below

    def _holds_array(self, prefix: str) -> bool:
        key = lambda name: f"{prefix}/{name}" if prefix else name  # noqa: E731
        if self.zarr_format == 2:
            return self._documents.get(key(".zarray")) is not None
        doc = self.parse(key(V3_DOCUMENT), self._documents.get(key(V3_DOCUMENT)))[0]
        return isinstance(doc, dict) and doc.get("node_type") == "array"

    def note_problem(self, problem: MetadataProblem) -> None:
        if all(p.key != problem.key for p in self.problems):
            self.problems.append(problem)

    @property
    def root(self) -> Node:
        return self._root

    def node_at(self, path: str) -> Node | None:
        if path not in self._nodes:
            self._nodes[path] = self._load(path)
        return self._nodes[path]

    def _load(self, path: str) -> Node | None:
        prefix = path.strip("/")
        key = lambda name: f"{prefix}/{name}" if prefix else name  # noqa: E731
        if self.zarr_format == 3:
            doc, problem = self.parse(key(V3_DOCUMENT), self.document(key(V3_DOCUMENT)))
            if problem:
                self.note_problem(problem)
                return ZarrNode(self, path, "group", None)
            if doc is None:
                return self._implicit(path, prefix)
            if not isinstance(doc, dict):
                self.note_problem(MetadataProblem(key(V3_DOCUMENT), f"not a JSON object but {type(doc).__name__}"))
                return ZarrNode(self, path, "group", None)
            kind = "array" if doc.get("node_type") == "array" else "group"
            return ZarrNode(self, path, kind, doc)
        raw_array = self.document(key(".zarray"))
        if raw_array is not None:
            doc, problem = self.parse(key(".zarray"), raw_array)
            if problem:
                self.note_problem(problem)
            elif not isinstance(doc, dict):
                self.note_problem(MetadataProblem(key(".zarray"), f"not a JSON object but {type(doc).__name__}"))
                doc = None
            return ZarrNode(self, path, "array", doc)
        raw_group = self.document(key(".zgroup"))
        if raw_group is not None:
            doc, problem = self.parse(key(".zgroup"), raw_group)
            if problem:
                self.note_problem(problem)
            elif not isinstance(doc, dict):
                self.note_problem(MetadataProblem(key(".zgroup"), f"not a JSON object but {type(doc).__name__}"))
            return ZarrNode(self, path, "group", doc if isinstance(doc, dict) else None)
        return self._implicit(path, prefix)

    def _implicit(self, path: str, prefix: str) -> Node | None:
        # Only directories that lead to some node document are nodes; other directories are not ours.
        documents = (V3_DOCUMENT,) if self.zarr_format == 3 else V2_DOCUMENTS
        if any(k.rsplit("/", 1)[-1] in documents for k in self.list_keys(prefix)):
            return ZarrNode(self, path, "group", None, implicit=True)
        return None

    def close(self) -> None:
        self.kv.close()


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def open_zarr(path: str) -> ZarrTree:
    """A Zarr store at `path` (a directory, or a `.zip`), in whichever format its root documents say."""
    import os

    kv: KeyValueStore = ZipStore(path) if os.path.isfile(path) else DirectoryStore(path)
    zarr_format = detect_zarr_format(kv)
    return ZarrTree(kv, zarr_format or 2)


def detect_zarr_format(kv: KeyValueStore) -> int | None:
    """3 when the root has `zarr.json`, 2 for v2 documents at the root or below; None when neither."""
    if kv.get(V3_DOCUMENT) is not None:
        return 3
    if any(kv.get(doc) is not None for doc in V2_DOCUMENTS):
        return 2
    for key in kv.list_keys(""):
        name = key.rsplit("/", 1)[-1]
        if name in V2_DOCUMENTS:
            return 2
        if name == V3_DOCUMENT:
            return 3
    return None
