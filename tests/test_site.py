"""The documentation site: its examples run as written, and it builds (mkdocs --strict) with a page per rule and
nothing fetched from the internet."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from spec_validate import cli
from spec_validate.engine.loader import builtin_packs

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def blocks(page: str, lang: str) -> list[str]:
    """The fenced code blocks of a docs page (or of ../README.md) in language `lang`, in order."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def run(capsys, command: str) -> tuple[int, str]:
    argv = shlex.split(command)
    assert argv[0] == "spec-validate"
    code = cli.main(argv[1:])
    return code, capsys.readouterr().out


def counts_hidden(text: str) -> str:
    """The report with its clause counts replaced: they change whenever a rule is added."""
    return re.sub(r"\d+ (failed|passed|n/a)", r"N \1", text)


@pytest.mark.parametrize("page", ["index.md", "../README.md"])
def test_getting_started_first_run_shows_the_real_report(capsys, monkeypatch, page):
    monkeypatch.chdir(ROOT)
    # The README's first command installs, then runs: the run is the part of it that calls spec-validate.
    parts = [p.strip() for b in blocks(page, "sh") for line in b.splitlines() for p in line.split("&&")]
    command = next(p for p in parts if "spec-validate conformance-corpus/" in p)
    code, out = run(capsys, command.removeprefix(".venv/bin/"))
    shown = next(b for b in blocks(page, "text") if b.startswith("conformance-corpus/"))
    assert code == 1
    assert counts_hidden(out).rstrip("\n") == counts_hidden(shown).rstrip("\n")


# Values of the JSON example that change with the pack (clause counts) or the release, not with the format.
VOLATILE = ("$.tool.version", "$.reports[0].summary.")


def test_report_formats_json_example_is_what_the_tool_writes(capsys, monkeypatch):
    # The example once lacked keys the tool writes (provenance, legacy, the notice counts) and ordered others
    # differently: it is compared with a real run of the command it names, key by key, in order.
    monkeypatch.chdir(ROOT)
    page = (DOCS / "report-formats.md").read_text(encoding="utf-8")
    command = re.search(r"^`(spec-validate [^`]+ --format json)` writes", page, flags=re.MULTILINE)
    (example,) = blocks("report-formats.md", "json")
    assert command is not None, "docs/report-formats.md: the JSON example names no command"
    code, out = run(capsys, command.group(1))
    assert code == 1
    _same_shape(json.loads(example), json.loads(out), "$")


def _same_shape(shown, real, where: str) -> None:
    """`shown` (the docs' example) is `real` (the tool's output), except that it may show fewer results (matched by
    id), cut a string at `...`, and differ in the VOLATILE values."""
    if isinstance(shown, dict):
        assert isinstance(real, dict) and list(shown) == list(real), f"{where}: keys {list(shown)} != {list(real)}"
        for key in shown:
            _same_shape(shown[key], real[key], f"{where}.{key}")
    elif isinstance(shown, list) and where.endswith(".results"):
        by_id = {r["id"]: r for r in real}
        assert shown and all(s["id"] in by_id for s in shown), f"{where}: ids not in the output"
        for s in shown:
            _same_shape(s, by_id[s["id"]], f"{where}[{s['id']}]")
    elif isinstance(shown, list):
        assert isinstance(real, list) and len(shown) == len(real), f"{where}: {shown!r} != {real!r}"
        for i, (s, r) in enumerate(zip(shown, real, strict=True)):
            _same_shape(s, r, f"{where}[{i}]")
    elif isinstance(shown, str) and shown.endswith("..."):
        assert isinstance(real, str) and real.startswith(shown[:-3].rstrip()), f"{where}: {real!r} does not start as shown"
    elif not where.startswith(VOLATILE):
        assert shown == real, f"{where}: {shown!r} != {real!r}"
    else:
        assert type(shown) is type(real), f"{where}: {shown!r} is not of the type of {real!r}"


def test_writing_packs_worked_example_runs_as_written(capsys, monkeypatch, tmp_path):
    (pack,) = [b for b in blocks("writing-packs.md", "yaml") if b.startswith("# lab-policy.yaml")]
    (tmp_path / "lab-policy.yaml").write_text(pack, encoding="utf-8")
    commands = blocks("writing-packs.md", "sh")
    outputs = blocks("writing-packs.md", "text")
    assert len(commands) == len(outputs) == 2

    # Against a corpus file, from the repository root, with the pack saved there.
    monkeypatch.chdir(ROOT)
    code, out = run(capsys, commands[0].strip().replace("lab-policy.yaml", str(tmp_path / "lab-policy.yaml")))
    assert code == 1 and out.rstrip("\n") == outputs[0].rstrip("\n")

    # The page's Python writes a file with the column; the pack then passes.
    monkeypatch.chdir(tmp_path)
    (snippet,) = blocks("writing-packs.md", "python")
    exec(compile(snippet, "writing-packs.md", "exec"), {})
    code, out = run(capsys, commands[1].strip())
    assert code == 0 and out.rstrip("\n") == outputs[1].rstrip("\n")


def test_writing_packs_lab_rule_explains(capsys, tmp_path):
    (pack,) = [b for b in blocks("writing-packs.md", "yaml") if b.startswith("# lab-policy.yaml")]
    (tmp_path / "lab-policy.yaml").write_text(pack, encoding="utf-8")
    code = cli.main(["--pack", str(tmp_path / "lab-policy.yaml"), "--explain", "lab"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("# lab.obs.sample-id (MUST)") and "Documentation:" not in out


# ------------------------------------------------------------------------------------------------ the built site
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_site_passes_builds_a_page_per_rule(site):
    ids = {r.id for p in builtin_packs() for r in p.rules}
    assert {p.stem for p in (site / "rules").glob("*.html")} == ids | {"index"}
    for page in (
        "index",
        "cli",
        "configuration",
        "ci",
        "pre-commit",
        "pytest",
        "writing-packs",
        "report-formats",
        "report-schema",
        "coverage",
        "packs",
    ):
        assert (site / f"{page}.html").is_file(), page
    assert (site / "spec-notes.html").is_file() == (DOCS / "spec-notes.md").is_file()


EXTERNAL = re.compile(
    r"<script[^>]*\ssrc=\"https?://|<link[^>]*\shref=\"https?://[^\"]*\"[^>]*stylesheet"
    r"|<link[^>]*stylesheet[^>]*\shref=\"https?://|fonts\.(googleapis|gstatic)\.com"
)


def test_site_passes_loads_nothing_from_the_internet(site):
    offending = [str(p.relative_to(site)) for p in site.rglob("*.html") if EXTERNAL.search(p.read_text(encoding="utf-8"))]
    assert offending == []
