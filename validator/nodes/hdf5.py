"""HDF5 backend (h5py): files opened read-only; soft links reported, external links never followed.

A soft link to a dataset is read as the dataset (and records the link); one to a group is a link node, the group
being read at the path it names; each group is entered once, whatever links lead to it.

Whatever cannot be read (a group's member list, an object header, an attribute, a dataset's storage) is reported on
the tree once, with the node path and HDF5's reason, and the rest of the file is still read. Data stored outside
the file (external storage, virtual datasets, external links) is reported and never read.
"""

from __future__ import annotations

import contextlib
import math
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
    Attributes,
    Node,
    NodeError,
    NotDecoded,
    RowRange,
    RowRanges,
    Storage,
    StoreProblem,
    StringStorage,
    Tree,
    Unreadable,
    describe,
    plain,
    plan_rows,
)

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# The most an attribute may hold to be read: real metadata (encoding types, column orders, uns scalars) is far
# smaller; a larger one is reported, not read (the memory it would take is set by the file).
MAX_ATTRIBUTE_BYTES = 64 * 2**20
MAX_ATTRIBUTE_ELEMENTS = 1 << 20


def is_hdf5(path: str) -> bool:
    """True when the file carries the HDF5 signature at offset 0 or at a user-block offset."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO or device is never opened
        with open(path, "rb") as fh:
            for offset in (0, 512, 1024, 2048, 4096, 8192):
                fh.seek(offset)
                if fh.read(8) == HDF5_SIGNATURE:
                    return True
    except OSError:
        return False
    return False


def _attrs(node: HDF5Node) -> Attributes:
    """The node's attributes; one that cannot be read is reported and raises Unreadable when asked for."""
    obj, tree = node._obj, node.tree
    try:
        names = list(obj.attrs.keys())
    except Exception as exc:  # corrupt attribute table
        raise tree.unreadable(node.path, f"{node.path}: its attributes cannot be listed ({describe(exc)})") from None
    out: dict[str, Any] = {}
    unreadable: dict[str, str] = {}
    for key in names:
        too_large = _attribute_too_large(obj, key)
        if too_large is not None:
            message = f"attribute {key!r} {too_large}; not read"
            tree.note_problem(StoreProblem(f"{node.path}@{key}", message, node.path))
            unreadable[key] = message
            continue
        try:
            value = obj.attrs[key]
            # An attribute with a null dataspace exists but holds no value: JSON null is the nearest plain value.
            out[key] = None if isinstance(value, h5py.Empty) else plain(value)
        except Exception as exc:  # an attribute type h5py cannot map to numpy, or corrupt storage
            message = f"attribute {key!r} cannot be read ({describe(exc)})"
            tree.note_problem(StoreProblem(f"{node.path}@{key}", message, node.path))
            unreadable[key] = message
    return Attributes(out, unreadable)


def _attribute_too_large(obj: h5py.HLObject, key: str) -> str | None:
    """Why the attribute `key` is too large to read, or None: more bytes stored, or more elements, than an attribute
    of real metadata has (HDF5 says both before reading; the heap behind variable-length strings it does not)."""
    try:
        aid = obj.attrs.get_id(key)
        stored, shape = aid.get_storage_size(), aid.shape
    except Exception:  # reading it reports what is wrong
        return None
    elements = math.prod(shape) if shape else 1
    if stored > MAX_ATTRIBUTE_BYTES:
        return f"holds {stored} bytes, more than the {MAX_ATTRIBUTE_BYTES} read for an attribute"
    if elements > MAX_ATTRIBUTE_ELEMENTS:
        return f"holds {elements} elements, more than the {MAX_ATTRIBUTE_ELEMENTS} read for an attribute"
    return None


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
        tree.opened.append(self)

    @cached_property
    def attrs(self) -> Mapping[str, Any]:
        attrs = self.__dict__.get("_attrs_error")
        if attrs is not None:
            raise Unreadable(attrs)
        try:
            return _attrs(self)
        except Unreadable as exc:
            self.__dict__["_attrs_error"] = str(exc)  # asked again, answered again without HDF5
            raise

    def attr_storage(self, name: str) -> StringStorage | None:
        return _attr_string_storage(self._obj, name)

    def attr_type_class(self, name: str) -> str | None:
        return _attr_type_class(self._obj, name)

    @cached_property
    def _layout(self) -> tuple[tuple[int, ...] | None, np.dtype | None, tuple[int, ...] | None]:
        """(shape, dtype, chunks) read once; Unreadable (reported) when the object header does not say."""
        if self.kind != "array":
            return None, None, None
        try:
            ds: h5py.Dataset = self._obj
            # A dataset with a null dataspace (h5py.Empty) has no shape at all: h5py reports None.
            shape = tuple(int(n) for n in ds.shape) if ds.shape is not None else None
            return shape, ds.dtype, tuple(int(c) for c in ds.chunks) if ds.chunks else None
        except Exception as exc:
            raise self.tree.unreadable(self.path, f"{self.path}: its shape and type cannot be read ({describe(exc)})") from None

    @property
    def shape(self) -> tuple[int, ...] | None:
        return self._layout[0]

    @property
    def dtype(self) -> np.dtype | None:
        return self._layout[1]

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return self._layout[2]

    @cached_property
    def storage(self) -> Storage | None:
        if self.kind != "array":
            return None
        try:
            return self._storage()
        except Unreadable:
            raise
        except Exception as exc:
            raise self.tree.unreadable(self.path, f"{self.path}: its storage cannot be read ({describe(exc)})") from None

    def _storage(self) -> Storage:
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
        try:
            here = self._ancestors | {_object_key(group)}
            names = sorted(group.keys())
        except Exception as exc:  # a damaged B-tree or heap: the members cannot be listed
            self._report(self.path, f"{self.path}: its members cannot be listed ({describe(exc)})", self.path)
            return {}
        out: dict[str, Node] = {}
        for name in names:
            path = f"{self.path.rstrip('/')}/{name}"
            if not name or "/" in name or name in (".", ".."):
                self._report(path, f"{self.path}: a member named {name!r} cannot be a node; not read", self.path)
                continue
            out[name] = self._member(group, name, path, here)
        return out

    def _member(self, group: h5py.Group, name: str, path: str, here: frozenset[int]) -> Node:
        """The node for member `name`: opened, or a link node that is never entered (external, dangling, a cycle, a
        second link to a group already in the tree, unreadable)."""
        tree = self.tree
        try:
            link = group.get(name, getlink=True)
        except Exception as exc:
            return self._broken(path, f"{path}: its link cannot be read ({describe(exc)})")
        if isinstance(link, h5py.ExternalLink):
            # Never follow: the target is outside the file being validated.
            target = f"{link.filename}:{link.path}"
            self._report(path, f"{path}: an external link to {target}, outside the file; not followed", path)
            return LinkNode(tree, path, "external", target)
        if not isinstance(link, (h5py.SoftLink, h5py.HardLink)):
            return LinkNode(tree, path, "other", type(link).__name__)
        try:
            obj = group[name]
            key = _object_key(obj)
        except Exception as exc:  # dangling soft link, unreadable object header
            if isinstance(link, h5py.SoftLink):
                return LinkNode(tree, path, "soft", link.path)
            return self._broken(path, f"{path}: cannot be opened ({describe(exc)})")
        if not isinstance(obj, (h5py.Group, h5py.Dataset)):
            return LinkNode(tree, path, "other", type(obj).__name__)
        if isinstance(obj, h5py.Group):
            seen = self._seen_group(key, link, path, here)
            if seen is not None:
                return seen
        node = HDF5Node(tree, path, obj, here)
        if isinstance(obj, h5py.Dataset):
            outside = _stored_outside(obj)
            if outside:
                self._report(path, f"{path}: its data is stored outside the file ({outside}); never read", path)
        if isinstance(link, h5py.SoftLink):
            node.soft_link = link.path
        return node

    def _seen_group(self, key: int, link: Any, path: str, here: frozenset[int]) -> Node | None:
        """A link node for a group not entered here, else None: an ancestor (a cycle), a soft link (the group is read
        at the path it names), a second hard link to a group already in the tree.

        Every group is entered once: links between groups could otherwise make a walk visit 2**depth paths."""
        if key in here:
            return LinkNode(self.tree, path, "cycle", link.path if isinstance(link, h5py.SoftLink) else "an ancestor group")
        if isinstance(link, h5py.SoftLink):
            return LinkNode(self.tree, path, "soft", link.path)
        first = self.tree.groups.setdefault(key, path)
        return LinkNode(self.tree, path, "alias", first) if first != path else None

    def _report(self, key: str, message: str, path: str) -> None:
        self.tree.note_problem(StoreProblem(key, message, path))

    def _broken(self, path: str, message: str) -> Node:
        self.tree.note_problem(StoreProblem(path, message, path))
        return LinkNode(self.tree, path, "broken", message)

    soft_link: str | None = None

    def children(self) -> dict[str, Node]:
        return self._children

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> RowRanges | None:
        if self.kind != "array":
            raise NodeError(f"{self.path}: not an array")
        if self.shape is None:
            raise NodeError(f"{self.path}: a dataset with a null dataspace holds no data")
        itemsize = self.dtype.itemsize if self.dtype is not None else 1
        return plan_rows(self.shape, self.chunks, max_elements, itemsize, lambda: hdf5_direct.stored_rows(self.plan))

    def read_block(self, rows: RowRange) -> Block:
        """One block, each stored chunk decoded (bounded) before HDF5 may decode it; problems in `Block.chunks`.

        Raises NotDecoded for a filter off the allow-list or a block too large to hold, Unreadable for data stored
        outside the file or a chunk index HDF5 cannot read.
        """
        ds: h5py.Dataset = self._obj
        if self.kind != "array" or self.shape is None:
            raise NodeError(f"{self.path}: not an array with data (a null dataspace holds none)")
        return hdf5_direct.read_block(ds, self.tree.raw_fd(), self.plan, rows)

    @property
    def plan(self) -> hdf5_direct.DirectPlan:
        """How this dataset's blocks are read; NotDecoded or Unreadable (reported) when they are not."""
        got = self.__dict__.get("_plan")
        if got is None:
            try:
                got = hdf5_direct.plan(self._obj, self.tree.raw_size(), self.path)
            except NotDecoded as exc:
                got = NotDecoded(str(exc))
            except NodeError as exc:
                got = self.tree.unreadable(self.path, str(exc))
            except Exception as exc:  # a dataset h5py cannot describe
                got = self.tree.unreadable(self.path, f"{self.path}: cannot read data ({describe(exc)})")
            # The refusal too: it is the same for every block. Kept without its traceback, whose frames hold HDF5
            # property lists: one of a virtual dataset still open when HDF5 shuts down at exit crashes it (exit 139).
            self.__dict__["_plan"] = got
        if isinstance(got, NodeError):
            raise type(got)(str(got))
        return got


def _hdf5_type_name(ds: h5py.Dataset) -> str:
    info = h5py.check_string_dtype(ds.dtype)
    if info is not None:
        return f"{'vlen' if info.length is None else f'fixed[{info.length}]'} {info.encoding} string"
    return ds.dtype.str


def _stored_outside(ds: h5py.Dataset) -> str | None:
    """Where a dataset's data lies outside the file (external storage files, a virtual dataset's sources), or None."""
    try:
        dcpl = ds.id.get_create_plist()
        if dcpl.get_layout() == h5py.h5d.VIRTUAL:
            sources = sorted({dcpl.get_virtual_filename(i) for i in range(dcpl.get_virtual_count())})
            return f"a virtual dataset mapping {', '.join(sources[:3]) or 'other files'}"
        count = dcpl.get_external_count()
        if count > 0:
            names = sorted({dcpl.get_external(i)[0].decode(errors="replace") for i in range(count)})
            return f"external storage in {', '.join(names[:3])}"
    except Exception:
        return None
    return None


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
        self.opened: list[HDF5Node] = []  # every node made, so close() can let go of their h5py objects
        self.groups: dict[int, str] = {}  # HDF5 object key -> the path its group is read under, entered once
        try:
            self._file = h5py.File(path, "r", locking=False) if local else h5py.File(path, "r")
        except Exception as exc:
            raise InputError(f"{self.source}: cannot open as HDF5 ({_first_line(exc)})") from None
        try:
            root = self._file["/"]
        except Exception as exc:  # the root group's header cannot be read: nothing in the file can be reached
            self._file.close()
            raise InputError(f"{self.source}: its root group cannot be opened ({_first_line(exc)})") from None
        self._root = HDF5Node(self, "/", root, frozenset())
        with contextlib.suppress(Exception):  # an unreadable root header: its members say so when listed
            self.groups[_object_key(root)] = "/"

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
        # Nodes and tree refer to each other, so their h5py objects would live until a cyclic collection, which the
        # command pauses at exit: a virtual dataset's property list still open when HDF5 shuts down crashes it
        # (exit 139). So every node lets go of its object now, while HDF5 is up, and the cycle holds nothing of HDF5.
        for node in self.opened:
            node._obj = None
        self.opened = []
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
