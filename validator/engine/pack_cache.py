"""A cache of validated pack documents, as JSON, for the pack's exact text and everything it was validated against.

Parsing YAML and validating against the pack schema cost more than the rest of a run on a small file
(about 0.3 s against 0.1 s). A pack whose bytes, tool version, pack schema and primitive option schemas
are unchanged validates the same, so the validated document is stored once and read back with
`json.loads`. The cache holds plain JSON, never code; a damaged or unreadable entry is ignored and
rewritten, and a cache directory that cannot be written is simply not used.

Location: `$SPEC_VALIDATE_CACHE_DIR`, else `$XDG_CACHE_HOME/spec-validate`, else `~/.cache/spec-validate`.
`SPEC_VALIDATE_NO_CACHE=1` turns it off.

The built-in packs' entries also ship with the tool (`validated_packs/`, written by
`scripts/generate_pack_cache.py`; a test fails when they are stale), so that a first run, on a fresh CI
runner or in each process of a `--jobs` run, parses no YAML either. They are read exactly as the user's
entries are, fingerprint and text compared, so a stale one is ignored, never trusted.
"""

from __future__ import annotations

import json
import os
import zlib
from functools import lru_cache
from typing import Any

SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "pack.schema.json")


def cache_dir() -> str | None:
    """Where validated packs are kept, or None when caching is off."""
    if os.environ.get("SPEC_VALIDATE_NO_CACHE"):
        return None
    explicit = os.environ.get("SPEC_VALIDATE_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "spec-validate")


@lru_cache(maxsize=1)
def _validation_fingerprint() -> str:
    """What a pack is validated against: the tool version, the pack schema, and the sources that define the
    selector grammar and every built-in primitive's options (read as files, so no module is imported)."""
    from validator.version import __version__

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    checks = os.path.join(package, "checks")
    sources = [SCHEMA_FILE, os.path.join(package, "engine", "applies_to.py"), os.path.join(package, "engine", "loader.py"),
               *sorted(os.path.join(checks, f) for f in os.listdir(checks) if f.endswith(".py"))]
    parts = [__version__]
    for source in sources:
        with open(source, "rb") as fh:
            content = fh.read()
        parts.append(f"{os.path.basename(source)}:{len(content)}:{zlib.crc32(content):08x}")
    return ";".join(parts)


def _schema_digest(name: str) -> str | None:
    from validator.checks import registry

    primitive = registry.get(name)
    if primitive is None:
        return None
    return json.dumps(primitive.options_schema, sort_keys=True, default=str)


def _plugin_primitives(doc: dict[str, Any]) -> dict[str, str | None]:
    """Plugin primitives the pack uses, with a digest of their options schema (they are not in the fingerprint)."""
    from validator.checks import registry

    builtin = registry.builtin_primitives()
    return {name: _schema_digest(name) for name in sorted(_used(doc) - set(builtin))}


def _modules(doc: dict[str, Any]) -> dict[str, str]:
    """The module defining each built-in primitive the pack uses."""
    from validator.checks import registry

    builtin = registry.builtin_primitives()
    return {name: builtin[name].function.__module__ for name in sorted(_used(doc)) if name in builtin}


def _used(doc: dict[str, Any]) -> set[str]:
    return {name for rule in doc.get("rules") or [] for step in rule.get("check") or [] for name in step}


SHIPPED_DIR = os.path.join(os.path.dirname(__file__), "validated_packs")


def entry_name(raw: bytes) -> str:
    """The file name of the entry for this pack text under this tool (and these primitives)."""
    # crc32 names the entry; the entry itself holds the full fingerprint and pack text, compared exactly on load,
    # so two packs (or two tool versions) that collide on the name only overwrite each other.
    return f"{zlib.crc32(_validation_fingerprint().encode()):08x}-{zlib.crc32(raw):08x}-{len(raw)}.json"


def _entry(raw: bytes) -> str | None:
    folder = cache_dir()
    return None if folder is None else os.path.join(folder, "packs", entry_name(raw))


def load(raw: bytes) -> dict[str, Any] | None:
    """The validated document for this pack text, or None when it is not cached (or the entry is unusable)."""
    entry = _entry(raw)
    if entry is None:
        return None
    return _read_entry(entry, raw) or _read_entry(os.path.join(SHIPPED_DIR, entry_name(raw)), raw)


def _read_entry(entry: str, raw: bytes) -> dict[str, Any] | None:
    try:
        with open(entry, "rb") as fh:
            cached = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or not isinstance(cached.get("doc"), dict) or not isinstance(cached.get("plugins"), dict):
        return None
    if cached.get("fingerprint") != _validation_fingerprint() or cached.get("text") != raw.decode("utf-8", "replace"):
        return None
    if any(_schema_digest(name) != digest for name, digest in cached["plugins"].items()):
        return None  # a plugin primitive changed its options: validate again
    modules = cached.get("modules")
    if isinstance(modules, dict):
        from validator.checks import registry

        registry.hint({str(k): str(v) for k, v in modules.items()})
    return cached["doc"]


def entry_text(raw: bytes, doc: dict[str, Any]) -> str | None:
    """The entry for a validated pack, as JSON text; None when the document does not survive JSON unchanged."""
    try:
        text = json.dumps({"fingerprint": _validation_fingerprint(), "text": raw.decode("utf-8", "replace"), "doc": doc,
                           "plugins": _plugin_primitives(doc), "modules": _modules(doc)})
    except (TypeError, ValueError):
        return None  # YAML dates, sets or binary: not JSON, so not cached
    if json.loads(text)["doc"] != doc:
        return None  # non-string keys (or NaN) would come back different: validate such a pack every time
    return text


def store(raw: bytes, doc: dict[str, Any]) -> None:
    """Keep the validated document for next time; any failure to write just leaves it uncached."""
    entry = _entry(raw)
    text = entry_text(raw, doc) if entry is not None else None
    if entry is None or text is None:
        return
    import tempfile  # only when writing an entry

    tmp = None
    try:
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        # Written beside the entry and renamed into place, so a concurrent reader never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(entry), prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, entry)
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
