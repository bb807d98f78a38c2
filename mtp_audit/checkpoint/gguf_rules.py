"""The checkpoint analyzer's GGUF rules (MTP030-MTP039): docs, sources and runnable examples.

Declarations only; the checks live in :mod:`mtp_audit.checkpoint.gguf_audit`. Every example is a tiny GGUF
built on demand by :mod:`mtp_audit.synth.gguf` (real key and tensor names, toy sizes).
"""

from __future__ import annotations

from mtp_audit.report import Severity
from mtp_audit.report.questions import MTP_HEADS, STARTS
from mtp_audit.report.rules import Example, Rule

# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the public
# reports and code they name): ../shared/research/field_2026_12.md sections 1.1-1.5.

_Q8, _NVFP4 = 8, 40


def _model(arch: str = "qwen35moe", *, blocks: int = 3, nextn: int | None = 1, mtp_blocks: tuple[int, ...] = (2,),
           parts: tuple[str, ...] = ("eh_proj", "enorm", "hnorm", "shared_head_norm"), gtype: int = _Q8,
           name: str = "model.gguf", version: int = 3, extra: tuple = ()) -> dict[str, bytes]:
    from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors

    tensors = trunk_tensors(range(blocks)) + [t for b in mtp_blocks for t in nextn_tensors(b, ggml_type=gtype, parts=parts)]
    tensors += list(extra)
    return {name: gguf_bytes(model_kv(arch, blocks=blocks, nextn=nextn), tensors, version=version)}


def _split(drop_last: bool) -> dict[str, bytes]:
    from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors

    first = trunk_tensors(range(3))
    second = nextn_tensors(2)
    out = {}
    for no, tensors in ((0, first), (1, second)):
        kv = model_kv("qwen35moe", blocks=3, nextn=1) if no == 0 else [("general.architecture", 8, "qwen35moe")]
        kv += [("split.no", 2, no), ("split.count", 2, 2), ("split.tensors.count", 5, len(first) + len(second))]
        out[f"Qwen3.6-35B-A3B-Q4_K_M-0000{no + 1}-of-00002.gguf"] = gguf_bytes(kv, tensors)
    if drop_last:
        out.pop("Qwen3.6-35B-A3B-Q4_K_M-00002-of-00002.gguf")
    return out


def _nvfp4(scales: bool) -> dict[str, bytes]:
    extra = ((("blk.2.nextn.eh_proj.scale", (8, 128), 0), ("blk.2.nextn.eh_proj.input_scale", (1,), 0))
             if scales else ())
    return _model(gtype=_NVFP4, extra=extra)


def _sidecar() -> dict[str, bytes]:
    from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors

    return {**_model(nextn=None, mtp_blocks=(), name="Qwen3.8-27B-Q4_K_M.gguf"),
            "mtp-Qwen3.8-27B-Q4_0.gguf": gguf_bytes(model_kv("qwen35", blocks=3, nextn=1), nextn_tensors(2))}


_MODEL_SOURCES = (
    "gguf-py 0.19.0 gguf/constants.py:129 ({arch}.nextn_predict_layers) and :1383-1388 (blk.{bid}.nextn.*)",
    "ggml-org/llama.cpp PR #22673 'llama + spec: MTP Support' (2026-05-16)",
)

MTP030 = Rule(
    id="MTP030",
    name="gguf-nextn-declared-missing",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="the GGUF declares MTP layers ({arch}.nextn_predict_layers) but holds no blk.N.nextn.* tensor",
    what="Reads {arch}.nextn_predict_layers from the GGUF header and looks for blk.N.nextn.* tensors in every part.",
    why=(
        "Quantizers and older converters dropped the MTP block while keeping the key (and block_count). The model "
        "boots without speculation, then llama-server --spec-type draft-mtp aborts with "
        "GGML_ASSERT(hparams.nextn_predict_layers > 0 ...) or loads no head at all."
    ),
    fix="Use a GGUF that keeps the MTP block (releases named -MTP-GGUF, or convert_hf_to_gguf.py from a build with "
        "MTP export), or serve without --spec-type draft-mtp.",
    sources=(*_MODEL_SOURCES, "unsloth/Qwen3.6-27B-GGUF-MTP discussions #1/#2 (assert on --spec-type mtp), via am17an/llama.cpp PR #8",
             "Thireus/GGUF-Tool-Suite #61 (2026-05-02: 'I don't see any MTP layer')"),
    basis="bug report",
    examples=(
        Example(True, lambda: _model(mtp_blocks=()), note="qwen35moe.nextn_predict_layers = 1, no blk.2.nextn.*"),
        Example(False, lambda: _model(), note="blk.2.nextn.{eh_proj,enorm,hnorm,shared_head_norm} present"),
    ),
    question=MTP_HEADS,
)

MTP031 = Rule(
    id="MTP031",
    name="gguf-nextn-undeclared",
    analyzer="checkpoint",
    severity=Severity.WARNING,
    summary="blk.N.nextn.* tensors ship but {arch}.nextn_predict_layers is absent or 0",
    what="Counts blk.N.nextn.* tensors and reads {arch}.nextn_predict_layers.",
    why=(
        "llama.cpp sizes the MTP context from the key: without it the loader treats the file as trunk-only, "
        "skips or rejects the nextn tensors ('model has unused tensor ... ignoring'), and --spec-type draft-mtp "
        "has no head to run."
    ),
    fix="Re-convert with a converter that writes {arch}.nextn_predict_layers, or set it with gguf_set_metadata.",
    sources=(*_MODEL_SOURCES, "ggml-org/llama.cpp PR #25980 (presence probe: mtp_only / trunk_only), PR #28610 (missing key downgraded silently)"),
    basis="code",
    examples=(
        Example(True, lambda: _model(nextn=None), note="blk.2.nextn.* present, no qwen35moe.nextn_predict_layers"),
        Example(False, lambda: _model(), note="the key says 1 and block 2 carries the head"),
    ),
    question=MTP_HEADS,
)

MTP032 = Rule(
    id="MTP032",
    name="gguf-nextn-incomplete",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="the GGUF's MTP blocks are incomplete or misplaced",
    what=(
        "Checks that the last k blocks of {arch}.block_count (k = nextn_predict_layers) each carry nextn.eh_proj, "
        "nextn.enorm, nextn.hnorm and nextn.shared_head_norm, and that no nextn tensor sits in a trunk block."
    ),
    why=(
        "The draft-mtp graph runs block n_layer + offset with these four tensors; since the chained-head loader "
        "(PR #24340) every one of the k blocks is required. A missing tensor fails the load with draft-mtp; a "
        "nextn tensor in a trunk block means block_count or the key is wrong."
    ),
    fix="Re-export the GGUF from the original checkpoint with all MTP layers (convert_hf_to_gguf.py keeps them for "
        "families with MTP export).",
    sources=(*_MODEL_SOURCES, "ggml-org/llama.cpp PR #24340 (loader requires all n_layer_nextn MTP blocks)"),
    basis="code",
    examples=(
        Example(True, lambda: _model(parts=("eh_proj", "enorm", "shared_head_norm")), note="blk.2.nextn.hnorm missing"),
        Example(False, lambda: _model(), note="all four nextn tensors in block 2"),
    ),
    question=MTP_HEADS,
)

MTP033 = Rule(
    id="MTP033",
    name="gguf-arch-no-mtp-graph",
    analyzer="checkpoint",
    severity=Severity.WARNING,
    summary="the GGUF carries MTP tensors but llama.cpp has no draft-mtp graph for its architecture",
    what="Looks the GGUF architecture up in the llama.cpp MTP support table (mtp_audit.engines.llamacpp.tables).",
    why=(
        "Converters keep nextn tensors for glm4moe (GLM-4.5-4.7), mimo2 and qwen4exp, but merged llama.cpp builds "
        "load them as unused: the head ships and nothing drafts with it; tools that enable draft-mtp from the key "
        "alone crash (lemonade-sdk/lemonade #2451)."
    ),
    fix="Use a build or fork with an MTP graph for the architecture, or use another speculative method.",
    sources=("gguf-py 0.19.0 constants.py (GLM4_MOE: 'NextN/MTP tensors - preserved but unused')",
             "ggml-org/llama.cpp #22493 (mimo2 unused nextn tensors), #27742 (qwen4exp supports_mtp_export = False)",
             "lemonade-sdk/lemonade #2451"),
    basis="bug report",
    examples=(
        Example(True, lambda: _model("glm4moe"), note="glm4moe with blk.2.nextn.*: kept but unused"),
        Example(False, lambda: _model("qwen35moe"), note="qwen35moe has a draft-mtp graph since b9180"),
    ),
    question=MTP_HEADS,
)

MTP034 = Rule(
    id="MTP034",
    name="gguf-nvfp4-mtp-scales",
    analyzer="checkpoint",
    severity=Severity.WARNING,
    summary="NVFP4 MTP weights carry .scale/.input_scale tensors that some llama.cpp builds miscount",
    what="Finds NVFP4 (GGML type 40) blk.N.nextn.* weights with sibling .scale / .input_scale tensors.",
    why=(
        "Builds before PR #23563 do not know the MTP scale tensors and refuse the file; builds before PR #27736 "
        "skip the nextn .weight but not its scales when MTP is not enabled: 'wrong number of tensors; expected "
        "1194, got 1178'."
    ),
    fix="Use a llama.cpp build with PR #27736 (about b10610 or newer), or launch with --spec-type draft-mtp.",
    sources=("ggml-org/llama.cpp PR #23563 'Add NVFP4 MTP scale tensors' (2026-05-23)", "ggml-org/llama.cpp PR #27736 (2026-08-26)",
             "gguf-py 0.19.0 GGMLQuantizationType.NVFP4 = 40"),
    basis="bug report",
    examples=(
        Example(True, lambda: _nvfp4(True), note="NVFP4 blk.2.nextn.eh_proj with .scale and .input_scale"),
        Example(False, lambda: _nvfp4(False), note="NVFP4 eh_proj without scale tensors"),
    ),
    question=MTP_HEADS,
)

MTP035 = Rule(
    id="MTP035",
    name="gguf-split-incomplete",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="a split GGUF (-0000k-of-0000n) is missing parts or its split.* keys disagree",
    what="Groups NAME-0000k-of-0000n.gguf files, reads every part's header and checks split.count, split.no and "
         "split.tensors.count against the parts present.",
    why="llama.cpp opens every part named by split.count and fails when one is missing or the tensor count differs; "
        "the MTP block is in the last part, so a partial download loses the head first.",
    fix="Download every part of the split set (or merge them with llama-gguf-split --merge).",
    sources=("ggml-org/llama.cpp tools/gguf-split (split.no, split.count, split.tensors.count; %s-%05d-of-%05d.gguf)",),
    basis="code",
    examples=(
        Example(True, lambda: _split(True), note="part 2 of 2 (with blk.2.nextn.*) is missing"),
        Example(False, lambda: _split(False), note="both parts present"),
    ),
    question=STARTS,
)

MTP036 = Rule(
    id="MTP036",
    name="gguf-mtp-sidecar",
    analyzer="checkpoint",
    severity=Severity.INFO,
    summary="an MTP-only GGUF (mtp-NAME.gguf) ships beside the model: pass it with -md and --spec-type draft-mtp",
    what="Finds mtp-*.gguf files and reads what they hold.",
    why="The converter's --mtp mode writes the head alone; llama-server only uses it when it is given with "
        "-md/--spec-draft-model and --spec-type draft-mtp (the default spec type is none).",
    fix="llama-server -m MODEL.gguf -md mtp-MODEL.gguf --spec-type draft-mtp",
    sources=("ggml-org/llama.cpp PR #25589 (--mtp writes an MTP-only GGUF), PR #23398 (Gemma-4 -md mtp-gemma-4-31B-it.gguf)",
             "ggml-org/llama.cpp #27151 (mtp-Qwen3.8-27B-Q4_0.gguf with --spec-draft-model)"),
    basis="documentation",
    examples=(
        Example(True, _sidecar, note="Qwen3.8-27B trunk and mtp-Qwen3.8-27B-Q4_0.gguf"),
        Example(False, lambda: _model(), note="the head is inside the model file"),
    ),
    question=MTP_HEADS,
)

MTP037 = Rule(
    id="MTP037",
    name="gguf-no-mtp-head",
    analyzer="checkpoint",
    severity=Severity.INFO,
    summary="the architecture has a llama.cpp MTP graph but this GGUF carries no MTP head",
    what="For architectures with a draft-mtp graph, reports a model that has neither nextn tensors nor a key, and no sidecar beside it.",
    why="Many quantized releases are converted without the head (or with --no-mtp); --spec-type draft-mtp then has "
        "nothing to run. Releases named -MTP-GGUF keep it.",
    fix="Download the release that keeps the MTP head, or an mtp-*.gguf sidecar for this model.",
    sources=("ggml-org/llama.cpp PR #25641 (--no-mtp strips the head)", "ggml-org/llama.cpp #28196 (unsloth Qwen3.5-27B-GGUF has no nextn tensors; the -MTP-GGUF release does)"),
    basis="bug report",
    examples=(
        Example(True, lambda: _model(nextn=None, mtp_blocks=()), note="qwen35moe without any MTP"),
        Example(False, lambda: _model(), note="qwen35moe with its head"),
    ),
    question=MTP_HEADS,
)

MTP038 = Rule(
    id="MTP038",
    name="gguf-nextn-low-bit",
    analyzer="checkpoint",
    severity=Severity.INFO,
    summary="MTP projection weights are stored at 4 bits or fewer",
    what="Reads the GGML type of every blk.N.nextn.* projection (eh_proj, shared_head_head, embed_tokens).",
    why="Community quantizers keep the nextn tail at Q8_0 for acceptance; 4-bit heads have cost acceptance in "
        "some reports and not in others, so this is advisory.",
    fix="If acceptance is low, try a quant that keeps blk.N.nextn.* at Q8_0.",
    sources=("ik_llama.cpp PR #1745 (IQ4_XS-Q8nextn files keep the nextn tail at Q8_0)",
             "TheTom/llama-cpp-turboquant PR #362 (2026-09-07)", "Neroued/ninfer #102 (NVFP4 vs BF16 MTP: 42.97% vs 42.11%)"),
    basis="bug report",
    examples=(
        Example(True, lambda: _model(gtype=2), note="blk.2.nextn.eh_proj at Q4_0"),
        Example(False, lambda: _model(), note="blk.2.nextn.eh_proj at Q8_0"),
    ),
    question=MTP_HEADS,
)

MTP039 = Rule(
    id="MTP039",
    name="gguf-version-1",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="the file is GGUF version 1, which llama.cpp no longer loads",
    what="Reads the GGUF version of every file.",
    why="ggml/src/gguf.cpp refuses version 1: 'GGUFv1 is no longer supported, please use a more up-to-date version'.",
    fix="Re-convert the model with a current convert_hf_to_gguf.py.",
    sources=("ggml-org/llama.cpp ggml/src/gguf.cpp (gguf_init_from_file_impl: version 1 refused)",),
    basis="code",
    examples=(
        Example(True, lambda: _model(version=1), note="a version-1 file"),
        Example(False, lambda: _model(version=3), note="a version-3 file"),
    ),
    question=STARTS,
)

GGUF_RULES: tuple[Rule, ...] = (MTP030, MTP031, MTP032, MTP033, MTP034, MTP035, MTP036, MTP037, MTP038, MTP039)
