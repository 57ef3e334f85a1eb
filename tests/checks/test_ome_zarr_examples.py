"""The examples the OME-Zarr specification ships (../shared/specs/ome-ngff/<version>/examples/) validate as their
`.config.json` says: each names the schema it conforms to, a `strict_*` schema adding the spec's SHOULDs.

An example is an attributes document, not a store: each is validated as one (`spec-validate example.json`, read by
spec_validate/nodes/attributes: 0.4 a group's `.zattrs`, 0.5 a whole `zarr.json`). The clauses about the hierarchy
(arrays the metadata names, wells, fields, label images) cannot be judged from one document: they come out not
checked, never passed or failed. Every example is expected to pass every other clause at MUST, and a strict one at
SHOULD too.
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
from spec_validate.nodes.attributes.tree import HIERARCHY_UNKNOWN

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


def without_comments(text: str) -> str:
    """The examples carry `//` comments "only for clarity" (the spec: comments MUST NOT be included in JSON)."""
    return re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE)


def document(example: Path, tmp_path: Path) -> Path:
    """The example as the JSON file it stands for, its comments taken out."""
    out = tmp_path / example.name
    out.write_text(json.dumps(json.loads(without_comments(example.read_text(encoding="utf-8")))), encoding="utf-8")
    return out


@pytest.mark.skipif(not SPECS.is_dir(), reason=f"{SPECS} not present")
@pytest.mark.parametrize("example", EXAMPLES, ids=[str(p.relative_to(SPECS)) for p in EXAMPLES])
def test_ome_zarr_example_passes_as_its_config_says(example, tmp_path):
    version = example.parents[2].name
    config = json.loads((example.parent / ".config.json").read_text(encoding="utf-8"))
    strict = Path(config["schema"]).name.startswith("strict_")
    # all_clauses: 0.4's bioformats2raw and series documents have no version key of their own, so a document of
    # them declares none (its legacy verdict is reported beside the clauses, and not asserted on here).
    report = spec_validate.validate(document(example, tmp_path), all_clauses=True)
    assert report.format == ("zarr-v3-attributes" if version == "0.5" else "zarr-v2-attributes")
    ours = [r for r in report.results if r.rule.pack == PACKS[version]]
    assert any(r.status is Status.PASSED for r in ours), "no clause of the pack was checked"
    hierarchy = _hierarchy_rules()
    judged = {r.rule.id: r.status for r in ours if r.rule.id in hierarchy and r.status in (Status.PASSED, Status.FAILED)}
    assert judged == {}, "a clause about the hierarchy was judged from one document"
    for r in ours:
        if r.status is Status.NOT_CHECKED:
            assert r.rule.id in hierarchy
            assert [(path, why) for path, why in r.unchecked] == [("/", HIERARCHY_UNKNOWN)]
    levels = (Level.MUST, Level.SHOULD) if strict else (Level.MUST,)
    failed = {r.rule.id: [f.message for f in r.findings] for r in ours if r.status is Status.FAILED and r.rule.level in levels}
    assert failed == {}
    assert not [r for r in ours if r.status is Status.ERROR]
