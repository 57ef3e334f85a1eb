"""The validated-pack cache: same packs as a fresh load, no YAML or jsonschema on a hit, never trusted blindly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from validator.engine import loader, pack_cache
from validator.errors import PackError

PACK = """
spec: {name: mine, title: My pack, version: "1.0", source: mine.md}
rules:
  - id: mine.x.present
    level: MUST
    clause: The group MUST contain X.
    section: Groups
    spec_version: "1.0"
    applies_to: {kind: group, root: true}
    check:
      - child_present: {names: [X]}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SPEC_VALIDATE_CACHE_DIR", str(folder))
    monkeypatch.delenv("SPEC_VALIDATE_NO_CACHE", raising=False)
    return folder


def entries(folder: Path) -> list[Path]:
    return sorted((folder / "packs").glob("*.json")) if (folder / "packs").is_dir() else []


def test_pack_cache_passes_hit_gives_the_same_pack(cache, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    first = loader.load_pack(path)
    assert len(entries(cache)) == 1
    again = loader.load_pack(path)
    assert again == first


def test_pack_cache_passes_edited_pack_is_validated_again(cache, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    loader.load_pack(path)
    path.write_text(PACK.replace("child_present: {names: [X]}", "child_present: {names: [X], bogus: 1}"))
    with pytest.raises(PackError, match="unknown option"):
        loader.load_pack(path)


def test_pack_cache_passes_damaged_entry_is_ignored_and_rewritten(cache, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    expected = loader.load_pack(path)
    (entry,) = entries(cache)
    for damage in (b"{not json", b"[]", json.dumps({"doc": "x", "plugins": {}}).encode()):
        entry.write_bytes(damage)
        assert loader.load_pack(path) == expected
        assert json.loads(entry.read_bytes())["doc"]["spec"]["name"] == "mine"


def test_pack_cache_passes_unwritable_directory_is_not_used(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SPEC_VALIDATE_CACHE_DIR", str(blocker / "below"))
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    assert loader.load_pack(path).name == "mine"


def test_pack_cache_passes_off_with_environment_variable(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("SPEC_VALIDATE_NO_CACHE", "1")
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    loader.load_pack(path)
    assert entries(cache) == []


def test_pack_cache_passes_document_that_does_not_survive_json_is_not_cached(cache):
    raw = b"anything"
    pack_cache.store(raw, {"rules": [], 1: "a non-string key"})
    pack_cache.store(raw, {"when": __import__("datetime").date(2020, 1, 1)})
    assert entries(cache) == []


def test_pack_cache_fails_plugin_primitive_with_new_options_invalidates(cache, monkeypatch):
    raw = b"pack text"
    doc = {"rules": [{"check": [{"third_party_check": {}}]}]}
    digests = iter(["digest-when-stored", "digest-when-stored", "digest-after-upgrade"])
    monkeypatch.setattr(pack_cache, "_schema_digest", lambda name: next(digests))
    pack_cache.store(raw, doc)
    assert pack_cache.load(raw) == doc
    assert pack_cache.load(raw) is None


def test_pack_cache_passes_warm_run_imports_neither_yaml_nor_jsonschema(cache, tmp_path):
    # A user's pack: the first run parses and validates it, the next reads the cached entry.
    corpus = Path(__file__).resolve().parents[2] / "conformance-corpus" / "anndata" / "h5ad" / "valid-every-element.h5ad"
    mine = tmp_path / "mine.yaml"
    mine.write_text(PACK)
    code = (
        "import sys, validator\n"
        f"validator.validate({str(corpus)!r}, jobs=1, extra_packs=[{str(mine)!r}])\n"
        "print(sorted(m for m in ('yaml', 'jsonschema', 'importlib.metadata', 'validator.checks.zarr_metadata') if m in sys.modules))\n"
    )
    env = {**os.environ, "SPEC_VALIDATE_CACHE_DIR": str(cache)}
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "yaml" in cold and "jsonschema" in cold
    assert warm.strip() == "[]"


def _generator():
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("generate_pack_cache", root / "scripts" / "generate_pack_cache.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_entries_of_the_builtin_packs_are_current(monkeypatch):
    monkeypatch.setenv("SPEC_VALIDATE_NO_CACHE", "1")
    generator = _generator()
    assert generator.stale() == [], f"validator/engine/validated_packs is out of date; regenerate it with `{generator.COMMAND}`"


def test_a_first_run_loads_the_builtin_packs_from_the_shipped_entries(tmp_path):
    # A fresh CI runner: an empty cache. No YAML is parsed, no schema validation runs, nothing is written.
    code = ("import json, sys; from validator.engine.loader import builtin_packs; n = len(builtin_packs()); "
            "print(json.dumps([n, 'yaml' in sys.modules, 'jsonschema' in sys.modules]))")
    env = {**os.environ, "SPEC_VALIDATE_CACHE_DIR": str(tmp_path / "empty")}
    env.pop("SPEC_VALIDATE_NO_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    count, yaml_loaded, jsonschema_loaded = json.loads(out.stdout)
    assert count == len(list((Path(pack_cache.SHIPPED_DIR)).glob("*.json"))) and not yaml_loaded and not jsonschema_loaded
    assert entries(tmp_path / "empty") == []


def test_a_stale_shipped_entry_is_ignored_and_the_pack_validated(cache, tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    raw = path.read_bytes()
    doc = json.loads(pack_cache.entry_text(raw, loader.parse_and_validate(raw, str(path))))
    doc["doc"]["rules"][0]["level"] = "MAY"  # an entry for the same name whose text no longer matches
    doc["text"] = doc["text"].replace("MUST", "MAY")
    (shipped / pack_cache.entry_name(raw)).write_text(json.dumps(doc))
    monkeypatch.setattr(pack_cache, "SHIPPED_DIR", str(shipped))
    assert loader.load_pack(path).rules[0].level.value == "MUST"
