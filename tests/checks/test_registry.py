"""The primitive registry: every primitive documented, option schemas closed, registration returns the function."""

from __future__ import annotations

import jsonschema
import pytest

from validator.checks import registry
from validator.checks.registry import all_primitives, check

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


def test_check_fails_registering_a_name_twice():
    with pytest.raises(RuntimeError, match="registered twice"):
        check()(all_primitives()["attr_present"].function)
