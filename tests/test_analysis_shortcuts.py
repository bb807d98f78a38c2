"""The C-speed shortcuts of the checkpoint analysis after the index is read, each against the plain path it replaces.

- the appended layout's decoder-layer scan (``facts._layer_lines``) also takes the lines MTP014 looks at
  (``CheckpointFacts.mtp_only_leaf_lines``): its candidate lines equal a search per name, the line starts a per-name
  oracle, and ``check_misplaced`` gives the same findings with and without them;
- ``facts._lines_matching`` takes a run of consecutive matching lines with one match (``_run_of``): the lines equal a
  search per line;
- ``layouts.hf_hallmarks`` tries its regex only on names with a hallmark's ending;
- ``CheckpointFacts.mtp_infos`` (the MTP tensors' header infos, kept while grouping) equals a lookup per tensor;
- ``tensors.Shapes`` answers ``linear_shape`` once per name key, and ``accounting._linear_bytes`` a linear's estimate
  once per key, parameters and declared format.

Names are generated from parts that make every case: layer numbers with leading zeros, below, at and above the trunk
depth, the four MTP-only leaves and near misses (``shared_headx``, ``enormx``), ``model.``/``language_model.`` prefixes,
a ``layers.`` that is not at the start, names ending in a leaf, and names without any of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint import layouts
from mtp_audit.checkpoint.accounting import _estimate_module, mtp_attention_bytes, mtp_bytes
from mtp_audit.checkpoint.checks import check_misplaced
from mtp_audit.checkpoint.config import parse_config, parse_hf_quant_config
from mtp_audit.checkpoint.facts import (
    MTP_INFOS,
    MTP_ONLY_LEAF_LINES,
    MTP_ONLY_LEAVES,
    CheckpointFacts,
    Module,
    _at_least,
    _classify_and_group,
    _layer_lines,
    _lines_matching,
    _run_of,
)
from mtp_audit.checkpoint.tensors import Shapes, linear_shape
from mtp_audit.sources.local import TensorInfo

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
    assert lines == {name for name in names if re.search(r"layers\.0*(?:" + _at_least(n) + r")\.", name)}
    assert _layer_lines(joined, n, False) == (lines, None)
    offsets = [0]
    for name in names[:-1]:
        offsets.append(offsets[-1] + len(name) + 1)
    assert starts == [off for off, name in zip(offsets, names) if _leaf_line(name, n)]


@settings(max_examples=500, deadline=None)
@given(_NAMES, st.sampled_from(["mtp", r"layers\.0*(?:[1-9]\d{1,}|[3-9])\.", "x|enorm", "0"]), st.booleans())
def test_lines_matching_runs_equal_a_search_per_line(names: list[str], pattern: str, last_newline: bool) -> None:
    """Runs of consecutive matching lines taken by one match give the lines a search per line finds (the text may
    end without a newline)."""
    joined = "\n".join(names) + ("\n" if last_newline else "")
    lines = joined.split("\n")
    assert _lines_matching(pattern, joined) == {line for line in lines if re.search(pattern, line)}


def test_lines_matching_takes_a_run_in_one_match() -> None:
    names = ["a.mtp.x", "mtp.0.y", "b", "c.mtp", "mtp"]
    assert [m.group() for m in re.finditer(_run_of("mtp"), _joined(names))] == ["mtp.x\nmtp.0.y", "mtp\nmtp"]
    assert _lines_matching("mtp", _joined(names)) == {"a.mtp.x", "mtp.0.y", "c.mtp", "mtp"}


def test_layer_scan_by_hand() -> None:
    names = ["model.layers.0.enorm.weight", "model.layers.003.eh_proj.weight", "model.layers.3.enorm.weight",
             "x.layers.1.shared_head.head.weight", "model.layers.1.shared_headx.weight", "model.layers.2.hnorm",
             "model.layers.10.mlp.weight"]
    joined = _joined(names)
    lines, starts = _layer_lines(joined, 3, True)
    assert lines == {"model.layers.003.eh_proj.weight", "model.layers.3.enorm.weight", "model.layers.10.mlp.weight"}
    assert [joined[s:joined.index("\n", s)] for s in starts] == [
        "model.layers.0.enorm.weight", "x.layers.1.shared_head.head.weight", "model.layers.2.hnorm"]
    # a leaf below the depth inside a run of lines of the first kind (the first line of the run, and a later one)
    names = ["a.layers.4.b.layers.1.enorm.x", "model.layers.3.a", "model.layers.9.x.layers.2.eh_proj", "m.layers.0.hnorm"]
    joined = _joined(names)
    lines, starts = _layer_lines(joined, 3, True)
    assert lines == set(names[:3])
    assert [joined[s:joined.index("\n", s)] for s in starts] == [names[0], names[2], names[3]]


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


# --- per-MTP-tensor work: hallmarks, header infos, shapes ------------------------------------------------------------

_MTP_PARTS = st.sampled_from(["model", "layers", "61", "mtp", "0", "shared_head", "norm", "head", "enorm", "hnorm",
                              "eh_proj", "fc", "embed_tokens", "pre_fc_norm_embedding", "weight", "weight\n", "x",
                              "input_layernorm", "mlp", "experts", "7", "up_proj", "shared_expert", ""])
_MTP_NAMES = st.lists(st.lists(_MTP_PARTS, min_size=1, max_size=6).map(".".join), max_size=25, unique=True)


def _hallmarks_by_regex(mtp: dict[str, tuple[str, int | None]]) -> list[list[object]]:
    """``hf_hallmarks`` with the regex tried on every name (no ``endswith`` first)."""
    out = []
    for name, (_label, index) in mtp.items():
        m = layouts._HALLMARK.match(name)
        if m is None or ".layers." in m["prefix"] and not re.search(r"(^|\.)layers\.\d+$", m["prefix"]):
            continue
        if m["leaf"] == "norm" and re.search(r"layers\.\d+$", m["prefix"]):
            continue
        out.append([name, index, layouts.HF_TO_GGUF[m["leaf"]]])
    return sorted(out, key=lambda r: (r[1] if r[1] is not None else -1, r[0]))


@settings(max_examples=500, deadline=None)
@given(_MTP_NAMES)
def test_hallmarks_equal_the_regex_on_every_name(names: list[str]) -> None:
    mtp: dict[str, tuple[str, int | None]] = {n: ("mtp", i % 3 or None) for i, n in enumerate(names)}
    assert layouts.hf_hallmarks(mtp) == _hallmarks_by_regex(mtp)


def test_hallmarks_by_hand() -> None:
    mtp: dict[str, tuple[str, int | None]] = {n: ("model.layers.61", 0) for n in (
        "model.layers.61.enorm.weight", "model.layers.61.shared_head.norm.weight", "model.layers.61.norm.weight",
        "model.layers.61.mlp.experts.0.up_proj.weight", "mtp.fc.weight\n", "model.layers.61.enorm.weight_scale")}
    assert layouts.hf_hallmarks(mtp) == _hallmarks_by_regex(mtp) == [
        ["model.layers.61.enorm.weight", 0, "enorm"], ["model.layers.61.shared_head.norm.weight", 0, "shared_head_norm"],
        ["mtp.fc.weight\n", 0, "eh_proj"]]


_DIMS = st.fixed_dictionaries({"hidden_size": st.sampled_from([16, 7168])}, optional={
    "num_attention_heads": st.sampled_from([2, 128]), "moe_intermediate_size": st.sampled_from([8, 2048]),
    "intermediate_size": st.sampled_from([32, 18432]), "n_shared_experts": st.sampled_from([0, 1, 2]),
    "shared_expert_intermediate_size": st.sampled_from([24, 512]), "q_lora_rank": st.just(1536),
    "attn_output_gate": st.booleans(), "head_dim": st.sampled_from([4, 128]), "vocab_size": st.just(32)})


@settings(max_examples=300, deadline=None)
@given(_MTP_NAMES, _DIMS, st.sampled_from([None, 0, 8, 256]))
def test_shapes_memo_equals_linear_shape(names: list[str], dims: dict[str, object], experts: int | None) -> None:
    """One :class:`Shapes` answers every module as ``linear_shape`` does, whatever came before (a key that left out
    part of the name would hand one module another's shape)."""
    shapes = Shapes(dims, experts)
    mods = names + [n + ".gate_proj" for n in names] + [n + ".down_proj" for n in names]
    assert [shapes.linear(m) for m in mods + mods[::-1]] == [linear_shape(m, dims, experts) for m in mods + mods[::-1]]


def test_shapes_by_hand() -> None:
    dims = {"hidden_size": 16, "moe_intermediate_size": 8, "intermediate_size": 32, "n_shared_experts": 2}
    shapes = Shapes(dims, 4)
    assert [shapes.linear(m) for m in ("l.mlp.experts.1.up_proj", "l.mlp.shared_experts.up_proj", "l.mlp.up_proj",
                                       "l.mlp.experts.2.up_proj", "l.mlp.gate", "l.eh_proj")] == [
        (8, 16), (16, 16), (32, 16), (8, 16), (4, 16), (16, 32)]


def test_mtp_infos_kept_by_grouping_equal_the_lookup() -> None:
    """The MTP infos ``_classify_and_group`` keeps are those a lookup per MTP tensor finds (headers for some of
    them only: then the byte sums decline to an estimate), and the exact sums read them."""
    names = ["model.layers.3.enorm.weight", "model.layers.3.eh_proj.weight", "model.layers.3.mlp.gate.weight",
             "model.layers.0.mlp.up_proj.weight"]
    infos = {n: TensorInfo(n, "BF16", (2, 8), 32 + i) for i, n in enumerate(names)}
    for known in (names, names[1:]):
        facts = CheckpointFacts(display="x", mode="shards", files=(),
                                config=parse_config({**_DEEPSEEK, "num_hidden_layers": 3}))
        facts.tensors = dict.fromkeys(names, "model.safetensors")
        facts.infos = {n: infos[n] for n in known}
        _classify_and_group(facts, 3)
        kept = facts.mtp_infos
        facts.cache.pop(MTP_INFOS)
        assert kept == facts.mtp_infos == {n: infos[n] for n in names[:3] if n in known}
        assert list(kept) == [n for n in facts.mtp if n in facts.infos]  # in MTP order
    assert mtp_bytes(facts)["estimated"] is True and mtp_attention_bytes(facts) is None
    facts.infos = infos
    facts.cache.pop(MTP_INFOS)
    facts.cache.pop("mtp_bytes")  # computed once per audit
    assert mtp_bytes(facts) == {"value": 32 + 33 + 34, "estimated": False}
    assert mtp_attention_bytes(facts) == 0  # enorm, eh_proj, mlp.gate: no attention part


_NVFP4 = Path(__file__).parent.parent / "fixtures" / "checkpoint" / "nvidia--DeepSeek-V3.1-NVFP4"
_MODULES = st.lists(st.tuples(
    st.sampled_from(["model.layers.61.mlp.experts.1.up_proj", "model.layers.61.mlp.experts.2.up_proj",
                     "model.layers.61.mlp.shared_experts.up_proj", "model.layers.61.mlp.experts.3.down_proj",
                     "model.layers.0.self_attn.kv_b_proj", "model.layers.61.self_attn.kv_b_proj", "model.layers.61.eh_proj",
                     "model.layers.61.mlp.gate", "model.layers.61.enorm", "lm_head", "model.layers.61.self_attn.q_a_proj",
                     "model.layers.3.mlp.experts.1.up_proj", "model.layers.3.self_attn.kv_b_proj"]),
    st.sets(st.sampled_from(["weight", "weight_scale", "weight_scale_2", "input_scale", "weight_scale_inv", "bias",
                             "weight_packed", "weight_global_scale"]), min_size=1)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(_MODULES, st.booleans())
def test_linear_bytes_memo_equals_one_module_at_a_time(mods: list[tuple[str, set[str]]], header: bool) -> None:
    """A module's estimate with the memo the other modules filled (an exclusion list that names single modules, some
    parameters with a header) is its estimate alone."""
    facts = CheckpointFacts(display="x", mode="metadata-only", files=(),
                            config=parse_config(json.loads((_NVFP4 / "config.json").read_text())))
    scheme = parse_hf_quant_config(json.loads((_NVFP4 / "hf_quant_config.json").read_text()))
    assert scheme is not None and "model.layers.61*" in scheme.excludes
    facts.schemes = [scheme]
    cfg = facts.config
    assert cfg is not None
    shapes, memo = Shapes(cfg.dims, cfg.num_experts), {}
    for i, (name, params) in enumerate(mods):
        info = TensorInfo(name + ".weight", "U8", (8, 8), 64) if header and i % 2 else None
        mod = Module(name, {p: info if p == "weight" else None for p in sorted(params)})
        alone = _estimate_module(facts, name, mod, False, Shapes(cfg.dims, cfg.num_experts), {})
        assert _estimate_module(facts, name, mod, False, shapes, memo) == alone


def test_linear_bytes_memo_by_hand() -> None:
    """The same projection excluded in one layer and declared NVFP4 in another, and with and without a header for its
    weight: four estimates, none taken for another (the memo's key holds the declared format and the infos)."""
    facts = CheckpointFacts(display="x", mode="metadata-only", files=(),
                            config=parse_config(json.loads((_NVFP4 / "config.json").read_text())))
    facts.schemes = [s for s in [parse_hf_quant_config(json.loads((_NVFP4 / "hf_quant_config.json").read_text()))] if s]
    cfg = facts.config
    assert cfg is not None
    shapes, memo = Shapes(cfg.dims, cfg.num_experts), {}
    u8 = TensorInfo("w", "U8", (8, 8), 64)
    got = [_estimate_module(facts, name, Module(name, {"weight": info, "weight_scale": None}), False, shapes, memo)
           for info in (None, u8) for name in ("model.layers.61.mlp.experts.1.up_proj", "model.layers.3.mlp.experts.1.up_proj")]
    n = 2048 * 7168  # an expert's up_proj: moe_intermediate_size x hidden_size; model.layers.61* is excluded
    # excluded: BF16 declared, a weight_scale sibling reads as FP8 per tensor; NVFP4: packed + group-16 scales + two F32;
    # with a U8 header the weight reads as MXFP4 whatever is declared (estimated with the scheme's group size, 16)
    assert got == [(n + 4, 0), (n // 2 + n // 16 + 8, 0), (n // 2 + n // 16, 0), (n // 2 + n // 16, 0)]


@settings(max_examples=200, deadline=None)
@given(_MODULES, st.booleans())
def test_uniform_declaration_asked_once(mods: list[tuple[str, set[str]]], header: bool) -> None:
    """A scheme that declares one format for every module (no exclusion list: ``uniform_declaration``) is asked once
    per memo, never per module, and every estimate is the one its per-module ``declared_format`` gives."""
    import dataclasses

    from mtp_audit.checkpoint.config import QuantScheme

    facts = CheckpointFacts(display="x", mode="metadata-only", files=(),
                            config=parse_config(json.loads((_NVFP4 / "config.json").read_text())))
    scheme = parse_hf_quant_config(json.loads((_NVFP4 / "hf_quant_config.json").read_text()))
    assert scheme is not None
    uniform = dataclasses.replace(scheme, excludes=())
    assert uniform.uniform_declaration() == (True, uniform.default)
    cfg = facts.config
    assert cfg is not None

    class PerModule(QuantScheme):  # the same scheme, its declaration asked module by module
        def uniform_declaration(self):  # type: ignore[no-untyped-def]
            return False, None

    per_module = PerModule(**{f.name: getattr(uniform, f.name) for f in dataclasses.fields(uniform) if f.init})
    asked: list[str] = []

    class Counted(QuantScheme):
        def declared_format(self, module):  # type: ignore[no-untyped-def]
            asked.append(module)
            return super().declared_format(module)

    counted = Counted(**{f.name: getattr(uniform, f.name) for f in dataclasses.fields(uniform) if f.init})
    shapes, memo = Shapes(cfg.dims, cfg.num_experts), {}
    for i, (name, params) in enumerate(mods):
        info = TensorInfo(name + ".weight", "U8", (8, 8), 64) if header and i % 2 else None
        mod = Module(name, {p: info if p == "weight" else None for p in sorted(params)})
        facts.schemes = [per_module]
        want = _estimate_module(facts, name, mod, False, Shapes(cfg.dims, cfg.num_experts), {})
        facts.schemes = [counted]
        assert _estimate_module(facts, name, mod, False, shapes, memo) == want
    assert asked == []
