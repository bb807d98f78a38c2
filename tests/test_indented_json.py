"""``mtp_audit.formats.indented.dumps`` writes exactly what ``json.dumps(obj, indent=2, sort_keys=True,
ensure_ascii=False)`` writes (the JSON and SARIF reports depend on it byte for byte), on generated documents and
on hand-picked special values, and raises what ``json.dumps`` raises."""

from __future__ import annotations

import json
import math
from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.formats.indented import dumps


def std(obj: object) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8))
keys = st.text(max_size=6)
documents = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=5), st.tuples(kids, kids),
                                                         st.dictionaries(keys, kids, max_size=5)), max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(documents)
def test_same_text_as_json_dumps(doc: object) -> None:
    assert dumps(doc) == std(doc)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.none()), scalars,
                       max_size=4))
def test_non_string_keys_as_json_dumps(doc: dict) -> None:
    """Non-string keys: converted (``1`` -> ``"1"``) exactly as the standard encoder does, or the same error."""
    try:
        expected = std(doc)
    except TypeError:
        with pytest.raises(TypeError):
            dumps(doc)
        return
    assert dumps(doc) == expected
    assert dumps({"a": [doc]}) == std({"a": [doc]})


def test_special_values() -> None:
    doc = {"facts": {"x": [1, 2.5, math.inf, -math.inf, float("nan"), "é\n\"", None, True]}, "empty": [{}, [], ()],
           "od": OrderedDict(b=1, a=2), "deep": [[[[{"k": [{"z": 1, "a": {}}]}]]]]}
    assert dumps(doc) == std(doc)


@pytest.mark.parametrize("bad", [{"a": {1, 2}}, {"a": [b"x"]}, {"a": {"b": object()}}])
def test_what_json_cannot_hold_raises_as_json_dumps(bad: object) -> None:
    with pytest.raises(TypeError):
        std(bad)
    with pytest.raises(TypeError):
        dumps(bad)


def test_circular_reference_raises_value_error() -> None:
    a: list = []
    a.append({"a": a})
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(a)
