"""``mtp_audit.formats.indented.dumps`` writes exactly what ``json.dumps(obj, indent=2, sort_keys=True,
ensure_ascii=False)`` writes for finite numbers (the JSON and SARIF reports depend on it byte for byte), on generated
documents and on hand-picked special values, and raises what ``json.dumps`` raises; NaN and the infinities are
written as strings, so the text is strict JSON (RFC 8259)."""

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


def strict(text: str) -> object:
    """``json.loads`` that refuses the bare ``NaN`` / ``Infinity`` / ``-Infinity`` Python's ``json`` accepts."""
    def refuse(constant: str) -> object:
        raise AssertionError(f"bare {constant} in the JSON text")
    return json.loads(text, parse_constant=refuse)


def as_text(obj: object) -> object:
    """The document with NaN / infinite floats replaced by Python json's spelling of them, as strings."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return json.dumps(obj)
    if isinstance(obj, dict):
        return {k: as_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_text(v) for v in obj]
    return obj


def scalars_of(finite: bool) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=not finite, allow_infinity=not finite),
                     st.text(max_size=8))


keys = st.text(max_size=6)
scalars = scalars_of(finite=False)


def documents_of(finite: bool) -> st.SearchStrategy[object]:
    return st.recursive(scalars_of(finite), lambda kids: st.one_of(
        st.lists(kids, max_size=5), st.tuples(kids, kids), st.dictionaries(keys, kids, max_size=5)), max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(documents_of(finite=True))
def test_same_text_as_json_dumps(doc: object) -> None:
    assert dumps(doc) == std(doc)


@settings(max_examples=300, deadline=None)
@given(documents_of(finite=False))
def test_nonfinite_numbers_are_written_as_text(doc: object) -> None:
    """Any document: strict JSON, the same text ``json.dumps`` writes once NaN / infinities are strings."""
    text = dumps(doc)
    assert text == std(as_text(doc))
    strict(text)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.none()), scalars,
                       max_size=4))
def test_non_string_keys_as_json_dumps(doc: dict) -> None:
    """Non-string keys: converted (``1`` -> ``"1"``) exactly as the standard encoder does, or the same error."""
    try:
        expected = std(as_text(doc))
    except TypeError:
        with pytest.raises(TypeError):
            dumps(doc)
        return
    assert dumps(doc) == expected
    assert dumps({"a": [doc]}) == std(as_text({"a": [doc]}))


def test_nonfinite_key_keeps_json_dumps_key_order() -> None:
    """``json.dumps(sort_keys=True)`` sorts the keys themselves (``False`` before ``inf``), then writes them as text
    (``"false"``, ``"Infinity"``); sorting the texts would put ``"Infinity"`` first."""
    doc = {math.inf: None, False: None}
    assert dumps(doc) == std(doc) == '{\n  "false": null,\n  "Infinity": null\n}'
    assert dumps({"b": doc, "a": [float("nan")]}) == std({"b": doc, "a": ["NaN"]})


def test_special_values() -> None:
    doc = {"facts": {"x": [1, 2.5, 1e308, -0.0, "é\n\"", None, True]}, "empty": [{}, [], ()],
           "od": OrderedDict(b=1, a=2), "deep": [[[[{"k": [{"z": 1, "a": {}}]}]]]]}
    assert dumps(doc) == std(doc)


def test_nan_and_infinities_are_strings() -> None:
    """A log's ``accept length nan``, a YAML ``.inf``, a float key: strings, the rest of the document unchanged."""
    doc = {"facts": {"x": [1, 2.5, math.inf, -math.inf, float("nan"), "NaN", None]}, "k": {math.inf: 1, 2.5: 2}}
    text = dumps(doc)
    assert strict(text) == {"facts": {"x": [1, 2.5, "Infinity", "-Infinity", "NaN", "NaN", None]},
                            "k": {"Infinity": 1, "2.5": 2}}
    assert '"x": [\n      1,\n      2.5,\n      "Infinity",' in text


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
