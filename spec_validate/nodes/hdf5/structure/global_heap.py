"""Global heap collections walked before the HDF5 library reads an attribute stored in one.

A variable-length string or sequence (nearly every attribute of an AnnData file) is stored as a length and a heap
ID: the address of a global heap collection ("GCOL") and the object's index in it. To read one, the library loads
the whole collection and walks its objects, each object's stored size giving where the next begins. A damaged size
stops that walk (a free-space object of size 0: the next object is itself) or sends it back (a size that wraps when
rounded up), and the library loops forever inside `H5Aread` (`tests/data/hdf5-global-heap-loop`, found by the
fuzzer). So before a variable-length attribute is read, its heap IDs are taken from the attribute message of its
object's header (`btree.header_messages`), and each collection they name is walked here as the library walks
it, once per file: an attribute stored in a collection whose objects do not each fit inside it is refused with the
reason, never handed to the library. (The caller reads the header: `hdf5.HDF5Tree`, which reads a group's once
for this and for the check of its symbol table.)

Only what is read plainly is checked: a top-level variable-length type in a compact attribute message (the way h5py,
anndata, SeuratDisk and hdmf write them). An attribute held elsewhere (dense attribute storage, a shared datatype,
variable-length members of a compound) is left to the library, as every attribute was before.
"""

from __future__ import annotations

import math
import struct
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from spec_validate.nodes.hdf5.structure.fractal_heap import ATTRIBUTE_INFO_MESSAGE

ATTRIBUTE_MESSAGE = 0x000C
DATATYPE_MESSAGE = 0x0003
# An attribute message's name, datatype and dataspace sizes (after its version and flags).
_ATTRIBUTE_SIZES = struct.Struct("<HHH")
VLEN_CLASS = 9
# A collection larger than this is not loaded to be walked (the library would load it whole as well): its
# attributes are refused. Real collections hold 4 KiB, or one large string each.
MOST_COLLECTION_BYTES = 64 * 2**20
# Elements of one attribute whose heap IDs are taken (an attribute holding more is refused by the walk already).
MOST_ELEMENTS = 2**20

# (offset, size) -> the bytes there (fewer at the end of the file).
ReadAt = Callable[[int, int], bytes]
# The collections last read for an attribute's value whose objects' places are kept, and the bytes of those of them
# no larger than KEPT_COLLECTION_BYTES (a real one holds 4 KiB: a file's strings are read without a read each).
KEPT_COLLECTIONS = 16
# A string attribute's elements: (whether its dataspace is scalar, each element's (length, collection, object index)).
StringElements = tuple[bool, list[tuple[int, int, int]]]
KEPT_COLLECTION_BYTES = 2**20
# Objects whose places in their collections are kept for the run (a few bytes each, in arrays): more than a wide
# atlas's string columns hold; past it a collection is walked again when one of its objects is read.
MOST_INDEXED_OBJECTS = 1 << 23


# A global heap object's header: its index, reference count and four reserved bytes, then its size (a length of the
# file's size, 2, 4 or 8 bytes), by that size.
_OBJECT_HEADS = {size: struct.Struct(f"<H6x{code}") for size, code in ((2, "H"), (4, "I"), (8, "Q"))}


def _scalar(body: bytes, at: int) -> bool:
    """Whether the dataspace message at `at` in `body` is a scalar's (version 1: rank 0; version 2: type 0)."""
    return body[at + 1] == 0 if body[at] == 1 else body[at + 3] == 0


def malformed_vlen(bits: int, more_bits: int) -> str | None:
    """Why a variable-length type whose first two class bit field bytes are `bits`, `more_bits` is one the format
    forbids, or None: its kind neither a sequence (0) nor a string (1), or a string's padding or character set out of
    range. The library takes such a type as some other (a string flipped to kind 3, read as a sequence of bytes,
    crashed h5py and the process: found by the fuzzer), so it is never handed over."""
    kind, padding, charset = bits & 0x0F, bits >> 4, more_bits & 0x0F
    if kind not in (0, 1):
        return f"its datatype is malformed (variable-length kind {kind}: neither a sequence nor a string)"
    if kind == 1 and (padding > 2 or charset > 1):
        return f"its datatype is malformed (a variable-length string of padding {padding}, character set {charset})"
    return None


def datatype_problem(messages: list[tuple[int, int, bytes]]) -> str | None:
    """Why the datatype message among a dataset's header messages is a variable-length type the format forbids
    (`malformed_vlen`), or None: the library reads such a dataset's elements as some other type, and crashed."""
    for kind, _, body in messages:
        if kind == DATATYPE_MESSAGE and len(body) >= 3 and body[0] & 0x0F == VLEN_CLASS:
            return malformed_vlen(body[1], body[2])
    return None


def _attribute_parts(body: bytes) -> tuple[int, int, int, int, int, int] | None:
    """(where its name starts, the name's size with its NUL, where its datatype, its dataspace (and the dataspace's
    size) and its data start) in an attribute message whose datatype and dataspace are stored in it; None for one
    that shares either (its type lies elsewhere), or of a version the format does not define."""
    version = body[0]
    if version == 1:
        at, pad = 8, 8
    elif version in (2, 3) and not body[1] & 0x03:  # neither its datatype nor its dataspace shared
        at, pad = (8 if version == 2 else 9), 1
    else:
        return None
    name_size, type_size, space_size = _ATTRIBUTE_SIZES.unpack_from(body, 2)
    type_at = at + -(-name_size // pad) * pad
    space_at = type_at + -(-type_size // pad) * pad
    return at, name_size, type_at, space_at, space_size, space_at + -(-space_size // pad) * pad


class AttributeType(NamedTuple):
    """An attribute's datatype as its message stores it: its class and its first class bit fields, and its size."""

    type_class: int  # 0 integer, 1 float, 3 string, 6 compound, 8 enum, 9 variable length, 10 array, ...
    bits: int  # the class bit fields' first two bytes, little-endian (a string's padding and character set)
    size: int  # bytes per element as stored (a variable-length type: its length and heap ID)


def attribute_types(messages: list[tuple[int, int, bytes]]) -> dict[bytes, AttributeType]:
    """The datatype of every attribute among an object's header messages (`messages`, as `btree.header_messages`
    gives them), by stored name, read from each message once: the library looks an attribute up by name, a scan of
    the header each time, so asking it for the type of each of 100,000 attributes scanned the header 100,000 times.
    Attributes whose datatype is shared, or whose message is not as read here, are left out (the library is asked)."""
    found: dict[bytes, AttributeType] = {}
    for body, parts in attribute_messages(messages):
        at, name_size, type_at = parts[:3]
        if type_at + 8 > len(body) or at + name_size > len(body):
            continue
        name = bytes(body[at : at + name_size]).rstrip(b"\x00")
        bits = int.from_bytes(body[type_at + 1 : type_at + 3], "little")
        found[name] = AttributeType(body[type_at] & 0x0F, bits, int.from_bytes(body[type_at + 4 : type_at + 8], "little"))
    return found


def attribute_messages(messages: list[tuple[int, int, bytes]]) -> Iterator[tuple[bytes, tuple[int, int, int, int, int, int]]]:
    """(its body, `_attribute_parts` of it) for each attribute message among an object's header messages (`messages`,
    as `btree.header_messages` gives them) that holds its own datatype and dataspace; the others are passed over."""
    for kind, _, body in messages:
        if kind != ATTRIBUTE_MESSAGE:
            continue
        try:
            parts = _attribute_parts(body)
        except (IndexError, struct.error):
            continue
        if parts is not None:
            yield body, parts


_SHARED_MESSAGE = 0x02  # a message flag: its body names a shared message, stored elsewhere


def attribute_listing(messages: list[tuple[int, int, bytes]]) -> tuple[list[bytes], dict[bytes, int]] | None:
    """The attribute names of an object whose attributes are all compact messages of its header (`messages`, as
    `btree.header_messages` gives them), in the order the library lists them by name, and the most bytes each can
    store (its message's, from where its data begins); None where the library must list them: an attribute info
    message (dense storage, or creation order tracked), a shared attribute message, one not read plainly here, a name
    twice. The library would open the header again and build the same table for each object."""
    sizes: dict[bytes, int] = {}
    for kind, flags, body in messages:
        if kind == ATTRIBUTE_INFO_MESSAGE:
            return None
        if kind != ATTRIBUTE_MESSAGE:
            continue
        if flags & _SHARED_MESSAGE:
            return None
        try:
            parts = _attribute_parts(body)
        except (IndexError, struct.error):
            return None
        if parts is None:
            return None
        at, name_size, data_at = parts[0], parts[1], parts[5]
        name = bytes(body[at : at + name_size]).split(b"\0", 1)[0]
        if not name_size or at + name_size > len(body) or data_at > len(body) or name in sizes:
            return None
        sizes[name] = len(body) - data_at
    return sorted(sizes), sizes


class ObjectIndex:
    """Where each object of a collection lies, by object index: two arrays, searched, rather than a dict of ints."""

    __slots__ = ("_headers", "_indexes")

    def __init__(self, indexes: np.ndarray, headers: np.ndarray) -> None:
        self._indexes, self._headers = indexes, headers

    @classmethod
    def of(cls, indexes: list[int], headers: list[int]) -> ObjectIndex | None:
        """The index of objects `indexes` whose headers are at `headers`; None where an index appears twice."""
        ids = np.asarray(indexes, dtype=np.uint64)
        at = np.asarray(headers, dtype=np.uint64)
        order = np.argsort(ids, kind="stable")
        ids, at = ids[order], at[order]
        if ids.size > 1 and not np.all(ids[1:] != ids[:-1]):
            return None
        return cls(ids, at)

    def __len__(self) -> int:
        return int(self._indexes.size)

    def get(self, index: int) -> int | None:
        """Where the header of object `index` lies in the collection; None where it holds no such object."""
        indexes = self._indexes
        at = int(indexes.searchsorted(index))  # the method: numpy's function wraps it in a second call
        if at < indexes.size and int(indexes[at]) == index:
            return int(self._headers[at])
        return None


# The largest collection walked by `_chase`: its arrays take several times its size, where the walk object by object
# takes memory by the objects it finds. Real collections hold 4 KiB to a few tens of KiB.
MOST_CHASED_BYTES = 1 << 22


def _chase(data: bytes, size: int, start: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(the index of each object but free space, where its header lies) of a sound collection of 8-byte lengths, as
    `GlobalHeaps._walk` finds them; None where the walk meets anything but whole objects at 8-byte steps (damage, a
    free-space object of an odd size), or the collection is larger than MOST_CHASED_BYTES, which the walk itself
    then decides and words.

    Where every object's next one lies is worked out for every 8-byte step at once, and only that chain is followed
    one object at a time: a wide atlas's collections hold hundreds of thousands of objects in all.
    """
    if size % 8 or start % 8 or size < start + 16 or size > MOST_CHASED_BYTES:
        return None
    words = np.frombuffer(data, dtype="<u8", count=size // 8)
    slots = words.size - 1  # a header at the last step would end past the collection: no object starts there
    index = (words[:-1] & 0xFFFF).astype(np.int64)
    stored = np.minimum(words[1:], size).astype(np.int64)  # a larger size is damage, whatever it is
    # A free-space object (index 0) counts its own header in its size; any other is padded to 8 bytes.
    need = np.where(index == 0, stored, 16 + ((stored + 7) & -8))
    here = np.arange(slots, dtype=np.int64)
    sound = (need > 0) & (need <= size - here * 8) & (need % 8 == 0)
    damaged = slots + 2  # past every step a sound object leads to (at most the collection's end, slots + 1)
    following = np.where(sound, here + need // 8, damaged).tolist()
    path: list[int] = []
    step = path.append
    slot = start // 8
    while slot < slots:
        step(slot)
        slot = following[slot]
    if slot == damaged:
        return None
    chain = np.asarray(path, dtype=np.int64)
    objects = chain[index[chain] != 0]
    return index[objects], objects * 8


class GlobalHeaps:
    """The variable-length attributes of one file's objects, checked against the collections they name."""

    def __init__(self, read_at: ReadAt, file_size: int, sizeof_addr: int, sizeof_size: int, base: int = 0) -> None:
        self._read_at, self.file_size = read_at, file_size
        self.sizeof_addr, self.sizeof_size, self.base = sizeof_addr, sizeof_size, base
        self._collections: dict[int, str | None] = {}  # address (relative to base) -> why it must not be read
        # address -> where each object of a sound collection lies, kept for the run from the walk that checked it
        # (within MOST_INDEXED_OBJECTS in all): a string attribute then costs no second walk of a collection that also
        # holds a column's thousand values, whatever else read the collection first.
        self._indexes: dict[int, ObjectIndex] = {}
        self._indexed_objects = 0
        self._sizes: dict[int, int] = {}  # address -> the bytes of a collection walked to its end as a sound one
        self._bytes: OrderedDict[int, bytes] = OrderedDict()  # the last small collections read, by address

    def attributes(self, messages: list[tuple[int, int, bytes]]) -> tuple[dict[bytes, str], dict[bytes, StringElements]]:
        """Of the variable-length attributes among an object's header messages (`messages`, as
        `btree.header_messages` gives them: those of other kinds are passed over), by stored name: (why each
        stored in a damaged collection must not be read; the elements of each plain string attribute in sound
        collections, for `string_value`: a variable-length string of ASCII or UTF-8, its every element non-empty)."""
        problems: dict[bytes, str] = {}
        strings: dict[bytes, StringElements] = {}
        undefined = (1 << (8 * self.sizeof_addr)) - 1
        found = [f for kind, _, body in messages if kind == ATTRIBUTE_MESSAGE and (f := self._elements_of(body)) is not None]
        for name, string, scalar, elements, malformed in found:
            if malformed is not None:
                problems[name] = malformed
                continue
            for address in sorted({a for length, a, _ in elements if length and a != undefined}):
                problem = self.collection_problem(address) or self._length_problem(address, elements)
                if problem is not None:
                    problems[name] = problem
                    break
            else:
                if string and elements and all(length for length, _, _ in elements):
                    strings[name] = (scalar, elements)
        return problems, strings

    def _length_problem(self, address: int, elements: list[tuple[int, int, int]]) -> str | None:
        """Why an element stored in the collection at `address` claims more than the collection holds, or None.

        The library allocates an element's stored length before it reads the object: a length of 2.8e9 in a file of
        a few kilobytes is a 2.8 GB allocation. Every object lies inside its collection, so no sound element is longer.
        """
        size = self._sizes.get(address)
        longest = max((length for length, a, _ in elements if a == address), default=0)
        where = f"its global heap collection at byte {address + self.base}"
        if size is None:
            # Not walked to its end (past the end of the file, no collection there, cut short): the library refuses
            # the collection, but only after allocating the element's length, so the length is bounded all the same,
            # by the most any collection of this file can hold.
            most = min(MOST_COLLECTION_BYTES, self.file_size)
            if longest > most:
                return f"an element claims {longest} bytes, more than any global heap collection of this file holds ({most})"
            return None
        if longest > size:
            return f"an element claims {longest} bytes, more than {where} holds ({size})"
        return None

    def collection_problem(self, address: int) -> str | None:
        """Why the library must not read the global heap collection at `address`, or None (walked once per file)."""
        if address not in self._collections:
            self._check(address)
        return self._collections[address]

    def _check(self, address: int) -> tuple[bytes, ObjectIndex | None]:
        """Walk the collection at `address`: its problem, its size and where its objects lie are kept (the last within
        MOST_INDEXED_OBJECTS); its bytes and where its objects lie come back (its bytes kept too where small)."""
        problem, objects, data = self._walk(address)
        self._collections[address] = problem
        if problem is None and objects is not None:
            self._sizes[address] = len(data)
            if self._indexed_objects + len(objects) <= MOST_INDEXED_OBJECTS:
                self._indexes[address] = objects
                self._indexed_objects += len(objects)
            self._keep_bytes(address, data)
        return data, objects

    def _keep_bytes(self, address: int, data: bytes) -> None:
        if len(data) <= KEPT_COLLECTION_BYTES:
            self._bytes[address] = data
            if len(self._bytes) > KEPT_COLLECTIONS:
                self._bytes.popitem(last=False)

    def _walk(self, address: int) -> tuple[str | None, ObjectIndex | None, bytes]:
        """(why the library must not read the collection at `address`, or None; where each of its objects' headers
        lies, by object index, or None where it is not walked to its end as a sound collection; its bytes)."""
        where = f"its global heap collection at byte {address + self.base}"
        size_at = 8  # "GCOL", version, three reserved bytes, then the collection's size
        if address + self.base + size_at + self.sizeof_size > self.file_size:
            return None, None, b""  # past the end of the file (a damaged heap ID): the library refuses it itself
        head = self._read_at(address + self.base, size_at + self.sizeof_size)
        if len(head) < size_at + self.sizeof_size or head[:4] != b"GCOL":
            return None, None, b""  # no collection here: the library says so itself, without looping
        size = int.from_bytes(head[size_at:], "little")
        if size > MOST_COLLECTION_BYTES:
            return f"{where} claims {size} bytes, more than the {MOST_COLLECTION_BYTES} read for one; not read", None, b""
        data = self._read_at(address + self.base, size)
        if len(data) < size:
            return None, None, data  # past the end of the file: the library refuses it
        object_head = 8 + self.sizeof_size  # index, reference count, four reserved bytes, the object's size
        at = size_at + self.sizeof_size
        chased = _chase(data, size, at) if self.sizeof_size == 8 else None
        if chased is not None:
            return None, ObjectIndex.of(*chased), data
        head_of = self._head_of()
        # Only the positions are gathered in the loop (it runs once per object of every collection an attribute or
        # a string array names); the index is made from them in one call.
        indexes: list[int] = []
        places: list[int] = []
        while at < size:
            if at + object_head > size:
                break  # the last bytes, too few for an object: free space, as the library takes them
            index, stored = head_of(data, at)
            # A free-space object (index 0) counts its own header in its size; any other is padded to 8 bytes.
            need = stored if index == 0 else object_head + ((stored + 7) & -8)
            if need == 0:
                damage = f"a free-space object of size 0 at byte {at}: the library's walk never ends"
                return f"{where} is damaged ({damage})", None, data
            if need > size - at:
                damage = f"object {index} at byte {at} claims {stored} bytes, past the collection's end"
                return f"{where} is damaged ({damage})", None, data
            if index:
                indexes.append(index)
                places.append(at)
            at += need
        # An index twice: which object the library reads is not this reader's guess.
        return None, ObjectIndex.of(indexes, places), data

    def _head_of(self) -> Callable[[bytes, int], tuple[int, int]]:
        """Reads (index, size) of the object whose header is at a position of a collection's bytes."""
        return _OBJECT_HEADS[self.sizeof_size].unpack_from if self.sizeof_size in _OBJECT_HEADS else self._object_head

    def _object_head(self, data: bytes, at: int) -> tuple[int, int]:
        """(index, size) of the object at `at`, for lengths of a size `_OBJECT_HEADS` has no format for (16, 32)."""
        return int.from_bytes(data[at : at + 2], "little"), int.from_bytes(data[at + 8 : at + 8 + self.sizeof_size], "little")

    def _object(self, address: int, index: int) -> bytes | memoryview | None:
        """The stored bytes of object `index` of the sound collection at `address`; None where it is not one."""
        data = self._bytes.get(address)
        if data is not None:
            self._bytes.move_to_end(address)
        objects = self._indexes.get(address)
        if objects is None:  # never walked, or walked when the index had no room left: walked for this object
            data, objects = self._check(address)
        header = objects.get(index) if objects is not None else None
        if header is None:
            return None
        head_bytes = 8 + self.sizeof_size  # index, reference count, four reserved bytes, the object's size
        if data is None:  # a collection too large to keep: the object's header, then its bytes, read alone
            head = self._read_at(address + self.base + header, head_bytes)
            if len(head) < head_bytes:
                return None
            size = self._head_of()(head, 0)[1]
            got = self._read_at(address + self.base + header + head_bytes, size)
            return got if len(got) == size else None
        size = self._head_of()(data, header)[1]
        offset = header + head_bytes
        return memoryview(data)[offset : offset + size] if offset + size <= len(data) else None

    def string_value(self, found: StringElements) -> str | list[str] | None:
        """The value of a plain string attribute (its elements, from `attributes`), read from its global heap objects
        as h5py gives it: each string cut at its first NUL, decoded as UTF-8 with surrogate escapes; a scalar as one
        string, any other shape as the flat list. None where an object is not where the collection says (the library
        then reads it)."""
        scalar, elements = found
        values: list[str] = []
        for length, address, index in elements:
            data = self._object(address, index)
            if data is None or len(data) < length:
                return None
            values.append(bytes(data[:length]).split(b"\0", 1)[0].decode("utf-8", "surrogateescape"))
        return values[0] if scalar else values

    def _elements_of(self, body: bytes) -> tuple[bytes, bool, bool, list[tuple[int, int, int]], str | None] | None:
        """(the stored name, whether it is a variable-length string of ASCII or UTF-8, whether its dataspace is
        scalar, each element's (length, collection address, object index), why its type is malformed or None) of an
        attribute message whose type is variable length (a string or a sequence) at the top; None for any other, or
        one not read plainly here."""
        try:
            parts = _attribute_parts(body)
            if parts is None:
                return None
            at, name_size, type_at, space_at, space_size, data_at = parts
            if body[type_at] & 0x0F != VLEN_CLASS:
                return None
            string = body[type_at + 1] & 0x0F == 1 and body[type_at + 2] & 0x0F in (0, 1)  # a string; ASCII, UTF-8
            count = self._elements(body, space_at, space_size)
            if count is None or count > MOST_ELEMENTS:
                return None
            element = 8 + self.sizeof_addr  # the length (4 bytes), then the heap ID: a collection's address, an index
            if len(body) < data_at + count * element:
                return None
            name = bytes(body[at : at + name_size]).rstrip(b"\x00")
            elements = []
            for start in range(data_at, data_at + count * element, element):
                length = int.from_bytes(body[start : start + 4], "little")
                address = int.from_bytes(body[start + 4 : start + 4 + self.sizeof_addr], "little")
                index = int.from_bytes(body[start + 4 + self.sizeof_addr : start + element], "little")
                elements.append((length, address, index))
            return name, string, _scalar(body, space_at), elements, malformed_vlen(body[type_at + 1], body[type_at + 2])
        except (IndexError, struct.error):
            return None

    def _elements(self, body: bytes, at: int, size: int) -> int | None:
        """The elements the dataspace message at `at` (of `size` bytes) in `body` holds; None for one not read here."""
        if size < 4:
            return None
        version, rank = body[at], body[at + 1]
        if version == 1:
            dims_at = at + 8
        elif version == 2:
            if body[at + 3] == 2:  # null: no element
                return 0
            dims_at = at + 4
        else:
            return None
        if rank == 0:
            return 1  # scalar
        width = self.sizeof_size
        if dims_at + rank * width > at + size:
            return None
        return math.prod(int.from_bytes(body[dims_at + i * width : dims_at + (i + 1) * width], "little") for i in range(rank))
