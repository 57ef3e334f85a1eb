"""A registry's modules: each module of a package imported once, the skipped ones never, loaded before any lookup."""

from __future__ import annotations

import importlib
import sys
import threading

import pytest

from spec_validate.discovery import PackageModules


def _package(tmp_path, monkeypatch, name: str) -> None:
    root = tmp_path / name
    (root / "sub" / "inner").mkdir(parents=True)
    (root / "__init__.py").write_text("SEEN = []\n")
    for module in ("alpha", "beta", "registry"):
        (root / f"{module}.py").write_text(f"import {name}\n{name}.SEEN.append({module!r})\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "detect.py").write_text(f"import {name}\n{name}.SEEN.append('sub.detect')\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_discovery_imports_every_module_once_but_the_skipped(tmp_path, monkeypatch):
    _package(tmp_path, monkeypatch, "discovered_a")
    modules = PackageModules("discovered_a", skip=("registry",))
    threads = [threading.Thread(target=modules.load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert modules.loaded and sorted(sys.modules["discovered_a"].SEEN) == ["alpha", "beta"]


def test_discovery_imports_a_submodule_of_each_subpackage(tmp_path, monkeypatch):
    _package(tmp_path, monkeypatch, "discovered_b")
    PackageModules("discovered_b", submodule="detect").load()
    assert sys.modules["discovered_b"].SEEN == ["sub.detect"]


def test_claim_passes_a_registered_module_executed_again_and_fails_another_function():
    # pytest's in-process runs (pytester) restore sys.modules afterwards, and the next import executes a module
    # again: its decorators register the same functions once more. That must not stop the next run.
    import spec_validate.report.text as text
    from spec_validate.discovery import claim
    from spec_validate.report import formats

    formats.get("text")
    reloaded = importlib.reload(text)
    assert formats.get("text").render.__qualname__ == reloaded.render.__qualname__
    with pytest.raises(RuntimeError, match="output format 'text' is registered twice"):
        claim(formats.FORMATS, "text", lambda reports, options: "", "output format", lambda f: f.render)
