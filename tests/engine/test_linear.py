"""No check is worse than linear in the number of columns, group members or chunks: every built-in pack that applies
is run on AnnData Zarr stores (v2 and v3) held in memory, with 1,000 and with 32,000 obs columns (and as many chunks
in one array), and the work is counted, not timed: name comparisons, store reads and listings, rule evaluations.

Column and chunk names are a str subclass that counts its comparisons, so a check comparing every name with every
other (`list.count` or `in` on a list, for each entry) shows as 32x more comparisons per column at 32,000 than at
1,000; a linear one does as many per column at both sizes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from counting_names import CountingName

from spec_validate.engine import run
from spec_validate.engine.loader import builtin_packs, packs_to_run
from spec_validate.engine.rule_selection import Selection
from spec_validate.nodes.zarr.tree import ZarrTree
from spec_validate.storage.keyvalue import KeyValueStore

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus" / "anndata"
TEMPLATES = {2: CORPUS / "zarr-v2" / "valid-every-element.zarr", 3: CORPUS / "zarr-v3" / "valid-every-element.zarr"}
SMALL, LARGE = 1_000, 32_000
CATEGORICAL_EVERY = 100  # one column in 100 is categorical (a group of codes and categories), the others float
# Work per column may grow by at most this factor from 1,000 to 32,000 columns: sorting names (n log n) grows by
# 1.5; a check comparing each name with each other would grow by 32.
MAX_GROWTH = 2.0
ENCODED = {"encoding-type": "array", "encoding-version": "0.2.0"}


class MemoryStore(KeyValueStore):
    """A Zarr store in a dict; listings name folders and keys with CountingName; reads and listings are counted."""

    def __init__(self, values: dict[str, bytes]) -> None:
        self.location = "<memory>"
        self.values = values
        self.reads = 0
        self.listings = 0
        children: dict[str, tuple[set[str], set[str]]] = {"": (set(), set())}
        for key in values:
            parts = key.split("/")
            for depth in range(len(parts)):
                prefix = "/".join(parts[:depth])
                files, dirs = children.setdefault(prefix, (set(), set()))
                (files if depth == len(parts) - 1 else dirs).add(parts[depth])
        self._children = {
            p: (sorted(map(CountingName, files)), sorted(map(CountingName, dirs))) for p, (files, dirs) in children.items()
        }

    def get(self, key: str) -> bytes | None:
        self.reads += 1
        return self.values.get(key)

    def stored(self, key: str) -> bool:
        return key in self.values

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        self.listings += 1
        files, dirs = self._children.get(prefix, ([], []))
        return list(files), list(dirs)


def _read_store(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def wide_store(version: int, columns: int) -> dict[str, bytes]:
    """The corpus's valid AnnData store with `columns` more obs columns, in its column-order and its consolidated
    metadata, and an array of `columns` chunks in uns."""
    values = _read_store(TEMPLATES[version])
    document = ".zarray" if version == 2 else "zarr.json"
    templates = {t: [(k[len(t) + 5 :], v) for k, v in values.items() if k.startswith(f"obs/{t}/")] for t in ("cat", "float")}
    names = []
    for i in range(columns):
        template, name = ("cat", f"c{i:05d}") if i % CATEGORICAL_EVERY == 0 else ("float", f"f{i:05d}")
        names.append(name)
        for rest, value in templates[template]:
            values[f"obs/{name}/{rest}"] = value
    # One array of as many chunks as columns, each one value.
    if version == 2:
        meta = {"shape": [columns], "chunks": [1], "dtype": "<f8", "fill_value": 0.0, "order": "C", "filters": None,
                "compressor": None, "zarr_format": 2}  # fmt: skip
        chunk_key = "{}"
        values["uns/many_chunks/.zattrs"] = json.dumps(ENCODED).encode()
    else:
        meta = {"shape": [columns], "data_type": "float64", "fill_value": 0.0, "zarr_format": 3, "node_type": "array",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": ENCODED}  # fmt: skip
        chunk_key = "c/{}"
    values[f"uns/many_chunks/{document}"] = json.dumps(meta).encode()
    for i in range(columns):
        values[f"uns/many_chunks/{chunk_key.format(i)}"] = bytes(8)
    _set_column_order(values, version, names)
    _consolidate(values, version)
    return values


def _set_column_order(values: dict[str, bytes], version: int, names: list[str]) -> None:
    key = "obs/.zattrs" if version == 2 else "obs/zarr.json"
    doc = json.loads(values[key])
    attrs = doc if version == 2 else doc["attributes"]
    attrs["column-order"] = attrs["column-order"] + names
    values[key] = json.dumps(doc).encode()


def _consolidate(values: dict[str, bytes], version: int) -> None:
    """Consolidated metadata equal to the stored documents, as zarr writes it."""
    if version == 2:
        docs = {k: json.loads(v) for k, v in values.items() if k.rpartition("/")[2] in (".zarray", ".zgroup", ".zattrs")}
        values[".zmetadata"] = json.dumps({"metadata": docs, "zarr_consolidated_format": 1}).encode()
        return
    root = json.loads(values["zarr.json"])
    entries = {k[: -len("/zarr.json")]: json.loads(v) for k, v in values.items() if k.endswith("/zarr.json")}
    old = root["consolidated_metadata"]["metadata"]
    for path, doc in entries.items():  # nested groups carry the empty marker zarr-python writes
        if path in old and "consolidated_metadata" in old[path]:
            doc["consolidated_metadata"] = old[path]["consolidated_metadata"]
        elif doc.get("node_type") == "group" and any("consolidated_metadata" in e for e in old.values()):
            doc["consolidated_metadata"] = next(e["consolidated_metadata"] for e in old.values() if "consolidated_metadata" in e)
    root["consolidated_metadata"]["metadata"] = entries
    values["zarr.json"] = json.dumps(root).encode()


def work(version: int, columns: int, monkeypatch) -> dict[str, int]:
    """The work of one run of every built-in pack that applies: comparisons, store reads and listings, evaluations."""
    store = MemoryStore(wide_store(version, columns))
    evaluations = 0
    advance = run._advance

    def counted(ev, *args):
        nonlocal evaluations
        evaluations += 1
        advance(ev, *args)

    monkeypatch.setattr(run, "_advance", counted)
    CountingName.comparisons = 0
    done = run.evaluate(ZarrTree(store, version), packs_to_run(builtin_packs(), []), Selection())
    failed = [r.rule.id for r in done.results if r.status.value in ("failed", "error")]
    assert not failed, failed  # a valid store: every check ran to its end
    return {"comparisons": CountingName.comparisons, "reads": store.reads, "listings": store.listings, "evaluations": evaluations}


@pytest.mark.parametrize("version", [2, 3])
def test_no_check_is_worse_than_linear_in_columns_members_and_chunks(version, monkeypatch):
    small = work(version, SMALL, monkeypatch)
    large = work(version, LARGE, monkeypatch)
    for what in small:
        assert small[what] > 0, what  # the count is not vacuous
        growth = (large[what] / LARGE) / (small[what] / SMALL)
        assert growth <= MAX_GROWTH, f"{what}: {small[what]} at {SMALL} columns, {large[what]} at {LARGE}"


def test_a_quadratic_check_would_be_seen(monkeypatch):
    # The comparisons counted are those a check makes: one comparing each listed column with the list grows by 32.
    names = [CountingName(f"c{i}") for i in range(2_000)]
    CountingName.comparisons = 0
    _ = [names.count(n) for n in names[:100]]
    per_name_small = CountingName.comparisons / 100
    CountingName.comparisons = 0
    big = names * 16
    _ = [big.count(n) for n in big[:100]]
    assert CountingName.comparisons / 100 >= 16 * per_name_small
