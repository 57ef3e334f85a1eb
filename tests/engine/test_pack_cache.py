"""The validated-pack cache: same packs as a fresh load, no YAML or jsonschema on a hit, never trusted blindly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spec_validate.engine import loader, pack_cache
from spec_validate.errors import PackError

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
        "import sys, spec_validate\n"
        f"spec_validate.validate({str(corpus)!r}, jobs=1, extra_packs=[{str(mine)!r}])\n"
        "heavy = ('yaml', 'jsonschema', 'importlib.metadata', 'spec_validate.checks.zarr_metadata')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {**os.environ, "SPEC_VALIDATE_CACHE_DIR": str(cache)}
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "yaml" in cold and "jsonschema" in cold
    assert warm.strip() == "[]"


def _installed_copy(root: Path) -> Path:
    """The built-in packs laid out as in an installed wheel (`spec_validate/_rules/`), with the build's entries beside them."""
    rules = Path(loader.builtin_rules_dir())
    for pack in loader.builtin_pack_files():
        target = root / Path(pack).relative_to(rules)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path(pack).read_bytes())
    written = loader.write_built_entries(str(root))
    assert len(written) == len(loader.builtin_pack_files())
    return root


def _summary(pack):
    return [(r.id, r.level, r.check, r.applies_to) for r in pack.rules]


def test_built_entries_load_an_installed_builtin_pack_without_validating_it(cache, tmp_path, monkeypatch):
    installed = _installed_copy(tmp_path / "_rules")
    original = Path(loader.builtin_rules_dir()) / "anndata" / "anndata-0.1.0.yaml"
    expected = _summary(loader.load_pack(original))
    monkeypatch.setattr(loader, "installed_rules_dir", lambda: str(installed))
    monkeypatch.setattr(loader, "parse_and_validate", lambda raw, path: pytest.fail(f"{path} was validated again"))
    monkeypatch.setattr(pack_cache, "cache_dir", lambda: str(tmp_path / "unused"))
    assert _summary(loader.load_pack(installed / "anndata" / "anndata-0.1.0.yaml")) == expected
    assert not (tmp_path / "unused").exists()


def test_built_entry_of_other_text_is_ignored_and_the_pack_validated(cache, tmp_path, monkeypatch):
    # An installed pack edited after the build: its entry no longer matches, so the edit is validated and used.
    installed = _installed_copy(tmp_path / "_rules")
    pack = installed / "zarr" / "zarr-2.yaml"
    pack.write_text(pack.read_text().replace("level: SHOULD", "level: MAY", 1))
    monkeypatch.setattr(loader, "installed_rules_dir", lambda: str(installed))
    levels = {r.level.value for r in loader.load_pack(pack).rules}
    assert "MAY" in levels
    pack.write_text(pack.read_text().replace("level: MAY", "level: BOGUS", 1))
    with pytest.raises(PackError, match="BOGUS"):
        loader.load_pack(pack)


def test_built_entries_are_read_only_inside_the_installed_rules(cache, tmp_path):
    # A pack elsewhere (a user's, or a checkout's) is never taken from an entry beside it.
    path = tmp_path / "mine.yaml"
    path.write_text(PACK)
    raw = path.read_bytes()
    entry = json.loads(pack_cache.built_entry_text(raw, loader.parse_and_validate(raw, str(path))))
    entry["doc"]["rules"][0]["level"] = "MAY"
    (tmp_path / f"mine{pack_cache.BUILT_SUFFIX}").write_text(json.dumps(entry))
    assert loader.load_pack(path).rules[0].level.value == "MUST"


def test_editable_install_warms_the_user_cache(cache):
    """`pip install -e .` runs the build hook's editable branch: afterwards every built-in pack is a cache hit."""
    loader.warm_user_cache()
    for path in loader.builtin_pack_files():
        with open(path, "rb") as fh:
            assert pack_cache.load(fh.read()) is not None, path
