"""pytest plugin (entry point `pytest11`): the `spec_validate` fixture and `pytest --spec-validate` collection.

Both read the project's settings as the command line does (the nearest settings file from where pytest was
started, upwards), so `spec-validate FILE` and `pytest --spec-validate` agree about the same file.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from spec_validate import describe_gate_failures, validate
from spec_validate.model import Level, Report

if TYPE_CHECKING:
    from spec_validate.config import Settings

STORE_SUFFIXES = (".zarr", ".cxg")
# Every format a pack reads, by name (matched case-insensitively: `.h5Seurat` as SeuratDisk writes it).
DEFAULT_FILES = ["*.h5ad", "*.h5seurat", "*.h5mu", "*.zarr", "*.zarr.zip", "*.cxg"]
LEVELS = ("must", "should", "may")


def project_settings(config: pytest.Config) -> Settings:
    """`[tool.spec-validate]` merged with the ini option `spec_validate_packs`, as the CLI merges it with --pack."""
    from spec_validate import config as cfg

    start = str(config.invocation_params.dir)
    found = cfg.find_config(start)
    packs = [str(config.rootpath / p) for p in config.getini("spec_validate_packs")]
    return cfg.merge(cfg.load_config(found) if found else cfg.Config(), packs=packs)


def _level(value: str | Level) -> Level:
    return value if isinstance(value, Level) else Level(str(value).upper())


class SpecValidator:
    """What the `spec_validate` fixture gives a test: `spec_validate(path)` -> Report, and `.assert_conforms`.

    The project's `[tool.spec-validate]` gives the defaults (select, ignore and per-path ignores, extend-select,
    packs, fail-on, fail-on-unchecked, readers); keyword arguments win as flags do on the command line: `select` and
    `readers` replace, `ignore` and `extend_select` add.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings

    def _options(self, path: str | os.PathLike[str], kwargs: dict[str, Any]) -> dict[str, Any]:
        s = self.settings
        if s is None:
            return kwargs
        readers = kwargs.get("readers", None if s.readers is None else list(s.readers) or True)
        return {
            **kwargs,
            "readers": readers if readers is not None else False,
            "select": tuple(kwargs.get("select") or s.select),
            "ignore": s.ignore_for(os.fspath(path)) + tuple(kwargs.get("ignore", ())),
            "extend_select": s.extend_select + tuple(kwargs.get("extend_select", ())),
            "extra_packs": tuple(s.packs) + tuple(kwargs.get("extra_packs", ())),
        }

    def __call__(self, path: str | os.PathLike[str], **kwargs: Any) -> Report:
        return validate(path, **self._options(path, kwargs))

    def assert_conforms(
        self,
        path: str | os.PathLike[str],
        fail_on: str | Level | None = None,
        fail_on_unchecked: bool | None = None,
        **kwargs: Any,
    ) -> Report:
        """Validate `path` and fail the test, showing the report, when a clause at or above `fail_on` fails (or,
        with `fail_on_unchecked`, was not checked on every node it selects), or a reader requirement of `readers`
        (`readers=["anndata>=0.10"]`, default: `readers` in `[tool.spec-validate]`) is not predicted to be met."""
        __tracebackhide__ = True  # the failure shows the report, not this plugin's source
        level = _level(fail_on or (self.settings.fail_on if self.settings else "must"))
        if fail_on_unchecked is None:
            fail_on_unchecked = self.settings.fail_on_unchecked if self.settings else False
        report = self(path, **kwargs)
        failure = describe_gate_failures(report, level, fail_on_unchecked)
        if failure is not None:
            raise AssertionError(failure)
        return report


@pytest.fixture
def spec_validate(pytestconfig: pytest.Config) -> SpecValidator:
    """Validate stores from a test: `spec_validate.assert_conforms(tmp_path / "x.h5ad")`, with the project's
    `[tool.spec-validate]` settings."""
    return SpecValidator(project_settings(pytestconfig))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spec-validate")
    group.addoption(
        "--spec-validate",
        action="store_true",
        default=False,
        help="collect data files matching spec_validate_files as tests, one per file",
    )
    group.addoption(
        "--spec-validate-fail-on",
        type=str.lower,
        choices=LEVELS,
        default=None,
        help="lowest level whose failure fails a data-file test, in any case (default: spec_validate_fail_on, "
        "else fail-on in [tool.spec-validate], else must)",
    )
    group.addoption(
        "--spec-validate-readers",
        action="append",
        default=None,
        metavar="REQUIREMENT",
        help="a reader requirement each data file must be predicted to meet, as --readers takes it "
        "('anndata>=0.10'); repeatable (default: spec_validate_readers, else readers in [tool.spec-validate])",
    )
    parser.addini(
        "spec_validate_files",
        type="linelist",
        default=DEFAULT_FILES,
        help="globs of data files (and .zarr/.cxg store directories) that --spec-validate collects, matched "
        "case-insensitively (default: every format a pack reads)",
    )
    parser.addini(
        "spec_validate_fail_on",
        default="",
        help="must, should or may, in any case (default: fail-on in [tool.spec-validate], else must)",
    )
    parser.addini(
        "spec_validate_readers",
        type="linelist",
        default=[],
        help="reader requirements each data file must be predicted to meet ('anndata>=0.10'), one a line "
        "(default: the requirements of readers in [tool.spec-validate])",
    )
    parser.addini(
        "spec_validate_packs",
        type="linelist",
        default=[],
        help="YAML rule packs (paths from the rootdir) to use as well; one that extends a built-in pack replaces it",
    )


def _matches(config: pytest.Config, path: Path) -> bool:
    globs: Sequence[str] = config.getini("spec_validate_files")
    try:
        rel = path.relative_to(config.rootpath).as_posix()
    except ValueError:
        rel = path.as_posix()
    rel, name = rel.lower(), path.name.lower()
    return any(fnmatch.fnmatchcase(rel, g.lower()) or fnmatch.fnmatchcase(name, g.lower()) for g in globs)


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("spec_validate", default=False))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if _enabled(parent.config) and not file_path.name.endswith(".py") and _matches(parent.config, file_path):
        return DataFile.from_parent(parent, path=file_path)
    return None


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    # A directory store is one test, not a folder to walk: returning a collector stops the walk into it.
    if _enabled(parent.config) and path.name.lower().endswith(STORE_SUFFIXES) and _matches(parent.config, path):
        return DataFile.from_parent(parent, path=path)
    return None


class DataFile(pytest.File):
    """A data file (or store directory) collected by --spec-validate: one test item."""

    def collect(self):
        yield DataFileItem.from_parent(self, name="conforms")


class SpecValidateFailure(Exception):
    """The failed clauses of one data file."""


class DataFileItem(pytest.Item):
    """Validates one data file; each failed clause is listed in the failure."""

    def runtest(self) -> None:
        __tracebackhide__ = True
        settings = project_settings(self.config)
        value = self.config.getoption("spec_validate_fail_on", default=None) or self.config.getini("spec_validate_fail_on")
        fail_on = _level(value or settings.fail_on)
        readers = self.config.getoption("spec_validate_readers", default=None) or self.config.getini("spec_validate_readers")
        options = {"readers": list(readers)} if readers else {}
        report = SpecValidator(settings)(self.path, **options)  # validate() drops a base pack a user pack extends
        self.user_properties.append(("spec_validate_results", len(report.results)))
        failure = describe_gate_failures(report, fail_on, settings.fail_on_unchecked)
        if failure is not None:
            raise SpecValidateFailure(failure)

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if isinstance(excinfo.value, SpecValidateFailure):
            return str(excinfo.value)
        from spec_validate.errors import SpecValidateError

        if isinstance(excinfo.value, SpecValidateError):
            return f"{self.path}: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"spec-validate {self.path.name}"
