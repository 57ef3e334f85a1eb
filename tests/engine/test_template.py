"""Message templates: plain {name} lookups only; nothing is evaluated."""

from __future__ import annotations

import pytest

from spec_validate.engine.template import render


@pytest.mark.parametrize(
    "template,expected",
    [
        pytest.param("{path}: {detail}", "/X: bad", id="render-passes-names"),
        pytest.param("{unknown} stays", "{unknown} stays", id="render-passes-unknown-left-literal"),
        pytest.param("{0.__class__}", "{0.__class__}", id="render-passes-attribute-access-left-literal"),
        pytest.param("{path.__class__.__mro__}", "{path.__class__.__mro__}", id="render-passes-dotted-left-literal"),
        pytest.param("{path[0]}", "{path[0]}", id="render-passes-indexing-left-literal"),
        pytest.param("{path!r:>10}", "{path!r:>10}", id="render-passes-conversion-left-literal"),
        pytest.param("{{path}}", "{/X}", id="render-passes-no-brace-escaping"),
    ],
)
def test_render(template, expected):
    assert render(template, {"path": "/X", "detail": "bad"}) == expected
