"""Scalar numbers and booleans read from the attribute messages of an object's header, as h5py reads them.

A compact attribute keeps its value in its message, which the header walk has read already (`btree.header_messages`).
Asking the library instead opens the attribute by name (a scan of the header), maps its type and reads it: for the
`ordered` flag of every categorical column of a wide dataframe that was most of what reading its attributes cost.
Only the plainest types are read here, each exactly as h5py gives it once unwrapped (`nodes.base.plain`): integers
of 1, 2, 4 or 8 bytes, IEEE floats of 4 or 8, and h5py's boolean (an enum of FALSE = 0 and TRUE = 1 over one byte);
a scalar dataspace, nothing shared. Anything else is left to the library.
"""

from __future__ import annotations

import struct

from spec_validate.nodes.hdf5.structure.global_heap import _scalar, attribute_messages

_FIXED_POINT, _FLOAT, _ENUM = 0, 1, 8
# The class bit fields (implied mantissa bit, the sign's place) and properties (after the 8-byte head) of the IEEE
# floats h5py writes, little- and big-endian: by size and bit fields, the struct format each is read with.
_IEEE = {
    (4, 0x20, 31, 0): "<f",
    (4, 0x21, 31, 0): ">f",
    (8, 0x20, 63, 0): "<d",
    (8, 0x21, 63, 0): ">d",
}
_IEEE_PROPERTIES = {4: struct.pack("<HHBBBBI", 0, 32, 23, 8, 0, 23, 127), 8: struct.pack("<HHBBBBI", 0, 64, 52, 11, 0, 52, 1023)}
_BOOLEAN_MEMBERS = (b"FALSE", b"TRUE")


def scalar_values(messages: list[tuple[int, int, bytes]]) -> dict[bytes, bool | int | float]:
    """The value of every plain scalar number or boolean attribute among an object's header messages (`messages`,
    as `btree.header_messages` gives them), by stored name; the others are left out (the library reads them)."""
    found: dict[bytes, bool | int | float] = {}
    for body, (at, name_size, type_at, space_at, _, data_at) in attribute_messages(messages):
        try:
            if not _scalar(body, space_at):
                continue
            value = _value(bytes(body[type_at:space_at]), bytes(body[data_at:]))
        except (IndexError, ValueError, struct.error):  # a message cut short, a member name without its end
            continue
        if value is not None:
            found[bytes(body[at : at + name_size]).split(b"\0", 1)[0]] = value[0]
    return found


def _value(datatype: bytes, data: bytes) -> tuple[bool | int | float] | None:
    """(the value) of one element of `datatype` (a datatype message, padding after it allowed) stored in `data`; None
    for a type not read here."""
    type_class, size = datatype[0] & 0x0F, int.from_bytes(datatype[4:8], "little")
    if len(data) < size:
        return None
    if type_class == _FIXED_POINT:
        if not _whole_integer(datatype, size):
            return None
        order = "big" if datatype[1] & 0x01 else "little"
        return (int.from_bytes(data[:size], order, signed=bool(datatype[1] & 0x08)),)
    if type_class == _FLOAT:
        form = _IEEE.get((size, datatype[1], datatype[2], datatype[3]))
        if form is None or datatype[8 : 8 + 12] != _IEEE_PROPERTIES[size]:
            return None
        return (struct.unpack(form, data[:size])[0],)
    if type_class == _ENUM:
        return _boolean(datatype, data)
    return None


def _whole_integer(datatype: bytes, size: int) -> bool:
    """Whether a fixed-point type is a plain integer of its whole size (no bit offset, every bit significant, no
    padding bits set), as numpy's integers are."""
    return size in (1, 2, 4, 8) and not datatype[1] & 0x06 and datatype[8:12] == struct.pack("<HH", 0, 8 * size)


def _boolean(datatype: bytes, data: bytes) -> tuple[bool] | None:
    """(the value) of h5py's boolean type: an enum of two members, FALSE = 0 and TRUE = 1, over a signed byte."""
    version, members = datatype[0] >> 4, int.from_bytes(datatype[1:3], "little")
    base = datatype[8:20]  # the base type: a one-byte integer's message, 8 bytes and its 4 of properties
    if members != 2 or base[0] & 0x0F != _FIXED_POINT or int.from_bytes(base[4:8], "little") != 1:
        return None
    if not base[1] & 0x08 or not _whole_integer(base, 1):
        return None
    at, names = 20, []
    for _ in range(members):
        end = datatype.index(b"\0", at)
        names.append(datatype[at:end])
        at = end + 1 if version >= 3 else at + -(-(end + 1 - at) // 8) * 8
    if tuple(names) != _BOOLEAN_MEMBERS or datatype[at : at + 2] != b"\x00\x01" or data[0] not in (0, 1):
        return None
    return (bool(data[0]),)
