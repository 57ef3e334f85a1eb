"""Open an HDF5 object at its address, without looking its name up.

Opening a group's member by name makes the library find the name again: in a group stored as a symbol table (what
h5py writes by default) that reads the group's local heap, which holds every member's name. With the small
metadata cache the tree keeps (see `hdf5.METADATA_CACHE_BYTES`), a heap larger than the cache is read anew for
every member opened: 100,000 members with 33-character names (a 4 MB heap) took 26 s to open by name and 2.3 s at
their addresses. The walk already has each hard link's address from listing the group, so it opens the object
there (`H5Oopen_by_token`, HDF5 1.12 and later, called in h5py's own library under h5py's lock).

Where the library lacks the call, or it fails, `open_at` says so (None) and the caller opens by name as before,
where a failure is reported with HDF5's own message.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from h5py import h5d, h5g, h5i, h5o
from h5py._objects import phil

# H5O_token_t: an opaque 16 bytes, in which the native file format keeps the object's address (little-endian, the
# file's address size; the rest zero).
_TOKEN_BYTES = 16
_H5E_DEFAULT = 0


class _Token(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint8 * _TOKEN_BYTES)]


@functools.cache
def _library() -> tuple[Any, Any, Any] | None:
    """(H5Oopen_by_token, H5Iget_type, H5Eclear2) of the HDF5 library h5py uses, or None where it has no
    H5Oopen_by_token."""
    try:
        # Its symbols resolve through the library h5py is linked with; PyDLL holds the GIL for the call, as h5py's
        # own calls into the library do.
        lib = ctypes.PyDLL(h5o.__file__)
        open_by_token, kind_of, clear = lib.H5Oopen_by_token, lib.H5Iget_type, lib.H5Eclear2
    except (OSError, AttributeError):
        return None
    open_by_token.argtypes = [ctypes.c_int64, _Token]
    open_by_token.restype = ctypes.c_int64
    kind_of.argtypes = clear.argtypes = [ctypes.c_int64]
    kind_of.restype = clear.restype = ctypes.c_int
    return open_by_token, kind_of, clear


# h5py's classes for the ids of groups and datasets, made directly: its `wrap_identifier` imports them at each call.
_ID_CLASSES = {h5i.GROUP: h5g.GroupID, h5i.DATASET: h5d.DatasetID}


def open_at(file_id: Any, address: int) -> Any | None:
    """The object at `address` in the file of `file_id`, as h5py's low-level id (GroupID, DatasetID, TypeID), or
    None where it cannot be opened that way (the caller then opens it by name)."""
    functions = _library()
    if functions is None or not 0 <= address < 2**64:  # (HDF5 addresses are at most 8 bytes)
        return None
    open_by_token, kind_of, clear = functions
    token = _Token.from_buffer_copy(address.to_bytes(_TOKEN_BYTES, "little"))
    with phil:  # h5py serializes every call into the library with this lock; so must a call made beside it
        hid = open_by_token(file_id.id, token)
        if hid < 0:
            clear(_H5E_DEFAULT)  # the library would clear it at its next call; nothing reads a stale one meanwhile
            return None
        id_class = _ID_CLASSES.get(kind_of(hid))
        return id_class(hid) if id_class is not None else h5i.wrap_identifier(hid)
