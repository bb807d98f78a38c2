"""The metadata-only trunk counts taken from the joined tensor names (``suffix_counts_joined``,
``weight_counts_joined`` in ``mtp_audit.checkpoint.facts``) against the per-name ``Counter`` path they replace.

Invariant: whenever the joined-text path answers, its dict equals the ``Counter`` path's, key order included (both
sorted); ``suffix_counts_joined`` declines (``None``) rather than guess when a suffix is missing from its sample or
there are too many. Names are generated with dots in every position, empty components, no dot at all, a name equal to
a suffix, and newlines (which the callers route to the ``Counter`` path: the check below asserts that rule).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint import facts as facts_module
from mtp_audit.checkpoint.facts import (
    CheckpointFacts,
    _classify_and_group,
    linear_weight_count,
    suffix_counts,
    suffix_counts_joined,
    weight_counts_joined,
)

_PARTS = st.sampled_from(["weight", "weight_scale_inv", "bias", "", "model", "layers", "0", "up_proj", "lm_head",
                          "w", "eight", "weight\nx", ".", "e_score_correction_bias", "mtp", "ł", "_proj", "fc1", "w2",
                          "proj", "in_proj_x", "jorp_", "dense", "x_projection"])
_NAME = st.lists(_PARTS, min_size=1, max_size=5).map(".".join) | st.text(alphabet="ab.\nw", max_size=8)
_NAMES = st.lists(_NAME, max_size=40, unique=True)


def _joined(names: list[str]) -> str:
    return "\n".join(names) + "\n"


@settings(max_examples=600, deadline=None)
@given(_NAMES, st.data())
def test_joined_suffix_counts_equal_the_counter(names: list[str], data: st.DataObject) -> None:
    """Every sample (all names, some, none): an answer is always the Counter's dict; with the whole list as the
    sample and at most six suffixes it always answers."""
    names = [n for n in names if "\n" not in n]
    slow = suffix_counts(names)
    sample = data.draw(st.lists(st.sampled_from(names), max_size=10) if names else st.just([]))
    for s in (names, sample):
        got = suffix_counts_joined(_joined(names), set(names), s)
        if got is not None:
            assert list(got.items()) == list(slow.items())
    if len(slow) <= 6:
        assert suffix_counts_joined(_joined(names), set(names), names) == slow


@settings(max_examples=600, deadline=None)
@given(_NAMES)
def test_joined_linear_weights_equal_the_counter(names: list[str]) -> None:
    names = [n for n in names if "\n" not in n]
    joined = _joined(names)
    assert weight_counts_joined(joined) == (sum(n.endswith(".weight") for n in names), linear_weight_count(names))


def test_linear_weights_by_hand() -> None:
    names = ["m.l.0.mlp.experts.1.up_proj.weight", "m.l.0.mlp.experts.1.up_proj.weight_scale_inv", "m.l.0.mlp.gate.weight",
             "m.l.0.input_layernorm.weight", "m.l.0.fc1.weight", "lm_head.weight", "up_proj.weight", "x._proj.weight",
             "m.l.0.dense.bias", "weight", "q_proj.weightx", "a.projection.weight", "a.w3.weight"]
    joined = _joined(names)
    # up_proj (twice), fc1, _proj, w3; not gate, input_layernorm, lm_head, projection (no ".weight": bias, weightx, weight)
    # .weight names: all but weight_scale_inv, dense.bias, weight, q_proj.weightx
    assert weight_counts_joined(joined) == (9, linear_weight_count(names)) == (9, 5)


def test_a_suffix_missing_from_the_sample_declines() -> None:
    names = ["a.weight", "b.weight", "a.weight_scale_inv", "x.gate.e_score_correction_bias", "weight"]
    assert suffix_counts_joined(_joined(names), set(names), names[:3]) is None
    assert suffix_counts_joined(_joined(names), set(names), names) == {"e_score_correction_bias": 1, "weight": 3,
                                                                       "weight_scale_inv": 1}
    many = [f"m.s{i}" for i in range(7)]
    assert suffix_counts_joined(_joined(many), set(many), many) is None  # more than MAX_COUNTED_SUFFIXES


@settings(max_examples=300, deadline=None)
@given(_NAMES)
def test_metadata_only_counts_of_the_audit(names: list[str]) -> None:
    """``_classify_and_group`` in metadata-only mode (no headers), newlines in names included, gives the Counter
    path's counts of the trunk (every name here but the MTP ones it classifies)."""
    facts = CheckpointFacts(display="x", mode="metadata-only", files=())
    facts.tensors = dict.fromkeys(names + ["mtp.layers.0.enorm.weight", "mtp.layers.0.eh_proj.weight_scale_inv"], "s")
    _classify_and_group(facts, None)
    trunk = [n for n in facts.tensors if n not in facts.mtp]
    assert list(facts.trunk_suffixes.items()) == list(suffix_counts(trunk).items())
    assert facts.trunk_linear_weights == linear_weight_count(trunk)


@settings(max_examples=400, deadline=None)
@given(_NAMES)
def test_the_weight_count_handed_over(names: list[str]) -> None:
    """The metadata-only count hands ``suffix_counts_joined`` the ``.weight`` names it counted for the linear weights
    instead of counting ``".weight\\n"`` again: the same answer as without."""
    names = [n for n in names if "\n" not in n]
    joined = _joined(names)
    dotted = {"weight": sum(1 for n in names if n.endswith(".weight"))}
    assert dotted["weight"] == joined.count(".weight\n")
    assert suffix_counts_joined(joined, set(names), names, dotted) == suffix_counts_joined(joined, set(names), names)


@settings(max_examples=400, deadline=None)
@given(_NAMES, st.sampled_from(["weight", "weight_scale_2", "bias", "eight", "e_score_correction_bias"]))
def test_name_ends_with(names: list[str], suffix: str) -> None:
    """``CheckpointFacts.name_ends_with`` from the metadata-only suffix counts is exact (a name equal to the suffix does
    not end with ``"." + suffix``); from the joined names (with headers, no counts) it is exact without newlines in
    names and never a false ``False`` with them."""
    truth = any(n.endswith("." + suffix) for n in names)
    counted = CheckpointFacts(display="x", mode="metadata-only", files=())
    counted.tensors = dict.fromkeys(names, "s")
    _classify_and_group(counted, None)
    assert "name_suffixes" in counted.cache and counted.name_ends_with(suffix) is truth
    scanned = CheckpointFacts(display="x", mode="shards", files=())
    scanned.tensors = dict.fromkeys(names, "s")
    got = scanned.name_ends_with(suffix)
    assert got is truth or (got and not scanned.names_newline_free)
    assert scanned.name_ends_with(suffix) is got  # computed once


@settings(max_examples=400, deadline=None)
@given(_NAMES, st.data())
def test_counts_handed_from_a_first_sample(names: list[str], data: st.DataObject) -> None:
    """The counts a first call took (with any sample, answered or declined) handed to a second call with another sample:
    the second answers as it would alone."""
    names = [n for n in names if "\n" not in n]
    joined, members = _joined(names), set(names)
    first = data.draw(st.lists(st.sampled_from(names), max_size=8) if names else st.just([]))
    counted: dict[str, int] = {}
    suffix_counts_joined(joined, members, first, counted)
    assert counted == {s: joined.count("." + s + "\n") for s in counted}
    assert suffix_counts_joined(joined, members, names, counted) == suffix_counts_joined(joined, members, names)


def test_a_suffix_only_in_the_middle_takes_the_wider_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """Metadata-only, 3,000 names: the MTP tensors and the index's ends show ``weight`` and ``bias``; a suffix seen
    only in the middle makes the first count decline and the wider sample's count answer, exactly."""
    declined: list[bool] = []

    def spy(*args: Any) -> dict[str, int] | None:
        got = suffix_counts_joined(*args)
        declined.append(got is None)
        return got

    monkeypatch.setattr(facts_module, "suffix_counts_joined", spy)
    names = [f"model.layers.{i}.mlp.{leaf}" for i in range(1000) for leaf in ("gate.bias", "up_proj.weight", "down_proj.weight")]
    names[1502] = "model.layers.500.mlp.down_proj.weight_scale_inv"
    facts = CheckpointFacts(display="x", mode="metadata-only", files=())
    facts.tensors = dict.fromkeys(names + ["mtp.layers.0.eh_proj.weight", "mtp.layers.0.eh_proj.bias"], "s")
    _classify_and_group(facts, None)
    assert sorted(facts.mtp) == ["mtp.layers.0.eh_proj.bias", "mtp.layers.0.eh_proj.weight"]
    assert facts.trunk_suffixes == suffix_counts(names) == {"bias": 1000, "weight": 1999, "weight_scale_inv": 1}
    assert facts.trunk_linear_weights == linear_weight_count(names) == 1999
    assert declined == [True, False]


@pytest.mark.parametrize("names", [
    ["weight", "a.weight"],  # a name equal to the suffix: no dot, never a ``.weight`` name
    [".weight", "fc1.weight"],  # an empty leaf on the first line, then a leaf without a dot before it
    ["a.eight", "b.ght", "ght", "x.wei.ght", "y.xweight"],  # ``ght`` line ends that end no ``.weight``
    ["m._proj.weight", "m.q_proj.weight", "m.proj.weight", "m.dense.weight", "m.w2.weight", "m.x_proj.weightx"],
    ["m.in_proj_qkv.weight", "m.kv_a_proj_with_mqa.weight", "m.norm.weight", "m.fc.weight"],
])
def test_weight_counts_at_the_line_ends(names: list[str]) -> None:
    """The ``ght``-anchored scan against a name-by-name count: where the scan returns (the end of ``.weight``, the leaf
    cut before it) matters for leaves without a dot before them and for ``ght`` endings of other names."""
    weights = [n for n in names if n.endswith(".weight")]
    linear = sum(facts_module.is_linear_leaf(n[: -len(".weight")].rpartition(".")[2]) for n in weights)
    assert weight_counts_joined(_joined(names)) == (len(weights), linear)
