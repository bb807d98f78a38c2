"""llama.cpp launch rules (MTP600-MTP612): docs, sources and runnable examples.

Declarations only; the checks live in :mod:`mtp_audit.engines.llamacpp.evaluate`. Examples are a command
(``args``, after ``--llamacpp-build N --``) and the GGUF files it names, built on demand by
:mod:`mtp_audit.synth.gguf`.
"""

from __future__ import annotations

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule

# Maintainers' research notes behind these sources (not shipped): ../shared/research/field_2026_12.md §1.

ANALYZER = "llamacpp"


def _files(arch: str = "qwen35moe", *, head: bool = True, gtype: int = 8, k: int = 1, scales: bool = False,
           sidecar: bool = False) -> dict[str, bytes]:
    from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors

    blocks = 3 + (k if head and not sidecar else 0)
    tensors = trunk_tensors(range(3))
    if head and not sidecar:
        for b in range(3, 3 + k):
            tensors += nextn_tensors(b, ggml_type=gtype)
    if scales:
        tensors += [("blk.3.nextn.eh_proj.scale", (8, 128), 0), ("blk.3.nextn.eh_proj.input_scale", (1,), 0)]
    files = {"model.gguf": gguf_bytes(model_kv(arch, blocks=blocks, nextn=k if head and not sidecar else None), tensors)}
    if sidecar:
        files["mtp-model.gguf"] = gguf_bytes(model_kv(arch, blocks=4, nextn=1), nextn_tensors(3, ggml_type=gtype))
    return files


def _args(build: str, *cmd: str) -> tuple[str, ...]:
    return ("--llamacpp-build", build, "--", "llama-server", "-m", "model.gguf", *cmd)


_SPEC = ("ggml-org/llama.cpp PR #22673 'llama + spec: MTP Support' (merged 2026-05-16, release b9180)",)

MTP600 = Rule(
    id="MTP600", name="llamacpp-mtp-head-unused", analyzer=ANALYZER, severity=Severity.WARNING,
    summary="the model carries an MTP head but --spec-type does not ask for it (the default is none)",
    what="Reads the -m GGUF (and a -md mtp-*.gguf) for nextn tensors and the command for --spec-type.",
    why="llama-server loads the head but drafts nothing unless --spec-type names draft-mtp: users see draft=0 and "
        "no speed-up. --spec-default is an n-gram preset, not MTP.",
    fix="Add --spec-type draft-mtp (ik_llama.cpp: --spec-type mtp).",
    sources=(*_SPEC, "ggml-org/llama.cpp PR #22673 comments (2026-05-17: unsloth Qwen3.6-27B-MTP with no spec type: draft=0)",
             "tmac1973/llama-toolchest PR #41 (draft GGUF loading but speculation never engaged)",
             "ggml-org/llama.cpp #24443 (--model-draft mtp-gemma-4-12B-it.gguf without --spec-type)"),
    basis="bug report",
    examples=(
        Example(True, _files, args=_args("10444"), note="MTP GGUF, no --spec-type"),
        Example(False, _files, args=_args("10444", "--spec-type", "draft-mtp"), note="--spec-type draft-mtp"),
    ),
)

MTP601 = Rule(
    id="MTP601", name="llamacpp-draft-mtp-without-head", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="--spec-type draft-mtp on a GGUF with no MTP head and no MTP draft (-md)",
    what="Looks for blk.N.nextn.* in the -m GGUF (every split part) and in the -md GGUF.",
    why="The MTP context cannot be built: llama.cpp asserts (GGML_ASSERT(hparams.nextn_predict_layers > 0 ...)) "
        "or fails to create the draft context.",
    fix="Use the -MTP- release of the GGUF, or pass the head with -md mtp-NAME.gguf.",
    sources=(*_SPEC, "unsloth/Qwen3.6-27B-GGUF-MTP discussions #1/#2 via am17an/llama.cpp PR #8",
             "ggml-org/llama.cpp #28196 comment (unsloth Qwen3.5-27B-GGUF has no nextn tensors)"),
    basis="bug report",
    examples=(
        Example(True, lambda: _files(head=False), args=_args("10444", "--spec-type", "draft-mtp"), note="no nextn tensors"),
        Example(False, _files, args=_args("10444", "--spec-type", "draft-mtp"), note="blk.3.nextn.* present"),
    ),
)

MTP602 = Rule(
    id="MTP602", name="llamacpp-spec-type-spelling", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="a --spec-type value this llama.cpp fork does not know (draft-mtp vs mtp)",
    what="Checks every --spec-type element against the fork's spellings: mainline llama.cpp says draft-mtp "
         "(renamed from mtp before the merge) and draft-simple (was draft); ik_llama.cpp says mtp[:n_max=..]. "
         "With the build unknown, a value the other fork accepts is 'could not tell', not this error.",
    why="An unknown type stops the server at argument parsing, or (chained with others) leaves MTP out.",
    fix="Mainline: --spec-type draft-mtp. ik_llama.cpp: --spec-type mtp.",
    sources=("ggml-org/llama.cpp PR #22673 review (2026-05-13: 'mtp' -> 'draft-mtp')", "ikawrakow/ik_llama.cpp PR #2369",
             "Thireus/GGUF-Tool-Suite #87", "luongnv89/ccl #102 (previously --spec-type mtp, renamed 2026-05-13)"),
    basis="documentation",
    examples=(
        Example(True, _files, args=_args("10444", "--spec-type", "mtp"), note="mainline build with the old spelling"),
        Example(False, _files, args=_args("ik:4100", "--spec-type", "mtp:n_max=3"), note="ik_llama.cpp spelling on ik_llama.cpp"),
    ),
)

MTP603 = Rule(
    id="MTP603", name="llamacpp-build-before-mtp", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="the llama.cpp build predates MTP support (b9180)",
    what="Compares --llamacpp-build (or the pasted --version) with the first release that has --spec-type draft-mtp.",
    why="Older builds reject the spec type at startup.",
    fix="Upgrade llama.cpp to b9180 or newer (a newer one for other architectures: see MTP604).",
    sources=_SPEC + ("lmstudio-ai/lmstudio-bug-tracker #1924 ('release version b9180')",),
    basis="documentation",
    examples=(
        Example(True, _files, args=_args("9000", "--spec-type", "draft-mtp"), note="b9000"),
        Example(False, _files, args=_args("9305", "--spec-type", "draft-mtp"), note="b9305"),
    ),
)

MTP604 = Rule(
    id="MTP604", name="llamacpp-arch-no-mtp-graph", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="--spec-type draft-mtp for an architecture this build has no MTP graph for",
    what="Looks the GGUF architecture up in the MTP support table at the given build.",
    why="glm4moe, mimo2 and qwen4exp (merged builds) keep nextn tensors without a graph; draft-mtp then fails or "
        "crashes (lemonade-sdk/lemonade #2451), and architectures added later need a build after their pull request.",
    fix="Use a build with the architecture's MTP graph (see the table's pull request), or drop draft-mtp.",
    sources=("ggml-org/llama.cpp PRs #22673, #23398, #24340, #24260, #25589, #25980, #26457",
             "lemonade-sdk/lemonade #2451", "ggml-org/llama.cpp #27742"),
    basis="code",
    examples=(
        Example(True, lambda: _files("glm4moe"), args=_args("10444", "--spec-type", "draft-mtp"), note="glm4moe"),
        Example(False, lambda: _files("qwen35moe"), args=_args("10444", "--spec-type", "draft-mtp"), note="qwen35moe"),
    ),
)

MTP605 = Rule(
    id="MTP605", name="llamacpp-parallel-acceptance", analyzer=ANALYZER, severity=Severity.WARNING,
    summary="draft-mtp with -np/--parallel > 1: acceptance collapses on slots other than 0 on some builds",
    what="Reads -np with draft-mtp.",
    why="Reports show slot 1+ near 2.7% acceptance (per-slot draft state not armed) and exactly 0 under multi-ubatch "
        "batches on HIP; other builds measured parallel MTP fine, so this is a warning, not an error.",
    fix="Check the per-slot acceptance in the server log, or run -np 1.",
    sources=("spiritbuun/buun-llama-cpp PR #110 (2026-08-30)", "ggml-org/llama.cpp #27572 (2026-08-22)",
             "unslothai/unsloth PR #8172 (b10310: four slots 1.97x)", "luongnv89/ccl #102 (-np > 1 not yet supported)"),
    basis="bug report",
    examples=(
        Example(True, _files, args=_args("10444", "--spec-type", "draft-mtp", "-np", "4"), note="4 slots"),
        Example(False, _files, args=_args("10444", "--spec-type", "draft-mtp", "-np", "1"), note="1 slot"),
    ),
)

MTP606 = Rule(
    id="MTP606", name="llamacpp-n-max-above-heads", analyzer=ANALYZER, severity=Severity.INFO,
    summary="--spec-draft-n-max is above the number of chained MTP heads and is clamped",
    what="For chained-head architectures (step35: 3 heads), compares --spec-draft-n-max with nextn_predict_layers.",
    why="Each head is used once; llama.cpp clamps n_max to the head count, so a larger value drafts no more tokens.",
    fix="Set --spec-draft-n-max to the head count.",
    sources=("ggml-org/llama.cpp PR #24340 (n_max clamped to the head count when chaining)",),
    basis="code",
    examples=(
        Example(True, lambda: _files("step35", k=3), args=_args("10444", "--spec-type", "draft-mtp", "--spec-draft-n-max", "6"), note="6 > 3 heads"),
        Example(False, lambda: _files("step35", k=3), args=_args("10444", "--spec-type", "draft-mtp", "--spec-draft-n-max", "3"), note="3 heads"),
    ),
)

MTP607 = Rule(
    id="MTP607", name="llamacpp-n-max-default", analyzer=ANALYZER, severity=Severity.INFO,
    summary="--spec-draft-n-max is not given: the build's default applies (3 since the MTP clean-up, 16 before)",
    what="Says which draft length the build will use when the command does not set one.",
    why="The default changed from 16 to 3 in May 2026; guides written for the old default overstate the draft length.",
    fix="Set --spec-draft-n-max explicitly (2-4 is common for one MTP head).",
    sources=("ggml-org/llama.cpp PR #23269 'llama : MTP clean-up' (2026-05-18)",),
    basis="code",
    examples=(
        Example(True, _files, args=_args("10444", "--spec-type", "draft-mtp"), note="no --spec-draft-n-max"),
        Example(False, _files, args=_args("10444", "--spec-type", "draft-mtp", "--spec-draft-n-max", "3"), note="set"),
    ),
)

MTP608 = Rule(
    id="MTP608", name="llamacpp-known-broken-build", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="this llama.cpp build cannot start draft-mtp on a GGUF with an MTP head (known regression)",
    what="Checks the build against known regressions of the MTP loader.",
    why="b10741-b10748: the nextn layer gets n_head_kv = 0 and the graph reservation asserts "
        "(GGML_ASSERT(a->ne[0] == b->ne[0])); fixed in b10749.",
    fix="Use b10749 or newer (or b10740 or older).",
    sources=("ggml-org/llama.cpp #28196 comment (2026-09-03): regression #28159, fix #28173, first fixed release b10749",),
    basis="bug report",
    examples=(
        Example(True, _files, args=_args("10742", "--spec-type", "draft-mtp"), note="b10742"),
        Example(False, _files, args=_args("10749", "--spec-type", "draft-mtp"), note="b10749"),
    ),
)

MTP609 = Rule(
    id="MTP609", name="llamacpp-nvfp4-mtp-scales-build", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="NVFP4 MTP scale tensors that this build miscounts: the load fails",
    what="For NVFP4 GGUFs whose nextn weights carry .scale/.input_scale, checks the build against PR #23563 (the "
         "scales known at all) and PR #27736 (the scales skipped with the weight when MTP is off).",
    why="'wrong number of tensors; expected 1194, got 1178': the model does not load.",
    fix="Use a build with PR #27736 (about b10610 or newer), or launch with --spec-type draft-mtp.",
    sources=("ggml-org/llama.cpp PR #23563 (2026-05-23)", "ggml-org/llama.cpp PR #27736 (2026-08-26)"),
    basis="bug report",
    examples=(
        Example(True, lambda: _files(gtype=40, scales=True), args=_args("10444"), note="b10444 without draft-mtp"),
        Example(False, lambda: _files(gtype=40, scales=True), args=_args("10444", "--spec-type", "draft-mtp"), note="MTP enabled"),
    ),
)

MTP610 = Rule(
    id="MTP610", name="llamacpp-split-mode-tensor", analyzer=ANALYZER, severity=Severity.WARNING,
    summary="--split-mode tensor with a GGUF that carries nextn tensors",
    what="Reads -sm/--split-mode and the GGUF's nextn tensors.",
    why="Reported to crash with MTP-bearing GGUFs.",
    fix="Use --split-mode layer (the default) with MTP GGUFs.",
    sources=("ggml-org/llama.cpp #24309 (cited by zephel01/CodeRouter PR #59, 2026-07-09)",),
    basis="bug report",
    examples=(
        Example(True, _files, args=_args("10444", "--spec-type", "draft-mtp", "-sm", "tensor"), note="-sm tensor"),
        Example(False, _files, args=_args("10444", "--spec-type", "draft-mtp", "-sm", "layer"), note="-sm layer"),
    ),
)

def _fp4_files(gtype: int = 40, *, gpu: str = "NVIDIA H100 80GB HBM3", cc: str = "9.0") -> dict[str, str | bytes]:
    """A GGUF whose trunk projections are ``gtype`` (40: NVFP4) with an MTP head, and a one-GPU ``env.txt``."""
    from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors
    from mtp_audit.synth.launch import env_dump

    tensors = trunk_tensors(range(3), ggml_type=gtype) + nextn_tensors(3, ggml_type=8)
    return {"model.gguf": gguf_bytes(model_kv("qwen35moe", blocks=4, nextn=1), tensors), "env.txt": env_dump(gpu, cc)}


_LLAMA_SDIST = "llama-cpp-python 0.3.36 sdist vendor/llama.cpp/"

MTP611 = Rule(
    id="MTP611", name="llamacpp-fp4-gguf-without-native-fp4", analyzer=ANALYZER, severity=Severity.INFO,
    summary="MXFP4/NVFP4 GGUF tensors run without FP4 tensor-core math on this GPU",
    what="Reads the -m GGUF's tensor types and, when some are GGML MXFP4 or NVFP4, the machine's GPUs (--env-dump or "
         "the live machine); one finding per compute capability outside llama.cpp's native FP4 path. The launch's "
         "fp4 facts give the per-GPU verdict.",
    why="llama.cpp runs MXFP4/NVFP4 on every CUDA GPU: its MMQ/MMVQ kernels convert the activations to int8 (Q8_1) and "
        "dot them with the 4-bit blocks. FP4 tensor-core math (GGML_PREC_Q4) is used only where ggml's Blackwell MMA "
        "path is compiled in: NVIDIA cc 12.x (SM120/SM121). Hopper, Ada and also SM100 (B200/B300) take the int8 path: "
        "nothing fails, but the speed is not FP4's.",
    fix="Nothing to fix for correctness. For FP4 math use an SM120/SM121 GPU with a build compiled for it; on other "
        "GPUs a Q4_K/Q8_0 GGUF may be as fast.",
    sources=(_LLAMA_SDIST + "ggml/include/ggml.h:429-430 (GGML_TYPE_MXFP4 = 39, GGML_TYPE_NVFP4 = 40)",
             _LLAMA_SDIST + "ggml/src/ggml-cuda/mmq.cu:73-86 (MXFP4/NVFP4 cases, Q4 'Blackwell-only'), :128 "
             "(can_use_q4 = FP4 type && blackwell_mma_available(cc))",
             _LLAMA_SDIST + "ggml/src/ggml-cuda/common.cuh:376-379 (blackwell_mma_available: NVIDIA, highest compiled "
             "arch >= GGML_CUDA_CC_BLACKWELL 1200 and < GGML_CUDA_CC_RUBIN 1300)",
             _LLAMA_SDIST + "ggml/src/ggml-cuda/mmvq.cu:49-50 (vec_dot_mxfp4_q8_1, vec_dot_nvfp4_q8_1)"),
    basis="code",
    examples=(
        Example(True, _fp4_files, args=_args("10444"), note="NVFP4 GGUF on an H100 (SM90): int8 path"),
        Example(False, lambda: _fp4_files(gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition", cc="12.0"),
                args=_args("10444"), note="NVFP4 GGUF on an RTX PRO 6000 (SM120): native FP4"),
        Example(False, lambda: _fp4_files(8), args=_args("10444"), note="Q8_0 GGUF on an H100: no FP4 kernels"),
    ),
)

MTP612 = Rule(
    id="MTP612", name="llamacpp-mtp-head-memory", analyzer=ANALYZER, severity=Severity.INFO,
    summary="Memory the MTP head takes, and on which device llama.cpp puts it",
    what="A command that drafts with the MTP head (--spec-type draft-mtp / mtp): the bytes of the GGUF's nextn blocks "
         "(from its tensor headers), and where llama.cpp places them: whole on one device with --split-mode layer (the "
         "default), split over the GPUs with --split-mode row.",
    why="The head is a whole extra block on top of the trunk, kept for the server's life: on the GPU that already holds "
        "the last blocks and the output layer it takes memory from that GPU's KV cache alone.",
    fix="Budget it on the last GPU (a smaller --tensor-split share there, or a lower -c), or quantize the head.",
    sources=(_LLAMA_SDIST + "src/llama-model.cpp:1329-1330 (n_layer_nextn <= n_layer_all: the nextn blocks are blocks)",
             _LLAMA_SDIST + "src/llama-model.cpp:1589-1614 (get_layer_buft_list: one device per block from the split)"),
    basis="code",
    examples=(
        Example(True, _files, args=_args("10444", "--spec-type", "draft-mtp"), note="draft-mtp with the head in -m"),
        Example(False, _files, args=_args("10444"), note="no --spec-type: the head does not draft"),
    ),
)

RULES: tuple[Rule, ...] = (MTP600, MTP601, MTP602, MTP603, MTP604, MTP605, MTP606, MTP607, MTP608, MTP609, MTP610, MTP611,
                           MTP612)
RULES_BY_ID = {r.id: r for r in RULES}
