"""[tool.spec-validate] in pyproject.toml, found from the cwd upwards; CLI flags beat it (ruff precedence)."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import pytest
from corpus_paths import VALID_H5AD

from spec_validate.cli import main
from spec_validate.config import Config, load_config, merge
from spec_validate.errors import InputError

RULE = "anndata.dataframe.index-attr"

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project directory (the cwd) holding data/broken.h5ad, whose only failure is RULE at /obs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    shutil.copy(VALID_H5AD, tmp_path / "data/broken.h5ad")
    with h5py.File(tmp_path / "data/broken.h5ad", "a") as f:
        del f["obs"].attrs["_index"]
    return tmp_path


def write_config(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.spec-validate]\n" + body)


def test_config_ignore_makes_the_broken_file_pass(project):
    write_config(project, f'ignore = ["{RULE}"]\n')
    assert main(["data/broken.h5ad"]) == 0


def test_config_is_found_from_a_subdirectory(project, monkeypatch):
    write_config(project, 'ignore = ["anndata.dataframe"]\n')
    monkeypatch.chdir(project / "data")
    assert main(["broken.h5ad"]) == 0


def test_config_cli_select_beats_config_select(project):
    write_config(project, 'select = ["anndata.csr_matrix"]\n')
    assert main(["data/broken.h5ad"]) == 0
    assert main(["--select", "anndata.dataframe", "data/broken.h5ad"]) == 1


def test_config_cli_fail_on_beats_config_fail_on(project):
    with h5py.File(project / "data/broken.h5ad", "a") as f:
        f["obs"].attrs["_index"] = "_index"
    write_config(project, 'fail-on = "may"\n')
    assert load_config().fail_on == "may"
    assert main(["--fail-on", "must", "data/broken.h5ad"]) == 0


def test_config_per_path_ignores(project):
    write_config(project, f'[tool.spec-validate.per-path-ignores]\n"data/*.h5ad" = ["{RULE}"]\n')
    assert main(["data/broken.h5ad"]) == 0
    shutil.copy(project / "data/broken.h5ad", project / "other.h5ad")
    assert main(["other.h5ad"]) == 1


def test_config_isolated_ignores_the_config(project):
    write_config(project, f'ignore = ["{RULE}"]\n')
    assert main(["--isolated", "data/broken.h5ad"]) == 1


def test_config_unknown_key_is_exit_2(project, capsys):
    write_config(project, 'selekt = ["anndata"]\n')
    assert main(["data/broken.h5ad"]) == 2
    assert "selekt: unknown option" in capsys.readouterr().err


def test_config_unknown_rule_prefix_is_exit_2(project, capsys):
    write_config(project, 'ignore = ["anndata.no-such-element"]\n')
    assert main(["data/broken.h5ad"]) == 2
    assert "no rule matches 'anndata.no-such-element'" in capsys.readouterr().err


def test_config_bad_fail_on_is_rejected(project):
    write_config(project, 'fail-on = "sometimes"\n')
    with pytest.raises(InputError, match="fail-on"):
        load_config()


def test_config_packs_are_relative_to_the_pyproject(project):
    write_config(project, 'packs = ["packs/extra.yaml"]\n')
    config = load_config()
    assert config.packs == (str(project / "packs/extra.yaml"),)


def test_config_without_pyproject_is_empty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config() == Config()


def test_config_merge_follows_ruff_precedence():
    config = Config(select=("a",), ignore=("a.b",), extend_select=("c",), fail_on="should")
    s = merge(config, select=("x",), ignore=("y",), extend_select=("z",), fail_on=None)
    assert s.select == ("x",)
    assert s.ignore == ("a.b", "y")
    assert s.extend_select == ("c", "z")
    assert s.fail_on == "should"
    assert merge(config).select == ("a",)
    assert merge(config, fail_on="may").fail_on == "may"


@pytest.mark.parametrize(
    "setting,flag,expected",
    [
        pytest.param(None, None, False, id="default-off"),
        pytest.param(True, None, True, id="setting-on"),
        pytest.param(True, False, False, id="no-flag-beats-setting"),
        pytest.param(False, True, True, id="flag-beats-setting"),
    ],
)
def test_config_merge_fail_on_unchecked(setting, flag, expected):
    assert merge(Config(fail_on_unchecked=setting), fail_on_unchecked=flag).fail_on_unchecked is expected


def test_config_reads_fail_on_unchecked(project):
    write_config(project, "fail-on-unchecked = true\n")
    assert load_config().fail_on_unchecked is True
    write_config(project, "fail-on-unchecked = 1\n")
    with pytest.raises(InputError, match="fail-on-unchecked: expected true or false, got 1"):
        load_config()


def test_config_unrelated_pyproject_is_not_parsed(tmp_path, monkeypatch):
    # Only a file that may configure the tool is parsed as TOML: a project named spec-validate is not configured,
    # and a broken pyproject.toml of some other project on the way up is none of our business.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "spec-validate"\n\nthis is [not toml\n')
    monkeypatch.chdir(tmp_path)
    assert load_config() == Config()


def test_config_broken_pyproject_that_configures_the_tool_is_an_input_error(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.spec-validate]\nselect = ["anndata"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="cannot be read as TOML"):
        load_config()


@pytest.mark.parametrize(
    "table",
    [
        '[tool."spec-validate"]\nfail-on = "may"\n',
        'tool.spec-validate.fail-on = "may"\n',
        '[tool]\nspec-validate = { fail-on = "may" }\n',
        '[ tool . spec-validate ]\nfail-on = "may"\n',
    ],
)
def test_config_every_toml_spelling_of_the_table_is_found(tmp_path, monkeypatch, table):
    (tmp_path / "pyproject.toml").write_text(table)
    monkeypatch.chdir(tmp_path)
    assert load_config().fail_on == "may"


def test_merge_passes_exclude_defaults_config_and_flags(tmp_path, monkeypatch):
    # ruff's precedence: `exclude` replaces the default list, --exclude replaces both; the extend- forms add.
    from spec_validate import config as cfg
    from spec_validate.inputs import DEFAULT_EXCLUDE

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.spec-validate]\nexclude = ["old"]\nextend-exclude = ["tmp"]\n')
    loaded = cfg.load_config()
    assert [p for p, _ in cfg.merge(cfg.Config()).exclude] == list(DEFAULT_EXCLUDE)
    assert [p for p, _ in cfg.merge(loaded).exclude] == ["old", "tmp"]
    assert [p for p, _ in cfg.merge(loaded, exclude=["new"], extend_exclude=["more"]).exclude] == ["new", "tmp", "more"]
    assert {base for _, base in cfg.merge(loaded).exclude} == {str(tmp_path)}


@pytest.mark.parametrize("name", [".spec-validate.toml", "spec-validate.toml"])
def test_config_standalone_file_is_read_and_wins_over_the_pyproject_beside_it(tmp_path, monkeypatch, name):
    (tmp_path / "pyproject.toml").write_text('[tool.spec-validate]\nfail-on = "must"\n')
    (tmp_path / name).write_text('fail-on = "should"\nselect = ["anndata"]\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    loaded = load_config()
    assert (loaded.fail_on, loaded.select, loaded.source) == ("should", ("anndata",), str(tmp_path / name))


def test_config_standalone_file_with_an_unknown_key_names_the_file(tmp_path, monkeypatch):
    (tmp_path / "spec-validate.toml").write_text("selct = []\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"spec-validate\.toml: selct: unknown option"):
        load_config()


def test_config_broken_table_header_is_an_input_error_not_skipped(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.spec-validate\nselect = ["anndata"]\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"pyproject\.toml: cannot be read as TOML"):
        load_config()


def test_config_docs_url_links_the_report_and_the_flag_beats_it(project, capsys):
    write_config(project, 'docs-url = "https://docs.example.org/sv"\n')
    assert load_config().docs_url == "https://docs.example.org/sv/"
    assert main(["data/broken.h5ad", "--quiet"]) == 1
    assert f"    see https://docs.example.org/sv/rules/{RULE}.html" in capsys.readouterr().out.splitlines()
    assert main(["data/broken.h5ad", "--quiet", "--docs-url", "file:///srv/site"]) == 1
    assert f"    see file:///srv/site/rules/{RULE}.html" in capsys.readouterr().out.splitlines()
    assert main(["data/broken.h5ad", "--quiet", "--isolated"]) == 1
    assert f"    see spec-validate --explain {RULE}" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("value", ['"docs/site"', "3"], ids=["path", "number"])
def test_config_docs_url_that_is_no_url_is_exit_2(project, capsys, value):
    write_config(project, f"docs-url = {value}\n")
    assert main(["data/broken.h5ad", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spec-validate: error: ") and ": docs-url: expected " in err and err.count("\n") == 1
