"""The trunk format census (``mtp_audit.checkpoint.trunk``) against the module-by-module path it replaces.

Invariant: whenever the census answers, its counts are ``Counter(linear_formats(facts, facts.trunk_modules).values())``;
it declines (``None``) only where it must (a tensor without a header, a numeric last name component, a trunk tensor
inside an MTP module, a format that depends on a per-module declaration). Checked on generated trunks mixing every
parameter suffix, odd names, dtypes, ranks, leaves and quantization configs, and on a DeepSeek-V3-like trunk by hand.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from mtp_audit.checkpoint import trunk
from mtp_audit.checkpoint.accounting import (
    linear_formats,
    trunk_census,
    trunk_format_counts,
)
from mtp_audit.checkpoint.config import parse_quantization_config
from mtp_audit.checkpoint.facts import CheckpointFacts, HeaderInfos, Module
from mtp_audit.checkpoint.tensors import PARAM_SUFFIXES
from mtp_audit.sources.local import ShardHeader, TensorColumns, TensorInfo

_LEAVES = ["q_proj", "down_proj", "fc", "fc1", "dense", "in_proj_qkvz", "w2", "gate", "norm", "lm_head",
           "embed_tokens", "kv_a_proj_with_mqa", "fc.0", "norm.0", "dense.1", "gate.1"]
_DTYPES = ["BF16", "F8_E4M3", "U8", "I32", "F32", "I8", "F16", "F4"]
_SUFFIX_SETS = [("weight",), ("weight", "weight_scale_inv"), ("weight", "weight_scale", "weight_scale_2", "input_scale"),
                ("weight_packed", "weight_scale", "weight_global_scale"), ("weight_packed", "weight_scale"),
                ("qweight", "qzeros", "scales"), ("weight", "scales", "biases"), ("weight", "weight_scale"),
                ("weight", "weight_zero_point", "weight_scale"), ("weight", "bias"), ("weight", "input_scale"),
                ("weight_scale", "input_scale"), ("weight_scale_inv",), ("bias",)]
_CONFIGS = [None,
            {"quant_method": "fp8", "weight_block_size": [128, 128]},
            {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["*lm_head*", "model.layers.1.*"]},
            {"quant_method": "modelopt", "quant_algo": "FP8"},
            {"quant_method": "mxfp4"},
            {"quant_method": "gptq", "bits": 8, "group_size": 128}]


def _facts(rng: random.Random) -> CheckpointFacts:
    """A random trunk (and a few MTP tensors) with headers for most or all tensors."""
    facts = CheckpointFacts(display="x", mode="shards", files=())
    names: list[str] = []
    common = rng.choice(_SUFFIX_SETS) if rng.random() < 0.5 else None  # most modules alike, as in real trunks
    for layer in range(rng.randint(1, 4)):
        for leaf in rng.sample(_LEAVES, rng.randint(1, 6)):
            if leaf[-1].isdigit() and "." in leaf and rng.random() < 0.7:
                continue
            suffixes = common if common is not None and rng.random() < 0.9 else rng.choice(_SUFFIX_SETS)
            names += [f"model.layers.{layer}.mlp.{leaf}.{p}" for p in suffixes]
    names += rng.sample(["model.layers.0.mlp.gate.e_score_correction_bias", "weight", "lonely", "model.norm.weight",
                         "model.layers.0.mlp.q_proj"], rng.randint(0, 3))
    names = [n for n in dict.fromkeys(names)]
    if rng.random() < 0.4:
        rng.shuffle(names)
    elif rng.random() < 0.5:
        names.sort()  # an index sorted by name: a module's tensors side by side
    facts.tensors = dict.fromkeys(names, "s.safetensors")
    all_infos = rng.random() < 0.85
    for n in names:
        if all_infos or rng.random() < 0.8:
            rank = rng.choice([1, 2, 2, 2, 3])
            facts.infos[n] = TensorInfo(n, rng.choice(_DTYPES), (4,) * rank, 8)
    if rng.random() < 0.5:  # an MTP layer, sometimes sharing a module name with a trunk tensor
        mtp = ["mtp.fc.weight", "mtp.fc.weight_scale_inv"] + (["model.layers.0.mlp.fc.weight"] if rng.random() < 0.2 else [])
        for n in mtp:
            facts.tensors[n] = "s.safetensors"
            facts.infos[n] = TensorInfo(n, "BF16", (4, 4), 32)
            facts.mtp[n] = ("mtp", None)
            module, _, param = n.rpartition(".")
            facts.mtp_modules.setdefault(module, Module(module)).params[param] = facts.infos[n]
    cfg = rng.choice(_CONFIGS)
    scheme = parse_quantization_config(cfg) if cfg is not None else None
    if scheme is not None:
        facts.schemes.append(scheme)
    if len(facts.infos) == len(facts.tensors) and rng.random() < 0.5:
        _as_header_columns(facts, rng)
    return facts


def _as_header_columns(facts: CheckpointFacts, rng: random.Random) -> None:
    """The same tensors and infos as the audit keeps them when the headers match the index: each tensor in one of a
    few shards (``weight_map``), each shard's header as columns in its own (shuffled) order, ``infos`` a
    :class:`HeaderInfos` over them."""
    infos = dict(facts.infos)
    shard_of = {n: f"s{rng.randint(1, 3)}.safetensors" for n in facts.tensors}
    headers: dict[str, ShardHeader] = {}
    for shard in sorted(set(shard_of.values())):
        held = [n for n in facts.tensors if shard_of[n] == shard]
        rng.shuffle(held)
        cols = TensorColumns(held, [infos[n].dtype for n in held], [list(infos[n].shape) for n in held],
                             [infos[n].nbytes for n in held])
        headers[shard] = ShardHeader(shard, cols)
    facts.tensors = facts.weight_map = shard_of  # type: ignore[assignment]
    facts.headers = headers
    facts.infos = HeaderInfos(headers, shard_of)


def test_census_equals_module_by_module_or_declines() -> None:
    answered = declined = 0
    for seed in range(800):
        facts = _facts(random.Random(seed))
        got = trunk_census(facts)
        exact = Counter(linear_formats(facts, facts.trunk_modules).values())
        if got is None:
            declined += 1
        else:
            answered += 1
            assert got == exact, seed
    assert answered > 200 and declined > 100  # both paths are exercised


def test_census_over_header_columns_equals_module_by_module() -> None:
    """The random trunks whose infos are a :class:`HeaderInfos` over per-shard columns (the dtypes and ranks then come
    from the columns, :func:`trunk._dtypes_ranks`): same counts as module by module."""
    answered = 0
    for seed in range(800):
        facts = _facts(random.Random(seed))
        if not isinstance(facts.infos, HeaderInfos):
            continue
        got = trunk_census(facts)
        if got is not None:
            answered += 1
            assert got == Counter(linear_formats(facts, facts.trunk_modules).values()), seed
    assert answered > 50


def test_census_declines_without_every_header() -> None:
    facts = CheckpointFacts(display="x", mode="shards", files=())
    facts.tensors = {"a.q_proj.weight": "s", "a.q_proj.weight_scale_inv": "s"}
    facts.infos = {"a.q_proj.weight": TensorInfo("a.q_proj.weight", "F8_E4M3", (8, 8), 64)}
    assert trunk_census(facts) is None
    assert trunk_format_counts(facts) == {"FP8": 1}  # answered module by module instead


def test_census_deepseek_like_trunk() -> None:
    """61 layers of FP8-block linears, norms, routers and their e_score_correction_bias, as DeepSeek-V3 stores them."""
    facts = CheckpointFacts(display="x", mode="shards", files=())
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    for i in range(61):
        p = f"model.layers.{i}"
        names += [f"{p}.input_layernorm.weight", f"{p}.mlp.gate.weight", f"{p}.mlp.gate.e_score_correction_bias"]
        for m in ("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa", *(f"mlp.experts.{e}.up_proj" for e in range(4))):
            names += [f"{p}.{m}.weight", f"{p}.{m}.weight_scale_inv"]
    facts.tensors = dict.fromkeys(names, "s")
    facts.infos = {n: TensorInfo(n, "F8_E4M3" if "proj" in n and n.endswith("weight") else "BF16",
                                 (1,) if "bias" in n or "norm" in n else (8, 8), 8) for n in names}
    facts.schemes.append(parse_quantization_config({"quant_method": "fp8", "weight_block_size": [128, 128]}))
    assert set(facts.tensors) and PARAM_SUFFIXES  # names built
    assert trunk_census(facts) == Counter({("FP8", False): 61 * 6})
    assert trunk_format_counts(facts) == {"FP8": 366}
    assert "trunk_modules" not in facts.cache  # decided without building a module


def _small_facts(names: list[str], mtp: tuple[str, ...] = ()) -> CheckpointFacts:
    """Facts of ``names`` with headers (``q_proj`` BF16, other ``.weight`` FP8, the rest F32), ``mtp`` as MTP tensors."""
    facts = CheckpointFacts(display="x", mode="shards", files=())
    facts.tensors = dict.fromkeys(names, "s")
    facts.infos = {n: TensorInfo(n, "BF16" if "q_proj" in n else "F8_E4M3" if n.endswith("weight") else "F32", (8, 8), 64)
                   for n in names}
    for n in mtp:
        facts.mtp[n] = ("mtp", 0)
        module, _, param = n.rpartition(".")
        facts.mtp_modules.setdefault(module, Module(module)).params[param] = facts.infos[n]
    return facts


def _exact_or_declined(names: list[str], mtp: tuple[str, ...] = ()) -> Counter[tuple[str, bool]] | None:
    facts = _small_facts(names, mtp)
    got = trunk_census(facts)
    assert got is None or got == Counter(linear_formats(facts, facts.trunk_modules).values())
    return got


def test_census_pairs_only_a_modules_own_tensors() -> None:
    """x_proj has no weight of its own: the q_proj weight just before it (same length, same suffix) is not its pair."""
    names = ["l.0.a_proj.weight", "l.0.a_proj.weight_scale_inv", "l.0.q_proj.weight", "l.0.x_proj.weight_scale_inv"]
    assert _exact_or_declined(names) is None  # the FP8 modules are not all alike: every module is built instead
    names[3] = "l.0.x_proj.weight_scale_inv"
    names.insert(3, "l.0.x_proj.weight")  # now they are: the census answers
    assert _exact_or_declined(names) == Counter({("FP8", False): 2, ("BF16", False): 1})


def test_census_never_takes_an_mtp_module_into_the_trunk() -> None:
    """The trunk holds a.fc's scale, the MTP layer a.fc's weight (and m.x's, whose bias is in the trunk): the trunk
    module a.fc is not a linear layer, whatever the MTP tensors pair with."""
    names = ["a.fc.weight", "a.fc.weight_scale_inv", "b.q_proj.weight", "m.x.weight", "m.x.bias"]
    assert _exact_or_declined(names, mtp=("a.fc.weight", "m.x.weight")) in (None, Counter({("BF16", False): 1}))


def test_modules_with_a_numeric_last_name_are_decided_by_their_real_leaf() -> None:
    """``a.fc.0`` is a linear layer and ``b.embed.0`` is not, though both end in ``.0`` with a 2-D BF16 weight: each is
    decided on its own leaf (the memo of module decisions once keyed both on ``"0"``, so the first decided the other)."""
    for order in (["a.fc.0", "b.embed.0"], ["b.embed.0", "a.fc.0"]):
        facts = CheckpointFacts(display="x", mode="shards", files=())
        modules = {name: {"weight": TensorInfo(f"{name}.weight", "BF16", (8, 8), 128)} for name in order}
        assert linear_formats(facts, modules) == {"a.fc.0": ("BF16", False)}


def test_census_pairs_by_whole_name_not_by_prefix() -> None:
    """The companion of ``b.x.weight_scale_inv`` one place before it is ``b.x.w`` (its own module, not a linear): a
    prefix of the anchor but not ``b.x.weight``, so b.x holds no weight and is not paired (the comparison without
    built names checks the length as well as the prefix)."""
    names = ["a.x.weight", "a.x.weight_scale_inv", "b.x.w", "b.x.weight_scale_inv"]
    assert _exact_or_declined(names) in (None, Counter({("FP8", False): 1}))
    names[2] = "b.x.wAAAAA"  # as long as b.x.weight, not a prefix of the anchor
    assert _exact_or_declined(names) in (None, Counter({("FP8", False): 1}))
    names = ["a.x.weight", "a.x.weight_scale", "a.x.weight_scale_2", "b.x.weight", "b.x.weight_s", "b.x.weight_scale_2"]
    assert _exact_or_declined(names) in (None, Counter({("NVFP4", False): 1}))


def _no_name_list_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the name-list pass fail the test: the census must take its bulk from the joined names."""
    def refuse(*args: Any) -> None:
        raise AssertionError("the name-list pass ran")
    monkeypatch.setattr(trunk, "_anchored", refuse)


def _deepseek_names(layers: int = 4, experts: int = 3, mtp_layer: int | None = None) -> list[str]:
    """DeepSeek-V3's index order: per layer attention, norms, router, experts (each FP8 linear's weight followed by
    its weight_scale_inv), then the final norm and head; ``mtp_layer`` adds an FP8 MTP layer as DeepSeek-V3 stores
    it (layer 61: eh_proj, enorm, hnorm, shared_head)."""
    names = ["model.embed_tokens.weight"]
    for i in [*range(layers), *([mtp_layer] if mtp_layer is not None else [])]:
        p = f"model.layers.{i}"
        for m in ("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.o_proj"):
            names += [f"{p}.{m}.weight", f"{p}.{m}.weight_scale_inv"]
        names += [f"{p}.input_layernorm.weight", f"{p}.mlp.gate.weight", f"{p}.mlp.gate.e_score_correction_bias"]
        for e in range(experts):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                names += [f"{p}.mlp.experts.{e}.{proj}.weight", f"{p}.mlp.experts.{e}.{proj}.weight_scale_inv"]
        if i == mtp_layer:
            names += [f"{p}.eh_proj.weight", f"{p}.enorm.weight", f"{p}.hnorm.weight", f"{p}.shared_head.head.weight"]
    return names + ["model.norm.weight", "lm_head.weight"]


def _info(name: str) -> TensorInfo:
    """DeepSeek-V3's dtypes: FP8 projections with F32 block scales, BF16 norms (1-D), router and embeddings (2-D)."""
    if name.endswith("_proj.weight") or name.endswith("mqa.weight"):
        return TensorInfo(name, "F8_E4M3", (64, 64), 4096)
    if name.endswith("scale_inv"):
        return TensorInfo(name, "F32", (1, 1), 4)
    one_d = "norm" in name or "bias" in name
    return TensorInfo(name, "F32" if "bias" in name else "BF16", (64,) if one_d else (64, 64), 128)


def _checkpoint(names: list[str], mtp_from: str | None = None, shards: int = 3,
                info: Any = _info) -> CheckpointFacts:
    """Facts as the audit keeps them with matching headers: ``names`` spread over ``shards`` shards in runs (as
    a checkpoint is cut), each header's columns in reversed order, ``infos`` a :class:`HeaderInfos`; the tensors
    from ``mtp_from`` on are the MTP layer's, grouped into modules as ``facts.py`` groups them."""
    facts = CheckpointFacts(display="x", mode="shards", files=())
    run = -(-len(names) // shards)
    shard_of = {n: f"model-{i // run + 1:05d}.safetensors" for i, n in enumerate(names)}
    headers: dict[str, ShardHeader] = {}
    for shard in sorted(set(shard_of.values())):
        held = [n for n in names if shard_of[n] == shard][::-1]
        infos = [info(n) for n in held]
        headers[shard] = ShardHeader(shard, TensorColumns(held, [i.dtype for i in infos], [list(i.shape) for i in infos],
                                                          [i.nbytes for i in infos]))
    facts.tensors = facts.weight_map = shard_of  # type: ignore[assignment]
    facts.headers = headers
    facts.infos = HeaderInfos(headers, shard_of)
    if mtp_from is not None:
        for n in names[names.index(mtp_from):]:
            if ".layers.61." not in n:
                continue
            facts.mtp[n] = ("model.layers.61", 61)
            module, _, param = n.rpartition(".")
            if param not in PARAM_SUFFIXES:
                module, param = n, ""
            facts.mtp_modules.setdefault(module, Module(module)).params[param] = facts.infos[n]
    facts.schemes.append(parse_quantization_config({"quant_method": "fp8", "weight_block_size": [128, 128]}))
    return facts


def test_census_takes_the_bulk_from_the_joined_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DeepSeek-V3-like checkpoint with its FP8 MTP layer: 4 layers x (3 attention + 3 x 3 expert) FP8 linears in
    the trunk, counted from the joined names (the name-list pass never runs); the MTP layer's 12 FP8 linears and
    its BF16 eh_proj and head stay out; the router (mlp.gate, 2-D BF16) is not a linear layer, nor are the norms,
    the embeddings and lm_head."""
    names = _deepseek_names(mtp_layer=61)
    facts = _checkpoint(names, mtp_from="model.layers.61.self_attn.q_a_proj.weight")
    _no_name_list_pass(monkeypatch)
    got = trunk_census(facts)
    assert got == Counter({("FP8", False): 48})
    assert got == Counter(linear_formats(facts, facts.trunk_modules).values())


def test_text_pass_takes_blocks_of_four_lines_with_the_anchor_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    """compressed-tensors NVFP4 in a sorted index: input_global_scale, weight_global_scale, weight_packed (the
    anchor, third of four lines), weight_scale; 2 layers x 3 linears, one BF16 o_proj per layer, norms and lm_head
    (not a linear layer by its name)."""
    names = []
    for i in range(2):
        names.append(f"model.layers.{i}.input_layernorm.weight")
        for m in ("down_proj", "gate_proj", "up_proj"):
            names += [f"model.layers.{i}.mlp.{m}.{p}" for p in
                      ("input_global_scale", "weight_global_scale", "weight_packed", "weight_scale")]
        names.append(f"model.layers.{i}.self_attn.o_proj.weight")  # left unquantized
    names += ["lm_head.weight", "model.norm.weight"]

    def info(n: str) -> TensorInfo:
        dtype = "U8" if n.endswith("packed") else "F8_E4M3" if n.endswith("weight_scale") else "BF16" if n.endswith(".weight") else "F32"
        return TensorInfo(n, dtype, (64,) if "norm" in n else (64, 64), 64)

    facts = _checkpoint(names, info=info)
    facts.schemes[0] = parse_quantization_config({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"})
    assert trunk._first_block(facts.joined_names, facts.tensors, ".weight_packed") == [
        "input_global_scale", "weight_global_scale", "weight_packed", "weight_scale"]
    _no_name_list_pass(monkeypatch)
    asked: list[str] = []
    read = trunk._dtypes_ranks
    monkeypatch.setattr(trunk, "_dtypes_ranks", lambda names, *a: (asked.extend(names), read(names, *a))[1])
    assert trunk_census(facts) == Counter({("NVFP4", False): 6, ("BF16", False): 2})
    assert trunk_census(facts) == Counter(linear_formats(facts, facts.trunk_modules).values())
    # the norms and lm_head are no linear layers whatever their weights: only the projections' headers are read
    assert asked == ["model.layers.0.self_attn.o_proj.weight", "model.layers.1.self_attn.o_proj.weight"]


def _text_pass(names: list[str], mtp: tuple[str, ...] = ()) -> tuple[Any, Counter[tuple[str, bool]] | None]:
    """What the text pass answers for ``names`` (every name with the dtypes of :func:`_exact_or_declined`), and the
    census's answer, checked against module by module."""
    facts = _small_facts(names, mtp)
    group = trunk._anchored_in_text(facts.joined_names, facts.tensors, facts.mtp, facts.mtp_modules)
    got = trunk_census(facts)
    assert got is None or got == Counter(linear_formats(facts, facts.trunk_modules).values())
    return group, got


def test_text_pass_answers_what_the_name_list_pass_answers() -> None:
    """Same bulk, same count, same other names (the trunk's only) as :func:`trunk._anchored`."""
    names = ["m.norm.weight", "a.fc.weight", "a.fc.weight_scale_inv", "b.fc.weight", "b.fc.weight_scale_inv",
             "b.norm.weight", "mtp.fc.weight", "mtp.fc.weight_scale_inv", "mtp.norm.weight"]
    mtp = ("mtp.fc.weight", "mtp.fc.weight_scale_inv", "mtp.norm.weight")
    group, got = _text_pass(names, mtp)
    assert group == (frozenset({"weight", "weight_scale_inv"}), 2, ["m.norm.weight", "b.norm.weight"], ".weight_scale_inv")
    facts = CheckpointFacts(display="x", mode="shards", files=())
    facts.tensors = dict.fromkeys(names, "s")
    facts.mtp = dict.fromkeys(mtp, ("mtp", 0))  # type: ignore[arg-type]
    facts.mtp_modules = {"mtp.fc": Module("mtp.fc"), "mtp.norm": Module("mtp.norm")}
    assert trunk._anchored(facts.tensors, names, facts.mtp, facts.mtp_modules, facts.name_ends_with) == group
    assert got == Counter({("FP8", False): 2})


def test_text_pass_pairs_only_whole_lines_of_one_module() -> None:
    """Each of these breaks one pairing: the text pass must leave the anchor in the remainder and decline (then the
    name-list pass declines too: the FP8 modules are not all alike), not count a block that is not one."""
    other_module = ["a.fc.weight", "a.fc.weight_scale_inv", "q.fc.weight", "x.fc.weight_scale_inv"]
    longer_weight = ["a.fc.weight", "a.fc.weight_scale_inv", "z.b.fc.weight", "b.fc.weight_scale_inv"]
    shorter_weight = ["a.fc.weight", "a.fc.weight_scale_inv", "fc.weight", "b.fc.weight_scale_inv"]
    empty_module = ["a.fc.weight", "a.fc.weight_scale_inv", ".weight", ".weight_scale_inv"]
    for names in (other_module, longer_weight, shorter_weight, empty_module):
        group, got = _text_pass(names)
        assert group is None and got is None, names


def test_text_pass_keeps_a_trunk_tensor_of_an_mtp_block() -> None:
    """The MTP layer holds mtp.fc's scale, the trunk its weight: a block of one MTP and one trunk tensor. The text pass
    must not remove the trunk weight with the block (the removed MTP tensors do not add up) and the census declines:
    the trunk tensor sits in an MTP module."""
    names = ["a.fc.weight", "a.fc.weight_scale_inv", "mtp.fc.weight", "mtp.fc.weight_scale_inv"]
    group, got = _text_pass(names, mtp=("mtp.fc.weight_scale_inv",))
    assert group is None and got is None


def test_text_pass_declines_where_a_trunk_anchor_sits_in_an_mtp_module() -> None:
    """m.fc's weight and scale are trunk tensors, its bias an MTP tensor (m.fc is an MTP module): the census declines
    there, whichever pass takes the bulk."""
    names = ["a.fc.weight", "a.fc.weight_scale_inv", "m.fc.weight", "m.fc.weight_scale_inv", "m.norm.weight", "m.fc.bias"]
    group, got = _text_pass(names, mtp=("m.fc.bias",))
    assert group is None and got is None


def test_text_pass_takes_the_anchor_the_name_list_pass_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """FP8-block linears near the top, an NVFP4 one past the part of the text searched for a first anchor:
    ``weight_scale_2`` comes first in module_format's order, so the text pass leaves the census to the name-list
    pass, which takes the NVFP4 module as the bulk and decides the FP8 one by its suffixes."""
    names = ["a.fc.weight", "a.fc.weight_scale_inv", "b.fc.weight", "b.fc.weight_scale", "b.fc.weight_scale_2"]
    monkeypatch.setattr(trunk, "_HEAD", len("a.fc.weight\na.fc.weight_scale_inv\n"))
    group, got = _text_pass(names)
    assert group is None
    assert got == Counter({("NVFP4", False): 1, ("FP8", False): 1})


def test_census_reads_no_joined_text_when_a_name_holds_a_newline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name holding a newline reads as two lines of the joined text (here as a block of its own): the census must
    take the name-list pass, which counts the one FP8 module."""
    names = ["a.fc.weight", "a.fc.weight_scale_inv", "b.fc.weight\nb.fc.weight_scale_inv"]
    facts = CheckpointFacts(display="x", mode="shards", files=())
    facts.tensors = dict.fromkeys(names, "s")
    facts.infos = {n: TensorInfo(n, "F8_E4M3" if n.endswith("weight") else "F32", (8, 8), 64) for n in names}
    calls: list[str] = []
    monkeypatch.setattr(trunk, "_anchored_in_text", lambda joined, *a: calls.append(joined))
    assert trunk_census(facts) in (None, Counter({("FP8", False): 1}))
    assert trunk_census(facts) == Counter(linear_formats(facts, facts.trunk_modules).values()) or trunk_census(facts) is None
    assert calls == []


def test_dtypes_and_ranks_come_from_the_header_columns() -> None:
    """The dtype and rank of each asked name, read from the columns of its shard's header (few names: ``list.index``;
    more than ``_FEW`` in one header: one membership pass; a header kept as a dict: ``infos``), in the order
    asked: equal to ``infos[name]`` for every name of a DeepSeek-like checkpoint, in every mix."""
    names = _deepseek_names(layers=3, experts=4)
    facts = _checkpoint(names, shards=4)
    first = sorted(facts.headers)[0]
    hdr = facts.headers[first]
    facts.headers[first] = ShardHeader(first, dict(hdr.tensors.items()))  # the strict reader's dict
    assert isinstance(facts.infos, HeaderInfos)
    facts.infos = HeaderInfos(facts.headers, facts.weight_map)
    shards = (facts.weight_map, facts.headers)
    for asked in (names, names[::-1], names[5:9], [n for n in names if n.endswith("norm.weight")], []):
        dtypes, ranks = trunk._dtypes_ranks(asked, facts.infos, shards)
        assert dtypes == [facts.infos[n].dtype for n in asked]
        assert ranks == [len(facts.infos[n].shape) for n in asked]
    assert sum(len(h.tensors) for h in facts.headers.values()) > 4 * trunk._FEW  # both ways are taken above


_EXTRA = ["bias", "input_scale", "weight_scale", "weight", "weight_scale_inv", "e_score_correction_bias", "weight_scale_2"]


def _perturbed(rng: random.Random) -> list[str]:
    """DeepSeek-V3-like names with up to three edits: a tensor dropped, a suffix added to a module (anywhere), two
    names swapped, an odd name inserted (an empty or one-component module), a layer renamed into the MTP layer."""
    names = _deepseek_names(layers=rng.randint(1, 3), experts=rng.randint(1, 3), mtp_layer=61 if rng.random() < 0.6 else None)
    for _ in range(rng.randint(0, 3)):
        op, i = rng.randrange(5), rng.randrange(len(names))
        if op == 0:
            del names[i]
        elif op == 1:
            names.insert(rng.randrange(len(names) + 1), names[i].rpartition(".")[0] + "." + rng.choice(_EXTRA))
        elif op == 2:
            j = rng.randrange(len(names))
            names[i], names[j] = names[j], names[i]
        elif op == 3:
            names.insert(i, rng.choice(["", "x", "a.b"]) + rng.choice([".weight", ".weight_scale_inv", "weight", ".q_proj.weight"]))
        else:
            names[i] = names[i].replace("layers.", "layers.61.", 1)
    return list(dict.fromkeys(names))


def test_census_on_perturbed_deepseek_layouts() -> None:
    """300 DeepSeek-V3-like checkpoints (header columns, FP8 MTP layer or none) with random edits that break a block,
    add a tensor to a module, move one, or mix MTP and trunk tensors: the census answers exactly or declines, and
    the joined-text pass takes the bulk of many of them."""
    answered = declined = by_text = 0
    for seed in range(300):
        rng = random.Random(seed)
        names = _perturbed(rng)
        facts = _checkpoint(names, mtp_from=next((n for n in names if ".layers.61." in n), None), shards=rng.randint(1, 4))
        by_text += trunk._anchored_in_text(facts.joined_names, facts.tensors, facts.mtp, facts.mtp_modules) is not None
        got = trunk_census(facts)
        if got is None:
            declined += 1
        else:
            answered += 1
            assert got == Counter(linear_formats(facts, facts.trunk_modules).values()), seed
    assert answered > 100 and declined > 100 and by_text > 100
