"""Checkpoint checks for the MTP layouts of 2026 families (MTP016-MTP019), from config.json and tensor names
(headers where read), each a pure function of :class:`~mtp_audit.checkpoint.facts.CheckpointFacts`:

- MTP016: an ``mtp.`` prefix that holds a DSpark drafter, not MTP heads (DeepSeek-V4-Flash-0731);
- MTP017: several MTP layers shipped, but the engine runs only the first (or builds only it);
- MTP018: an MTP ``shared_head`` that the engine builds under another name, so the NVFP4 exclusion list written
  for the checkpoint's name no longer covers it;
- MTP019: NVFP4 experts of one layer where only some carry their per-expert ``input_scale``.

Engine behaviour is sourced data (:data:`~mtp_audit.checkpoint.engine_rows.MULTI_LAYER_USE`,
:data:`~mtp_audit.checkpoint.engine_rows.HEAD_RENAMES`), each row read in the named release or cited from the engine's
tracker; MTP017 and MTP018 import those rows once a checkpoint has several MTP layers or an FP4 scheme (two frozen
classes and their rows, ~0.8 ms of start-up a checkpoint without either does not pay).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from operator import methodcaller
from typing import TYPE_CHECKING

from mtp_audit.checkpoint import rules as R
from mtp_audit.checkpoint.facts import CONFIG, CheckpointFacts
from mtp_audit.report import Evidence, Finding, Location, Severity

if TYPE_CHECKING:
    from mtp_audit.checkpoint.engine_rows import LayerUse

# --- MTP016: DSpark under mtp.* ------------------------------------------------------------------

#: Tensor leaves only an MTP (NextN) head has: the embedding / hidden norms and the projection joining them
#: (DeepSeek / GLM / MiMo-V2 / Step ``enorm``, ``hnorm``, ``eh_proj``; DeepSeek-V4 ``e_proj`` / ``h_proj``;
#: Qwen ``fc`` + ``pre_fc_norm_*``; MiMo-7B ``input_proj`` + ``token_layernorm``; ERNIE ``mtp_linear_proj``).
MTP_HALLMARKS = ("enorm", "hnorm", "eh_proj", "e_proj", "h_proj", "fc", "pre_fc_norm_embedding",
                 "pre_fc_norm_hidden", "input_proj", "token_layernorm", "hidden_layernorm", "mtp_linear_proj")
#: Any hallmark as a whole dotted part of a name. This pattern and :data:`_EXPERT_SCALE2` are compiled on first use
#: (``re``'s own cache), not at import: only a DSpark config or NVFP4 ``weight_scale_2`` tensors reach them (~0.2 ms).
_HALLMARK = r"(?:^|\.)(?:" + "|".join(MTP_HALLMARKS) + r")(?:\.|$)"

#: The method DSpark needs, per engine. vLLM 0.33.0 ``vllm/config/speculative.py:70`` (``DSparkModelTypes``) and
#: :1269-1275 (``method == "dspark"``: the drafter ships inside the target checkpoint); ``num_speculative_tokens``
#: must equal ``dspark_block_size`` and ``method: mtp`` "is liable to half-load DSpark blocks rather than fail
#: cleanly" (vLLM PR #41834). SGLang 0.5.23 ``sglang/srt/speculative/spec_info.py:41`` (``DSPARK``) with
#: ``--speculative-dspark-block-size`` (``arg_groups/speculative_hook.py:807-813``).
DSPARK_METHODS = (
    ("vLLM 0.33.0", "--speculative-config '{\"method\": \"dspark\", \"num_speculative_tokens\": %s}'",
     "vllm/config/speculative.py:1269-1275"),
    ("SGLang 0.5.23", "--speculative-algorithm DSPARK --speculative-dspark-block-size %s",
     "sglang/srt/speculative/spec_info.py:41, arg_groups/speculative_hook.py:807-813"),
)


def is_dspark(facts: CheckpointFacts) -> bool:
    """Whether the config declares a DSpark drafter and no MTP tensor has an MTP hallmark (see
    :data:`MTP_HALLMARKS`); config-only, the keys alone decide."""
    if not facts.dspark:
        return False
    search = re.compile(_HALLMARK).search
    return not any(search(n) for n in facts.mtp)


def check_dspark(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP016: config.json declares a DSpark drafter (``dspark_block_size``...) and the tensors under ``mtp.*``
    have no ``eh_proj`` / ``enorm`` / ``hnorm``: an MTP method would half-load DSpark blocks; the engine needs
    its DSpark method with ``num_speculative_tokens`` = ``dspark_block_size``."""
    if not is_dspark(facts):
        return
    keys = facts.dspark
    block = keys.get("dspark_block_size")
    shown = ", ".join(f"{k} = {v}" for k, v in sorted(keys.items()) if not isinstance(v, (list, dict)) or k.endswith("ids"))
    labels = facts.mtp_layer_labels()
    held = (f"the {len(facts.mtp):,} tensors under {', '.join(labels)} have no "
            f"{'/'.join(MTP_HALLMARKS[:3])}" if facts.mtp else "no MTP-head tensor is listed")
    fixes = [f"{who}: {flag % (block if block is not None else 'dspark_block_size')} ({where})"
             for who, flag, where in DSPARK_METHODS]
    yield R.MTP016.finding(
        f"config.json declares a DSpark drafter ({shown}) and {held}: this is DSpark parallel block drafting, not MTP; "
        "--speculative-config method mtp half-loads the DSpark blocks instead of failing (vLLM PR #41834); use the engine's DSpark method with num_speculative_tokens = dspark_block_size",
        Location(CONFIG, symbol="/dspark_block_size" if "dspark_block_size" in keys else None),
        evidence=[Evidence("DSpark keys", ", ".join(sorted(keys))),
                  Evidence("tensors under mtp.* per block", ", ".join(f"{k}: {v:,}" for k, v in labels.items()) or "(none listed)"),
                  *[Evidence("method", f) for f in fixes]],
        remediation="Serve it with " + "; or ".join(fixes) + ".",
    )


# --- MTP017: several MTP layers, the engine runs the first ------------------------------------------


def check_multi_layer(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP017: the checkpoint ships more than one MTP layer; says, per engine release, whether each draft step runs
    its own layer, only layer 0 is built, or every step reruns layer 0 while the rest sits in memory."""
    cfg = facts.config
    if cfg is None or is_dspark(facts):
        return
    found = facts.found_layers()
    if found < 2:
        return
    from mtp_audit.checkpoint.engine_rows import MULTI_LAYER_USE, layer_use

    family = cfg.layout.family if cfg.layout else None
    lines = []
    for engine in dict.fromkeys(r.engine for r in MULTI_LAYER_USE):
        row = layer_use(engine, family)
        if row is not None:
            lines.append((row, _use_words(row, found)))
    short = [r for r, _ in lines if r.uses != "all"]
    if not short:
        return
    labels = [lab for lab, i in sorted(set(facts.mtp.values()), key=lambda x: (x[1] is None, x[1] or 0, x[0]))
              if i is not None]  # two labels of one layer index (mtp.layers.0, model.layers.61): by name, not set order
    idx = sorted({i for _, i in facts.mtp.values() if i is not None})
    rest = sum(facts.infos[n].nbytes for n, (_, i) in facts.mtp.items() if i not in (None, idx[0]) and n in facts.infos)
    size = f" ({rest:,} bytes of layers {idx[1]}..{idx[-1]})" if rest else ""
    yield R.MTP017.finding(
        f"the checkpoint ships {found} MTP layers ({', '.join(labels)}){size}, but "
        + "; ".join(f"{r.engine} {w}" for r, w in lines if r.uses != "all")
        + ("; " + "; ".join(f"{r.engine} {w}" for r, w in lines if r.uses == "all") if len(short) < len(lines) else ""),
        Location(CONFIG, symbol=cfg.declaration.key or None),
        evidence=[Evidence(r.engine, f"{w} ({r.where})") for r, w in lines],
        remediation="Expect the acceptance of a one-layer draft past the first token on the engines above (keep "
        "num_speculative_tokens small there), or serve with an engine row that runs every layer.",
    )


def _use_words(row: LayerUse, found: int) -> str:
    if row.uses == "all":
        return f"runs all {found} (one per draft step)"
    if row.uses == "first-built":
        return f"builds only layer 0 (layers 1..{found - 1} are never loaded)"
    return f"loads all {found} but runs layer 0 at every draft step"


# --- MTP018: shared_head renamed past the exclusion list --------------------------------------------


def check_head_renamed(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP018: an FP4 checkpoint of a family whose engine renames the MTP ``shared_head``
    (:data:`~mtp_audit.checkpoint.engine_rows.HEAD_RENAMES`), whose exclusion list covers the head only under the
    checkpoint's name: the engine builds the head FP4 and the BF16 weight (or the missing placeholder's scales) does
    not load."""
    cfg, scheme = facts.config, facts.primary_scheme
    if cfg is None or cfg.layout is None or scheme is None or scheme.algo not in ("NVFP4", "MXFP4", "MIXED_PRECISION"):
        return
    from mtp_audit.checkpoint.engine_rows import HEAD_RENAMES

    heads = _mtp_heads(facts)
    for row in (r for r in HEAD_RENAMES if r.family == cfg.layout.family):
        for layer, stored in sorted(heads.items()):
            if (stored is None and not row.absent_too) or (stored is not None and stored not in _PLAIN):
                continue
            ckpt_name = f"{layer}.shared_head.head"
            engine_fmt = scheme.declared_format(row.built_as)
            if engine_fmt is not None and not engine_fmt.quantized:
                continue  # the list covers the engine's name too
            covered = scheme.excluded_by(ckpt_name)
            what = f"stored {stored}" if stored else "not stored (the engine builds a placeholder)"
            yield R.MTP018.finding(
                f"{layer}.shared_head is {what}; {scheme.exclude_pointer.split('#')[-1] or 'the exclusion list'} covers "
                f"it as {ckpt_name}{f' ({covered!r})' if covered else ' (not at all)'}, but {row.engine} builds it as "
                f"{row.built_as}, which the list does not cover: the head is built {scheme.algo} and the load fails",
                Location(scheme.exclude_pointer.partition("#")[0] or scheme.source.partition("#")[0],
                         symbol=scheme.exclude_pointer.partition("#")[2] or None),
                evidence=[Evidence("report", row.report), Evidence("engine module name", row.built_as)],
                remediation=f"Add \"{row.built_as}*\" (and \"*shared_head*\") to the exclusion list, or use an engine "
                "release with the fix.",
            )
            break


_PLAIN = ("BF16", "F16", "F32", "unquantized (no scale tensors)")


def _mtp_heads(facts: CheckpointFacts) -> dict[str, str | None]:
    """MTP layer label -> how its ``shared_head.head`` (or ``.output``) weight is stored (``"BF16"``...), None
    when the layer has no such tensor. Only numbered MTP layers."""
    out: dict[str, str | None] = {}
    for name, (label, idx) in facts.mtp.items():
        if idx is None:
            continue
        out.setdefault(label, None)
        if ".shared_head.head." in name or ".shared_head.output." in name:
            if name.endswith(".weight"):
                info = facts.infos.get(name)
                out[label] = info.dtype if info is not None else "unquantized (no scale tensors)"
    return out


# --- MTP019: NVFP4 experts missing per-expert input_scale ---------------------------------------------

_ENDS_SCALE2 = methodcaller("endswith", ".weight_scale_2")
_EXPERT_SCALE2 = r"^(?P<layer>.*\.experts)\.(?P<e>\d+)\.(?P<proj>[A-Za-z0-9_]+)\.weight_scale_2$"


def check_expert_input_scales(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP019: in one MoE layer, some NVFP4 experts (``weight_scale_2`` present) carry ``input_scale`` and others do
    not. A W4A4 engine path loads the missing ones as zeros and divides by them: NaN, prompt-dependent (vLLM issue
    #45212)."""
    per: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"with": [], "without": []})
    tensors = facts.tensors
    if not facts.name_ends_with("weight_scale_2"):  # from the suffix counts or one C-speed scan
        return
    match = re.compile(_EXPERT_SCALE2).match
    for name in filter(_ENDS_SCALE2, tensors):
        m = match(name)
        if m is None:
            continue
        key = "with" if name[: -len("weight_scale_2")] + "input_scale" in tensors else "without"
        per[m.group("layer")][key].append(f"{m.group('e')}.{m.group('proj')}")
    bad = {layer: v for layer, v in per.items() if v["with"] and v["without"]}
    if not bad:
        return
    layer0 = sorted(bad)[0]
    missing = sum(len(v["without"]) for v in bad.values())
    shown = ", ".join(sorted(bad[layer0]["without"], key=lambda x: (int(x.split(".")[0]), x))[:4])
    first = f"{layer0}.{sorted(bad[layer0]['without'], key=lambda x: (int(x.split('.')[0]), x))[0]}.input_scale"
    yield R.MTP019.finding(
        f"{missing:,} NVFP4 expert projection(s) in {len(bad)} MoE layer(s) lack the per-expert input_scale their "
        f"siblings carry (e.g. {layer0}: {shown}); a W4A4 path loads the missing scales as zeros and divides by them: "
        "NaN outputs that depend on the prompt",
        Location(facts.index_file or (facts.tensors.get(layer0 + "." + bad[layer0]["with"][0] + ".weight") or ""),
                 symbol=first),
        evidence=[Evidence("layers affected", ", ".join(sorted(bad)[:4]) + (" ..." if len(bad) > 4 else "")),
                  Evidence("expert projections with input_scale", f"{sum(len(v['with']) for v in bad.values()):,}")],
        severity=Severity.ERROR,
    )


CHECKS = (check_dspark, check_multi_layer, check_head_renamed, check_expert_input_scales)
