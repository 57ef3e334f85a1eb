"""The package's modules import each other top-down: no circle, and no layer reaches into one above it.

Imports are read from the source with `ast`, every one of them: function-local ones, and those under
`if TYPE_CHECKING:` too (a type-only import is still a dependency a reader has to follow). An edge goes to the
module named (`from spec_validate.nodes import base` names `spec_validate.nodes.base`), not to the packages above it.
"""

from __future__ import annotations

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spec_validate")


def _modules() -> dict[str, str]:
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                module = os.path.relpath(path[:-3], os.path.dirname(PACKAGE)).replace(os.sep, ".")
                found[module.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module of ours that `name` (a module or a name inside one) belongs to."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: str) -> set[str]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    targets: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(_owner(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in MODULES else _owner(base))
    return {t for t in targets if t and t != module}


GRAPH = {module: _imported(module, path) for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_layers_pass_no_import_circle():
    assert _cycles(GRAPH) == []


def test_layers_fail_on_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _in(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


# (layer, the modules of ours it may import), bottom up. Leaves import nothing of ours (`model` is the vocabulary every
# layer speaks); kernels are numpy only; storage moves bytes and knows no format; codecs turn bytes into values;
# nodes read formats over storage and codecs; primitives see nodes and kernels, never the engine or the reports;
# the engine runs primitives over nodes; reports render the model's results, never reaching into the engine.
LEAVES = (
    "spec_validate.model",
    "spec_validate.errors",
    "spec_validate.excerpt",
    "spec_validate.version",
    "spec_validate.discovery",
)
BELOW_NODES = ("spec_validate.storage", "spec_validate.codecs", "spec_validate.kernels", *LEAVES)
ALLOWED = [
    *((leaf, ()) for leaf in LEAVES),
    ("spec_validate.kernels", ("spec_validate.kernels", *LEAVES)),
    ("spec_validate.storage", ("spec_validate.storage", *LEAVES)),
    ("spec_validate.codecs", ("spec_validate.codecs", *LEAVES)),
    ("spec_validate.nodes", ("spec_validate.nodes", *BELOW_NODES)),
    ("spec_validate.checks", ("spec_validate.checks", "spec_validate.nodes", *BELOW_NODES)),
    ("spec_validate.engine", ("spec_validate.engine", "spec_validate.checks", "spec_validate.nodes", *BELOW_NODES)),
    ("spec_validate.report", ("spec_validate.report", *LEAVES)),
]


@pytest.mark.parametrize("layer,allowed", ALLOWED, ids=[layer for layer, _ in ALLOWED])
def test_layers_pass_each_imports_only_below_itself(layer, allowed):
    reaching_up = {m: sorted(t for t in GRAPH[m] if not _in(t, *allowed)) for m in GRAPH if _in(m, layer)}
    assert {m: t for m, t in reaching_up.items() if t} == {}


def test_layers_pass_reports_never_import_the_engine_or_checks():
    reaching_up = {
        m: sorted(t for t in GRAPH[m] if _in(t, "spec_validate.engine", "spec_validate.checks", "spec_validate.cli"))
        for m in GRAPH
        if _in(m, "spec_validate.report")
    }
    assert {m: t for m, t in reaching_up.items() if t} == {}


def test_layers_pass_storage_names_no_format_document():
    """A store moves bytes: the format reader tells it which keys to expect, no storage module reads a document."""
    names = (".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json")
    folder = os.path.join(PACKAGE, "storage")
    named = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                text = fh.read()
            found = [n for n in names if n in text]
            if found:
                named[name] = found
    assert named == {}
