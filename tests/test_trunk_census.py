"""The trunk format census (``mtp_audit.checkpoint.trunk``) against the module-by-module path it replaces.

Invariant: whenever the census answers, its counts are ``Counter(linear_formats(facts, facts.trunk_modules).values())``;
it declines (``None``) only where it must (a tensor without a header, a numeric last name component, a trunk tensor
inside an MTP module, a format that depends on a per-module declaration). Checked on generated trunks mixing every
parameter suffix, odd names, dtypes, ranks, leaves and quantization configs, and on a DeepSeek-V3-like trunk by hand.
"""

from __future__ import annotations

import random
from collections import Counter

from mtp_audit.checkpoint.accounting import (
    linear_formats,
    trunk_census,
    trunk_format_counts,
)
from mtp_audit.checkpoint.config import parse_quantization_config
from mtp_audit.checkpoint.facts import CheckpointFacts, Module
from mtp_audit.checkpoint.tensors import PARAM_SUFFIXES
from mtp_audit.sources.local import TensorInfo

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
    return facts


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


def _exact_or_declined(names: list[str], mtp: tuple[str, ...] = ()) -> Counter[tuple[str, bool]] | None:
    facts = CheckpointFacts(display="x", mode="shards", files=())
    facts.tensors = dict.fromkeys(names, "s")
    facts.infos = {n: TensorInfo(n, "BF16" if "q_proj" in n else "F8_E4M3" if n.endswith("weight") else "F32", (8, 8), 64)
                   for n in names}
    for n in mtp:
        facts.mtp[n] = ("mtp", 0)
        module, _, param = n.rpartition(".")
        facts.mtp_modules.setdefault(module, Module(module)).params[param] = facts.infos[n]
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
