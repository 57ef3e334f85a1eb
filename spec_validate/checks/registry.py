"""Looking up check primitives by name: the built-in modules are imported on demand, plugins only when needed.

Primitives register themselves with `spec_validate.checks.api.check` when their module is imported. The built-in
modules are found, not listed: every module of this package but `api` and `registry` (a new module of primitives
needs no entry anywhere). This module imports them (and never the other way round), so the registry has no
import circle.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping

from spec_validate.checks.api import REGISTRY as _REGISTRY
from spec_validate.checks.api import Options, Primitive, check

__all__ = ["Options", "Primitive", "all_primitives", "builtin_primitives", "check", "get", "hint"]

_PACKAGE = "spec_validate.checks"
_NOT_PRIMITIVES = {"api", "registry"}
_loaded = False
_plugins_loaded = False
# A thread that looks a name up while another loads the modules waits for it (re-entrant: loading the plugins
# loads the built-in modules first).
_loading = threading.RLock()


def _load() -> None:
    global _loaded
    with _loading:
        if _loaded:
            return
        for module in builtin_modules():
            importlib.import_module(module)  # runs its @check decorators
        BUILTIN.update({name: p for name, p in _REGISTRY.items() if p.function.__module__.startswith(f"{_PACKAGE}.")})
        _loaded = True


def builtin_modules() -> list[str]:
    """The modules of this package that define primitives: every one but the decorator's and this one."""
    import pkgutil  # only for a full load: a run whose pack cache names each primitive's module skips it

    package = importlib.import_module(_PACKAGE)
    return [f"{_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if m.name not in _NOT_PRIMITIVES]


def _load_plugins() -> None:
    """Third-party primitives (entry-point group `spec_validate.checks`), loaded only when a name is not built in.

    Scanning installed distributions for entry points costs more than the rest of start-up, so a run whose
    packs use only built-in primitives never does it.
    """
    global _plugins_loaded
    with _loading:
        if _plugins_loaded:
            return
        _load()
        from importlib.metadata import entry_points

        for ep in entry_points(group="spec_validate.checks"):
            ep.load()
        _plugins_loaded = True


BUILTIN: dict[str, Primitive] = {}
_HINTS: dict[str, str] = {}


def hint(modules: Mapping[str, str]) -> None:
    """Where primitives are defined (name -> module), so `get` imports just that module, not every one.

    The pack cache records this when it validates a pack; a run on an .h5ad then never imports the
    Zarr, TileDB or hdmf-zarr primitives.
    """
    _HINTS.update(modules)


def get(name: str) -> Primitive | None:
    if name not in _REGISTRY and name in _HINTS and not _loaded:
        import contextlib

        with contextlib.suppress(ImportError):  # a stale hint: the full load below finds it, or reports it unknown
            importlib.import_module(_HINTS[name])
    if name not in _REGISTRY:
        _load()
    if name not in _REGISTRY:
        _load_plugins()
    return _REGISTRY.get(name)


def all_primitives() -> dict[str, Primitive]:
    """Every primitive, built in or from a plugin."""
    _load_plugins()
    return dict(sorted(_REGISTRY.items()))


def builtin_primitives() -> dict[str, Primitive]:
    """The primitives shipped with the tool (no plugin scan)."""
    _load()
    return dict(sorted(BUILTIN.items()))
