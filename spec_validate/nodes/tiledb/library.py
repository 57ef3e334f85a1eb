"""The TileDB backend's calls into libtiledb (through tiledb-py, imported on first use), each on a folder already
checked and each returning plain data: run in the reader process (`service.py`), where a crash of the library
ends that process and not the run, or in this one.

Every array is checked before TileDB opens it: its fragments' metadata against its schema (`fragments.py`). A
failure comes back as `Failure`, whose text is what the tree puts after the node's path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from spec_validate.nodes.base import describe, plain
from spec_validate.nodes.tiledb import fragments

# TileDB's own read budget is 10 GB, and a sparse query run to completion grows its buffers until every cell fits:
# reading a 5e7-value CXG held 2.8 GB. Every read here runs on a context of its own with a bounded budget instead,
# and sparse cells come in batches that fill fixed buffers (see `cell_batches`); an array whose tiles need more
# (TileDB loads a whole tile) is opened under a budget sized from its schema, up to MAX_READ_BUDGET.
READ_BUDGET = 64 * 2**20  # sm.mem.total_budget of a read
RESULT_BUFFER = 4 * 2**20  # py.init_buffer_bytes: each field's buffer for a batch of sparse cells
MAX_READ_BUDGET = 10 * 2**30  # TileDB's default: no array is refused that TileDB alone would read
_contexts: dict[tuple[int, bool], Any] = {}  # (budget, under a data limit) -> context


class Failure(Exception):
    """A read that failed, or was refused before TileDB was asked; the text follows the node's path in the report."""


def tiledb() -> Any:
    import tiledb as module

    return module


def _data_limit() -> int | None:
    """The process's data limit (--memory-limit sets RLIMIT_DATA), or None."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    except (ImportError, AttributeError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def read_budgets() -> tuple[int, int]:
    """(the budget a read starts with, the most any read may have). Under a data limit both fit it: an eighth of
    the limit to start with (TileDB's readers size their buffers from the budget), half of it at most."""
    limit = _data_limit()
    if limit is None:
        return READ_BUDGET, MAX_READ_BUDGET
    base = min(READ_BUDGET, max(32 * 2**20, limit // 8))
    return base, max(base, limit // 2)


def context(budget: int | None = None) -> Any:
    """A TileDB context whose reads stay within `budget` bytes (default: `read_budgets()[0]`), made once per budget.

    Under a data limit it runs two threads each for compute and I/O (their stacks count towards the limit).
    """
    budget = budget or read_budgets()[0]
    limited = _data_limit() is not None
    ctx = _contexts.get((budget, limited))
    if ctx is None:
        config = {
            "sm.mem.total_budget": str(budget),
            "sm.memory_budget": str(budget // 2),
            "sm.memory_budget_var": str(budget // 2),
            "py.init_buffer_bytes": str(RESULT_BUFFER),
        }
        if limited:
            config.update({"sm.compute_concurrency_level": "2", "sm.io_concurrency_level": "2"})
        module = tiledb()
        ctx = _contexts[budget, limited] = module.Ctx(module.Config(config))
    return ctx


def tile_bytes(schema: Any) -> int:
    """The most bytes one tile of one field of the array holds once decoded (a sparse array's tiles hold `capacity`
    cells; a dense array's, the product of its tile extents). A variable-sized field counts its offsets only."""
    if schema.sparse:
        cells = int(schema.capacity)
    else:
        cells = 1
        for dim in schema.domain:
            cells *= int(dim.tile) if dim.tile is not None else 1
    fields = [np.dtype(d.dtype) for d in schema.domain] + [np.dtype(a.dtype) for a in schema]
    widest = max((8 if f.kind in "SUO" else f.itemsize for f in fields), default=8)
    return cells * widest


def budget_for(tiles: int) -> int:
    """The read budget for an array whose largest tile holds `tiles` bytes: room for four such tiles (TileDB holds
    one per field it reads, and its readers split the budget), at least the starting budget, a power of two (arrays
    alike share a context), at most the most allowed."""
    base, most = read_budgets()
    need = max(base, 4 * tiles)
    return min(most, 1 << (need - 1).bit_length())


def over_budget(exc: BaseException) -> bool:
    """Whether TileDB refused a read for want of memory budget (a tile larger than it allows)."""
    return "budget" in str(exc)  # "...increase memory budget", "Unable to copy one tile with current budget/buffers"


def _meta(meta: Any) -> dict[str, Any]:
    # Metadata values that are JSON strings stay strings: the spec stores JSON text (cxg_schema) that way.
    return {str(k): plain(meta[k]) for k in sorted(meta.keys())}


# ---------------------------------------------------------------------------------------------------- groups


def group_meta(uri: str) -> dict[str, Any]:
    """The metadata of the group in the folder `uri` (of the group format of TileDB 2.8 and later)."""
    try:
        with tiledb().Group(uri, mode="r", ctx=context()) as group:
            return _meta(group.meta)
    except Exception as exc:
        raise Failure(f"the group's metadata cannot be read ({describe(exc)})") from None


def group_members(uri: str) -> list[tuple[str, str]]:
    """(name, URI) of each member the group in the folder `uri` names (its name: the last part of its URI if none)."""
    try:
        with tiledb().Group(uri, mode="r", ctx=context()) as group:
            return [(member.name or os.path.basename(member.uri.rstrip("/")), member.uri) for member in group]
    except Exception as exc:
        raise Failure(f"the group's members cannot be read ({describe(exc)})") from None


# ---------------------------------------------------------------------------------------------------- arrays

_checked: dict[str, str | None] = {}  # array folder -> why its fragments must not reach TileDB, or None


def layout(uri: str, schema: Any) -> fragments.Layout | None:
    """What the array's schema says of its fragments' footers, or None where it cannot say it."""
    try:
        names = frozenset(os.listdir(os.path.join(uri, "__schema")))
    except OSError:  # the layout before TileDB 2.4 (one __array_schema.tdb): fragments of versions not parsed here
        return None
    dims, domains, kinds = [], [], []
    for dim in schema.domain:
        dtype = np.dtype(dim.dtype)
        dims.append(None if dim.isvar else dtype.itemsize)
        kinds.append(dtype.kind)
        domains.append((int(dim.domain[0]), int(dim.domain[1])) if dtype.kind in "iu" else None)
    tile_cells = None
    if not schema.sparse:
        tile_cells = 1
        for dim in schema.domain:
            tile_cells *= int(dim.tile) if dim.tile is not None else 1
    return fragments.Layout(tuple(dims), tuple(domains), tuple(kinds), schema.nattr, int(schema.capacity), tile_cells, names)


def check(uri: str) -> None:
    """Raise Failure when the fragments of the array in the folder `uri` must not reach TileDB (checked once)."""
    if uri not in _checked:
        try:
            schema = tiledb().ArraySchema.load(uri, ctx=context())
        except Exception as exc:  # its schema files were checked first: TileDB refuses them for another reason
            raise Failure(f"cannot open TileDB array ({describe(exc)})") from None
        try:
            shape = layout(uri, schema)
        except (TypeError, ValueError, OverflowError):  # a schema no layout can be taken from: its footers' own sizes
            shape = None
        _checked[uri] = fragments.array_problem(uri, shape)
    why = _checked[uri]
    if why is not None:
        raise Failure(f"{why}; the array is not opened")


def open_array(uri: str, budget: int | None = None) -> Any:
    """The array in the folder `uri`, checked and opened read-only, its reads within `budget` bytes."""
    check(uri)
    try:
        return tiledb().open(uri, mode="r", ctx=context(budget))
    except Exception as exc:
        raise Failure(f"cannot open TileDB array ({describe(exc)})") from None


def array_info(uri: str) -> dict[str, Any]:
    """What the tree shows of the array in the folder `uri`: its schema's facts, metadata and non-empty domain."""
    array = open_array(uri)
    try:
        with array:
            return _info(array)
    except Failure:
        raise
    except Exception as exc:
        raise Failure(f"the array's schema or metadata cannot be read ({describe(exc)})") from None


def _info(array: Any) -> dict[str, Any]:
    schema = array.schema
    dims = [
        {"name": d.name, "dtype": np.dtype(d.dtype).str, "domain": [plain(v) for v in d.domain], "tile": plain(d.tile)}
        for d in schema.domain
    ]
    attrs = [{"name": a.name, "dtype": np.dtype(a.dtype).str} for a in schema]
    first = schema.attr(0) if schema.nattr else None
    string = None
    if first is not None and np.dtype(first.dtype).kind in "SU":
        # TileDB stores var-sized strings as UTF-8 (or ASCII) bytes; fixed-size ones as cell_val_num bytes.
        charset = "ascii" if np.dtype(first.dtype).kind == "S" else "utf-8"
        string = ("variable" if first.isvar else "fixed", charset, np.dtype(first.dtype).str)
    try:
        nonempty = array.nonempty_domain()
    except Exception:
        nonempty = ()
    fills = {a.name: a.fill for a in schema}
    try:
        tiles = tile_bytes(schema)
    except (TypeError, ValueError, OverflowError):  # extents no number can take: the starting budget
        tiles = 0
    return {
        "tiles": tiles,
        "string": string,
        "sparse": bool(schema.sparse),
        "dims": dims,
        "attrs": attrs,
        "dtype": np.dtype(schema.attr(0).dtype).str if schema.nattr else None,
        "meta": _meta(array.meta),
        "nonempty": nonempty,
        "fills": fills,
    }


def cell_count(uri: str) -> int:
    """The cells the fragments of the array in `uri` hold, as their metadata says; 0 where it does not say."""
    check(uri)
    try:
        return int(sum(tiledb().array_fragments(uri, ctx=context()).cell_num))
    except Exception:  # an old layout without fragment info: the count is not known before reading
        return 0


# ----------------------------------------------------------------------------------------------------- scans


def cell_batches(array: Any, attrs: list[str], dims: list[str], lo: Any, hi: Any) -> Iterator[Mapping[str, Any]]:
    """The cells of a sparse array whose first coordinate lies in lo..hi, a batch at a time as TileDB returns them
    (an incomplete query: each batch fills TileDB-Py's result buffers, `py.init_buffer_bytes`, and no more).

    Run to completion instead, a query grows its buffers until every cell fits: a sparse array's rows say nothing of
    how many cells they hold, so a row block sized by elements could hold the whole array.
    """
    yield from array.query(attrs=attrs, dims=dims, return_incomplete=True).multi_index[lo:hi]


def _query(spec: tuple) -> Callable[[Any], Iterator[Any]]:
    """The query a scan's `spec` names: ("dense", attr, lo, hi) or ("cells", attrs, dims, lo, hi)."""
    if spec[0] == "dense":
        _, attr, lo, hi = spec
        return lambda array: iter([array.query(attrs=[attr])[lo : hi + 1]])
    _, attrs, dims, lo, hi = spec
    return lambda array: cell_batches(array, list(attrs), list(dims), lo, hi)


def _plain_batch(result: Any) -> Any:
    """A batch as an ndarray, or a dict of them by field (tiledb-py returns an OrderedDict for several fields)."""
    if isinstance(result, Mapping):
        return {str(k): np.asarray(v) for k, v in result.items()}
    return np.asarray(result)


class Scan:
    """An array open for reading under a budget; a query TileDB refuses for want of budget before its first batch is
    run again with the array reopened under four times the budget, up to the most allowed."""

    def __init__(self, uri: str, budget: int) -> None:
        self.uri, self.budget = uri, budget
        self.array = open_array(uri, budget)
        self.results: Iterator[Any] | None = None
        self.ahead: Any = None  # the next batch, or the Failure reading it, when read ahead

    def first(self, spec: tuple) -> Any | None:
        """The first batch of the query `spec` (None: no cells); later ones come from `next`. Raises Failure."""
        query = _query(spec)
        most = read_budgets()[1]
        self.ahead = None
        while True:
            self.results = None
            try:
                results = iter(query(self.array))
                result = next(results, None)
                break
            except Exception as exc:
                if not over_budget(exc) or self.budget >= most:
                    raise Failure(describe(exc)) from None
            self.array.close()
            self.budget = min(most, self.budget * 4)
            self.array = open_array(self.uri, self.budget)
        if result is None:
            return None
        self.results = results
        return _plain_batch(result)

    def next(self) -> Any | None:
        """The query's next batch (read ahead by `prefetch`, if it was), None after its last. Raises Failure."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            if isinstance(ahead, Failure):
                raise ahead
            return ahead
        if self.results is None:
            return None
        try:
            result = next(self.results, None)
        except Exception as exc:
            self.results = None
            raise Failure(describe(exc)) from None
        if result is None:
            self.results = None
            return None
        return _plain_batch(result)

    def prefetch(self) -> None:
        """Read the next batch now, while the one before it is being used: the reader process does so after each
        reply, so TileDB decodes while the run's kernels work."""
        if self.ahead is None and self.results is not None:
            try:
                self.ahead = self.next()
            except Failure as exc:
                self.ahead = exc

    def close(self) -> None:
        self.results = self.ahead = None
        self.array.close()
