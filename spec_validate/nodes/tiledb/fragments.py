"""TileDB's own files checked before libtiledb reads them: generic tiles, and the fragment metadata that sizes reads.

libtiledb allocates from the size fields of what it reads before it can find them wrong, and some of what it then
does with a wrong size ends the process (a segfault, a double free). So every size field that drives an allocation
or a read is checked here first, in Python, against what the file holds (TileDB's format specification,
`format_spec/fragment.md`, `generic_tile.md` and `filter_pipeline.md` of the TileDB repository):

- a generic tile (schemas, metadata, group details, and each part of a fragment's metadata): its header's persisted
  and filter pipeline sizes lie inside the file, its tile size is one a real tile has, its filter pipeline's filters
  fill the pipeline's bytes, and its chunks (each an original, a filtered and a metadata length) fill its persisted
  bytes exactly and add up to its tile size;
- a fragment's data files (format versions 10 and later): each is its tiles one after another, each framed as a
  generic tile's filtered data is, filling the file exactly;
- a fragment's metadata file (`__fragment_metadata.tdb`, format versions 10 and later): its generic tiles run one
  after another up to its footer; the footer's length lies inside the file; the array schema name and each
  non-empty domain range fit in the footer; the fields the schema says it holds fill it exactly; each data file's
  size is at most what that file holds on disk (TileDB reads the last tile of a file up to it); the number of
  sparse tiles is at most what the data files can hold; the cells of the last tile at most a tile's; the
  non-empty domain lies inside the array's; and every offset of a generic tile names one of those tiles.

A corrupt field is named with the file it is in; the array is then not handed to TileDB.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

# TileDB's generic tile header: format version, persisted size, tile size, datatype, cell size, encryption type,
# filter pipeline size. TileDB allocates from these sizes before it can find them wrong.
GENERIC_TILE = struct.Struct("<IQQBQBI")
MAX_TILE_BYTES = 256 * 2**20
# A filter pipeline: the largest chunk, the number of filters; each filter: its type and the size of its options.
PIPELINE = struct.Struct("<II")
FILTER = struct.Struct("<BI")
MAX_FILTERS = 64  # a pipeline's filters: far beyond TileDB's few kinds, each used once
# A chunk of filtered data: its original length, its filtered length, its metadata's length.
CHUNK = struct.Struct("<III")
NO_ENCRYPTION = 0
# The fragment format versions whose footer is laid out as parsed here (TileDB 2.4 onwards); a fragment of another
# version is left to TileDB.
FOOTER_VERSIONS = range(10, 23)
METADATA_FILE = "__fragment_metadata.tdb"


class Corrupt(Exception):
    """A field of a TileDB file that no file TileDB wrote holds; the message names it and what the file holds, and
    `where` the part of the file it is in (a generic tile of a fragment's metadata), if not the whole file."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where

    def said_of(self, name: str) -> str:
        """The problem as said of the file `name`."""
        return f"{name}, {self.where}, {self}" if self.where else f"{name} {self}"


def tile_header_problem(path: str) -> str | None:
    """Why the file `path`, one generic tile (a schema, metadata or group details), is not one TileDB may read, or None.

    Its header's sizes must add up to the file's, the tile and cell sizes be ones a real tile has, and its filtered
    data be framed as the header says: a corrupt size field would have TileDB allocate gigabytes before it found out.
    """
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            end = generic_tile(fh, 0, size)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except Corrupt as exc:
        return str(exc)
    if end != size:
        return f"has a tile header that says {end} bytes, but holds {size} (corrupt)"
    return None


def generic_tile(fh: BinaryIO, offset: int, end: int) -> int:
    """Check the generic tile at `offset` of `fh`, which must end by `end`; where it ends. Raises Corrupt."""
    head = _read(fh, offset, GENERIC_TILE.size)
    if len(head) < GENERIC_TILE.size:
        raise Corrupt("is shorter than a TileDB tile header (truncated)")
    _, persisted, tile, _, cell, encryption, pipeline = GENERIC_TILE.unpack(head)
    stop = offset + GENERIC_TILE.size + pipeline + persisted
    if stop > end:
        raise Corrupt(f"has a tile header that says {stop - offset} bytes, but holds {end - offset} (corrupt)")
    if tile > MAX_TILE_BYTES:
        raise Corrupt(f"has a tile header that says the tile holds {tile} bytes, more than {MAX_TILE_BYTES} (corrupt)")
    if not 0 < cell <= max(tile, 1):
        raise Corrupt(f"has a tile header with cell size {cell} for a tile of {tile} bytes (corrupt)")
    if encryption == NO_ENCRYPTION:  # an encrypted tile's bytes say nothing without its key; TileDB refuses it
        _pipeline(fh, offset + GENERIC_TILE.size, pipeline)
        _chunks(fh, offset + GENERIC_TILE.size + pipeline, persisted, tile)
    return stop


def _pipeline(fh: BinaryIO, offset: int, size: int) -> None:
    """The filter pipeline's filters must fill its `size` bytes exactly."""
    data = _read(fh, offset, size)
    if len(data) < PIPELINE.size:
        raise Corrupt(f"has a filter pipeline of {size} bytes, too short for one (corrupt)")
    _, count = PIPELINE.unpack_from(data)
    if count > MAX_FILTERS:
        raise Corrupt(f"has a filter pipeline of {count} filters, more than {MAX_FILTERS} (corrupt)")
    at = PIPELINE.size
    for _ in range(count):
        if at + FILTER.size > size:
            raise Corrupt(f"has a filter pipeline whose filters pass its {size} bytes (corrupt)")
        _, options = FILTER.unpack_from(data, at)
        at += FILTER.size + options
    if at != size:
        raise Corrupt(f"has a filter pipeline whose filters take {at} of its {size} bytes (corrupt)")


def _chunks(fh: BinaryIO, offset: int, persisted: int, tile: int) -> None:
    """The filtered data's chunks must fill its `persisted` bytes exactly and add up to the `tile` bytes unfiltered."""
    taken, original = _filtered(fh, offset, persisted)
    if taken != persisted:
        raise Corrupt(f"has chunks that take {taken} of the {persisted} bytes of its filtered data (corrupt)")
    if original != tile:
        raise Corrupt(f"has chunks that hold {original} bytes unfiltered, but a tile of {tile} (corrupt)")


def _filtered(fh: BinaryIO, offset: int, room: int) -> tuple[int, int]:
    """The filtered data at `offset` (a chunk count, then each chunk's original, filtered and metadata lengths, its
    metadata and its bytes), which must fit in `room` bytes: (the bytes it takes, the bytes it holds unfiltered).

    TileDB sizes its list of chunks from their count, and each chunk's buffers from its lengths.
    """
    if room < 8:
        raise Corrupt(f"holds {room} bytes of filtered data, too few for its chunk count (corrupt)")
    (count,) = struct.unpack("<Q", _read(fh, offset, 8))
    if count > (room - 8) // CHUNK.size:
        raise Corrupt(f"says its filtered data holds {count} chunks, more than its {room} bytes can (corrupt)")
    at, original = 8, 0
    for _ in range(count):
        head = _read(fh, offset + at, CHUNK.size)
        if len(head) < CHUNK.size:
            raise Corrupt("has filtered data cut short (truncated)")
        unfiltered, filtered, meta = CHUNK.unpack(head)
        at += CHUNK.size + filtered + meta
        original += unfiltered
        if at > room:
            raise Corrupt(f"has a chunk that passes the {room} bytes of its filtered data (corrupt)")
    return at, original


def data_file_problem(path: str) -> Corrupt | None:
    """Why the fragment's data file `path` must not reach TileDB, or None: it is its tiles one after another, each
    filtered data framed as a generic tile's is, and they must fill it exactly (a chunk count flipped in a data tile
    had TileDB allocate 680 MB for the list of its chunks)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            at = 0
            while at < size:
                try:
                    at += _filtered(fh, at, size - at)[0]
                except Corrupt as exc:
                    return Corrupt(str(exc), f"its tile at {at}")
    except OSError as exc:
        return Corrupt(f"cannot be read ({exc.strerror or exc})")
    return None


def _read(fh: BinaryIO, offset: int, size: int) -> bytes:
    fh.seek(offset)
    return fh.read(size)


@dataclass(frozen=True)
class Layout:
    """What an array's schema says of the fields its fragments' footers hold.

    `dims`: each dimension's coordinate size, None for a variable-sized one; `domains`: each dimension's domain
    (lo, hi) where it is an integer one, else None; `attrs`: the number of attributes; `capacity`: a sparse tile's
    cells; `tile_cells`: a dense tile's cells (None where no extent says); `names`: the schema files the array holds.
    """

    dims: tuple[int | None, ...]
    domains: tuple[tuple[int, int] | None, ...]
    dim_kinds: tuple[str, ...]
    attrs: int
    capacity: int
    tile_cells: int | None
    names: frozenset[str]


def fragment_folders(array: str) -> Iterator[str]:
    """The fragment folders of the array in the folder `array`: those in `__fragments`, and those of the layout before
    it (format versions before 12) at the array's top level."""
    for folder in (os.path.join(array, "__fragments"), array):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            is_fragment = entry.name.startswith("__") and entry.is_dir(follow_symlinks=False)
            if is_fragment and os.path.isfile(os.path.join(entry.path, METADATA_FILE)):
                yield entry.path


def array_problem(array: str, layout: Layout | None) -> str | None:
    """Why the fragments of the array in `array` must not reach TileDB, or None (each checked by `fragment_problem`)."""
    for folder in fragment_folders(array):
        why = fragment_problem(folder, layout)
        if why is not None:
            return why.said_of(os.path.relpath(os.path.join(folder, METADATA_FILE), array))
        if _name_version(os.path.basename(folder)) in FOOTER_VERSIONS:
            found = fragment_files_problem(folder)
            if found is not None:
                return found[1].said_of(os.path.relpath(os.path.join(folder, found[0]), array))
    return None


def fragment_problem(folder: str, layout: Layout | None) -> Corrupt | None:
    """Why the fragment in `folder` must not reach TileDB, or None.

    `layout`: what the array's schema says, None where it is not known (the footer's own sizes are checked then).
    """
    version = _name_version(os.path.basename(folder))
    if version is None or version not in FOOTER_VERSIONS:
        return None  # a layout not parsed here (older than TileDB 2.4, or newer than this check knows): TileDB's
    path = os.path.join(folder, METADATA_FILE)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            _check_metadata(fh, size, folder, layout)
    except OSError as exc:
        return Corrupt(f"cannot be read ({exc.strerror or exc})")
    except Corrupt as exc:
        return exc
    return None


def fragment_files_problem(folder: str) -> tuple[str, Corrupt] | None:
    """(the file, why) for the first data file of the fragment in `folder` that must not reach TileDB, or None."""
    for name in sorted(os.listdir(folder)):
        if name.endswith(".tdb") and name != METADATA_FILE:
            why = data_file_problem(os.path.join(folder, name))
            if why is not None:
                return name, why
    return None


def _name_version(name: str) -> int | None:
    """The format version a fragment folder's name ends with (`__t1_t2_uuid_v`), or None."""
    last = name.rsplit("_", 1)[-1]
    return int(last) if last.isdigit() and len(last) < 6 else None


def metadata_fields(folder: str, layout: Layout | None) -> tuple[list[int], dict[str, tuple[int, int]]]:
    """Where each generic tile of the fragment's metadata file starts, and where each footer field lies in it
    (offset, size), for a file that passes the check: what tests and the fuzzer change. Raises Corrupt."""
    with open(os.path.join(folder, METADATA_FILE), "rb") as fh:
        tiles, footer, start = _check_metadata(fh, os.fstat(fh.fileno()).st_size, folder, layout)
    return sorted(tiles), {what: (start + at, size) for what, (at, size) in footer.fields.items()}


def _check_metadata(fh: BinaryIO, size: int, folder: str, layout: Layout | None) -> tuple[set[int], Footer, int]:
    """Check the fragment's metadata file; its generic tiles' starts, its footer and where the footer starts."""
    if size < 8:
        raise Corrupt(f"holds {size} bytes, too few for a footer's length (truncated)")
    (length,) = struct.unpack("<Q", _read(fh, size - 8, 8))
    if length > size - 8:
        raise Corrupt(f"says its footer holds {length} bytes, but the file holds {size} (corrupt)")
    start = size - 8 - length
    tiles = set()
    at = 0
    while at < start:
        tiles.add(at)
        try:
            at = generic_tile(fh, at, start)
        except Corrupt as exc:
            raise Corrupt(str(exc), f"its generic tile at {at}") from None
    footer = Footer(_read(fh, start, length))
    footer.check(folder, layout, tiles)
    return tiles, footer, start


class Footer:
    """A fragment's metadata footer, read field by field; each read past its end is Corrupt."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0
        self.fields: dict[str, tuple[int, int]] = {}  # what -> (offset in the footer, size): where each field lies

    def take(self, size: int, what: str) -> bytes:
        if size > len(self.data) - self.at:
            raise Corrupt(f"has a footer whose {what} takes {size} bytes, past its {len(self.data)} (corrupt)")
        self.fields[what] = (self.at, size)
        out = self.data[self.at : self.at + size]
        self.at += size
        return out

    def u64(self, what: str) -> int:
        return struct.unpack("<Q", self.take(8, what))[0]

    def u64s(self, count: int, what: str) -> tuple[int, ...]:
        return struct.unpack(f"<{count}Q", self.take(8 * count, what))

    def check(self, folder: str, layout: Layout | None, tiles: set[int]) -> None:
        (version,) = struct.unpack("<I", self.take(4, "format version"))
        if version not in FOOTER_VERSIONS:
            raise Corrupt(f"has a footer of format version {version}, not its folder's (corrupt)")
        name = self.take(self.u64("array schema name's length"), "array schema name").decode("utf-8", "replace")
        if layout is None or name not in layout.names:
            return  # a schema not known here (another than the one read): the fields' sizes depend on it
        self.take(1, "dense flag")
        null_domain = self.take(1, "null non-empty domain flag") != b"\0"
        domain = self._non_empty_domain(layout, null_domain)
        sparse_tiles = self.u64("number of sparse tiles")
        last_cells = self.u64("last tile's cells")
        timestamps = self.take(1, "timestamps flag") != b"\0" if version >= 14 else False
        deletes = self.take(1, "delete flag") != b"\0" if version >= 15 else False
        attrs, dims = layout.attrs, len(layout.dims)
        fields = attrs + 1 + dims + timestamps + 2 * deletes
        sizes = self.u64s(fields, "file sizes")
        var_sizes = self.u64s(fields, "var file sizes")
        validity_sizes = self.u64s(fields, "validity file sizes")
        # The R-tree's; per field its tile offsets, var offsets, var sizes and validity offsets, and from version 11
        # its mins, maxs, sums and null counts; then the fragment's min, max, sum and null count (11), the processed
        # conditions (16).
        per_field = 8 if version >= 11 else 4
        offsets = self.u64s(1 + per_field * fields + (version >= 11) + (version >= 16), "generic tile offsets")
        if self.at != len(self.data):
            raise Corrupt(f"has a footer of {len(self.data)} bytes whose fields take {self.at} (corrupt)")
        on_disk = _sizes_fit(folder, _field_files(attrs, dims, timestamps, deletes), sizes, var_sizes, validity_sizes)
        if sparse_tiles > max(on_disk, default=0) // 8:
            raise Corrupt(f"says the fragment holds {sparse_tiles} sparse tiles, more than its data files can (corrupt)")
        most = max(layout.capacity, layout.tile_cells or 0)
        if last_cells > most:
            raise Corrupt(f"says its last tile holds {last_cells} cells, more than a tile's {most} (corrupt)")
        for offset in offsets:
            if offset not in tiles:
                raise Corrupt(f"has a footer naming a generic tile at {offset}, where none starts (corrupt)")
        _domain_fits(domain, layout)

    def _non_empty_domain(self, layout: Layout, null: bool) -> list[tuple[int, int] | None]:
        """Each dimension's non-empty range, where it is an integer one (None for the others, and when null)."""
        out: list[tuple[int, int] | None] = []
        fixed = all(size is not None for size in layout.dims)
        if null and fixed:  # zeros in the array's coordinate size, as TileDB writes them
            self.take(2 * sum(s or 0 for s in layout.dims), "null non-empty domain")
            return [None] * len(layout.dims)
        for d, (size, kind) in enumerate(zip(layout.dims, layout.dim_kinds, strict=True)):
            if size is None:
                length = self.u64(f"dimension {d}'s non-empty range length")
                first = self.u64(f"dimension {d}'s non-empty range start length")
                if first > length:
                    raise Corrupt(f"says dimension {d}'s range starts with {first} of its {length} bytes (corrupt)")
                self.take(length, f"dimension {d}'s non-empty range")
                out.append(None)
                continue
            raw = self.take(2 * size, f"dimension {d}'s non-empty range")
            if kind in "iu" and size in (1, 2, 4, 8):
                code = {1: "b", 2: "h", 4: "i", 8: "q"}[size]
                lo, hi = struct.unpack(f"<2{code if kind == 'i' else code.upper()}", raw)
                out.append((lo, hi))
            else:
                out.append(None)
        return out


def _sizes_fit(folder: str, names: list[str], *declared: tuple[int, ...]) -> list[int]:
    """Each data file's size as the footer says it (its values, its var-sized values, its validity) must be at most
    what the file holds: TileDB reads a file's last tile up to it. The sizes on disk."""
    on_disk = []
    for suffix, sizes in zip(("", "_var", "_validity"), declared, strict=True):
        for base, said in zip(names, sizes, strict=True):
            file = base + suffix + ".tdb"
            holds = _file_size(os.path.join(folder, file))
            on_disk.append(holds)
            if said > holds:
                raise Corrupt(f"says {file} holds {said} bytes, but it holds {holds} (corrupt)")
    return on_disk


def _domain_fits(domain: list[tuple[int, int] | None], layout: Layout) -> None:
    """Each integer dimension's non-empty range must lie inside the array's domain (TileDB counts tiles from it)."""
    for d, (lo_hi, bounds) in enumerate(zip(domain, layout.domains, strict=True)):
        if lo_hi is None or bounds is None:
            continue
        lo, hi = lo_hi
        if not bounds[0] <= lo <= hi <= bounds[1]:
            inside = f"{bounds[0]}..{bounds[1]}"
            raise Corrupt(f"says dimension {d} holds cells in {lo}..{hi}, outside the array's domain {inside} (corrupt)")


def _field_files(attrs: int, dims: int, timestamps: bool, deletes: bool) -> list[str]:
    """The data file names of a fragment's fields, in the footer's order: attributes, the zipped coordinates of old
    formats, dimensions, then the timestamps and delete metadata of consolidated fragments."""
    names = [f"a{i}" for i in range(attrs)] + ["__coords"] + [f"d{i}" for i in range(dims)]
    return names + ["t"] * timestamps + ["dt", "dcmh"] * deletes


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # no file: nothing can be read from it
        return 0
