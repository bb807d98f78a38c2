"""The second round of shortcuts over the index's names (``mtp_audit.checkpoint.facts``), each against the plain path
it replaces (docs/checkpoint.md "The names, second pass").

- ``_distinct_values``: the index's distinct shard names from the runs of equal neighbours (``groupby``) against
  ``set(wm.values())``: the same elements for runs, shuffled values, more runs than ``MAX_VALUE_RUNS``, values that are
  equal but not the same object (as ``json`` decodes them), and ``None`` exactly where ``set`` raises ``TypeError``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint import facts as facts_module
from mtp_audit.checkpoint.facts import _distinct_values

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
