"""The pre-commit hook: .pre-commit-hooks.yaml, and the CLI mapping inner store keys to their store root."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from corpus_paths import CASES, VALID_H5AD
from corpus_paths import FAILING_ZARR as ZARR

from spec_validate.cli import main
from spec_validate.inputs import Input, discover, store_root

REPO = Path(__file__).resolve().parent.parent

CORPUS = REPO / "conformance-corpus"
SEURAT = CORPUS / "h5seurat" / "valid-every-element.h5Seurat"
NWB_ZARR = CORPUS / "hdmf-zarr" / "zarr-v2" / "valid-every-element.zarr"
PRE_COMMIT = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which("pre-commit")
SPEC_VALIDATE = shutil.which("spec-validate", path=os.path.dirname(sys.executable)) or shutil.which("spec-validate")

needs_corpus = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")
needs_pre_commit = pytest.mark.skipif(PRE_COMMIT is None or shutil.which("git") is None, reason="pre-commit or git missing")


def hook() -> dict:
    (entry,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    return entry


def test_precommit_manifest_declares_the_hook():
    h = hook()
    assert (h["id"], h["entry"], h["language"]) == ("spec-validate", "spec-validate", "python")
    files = re.compile(h["files"])
    for path in [
        "a.h5ad",
        "d/b.h5seurat",
        "d/b.h5Seurat",
        "A.H5AD",
        "c.h5mu",
        "x.zarr/X/.zattrs",
        "x.zarr/.zgroup",
        "s.cxg/obs/.zarray",
        "n.nwb.zarr/acquisition/.zattrs",
        "z.zarr.zip",
        "Z.Zarr.Zip",
        "X.ZARR/.zgroup",
    ]:
        assert files.search(path), path
    for path in ["a.h5ad.bak", "x.zarr.md", "notes.txt", "x.zarr", "x.zarr.zip.bak"]:
        assert not files.search(path), path


def test_precommit_docs_local_hook_uses_the_shipped_pattern():
    # docs/pre-commit.md's `repo: local` example must see what the shipped hook sees (it was case-sensitive, and
    # blind to .zarr.zip): the two patterns are one.
    text = (REPO / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)]
    local = [
        hook
        for b in blocks
        if isinstance(b, dict)
        for repo in b.get("repos", [])
        if repo.get("repo") == "local"
        for hook in repo["hooks"]
    ]
    assert local and all(hook["files"] == hook_files() for hook in local)


def hook_files() -> str:
    return hook()["files"]


def test_precommit_store_root_maps_inner_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.zarr/X/indptr").mkdir(parents=True)
    (tmp_path / "x.zarr/.zgroup").write_text("{}")
    (tmp_path / "x.zarr/X/.zattrs").write_text("{}")
    (tmp_path / "x.zarr/X/indptr/.zarray").write_text("{}")
    (tmp_path / "plain/X").mkdir(parents=True)  # a store whose name does not end in .zarr
    (tmp_path / "plain/.zgroup").write_text("{}")
    (tmp_path / "plain/X/.zgroup").write_text("{}")
    (tmp_path / "plain/X/.zattrs").write_text("{}")
    (tmp_path / "a.h5ad").write_bytes(b"")
    assert store_root("x.zarr/X/.zattrs") == "x.zarr"
    assert store_root("x.zarr/X/indptr/.zarray") == "x.zarr"
    assert store_root("x.zarr/X/indptr/0") == "x.zarr"
    assert store_root("x.zarr") == "x.zarr"
    assert store_root("plain/X/.zattrs") == "plain"
    # A directory inside a store names that node (validated with what lies below it), not the whole store.
    assert discover(["plain/X"]) == [Input("plain", "/X")]
    assert discover(["x.zarr/X/indptr", "x.zarr/X"]) == [Input("x.zarr", "/X")]
    assert store_root("a.h5ad") == "a.h5ad"
    assert store_root(str(tmp_path / "plain/X/.zattrs")) == str(tmp_path / "plain")  # spelled as given, not relative
    keys = ["x.zarr/X/.zattrs", "a.h5ad", "x.zarr/.zgroup", "x.zarr/X/indptr/.zarray", "a.h5ad"]
    assert discover(keys) == [Input("x.zarr"), Input("a.h5ad")]


@needs_corpus
def test_precommit_cli_validates_each_store_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ZARR, tmp_path / "bad.zarr")
    assert main(["bad.zarr/X/.zattrs", "bad.zarr/.zgroup", "bad.zarr/obs/.zattrs"]) == 1
    out = capsys.readouterr().out
    assert out.count("bad.zarr (zarr-v2") == 1
    assert "Summary" not in out  # one input after mapping


def git_repo(root: Path) -> None:
    """A git repository holding good.h5ad (valid) and bad.zarr/ (fails one MUST rule), all staged."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    shutil.copy(VALID_H5AD, root / "good.h5ad")
    shutil.copytree(ZARR, root / "bad.zarr")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)


def pre_commit(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1", "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([PRE_COMMIT, *args], cwd=root, env=env, capture_output=True, text=True, timeout=600)


def bad_keys(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "bad.zarr").rglob("*") if p.is_file())


@needs_corpus
@needs_pre_commit
def test_precommit_local_hook_passes_valid_and_fails_broken(tmp_path):
    # `repo: local` with `language: system` runs the installed command: offline, no environment to build.
    root = tmp_path / "project"
    git_repo(root)
    h = hook()
    (root / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump(
            {
                "repos": [
                    {
                        "repo": "local",
                        "hooks": [
                            {
                                "id": h["id"],
                                "name": h["name"],
                                "entry": SPEC_VALIDATE,
                                "language": "system",
                                "files": h["files"],
                                "require_serial": True,
                            }
                        ],
                    }
                ]
            }
        )
    )
    good = pre_commit(root, tmp_path / "home", "run", "spec-validate", "--files", "good.h5ad")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    bad = pre_commit(root, tmp_path / "home", "run", "spec-validate", "--files", *bad_keys(root))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "anndata.string.zarr-fixed-length-unicode" in bad.stdout
    assert bad.stdout.count("bad.zarr (zarr-v2") == 1  # every inner key mapped to one store
    both = pre_commit(root, tmp_path / "home", "run", "--all-files")
    assert both.returncode == 1
    assert "good.h5ad (hdf5" in both.stdout and "bad.zarr (zarr-v2" in both.stdout


def published_copy(src: Path) -> Path:
    """A copy of this repository as users fetch it, committed on `main` in `src` (never here): pre-commit only
    sees committed files."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True)
    for rel in files.stdout.splitlines():
        if rel.startswith(("conformance-corpus/", "bench/")) or not (REPO / rel).is_file():
            continue
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    subprocess.run(["git", "init", "-q", "-b", "main", str(src)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=src, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "copy"], cwd=src, check=True)
    return src


@needs_pre_commit
def test_precommit_docs_rev_exists_and_autoupdate_pins_a_commit(tmp_path):
    # The documented config named `rev: v0.1.0`, a tag that does not exist. The rev it names now must resolve in
    # the repository as published, and `pre-commit autoupdate` (which the docs say to run) must pin a commit.
    text = (REPO / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)]
    (remote,) = [repo for b in blocks if isinstance(b, dict) for repo in b.get("repos", []) if repo.get("repo") != "local"]
    src = published_copy(tmp_path / "src")
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{remote['rev']}^{{commit}}"], cwd=src, capture_output=True, text=True
    )
    assert found.returncode == 0, f"docs/pre-commit.md: rev {remote['rev']!r} names nothing in the repository"
    root = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    config = root / ".pre-commit-config.yaml"
    config.write_text(yaml.safe_dump({"repos": [{**remote, "repo": str(src)}]}))
    done = pre_commit(root, tmp_path / "home", "autoupdate")
    assert done.returncode == 0, done.stdout + done.stderr
    (pinned,) = yaml.safe_load(config.read_text())["repos"]
    assert pinned["rev"] == found.stdout.strip()  # no tag yet: the latest commit of the default branch


@needs_corpus
@needs_pre_commit
def test_precommit_try_repo_uses_the_published_hook(tmp_path):
    # The hook as users get it (`language: python`): pre-commit builds a virtualenv from a copy of this
    # repository. try-repo only sees committed files, so the copy is committed in tmp_path, never here.
    src = published_copy(tmp_path / "src")
    root = tmp_path / "project"
    git_repo(root)
    home = tmp_path / "home"
    good = pre_commit(root, home, "try-repo", str(src), "spec-validate", "--files", "good.h5ad")
    said = good.stdout + good.stderr
    if (
        good.returncode != 0
        and "Installing environment" in said
        and ("An error has occurred" in said or "An unexpected error" in said)
    ):
        pytest.skip("pre-commit could not build the hook environment (no package index reachable)")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = pre_commit(root, home, "try-repo", str(src), "spec-validate", "--files", *bad_keys(root))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert bad.stdout.count("bad.zarr (zarr-v2") == 1


def _zarr_zip(root: Path) -> str:
    import zipfile

    store = CASES / "zarr-v2" / "valid-every-element.zarr"
    with zipfile.ZipFile(root / "store.zarr.zip", "w") as zf:
        for p in sorted(store.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(store).as_posix())
    return "store.zarr.zip"


def _copy(source: Path, name: str):
    def make(root: Path) -> str:
        if source.is_dir():
            shutil.copytree(source, root / name)
        else:
            shutil.copy(source, root / name)
        return name

    return make


# One scratch repository per format a pack reads, each named as its writers name it.
FORMATS = [
    pytest.param(_copy(VALID_H5AD, "cells.h5ad"), "cells.h5ad (hdf5", id="h5ad"),
    pytest.param(_copy(VALID_H5AD, "CELLS.H5AD"), "CELLS.H5AD (hdf5", id="h5ad-upper-case"),
    pytest.param(_copy(SEURAT, "pbmc.h5Seurat"), "pbmc.h5Seurat (hdf5", id="h5Seurat"),
    pytest.param(_copy(SEURAT, "pbmc.h5seurat"), "pbmc.h5seurat (hdf5", id="h5seurat"),
    pytest.param(_copy(VALID_H5AD, "multi.h5mu"), "multi.h5mu (hdf5", id="h5mu"),
    pytest.param(_copy(CASES / "zarr-v2" / "valid-every-element.zarr", "cells.zarr"), "cells.zarr (zarr-v2", id="zarr"),
    pytest.param(_zarr_zip, "store.zarr.zip (zarr-v2", id="zarr.zip"),
    pytest.param(_copy(CORPUS / "cxg" / "cxg-0.3.0" / "valid-every-element.cxg", "atlas.cxg"), "atlas.cxg (tiledb", id="cxg"),
    pytest.param(_copy(NWB_ZARR, "session.nwb.zarr"), "session.nwb.zarr (zarr-v2", id="nwb.zarr"),
]


@needs_corpus
@needs_pre_commit
@pytest.mark.parametrize("make,header", FORMATS)
def test_precommit_hook_sees_every_format(tmp_path_factory, make, header):
    # Real pre-commit on a scratch repository holding one store: the shipped pattern must hand it to the hook
    # (before, `.zarr.zip` never reached it, and the documented local pattern skipped `.h5Seurat`).
    pytest.importorskip("tiledb") if "cxg" in header else None
    root = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    make(root)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    h = hook()
    (root / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump(
            {
                "repos": [
                    {
                        "repo": "local",
                        "hooks": [
                            {
                                "id": h["id"],
                                "name": h["name"],
                                "entry": SPEC_VALIDATE,
                                "language": "system",
                                "files": h["files"],
                                "require_serial": True,
                                "verbose": True,
                            }
                        ],
                    }
                ]
            }
        )
    )
    done = pre_commit(root, tmp_path_factory.getbasetemp() / "pre-commit-home", "run", "--all-files")
    said = done.stdout + done.stderr
    assert "(no files to check)" not in said, said
    assert done.returncode == 0, said
    assert said.count(header) == 1, said  # the store reached the hook, once
