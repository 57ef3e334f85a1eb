"""Validated pack documents as JSON: the user's cache, and the built-in packs validated when the wheel was built.

Parsing YAML and validating against the pack schema cost more than the rest of a run on a small file
(about 0.15 s against 0.05 s), so a validated document is kept as JSON and read back with `json.loads`.
Both kinds of entry hold plain JSON, never code, and the exact pack text they were made from, compared on
every load; a damaged or unreadable entry is ignored.

- **The user's cache**, for any pack (built-in in a checkout, or the user's own): one entry per pack text,
  valid for one *fingerprint* of what a pack is validated against (tool version, pack schema, the
  selector grammar, the loader and the primitives' sources; plugin primitives by their options schema).
  Keyed on every primitive source rather than on those the pack uses: which module defines a primitive
  is known only once it is imported, and an over-eager miss costs one validation. A cache directory that
  cannot be written is simply not used. Location: `$SPEC_VALIDATE_CACHE_DIR`, else
  `$XDG_CACHE_HOME/spec-validate`, else `~/.cache/spec-validate`; `SPEC_VALIDATE_NO_CACHE=1` turns it off.
- **The wheel's entries** (`<pack>.validated.json` beside each built-in pack in `spec_validate/_rules/`),
  written by the build hook (`hatch_build.py`) from the packs, schema and primitives of that same build,
  so a first run of an installed tool parses no YAML. Never committed: a checkout (or an editable
  install), whose sources change under it, has none and uses the user's cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from functools import lru_cache
from typing import Any

SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "pack.schema.json")
BUILT_SUFFIX = ".validated.json"


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
    from spec_validate.version import __version__

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    checks = os.path.join(package, "checks")
    sources = [
        SCHEMA_FILE,
        os.path.join(package, "engine", "selectors.py"),
        os.path.join(package, "engine", "loader.py"),
        *sorted(os.path.join(checks, f) for f in os.listdir(checks) if f.endswith(".py")),
    ]
    parts = [__version__]
    for source in sources:
        with open(source, "rb") as fh:
            content = fh.read()
        parts.append(f"{os.path.basename(source)}:{len(content)}:{zlib.crc32(content):08x}")
    return ";".join(parts)


def _schema_digest(name: str) -> str | None:
    from spec_validate.checks import registry

    primitive = registry.get(name)
    if primitive is None:
        return None
    return json.dumps(primitive.options_schema, sort_keys=True, default=str)


def _plugin_primitives(doc: dict[str, Any]) -> dict[str, str | None]:
    """Plugin primitives the pack uses, with a digest of their options schema (they are not in the fingerprint)."""
    from spec_validate.checks import registry

    builtin = registry.builtin_primitives()
    return {name: _schema_digest(name) for name in sorted(_used(doc) - set(builtin))}


def _modules(doc: dict[str, Any]) -> dict[str, str]:
    """The module defining each built-in primitive the pack uses."""
    from spec_validate.checks import registry

    builtin = registry.builtin_primitives()
    return {name: builtin[name].function.__module__ for name in sorted(_used(doc)) if name in builtin}


def _used(doc: dict[str, Any]) -> set[str]:
    return {name for rule in doc.get("rules") or [] for step in rule.get("check") or [] for name in step}


def _entry(raw: bytes) -> str | None:
    folder = cache_dir()
    if folder is None:
        return None
    # crc32 names the entry; the entry itself holds the full fingerprint and pack text, compared exactly on load,
    # so two packs (or two tool versions) that collide on the name only overwrite each other.
    name = f"{zlib.crc32(_validation_fingerprint().encode()):08x}-{zlib.crc32(raw):08x}-{len(raw)}.json"
    return os.path.join(folder, "packs", name)


def load(raw: bytes) -> dict[str, Any] | None:
    """The validated document for this pack text from the user's cache, or None (not cached, or unusable)."""
    entry = _entry(raw)
    cached = None if entry is None else _read_entry(entry, raw)
    if cached is None:
        return None
    if cached.get("fingerprint") != _validation_fingerprint() or not isinstance(cached.get("plugins"), dict):
        return None
    if any(_schema_digest(name) != digest for name, digest in cached["plugins"].items()):
        return None  # a plugin primitive changed its options: validate again
    return _accept(cached)


def load_built(path: str, raw: bytes) -> dict[str, Any] | None:
    """The validated document the wheel's build wrote beside the built-in pack at `path`, when `raw` is the text
    it was made from; None when there is none (a checkout) or it does not match (an edited installed pack)."""
    cached = _read_entry(os.path.splitext(path)[0] + BUILT_SUFFIX, raw)
    return None if cached is None else _accept(cached)


def _read_entry(entry: str, raw: bytes) -> dict[str, Any] | None:
    """The entry's JSON when it is well formed and made from exactly this pack text."""
    try:
        with open(entry, "rb") as fh:
            cached = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or not isinstance(cached.get("doc"), dict):
        return None
    if cached.get("text") != raw.decode("utf-8", "replace"):
        return None
    return cached


def _accept(cached: dict[str, Any]) -> dict[str, Any]:
    modules = cached.get("modules")
    if isinstance(modules, dict):
        from spec_validate.checks import registry

        registry.hint({str(k): str(v) for k, v in modules.items()})
    return cached["doc"]


def _entry_text(raw: bytes, doc: dict[str, Any], **extra: Any) -> str | None:
    """An entry as JSON text; None when the document does not survive JSON unchanged."""
    try:
        text = json.dumps({**extra, "text": raw.decode("utf-8", "replace"), "doc": doc, "modules": _modules(doc)})
    except (TypeError, ValueError):
        return None  # YAML dates, sets or binary: not JSON, so not cached
    if json.loads(text)["doc"] != doc:
        return None  # non-string keys (or NaN) would come back different: validate such a pack every time
    return text


def built_entry_text(raw: bytes, doc: dict[str, Any]) -> str:
    """The wheel's entry for a built-in pack, validated by the build (`hatch_build.py`) as `doc`."""
    text = _entry_text(raw, doc)
    if text is None:
        raise ValueError("the validated pack does not survive JSON unchanged")
    return text


def store(raw: bytes, doc: dict[str, Any]) -> None:
    """Keep the validated document for next time; any failure to write just leaves it uncached."""
    entry = _entry(raw)
    text = _entry_text(raw, doc, fingerprint=_validation_fingerprint(), plugins=_plugin_primitives(doc)) if entry else None
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
            with contextlib.suppress(OSError):
                os.unlink(tmp)
