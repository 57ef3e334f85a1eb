"""Looking up check primitives by name: the built-in modules are imported on demand, plugins only when needed.

Primitives register themselves with `spec_validate.checks.api.check` when their module is imported; this
module imports those modules (and never the other way round), so the registry has no import circle.
"""

from __future__ import annotations

from collections.abc import Mapping

from spec_validate.checks.api import REGISTRY as _REGISTRY
from spec_validate.checks.api import Options, Primitive, check

__all__ = ["Options", "Primitive", "all_primitives", "builtin_primitives", "check", "get", "hint"]

_loaded = False
_plugins_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    # Importing the modules runs their @check decorators.
    from spec_validate.checks import (  # noqa: F401
        arrays,
        attrs,
        awkward,
        cxg,
        h5seurat,
        hdmf_zarr,
        shapes,
        storage,
        structure,
        zarr_chunks,
        zarr_metadata,
        zarr_v3,
    )

    BUILTIN.update({name: p for name, p in _REGISTRY.items() if p.function.__module__.startswith("spec_validate.checks.")})


def _load_plugins() -> None:
    """Third-party primitives (entry-point group `spec_validate.checks`), loaded only when a name is not built in.

    Scanning installed distributions for entry points costs more than the rest of start-up, so a run whose
    packs use only built-in primitives never does it.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    _load()
    from importlib.metadata import entry_points

    for ep in entry_points(group="spec_validate.checks"):
        ep.load()


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
        import importlib

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
