"""Measure which reader versions open which files, and write compat/matrix.json.

    python compat/measure.py                      # every reader, every case
    python compat/measure.py --reader anndata     # only anndata (all versions), merged into the existing matrix
    python compat/measure.py --reader zarr-python@3.1.6 --cases 'conformance-corpus/zarr/*'

Each reader release runs compat/probe.py in its own venv (compat/.venvs/, built on first use). Nothing here imports
spec_validate: the matrix is a measurement of the readers, independent of the validator's opinion of the files.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import subprocess
import sys
import time
import zipfile
from datetime import date
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from readers import READERS, Reader  # compat/ is a folder of scripts, not a package: imported by path
from venvs import ensure, frozen

COMPAT = Path(__file__).resolve().parent
REPO = COMPAT.parent
CONFORMANCE = REPO / "conformance-corpus"
PUBLIC = Path(os.environ.get("COMPAT_PUBLIC_CORPUS", "/work/shared/corpus-public"))
HELDBACK = COMPAT / "heldback" / "files"
MATRIX = COMPAT / "matrix.json"
PROBE = COMPAT / "probe.py"

# The public corpus folders tests/test_corpus.py enumerates, in its order (its public_items()).
PUBLIC_FOLDERS = ("anndata-h5ad", "anndata-zarr", "mudata", "zarr-v2", "h5seurat", "cxg", "nwb-zarr")
OUTCOMES = ("opened", "wrong-values", "refused", "crashed", "timeout")


# ---------------------------------------------------------------------------------------------------------------
# Cases


_V2_DOCUMENTS = (".zgroup", ".zarray", ".zattrs")


def _zarr_version_of(names: list[str]) -> int:
    """3 when the store's root holds zarr.json, 2 when it holds a v2 document; a store with neither at its root (arrays
    written without a root group) is what the documents below its root are: v3 when they are zarr.json only."""
    root = {n for n in names if "/" not in n}
    if "zarr.json" in root:
        return 3
    if root & set(_V2_DOCUMENTS):
        return 2
    leaves = {n.rsplit("/", 1)[-1] for n in names}
    return 3 if "zarr.json" in leaves and not leaves & set(_V2_DOCUMENTS) else 2


def _zarr_version(path: Path) -> int:
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            return _zarr_version_of([n.rstrip("/") for n in z.namelist()])
    if (path / "zarr.json").is_file():
        return 3
    names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.name == "zarr.json" or p.name in _V2_DOCUMENTS]
    return _zarr_version_of(names)


def case_format(path: Path, family: str) -> str:
    """The coarse format of a case, from its suffix and the folder it comes from (family: anndata, zarr, mudata,
    nwb, ome, or empty where the suffix decides)."""
    name = path.name.lower()
    if name.endswith(".h5ad"):
        return "anndata-h5ad"
    if name.endswith(".h5seurat"):
        return "h5seurat"
    if name.endswith(".h5mu"):
        return "mudata-h5mu"
    if name.endswith(".cxg"):
        return "cxg"
    version = _zarr_version(path)
    if family == "ome":
        return "ome-zarr-0.4" if version == 2 else "ome-zarr-0.5"
    if family == "nwb":
        return "nwb-zarr"
    if family in ("anndata", "mudata"):
        return f"{family}-zarr-v{version}"
    return f"zarr-v{version}"


_CONFORMANCE_FAMILY = {"anndata": "anndata", "zarr": "zarr", "h5seurat": "", "hdmf-zarr": "nwb", "ome-zarr": "ome", "cxg": ""}
_PUBLIC_FAMILY = {"anndata-h5ad": "anndata", "anndata-zarr": "anndata", "mudata": "mudata", "zarr-v2": "zarr", "h5seurat": "",
                  "cxg": "", "nwb-zarr": "nwb"}  # fmt: skip


def conformance_cases() -> dict[str, dict]:
    cases = {}
    for manifest in sorted(CONFORMANCE.glob("*/manifest.yaml")):
        folder = manifest.parent.name
        if folder == "hostile":  # hostile inputs test the validator's defences; nobody opens them on purpose
            continue
        for entry in yaml.safe_load(manifest.read_text()) or ():
            path = CONFORMANCE / entry["file"]
            cases[f"conformance-corpus/{entry['file']}"] = {
                "path": str(path),
                "format": case_format(path, _CONFORMANCE_FAMILY[folder]),
                "source": "conformance-corpus",
            }
    return cases


def public_cases() -> dict[str, dict]:
    cases = {}
    for folder in PUBLIC_FOLDERS:
        base = PUBLIC / folder
        for p in sorted(base.iterdir()) if base.is_dir() else ():
            children = sorted(p.iterdir()) if p.name.startswith("written-by-") else [p]
            for c in children:
                if c.name.startswith("."):
                    continue
                family = _PUBLIC_FAMILY[folder]
                cases[f"corpus-public/{c.relative_to(PUBLIC)}"] = {
                    "path": str(c),
                    "format": case_format(c, family),
                    "source": "corpus-public",
                }
    return cases


def heldback_cases() -> dict[str, dict]:
    cases = {}
    for p in sorted(HELDBACK.iterdir()) if HELDBACK.is_dir() else ():
        if p.name.startswith("."):
            continue
        family = "anndata" if p.name.startswith("anndata-") else "zarr"
        cases[f"compat/heldback/files/{p.name}"] = {"path": str(p), "format": case_format(p, family), "source": "held-back"}
    return cases


def all_cases() -> dict[str, dict]:
    return {**conformance_cases(), **public_cases(), **heldback_cases()}


# ---------------------------------------------------------------------------------------------------------------
# Running the probe


def tried_on(reader: Reader, case: dict) -> bool:
    if case["format"] not in reader.formats:
        return False
    # tensorstore and the OME-Zarr readers take a folder; zipped stores are tried by anndata and zarr-python only.
    return not (case["path"].endswith(".zip") and reader.name not in ("anndata", "zarr-python", "zarrs"))


def probe(reader: Reader, python: Path, cases: dict[str, dict]) -> dict[str, dict]:
    items = [{"case": cid, "path": c["path"], "format": c["format"]} for cid, c in sorted(cases.items())]
    cmd = ["nice", "-n", "5", str(python), str(PROBE), reader.name]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=COMPAT)
    proc.stdin.write(json.dumps(items))
    proc.stdin.close()
    results = {}
    for line in proc.stdout:
        r = json.loads(line)
        results[r.pop("case")] = r
        if len(results) % 50 == 0:
            print(f"  {reader.key}: {len(results)}/{len(items)}", flush=True)
    if proc.wait() != 0:
        raise RuntimeError(f"probe.py exited with {proc.returncode} for {reader.key}")
    return results


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.replace("-", ".").split("."))


def mark_wrong_values(matrix: dict) -> None:
    """An `opened` whose digest differs from the newest release of the same reader that opened the case reads
    different values from the same bytes: that is `wrong-values` (assuming the newest release reads them right)."""
    by_name: dict[str, list[str]] = {}
    for key, info in matrix["readers"].items():
        by_name.setdefault(info["reader"], []).append(key)
    for keys in by_name.values():
        keys.sort(key=lambda k: _version_key(matrix["readers"][k]["version"]), reverse=True)
        cases = {c for k in keys for c in matrix["results"].get(k, {})}
        for case in cases:
            reference = None
            for k in keys:
                r = matrix["results"].get(k, {}).get(case)
                if r is None or r["outcome"] not in ("opened", "wrong-values") or r["digest"] is None:
                    continue  # a wrong-values from the probe itself (no digest: two reads differed) stays as it is
                if reference is None:
                    reference = (k, r["digest"])
                    r.update(outcome="opened", error=None)
                elif r["digest"] != reference[1]:
                    r.update(outcome="wrong-values", error=f"read values differ from {reference[0]}'s")
                else:
                    r.update(outcome="opened", error=None)


def summary(matrix: dict) -> str:
    rows = [f"{'reader':28} {'cases':>6} " + " ".join(f"{o:>12}" for o in OUTCOMES)]
    for key in sorted(matrix["results"]):
        results = matrix["results"][key].values()
        counts = [sum(1 for r in results if r["outcome"] == o) for o in OUTCOMES]
        rows.append(f"{key:28} {len(results):>6} " + " ".join(f"{n:>12}" for n in counts))
    return "\n".join(rows)


def _selected(reader: Reader, names: list[str]) -> bool:
    return not names or reader.name in names or reader.key in names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reader", action="append", default=[], help="reader name or name@version (repeatable)")
    parser.add_argument("--cases", action="append", default=[], help="glob over case ids (repeatable)")
    args = parser.parse_args(argv)
    started = time.monotonic()

    cases = all_cases()
    if args.cases:
        cases = {cid: c for cid, c in cases.items() if any(fnmatch.fnmatch(cid, g) for g in args.cases)}
    readers = [r for r in READERS if _selected(r, args.reader)]
    if not readers:
        parser.error(f"no reader matches {args.reader}")
    print(f"{len(cases)} cases, {len(readers)} readers", flush=True)

    matrix = json.loads(MATRIX.read_text()) if MATRIX.is_file() else {"readers": {}, "cases": {}, "results": {}}
    listed = {cid: {"format": c["format"], "source": c["source"]} for cid, c in cases.items()}
    matrix["cases"] = {**matrix["cases"], **listed} if args.cases else listed
    failed = []
    for reader in readers:
        t0 = time.monotonic()
        try:
            python = ensure(reader)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"{reader.key}: could not build its venv, not measured\n{exc}", flush=True)
            failed.append(reader.key)
            continue
        mine = {cid: c for cid, c in cases.items() if tried_on(reader, c)}
        results = probe(reader, python, mine)
        matrix["readers"][reader.key] = {
            "reader": reader.name,
            "version": reader.version,
            "python": platform_python(python),
            "packages": frozen(reader),
            "formats": sorted(reader.formats),
        }
        if args.cases:  # a partial run refreshes the cases it ran and keeps the rest
            matrix["results"].setdefault(reader.key, {}).update(results)
        else:
            matrix["results"][reader.key] = results
        print(f"{reader.key}: {len(results)} cases in {time.monotonic() - t0:.0f} s", flush=True)

    mark_wrong_values(matrix)
    matrix["measured"] = date.today().isoformat()
    matrix["machine"] = {"platform": platform.platform(), "cpu_count": os.cpu_count()}
    MATRIX.write_text(json.dumps(matrix, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(summary(matrix))
    print(f"done in {time.monotonic() - started:.0f} s; wrote {MATRIX.relative_to(REPO)}")
    if failed:
        print(f"not measured (venv failed): {', '.join(failed)}")
    return 1 if failed else 0


def platform_python(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
