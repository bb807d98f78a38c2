"""``mtp-audit compare BASE DERIVED`` when DERIVED is a GGUF export of a safetensors BASE: did llama.cpp's converter (or
a quantizer) keep the MTP heads?

Reads only the public facts of the two checkpoint reports: BASE's ``mtp.hallmarks`` (each Hugging Face MTP tensor that
maps to a GGUF nextn part, :data:`mtp_audit.checkpoint.layouts.HF_TO_GGUF`: ``mtp.fc -> nextn.eh_proj``, ...) and
``mtp.declared_layers``; DERIVED's ``gguf.models`` (the model and any ``mtp-*.gguf`` sidecar: ``nextn_predict_layers``,
``block_count``, the nextn parts per block). MTP layer i of BASE is block ``block_count - k + i`` of the GGUF
(k = ``nextn_predict_layers``; in a sidecar, the i-th nextn block).

Rules (:mod:`mtp_audit.compare.gguf_rules`): MTP055 every MTP tensor dropped, MTP056 some mapped parts lost, MTP057
MTP depth changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer, as_checkpoint_answer
from mtp_audit.checkpoint.typed_gguf import GgufModel, NextnBlock
from mtp_audit.compare import gguf_rules as R
from mtp_audit.report import Evidence, Finding, Gap, Location, Severity
from mtp_audit.report.questions import MTP_HEADS

#: The nextn parts the draft-mtp graph cannot do without (the others fall back to the trunk's embedding and output);
#: the same four the checkpoint analyzer requires per MTP block (ik_llama.cpp PR #1745, ollama #16282 dumps).
REQUIRED_NEXTN = ("eh_proj", "enorm", "hnorm", "shared_head_norm")


def is_gguf_side(facts: Mapping[str, Any] | None) -> bool:
    """Whether a side's checkpoint facts come from GGUF files."""
    return isinstance(facts, Mapping) and facts.get("mode") == "gguf"


def _head_model(derived: CheckpointAnswer) -> GgufModel | None:
    models = derived.gguf_models
    with_head = [m for m in models if m.blocks]
    main = next((m for m in models if m.kind == "model"), None)
    return (main if main in with_head else None) or (with_head[0] if with_head else main)


def _blocks_in_order(model: GgufModel) -> list[tuple[int, NextnBlock]]:
    return sorted(((b.block, b) for b in model.blocks), key=lambda x: x[0])


def compare_gguf(base: CheckpointAnswer | Mapping[str, Any], derived: CheckpointAnswer | Mapping[str, Any], *, base_name: str,
                 derived_name: str) -> tuple[list[Finding], dict[str, Any]]:
    """Findings and the ``facts["compare"]`` document for a safetensors BASE and a GGUF DERIVED (their checkpoint
    answers, or the ``facts["checkpoint"]`` documents they are read from)."""
    b, d = as_checkpoint_answer(base), as_checkpoint_answer(derived)
    hallmarks = list(b.mtp.hallmarks) if b is not None else []
    k_base = (b.mtp.declared_layers if b is not None else None) or 0
    model = _head_model(d) if d is not None else None
    blocks = _blocks_in_order(model) if model else []
    k_gguf = model.nextn_predict_layers if model else None
    findings: list[Finding] = []
    loc = Location(path=model.name if model else None)
    if hallmarks and not blocks:
        findings.append(R.MTP055.finding(
            f"{base_name} has {len(hallmarks)} MTP tensors that map to GGUF nextn parts "
            f"({', '.join(sorted({h[2] for h in hallmarks}))}); {derived_name} has no blk.N.nextn.* tensor in any file",
            loc, evidence=[Evidence("base hallmarks", ", ".join(h[0] for h in hallmarks[:6]))]))
    lost = _lost_parts(hallmarks, blocks)
    if lost and blocks:
        required = [x for x in lost if x[2] in REQUIRED_NEXTN]
        findings.append(R.MTP056.finding(
            f"{len(lost)} MTP tensor(s) of {base_name} have no GGUF counterpart in {derived_name}: "
            + "; ".join(f"{name} -> {where}" for name, where, _ in lost[:4])
            + ("" if required else " (optional parts: llama.cpp falls back to the trunk's embedding and output)"),
            loc, severity=None if required else Severity.WARNING))
    found = len(blocks)
    if hallmarks and blocks and (k_base and (k_gguf or found) != k_base):
        findings.append(R.MTP057.finding(
            f"{base_name} declares {k_base} MTP layer(s); {derived_name} declares {k_gguf} and carries {found} nextn "
            "block(s)", loc))
    doc: dict[str, Any] = {"summary": {"base": base_name, "derived": derived_name, "compared": True, "derived_format": "gguf",
                       "mapped": len(hallmarks) - len(lost) if blocks else 0, "hallmarks": len(hallmarks),
                       "base_mtp_layers": k_base, "gguf_nextn_predict_layers": k_gguf, "gguf_nextn_blocks": found},
           "mapping": [{"base": h[0], "gguf": _where(h, blocks), "present": _present(h, blocks)} for h in hallmarks]}
    s = doc["summary"]
    doc["answer"] = [f"{s['mapped']} of {s['hallmarks']} MTP tensors of the base map to GGUF nextn tensors "
                     f"(base {k_base} MTP layer(s), GGUF {found} nextn block(s))"]
    return findings, doc


def _where(h: Sequence[Any], blocks: list[tuple[int, NextnBlock]]) -> str | None:
    i = h[1] or 0
    return f"blk.{blocks[i][0]}.nextn.{h[2]}.weight" if i < len(blocks) else None


def _present(h: Sequence[Any], blocks: list[tuple[int, NextnBlock]]) -> bool:
    i = h[1] or 0
    return i < len(blocks) and h[2] in blocks[i][1].parts


def _lost_parts(hallmarks: Sequence[Sequence[Any]], blocks: list[tuple[int, NextnBlock]]) -> list[tuple[str, str, str]]:
    out = []
    for h in hallmarks:
        if not _present(h, blocks):
            where = _where(h, blocks) or f"MTP layer {h[1] or 0} has no nextn block"
            out.append((h[0], where, h[2]))
    return out


def nothing_mapped(base: Mapping[str, Any], derived: Mapping[str, Any], *, base_name: str, derived_name: str) -> Gap | None:
    """A blocking gap when BASE's MTP tensors are unknown, or when BASE has MTP tensors and none of them maps to a GGUF
    nextn part (:data:`mtp_audit.checkpoint.layouts.HF_TO_GGUF`: a family whose MTP names the mapping does not know, or
    a GGUF of another model): then nothing was compared, which is "could not tell", never "0 of 0 kept". The message
    names both architectures (``summary.architecture`` of each side). None when there is something to compare."""
    n = (base.get("summary") or {}).get("mtp_tensors")
    if n is not None and (n == 0 or (base.get("mtp") or {}).get("hallmarks")):
        return None
    b_arch = (base.get("summary") or {}).get("architecture") or "unknown"
    d_arch = (derived.get("summary") or {}).get("architecture") or "unknown"
    what = ("its MTP tensors are unknown (no index and no shard header was read)" if n is None else
            f"none of its {n:,} MTP tensors maps to a GGUF nextn tensor (eh_proj, enorm, hnorm, shared_head_norm, ...)")
    return Gap("compare", f"{base_name} (architecture {b_arch}): {what}; {derived_name} is GGUF architecture {d_arch}: "
               "nothing was compared", question=MTP_HEADS)
