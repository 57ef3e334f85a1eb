"""Load the reader packs (`rules/readers/<reader>.yaml`) and the measurements beside them (`measured.yaml`), each
validated against `engine/readers.schema.json`: a bad file is a one-line PackError naming it."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from spec_validate.engine.loader import READER_PACKS_FOLDER, _message, _where, builtin_rules_dir, refuse_repeated_ids
from spec_validate.engine.readers.conditions import when_schema
from spec_validate.engine.readers.formats import COARSE_FORMATS
from spec_validate.engine.selectors import SELECTOR_SCHEMA
from spec_validate.errors import PackError

SCHEMA_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "readers.schema.json")
MEASURED_FILE = "measured.yaml"


class ReaderRule(NamedTuple):
    id: str
    reader: str
    versions: str  # a PEP 440 specifier set
    formats: tuple[str, ...]
    when: Mapping[str, Any]
    fact: str
    outcome: str
    cases: tuple[str, ...]
    source_file: str = ""


class ReaderPack(NamedTuple):
    reader: str
    title: str
    rules: tuple[ReaderRule, ...]
    path: str


class Measured(NamedTuple):
    """measured.yaml: the date, each reader's measured versions with their formats, each format's vocabulary, and
    the measured cases (format, source, the versions that did not open them)."""

    date: str
    readers: Mapping[str, Mapping[str, tuple[str, ...]]]  # reader -> version -> formats
    vocabulary: Mapping[str, Mapping[str, tuple[str, ...]]]  # format -> kind -> words
    cases: Mapping[str, Mapping[str, Any]]
    path: str = ""


class Readers(NamedTuple):
    measured: Measured
    packs: tuple[ReaderPack, ...]

    def pack(self, reader: str) -> ReaderPack | None:
        return next((p for p in self.packs if p.reader == reader), None)

    @property
    def names(self) -> tuple[str, ...]:
        """Every reader a pack or a measurement names."""
        return tuple(sorted({p.reader for p in self.packs} | set(self.measured.readers)))


def builtin_readers_dir() -> str:
    """The reader packs shipped with the tool."""
    return os.path.join(builtin_rules_dir(), READER_PACKS_FOLDER)


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The reader pack schema, with the `when` and selector grammars filled in from their registries."""
    with open(SCHEMA_FILE, encoding="utf-8") as fh:
        doc = json.load(fh)
    doc["$defs"]["when"] = when_schema()
    doc["$defs"]["selector"] = copy.deepcopy(SELECTOR_SCHEMA)
    return doc


def load_readers(directory: str | os.PathLike[str] | None = None) -> Readers:
    """The reader packs and measurements of `directory` (default: the built-in ones)."""
    return _load(os.fspath(directory) if directory is not None else builtin_readers_dir())


@lru_cache(maxsize=8)
def _load(directory: str) -> Readers:
    measured_path = os.path.join(directory, MEASURED_FILE)
    measured = (
        _measured(_validated(measured_path, {"$ref": "#/$defs/measured"}), measured_path)
        if os.path.isfile(measured_path)
        else Measured("", {}, {}, {})
    )
    listed = os.listdir(directory) if os.path.isdir(directory) else []
    files = sorted(f for f in listed if f.endswith(".yaml") and f != MEASURED_FILE)
    packs = tuple(_pack(os.path.join(directory, f), measured) for f in files)
    refuse_repeated_ids(packs)
    return Readers(measured, packs)


def _validated(path: str, root: Mapping[str, Any] | None = None) -> dict[str, Any]:
    import jsonschema
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except OSError as exc:
        raise PackError(f"{path}: cannot read ({exc.strerror})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(doc, dict):
        raise PackError(f"{path}: a reader pack must be a mapping, not {type(doc).__name__}")
    # measured.yaml is checked against one definition of the pack schema (a $ref beside the pack's own keywords
    # would apply both).
    full = schema() if root is None else {"$schema": schema()["$schema"], "$defs": schema()["$defs"], **root}
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(full).iter_errors(doc))
    if error is not None:
        raise PackError(f"{path}: {_where(doc, error.absolute_path)}: {_message(error)}")
    return doc


def _measured(doc: Mapping[str, Any], path: str) -> Measured:
    readers = {
        reader: {version: tuple(entry["formats"]) for version, entry in versions.items()}
        for reader, versions in doc["readers"].items()
    }
    vocabulary = {fmt: {kind: tuple(words) for kind, words in kinds.items()} for fmt, kinds in doc["vocabulary"].items()}
    return Measured(str(doc["measured"]), readers, vocabulary, doc["cases"], path)


def _pack(path: str, measured: Measured) -> ReaderPack:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    doc = _validated(path)
    reader = doc["reader"]
    rules = []
    for raw in doc["rules"]:
        rid = raw["id"]
        if not rid.startswith(f"readers.{reader}."):
            raise PackError(f"{path}: {rid}: a rule of reader {reader} has an id starting readers.{reader}.")
        try:
            SpecifierSet(raw["versions"])
        except InvalidSpecifier:
            raise PackError(f"{path}: {rid}: versions: {raw['versions']!r} is no PEP 440 specifier set") from None
        unknown = [f for f in raw["formats"] if f not in COARSE_FORMATS]
        if unknown:
            raise PackError(f"{path}: {rid}: formats: unknown format {unknown[0]!r} (known: {', '.join(COARSE_FORMATS)})")
        if measured.cases:
            missing = [c for c in raw["cases"] if c not in measured.cases]
            if missing:
                raise PackError(f"{path}: {rid}: cases: {missing[0]!r} is no measured case ({measured.path})")
        rules.append(
            ReaderRule(
                rid,
                reader,
                raw["versions"],
                tuple(raw["formats"]),
                raw["when"],
                " ".join(raw["fact"].split()),
                raw["outcome"],
                tuple(raw["cases"]),
                path,
            )
        )
    return ReaderPack(reader, doc["title"], tuple(rules), path)
