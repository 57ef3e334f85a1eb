"""Project settings, merged with CLI flags (ruff precedence: the CLI wins).

Read as ruff reads its own: in each folder from the working directory upwards, `.spec-validate.toml`, then
`spec-validate.toml` (settings at the top level), then `pyproject.toml` with a `[tool.spec-validate]` table; the
first found is the one used.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from spec_validate.errors import InputError

# A pyproject.toml is parsed only where its text may configure the tool: a header, a dotted key or a key of [tool]
# naming it, or a header that starts to name it and is broken (parsed, so that the user hears of it).
_MAY_CONFIGURE = re.compile(r"spec-validate[\"']?[ \t]*[\].=]|\[[ \t]*tool[ \t]*\.[ \t]*[\"']?spec-validate")
STANDALONE = (".spec-validate.toml", "spec-validate.toml")
KEYS = (
    "select",
    "ignore",
    "extend-select",
    "fail-on",
    "fail-on-unchecked",
    "per-path-ignores",
    "packs",
    "exclude",
    "extend-exclude",
    "docs-url",
    "readers",
)
FAIL_ON = ("must", "should", "may")


class Config(NamedTuple):
    """The settings of one pyproject.toml (paths in `packs` already made absolute)."""

    select: tuple[str, ...] | None = None  # None: not set
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    fail_on: str | None = None
    per_path_ignores: Mapping[str, tuple[str, ...]] | None = None  # glob -> rule prefixes; None: not set
    packs: tuple[str, ...] = ()
    root: str = ""  # the directory holding the pyproject.toml; per-path globs are relative to it
    source: str = ""
    exclude: tuple[str, ...] | None = None  # folder-search globs replacing the default list; None: not set
    extend_exclude: tuple[str, ...] = ()
    docs_url: str | None = None  # the documentation site's base URL; None: not set
    fail_on_unchecked: bool | None = None  # None: not set
    # `readers = true` (the reader verdicts) or a list of requirement strings (also the gate); None: not set
    readers: tuple[str, ...] | None = None


def find_config(start: str | None = None) -> str | None:
    """The nearest settings file from `start` (default: the cwd) upwards: `.spec-validate.toml`,
    `spec-validate.toml`, or a pyproject.toml that has a [tool.spec-validate] table, in that order in each folder."""
    directory = os.path.realpath(start or os.getcwd())
    while True:
        for name in STANDALONE:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{candidate}: cannot be read ({exc})") from None
            # Only a file that may hold the table is parsed (TOML parsing costs more than a small run's checks):
            # a project's own name (`name = "spec-validate"`) does not make it one.
            if _MAY_CONFIGURE.search(text) and "spec-validate" in _parse_toml(candidate, text).get("tool", {}):
                return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _parse_toml(path: str, text: str) -> dict:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: cannot be read as TOML ({' '.join(str(exc).split())})") from None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the settings of `path` (a pyproject.toml's `[tool.spec-validate]`, or a `spec-validate.toml`), or of the
    file `find_config` finds from the cwd upwards; empty if none.

    Raises:
        InputError: an unknown key or a value of the wrong type, naming the file and the key.
    """
    found = os.fspath(path) if path else find_config()
    if found is None:
        return Config()
    table = _read_table(found)
    where = f"{found}: [tool.spec-validate]" if _is_pyproject(found) else found

    def strings(key: str) -> tuple[str, ...]:
        return _strings(table.get(key, []), f"{where}: {key}: expected a list of strings")

    fail_on = table.get("fail-on")
    if fail_on is not None and (not isinstance(fail_on, str) or fail_on.lower() not in FAIL_ON):
        raise InputError(f"{where}: fail-on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    fail_on_unchecked = table.get("fail-on-unchecked")
    if fail_on_unchecked is not None and not isinstance(fail_on_unchecked, bool):
        raise InputError(f"{where}: fail-on-unchecked: expected true or false, got {fail_on_unchecked!r}")
    root = os.path.dirname(os.path.abspath(found))
    return Config(
        readers=_readers_setting(table.get("readers"), where),
        docs_url=_docs_url(table.get("docs-url"), where),
        select=strings("select") if "select" in table else None,
        ignore=strings("ignore"),
        extend_select=strings("extend-select"),
        fail_on=fail_on.lower() if fail_on else None,
        per_path_ignores=_per_path_ignores(table.get("per-path-ignores", {}), where),
        packs=tuple(os.path.join(root, p) for p in strings("packs")),
        root=root,
        source=found,
        exclude=strings("exclude") if "exclude" in table else None,
        extend_exclude=strings("extend-exclude"),
        fail_on_unchecked=fail_on_unchecked,
    )


def _docs_url(value: object, where: str) -> str | None:
    """The `docs-url` setting, checked: an http(s):// or file:// URL (None: not set)."""
    from spec_validate.errors import SpecValidateError
    from spec_validate.report.links import docs_base

    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: docs-url: expected a URL string, got {value!r}")
    try:
        return docs_base(value)
    except SpecValidateError as exc:
        raise InputError(f"{where}: {exc}") from None


def _readers_setting(value: object, where: str) -> tuple[str, ...] | None:
    """The `readers` setting: true (the reader verdicts), false or unset (None), or a list of requirement strings
    (the verdicts and the gate)."""
    if value is None or value is False:
        return None
    if value is True:
        return ()
    return _strings(value, f"{where}: readers: expected true, false, or a list of requirements such as 'anndata>=0.10'")


def _is_pyproject(path: str) -> bool:
    """Whether the settings file at `path` keeps them in a `[tool.spec-validate]` table (a pyproject.toml, as ruff
    tells them apart), rather than at its top level (`spec-validate.toml` or any other name given to --config)."""
    return os.path.basename(path) == "pyproject.toml"


def _read_table(found: str) -> dict:
    """The settings of the file at `found` ({} without any), their keys all known: the `[tool.spec-validate]` table
    of a pyproject.toml, the whole of a `spec-validate.toml`."""
    try:
        with open(found, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{found}: cannot be read ({exc})") from None
    parsed = _parse_toml(found, text)
    pyproject = _is_pyproject(found)
    table = parsed.get("tool", {}).get("spec-validate", {}) if pyproject else parsed
    where = f"{found}: [tool.spec-validate]" if pyproject else found
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table")
    for key in table:
        if key not in KEYS:
            raise InputError(f"{where}: {key}: unknown option (known: {', '.join(KEYS)})")
    return table


def _strings(value: object, error: str) -> tuple[str, ...]:
    """`value` as a tuple of strings (one string is a list of one); InputError(`error`) for anything else."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(error)
    return tuple(value)


def _per_path_ignores(value: object, where: str) -> dict[str, tuple[str, ...]]:
    """The per-path-ignores table: glob -> rule ids or prefixes."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: per-path-ignores: expected a table of glob = [rule prefixes]")
    return {
        glob: _strings(prefixes, f"{where}: per-path-ignores.{glob}: expected a list of rule ids or prefixes")
        for glob, prefixes in value.items()
    }


class Settings(NamedTuple):
    """What one run uses, after the CLI flags have been laid over the config."""

    select: tuple[str, ...]
    ignore: tuple[str, ...]
    extend_select: tuple[str, ...]
    fail_on: str
    packs: tuple[str, ...]
    per_path_ignores: Mapping[str, tuple[str, ...]]
    root: str
    # (glob, directory it is relative to) for folder searches: the defaults or `exclude`, then `extend-exclude`
    exclude: tuple[tuple[str, str], ...] = ()
    docs_url: str | None = None  # the documentation site rule links point at; None: `spec-validate --explain`
    # A clause at or above fail_on not judged on every node it selects fails the input (--fail-on-unchecked)
    fail_on_unchecked: bool = False
    # The reader verdicts (--readers): None: not asked for; else the gate's requirement strings (none: no gate)
    readers: tuple[str, ...] | None = None

    def ignore_for(self, path: str) -> tuple[str, ...]:
        """`ignore` plus the per-path-ignores whose glob matches `path` (relative to the config's directory)."""
        extra: list[str] = []
        if self.per_path_ignores:
            absolute = os.path.abspath(path)
            rel = os.path.relpath(absolute, self.root or os.getcwd()).replace(os.sep, "/")
            for glob, prefixes in self.per_path_ignores.items():
                if any(
                    fnmatch.fnmatchcase(candidate, glob)
                    for candidate in (rel, rel.rstrip("/"), os.path.basename(rel.rstrip("/")))
                ):
                    extra.extend(prefixes)
        return self.ignore + tuple(extra)

    def all_prefixes(self) -> tuple[str, ...]:
        return self.select + self.ignore + self.extend_select + tuple(p for ps in self.per_path_ignores.values() for p in ps)


def merge(
    config: Config,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    fail_on: str | None = None,
    packs: Sequence[str] = (),
    exclude: Sequence[str] = (),
    extend_exclude: Sequence[str] = (),
    docs_url: str | None = None,
    fail_on_unchecked: bool | None = None,
    readers: Sequence[str] | None = None,
) -> Settings:
    """CLI over config, as ruff does: --select replaces `select`; ignore, extend-select and packs add up;
    --fail-on replaces `fail-on`, and --[no-]fail-on-unchecked `fail-on-unchecked` (default: off); --exclude
    replaces `exclude` (itself replacing the default list), and `extend-exclude` and --extend-exclude add to it;
    --docs-url replaces `docs-url`; --readers with requirements replaces `readers`, and a bare --readers keeps
    its requirements (or asks for the verdicts alone). Config globs are relative to the config's directory, the
    flags' to the working directory."""
    from spec_validate.inputs import DEFAULT_EXCLUDE

    cwd = os.getcwd()
    if exclude:
        excludes = [(p, cwd) for p in exclude]
    elif config.exclude is not None:
        excludes = [(p, config.root) for p in config.exclude]
    else:
        excludes = [(p, cwd) for p in DEFAULT_EXCLUDE]
    excludes += [(p, config.root) for p in config.extend_exclude] + [(p, cwd) for p in extend_exclude]
    return Settings(
        select=tuple(select) if select else (config.select or ()),
        ignore=config.ignore + tuple(ignore),
        extend_select=config.extend_select + tuple(extend_select),
        fail_on=(fail_on or config.fail_on or "must").lower(),  # level names in any case (`SHOULD`)
        packs=config.packs + tuple(packs),
        per_path_ignores=dict(config.per_path_ignores or {}),
        root=config.root,
        exclude=tuple(excludes),
        docs_url=docs_url or config.docs_url,
        fail_on_unchecked=bool(fail_on_unchecked if fail_on_unchecked is not None else config.fail_on_unchecked),
        readers=_readers(readers, config.readers),
    )


def _readers(flags: Sequence[str] | None, config: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """--readers over `readers`: None (no verdicts) when neither asks; a bare --readers is an empty string."""
    if not flags:
        return config
    given = tuple(f for f in flags if f)
    return given or config or ()
