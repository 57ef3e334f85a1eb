"""The output-format registry: every format registered by name beside its renderer, one signature for all, the CLI
writing exactly what the registry renders, and a lookup that imports only the renderer it names."""

from __future__ import annotations

import inspect
import json
import pkgutil
import subprocess
import sys

import pytest
from corpus_paths import FAILING_ZARR, VALID_H5AD

import spec_validate
import spec_validate.report
from spec_validate.cli import build_parser, main
from spec_validate.errors import SpecValidateError
from spec_validate.model import Level
from spec_validate.report import baseline as bl
from spec_validate.report import formats
from spec_validate.report.options import RenderOptions

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")

NAMES = formats.names()


def test_the_builtin_formats_are_registered_each_in_its_own_module():
    assert NAMES == ["github", "html", "json", "jsonl", "junit", "markdown", "sarif", "text"]
    for name in NAMES:
        assert formats.get(name).render.__module__ == f"spec_validate.report.{name}"  # the lookup's hint holds
    modules = {m.name for m in pkgutil.iter_modules(spec_validate.report.__path__)}
    assert set(NAMES) <= modules


@pytest.mark.parametrize("name", NAMES)
def test_every_renderer_has_the_one_signature_and_a_summary(name):
    found = formats.get(name)
    assert list(inspect.signature(found.render).parameters) == ["reports", "options"]
    assert found.summary


def test_cli_format_choices_are_the_registered_formats():
    (action,) = [a for a in build_parser()._actions if a.dest == "format"]
    assert list(action.choices) == NAMES
    assert "no-such-format" not in action.choices


# A streamed format writes each report as its input finishes (in the order they finish) after a run line naming the
# run's settings: tests/report/test_jsonl.py compares it line by line with what the registry renders.
@pytest.mark.parametrize("name", [n for n in NAMES if formats.get(n).stream is None])
def test_cli_writes_what_the_registry_renders(name, broken_h5ad_here, tmp_path):
    # Two failing inputs and a baseline holding the findings of one, so every option a format reads makes a difference.
    inputs = [broken_h5ad_here, str(FAILING_ZARR)]
    main([broken_h5ad_here, "--write-baseline", "known.json", "--output", "/dev/null"])
    known = bl.load("known.json")
    assert main([*inputs, "--format", name, "--fail-on", "should", "--baseline", "known.json", "-o", "cli.out"]) == 1
    reports = [spec_validate.validate(p) for p in inputs]
    rendered = formats.get(name).render(
        reports, RenderOptions(fail_on=Level.SHOULD, baseline=known, rule_help=spec_validate._rule_help)
    )
    written = (tmp_path / "cli.out").read_bytes()
    assert written == (rendered if isinstance(rendered, bytes) else rendered.encode())
    assert spec_validate.render(reports, name, fail_on="should", baseline=known) == rendered


@pytest.mark.parametrize("name", ["text", "json"])
def test_cli_statistics_are_what_the_registry_renders_with_statistics(name, broken_h5ad_here, tmp_path):
    assert main([broken_h5ad_here, "--statistics", "--format", name, "-o", "cli.out"]) == 1
    rendered = spec_validate.render(spec_validate.validate(broken_h5ad_here), name, statistics=True)
    assert (tmp_path / "cli.out").read_text() == rendered
    if name == "json":
        assert [row["rule"] for row in json.loads(rendered)] == ["anndata.dataframe.index-attr"]


def test_sarif_help_comes_from_the_options_not_the_engine(broken_h5ad_here):
    report = spec_validate.validate(broken_h5ad_here)
    sarif = formats.get("sarif").render
    given = json.loads(sarif([report], RenderOptions(rule_help=lambda rule: f"help for {rule.id}")))
    rules = given["runs"][0]["tool"]["driver"]["rules"]
    assert rules and all(r["help"]["text"] == f"help for {r['id']}" for r in rules)
    plain = json.loads(sarif([report], RenderOptions()))["runs"][0]["tool"]["driver"]["rules"]
    assert all(r["help"]["text"] == r["fullDescription"]["text"] for r in plain)  # without it: the clause


def test_output_format_returns_the_function_and_refuses_a_name_twice():
    def probe(reports, options):
        """A probe format."""
        return b"probe"

    try:
        assert formats.output_format("probe-format-for-test")(probe) is probe
        assert formats.get("probe-format-for-test").summary == "A probe format."
        assert spec_validate.render([], "probe-format-for-test") == b"probe"
        with pytest.raises(RuntimeError, match="registered twice"):
            formats.output_format("probe-format-for-test")(lambda reports, options: b"other")
    finally:
        formats.FORMATS.pop("probe-format-for-test", None)


def test_an_unknown_format_is_a_one_line_error(capsys):
    with pytest.raises(SpecValidateError, match=r"no output format 'yaml' \(one of: github, html, json, "):
        spec_validate.render([], "yaml")
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main([str(VALID_H5AD), "--format", "yaml"])
    assert exited.value.code == 2
    assert "invalid choice: 'yaml'" in capsys.readouterr().err


def test_a_binary_format_is_written_as_bytes(broken_h5ad_here, tmp_path, monkeypatch):
    monkeypatch.setitem(formats.FORMATS, "bytes", formats.OutputFormat("bytes", lambda reports, options: b"\x00\xff", ""))
    assert main([broken_h5ad_here, "--format", "bytes", "-o", "out.bin", "--exit-zero"]) == 0
    assert (tmp_path / "out.bin").read_bytes() == b"\x00\xff"


def test_looking_up_a_format_imports_only_its_renderer():
    code = (
        "import json, sys; from spec_validate.report import formats; formats.get('json'); "
        "print(json.dumps([m for m in sys.modules if m.startswith('spec_validate.report.')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "spec_validate.report.json" in loaded
    assert not loaded & {f"spec_validate.report.{n}" for n in NAMES if n != "json"}
