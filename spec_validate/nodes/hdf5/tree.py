"""HDF5 backend (h5py): files opened read-only; soft links reported, external links never followed.

The tree is walked once through h5py's low-level API: a group's links are listed with their types, each child is
opened once to learn its kind, its attribute names and (for a dataset) its shape, dtype and chunks, and only
groups stay open. A dataset is opened again when its storage is described or its blocks are read: an open
dataset holds about 13 KB of HDF5 library state, which over thousands of dataframe columns was most of the
memory. Attribute values are read on first access, or at the walk for the names the run's rules read
(`Tree.prefer_attributes`), without h5py's high-level wrappers (about half the cost per attribute).

A soft link to a dataset is read as the dataset (and records the link); one to a group is a link node, the group
being read at the path it names; each group is entered once, whatever links lead to it. A soft link's path is
followed here a link at a time (`hdf5_links`), never resolved by the library: a path through an external link is
reported and not followed.

Whatever cannot be read (a group's member list, an object header, an attribute, a dataset's storage) is reported on
the tree once, with the node path and HDF5's reason, and the rest of the file is still read. Data stored outside
the file (external storage, virtual datasets, external links) is reported and never read.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Callable, Hashable, Iterator, Mapping
from functools import cached_property
from typing import Any, BinaryIO, NamedTuple

import h5py
import numpy as np
from h5py import h5a, h5d, h5g, h5l, h5o, h5p, h5t
from h5py._objects import phil as h5py_lock  # h5py's own lock, held around every call into the library

from spec_validate.errors import DamagedInput, InputError, NodeError, NotDecoded
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
    describe,
    plain,
    plan_rows,
)
from spec_validate.nodes.hdf5 import direct
from spec_validate.nodes.hdf5.address import open_at
from spec_validate.nodes.hdf5.structure import btree, fractal_heap, global_heap, scalars
from spec_validate.nodes.hdf5.structure import links as hdf5_links

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# The most an attribute may hold to be read: real metadata (encoding types, column orders, uns scalars) is far
# smaller; a larger one is reported, not read (the memory it would take is set by the file).
MAX_ATTRIBUTE_BYTES = 64 * 2**20
# A node with more attributes than this has no signature (it is checked alone) rather than every value read to
# make one: nodes that share signatures (dataframe columns) carry a few attributes, and reading tens of thousands of
# attributes stored in an object header costs the library a scan of the header for each.
MAX_SIGNATURE_ATTRIBUTES = 256
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


def _decoded(name: bytes) -> str | bytes:
    # As h5py names attributes: UTF-8 where it decodes, else the bytes themselves.
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        return name


def _member_name(name: bytes) -> str:
    # A link name as a node name: UTF-8, any byte that is not shown escaped (a path is text; bytes would not sort).
    return name.decode("utf-8", "backslashreplace")


_ULONG_BITS = 8 * ctypes.sizeof(ctypes.c_ulong)
# The header messages read here: attributes (their global heap collections, `global_heap`), where dense storage keeps
# them (`fractal_heap`), and where a group keeps its members (a symbol table, `btree`, or dense storage).
_MEMBER_KINDS = frozenset({btree.SYMBOL_TABLE_MESSAGE, fractal_heap.LINK_INFO_MESSAGE})
# Header messages that say all a dataset's facts: its dataspace, datatype, fill value (both kinds), external storage,
# layout and filter pipeline.
_DATASPACE, _FILL_OLD, _FILL, _EXTERNAL, _LAYOUT, _PIPELINE = 0x0001, 0x0004, 0x0005, 0x0007, 0x0008, 0x000B
_FACT_KINDS = frozenset({_DATASPACE, global_heap.DATATYPE_MESSAGE, _FILL_OLD, _FILL, _EXTERNAL, _LAYOUT, _PIPELINE})
_HEADER_KINDS = frozenset({global_heap.ATTRIBUTE_MESSAGE, fractal_heap.ATTRIBUTE_INFO_MESSAGE}) | _MEMBER_KINDS | _FACT_KINDS


def _ranges(read_at: global_heap.ReadAt) -> btree.ReadRanges:
    """Many ranges read from a read of one at a time."""
    return lambda ranges: [memoryview(read_at(offset, length)) for offset, length in ranges]


def object_address(oid: Any) -> int:
    """The address of an open object's header (what a hard link to it holds), from the library's `H5Gget_objinfo`:
    not `h5o.get_info`, which also sizes the object's metadata, walking a group's symbol table or a dataset's whole
    chunk index (and on a damaged one never returns)."""
    low, high = h5g.get_objinfo(oid).objno
    return int(low) | int(high) << _ULONG_BITS


def _attribute_names(oid: Any, plist: Any) -> tuple[list[bytes], dict[bytes, str]]:
    """The object's attribute names, in the order h5py's `attrs` lists them (creation order where tracked), and why
    each one too large to read is (HDF5's listing says how many bytes each stores). `plist` is its creation
    property list."""
    names: list[bytes] = []
    sizes: dict[bytes, int] = {}

    def listed(name: bytes, info: Any) -> None:
        names.append(name)
        sizes[name] = info.data_size

    tracked = plist.get_attr_creation_order() & h5p.CRT_ORDER_TRACKED
    h5a.iterate(oid, listed, index_type=h5py.h5.INDEX_CRT_ORDER if tracked else h5py.h5.INDEX_NAME, info=True)
    return names, _refused(oid, sizes)


def _refused(oid: Any, sizes: dict[bytes, int]) -> dict[bytes, str]:
    """Why each attribute too large to read is, by name, of those whose stored bytes (`sizes`: as many or more) could
    be: an element takes a byte at least, so only an attribute storing more bytes than one of the bounds may pass
    either, and only those are opened here."""
    refused: dict[bytes, str] = {}
    for name, size in sizes.items():
        if size > min(MAX_ATTRIBUTE_ELEMENTS, MAX_ATTRIBUTE_BYTES):
            why = _attribute_too_large(oid, name)
            if why is not None:
                refused[name] = why
    return refused


def _attribute_too_large(oid: Any, name: bytes) -> str | None:
    """Why the attribute `name` is too large to read, or None: more bytes stored, or more elements, than an attribute
    of real metadata has (HDF5 says both before reading; the heap behind variable-length strings it does not)."""
    try:
        aid = h5a.open(oid, name)
        stored, shape = aid.get_storage_size(), aid.shape
    except Exception:  # reading it reports what is wrong
        return None
    return _too_large(stored, shape)


def _too_large(stored: int, shape: tuple[int, ...] | None) -> str | None:
    if stored > MAX_ATTRIBUTE_BYTES:
        return f"holds {stored} bytes, more than the {MAX_ATTRIBUTE_BYTES} read for an attribute"
    elements = int(np.prod(shape, dtype=object)) if shape else 1
    if elements > MAX_ATTRIBUTE_ELEMENTS:
        return f"holds {elements} elements, more than the {MAX_ATTRIBUTE_ELEMENTS} read for an attribute"
    return None


# Memory types for variable-length strings by character set: the one type h5py would build for each.
_VLEN_STRING = {
    h5t.CSET_UTF8: h5t.py_create(h5py.string_dtype("utf-8")),
    h5t.CSET_ASCII: h5t.py_create(h5py.string_dtype("ascii")),
}


class HeapDamaged(Exception):
    """A variable-length attribute stored in a damaged global heap collection (`global_heap`): never read."""


def _read_attribute(oid: Any, name: bytes, heap_problem: Callable[[bytes], str | None] | None = None) -> Any:
    """The value of one attribute as plain JSON-like Python: what `plain(obj.attrs[name])` gives through h5py, None
    for a null dataspace (an attribute that exists but holds no value: JSON null is the nearest plain value).

    Variable-length strings, nearly every attribute of an AnnData file, are read directly; other types the way
    h5py's `AttributeManager.__getitem__` reads them. A variable-length value is read only where `heap_problem(name)`
    finds nothing wrong with the global heap collections it lies in (HeapDamaged otherwise). Raises what HDF5 or h5py
    raise for a value they cannot read.
    """
    attr = h5a.open(oid, name)
    # The shape first, always: h5py's read does not check the array it is given against the dataspace.
    shape = attr.shape
    if shape is None:
        return None  # a null dataspace (h5py.Empty)
    tid = attr.get_type()
    if heap_problem is not None and (
        tid.get_class() == h5t.VLEN or (isinstance(tid, h5t.TypeStringID) and tid.is_variable_str())
    ):
        problem = heap_problem(name)
        if problem is not None:
            raise HeapDamaged(problem)
    if isinstance(tid, h5t.TypeStringID) and tid.is_variable_str() and tid.get_cset() in _VLEN_STRING:
        arr = np.empty(shape, dtype=object)
        if arr.size:
            attr.read(arr, mtype=_VLEN_STRING[tid.get_cset()])
        values = [b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else b for b in arr.flat]
        return values[0] if arr.ndim == 0 else values
    return plain(_read_like_h5py(attr, tid.dtype, shape))


def _read_like_h5py(attr: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    """h5py's own reading of an attribute of any type other than variable-length strings, given its dtype (as h5py
    maps its HDF5 type) and its shape."""
    htype = direct.memory_type(dtype)
    if dtype.subdtype is not None:  # a top-level array type: numpy has none, so its dimensions join the shape
        dtype, subshape = dtype.subdtype[0], dtype.subdtype[1]
        shape = shape + subshape
    arr = np.zeros(shape, dtype=dtype, order="C")
    attr.read(arr, mtype=htype)
    info = h5py.check_string_dtype(dtype)
    if info is not None and info.length is None:
        arr = np.array([b.decode("utf-8", "surrogateescape") for b in arr.flat], dtype=dtype).reshape(arr.shape)
    return arr[()] if arr.ndim == 0 else arr


class HDF5Attributes(Mapping):
    """A node's attributes: names listed once, each value read on first access and kept.

    One too large to read (known from the listing, and reported at the walk) or that HDF5 cannot read (reported when
    first read) raises Unreadable when asked for: a clause that needs it skips the node, every other keeps its verdict.
    """

    __slots__ = ("_names", "_node", "_refused", "_values")

    def __init__(self, node: HDF5Node, names: list[bytes], refused: dict[bytes, str]) -> None:
        self._node = node
        self._names = {_decoded(n): n for n in names}  # as h5py names them -> as stored
        self._values: dict[Any, Any] = {}
        self._refused: dict[Any, str] = {}  # name -> why its value is not read
        for stored, why in refused.items():
            self._refuse(_decoded(stored), f"attribute {_decoded(stored)!r} {why}; not read")

    def _refuse(self, key: Any, message: str) -> None:
        node = self._node
        self._refused[key] = message
        node.tree.note_problem(StoreProblem(f"{node.path}@{key}", message, node.path))

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._values[key]
        except KeyError:
            stored = self._names[key]  # KeyError for a name the object does not have
        if key in self._refused:
            raise Unreadable(self._refused[key])
        self._read(self._node.object_id(), key, stored)
        if key in self._refused:
            raise Unreadable(self._refused[key])
        return self._values[key]

    def _read(self, oid: Any, key: Any, stored: bytes) -> None:
        value = self._node.stored_string(stored)
        if value is not None:  # a variable-length string read from its heap objects: the library's read is costlier
            self._values[key] = value
            return
        scalar = self._node.stored_scalar(stored)
        if scalar is not None:  # a number or boolean read from its message in the header, likewise
            self._values[key] = scalar[0]
            return
        try:
            self._values[key] = _read_attribute(oid, stored, self._node.heap_problem)
        except HeapDamaged as exc:
            self._refuse(key, f"attribute {key!r} is not read: {exc}")
        except Exception as exc:  # an attribute type h5py cannot map to numpy, or corrupt storage
            self._refuse(key, f"attribute {key!r} cannot be read ({describe(exc)})")

    def get(self, key: Any, default: Any = None) -> Any:
        # Selectors ask every node for its encoding-type: the Mapping's own `get` goes through a KeyError per miss.
        try:
            return self._values[key]
        except KeyError:
            return self[key] if key in self._names else default

    def read(self, oid: Any, keys: frozenset[str]) -> None:
        """Read the values of `keys` now, from the object `oid` already open (one that cannot be read is reported)."""
        for key in keys.intersection(self._names):
            if key not in self._values and key not in self._refused:
                self._read(oid, key, self._names[key])

    def unread(self) -> bool:
        """True when some value has not been read yet (nor refused)."""
        return len(self._values) + len(self._refused) < len(self._names)

    def __contains__(self, key: object) -> bool:
        return key in self._names

    def __iter__(self) -> Iterator[Any]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _attr_string_storage(oid: Any, name: bytes) -> StringStorage | None:
    # Read from the attribute's HDF5 type: the value `attrs` returns is decoded and no longer says how it was stored.
    try:
        tid = h5a.open(oid, name).get_type()
    except Exception:  # an attribute table h5py cannot read (`attrs` reports that)
        return None
    if not isinstance(tid, h5t.TypeStringID):
        return None
    variable = bool(tid.is_variable_str())
    charset = "utf-8" if tid.get_cset() == h5t.CSET_UTF8 else "ascii"
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


def _attr_type_class(oid: Any, name: bytes) -> str | None:
    try:
        return _TYPE_CLASSES.get(h5a.open(oid, name).get_type().get_class())
    except Exception:  # an attribute table h5py cannot read
        return None


def _stored_string_storage(found: global_heap.AttributeType) -> StringStorage | None:
    """What `_attr_string_storage` says, from the datatype as its attribute message stores it."""
    if found.type_class == h5t.STRING:  # fixed length: the padding, then the character set, in the first byte
        charset = "utf-8" if (found.bits >> 4) & 0x0F == h5t.CSET_UTF8 else "ascii"
        return StringStorage("fixed", charset, f"fixed[{found.size}] {charset} string")
    if found.type_class == h5t.VLEN and found.bits & 0x0F == 1:  # a string: its character set in the second byte
        charset = "utf-8" if (found.bits >> 8) & 0x0F == h5t.CSET_UTF8 else "ascii"
        return StringStorage("variable", charset, f"vlen {charset} string")
    return None


def _stored_type_class(found: global_heap.AttributeType) -> str | None:
    """What `_attr_type_class` says, from the datatype as its attribute message stores it (the library calls a
    variable-length string a string)."""
    if found.type_class == h5t.VLEN and found.bits & 0x0F == 1:
        return "string"
    return _TYPE_CLASSES.get(found.type_class)


def _string_storage(dtype: np.dtype, stored: str) -> StringStorage | None:
    info = h5py.check_string_dtype(dtype)
    if info is None:
        if dtype.kind == "U":  # h5py never stores this, but a numpy dtype can reach us via compound members
            return StringStorage("fixed", "utf-32", stored)
        return None
    length = "variable" if info.length is None else "fixed"
    return StringStorage(length, info.encoding, stored)


# What the checks here read of an object's header, by attribute: see `HDF5Tree.heap_facts`.
HeaderFacts = tuple[
    dict[bytes, str],
    dict[bytes, global_heap.StringElements],
    dict[bytes, global_heap.AttributeType],
    dict[bytes, "bool | int | float"],
]


class HDF5Node(Node):
    """A group or dataset. A group keeps its low-level id open (about 1 KB); a dataset keeps only its facts and is
    opened again when its storage or data is read: at its address (else through its parent group and link name)."""

    def __init__(
        self,
        tree: HDF5Tree,
        path: str,
        oid: Any,
        ancestors: frozenset[int],
        address: int | None = None,
        parent_id: Any = None,
        link: bytes | None = None,
    ) -> None:
        self.tree = tree
        self.path = path
        self._ancestors = ancestors
        # The object's address, where its hard link gives it or a soft link was followed to it (`hdf5_links`): a
        # group's (a link back to an ancestor is a cycle), a dataset's (where it is opened again).
        self._address = address
        self._parent_id = parent_id  # the open parent group and the link name reopen a dataset
        self._link = link
        self.kind = "group" if isinstance(oid, h5g.GroupID) else "array"
        self._gid = oid if self.kind == "group" else None
        tree.opened.append(self)
        if tree.tell is not None:
            tree.tell("reading the attributes of ", path)
        plist = None
        self._attrs: HDF5Attributes | None = None
        self._attrs_error: str | None = None
        try:
            dense, stored = tree.attributes_problem(self, oid)
            if dense is not None:
                self._attrs_error = f"{path}: its attributes cannot be listed: {dense}; not read"
            elif not stored:
                self._attrs = HDF5Attributes(self, [], {})
            else:
                listed = tree.attribute_listing(self)
                if listed is None:
                    plist = plist if plist is not None else oid.get_create_plist()
                    self._attrs = HDF5Attributes(self, *_attribute_names(oid, plist))
                else:
                    self._attrs = HDF5Attributes(self, listed[0], _refused(oid, listed[1]))
        except Exception as exc:  # corrupt attribute table: reported when the attributes are asked for
            self._attrs_error = f"{path}: its attributes cannot be listed ({describe(exc)})"
        # Before the attributes are read: the header's messages are let go once its attributes are done with.
        known = tree.known_facts(self) if self.kind == "array" else None
        if tree.preferred_attributes and self._attrs is not None:
            self._attrs.read(oid, tree.preferred_attributes)
        if self.kind == "array":
            self._facts_error: str | None = None
            self._contiguous: tuple[Any, int | None] | None = None
            try:
                if known is not None:
                    facts = known
                else:
                    plist = plist if plist is not None else oid.get_create_plist()
                    facts = tree.keep_facts(self, _dataset_facts(oid, plist, tree.address_size(), tree.types))
                self._shape, self._dtype, self._chunks, self._layout, self._stored_as = facts[:5]
                self._stored_type, self._contiguous = facts.stored_type, facts.contiguous
            except Exception as exc:  # an object header HDF5 cannot read: reported when its shape or type is asked for
                self._facts_error = f"{path}: its shape and type cannot be read ({describe(exc)})"
            outside = None if known is not None else _stored_outside(oid, plist)
            if outside:
                self._contiguous = None
                tree.note_problem(
                    StoreProblem(path, f"{path}: its data is stored outside the file ({outside}); never read", path)
                )

    @cached_property
    def signature(self) -> Hashable | None:
        """(kind, attribute names and values, and for a dataset its HDF5 type, shape and creation properties: layout,
        chunks, filters, fill value): what its attributes, dtype, shape, chunks and storage are read from. None where
        any of it cannot be read (the node is then checked alone). As the tree's token for it (`Tree.signature_token`):
        hashing the attribute values and creation properties anew for each grouping cost as much as a selector."""
        try:
            attrs = self.attrs
            if len(attrs) > MAX_SIGNATURE_ATTRIBUTES:
                return None  # checked alone: its attributes are read only as rules ask for them
            if self._attrs is not None and self._attrs.unread():
                self._attrs.read(self.object_id(), frozenset(self._attrs))  # every value, a dataset opened once
            values = tuple((name, _frozen(attrs[name])) for name in attrs)
        except NodeError:
            return None
        if self.kind == "array":
            if self._facts_error is not None:
                return None
            return self.tree.signature_token((self.kind, values, self._shape, self._stored_as))
        return self.tree.signature_token((self.kind, values))

    def heap_problem(self, name: bytes) -> str | None:
        """Why the variable-length attribute `name` (as stored) must not be read: the global heap collection it lies in
        is damaged (`global_heap`); None where nothing is wrong, or nothing could be checked. The object's header is
        read for this once."""
        return self._heap_facts()[0].get(name)

    def stored_string(self, name: bytes) -> str | list[str] | None:
        """The value of the variable-length string attribute `name` (as stored), read from its global heap objects
        (`global_heap.GlobalHeaps.string_value`: what h5py gives for it), without the library; None where it is not
        read so (the library reads it)."""
        found = self._heap_facts()[1].get(name)
        heaps = self.tree._global_heaps() if found is not None else None
        return heaps.string_value(found) if heaps is not None and found is not None else None

    def stored_scalar(self, name: bytes) -> tuple[bool | int | float] | None:
        """(the value) of the scalar number or boolean attribute `name` (as stored), read from its message in the
        object's header (`scalars`: what h5py gives for it, unwrapped); None where the library reads it."""
        found = self._heap_facts()[3]
        return (found[name],) if name in found else None

    def _heap_facts(self) -> HeaderFacts:
        facts = self.__dict__.get("_heap_facts_found")
        if facts is None:
            facts = self.__dict__["_heap_facts_found"] = self.tree.heap_facts(self)
        return facts

    def object_id(self) -> Any:
        """The low-level id of this group (kept open) or dataset (opened now)."""
        if self._gid is not None:
            return self._gid
        if self._address is not None:
            oid = open_at(self.tree.file_id, self._address)
            if oid is not None:
                return oid
        return (
            h5o.open(self._parent_id, self._link)
            if self._parent_id is not None
            else h5o.open(self.tree.file_id, self.path.encode())
        )

    def dataset(self) -> h5py.Dataset:
        """The h5py dataset, opened for this call: nothing holds it after its caller is done."""
        return h5py.Dataset(self.object_id())

    @property
    def attrs(self) -> Mapping[str, Any]:
        if self._attrs is None:
            raise self.tree.unreadable(self.path, self._attrs_error or f"{self.path}: its attributes cannot be listed")
        return self._attrs

    def attr_storage(self, name: str) -> StringStorage | None:
        stored = self._attrs._names.get(name) if self._attrs is not None else None
        if stored is None:
            return None
        found = self._heap_facts()[2].get(stored)
        return _stored_string_storage(found) if found is not None else _attr_string_storage(self.object_id(), stored)

    def attr_type_class(self, name: str) -> str | None:
        stored = self._attrs._names.get(name) if self._attrs is not None else None
        if stored is None:
            return None
        found = self._heap_facts()[2].get(stored)
        return _stored_type_class(found) if found is not None else _attr_type_class(self.object_id(), stored)

    def _known(self) -> tuple[tuple[int, ...], np.dtype, direct.StoredType | None] | None:
        # The shape, dtype and type facts the walk read, so that a plan need not ask HDF5 again.
        if self._facts_error is not None or self._shape is None:
            return None
        return self._shape, self._dtype, self._stored_type

    def _facts(self) -> None:
        """Raise Unreadable (reported once) when the dataset's shape and type could not be read."""
        if self._facts_error is not None:
            raise self.tree.unreadable(self.path, self._facts_error)

    @property
    def shape(self) -> tuple[int, ...] | None:
        # A dataset with a null dataspace (h5py.Empty) has no shape at all: h5py reports None.
        if self.kind != "array":
            return None
        self._facts()
        return self._shape

    @property
    def dtype(self) -> np.dtype | None:
        if self.kind != "array":
            return None
        self._facts()
        return self._dtype

    @property
    def chunks(self) -> tuple[int, ...] | None:
        if self.kind != "array":
            return None
        self._facts()
        return self._chunks

    @cached_property
    def storage(self) -> Storage | None:
        if self.kind != "array":
            return None
        self._facts()
        try:
            return self._storage()
        except Exception as exc:
            raise self.tree.unreadable(self.path, f"{self.path}: its storage cannot be read ({describe(exc)})") from None

    def _storage(self) -> Storage:
        ds = self.dataset()
        layout = {h5d.CONTIGUOUS: "contiguous", h5d.CHUNKED: "chunked", h5d.COMPACT: "compact"}.get(self._layout, "other")
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
        if self.kind != "group" or self._gid is None:
            return {}
        gid = self._gid
        problem = self.tree.group_problem(self)
        if problem is not None:
            return self._unlisted(f"{self.path}: its members cannot be listed: {problem}; not read")
        links: list[tuple[bytes, int, int]] = []
        try:
            gid.links.iterate(lambda name, info: links.append((name, info.type, info.u)), info=True)
        except Exception as exc:  # a damaged B-tree or heap: the members cannot be listed
            return self._unlisted(f"{self.path}: its members cannot be listed ({describe(exc)})")
        here = self._ancestors | {self._address}
        out: dict[str, Node] = {}
        for name, link_type, address in sorted(links, key=lambda link: _member_name(link[0])):
            shown = _member_name(name)
            path = f"{self.path.rstrip('/')}/{shown}"
            if not shown or "/" in shown or shown in (".", ".."):
                self._report(path, f"{self.path}: a member named {shown!r} cannot be a node; not read", self.path)
                continue
            out[shown] = self._child(gid, name, path, link_type, address, here)
        return out

    def _unlisted(self, message: str) -> dict[str, Node]:
        """No members, and why (`members_unread`), reported once."""
        self._report(self.path, message, self.path)
        self.members_unread = message
        return {}

    def _child(self, gid: Any, name: bytes, path: str, link_type: int, address: int, here: frozenset[int]) -> Node:
        """The node one link of this group leads to: a group, a dataset, or a link node that is never entered
        (external, dangling, a cycle, a soft link to a group, a second link to a group already in the tree,
        unreadable)."""
        tree = self.tree
        target: str | None = None  # a soft link's path
        oid = None  # the object, where following a soft link opened it
        try:
            if link_type == h5l.TYPE_EXTERNAL:
                # Never follow: the target is outside the file being validated.
                filename, inner = gid.links.get_val(name)
                outside = f"{_member_name(filename)}:{_member_name(inner)}"
                self._report(path, f"{path}: an external link to {outside}, outside the file; not followed", path)
                return LinkNode(tree, path, "external", outside)
            if link_type == h5l.TYPE_SOFT:
                followed = self._follow(gid, name, path)
                if isinstance(followed, Node):
                    return followed
                address, oid, target = followed
            elif link_type != h5l.TYPE_HARD:
                return LinkNode(tree, path, "other", "UserDefinedLink")
        except Exception as exc:
            return self._broken(path, f"{path}: its link cannot be read ({describe(exc)})")
        try:
            oid = oid if oid is not None else self._open_member(gid, name, address)
        except Exception as exc:  # an unreadable object header
            return self._broken(path, f"{path}: cannot be opened ({describe(exc)})")
        if isinstance(oid, h5g.GroupID):
            seen = self._seen_group(address, target, path, here)
            if seen is not None:
                return seen
            node = HDF5Node(tree, path, oid, here, address)
        elif isinstance(oid, h5d.DatasetID):
            node = HDF5Node(tree, path, oid, here, address, parent_id=gid, link=name)
        else:
            return LinkNode(tree, path, "other", "Datatype" if isinstance(oid, h5t.TypeID) else type(oid).__name__)
        if target is not None:
            node.soft_link = target
        return node

    def _follow(self, gid: Any, name: bytes, path: str) -> Node | tuple[int, Any, str]:
        """(the address, the open id, the path) of what the soft link `name` leads to (`HDF5Tree.follow`); a link
        node where it is not followed: reported where its path leaves the file, unread where it passes a group whose
        members cannot be read, dangling (not reported) where it names nothing."""
        stored = gid.links.get_val(name)
        target = _member_name(stored)
        try:
            address, oid = self.tree.follow((self._address, gid), stored.decode("utf-8", "surrogateescape"))
        except hdf5_links.NotFollowed as exc:
            why = f"{path}: a soft link to {target}, {exc}; not followed"
            if exc.reason == hdf5_links.UNREAD:  # what it leads to is unknown, not absent
                return self._broken(path, why)
            if exc.reason == hdf5_links.OUTSIDE:
                self._report(path, why, path)
            return LinkNode(self.tree, path, "soft", target)
        return address, oid, target

    def _open_member(self, gid: Any, name: bytes, address: int | None) -> Any:
        """The low-level id of a member reached by a hard link: at its `address` (by name, the library would look the
        name up again in the group: see address), else by its name."""
        oid = open_at(self.tree.file_id, address) if address is not None else None
        return oid if oid is not None else h5o.open(gid, name)

    def _seen_group(self, address: int, target: str | None, path: str, here: frozenset[int]) -> Node | None:
        """A link node for a group not entered here, else None: an ancestor (a cycle), a soft link (the group is read
        at the path it names), a second hard link to a group already in the tree.

        Every group is entered once: links between groups could otherwise make a walk visit 2**depth paths."""
        if address in here:
            return LinkNode(self.tree, path, "cycle", target if target is not None else "an ancestor group")
        if target is not None:
            return LinkNode(self.tree, path, "soft", target)
        first = self.tree.groups.setdefault(address, path)
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
        return plan_rows(self.shape, self.chunks, max_elements, itemsize, lambda: direct.stored_rows(self.plan))

    def read_block(self, rows: RowRange, fetched: Any = None) -> Block:
        """One block, each stored chunk decoded (bounded) before HDF5 may decode it; problems in `Block.chunks`.

        Raises NotDecoded for a filter off the allow-list or a block too large to hold, Unreadable for data stored
        outside the file or a chunk index HDF5 cannot read.
        """
        if self.kind != "array" or self.shape is None:
            raise NodeError(f"{self.path}: not an array with data (a null dataspace holds none)")
        # The h5py dataset is opened only where h5py reads: a block of bytes read directly needs none.
        dataset = functools.cache(self.dataset)
        heaps = self.tree.collection_check() if self.plan.vlen is not None else None
        return direct.read_block(dataset, self.tree.raw_fd(), self.plan, rows, self.tree.remote_source(), fetched, heaps)

    def fetch_ahead(self, rows: RowRange) -> direct.Fetched | None:
        """Start fetching the chunks of block `rows` from a remote file (`direct.fetch_ahead`); None where
        nothing is started, whatever the reason (the block's read then meets it)."""
        if self.kind != "array" or self.shape is None or self.tree.range_reader is None:
            return None
        try:
            return direct.fetch_ahead(self.plan, self.tree.range_reader, rows)
        except Exception:
            return None

    @property
    def plan(self) -> direct.DirectPlan:
        """How this dataset's blocks are read, made once from its low-level id; NotDecoded or Unreadable (reported)
        when they are not."""
        got = self.__dict__.get("_plan")
        if got is None:
            try:
                self._heap_facts()  # the header read once: its datatype checked with its attributes
                malformed = self.__dict__.get("_datatype_problem")
                if malformed is not None:
                    raise NodeError(f"{self.path}: {malformed}; not read")
                if self._contiguous is not None and self._shape:
                    # From what the walk read: no need to open the dataset again.
                    fill, offset = self._contiguous
                    got = direct.contiguous_plan(
                        self.path, self._shape, self._dtype, self._stored_type, fill, offset, self.tree.raw_size()
                    )
                else:
                    oid = self.object_id()
                    got = direct.plan(
                        oid,
                        self.tree.raw_size(),
                        self.path,
                        self.tree.address_size(),
                        self._known(),
                        self.tree.index_source(),
                        self._address if self._address is not None else object_address(oid),
                    )
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


# Distinct datasets whose facts are kept for those alike, and the most bytes of header messages one may be kept by
# (a compact dataset's layout message holds its data).
MOST_KEPT_FACTS = 4096
MOST_FACTS_KEY_BYTES = 4096
_UNDEFINED_ADDRESSES = {size: b"\xff" * size for size in (2, 4, 8, 16, 32)}


def facts_key(messages: list[tuple[int, int, bytes]], sizeof_addr: int) -> tuple[tuple[Any, ...], int | None] | None:
    """(what of a dataset's header messages its facts are read from: every one of `_FACT_KINDS` as stored, but the
    address of its data or chunk index; that address for contiguous data, None where never allocated) from a
    version 3 layout message; None where the library is asked (another layout version, external storage, a
    message missing, too many bytes)."""
    parts: list[tuple[int, int, bytes]] = []
    offset = None
    size = 0
    for kind, flags, body in messages:
        if kind not in _FACT_KINDS:
            continue
        if kind == _EXTERNAL or len(body) < 2:
            return None
        body = bytes(body)
        if kind == _LAYOUT:
            if body[0] != 3 or body[1] not in (0, 1, 2):
                return None  # version 3 (h5py's default); a version 4 layout may be virtual, and says more
            at = 2 if body[1] == 1 else 3  # contiguous: the address; chunked: the rank, then the address
            if body[1] != 0:
                address = body[at : at + sizeof_addr]
                if len(address) < sizeof_addr:
                    return None
                if body[1] == 1 and address != _UNDEFINED_ADDRESSES.get(sizeof_addr):
                    offset = int.from_bytes(address, "little")
                body = body[:at] + body[at + sizeof_addr :]
        size += len(body)
        parts.append((kind, flags, body))
    kinds = {kind for kind, _, _ in parts}
    if not {_DATASPACE, global_heap.DATATYPE_MESSAGE, _LAYOUT} <= kinds or size > MOST_FACTS_KEY_BYTES:
        return None
    return tuple(parts), offset


class DatasetFacts(NamedTuple):
    """What the walk reads of a dataset: what h5py's Dataset reports, how it is stored, and for a plain contiguous
    dataset what its read plan needs (so that a scan need not open it again)."""

    shape: tuple[int, ...] | None
    dtype: np.dtype
    chunks: tuple[int, ...] | None
    layout: int
    # Its dtype and what h5py records of its HDF5 type, layout, chunks, filters and fill value: everything its
    # `storage` is described from.
    stored_as: tuple[Any, ...]
    # What a read plan needs of its HDF5 type (None when not read here: the plan reads it).
    stored_type: direct.StoredType | None
    # A contiguous dataset of numbers (at least one dimension) whose type's facts were read: its fill value and data
    # offset (None: never allocated); else None.
    contiguous: tuple[Any, int | None] | None


def _dataset_facts(oid: Any, plist: Any, sizeof_addr: int | None, types: TypeFacts) -> DatasetFacts:
    """The facts of an open dataset, `plist` its creation property list, `sizeof_addr` its file's address size
    (None when unknown), `types` its file's type facts so far (see HDF5Tree.types)."""
    shape = oid.shape
    layout = plist.get_layout()
    chunks = tuple(int(c) for c in plist.get_chunk()) if layout == h5d.CHUNKED else None
    dtype, stored_type = _type_facts(oid, sizeof_addr, types)
    contiguous = None
    try:
        filters = tuple(plist.get_filter(i) for i in range(plist.get_nfilters()))
        fill: Any = plist.fill_value_defined()  # the library's default (zero) needs no reading
        if dtype.kind not in "OV" and fill == h5d.FILL_VALUE_USER_DEFINED:  # `storage` reports none for strings, records
            value = np.zeros((), dtype=dtype)
            plist.get_fill_value(value)
            fill = value.tobytes()
        # The dtype with what h5py records of the HDF5 type beside it (string encoding and length, enum members).
        kind = (dtype, None if dtype.metadata is None else repr(sorted(dtype.metadata.items())))
        stored_as: tuple[Any, ...] = (kind, layout, chunks, filters, fill)
    except Exception as exc:  # a type or filter h5py cannot describe: the node is alike no other
        return DatasetFacts(_shape(shape), dtype, chunks, layout, (object(), str(exc)), stored_type, None)
    if layout == h5d.CONTIGUOUS and shape and stored_type is not None and dtype.kind not in "OV":
        try:
            if plist.get_external_count() == 0:
                # The fill value as the plan reads it (h5py's `fillvalue`): the library's default is zero.
                value = np.frombuffer(fill, dtype=dtype)[0] if isinstance(fill, bytes) else np.zeros((), dtype=dtype)[()]
                contiguous = (value, oid.get_offset())
        except Exception:  # the plan opens the dataset, and reports what is wrong
            contiguous = None
    return DatasetFacts(_shape(shape), dtype, chunks, layout, stored_as, stored_type, contiguous)


def _shape(shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return tuple(int(n) for n in shape) if shape is not None else None


# h5py's dtype for each HDF5 type of a file, and the facts a read plan needs of it, by the type's serialized
# description: mapping the type anew for each dataset (a string type builds a dtype with metadata) was a fifth of
# a wide file's dataset walk. Kept by the file's tree, so it lasts no longer than the file is read.
TypeFacts = dict[bytes, tuple[np.dtype, direct.StoredType | None]]


def _type_facts(oid: Any, sizeof_addr: int | None, types: TypeFacts) -> tuple[np.dtype, direct.StoredType | None]:
    """The dataset's dtype, as h5py's `Dataset.dtype` gives it, and its type's facts for a read plan (None when the
    file's address size is not known or they cannot be read)."""
    tid = oid.get_type()
    try:
        key = tid.encode()
    except Exception:  # a type HDF5 cannot serialize: mapped as h5py maps it, each time
        return tid.dtype, None
    got = types.get(key)
    if got is None:
        dtype = tid.dtype
        try:
            stored = None if sizeof_addr is None else direct.stored_type(tid, dtype, sizeof_addr)
        except Exception:  # the plan reads the type itself, and reports what is wrong
            stored = None
        got = types[key] = (dtype, stored)
    return got


def _stored_outside(oid: Any, plist: Any) -> str | None:
    """Where a dataset's data lies outside the file (external storage files, a virtual dataset's sources), or None."""
    try:
        dcpl = plist if plist is not None else oid.get_create_plist()
        if dcpl.get_layout() == h5d.VIRTUAL:
            sources = sorted({_member_name(_bytes(dcpl.get_virtual_filename(i))) for i in range(dcpl.get_virtual_count())})
            return f"a virtual dataset mapping {', '.join(sources[:3]) or 'other files'}"
        count = dcpl.get_external_count()
        if count > 0:
            names = sorted({_member_name(_bytes(dcpl.get_external(i)[0])) for i in range(count)})
            return f"external storage in {', '.join(names[:3])}"
    except Exception:
        return None
    return None


def _bytes(name: str | bytes) -> bytes:
    return name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")


def _frozen(value: Any) -> Any:
    """An attribute value as a hashable key that tells apart what compares equal across types (1, 1.0, True)."""
    if isinstance(value, list):
        return ("list", tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _frozen(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:  # a value plain() left as it was (a compound record): alike only itself
        return ("other", id(value))
    return (type(value).__name__, value)


def _hdf5_type_name(ds: h5py.Dataset) -> str:
    info = h5py.check_string_dtype(ds.dtype)
    if info is not None:
        return f"{'vlen' if info.length is None else f'fixed[{info.length}]'} {info.encoding} string"
    return ds.dtype.str


class LinkNode(Node):
    """A link the tree reports but does not enter: external, dangling, cyclic or of an unknown kind."""

    def __init__(self, tree: Tree, path: str, link_kind: str, target: str) -> None:
        self.tree = tree
        self.path = path
        self.kind = "link"
        self.link_kind = link_kind
        self.target = target
        if link_kind == "broken":  # `target` says why it could not be opened
            self.unread = target

    @property
    def attrs(self) -> Mapping[str, Any]:
        return {}


def _unopened(source: str, reason: str, local: bool) -> InputError:
    """The error for a file with HDF5's signature that the library cannot open. A local file is damaged (cut short,
    its superblock or root group broken): a failing report. A system error (libhdf5 names its errno) or a remote
    file (the network may be what failed) is an input that could not be opened."""
    if local and "errno =" not in reason:
        return DamagedInput(source, reason, "hdf5")
    return InputError(f"{source}: {reason}")


class HDF5Tree(Tree):
    def __init__(self, path: str | BinaryIO, source: str | None = None) -> None:
        """Open a local HDF5 file by path, or a seekable binary file object (a remote file opened with fsspec).

        Args:
            path: the local path, or the file object (the tree closes it on close()).
            source: the name shown in messages and reports; for a file object, a URL without its credentials.
        """
        local = isinstance(path, (str, os.PathLike))
        # Only a local path may be read directly with os.pread (direct); a file object is read through h5py.
        self.local_path: str | None = os.fspath(path) if local else None
        self.source = source if source is not None else str(path)
        self.format = "hdf5"
        self.preferred_attributes: frozenset[str] = frozenset()
        self._fileobj = None if local else path
        # A remote file's chunks, fetched a block at a time (set by the opener of a file behind a URL; see remote).
        self.range_reader: direct.RangeSource | None = None
        self.opened: list[HDF5Node] = []  # every node made, so close() can let go of their HDF5 ids
        self.groups: dict[int, str] = {}  # a group's object address -> the path it is read under, entered once
        self.types: TypeFacts = {}  # see _type_facts
        self._facts: dict[tuple[Any, ...], DatasetFacts] = {}  # see known_facts
        self._group_problems: dict[int, str | None] = {}  # a group's address -> why its members must not be read
        try:
            self._file = h5py.File(path, "r", locking=False) if local else h5py.File(path, "r")
        except Exception as exc:
            raise _unopened(self.source, f"cannot open as HDF5 ({_first_line(exc)})", local) from None
        try:
            root = h5g.open(self._file.id, b"/")
            address = object_address(root)
        except Exception as exc:  # the root group's header cannot be read: nothing in the file can be reached
            self._file.close()
            raise _unopened(self.source, f"its root group cannot be opened ({_first_line(exc)})", local) from None
        self.file_id = self._file.id
        _small_metadata_cache(self.file_id)
        self.groups[address] = "/"
        self._root_address = address
        self._root = HDF5Node(self, "/", root, frozenset(), address)

    def prefer_attributes(self, names: frozenset[str]) -> None:
        self.preferred_attributes = frozenset(names)

    @property
    def root(self) -> Node:
        return self._root

    def address_size(self) -> int | None:
        """The file's address size in bytes (see `direct.address_size`), read once; None when it cannot be."""
        if not hasattr(self, "_address_size"):
            try:
                self._address_size: int | None = direct.address_size(self.file_id)
            except Exception:  # each plan then reads it, and reports what is wrong
                self._address_size = None
        return self._address_size

    def heap_facts(self, node: HDF5Node) -> HeaderFacts:
        """(the variable-length attributes of `node` stored in a damaged global heap collection, by stored name: why
        each must not be read; its plain string attributes, which `string_value` reads from their heap objects:
        `global_heap.GlobalHeaps.attributes`; the datatype of each attribute in its header, `global_heap.attribute_types`;
        the value of each plain scalar number or boolean, `scalars.scalar_values`), all empty where the file's bytes
        cannot be read here. The header is read once for this, the check of its dense attributes and, for a group, the
        check of its members."""
        heaps = self._global_heaps()
        if heaps is None:
            return {}, {}, {}, {}
        try:
            messages = self._messages_of(node)
            facts = (
                ({}, {}, {}, {})
                if messages is None
                else (*heaps.attributes(messages), global_heap.attribute_types(messages), scalars.scalar_values(messages))
            )
        except Exception:
            return {}, {}, {}, {}
        if messages is not None and node.kind == "array":
            node.__dict__["_datatype_problem"] = global_heap.datatype_problem(messages)
        if messages is not None:  # the attribute messages are done with: only a group's member storage is kept
            kept = [m for m in messages if m[0] in _MEMBER_KINDS] if node.kind == "group" else None
            node.__dict__["_header_found"] = kept
        return facts

    def attributes_problem(self, node: HDF5Node, oid: Any) -> tuple[str | None, bool]:
        """(why the HDF5 library must not list the attributes of `node`, open as `oid`: they are in dense storage
        whose fractal heap is not a tree, `fractal_heap`; None where nothing is wrong, or nothing could be checked;
        whether it may store any: False only where its header, read here, holds no attribute message and no dense
        attribute storage, so the library need not be asked to list them)."""
        reader = self._reader()
        messages = self._messages_of(node, oid) if reader is not None else None
        if reader is None or messages is None:
            return None, True
        stored = dense = False
        for kind, _, _ in messages:
            if kind == global_heap.ATTRIBUTE_MESSAGE:
                stored = True
            elif kind == fractal_heap.ATTRIBUTE_INFO_MESSAGE:
                stored = dense = True
        if not dense:
            return None, stored
        return fractal_heap.dense_problem(reader, messages, fractal_heap.ATTRIBUTE_INFO_MESSAGE), True

    def attribute_listing(self, node: HDF5Node) -> tuple[list[bytes], dict[bytes, int]] | None:
        """`global_heap.attribute_listing` of `node`'s header, read for `attributes_problem`; None where the library
        lists them."""
        messages = node.__dict__.get("_header_found")
        return None if messages is None else global_heap.attribute_listing(messages)

    def known_facts(self, node: HDF5Node) -> DatasetFacts | None:
        """The facts of the dataset `node` where an earlier dataset's header held the same type, shape, layout,
        filters and fill value (`facts_key`), with its own data's offset; None where the library is asked for them
        (`keep_facts` then keeps them for the datasets alike)."""
        messages = node.__dict__.get("_header_found")
        sizeof_addr = self.address_size()
        found = None if messages is None or sizeof_addr is None else facts_key(messages, sizeof_addr)
        if found is None:
            return None
        facts = self._facts.get(found[0])
        if facts is None:
            node.__dict__["_facts_key"] = found
            return None
        return self._at_offset(facts, found[1])

    def keep_facts(self, node: HDF5Node, facts: DatasetFacts) -> DatasetFacts:
        """The facts the library gave for `node`, kept for the datasets whose headers say the same (`known_facts`),
        with its data's offset as its header gives it (the library's adds the user block's size to an address never
        allocated, too)."""
        found = node.__dict__.pop("_facts_key", None)
        if found is None:
            return facts
        if len(self._facts) < MOST_KEPT_FACTS:
            self._facts[found[0]] = facts
        return self._at_offset(facts, found[1])

    def _at_offset(self, facts: DatasetFacts, offset: int | None) -> DatasetFacts:
        """`facts` of a contiguous dataset with its data at `offset` in the file's addresses (None: never allocated)."""
        if facts.contiguous is None:
            return facts
        structures = self._structures()
        at = None if offset is None or structures is None else offset + structures[4]
        return facts._replace(contiguous=(facts.contiguous[0], at))

    def group_problem(self, node: HDF5Node) -> str | None:
        """Why the HDF5 library must not list, or look up, the members of the group `node`: its symbol table's
        B-tree is not a tree (`btree.group_problem`), or its links are in dense storage whose fractal heap is
        not a tree (`fractal_heap`); None where nothing is wrong, or nothing could be checked. Checked once per group:
        when its members are listed, or a soft link's path passes through it (`group_problem_at`)."""
        address = node._address
        if address is None or address in self._group_problems:
            return self._group_problems.get(address) if address is not None else None
        messages = self._messages_of(node) if self._reader() is not None else None
        node.__dict__["_header_found"] = None  # done with
        return self._group_check(address, messages)

    def group_problem_at(self, address: int) -> str | None:
        """`group_problem` of the group whose header is at `address` (its header read for it)."""
        if address not in self._group_problems:
            self._group_check(address, self._header_messages(address) if self._reader() is not None else None)
        return self._group_problems[address]

    def _group_check(self, address: int, messages: list[tuple[int, int, bytes]] | None) -> str | None:
        reader = self._reader()
        problem = None
        if reader is not None:
            problem = btree.group_problem(reader, address, messages)
            if problem is None and messages is not None:
                problem = fractal_heap.dense_problem(reader, messages, fractal_heap.LINK_INFO_MESSAGE)
        self._group_problems[address] = problem
        return problem

    def follow(self, group: hdf5_links.Place, target: str) -> hdf5_links.Place:
        """(the address, the open id) of the object the soft link `target`, stored in the open `group` (its address,
        its id), leads to, followed a link at a time (`hdf5_links.follow`); raises hdf5_links.NotFollowed."""
        root = (self._root_address, self._root._gid)
        return hdf5_links.follow(self.file_id, root, group, target, self.group_problem_at)

    def _messages_of(self, node: HDF5Node, oid: Any = None) -> list[tuple[int, int, bytes]] | None:
        """The messages of `node`'s header that the checks here read (`_HEADER_KINDS`), read once and kept on the
        node until its checks are done with them (`heap_facts`, `group_problem`)."""
        found = node.__dict__.get("_header_found")
        if found is not None:
            return found
        header = node._address if node._address is not None else object_address(oid or node.object_id())
        messages = node.__dict__["_header_found"] = self._header_messages(int(header))
        return messages

    def _header_messages(self, header: int) -> list[tuple[int, int, bytes]] | None:
        """The messages of `_HEADER_KINDS` in the object header at `header` (`btree.header_messages`);
        None where its bytes are not as that reader takes them, or cannot be read here."""
        reader = self._reader()
        return None if reader is None else btree.header_messages(reader, header, _HEADER_KINDS)

    def collection_check(self) -> direct.HeapCheck | None:
        """Why the library must not read the global heap collection at an address (see `global_heap`); None where the
        file's bytes cannot be read here."""
        heaps = self._global_heaps()
        return heaps.collection_problem if heaps is not None else None

    def _global_heaps(self) -> global_heap.GlobalHeaps | None:
        if "_heaps" not in self.__dict__:
            found = self._structures()
            self.__dict__["_heaps"] = None if found is None else global_heap.GlobalHeaps(*found)
        return self.__dict__["_heaps"]

    def _reader(self) -> btree.Reader | None:
        """The file's structures read from its bytes; None where they cannot be read here. Made once."""
        if "_reader_made" not in self.__dict__:
            found = self._structures()
            try:
                self.__dict__["_reader_made"] = None if found is None else btree.Reader(_ranges(found[0]), *found[1:])
            except btree.Unexpected:
                self.__dict__["_reader_made"] = None
        return self.__dict__["_reader_made"]

    def _structures(self) -> tuple[global_heap.ReadAt, int, int, int, int] | None:
        """(read_at, the file's size, its address and length sizes, its base address): what reading the file's
        structures here takes (global heaps, symbol tables); None where the file's bytes cannot be read here. Made once."""
        if "_structures_found" not in self.__dict__:
            self.__dict__["_structures_found"] = self._find_structures()
        return self.__dict__["_structures_found"]

    def _find_structures(self) -> tuple[global_heap.ReadAt, int, int, int, int] | None:
        try:
            creation = self.file_id.get_create_plist()
            sizeof_addr, sizeof_size = (int(n) for n in creation.get_sizes())
            base = int(creation.get_userblock())
        except Exception:
            return None
        fd = self.raw_fd()
        if fd is not None:
            size = os.fstat(fd).st_size
            return (lambda offset, length: os.pread(fd, length, offset)), size, sizeof_addr, sizeof_size, base
        fileobj = self._fileobj
        size = getattr(fileobj, "size", None)
        if fileobj is None or not isinstance(size, int):
            return None

        def read_at(offset: int, length: int) -> bytes:
            with h5py_lock:  # the library reads the same file object (h5py's file object driver), seeking it
                fileobj.seek(offset)
                return fileobj.read(length)

        return read_at, size, sizeof_addr, sizeof_size, base

    def index_source(self) -> direct.IndexSource | None:
        """The file's bytes, from which a plan reads a chunk index (`direct.plan`): a remote file's
        (`remote_source`), a local file's `pread`; None where neither can be read (the library then lists the chunks
        unchecked)."""
        fd = self.raw_fd()
        if fd is not None:
            return direct.LocalRanges(fd, os.fstat(fd).st_size)
        return self.remote_source()

    def remote_source(self) -> direct.RangeSource | None:
        """A remote file's bytes: its range reader, or for a file of one block (which has none) its file object's,
        read whole at the first read; None for a local file, or where neither can be read."""
        if self.range_reader is not None or self.raw_fd() is not None:
            return self.range_reader
        found = self._structures()
        return direct.ReadRanges(_ranges(found[0]), found[1]) if found is not None else None

    def raw_size(self) -> int | None:
        """The file's size in bytes (a remote file's as its server gave it), or None when it is not known: every
        chunk a plan reads is checked to lie inside it."""
        fd = self.raw_fd()
        if fd is None:
            return self.range_reader.size if self.range_reader is not None else None
        return os.fstat(fd).st_size

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
        # Nodes and tree refer to each other, so their HDF5 ids would live until a cyclic collection, which the
        # command pauses at exit: a virtual dataset's property list still open when HDF5 shuts down crashes it
        # (exit 139). So every node lets go of its ids now, while HDF5 is up, and the cycle holds nothing of HDF5.
        for node in self.opened:
            node._gid = None
            node._parent_id = node._address = None
            node.__dict__.pop("_plan", None)
        self.opened = []
        if getattr(self, "_raw_fd", None) is not None:
            os.close(self._raw_fd)
            self._raw_fd = None
        with contextlib.suppress(Exception):
            self._file.close()
        if self._fileobj is not None:
            with contextlib.suppress(Exception):  # a remote file whose connection is gone: nothing left to release
                self._fileobj.close()


# The most bytes of metadata (object headers, B-tree nodes, heaps) the HDF5 library keeps cached for a file: its
# adaptive cache's smallest size. The walk reads each object header once and a scan each chunk index once, so a
# larger cache keeps what is never read again. The library counts an entry by its size on disk, and holds it
# decoded at about ten times that: with 1 MiB it filled over the first ~2,000 objects of a file and then held
# ~12 MB, with HDF5's default (adaptive, up to 32 MB) the 30,000-node `.h5ad` of the metadata benchmark peaked at
# 327 MB. 128 KiB holds ~2 MB and no benchmark file is slower, local or remote (the same requests); at 64 KiB
# the wide files are (the nodes of a large group's B-tree and its heap are evicted while its members are read),
# for no memory saved.
METADATA_CACHE_BYTES = 128 * 2**10


def _small_metadata_cache(file_id: Any) -> None:
    try:
        config = file_id.get_mdc_config()
        config.set_initial_size = True
        config.initial_size = config.min_size = config.max_size = METADATA_CACHE_BYTES
        file_id.set_mdc_config(config)
    except Exception:  # the library's default cache then: larger, never wrong
        return


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
