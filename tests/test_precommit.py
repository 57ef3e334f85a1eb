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

from validator.cli import main, store_root, store_roots

REPO = Path(__file__).resolve().parent.parent
from corpus_paths import FAILING_ZARR as ZARR
from corpus_paths import VALID_H5AD

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
    for path in ["a.h5ad", "d/b.h5seurat", "c.h5mu", "x.zarr/X/.zattrs", "x.zarr/.zgroup", "s.cxg/obs/.zarray"]:
        assert files.search(path), path
    for path in ["a.h5ad.bak", "x.zarr.md", "notes.txt", "x.zarr"]:
        assert not files.search(path), path


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
    assert store_root("plain/X") == "plain"
    assert store_root("a.h5ad") == "a.h5ad"
    assert store_roots(["x.zarr/X/.zattrs", "a.h5ad", "x.zarr/.zgroup", "x.zarr/X/indptr/.zarray", "a.h5ad"]) == [
        "x.zarr",
        "a.h5ad",
    ]


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


@needs_corpus
@needs_pre_commit
def test_precommit_try_repo_uses_the_published_hook(tmp_path):
    # The hook as users get it (`language: python`): pre-commit builds a virtualenv from a copy of this
    # repository. try-repo only sees committed files, so the copy is committed in tmp_path, never here.
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True)
    for rel in files.stdout.splitlines():
        if rel.startswith(("conformance-corpus/", "bench/")) or not (REPO / rel).is_file():
            continue
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=src, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "copy"], cwd=src, check=True)
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
