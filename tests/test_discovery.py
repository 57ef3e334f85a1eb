"""A registry's modules: each module of a package imported once, the skipped ones never, loaded before any lookup."""

from __future__ import annotations

import sys
import threading

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
