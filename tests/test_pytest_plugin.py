"""The pytest plugin: `spec_validate` fixture, `spec_validate.assert_conforms`, and `pytest --spec-validate` collection."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import pytest
from corpus_paths import CASES, VALID_H5AD
from corpus_paths import FAILING_ZARR as ZARR
from docs_examples import extends_example

import spec_validate

pytest_plugins = ["pytester"]


pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


def make_data(root: Path) -> None:
    """root/data/{good.h5ad, bad.h5ad (no _index on /obs), rich.zarr (fails one MUST rule)}."""
    (root / "data").mkdir()
    shutil.copy(VALID_H5AD, root / "data/good.h5ad")
    shutil.copy(VALID_H5AD, root / "data/bad.h5ad")
    with h5py.File(root / "data/bad.h5ad", "a") as f:
        del f["obs"].attrs["_index"]
    shutil.copytree(ZARR, root / "data/rich.zarr")


def test_assert_conforms_passes_on_a_valid_file():
    report = spec_validate.assert_conforms(VALID_H5AD)
    assert not report.fails_at(spec_validate.Level.MUST)


def test_assert_conforms_lists_failed_clauses(tmp_path):
    make_data(tmp_path)
    with pytest.raises(AssertionError) as excinfo:
        spec_validate.assert_conforms(tmp_path / "data/bad.h5ad")
    text = str(excinfo.value)
    assert "bad.h5ad does not conform (fail_on=must): 1 clause(s) failed" in text
    assert "FAILED MUST anndata.dataframe.index-attr" in text
    assert "/obs: attribute '_index' is missing" in text
    assert '\u201cMUST contain the field `"_index"`' in text


def test_assert_conforms_deep_decodes_chunks():
    truncated = Path(__file__).resolve().parents[1] / "conformance-corpus/zarr/zarr-v2/chunk-truncated.zarr"
    spec_validate.assert_conforms(truncated)  # without deep the chunk rule is not checked, which fails nothing
    with pytest.raises(AssertionError, match=r"zarr\.chunks\.decoded-size"):
        spec_validate.assert_conforms(truncated, deep=True)


def test_assert_conforms_fail_on_unchecked_lists_what_was_not_checked():
    # Without deep the chunk clause is not checked: it fails nothing, unless fail_on_unchecked asks.
    store = Path(__file__).resolve().parents[1] / "conformance-corpus/zarr/zarr-v2/valid-every-element.zarr"
    spec_validate.assert_conforms(store)
    with pytest.raises(AssertionError) as excinfo:
        spec_validate.assert_conforms(store, fail_on_unchecked=True)
    text = str(excinfo.value)
    assert "does not conform (fail_on=must): 0 clause(s) failed, 1 not checked on every node (fail_on_unchecked)" in text
    assert "  NOT CHECKED MUST zarr.chunks.decoded-size" in text.splitlines()
    assert any(line.startswith("    not checked: /") and line.endswith(": needs --deep") for line in text.splitlines())
    spec_validate.assert_conforms(store, fail_on_unchecked=True, deep=True)


def test_plugin_reads_fail_on_unchecked_from_the_configuration(pytester):
    store = Path(__file__).resolve().parents[1] / "conformance-corpus/zarr/zarr-v2/valid-every-element.zarr"
    shutil.copytree(store, pytester.path / "data" / "v.zarr")
    pytester.makepyprojecttoml(
        '[tool.spec-validate]\nfail-on-unchecked = true\n[tool.pytest.ini_options]\nspec_validate_files = ["data/*.zarr"]\n'
    )
    result = pytester.runpytest("--spec-validate", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*NOT CHECKED MUST zarr.chunks.decoded-size*"])
    pytester.makepyfile(
        "def test_fixture(spec_validate):\n"
        "    spec_validate.assert_conforms('data/v.zarr', deep=True)\n"
        "    spec_validate.assert_conforms('data/v.zarr', fail_on_unchecked=False)\n"
    )
    pytester.runpytest("-k", "fixture").assert_outcomes(passed=1)


def test_assert_conforms_select_narrows_the_rules(tmp_path):
    make_data(tmp_path)
    spec_validate.assert_conforms(tmp_path / "data/bad.h5ad", select=["anndata.csr_matrix"])


def test_plugin_fixture_in_a_user_test_suite(pytester):
    make_data(pytester.path)
    pytester.makepyfile(
        """
        def test_good(spec_validate):
            report = spec_validate("data/good.h5ad")
            assert report.results
            spec_validate.assert_conforms("data/good.h5ad")

        def test_bad(spec_validate):
            spec_validate.assert_conforms("data/bad.h5ad")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError*bad.h5ad does not conform*", "*FAILED MUST anndata.dataframe.index-attr*"])


def test_plugin_collects_data_files_with_spec_validate(pytester):
    make_data(pytester.path)
    pytester.makeini("[pytest]\nspec_validate_files =\n    data/*.h5ad\n    data/*.zarr\n")
    result = pytester.runpytest("--spec-validate", "-rf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*spec-validate bad.h5ad*",
            "*FAILED MUST anndata.dataframe.index-attr*",
            "*/obs: attribute '_index' is missing*",
        ]
    )
    result.stdout.fnmatch_lines(["*FAILED MUST anndata.string.zarr-fixed-length-unicode*"])
    result.stdout.fnmatch_lines(["FAILED data/bad.h5ad::conforms*", "FAILED data/rich.zarr::conforms*"])


def test_plugin_collects_nothing_without_the_flag(pytester):
    make_data(pytester.path)
    pytester.makeini("[pytest]\nspec_validate_files = data/*\n")
    result = pytester.runpytest()
    result.assert_outcomes()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_plugin_fail_on_option(pytester):
    make_data(pytester.path)
    pytester.makeini("[pytest]\nspec_validate_files = data/good.h5ad\n")
    result = pytester.runpytest("--spec-validate", "--spec-validate-fail-on", "may")
    result.assert_outcomes(passed=1)


def failure_section(result: pytest.RunResult) -> str:
    """pytest's output up to its short summary, which repeats each message in full where CI is set."""
    return result.stdout.str().split("short test summary info")[0]


def test_plugin_packs_option_replaces_the_pack_it_extends(pytester):
    # The docs' example pack makes the SHOULD clause chunks-shared MUST: the file fails, and the clause once.
    (pytester.path / "data").mkdir()
    shutil.copy(CASES / "h5ad" / "dataframe-chunks-not-shared.h5ad", pytester.path / "data/chunks.h5ad")
    (pytester.path / "lab-policy.yaml").write_text(extends_example(), encoding="utf-8")
    pytester.makeini("[pytest]\nspec_validate_files = data/*.h5ad\n")
    pytester.runpytest("--spec-validate").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nspec_validate_files = data/*.h5ad\nspec_validate_packs = lab-policy.yaml\n")
    result = pytester.runpytest("--spec-validate")
    result.assert_outcomes(failed=1)
    assert failure_section(result).count("FAILED MUST anndata.dataframe.chunks-shared") == 1


def test_plugin_reads_tool_spec_validate_as_the_cli_does(pytester):
    # Before, `pytest --spec-validate` ignored [tool.spec-validate]: the CLI and the plugin disagreed about one file.
    from spec_validate.cli import main

    make_data(pytester.path)
    pytester.makepyprojecttoml(
        '[tool.spec-validate]\nignore = ["anndata.dataframe.index-attr"]\n'
        '[tool.pytest.ini_options]\nspec_validate_files = ["data/bad.h5ad"]\n'
    )
    assert main(["data/bad.h5ad"]) == 0  # pytester runs in its own directory: the CLI reads the same file
    pytester.runpytest("--spec-validate").assert_outcomes(passed=1)
    pytester.makepyfile("def test_fixture(spec_validate):\n    spec_validate.assert_conforms('data/bad.h5ad')\n")
    pytester.runpytest("-k", "fixture").assert_outcomes(passed=1)


def test_plugin_reads_fail_on_and_per_path_ignores_from_the_configuration(pytester):
    make_data(pytester.path)
    shutil.copy(CASES / "h5ad" / "dataframe-chunks-not-shared.h5ad", pytester.path / "data/chunks.h5ad")  # a SHOULD failure
    pytester.makepyprojecttoml(
        '[tool.spec-validate]\nfail-on = "SHOULD"\n'
        '[tool.spec-validate.per-path-ignores]\n"data/bad.h5ad" = ["anndata.dataframe"]\n'
        '[tool.pytest.ini_options]\nspec_validate_files = ["data/*.h5ad"]\n'
    )
    result = pytester.runpytest("--spec-validate", "-rf")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED data/chunks.h5ad::conforms*"])
    pytester.runpytest("--spec-validate", "--spec-validate-fail-on", "MUST").assert_outcomes(passed=3)  # the option wins


def test_plugin_failure_shows_the_report_not_the_plugins_source(pytester):
    # Before, a failing assert_conforms showed some 35 lines of library source before the message.
    make_data(pytester.path)
    pytester.makepyfile(
        """
        import spec_validate

        def test_function():
            spec_validate.assert_conforms("data/bad.h5ad")

        def test_fixture(spec_validate):
            spec_validate.assert_conforms("data/bad.h5ad")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    out = failure_section(result)
    assert out.count("data/bad.h5ad does not conform (fail_on=must): 1 clause(s) failed") == 2
    for source in ("def assert_conforms", "__tracebackhide__", "report = validate(", "raise AssertionError(describe_failures"):
        assert source not in out, source


def test_plugin_collects_every_format_by_default_in_any_case(pytester):
    (pytester.path / "data").mkdir()
    shutil.copy(VALID_H5AD, pytester.path / "data/cells.H5AD")
    shutil.copy(CASES.parent / "h5seurat" / "valid-every-element.h5Seurat", pytester.path / "data/pbmc.h5Seurat")
    result = pytester.runpytest("--spec-validate", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*data/cells.H5AD::conforms PASSED*", "*data/pbmc.h5Seurat::conforms PASSED*"])


ZARR_V3 = Path(__file__).resolve().parents[1] / "conformance-corpus/anndata/zarr-v3/valid-every-element.zarr"


def test_assert_conforms_reader_gate_names_each_version_predicted_not_to_open():
    # anndata writes Zarr v3 from 0.12: the measured 0.10 and 0.11 releases do not open the store, 0.12 and 0.13 do.
    spec_validate.assert_conforms(ZARR_V3, readers=["anndata>=0.12"])
    with pytest.raises(AssertionError) as excinfo:
        spec_validate.assert_conforms(ZARR_V3, readers=["anndata>=0.10"])
    text = str(excinfo.value)
    assert "valid-every-element.zarr does not meet the reader requirements: 2 miss(es)" in text
    assert "does not conform" not in text  # it conforms: only the gate fails
    assert "READERS anndata>=0.10: anndata 0.10.9 does not open: " in text
    assert "READERS anndata>=0.10: anndata 0.11.4 does not open: " in text


def test_plugin_reader_gate_from_the_option_the_ini_file_and_the_configuration(pytester):
    (pytester.path / "data").mkdir()
    shutil.copytree(ZARR_V3, pytester.path / "data/v3.zarr")
    pytester.makeini("[pytest]\nspec_validate_files = data/*.zarr\n")
    pytester.runpytest("--spec-validate").assert_outcomes(passed=1)
    result = pytester.runpytest("--spec-validate", "--spec-validate-readers", "anndata>=0.10")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*READERS anndata>=0.10: anndata 0.10.9 does not open*"])
    pytester.runpytest("--spec-validate", "--spec-validate-readers", "anndata>=0.12").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nspec_validate_files = data/*.zarr\nspec_validate_readers = anndata>=0.11\n")
    pytester.runpytest("--spec-validate").assert_outcomes(failed=1)
    # The option replaces the ini file's requirements, as --readers replaces the configuration's.
    pytester.runpytest("--spec-validate", "--spec-validate-readers", "anndata>=0.12").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nspec_validate_files = data/*.zarr\n")
    pytester.makepyprojecttoml('[tool.spec-validate]\nreaders = ["anndata>=0.11"]\n')
    pytester.runpytest("--spec-validate").assert_outcomes(failed=1)
    pytester.makepyfile(
        """
        def test_configured(spec_validate):
            spec_validate.assert_conforms("data/v3.zarr")

        def test_replaced(spec_validate):
            spec_validate.assert_conforms("data/v3.zarr", readers=["anndata>=0.12"])

        def test_verdicts(spec_validate):
            report = spec_validate("data/v3.zarr")
            assert report.readers is not None and report.readers.required == ("anndata>=0.11",)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_configured*", "*READERS anndata>=0.11: anndata 0.11.4 does not open*"])
