"""HDF5 backend (h5py): files opened read-only; soft links reported, external links never followed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from functools import cached_property
from typing import Any, BinaryIO

import h5py
import numpy as np

from validator.errors import InputError
from validator.kernels.block import Block
from validator.nodes import hdf5_direct
from validator.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    NodeError,
    RowRange,
    Storage,
    StringStorage,
    Tree,
    block_row_ranges,
    plain,
)

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class Unreadable:
    """An attribute h5py could not read (unsupported type, corrupt storage)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<unreadable attribute: {self.reason}>"


def is_hdf5(path: str) -> bool:
    """True when the file carries the HDF5 signature at offset 0 or at a user-block offset."""
    try:
        with open(path, "rb") as fh:
            for offset in (0, 512, 1024, 2048, 4096, 8192):
                fh.seek(offset)
                if fh.read(8) == HDF5_SIGNATURE:
                    return True
    except OSError:
        return False
    return False


def _attrs(obj: h5py.HLObject) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        names = list(obj.attrs.keys())
    except Exception as exc:  # corrupt attribute table
        return {"": Unreadable(str(exc))}
    for key in names:
        try:
            value = obj.attrs[key]
            # An attribute with a null dataspace exists but holds no value: JSON null is the nearest plain value.
            out[key] = None if isinstance(value, h5py.Empty) else plain(value)
        except Exception as exc:  # an attribute type h5py cannot map to numpy
            out[key] = Unreadable(f"{type(exc).__name__}: {exc}")
    return out


def _attr_string_storage(obj: h5py.HLObject, name: str) -> StringStorage | None:
    # Read from the attribute's HDF5 type: the value `_attrs` returns is decoded and no longer says how it was stored.
    try:
        tid = obj.attrs.get_id(name).get_type()
    except Exception:  # absent, or an attribute table h5py cannot read (`_attrs` reports that)
        return None
    if not isinstance(tid, h5py.h5t.TypeStringID):
        return None
    variable = bool(tid.is_variable_str())
    charset = "utf-8" if tid.get_cset() == h5py.h5t.CSET_UTF8 else "ascii"
    stored = f"{'vlen' if variable else f'fixed[{tid.get_size()}]'} {charset} string"
    return StringStorage("variable" if variable else "fixed", charset, stored)


_TYPE_CLASSES = {
    h5py.h5t.INTEGER: "integer",
    h5py.h5t.FLOAT: "float",
    h5py.h5t.STRING: "string",
    h5py.h5t.ENUM: "enum",
    h5py.h5t.COMPOUND: "compound",
    h5py.h5t.BITFIELD: "bitfield",
    h5py.h5t.OPAQUE: "opaque",
    h5py.h5t.REFERENCE: "reference",
    h5py.h5t.ARRAY: "array",
    h5py.h5t.VLEN: "vlen",
}


def _attr_type_class(obj: h5py.HLObject, name: str) -> str | None:
    try:
        return _TYPE_CLASSES.get(obj.attrs.get_id(name).get_type().get_class())
    except Exception:  # absent, or an attribute table h5py cannot read
        return None


def _string_storage(dtype: np.dtype, stored: str) -> StringStorage | None:
    info = h5py.check_string_dtype(dtype)
    if info is None:
        if dtype.kind == "U":  # h5py never stores this, but a numpy dtype can reach us via compound members
            return StringStorage("fixed", "utf-32", stored)
        return None
    length = "variable" if info.length is None else "fixed"
    return StringStorage(length, info.encoding, stored)


class HDF5Node(Node):
    def __init__(self, tree: HDF5Tree, path: str, obj: h5py.HLObject, ancestors: frozenset[int]) -> None:
        self.tree = tree
        self.path = path
        self._obj = obj
        self._ancestors = ancestors
        self.kind = "group" if isinstance(obj, h5py.Group) else "array"

    @cached_property
    def attrs(self) -> Mapping[str, Any]:
        return _attrs(self._obj)

    def attr_storage(self, name: str) -> StringStorage | None:
        return _attr_string_storage(self._obj, name)

    def attr_type_class(self, name: str) -> str | None:
        return _attr_type_class(self._obj, name)

    @property
    def shape(self) -> tuple[int, ...] | None:
        # A dataset with a null dataspace (h5py.Empty) has no shape at all: h5py reports None.
        return tuple(self._obj.shape) if self.kind == "array" and self._obj.shape is not None else None

    @property
    def dtype(self) -> np.dtype | None:
        return self._obj.dtype if self.kind == "array" else None

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return tuple(self._obj.chunks) if self.kind == "array" and self._obj.chunks else None

    @cached_property
    def storage(self) -> Storage | None:
        if self.kind != "array":
            return None
        ds: h5py.Dataset = self._obj
        plist = ds.id.get_create_plist()
        layout = {h5py.h5d.CONTIGUOUS: "contiguous", h5py.h5d.CHUNKED: "chunked", h5py.h5d.COMPACT: "compact"}.get(
            plist.get_layout(), "other"
        )
        filters = tuple(str(f) for f in ds._filters) if layout == "chunked" else ()
        return Storage(
            format="hdf5",
            string=_string_storage(ds.dtype, _hdf5_type_name(ds)),
            codecs=filters,
            compressor=ds.compression,
            fill_value=plain(ds.fillvalue) if ds.dtype.kind not in "OV" else None,
            layout=layout,
        )

    @cached_property
    def _children(self) -> dict[str, Node]:
        if self.kind != "group":
            return {}
        group: h5py.Group = self._obj
        here = self._ancestors | {_object_key(group)}
        out: dict[str, Node] = {}
        for name in sorted(group.keys()):
            path = f"{self.path.rstrip('/')}/{name}"
            try:
                link = group.get(name, getlink=True)
            except Exception as exc:
                out[name] = LinkNode(self.tree, path, "broken", str(exc))
                continue
            if isinstance(link, h5py.ExternalLink):
                # Never follow: the target is outside the file being validated.
                out[name] = LinkNode(self.tree, path, "external", f"{link.filename}:{link.path}")
                continue
            try:
                obj = group[name]
            except Exception as exc:  # dangling soft link, unreadable object header
                kind = "soft" if isinstance(link, h5py.SoftLink) else "broken"
                out[name] = LinkNode(self.tree, path, kind, getattr(link, "path", str(exc)))
                continue
            if not isinstance(obj, (h5py.Group, h5py.Dataset)):
                out[name] = LinkNode(self.tree, path, "other", type(obj).__name__)
                continue
            if isinstance(obj, h5py.Group) and _object_key(obj) in here:
                target = link.path if isinstance(link, h5py.SoftLink) else "an ancestor group"
                out[name] = LinkNode(self.tree, path, "cycle", target)
                continue
            node = HDF5Node(self.tree, path, obj, here)
            if isinstance(link, h5py.SoftLink):
                node.soft_link = link.path
            out[name] = node
        return out

    soft_link: str | None = None

    def children(self) -> dict[str, Node]:
        return self._children

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> list[RowRange] | None:
        if self.kind != "array":
            raise NodeError(f"{self.path}: not an array")
        if self._obj.shape is None:
            raise NodeError(f"{self.path}: a dataset with a null dataspace holds no data")
        return block_row_ranges(self._obj.shape, self.chunks, max_elements)

    def read_block(self, rows: RowRange) -> Block:
        """One block, each stored chunk decoded (bounded) before HDF5 may decode it; problems in `Block.chunks`.

        Raises NotDecoded for a filter off the allow-list, NodeError for data stored outside the file.
        """
        ds: h5py.Dataset = self._obj
        if self.kind != "array" or ds.shape is None:
            raise NodeError(f"{self.path}: not an array with data (a null dataspace holds none)")
        return hdf5_direct.read_block(ds, self.tree.raw_fd(), self.plan, rows)

    @property
    def plan(self) -> hdf5_direct.DirectPlan:
        """How this dataset's blocks are read; NotDecoded or NodeError when they are not."""
        got = self.__dict__.get("_plan")
        if got is None:
            try:
                got = hdf5_direct.plan(self._obj, self.tree.raw_size(), self.path)
            except NodeError as exc:
                got = exc
            except Exception as exc:  # a dataset h5py cannot describe
                got = NodeError(f"{self.path}: cannot read data ({type(exc).__name__}: {exc})")
            self.__dict__["_plan"] = got  # the refusal too: it is the same for every block
        if isinstance(got, NodeError):
            raise type(got)(str(got))
        return got


def _hdf5_type_name(ds: h5py.Dataset) -> str:
    info = h5py.check_string_dtype(ds.dtype)
    if info is not None:
        return f"{'vlen' if info.length is None else f'fixed[{info.length}]'} {info.encoding} string"
    return ds.dtype.str


def _object_key(obj: h5py.HLObject) -> int:
    # h5py hashes object ids by (file number, object address): equal for two links to one object.
    return hash(obj.id)


class LinkNode(Node):
    """A link the tree reports but does not enter: external, dangling, cyclic or of an unknown kind."""

    def __init__(self, tree: Tree, path: str, link_kind: str, target: str) -> None:
        self.tree = tree
        self.path = path
        self.kind = "link"
        self.link_kind = link_kind
        self.target = target

    @property
    def attrs(self) -> Mapping[str, Any]:
        return {}


class HDF5Tree(Tree):
    def __init__(self, path: str | BinaryIO, source: str | None = None) -> None:
        """Open a local HDF5 file by path, or a seekable binary file object (a remote file opened with fsspec).

        Args:
            path: the local path, or the file object (the tree closes it on close()).
            source: the name shown in messages and reports; for a file object, a URL without its credentials.
        """
        local = isinstance(path, (str, os.PathLike))
        # Only a local path may be read directly with os.pread (hdf5_direct); a file object is read through h5py.
        self.local_path: str | None = os.fspath(path) if local else None
        self.source = source if source is not None else str(path)
        self.format = "hdf5"
        self._fileobj = None if local else path
        try:
            self._file = h5py.File(path, "r", locking=False) if local else h5py.File(path, "r")
        except Exception as exc:
            raise InputError(f"{self.source}: cannot open as HDF5 ({_first_line(exc)})") from None
        self._root = HDF5Node(self, "/", self._file["/"], frozenset())

    @property
    def root(self) -> Node:
        return self._root

    def raw_size(self) -> int | None:
        """The local file's size in bytes, or None when the file is not local (direct reads are then off)."""
        fd = self.raw_fd()
        return None if fd is None else os.fstat(fd).st_size

    def raw_fd(self) -> int | None:
        """A read-only descriptor of the local file for direct chunk reads, opened on first use."""
        if not hasattr(self, "_raw_fd"):
            local = getattr(self, "local_path", self.source)
            try:
                self._raw_fd: int | None = os.open(local, os.O_RDONLY) if local and os.path.isfile(local) else None
            except OSError:
                self._raw_fd = None
        return self._raw_fd

    def close(self) -> None:
        if getattr(self, "_raw_fd", None) is not None:
            os.close(self._raw_fd)
            self._raw_fd = None
        with contextlib.suppress(Exception):
            self._file.close()
        if self._fileobj is not None:
            with contextlib.suppress(Exception):  # a remote file whose connection is gone: nothing left to release
                self._fileobj.close()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
