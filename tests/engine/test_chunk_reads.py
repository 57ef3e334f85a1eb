"""Every data read is in the engine's scan: each stored chunk is read at most once per run, on the scan threads.

The hdmf-zarr reference datasets (read by two rules), the cached specifications (JSON-coded scalars) and
--deep chunk decoding used to read chunks inside primitives, serially and more than once; now they are
kernels on the array's one pass. These tests count the reads at the key/value layer.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

import spec_validate
from spec_validate.engine.scan import ThreadScanner
from spec_validate.storage.keyvalue import DirectoryStore

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"
# Metadata documents, not chunks: Zarr's own, and netcdf-c's NCZarr documents, which the provenance detection
# looks for (spec_validate/engine/provenance/zarr.py) to tell a netcdf-c store.
DOCUMENTS = {".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json", ".nczarr", ".nczgroup", ".nczarray", ".nczattrs"}


def _cases() -> list:
    out = []
    for manifest in sorted(CORPUS.glob("*/manifest.yaml")):
        for case in yaml.safe_load(manifest.read_text(encoding="utf-8")) or []:
            if case["case"].startswith("hdmf-zarr/") or case.get("deep"):
                out.append(pytest.param(CORPUS / case["file"], id=case["case"]))
    return out


class ChunkReads:
    """Records (key, thread) for every chunk key a DirectoryStore is asked for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay: float = 0.0) -> None:
        self.reads: list[tuple[str, int]] = []
        self._lock = threading.Lock()
        original = DirectoryStore.get_bounded

        def get_bounded(store: DirectoryStore, key: str, limit: int) -> bytes | None:
            if key.rsplit("/", 1)[-1] not in DOCUMENTS:
                with self._lock:
                    self.reads.append((key, threading.get_ident()))
                if delay:
                    time.sleep(delay)  # keeps a read in flight long enough for the other thread to take a block
            return original(store, key, limit)

        monkeypatch.setattr(DirectoryStore, "get_bounded", get_bounded)

    def per_key(self) -> Counter:
        return Counter(key for key, _ in self.reads)


@pytest.mark.parametrize("path", _cases())
def test_chunk_reads_pass_each_stored_chunk_read_at_most_once(path, monkeypatch):
    reads = ChunkReads(monkeypatch)
    spec_validate.validate(path, deep=True, jobs=2)
    assert reads.reads, "the case reads some chunk"
    assert {key: n for key, n in reads.per_key().items() if n > 1} == {}


def test_chunk_reads_pass_on_two_scan_threads(monkeypatch):
    path = CORPUS / "hdmf-zarr" / "zarr-v2" / "valid-every-element.nwb.zarr"
    if not path.exists():
        path = next(p.values[0] for p in _cases() if "valid" in p.id)
    reads = ChunkReads(monkeypatch, delay=0.05)
    # Blocks of at most 64 elements: none is small enough to be joined with others into one task (see
    # scan._batched), so each is a task of its own and the two threads share them.
    spec_validate.validate(path, deep=True, scanner=ThreadScanner(2, 64))
    threads = {thread for _, thread in reads.reads}
    assert threading.get_ident() not in threads  # no chunk is read by the primitives, on the calling thread
    assert len(threads) == 2
