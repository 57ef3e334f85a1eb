"""The primitive registry: every primitive documented, option schemas closed, registration returns the function,
and no primitive passes silently on a node lacking what it reads."""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil

import jsonschema
import numpy as np
import pytest
from dict_store import DictStore
from memory_tree import tree

from spec_validate.checks import registry
from spec_validate.checks.registry import all_primitives, check
from spec_validate.engine.loader import builtin_packs
from spec_validate.engine.run import Evaluation, Outcome, _advance, compute_facts
from spec_validate.engine.scope import PackScope
from spec_validate.model import CheckStep, Level, NotApplicable, Pack, Rule, Status
from spec_validate.nodes.base import Node, Tree
from spec_validate.nodes.zarr.tree import ZarrTree

PRIMITIVES = sorted(all_primitives())


@pytest.mark.parametrize("name", PRIMITIVES)
def test_primitive_passes_has_docstring_with_first_line(name):
    p = all_primitives()[name]
    assert p.doc.strip(), f"{name} has no docstring"
    assert p.doc.strip().splitlines()[0].strip(), f"{name}: the docstring's first line is empty"
    assert p.summary == p.doc.strip().splitlines()[0]


@pytest.mark.parametrize("name", PRIMITIVES)
def test_primitive_fails_options_with_unknown_key(name):
    schema = all_primitives()[name].options_schema
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors({"no_such_option": 1}))
    assert any(e.validator == "additionalProperties" for e in errors)


@pytest.mark.parametrize("name", PRIMITIVES)
def test_primitive_passes_options_schema_is_valid_json_schema(name):
    jsonschema.Draft202012Validator.check_schema(all_primitives()[name].options_schema)


def test_check_passes_returns_function_unchanged():
    def probe_primitive_for_test(node, options, scope):
        """Always holds."""
        return iter(())

    try:
        assert check()(probe_primitive_for_test) is probe_primitive_for_test
        assert registry.get("probe_primitive_for_test").function is probe_primitive_for_test
    finally:
        registry._REGISTRY.pop("probe_primitive_for_test", None)


def test_builtin_modules_are_found_not_listed():
    # Every module of the package but the decorator's and the registry's: a new module of primitives is found
    # without an entry anywhere.
    package = importlib.import_module("spec_validate.checks")
    found = {f"spec_validate.checks.{m.name}" for m in pkgutil.iter_modules(package.__path__)}
    assert set(registry.builtin_modules()) == found - {"spec_validate.checks.api", "spec_validate.checks.registry"}
    assert {p.function.__module__ for p in registry.builtin_primitives().values()} <= set(registry.builtin_modules())


def test_check_fails_registering_a_name_twice(monkeypatch):
    def attr_present(node, options, scope):  # another function under a registered name
        yield from ()

    with pytest.raises(RuntimeError, match="registered twice"):
        check()(attr_present)
    # The same function again (its module executed a second time) keeps its place; the entry it replaces (here with
    # no options) is put back after the test.
    from spec_validate.checks.api import REGISTRY

    monkeypatch.setitem(REGISTRY, "attr_present", REGISTRY["attr_present"])
    same = all_primitives()["attr_present"].function
    assert check()(same) is same


# ------------------------------------------------------------------------------------------ not applicable is raised
# A primitive that yields nothing is recorded as passed. So where it cannot judge its clause (the attribute,
# metadata field, child, referenced node, shape or length it reads is absent or unusable) it must raise
# NotApplicable (NotChecked), or yield a finding where absence is itself the violation: a silent return would
# be a false pass. Each built-in primitive runs, with the options of its first use in the built-in packs,
# on nodes that lack what primitives read, through the engine's own `_advance` (so `kind` and `dtype_kinds`
# are honoured as in a run), in trees of each format its packs apply to.

# Being rewritten by another change; their not-applicable cases are that change's to settle.
REWRITTEN = {"chunks_decode_to_chunk_size", "scalar_json_parses", "dataset_references_valid", "dataset_references_in_store"}


# Values that break every value clause of the packs (a decrease, a negative number), so that a pass on them can
# only come from a primitive that read nothing.
BAD_VALUES = np.array([2, -1, 5])


def lacking_tree(fmt: str) -> Tree:
    """Nodes lacking what primitives read, in a tree of format `fmt` (the root itself is not one of them).

    No Zarr node has a complete metadata document (with one, a metadata primitive lacks nothing it reads);
    arrays with values, a 0-d one among them, are in the memory trees.
    """
    if fmt == "zarr-v2":
        return ZarrTree(
            DictStore(
                {
                    ".zgroup": {"zarr_format": 2},
                    "g/.zgroup": {"zarr_format": 2},  # an empty group: no attributes, no children
                    "x/.zarray": b"not JSON",  # an array whose metadata document cannot be read
                    "e/.zarray": {},  # an array whose metadata document has no fields
                    "i/j/.zarray": {},  # i: an implicit group (no metadata document) above an array
                }
            ),
            2,
        )
    if fmt == "zarr-v3":
        return ZarrTree(
            DictStore(
                {
                    "zarr.json": {"zarr_format": 3, "node_type": "group"},
                    "g/zarr.json": {"zarr_format": 3, "node_type": "group"},
                    "x/zarr.json": b"not JSON",  # a node whose metadata document cannot be read
                    "e/zarr.json": {"zarr_format": 3, "node_type": "array"},  # an array with no shape, data type or codecs
                }
            ),
            3,
        )
    return tree(
        {
            "g": {},  # an empty group: no attributes, no children
            "a": BAD_VALUES,  # an array with no attributes
            "s": np.array(-1),  # a 0-d array
            "c": np.zeros(2, dtype=[("x", "<i4")]),  # a compound array with no string members
        },
        format=fmt,
    )


LACKING = {
    fmt: sorted(n.path for n in lacking_tree(fmt).walk() if n.path != "/") for fmt in ("hdf5", "tiledb", "zarr-v2", "zarr-v3")
}


def _first_uses() -> dict[str, tuple[Pack, CheckStep]]:
    first: dict[str, tuple[Pack, CheckStep]] = {}
    for p in builtin_packs():
        for rule in p.rules:
            for step in rule.check:
                first.setdefault(step.primitive, (p, step))
    return first


def _formats() -> dict[str, set[str]]:
    """The lacking trees' formats each primitive runs on: those of every pack using it (any, for a pack with none)."""
    formats: dict[str, set[str]] = {}
    for p in builtin_packs():
        mine = {f for f in LACKING if not p.formats or any(fnmatch.fnmatchcase(f, g) for g in p.formats)}
        for rule in p.rules:
            for step in rule.check:
                formats.setdefault(step.primitive, set()).update(mine)
    return formats


FIRST_USE = _first_uses()
FORMATS = _formats()
LACKING_CASES = [
    (name, fmt, path)
    for name in sorted(registry.builtin_primitives())
    if name not in REWRITTEN
    for fmt in sorted(FORMATS.get(name, ()))
    for path in LACKING[fmt]
]

# Passes that are right, each with its reason: absence is the passing condition the docstring's first line
# states, or the node lacks nothing the primitive reads. Nodes are "format:path"; "*" is every lacking node.
RIGHTFUL_PASSES: dict[str, tuple[str | set[str], str]] = {
    # Absence is the passing condition.
    "reserved_attr_absent": ("*", "passes when the node carries no attribute `key`: reserved for the root"),
    "attrs_document_object": ("*", "passes when `.zattrs` is absent or a JSON object: absent attributes are empty"),
    "absent_unless_sparse": ("*", "passes when the node at `other` is absent or a sparse TileDB array"),
    "metadata_keys_allowed": ("*", "passes when the document has no key outside `keys`: one with fewer keys has none"),
    "attr_references_marked": (
        "*",
        "passes when no attribute holds an unmarked reference object: a node without attributes holds none",
    ),
    "metadata_fields_understood": (
        {"zarr-v3:/e", "zarr-v3:/g"},
        "passes when the document has no field outside the spec's: one with fewer fields has none",
    ),
    "v2_documents_absent": ("*", "passes when no Zarr v2 document is stored beside zarr.json"),
    "array_documents_stored": ("*", "passes when no folder of chunk keys lacks a zarr.json: these groups store none"),
    "group_keys_known": ("*", "passes when no key lies beside the group's zarr.json and its children: these groups store none"),
    "group_keys_known_v2": ("*", "passes when no key lies beside the group's documents and children: these groups store none"),
    "prefixed_names_defined": ("*", "passes when no name at the node has the prefix: these nodes have none"),
    "ome_metadata_on_groups": ("*", "passes when the array's attributes hold no OME-Zarr key: these arrays have no attributes"),
    # The node lacks nothing the primitive reads.
    "node_kind": ("*", "reads only the node's kind, which every node has"),
    "ndim": ("*", "reads only the array's shape, which the memory arrays have"),
    "dtype_kind": ("*", "reads only the array's dtype, which the memory arrays have"),
    "dtype_kind_not": ("*", "reads only the array's dtype, which the memory arrays have"),
    "no_enum_type": ("*", "reads only the array's dtype, which the memory arrays have (none an enum)"),
    "no_enum_members": ("*", "reads only the array's dtype, which the memory arrays have (no member an enum)"),
    "group_document_present": ({"zarr-v2:/g"}, "/g is an explicit group (its .zgroup is stored): the passing condition"),
    "group_metadata_stored": (
        {"zarr-v3:/g", "zarr-v3:/x"},
        "/g and /x have a stored zarr.json (unreadable for /x, which the tree reports): the passing condition",
    ),
    "node_name_pattern": ("*", "reads only the node's name, which every non-root node has"),
    "metadata_equals": ({"zarr-v2:/g"}, "/g's .zgroup holds zarr_format 2, the value of the first use"),
    "children_are": (
        {"zarr-v2:/g", "hdf5:/g", "tiledb:/g", "zarr-v3:/g"},
        "/g is an empty group: it holds no child of another kind",
    ),
    "document_strict_json": ({"zarr-v2:/g"}, "/g's .zgroup is stored and is strict JSON, the passing condition"),
    "values_unique": ({"hdf5:/a", "tiledb:/a", "zarr-v2:/a", "zarr-v3:/a"}, "/a holds 2, -1, 5: no element repeats"),
    "values_nonzero": ({"hdf5:/a", "hdf5:/s"}, "/a holds 2, -1, 5 and /s holds -1: no element is zero"),
}


def rightful_pass(name: str, fmt: str, path: str) -> bool:
    nodes = RIGHTFUL_PASSES.get(name, (set(), ""))[0]
    return nodes == "*" or f"{fmt}:{path}" in nodes


def outcome(name: str, node: Node) -> Outcome:
    """The verdict of a one-step rule running primitive `name` on `node`, as a run reaches it (facts included)."""
    p, step = FIRST_USE[name]
    rule = Rule(f"test.{name}", Level.MUST, Level.MUST, "", "", "", {}, (step,), p.name)
    ev = Evaluation(rule, node, PackScope(p, node.tree.root))
    _advance(ev, None)
    if ev.outcome is None:  # waiting for array facts: compute them as the engine's scan would
        wanted = {r for w in ev.requests.values() if not isinstance(w, NotApplicable) for r in w.values()}
        _advance(ev, compute_facts(node, wanted, 7) if wanted else {})
    assert ev.outcome is not None
    return ev.outcome


def test_every_builtin_primitive_runs_on_lacking_nodes():
    assert set(registry.builtin_primitives()) >= REWRITTEN
    assert {name for name, _, _ in LACKING_CASES} | REWRITTEN == set(registry.builtin_primitives())


@pytest.mark.parametrize(("name", "fmt", "path"), LACKING_CASES, ids=[f"{n}-{f}:{p}" for n, f, p in LACKING_CASES])
def test_primitive_never_passes_on_a_node_lacking_its_input(name, fmt, path):
    got = outcome(name, lacking_tree(fmt).get(path))
    if got.status is Status.PASSED and rightful_pass(name, fmt, path):
        return
    assert got.status in (Status.NOT_APPLICABLE, Status.FAILED), (
        f"{name} on {fmt}:{path} is {got.status.value} ({got.reason}): where it cannot judge, it must raise "
        "NotApplicable (or yield a finding where absence is the violation)"
    )


@pytest.mark.parametrize("name", sorted(RIGHTFUL_PASSES))
def test_rightful_pass_still_passes_somewhere(name):
    # An entry on which the primitive no longer passes is stale: it would excuse a future silent pass.
    cases = [(fmt, path) for n, fmt, path in LACKING_CASES if n == name and rightful_pass(name, fmt, path)]
    assert any(outcome(name, lacking_tree(fmt).get(path)).status is Status.PASSED for fmt, path in cases)
