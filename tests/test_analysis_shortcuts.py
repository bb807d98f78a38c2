"""The C-speed shortcuts of the checkpoint analysis after the index is read, each against the plain path it replaces.

- the appended layout's decoder-layer scan (``facts._layer_lines``) also takes the lines MTP014 looks at
  (``CheckpointFacts.mtp_only_leaf_lines``): the candidate lines equal the layer scan alone, the line starts equal a
  per-name oracle, and ``check_misplaced`` gives the same findings with and without them.

Names are generated from parts that make every case: layer numbers with leading zeros, below, at and above the trunk
depth, the four MTP-only leaves and near misses (``shared_headx``, ``enormx``), ``model.``/``language_model.`` prefixes,
a ``layers.`` that is not at the start, names ending in a leaf, and names without any of it.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint.checks import check_misplaced
from mtp_audit.checkpoint.config import parse_config
from mtp_audit.checkpoint.facts import (
    MTP_ONLY_LEAF_LINES,
    MTP_ONLY_LEAVES,
    CheckpointFacts,
    _at_least,
    _classify_and_group,
    _layer_lines,
    _lines_matching,
)

_PARTS = st.sampled_from(["model", "language_model", "layers", "0", "00", "1", "2", "3", "03", "007", "4", "10", "61",
                          "enorm", "hnorm", "eh_proj", "shared_head", "shared_headx", "enormx", "head", "weight",
                          "mlp", "mtp", "x", "layersx", ""])
_NAME = st.lists(_PARTS, min_size=1, max_size=6).map(".".join)
_NAMES = st.lists(_NAME, max_size=30, unique=True)
_DEPTH = st.sampled_from([0, 1, 3, 4, 10, 61])


def _joined(names: list[str]) -> str:
    return "\n".join(names) + "\n"


def _leaf_line(name: str, n: int) -> bool:
    """Oracle: ``layers.<digits>.<leaf>`` followed by a dot or the name's end, the number below ``n``, anywhere."""
    for i in range(len(name)):
        m = re.compile(r"layers\.(\d+)\.(" + "|".join(MTP_ONLY_LEAVES) + r")(\.|$)").match(name, i)
        if m and int(m.group(1)) < n:
            return True
    return False


@settings(max_examples=500, deadline=None)
@given(_NAMES, _DEPTH)
def test_layer_scan_with_leaves_equals_the_separate_scans(names: list[str], n: int) -> None:
    joined = _joined(names)
    lines, starts = _layer_lines(joined, n, True)
    assert lines == _lines_matching(r"layers\.0*(?:" + _at_least(n) + r")\.", joined)
    assert _layer_lines(joined, n, False) == (lines, None)
    offsets = [0]
    for name in names[:-1]:
        offsets.append(offsets[-1] + len(name) + 1)
    assert starts == [off for off, name in zip(offsets, names) if _leaf_line(name, n)]


def test_layer_scan_by_hand() -> None:
    names = ["model.layers.0.enorm.weight", "model.layers.003.eh_proj.weight", "model.layers.3.enorm.weight",
             "x.layers.1.shared_head.head.weight", "model.layers.1.shared_headx.weight", "model.layers.2.hnorm",
             "model.layers.10.mlp.weight"]
    joined = _joined(names)
    lines, starts = _layer_lines(joined, 3, True)
    assert lines == {"model.layers.003.eh_proj.weight", "model.layers.3.enorm.weight", "model.layers.10.mlp.weight"}
    assert [joined[s:joined.index("\n", s)] for s in starts] == [
        "model.layers.0.enorm.weight", "x.layers.1.shared_head.head.weight", "model.layers.2.hnorm"]


_DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_nextn_predict_layers": 1,
             "hidden_size": 16, "vocab_size": 32, "num_attention_heads": 2}


def _misplaced(names: list[str], n: int, *, shortcut: bool) -> list[dict[str, object]]:
    facts = CheckpointFacts(display="x", mode="metadata-only", files=(),
                            config=parse_config({**_DEEPSEEK, "num_hidden_layers": n}))
    facts.tensors = dict.fromkeys(names, "model.safetensors")
    _classify_and_group(facts, n)
    assert (MTP_ONLY_LEAF_LINES in facts.cache) is facts.names_newline_free
    if not shortcut:
        facts.cache.pop(MTP_ONLY_LEAF_LINES, None)
    return [f.to_dict() for f in check_misplaced(facts)]


@settings(max_examples=400, deadline=None)
@given(_NAMES, st.sampled_from([1, 3, 4, 10, 61]))
def test_misplaced_findings_equal_without_the_shortcut(names: list[str], n: int) -> None:
    assert _misplaced(names, n, shortcut=True) == _misplaced(names, n, shortcut=False)


def test_misplaced_by_hand() -> None:
    names = ["model.layers.0.mlp.weight", "model.layers.1.enorm.weight", "model.layers.01.hnorm.weight",
             "model.layers.2.eh_proj.weight", "model.layers.3.enorm.weight", "model.layers.3.shared_head.head.weight",
             "x.layers.0.enorm.weight", "layers.2.shared_head.norm.weight"]
    got = _misplaced(names, 3, shortcut=True)
    assert got == _misplaced(names, 3, shortcut=False)
    # each spelling of a layer is its own finding, in layer order; layer 3 (the MTP layer) and x.layers.0 are not
    assert [f["message"].split(" holds")[0] for f in got] == ["model.layers.1", "model.layers.01", "model.layers.2",
                                                              "layers.2"]
    assert got[0]["message"].startswith("model.layers.1 holds MTP-only tensors (enorm) but it is trunk layer 1 of 3")
    assert got[3]["message"].startswith("layers.2 holds MTP-only tensors (shared_head) but it is trunk layer 2 of 3")
