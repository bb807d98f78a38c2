"""The second round of shortcuts over the index's names (``mtp_audit.checkpoint.facts``), each against the plain path
it replaces (docs/checkpoint.md "The names, second pass").

- ``_distinct_values``: the index's distinct shard names from the runs of equal neighbours (``groupby``) against
  ``set(wm.values())``: the same elements for runs, shuffled values, more runs than ``MAX_VALUE_RUNS``, values that are
  equal but not the same object (as ``json`` decodes them), and ``None`` exactly where ``set`` raises ``TypeError``;
- ``_number_at_least`` (the decoder-layer scan's number, its zeros taken possessively): the lines ``_layer_lines``
  takes against ``int()`` of every ``layers.<digits>.`` in a name, at depths 0 (and below) to 100, with leading zeros.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint import facts as facts_module
from mtp_audit.checkpoint.facts import _distinct_values, _layer_lines, _number_at_least

_VALUES = st.sampled_from(["a.safetensors", "b.safetensors", "c", "", "sub/../a.safetensors", 1, 1.0, True, None,
                           [1], {"x": 1}, float("nan")])


def _plain(wm: dict[str, Any]) -> set[Any] | None:
    try:
        return set(wm.values())
    except TypeError:
        return None


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_VALUES, st.integers(1, 5)), max_size=30), st.integers(1, 6))
def test_distinct_values_equal_the_set(runs: list[tuple[Any, int]], limit: int) -> None:
    """Runs of each value (some more than ``limit``, so the second path runs too): the same set, or ``None`` where
    ``set`` raises."""
    wm = {f"t{i}": v for i, v in enumerate(v for v, k in runs for _ in range(k))}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(facts_module, "MAX_VALUE_RUNS", limit)
        assert _distinct_values(wm) == _plain(wm)


def test_distinct_values_of_decoded_strings() -> None:
    """``json`` decodes each value into its own string object: the runs compare them by value, so the set holds one of
    each name, in both paths."""
    text = json.dumps({f"t{i}": f"model-{i // 3:05d}.safetensors" for i in range(30)} | {"u": "model-00000.safetensors"})
    wm = json.loads(text)
    values = list(wm.values())
    assert values[0] == values[1] and values[0] is not values[1]
    want = {f"model-{i:05d}.safetensors" for i in range(10)}
    assert _distinct_values(wm) == want  # 11 runs: the last value repeats the first run's
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(facts_module, "MAX_VALUE_RUNS", 10)  # 11 runs: every value hashed instead
        assert _distinct_values(wm) == want


def test_distinct_values_of_an_unhashable_value() -> None:
    """A list among the values: ``None`` (the caller names the bad entry), whether it starts a run or not."""
    assert _distinct_values({"a": "x.safetensors", "b": ["x"], "c": "x.safetensors"}) is None
    assert _distinct_values({"a": ["x"], "b": ["x"]}) is None
    assert _distinct_values({}) == set()


_PARTS = st.sampled_from(["model", "layers", "0", "00", "000", "1", "01", "001", "6", "06", "60", "61", "061", "0061", "62",
                          "7", "99", "100", "0100", "enorm", "eh_proj", "weight", "", "x", "layersx", "9"])
_LAYER_NAMES = st.lists(st.lists(_PARTS, min_size=1, max_size=6).map(".".join), max_size=25, unique=True)


def _high(name: str, n: int) -> bool:
    """Oracle: some ``layers.<digits>.`` in ``name`` whose number, read by ``int()``, is at least ``n``."""
    return any(int(m.group(1)) >= n for m in re.finditer(r"(?=layers\.(\d+)\.)", name))


@settings(max_examples=600, deadline=None)
@given(_LAYER_NAMES, st.sampled_from([-1, 0, 1, 6, 7, 10, 60, 61, 62, 100]), st.booleans())
def test_layer_lines_against_int(names: list[str], n: int, leaves: bool) -> None:
    """The lines taken at or past the depth equal ``int()`` of each layer number, with and without the leaf search."""
    lines, _ = _layer_lines("\n".join(names) + "\n", n, leaves)
    assert lines == {name for name in names if _high(name, n)}


def test_number_at_least_by_hand() -> None:
    """Zeros before the number, a zero alone, and depth 0, where every number qualifies."""
    at_61 = re.compile(_number_at_least(61))
    assert [bool(at_61.fullmatch(s)) for s in ("61.", "061.", "0061.", "60.", "060.", "0.", "00.", "100.", "0100.")] == [
        True, True, True, False, False, False, False, True, True]
    at_0 = re.compile(_number_at_least(0))
    assert all(at_0.fullmatch(s) for s in ("0.", "00.", "7.", "007."))
    assert not at_0.fullmatch(".")
