"""Load rule packs from YAML (safe_load), validate them against the pack schema, resolve `extends`."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from spec_validate.checks import registry
from spec_validate.checks.schemas import REF
from spec_validate.engine import pack_cache
from spec_validate.engine.rule_selection import prefix_matches
from spec_validate.engine.selectors import SELECTOR_SCHEMA
from spec_validate.engine.writer_notes import as_text
from spec_validate.errors import PackError
from spec_validate.model import CheckStep, Legacy, Level, Pack, Rule, SpecNote, Writer

# os.path rather than pathlib throughout: pathlib's import is a visible part of a small run's start-up.
SCHEMA_FILE = pack_cache.SCHEMA_FILE  # one file, named once: the cache fingerprints what the loader validates against


def installed_rules_dir() -> str:
    """Where an installed wheel holds the built-in packs (absent in a checkout)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_rules")


def builtin_rules_dir() -> str:
    """The packs shipped with the tool: inside the wheel, or the repository's `rules/` in a checkout."""
    installed = installed_rules_dir()
    return installed if os.path.isdir(installed) else os.path.join(os.path.dirname(os.path.dirname(installed)), "rules")


@lru_cache(maxsize=1)
def pack_schema() -> dict[str, Any]:
    """The pack meta-schema, with the selector and reference grammars filled in."""
    with open(SCHEMA_FILE, encoding="utf-8") as fh:
        schema = json.load(fh)
    selector = copy.deepcopy(SELECTOR_SCHEMA)
    schema["$defs"]["selector"] = selector
    schema["$defs"]["ref"] = REF
    schema["$defs"]["step"] = {"type": "object", "minProperties": 1, "maxProperties": 1}
    return schema


def _where(doc: Mapping[str, Any], path: Iterable[Any]) -> str:
    parts = list(path)
    if len(parts) >= 2 and parts[0] == "rules" and isinstance(parts[1], int):
        rules = doc.get("rules") or []
        rule = rules[parts[1]] if parts[1] < len(rules) and isinstance(rules[parts[1]], dict) else {}
        rid = rule.get("id", f"rules[{parts[1]}]")
        # A problem with the rule itself (a missing or unknown field) is named by the rule id alone.
        return f"{rid}: " + _dotted(parts[2:]) if len(parts) > 2 else str(rid)
    return _dotted(parts)


def _message(error: Any) -> str:
    """The schema error in words; unknown keys are named as such (jsonschema's text depends on patternProperties)."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        patterns = error.schema.get("patternProperties", {})
        extra = [k for k in error.instance if k not in known and not any(re.search(p, k) for p in patterns)]
        if extra:
            free = " (only keys starting x- are free)" if "^x-" in patterns else ""
            return f"unknown key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}{free}"
    return error.message


def _dotted(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _validate(doc: Any, file: str) -> None:
    import jsonschema  # only on a cache miss (importing it costs more than the rest of a small run)

    if not isinstance(doc, dict):
        raise PackError(f"{file}: a pack must be a mapping, not {type(doc).__name__}")
    validator = jsonschema.Draft202012Validator(pack_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        raise PackError(f"{file}: {_where(doc, error.absolute_path)}: {_message(error)}")
    for rule in doc.get("rules") or []:
        for j, step in enumerate(rule["check"]):
            ((name, options),) = step.items()
            primitive = registry.get(name)
            if primitive is None:
                raise PackError(f"{file}: {rule['id']}: check[{j}]: unknown primitive {name!r}")
            options = {} if options is None else options
            v = jsonschema.Draft202012Validator(primitive.options_schema)
            err = jsonschema.exceptions.best_match(v.iter_errors(options))
            if err is not None:
                field = _dotted([f"check[{j}]", name, *err.absolute_path])
                message = err.message
                if err.validator == "additionalProperties":
                    message = message.replace("Additional properties are not allowed", "unknown option")
                raise PackError(f"{file}: {rule['id']}: {field}: {message}")


def _read(path: str) -> dict[str, Any]:
    """The pack document, validated: as the wheel's build validated it, or from the user's cache when this exact
    text was validated before, else now."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise PackError(f"{path}: cannot read ({exc.strerror})") from None
    cached = pack_cache.load_built(path, raw) if path.startswith(installed_rules_dir() + os.sep) else None
    if cached is None:
        cached = pack_cache.load(raw)
    if cached is not None:
        return cached
    doc = parse_and_validate(raw, path)
    pack_cache.store(raw, doc)
    return doc


def parse_and_validate(raw: bytes, path: str) -> dict[str, Any]:
    """The pack text parsed as YAML and validated against the pack schema and the primitives' options."""
    import yaml  # only on a cache miss: parsing YAML is most of the cost of loading a pack

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: the same safe subset, faster
    try:
        doc = yaml.load(raw.decode("utf-8"), Loader=loader)  # noqa: S506 (a safe loader)
    except UnicodeDecodeError as exc:
        raise PackError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise PackError(f"{path}: not valid YAML{where} ({getattr(exc, 'problem', exc)})") from None
    _validate(doc, path)
    return doc


def _rule(raw: Mapping[str, Any], pack: str, file: str, level_override: str | None, builtin: bool, spec_source: str) -> Rule:
    spec_level = Level(raw["level"])
    return Rule(
        id=raw["id"],
        level=Level(level_override) if level_override else spec_level,
        spec_level=spec_level,
        clause=" ".join(raw["clause"].split()),
        section=raw["section"],
        spec_version=raw["spec_version"],
        applies_to=raw["applies_to"],
        check=tuple(CheckStep(name, opts or {}) for step in raw["check"] for name, opts in step.items()),
        pack=pack,
        message=raw.get("message"),
        basis=raw.get("basis", "stated"),
        rationale=" ".join(raw["rationale"].split()) if raw.get("rationale") else None,
        writers=tuple(_writer(w) for w in raw.get("writers", [])),
        source_file=file,
        spec_source=raw.get("source", spec_source),
        builtin=builtin,
        notice=raw.get("notice"),
    )


def load_pack(path: str | os.PathLike[str], _seen: tuple[str, ...] = ()) -> Pack:
    """A pack from a YAML file. `extends: NAME` (a built-in pack) or a path inherits that pack's rules."""
    path = os.fspath(path)
    doc = _read(path)
    spec = doc["spec"]
    base: Pack | None = None
    if "extends" in doc:
        target = doc["extends"]
        if target in _seen:
            raise PackError(f"{path}: extends {target!r} in a cycle")
        is_file = target.endswith((".yaml", ".yml"))
        base_path = os.path.join(os.path.dirname(path), target) if is_file else _builtin_path(target)
        base = load_pack(base_path, _seen + (path,))
    overrides = doc.get("overrides", {})
    rules: list[Rule] = []
    if base is not None:
        for r in base.rules:
            lvl = overrides.get(r.id, {}).get("level")
            # The rule now runs as part of this pack (which replaces its base in a run, `packs_to_run`), so its
            # results carry this pack's name; `spec_level` keeps the spec's word.
            rules.append(r._replace(pack=spec["name"], level=Level(lvl) if lvl else r.level))
    builtin = _is_builtin_file(path)
    for raw in doc.get("rules") or []:
        rules.append(_rule(raw, spec["name"], path, overrides.get(raw["id"], {}).get("level"), builtin, spec["source"]))
    known = {r.id for r in rules}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise PackError(f"{path}: overrides: no rule {unknown[0]!r} in this pack or the one it extends")
    seen: set[str] = set()
    for r in rules:
        if r.id in seen:
            raise PackError(f"{path}: {r.id}: rule id defined twice")
        seen.add(r.id)
    inherit = lambda key: doc.get(key, getattr(base, key) if base else {})  # noqa: E731
    return Pack(
        name=spec["name"],
        title=spec["title"],
        version=spec["version"],
        spec_source=spec["source"],
        path=path,
        rules=tuple(rules),
        scope=inherit("scope"),
        shapes=inherit("shapes"),
        dimensions=inherit("dimensions"),
        formats=tuple(doc.get("formats", base.formats if base else ())),
        redirects={**(base.redirects if base else {}), **doc.get("redirects", {})},
        bases=(base.name, *base.bases) if base else (),
        legacy=_legacy(path, doc["legacy"], rules) if "legacy" in doc else (base.legacy if base else None),
        notes=tuple(_note(n) for n in doc["notes"]) if "notes" in doc else (base.notes if base else ()),
    )


def _legacy(path: str, raw: Mapping[str, Any], rules: Sequence[Rule]) -> Legacy:
    """The pack's `legacy` block. An era's text is one string (any storage) or one per storage format glob."""
    eras = {
        era: {"*": " ".join(text.split())} if isinstance(text, str) else {k: " ".join(v.split()) for k, v in text.items()}
        for era, text in raw["eras"].items()
    }
    kept = tuple(raw.get("still_checked", ()))
    for prefix in kept:  # a name that keeps no clause is a typo that would silently check nothing
        if not any(prefix_matches(prefix, r.id) for r in rules):
            raise PackError(f"{path}: legacy.still_checked: {prefix!r} names no rule of this pack")
    return Legacy(" ".join(raw["clause"].split()), raw["section"], eras, kept)


def _writer(raw: Mapping[str, Any]) -> Writer:
    when = tuple(
        (key, tuple(as_text(v) for v in (values if isinstance(values, list) else [values])))
        for key, values in (raw.get("when") or {}).items()
    )
    return Writer(raw["name"], raw["versions"], " ".join(raw["note"].split()), when)


def _note(raw: Mapping[str, Any]) -> SpecNote:
    return SpecNote(raw["id"], raw["title"], tuple(raw["rules"]), " ".join(raw["text"].split()))


def packs_to_run(base: Sequence[Pack], extra: Sequence[Pack]) -> list[Pack]:
    """The packs a run uses: `base` (the built-in packs, or the caller's instead) and the user's `extra` packs.

    A pack that another pack of the run extends, directly or through a chain, is left out: the extending pack
    carries its rules, with its overrides, so each clause is checked and reported once. Any other extra pack
    runs beside the base packs. A pack file given twice (in the configuration and with --pack) runs once.
    The CLI (runs, --list-rules, --explain), `validate`, `assert_conforms` and the pytest plugin all use this.

    Raises:
        PackError: two packs of the run extend the same pack (whose overrides would hold is not for us to
            guess), or two packs define the same rule id (an id names one clause in --select, --explain,
            SARIF and baselines).
    """
    if not extra:
        return list(base)
    files = {os.path.realpath(p.path) for p in base if p.path}
    added: list[Pack] = []
    for pack in extra:
        if pack.path:  # a pack built in memory has no file to compare
            file = os.path.realpath(pack.path)
            if file in files:
                continue
            files.add(file)
        added.append(pack)
    run = [p for p in (*base, *added) if not any(p.name in q.bases for q in added if q is not p)]
    _check_one_extension_per_base(run)
    _check_rule_ids_unique(run)
    return run


def _check_one_extension_per_base(packs: Sequence[Pack]) -> None:
    extended_by: dict[str, Pack] = {}
    for pack in packs:
        for name in pack.bases:
            other = extended_by.setdefault(name, pack)
            if other is not pack:
                raise PackError(
                    f"{pack.path}: both {other.name} ({other.path}) and {pack.name} extend {name}; "
                    f"use one of them, or let one extend the other"
                )


def _check_rule_ids_unique(packs: Sequence[Pack]) -> None:
    defined_in: dict[str, Pack] = {}
    for pack in packs:
        for rule in pack.rules:
            other = defined_in.setdefault(rule.id, pack)
            if other is not pack:
                raise PackError(
                    f"{pack.path}: {rule.id}: rule id also defined in {other.path} "
                    f"(to change a rule of {other.name}, extend it and use overrides)"
                )


def _is_builtin_file(path: str) -> bool:
    """Whether `path` is one of the packs shipped with the tool (`<rules dir>/<pack>/<file>.yaml`)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(path))) == os.path.realpath(builtin_rules_dir())


def _builtin_path(name: str) -> str:
    """The built-in pack file `extends: name` means: by folder (`zarr`: its first file), file stem (`zarr-3`), or
    the pack's own name (`zarr3`, when one folder holds several packs)."""
    for pack in builtin_pack_files():
        if os.path.basename(os.path.dirname(pack)) == name or os.path.splitext(os.path.basename(pack))[0] == name:
            return pack
    for pack in builtin_packs():
        if pack.name == name:
            return pack.path
    raise PackError(f"no built-in pack named {name!r}")


# Beside the packs: their clause catalogues (spec_validate/catalogue.py), which are no packs: catalogue.yaml, and
# catalogue-3.yaml for the second pack of rules/zarr/ (each names its pack in spec.name).
CATALOGUE_PREFIX = "catalogue"
# The reader packs (`rules/readers/`, spec_validate/engine/readers/) are no rule packs: they say which reader versions
# open a store, not which clauses it meets, and have a schema of their own.
READER_PACKS_FOLDER = "readers"


def builtin_pack_files() -> list[str]:
    """The shipped pack files (`rules/<pack>/<file>.yaml`), sorted; clause catalogues (`catalogue*.yaml`) are no packs."""
    root = builtin_rules_dir()
    found = []
    for folder in os.listdir(root):
        if folder != READER_PACKS_FOLDER and os.path.isdir(os.path.join(root, folder)):
            found += [
                os.path.join(root, folder, f)
                for f in os.listdir(os.path.join(root, folder))
                if f.endswith(".yaml") and not f.startswith(CATALOGUE_PREFIX)
            ]
    return sorted(found)


@lru_cache(maxsize=1)
def builtin_packs() -> tuple[Pack, ...]:
    """Every pack shipped with the tool, validated."""
    packs = tuple(load_pack(p) for p in builtin_pack_files())
    refuse_repeated_ids(packs)
    return packs


def refuse_repeated_ids(packs: Sequence[Any]) -> None:
    """PackError naming the first rule id that two of `packs` (anything with a `path` and `rules` with `id`s) define."""
    ids: dict[str, str] = {}
    for pack in packs:
        for rule in pack.rules:
            if rule.id in ids:
                raise PackError(f"{pack.path}: {rule.id}: rule id also defined in {ids[rule.id]}")
            ids[rule.id] = pack.path


def write_built_entries(directory: str) -> list[str]:
    """Validate every built-in pack and write its wheel entry under `directory` (`<folder>/<name>.validated.json`,
    as beside the pack in `spec_validate/_rules/`); the paths written, relative to `directory`.

    Run by the build hook (`hatch_build.py`). An invalid pack raises PackError, which fails the build.
    """
    rules = builtin_rules_dir()
    written = []
    for path in builtin_pack_files():
        with open(path, "rb") as fh:
            raw = fh.read()
        relative = os.path.splitext(os.path.relpath(path, rules))[0] + pack_cache.BUILT_SUFFIX
        target = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(pack_cache.built_entry_text(raw, parse_and_validate(raw, path)))
        written.append(relative)
    return written


def warm_user_cache() -> None:
    """Validate the built-in packs into the user's cache (run by `pip install -e .`); a cache that cannot be written,
    or any other failure, just leaves it cold: the first run validates instead."""
    import sys

    try:
        for path in builtin_pack_files():
            load_pack(path)
    except Exception as exc:  # noqa: BLE001 (an install never fails for a cache)
        print(f"spec-validate: the pack cache was not warmed ({exc})", file=sys.stderr)
