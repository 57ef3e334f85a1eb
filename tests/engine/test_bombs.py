"""A decompression bomb in a chunk the engine's scan reads, whichever rule asks for it: a finding, bounded memory.

tests/codecs/test_codecs.py and friends prove each decode path of the node layer stops a bomb; these prove the
paths through the engine that used to decode on their own (--deep chunk decoding, hdmf-zarr reference
datasets, JSON-coded cached specifications) now reach the same bounded reader, end to end, in a fresh
process whose peak memory is measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bombs import LAUNCHER, nested, zlib_zeros

LIMIT_MB = 200
CHILD = """
import json, resource, sys
from spec_validate.cli import main
code = main([sys.argv[1], "--deep", "--format", "json", "--output", sys.argv[2], "--jobs", "2"])
print(json.dumps({"code": code, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_child(store: Path, tmp_path: Path) -> tuple[dict, dict]:
    out = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER, sys.executable, "-c", CHILD, str(store), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    status = json.loads(proc.stdout.strip().splitlines()[-1])
    report = json.loads(out.read_text())["reports"][0]
    results = {r["id"]: r for r in report["results"]}
    status["problems"] = {p["key"]: p["message"] for p in report["problems"]}
    return status, results


def bomb() -> bytes:
    """A chunk of a few KB that inflates, zlib inside zlib inside zlib, past 4 GB."""
    return nested(zlib_zeros(), 2)


def write(path: Path, rel: str, name: str, doc: dict) -> None:
    (path / rel).mkdir(parents=True, exist_ok=True)
    (path / rel / name).write_text(json.dumps(doc))


ZLIB = {"id": "zlib", "level": 1}
JSON2 = {
    "id": "json2",
    "allow_nan": True,
    "check_circular": True,
    "encoding": "utf-8",
    "ensure_ascii": True,
    "indent": None,
    "separators": [",", ":"],
    "skipkeys": False,
    "sort_keys": True,
    "strict": True,
}


def test_bombs_pass_deep_names_the_chunk_within_bounded_memory(tmp_path):
    store = tmp_path / "s.zarr"
    write(store, "", ".zgroup", {"zarr_format": 2})
    write(
        store,
        "x",
        ".zarray",
        {
            "zarr_format": 2,
            "shape": [8],
            "chunks": [4],
            "dtype": "<i8",
            "compressor": ZLIB,
            "fill_value": 0,
            "order": "C",
            "filters": [ZLIB],
        },
    )
    (store / "x" / "0").write_bytes(zlib.compress(zlib.compress(bytes(32))))
    (store / "x" / "1").write_bytes(bomb())
    status, results = run_child(store, tmp_path)
    deep = results["zarr.chunks.decoded-size"]
    assert deep["status"] == "failed" and [f["details"]["key"] for f in deep["findings"]] == ["1"]
    assert status["peak_mb"] < LIMIT_MB, status


@pytest.mark.parametrize("where", ["reference-dataset", "cached-specification"])
def test_bombs_pass_hdmf_zarr_json_datasets_within_bounded_memory(tmp_path, where):
    store = tmp_path / "s.nwb.zarr"
    write(store, "", ".zgroup", {"zarr_format": 2})
    write(
        store, "", ".zattrs", {".specloc": "specifications", "namespace": "core", "neurodata_type": "NWBFile", "object_id": "a"}
    )
    for rel in ("specifications", "specifications/core", "specifications/core/2.7.0", "general"):
        write(store, rel, ".zgroup", {"zarr_format": 2})
    scalar = {
        "zarr_format": 2,
        "shape": [1],
        "chunks": [1],
        "dtype": "|O",
        "compressor": ZLIB,
        "fill_value": None,
        "order": "C",
        "filters": [JSON2],
    }
    write(store, "specifications/core/2.7.0/namespace", ".zarray", scalar)
    write(store, "specifications/core/2.7.0/namespace", ".zattrs", {"zarr_dtype": "scalar"})
    spec = zlib.compress(json.dumps(["{}", "|O", [1]]).encode())
    (store / "specifications/core/2.7.0/namespace/0").write_bytes(bomb() if where == "cached-specification" else spec)
    write(store, "general/refs", ".zarray", {**scalar, "shape": [2], "chunks": [2]})
    write(store, "general/refs", ".zattrs", {"zarr_dtype": "object"})
    refs = zlib.compress(json.dumps([{"source": ".", "path": "/general"}] * 2 + ["|O", [2]]).encode())
    (store / "general/refs/0").write_bytes(bomb() if where == "reference-dataset" else refs)
    status, results = run_child(store, tmp_path)
    rule = "hdmf-zarr.reference.dataset-elements" if where == "reference-dataset" else "hdmf-zarr.specifications.json"
    node = "/general/refs" if where == "reference-dataset" else "/specifications/core/2.7.0/namespace"
    # The chunk that does not decode is a finding of its own (unreadable), and the clause names the node as not checked.
    if results[rule]["status"] not in ("failed", "error"):
        assert node in status["problems"], status["problems"]
        assert [u["path"] for u in results[rule]["unchecked"]] == [node], results[rule]
    assert results["zarr.chunks.decoded-size"]["status"] == "failed"
    assert status["peak_mb"] < LIMIT_MB, status
