"""pytest plugin (entry point `pytest11`): the `spec_validate` fixture and `pytest --spec-validate` collection."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from validator import assert_conforms, describe_failures, validate
from validator.report.model import Level, Report

STORE_SUFFIXES = (".zarr", ".cxg")


class SpecValidator:
    """What the `spec_validate` fixture gives a test: `spec_validate(path)` -> Report, and `.assert_conforms`."""

    def __call__(self, path: str | os.PathLike[str], **kwargs: Any) -> Report:
        return validate(path, **kwargs)

    def assert_conforms(self, path: str | os.PathLike[str], fail_on: str | Level = "must", **kwargs: Any) -> Report:
        return assert_conforms(path, fail_on=fail_on, **kwargs)


@pytest.fixture
def spec_validate() -> SpecValidator:
    """Validate stores from a test: `spec_validate.assert_conforms(tmp_path / "x.h5ad")`."""
    return SpecValidator()


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
        choices=("must", "should", "may"),
        default=None,
        help="lowest level whose failure fails a data-file test (default: spec_validate_fail_on or must)",
    )
    parser.addini(
        "spec_validate_files",
        type="linelist",
        default=["*.h5ad", "*.zarr"],
        help="globs of data files (and .zarr/.cxg store directories) that --spec-validate collects",
    )
    parser.addini("spec_validate_fail_on", default="must", help="must, should or may (default: must)")
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
    return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(path.name, g) for g in globs)


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

    def _fail_on(self) -> Level:
        value = self.config.getoption("spec_validate_fail_on", default=None) or self.config.getini("spec_validate_fail_on")
        return Level(str(value).upper())

    def _packs(self) -> list[Path]:
        return [self.config.rootpath / p for p in self.config.getini("spec_validate_packs")]

    def runtest(self) -> None:
        fail_on = self._fail_on()
        report = validate(self.path, extra_packs=self._packs())  # validate() drops a base pack a user pack extends
        self.user_properties.append(("spec_validate_results", len(report.results)))
        if report.fails_at(fail_on):
            raise SpecValidateFailure(describe_failures(report, fail_on))

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if isinstance(excinfo.value, SpecValidateFailure):
            return str(excinfo.value)
        from validator.errors import SpecValidateError

        if isinstance(excinfo.value, SpecValidateError):
            return f"{self.path}: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"spec-validate {self.path.name}"
