"""The examples the OME-Zarr specification ships (../shared/specs/ome-ngff/<version>/examples/) validate as their
`.config.json` says: each names the schema it conforms to, a `strict_*` schema adding the spec's SHOULDs.

An example is an attributes document, not a store: each is put in a one-group store (0.4: `.zattrs`; 0.5: the
example is a whole `zarr.json`) and validated. The clauses about the hierarchy (arrays the metadata names, wells,
fields, label images) cannot hold in a one-group store: they are left out here, as not checked. Every example is
expected to pass every other clause at MUST, and a strict one at SHOULD too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import spec_validate
from spec_validate.checks.registry import get
from spec_validate.engine.loader import builtin_packs
from spec_validate.model import Level, Status

SPECS = Path(__file__).resolve().parents[3] / "shared" / "specs" / "ome-ngff"
PACKS = {"0.4": "ome-zarr04", "0.5": "ome-zarr05"}
EXAMPLES = sorted(p for v in PACKS for p in (SPECS / v / "examples").glob("*/*.json") if p.name != ".config.json")


def _hierarchy_rules() -> set[str]:
    """The rules whose primitives read other nodes than the group's own metadata (the arrays, wells and fields)."""
    rules = set()
    for pack in builtin_packs():
        if pack.name in PACKS.values():
            rules |= {r.id for r in pack.rules if not all(get(s.primitive).own_metadata_only for s in r.check)}
    return rules


def _without_comments(text: str) -> str:
    """The examples carry `//` comments "only for clarity" (the spec: comments MUST NOT be included in JSON)."""
    return re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE)


def _store(example: Path, version: str, tmp_path: Path) -> Path:
    doc = json.loads(_without_comments(example.read_text(encoding="utf-8")))
    store = tmp_path / f"{example.stem}.zarr"
    store.mkdir()
    if version == "0.5":
        (store / "zarr.json").write_text(json.dumps(doc))
    else:
        (store / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
        (store / ".zattrs").write_text(json.dumps(doc))
    return store


@pytest.mark.skipif(not SPECS.is_dir(), reason=f"{SPECS} not present")
@pytest.mark.parametrize("example", EXAMPLES, ids=[str(p.relative_to(SPECS)) for p in EXAMPLES])
def test_ome_zarr_example_passes_as_its_config_says(example, tmp_path):
    version = example.parents[2].name
    config = json.loads((example.parent / ".config.json").read_text(encoding="utf-8"))
    strict = Path(config["schema"]).name.startswith("strict_")
    # all_clauses: 0.4's bioformats2raw and series documents have no version key of their own, so a one-group store
    # of them declares none (its legacy verdict is reported beside the clauses, and not asserted on here).
    report = spec_validate.validate(_store(example, version, tmp_path), all_clauses=True)
    hierarchy = _hierarchy_rules()
    ours = [r for r in report.results if r.rule.pack == PACKS[version] and r.rule.id not in hierarchy]
    assert any(r.status is Status.PASSED for r in ours), "no clause of the pack was checked"
    levels = (Level.MUST, Level.SHOULD) if strict else (Level.MUST,)
    failed = {r.rule.id: [f.message for f in r.findings] for r in ours if r.status is Status.FAILED and r.rule.level in levels}
    assert failed == {}
    assert not [r for r in ours if r.status is Status.ERROR]
