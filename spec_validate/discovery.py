"""Finding a registry's modules: every module of one package, imported once, under a lock, when first needed.

Each extension point (kernels, output formats, era and writer detectors, container formats) is a registry filled
by a decorator beside the code; importing a module runs its decorators. A registry holds a `PackageModules` and
calls `load()` before a lookup that needs them all, so a new module needs no entry anywhere. Loading is under a lock
and the registry counts as loaded only once every module is imported: a scan thread that looks a name up while
another thread loads waits, rather than finding the registry half filled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any


class PackageModules:
    """The modules of the package `package` (or, with `submodule`, that module of each of its subpackages), less
    those named in `skip`: imported together, once."""

    def __init__(self, package: str, skip: tuple[str, ...] = (), submodule: str | None = None) -> None:
        self.package, self.skip, self.submodule = package, skip, submodule
        self.loaded = False
        self._lock = threading.Lock()

    def load(self) -> None:
        """Import every module (a no-op once done)."""
        with self._lock:
            if self.loaded:
                return
            import importlib.util
            import pkgutil

            package = importlib.import_module(self.package)
            for module in pkgutil.iter_modules(package.__path__):
                if module.name in self.skip:
                    continue
                name = f"{self.package}.{module.name}"
                if self.submodule is None:
                    importlib.import_module(name)
                elif module.ispkg and importlib.util.find_spec(f"{name}.{self.submodule}") is not None:
                    importlib.import_module(f"{name}.{self.submodule}")
            self.loaded = True


def claim(table: Mapping[str, Any], name: str, function: Callable[..., Any], what: str, held: Callable[[Any], Any]) -> None:
    """Check that `name` is free in the registry `table` for `function`; RuntimeError where another function holds it.

    The same function imported again (its module executed a second time, as pytest's in-process runs do when they
    restore `sys.modules`) takes its own place back: `held(entry)` gives the function an entry was registered for.
    """
    entry = table.get(name)
    if entry is None:
        return
    holder = held(entry)
    if (getattr(holder, "__module__", None), getattr(holder, "__qualname__", None)) != (
        function.__module__,
        function.__qualname__,
    ):
        raise RuntimeError(f"{what} {name!r} is registered twice")
