"""The vocabulary of era and writer detection: what a detector finds, and how version specifiers compare."""

from __future__ import annotations

import re
from typing import NamedTuple


class WriterMark(NamedTuple):
    """A writer the store shows, for one role."""

    name: str  # as packs name writers in `writers:` ("zarr-python", "anndata", "SeuratDisk", ...)
    versions: str  # a PEP 440 specifier the evidence allows ("" when it says nothing about the version)
    role: str  # the layer it wrote: "zarr", "anndata", "mudata", "h5seurat", "hdmf-zarr", "cxg"
    evidence: str

    @property
    def label(self) -> str:
        return f"{self.name} {self.versions}".strip()


class Era(NamedTuple):
    """The era of the layout found at one node (a scope root): which version of the format it follows."""

    family: str  # "anndata", "h5seurat", "hdmf-zarr", "cxg"
    path: str  # the node it describes ("/", or "/mod/rna" in a MuData file)
    id: str  # what packs' `legacy.eras` name: "anndata-pre-0.7", "anndata-0.7", "anndata-0.8", "cxg-0.2.0", ...
    label: str  # for people: "anndata < 0.7 (obs/var as HDF5 compound datasets)"
    evidence: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------ versions
_CLAUSE = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*v?(\d+(?:\.\d+)*)\s*\Z")
_SERIES = re.compile(r"\s*v?(\d+(?:\.\d+)*)\.x\s*\Z")  # "2.x": every 2 release
_COMMENT = re.compile(r"\s*\([^()]*\)\s*\Z")  # a note's words about the versions: "2.x (early fixtures)"


def _interval(spec: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """[low, high) of a simple specifier ("<0.8", ">=0.7,<0.8", "==0.1.86") or a release series ("2.x"), a
    trailing parenthesis of words ignored; None when it is not one."""
    spec = _COMMENT.sub("", spec).strip()
    if not spec:
        return None
    series = _SERIES.match(spec)
    if series is not None:
        v = tuple(int(x) for x in series.group(1).split("."))
        return v, v[:-1] + (v[-1] + 1,)
    low: tuple[int, ...] = ()
    high: tuple[int, ...] = (10**9,)
    for part in spec.split(","):
        m = _CLAUSE.match(part)
        if m is None:
            return None
        op, v = m.group(1), tuple(int(x) for x in m.group(2).split("."))
        if op == ">=":
            low = max(low, v)
        elif op == ">":
            low = max(low, v + (1,))
        elif op == "<":
            high = min(high, v)
        elif op == "<=":
            high = min(high, v + (10**9,))
        elif op == "==":
            low, high = max(low, v), min(high, v + (10**9,))
        else:  # "!=" narrows nothing worth comparing
            continue
    return low, high


def overlap(a: str, b: str) -> bool:
    """Whether two version specifiers can hold the same version; True when either is not a simple specifier."""
    ia, ib = _interval(a), _interval(b)
    if ia is None or ib is None:
        return True
    return _pad(ia[0]) < _pad(ib[1]) and _pad(ib[0]) < _pad(ia[1])


def _pad(v: tuple[int, ...]) -> tuple[int, ...]:
    return v + (0,) * (6 - len(v))
