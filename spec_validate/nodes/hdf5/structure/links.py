"""A soft link followed here, a link at a time, before the HDF5 library is asked to open what it leads to.

A soft link holds a path. Opened by name, the library resolves that path itself, looking each name up in the group
before it and following every link it meets, external links included: a soft link to `/uns/ext/x`, where `/uns/ext`
is an external link, opened a file outside the one being validated; and a path through a group whose storage loops
the library (a fractal heap that names itself, `fractal_heap`) hung the run, though the group itself was reported
and never listed. So the path is resolved here: each group on the way is checked before a name is looked up in it
(the check its listing gets), each hard link gives the next address, each soft link is followed in turn (at most
MOST_SOFT_LINKS in one path, the library's own bound), and an external or user-defined link on the way stops it.
Each object on the way is opened at its address (or by its one name, in a group checked), never by a path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from h5py import h5g, h5l, h5o

from spec_validate.nodes.base import describe
from spec_validate.nodes.hdf5.address import open_at

MOST_SOFT_LINKS = 16  # H5L_NUM_LINKS: the soft links the library follows in one path before it gives up


class NotFollowed(Exception):
    """Why a soft link is not followed to the end. `reason`: DANGLING (its path names nothing), OUTSIDE (the path
    leaves the file) or UNREAD (it passes a group whose members cannot be read: what it leads to is unknown)."""

    def __init__(self, why: str, reason: str) -> None:
        super().__init__(why)
        self.reason = reason


DANGLING, OUTSIDE, UNREAD = "dangling", "outside", "unread"
# An object on a link's way: its address, and its low-level id (open).
Place = tuple[int, Any]


def follow(file_id: Any, root: Place, group: Place, target: str, group_problem: Callable[[int], str | None]) -> Place:
    """(the address, the open low-level id) of the object that the soft link `target`, stored in the open group
    `group`, leads to. `root`: the root group (where an absolute path starts). `group_problem(address)`: why the
    members of the group at `address` must not be looked up (`HDF5Tree.group_problem_at`), or None.

    Raises NotFollowed. Each object on the way is opened at its address where the library can (`open_at`), else by
    its one name in a group already checked: never by a path."""
    parts = _names(target)
    address, here = root if target.startswith("/") else group
    soft_links = 1
    while parts:
        name = parts.pop(0)
        if not isinstance(here, h5g.GroupID):
            raise NotFollowed(f"{name!r} is looked up in something that is not a group", DANGLING)
        problem = group_problem(address)
        if problem is not None:
            raise NotFollowed(f"through a group whose members cannot be read ({problem})", UNREAD)
        encoded = name.encode("utf-8", "surrogateescape")
        try:
            info = here.links.get_info(encoded)
        except Exception:  # no such member, or its link cannot be read: the library's open would fail here too
            raise NotFollowed(f"no member {name!r} on its way", DANGLING) from None
        if info.type == h5l.TYPE_HARD:
            address = int(info.u)
            try:
                found = open_at(file_id, address)
                here = found if found is not None else h5o.open(here, encoded)
            except Exception as exc:
                raise NotFollowed(f"{name!r} on its way cannot be opened ({describe(exc)})", UNREAD) from None
        elif info.type == h5l.TYPE_SOFT:
            soft_links += 1
            if soft_links > MOST_SOFT_LINKS:
                raise NotFollowed(f"more than {MOST_SOFT_LINKS} soft links on its way", DANGLING)
            value = here.links.get_val(encoded).decode("utf-8", "surrogateescape")
            parts = _names(value) + parts
            if value.startswith("/"):
                address, here = root
        else:
            kind = "an external link" if info.type == h5l.TYPE_EXTERNAL else "a user-defined link"
            raise NotFollowed(f"through {kind} ({name!r}), outside the file", OUTSIDE)
    return address, here


def _names(path: str) -> list[str]:
    """A path's link names (HDF5 ignores empty ones and `.`)."""
    return [name for name in path.split("/") if name not in ("", ".")]
