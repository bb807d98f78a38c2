"""Launch cross-check rules MTP300-MTP314: documentation, sources and runnable examples.

The checks live in :mod:`mtp_audit.engines.sglang.launch.evaluate` (and :mod:`mtp_audit.engines.sglang.launch.outcome` for MTP310).
Examples write a small SGLang package folder (``sg/sglang/...``, hand-written in the shape of SGLang
0.5.9's files, never copied SGLang code), a metadata-only checkpoint (``ckpt/config.json`` +
``ckpt/model.safetensors.index.json``) and an ``env.txt`` in the ``python3 -m sglang.check_env``
format; ``example.args`` is the launch command, run from the example folder.
"""

from __future__ import annotations

from typing import Any

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule
from mtp_audit.synth.launch import SM120_ENV, checkpoint_files, env_dump

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

_SERVER_ARGS = '''import argparse
import dataclasses


@dataclasses.dataclass
class ServerArgs:
    model_path: str = None
    tp_size: int = 1
    speculative_algorithm: str = None
    speculative_draft_model_path: str = None
    speculative_moe_runner_backend: str = None
    quantization: str = None

    def _handle_model_specific_adjustments(self):
        model_arch = self.get_model_config().hf_config.architectures[0]
        if model_arch in ["DeepseekV3ForCausalLM"]:
            if is_sm100_supported():
                if self.quantization == "modelopt_fp4" and self.speculative_moe_runner_backend is None:
                    if envs.SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE.get():
                        self.speculative_moe_runner_backend = "deep_gemm"
                        logger.info("Use deep_gemm for the bf16 nextn layer")

    def _handle_speculative_decoding(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", "--model", type=str, required=True, help="The model path.")
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=ServerArgs.tp_size)
        parser.add_argument("--pipeline-parallel-size", "--pp-size", type=int, default=1)
        parser.add_argument("--data-parallel-size", "--dp-size", type=int, default=1)
        parser.add_argument("--expert-parallel-size", "--ep-size", "--ep", type=int, default=1)
        parser.add_argument("--enable-dp-attention", action="store_true")
        parser.add_argument("--nnodes", type=int, default=1)
        parser.add_argument("--trust-remote-code", action="store_true")
        parser.add_argument("--mem-fraction-static", type=float, default=None)
        parser.add_argument("--quantization", type=str, default=None, choices=["fp8", "modelopt", "modelopt_fp4", "mxfp4"])
        parser.add_argument("--fp4-gemm-backend", type=str, default="flashinfer_cutlass",
                            choices=["auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"])
        parser.add_argument("--moe-runner-backend", type=str, default="auto",
                            choices=["auto", "triton", "flashinfer_trtllm", "flashinfer_cutlass", "deep_gemm"])
        parser.add_argument("--speculative-algorithm", type=str, choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"])
        parser.add_argument("--speculative-draft-model-path", "--speculative-draft-model", type=str)
        parser.add_argument("--speculative-num-steps", type=int)
        parser.add_argument("--speculative-eagle-topk", type=int)
        parser.add_argument("--speculative-num-draft-tokens", type=int)
        parser.add_argument("--speculative-moe-runner-backend", type=str, default=None)
        parser.add_argument("--attention-backend", type=str, default=None)


def prepare_server_args(argv):
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    raw_args = parser.parse_args(argv)
    return ServerArgs(**vars(raw_args))
'''
_MODEL_CONFIG = '''class ModelConfig:
    @staticmethod
    def from_server_args(server_args, model_path=None, is_draft_model=False):
        return ModelConfig(model_path=model_path or server_args.model_path, is_draft_model=is_draft_model)

    def _config_draft_model(self):
        is_draft_model = self.is_draft_model
        if is_draft_model and self.hf_config.architectures[0] in [
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
        ]:
            self.hf_config.architectures[0] = "Qwen3_5ForCausalLMMTP"
'''
_SG = {
    "sg/sglang/__init__.py": "",
    "sg/sglang/version.py": '__version__ = "0.5.9"\n',
    "sg/sglang/launch_server.py": "import sys\n\nfrom sglang.srt.server_args import prepare_server_args\n\nserver_args = prepare_server_args(sys.argv[1:])\n",
    "sg/sglang/srt/__init__.py": "",
    "sg/sglang/srt/server_args.py": _SERVER_ARGS,
    "sg/sglang/srt/environ.py": "class Envs:\n    SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE = EnvBool(False)\n",
    "sg/sglang/srt/configs/model_config.py": _MODEL_CONFIG,
    "sg/sglang/srt/models/qwen3_5.py": "class Qwen3_5MoeForConditionalGeneration:\n    pass\n\n\nEntryClass = [Qwen3_5MoeForConditionalGeneration]\n",
    "sg/sglang/srt/models/qwen3_5_mtp.py": "class Qwen3_5ForCausalLMMTP:\n    pass\n\n\nEntryClass = [Qwen3_5ForCausalLMMTP]\n",
    "sg/sglang/srt/models/deepseek_nextn.py": ("from sglang.srt.environ import envs\n\n\ndef cast_nextn_moe():\n"
                                              "    return envs.SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE.get()\n\n\n"
                                              "class DeepseekV3ForCausalLMNextN:\n    pass\n\n\nEntryClass = [DeepseekV3ForCausalLMNextN]\n"),
}
#: The newer tree of the MTP310 example: the override table also maps the text-only class (as 0.5.23 does).
_SG_NEW = {k.replace("sg/", "sg-new/", 1): v for k, v in _SG.items()}
_SG_NEW["sg-new/sglang/version.py"] = '__version__ = "0.5.23"\n'
_SG_NEW["sg-new/sglang/srt/configs/model_config.py"] = _MODEL_CONFIG.replace(
    '            "Qwen3_5MoeForConditionalGeneration",\n', '            "Qwen3_5MoeForConditionalGeneration",\n            "Qwen3_5MoeForCausalLM",\n')
_SG_NEW["sg-new/sglang/srt/models/qwen3_5_text.py"] = "class Qwen3_5MoeForCausalLM:\n    pass\n\n\nEntryClass = [Qwen3_5MoeForCausalLM]\n"

def _files(*, env: str = SM120_ENV, new: bool = False, draft: bool = False, **ck: Any) -> dict[str, str]:
    out = dict(_SG)
    out.update(checkpoint_files(**ck))
    if draft:
        out.update(checkpoint_files("draft", experts=4))
    out["env.txt"] = env
    if new:
        out.update(_SG_NEW)
    return out


_LS = ("python", "-m", "sglang.launch_server", "--model-path", "ckpt")
_NEXTN = _LS + ("--speculative-algorithm", "NEXTN")
# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the
# public reports, code and files those notes name): ../shared/research


def _ex(fires: bool, note: str, args: tuple[str, ...], **files: Any) -> Example:
    return Example(fires=fires, files=lambda: _files(**files), args=args, note=note)


def R(id: str, name: str, sev: Severity, summary: str, what: str, why: str, fix: str, sources: tuple[str, ...], basis: str,
      examples: tuple[Example, ...]) -> Rule:
    return Rule(id, name, "launch", sev, summary, what, why, fix, sources, basis, examples)


RULES: tuple[Rule, ...] = (
    R("MTP300", "launch-args-rejected", E, "SGLang's argument parser rejects the launch command",
      "Parses the command with the option table of the targeted SGLang version (flags, aliases, actions, nargs, types and "
      "choices from the sglang analyzer) the way Python's argparse does, and reports what it would reject: an option this "
      "version does not declare, an ambiguous prefix, a missing value, a value outside the choices, a value of the wrong type, "
      "a value given to a flag that takes none, a missing --model-path, --help, or an entry point this version lacks "
      "(`sglang serve` before 0.5.9); and a --speculative-algorithm name the free-form flag takes but the algorithm enum "
      "does not know (0.5.20 on: `SpeculativeAlgorithm.from_string` raises ValueError at start-up); and speculative flags the "
      "release's speculative hook refuses at start-up, replayed statement by statement (0.5.15 on: `--speculative-num-steps` "
      "alone is `TypeError` at 0.5.23 `speculative_hook.py:1274`).",
      "argparse prints 'unrecognized arguments' or 'invalid choice' and exits with status 2 before anything loads. The "
      "failure is quick, but in a scheduler or a container it is easy to miss, and a flag renamed between releases (0.5.23 "
      "split --cuda-graph-bs into --cuda-graph-bs-decode / --cuda-graph-bs-prefill) breaks a command that worked.",
      "Apply the corrected command in facts.launch.summary.corrected_command when one is given; otherwise remove or rename "
      "the option (`mtp-audit sglang TARGET -f json` lists this version's flags).",
      ("sglang/srt/server_args.py prepare_server_args (argparse.ArgumentParser(), 0.5.9 :5579, 0.5.23 :679)",
       "CPython 3.11 Lib/argparse.py _parse_optional / _get_option_tuples", "sglang/cli/main.py add_parser('serve') (0.5.9 :20)"),
      "code",
      (_ex(True, "--bogus is not an option of this SGLang", _LS + ("--bogus", "1")),
       _ex(False, "every option is declared", _LS + ("--tp-size", "1", "--trust-remote-code")))),
    R("MTP301", "abbreviated-flag", W, "An option is accepted only as a prefix abbreviation",
      "Reports options that match no declared option string exactly but are the unique prefix of one (argparse "
      "allow_abbrev, on by default in every SGLang release), e.g. --tp for --tp-size.",
      "The command works only while no other option starts with the same prefix. When a release adds one, argparse stops "
      "with 'ambiguous option' (as --cuda-graph-bs did in 0.5.23); and a reader cannot grep the real flag name.",
      "Write the option in full (the corrected command does).",
      ("sglang/srt/server_args.py prepare_server_args: argparse.ArgumentParser() without allow_abbrev=False",
       "CPython 3.11 Lib/argparse.py _get_option_tuples"),
      "code",
      (_ex(True, "--tp abbreviates --tp-size", _LS + ("--tp", "1")),
       _ex(False, "the full option name", _LS + ("--tp-size", "1")))),
    R("MTP302", "no-mtp-draft-class", E, "The draft architecture does not end in an MTP class of this SGLang",
      "Follows the checkpoint's config.json architectures[0] through this SGLang's draft-architecture override table "
      "(configs/model_config.py _config_draft_model) to a class registered in an EntryClass. Fires when there is no row "
      "for the architecture (and it is not itself an MTP class), or the row names a class this version does not register.",
      "With NEXTN (or EAGLE and no draft path) SGLang loads the target checkpoint a second time as the draft. Without an "
      "override the draft worker builds the full target class instead of the MTP head: the MTP weights do not draft, the "
      "trunk is loaded twice, and the load fails or the draft is useless. Real case: SGLang 0.5.9 maps "
      "Qwen3_5MoeForConditionalGeneration to Qwen3_5ForCausalLMMTP but has no row for the text-only Qwen3_5MoeForCausalLM; "
      "0.5.23 has one.",
      "Use an SGLang version whose override table maps the architecture (compare with --compare-sglang), or drop "
      "--speculative-algorithm.",
      ("sglang 0.5.9 sglang/srt/configs/model_config.py:324-328 (Qwen3_5 override)",
       "sglang 0.5.23 sglang/srt/configs/model_config.py:1179 (adds Qwen3_5MoeForCausalLM)", "docs/sglang.md facts contract"),
      "code",
      (_ex(True, "text-only architecture without an override row", _NEXTN, arch="Qwen3_5MoeForCausalLM"),
       _ex(False, "the multimodal wrapper maps to Qwen3_5ForCausalLMMTP", _NEXTN))),
    R("MTP303", "architecture-not-registered", E, "This SGLang registers no model class for the checkpoint's architecture",
      "Looks the checkpoint's architectures[0] up in every EntryClass of this SGLang version.",
      "The model registry raises 'Model architectures [...] are not supported for now' after the server has started its "
      "workers; nothing is served.",
      "Use an SGLang version that registers the architecture, or a checkpoint exported with a supported architecture name.",
      ("sglang/srt/models/registry.py _ModelRegistry.resolve_model_cls (0.5.9 :49)", "sglang/srt/models/*.py EntryClass"),
      "code",
      (_ex(True, "Qwen3_5MoeForCausalLM has no EntryClass in this tree", _LS, arch="Qwen3_5MoeForCausalLM"),
       _ex(False, "Qwen3_5MoeForConditionalGeneration is registered", _LS))),
    R("MTP304", "speculative-without-mtp-weights", E, "MTP speculative decoding is requested but the draft checkpoint has no MTP tensors",
      "Fires when --speculative-algorithm NEXTN (or EAGLE / FROZEN_KV_MTP with the target as its own draft) is given and "
      "the checkpoint the draft is loaded from has no mtp.* / NextN tensors (decided from the index or shard headers).",
      "The draft's MTP layer has nothing to load: depending on the model class SGLang fails at load or runs a draft with "
      "uninitialised weights (Qwen3_5ForCausalLMMTP.load_weights only loads names containing 'mtp' and checks nothing), "
      "so every draft token is rejected and speculative decoding is slower than none. Real case: REAP-pruned "
      "Qwen3.5-25B-A3B keeps mtp_num_hidden_layers=1 in config.json but ships 0 of its mtp.* tensors.",
      "Drop the --speculative-* options (the corrected command does), or use a checkpoint that ships its MTP weights.",
      ("sglang 0.5.9 sglang/srt/models/qwen3_5_mtp.py:213-218 (load_weights skips non-mtp names)",
       "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"),
      "real checkpoint",
      (_ex(True, "NEXTN on a checkpoint without mtp.* tensors", _NEXTN, mtp=False),
       _ex(False, "NEXTN on a checkpoint with its MTP layer", _NEXTN))),
    R("MTP305", "mtp-heads-unused", INFO, "The checkpoint carries MTP heads but the command does not use them",
      "Fires when the checkpoint has MTP / NextN tensors and the command has no --speculative-algorithm; names the flags "
      "that would use them.",
      "Without speculative decoding SGLang skips the mtp.* weights: one token per forward step, the MTP heads shipped for "
      "1.5-2.5x decode speed are idle.",
      "Add --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
      "(the values SGLang's docs give for MTP models) if memory allows.",
      ("SGLang docs basic_usage/deepseek.md and qwen3.md (MTP flags)", "sglang/srt/models/qwen3_5.py load_weights skips 'mtp' names"),
      "documentation",
      (_ex(True, "MTP present, no speculative flag", _LS),
       _ex(False, "NEXTN requested", _NEXTN))),
    R("MTP306", "draft-path-not-target", W, "NEXTN with a draft model path that is not the target checkpoint",
      "Fires when --speculative-algorithm NEXTN (or another MTP algorithm) is combined with --speculative-draft-model-path "
      "naming a different checkpoint; says which architecture and MTP tensors are actually loaded.",
      "NEXTN means 'draft with the target's own MTP heads', but an explicit draft path wins: SGLang loads the MTP layer of "
      "the other checkpoint (through its own architecture override), and the target's MTP tensors are not used. A stale "
      "path from an older deployment gives a mismatched draft and a low acceptance rate.",
      "Drop --speculative-draft-model-path to draft with the target's own MTP heads, or keep it if that draft is intended.",
      ("sglang/srt/configs/model_config.py ModelConfig.from_server_args: model_path or server_args.model_path (0.5.9 :251)",),
      "code",
      (_ex(True, "draft path points at another checkpoint", _NEXTN + ("--speculative-draft-model-path", "draft"), draft=True),
       _ex(False, "no draft path: the target drafts for itself", _NEXTN))),
    R("MTP307", "mtp-memory-per-gpu", INFO, "Memory the draft's MTP weights take on each GPU",
      "Divides the bytes of the MTP tensors (as stored: BF16 in NVFP4 releases) by --tp-size (attention is split over "
      "TP; experts over EP x MoE-TP = TP) and compares them with the smallest GPU the preflight saw. Info below 10% of a GPU, "
      "warning from 10%, error when larger than the GPU. That figure is the load-time peak; where the MTP layer ships its "
      "own embed_tokens and shared_head.head (DeepSeek, GLM), the finding also gives the steady state, once SGLang's "
      "EAGLE worker has replaced them with the target's and freed them (DeepSeek-V3.1: 3.71 GB of 26.93 GB).",
      "The MTP layer of an FP4 checkpoint is usually kept in BF16 (Qwen3.5-397B-A17B-NVFP4: 1,553 tensors, 13.2 GB): about "
      "4x its FP4 size. SGLang loads the draft after sizing the target's KV cache, so the draft comes out of the remaining "
      "memory; at low --tp-size it shrinks the KV cache or fails at start-up.",
      "Raise --tp-size, lower --mem-fraction-static, or use a checkpoint whose MTP layer is quantized.",
      ("nvidia/Qwen3.5-397B-A17B-NVFP4 hf_quant_config.json (its MTP layer is stored BF16)", "sglang/srt/server_args.py moe_tp_size = tp_size // ep_size",
       "sglang 0.5.23 wheel sglang/srt/speculative/eagle_worker_v2.py:377-378 (set_embed_and_head), "
       "sglang/srt/models/deepseek_v2.py:3442-3448 (deletes the draft's embed_tokens.weight and lm_head.weight)"),
      "real checkpoint",
      (_ex(True, "NEXTN loads the MTP layer", _NEXTN),
       _ex(False, "no speculative decoding: the MTP layer is not loaded", _LS))),
    R("MTP308", "fp4-quantization-mismatch", E, "An FP4 --quantization that does not fit the checkpoint",
      "Compares an FP4 --quantization (modelopt_fp4, petit_nvfp4, mxfp4) with the quantization the checkpoint analyzer "
      "found: none at all, or the other FP4 format (NVFP4 vs MXFP4).",
      "When the checkpoint declares no quantization SGLang keeps the CLI method and builds FP4 layers that the BF16/FP16 "
      "tensors do not fit; an NVFP4 method on MXFP4 weights (or the reverse) reads scales of the wrong shape.",
      "Drop --quantization and let SGLang read the checkpoint's quantization config (the corrected command does).",
      ("sglang/srt/configs/model_config.py ModelConfig._verify_quantization (0.5.9 :837-930)",),
      "code",
      (_ex(True, "modelopt_fp4 on an unquantized checkpoint", _LS + ("--quantization", "modelopt_fp4")),
       _ex(False, "modelopt_fp4 on a ModelOpt NVFP4 checkpoint", _LS + ("--quantization", "modelopt_fp4"), nvfp4=True))),
    R("MTP309", "launch-env-var", INFO, "An environment variable of the launch that this SGLang reads, and what it changes",
      "For each variable set for the launch (KEY=VALUE before the program, --env, or the current environment when this "
      "SGLang reads it) finds where this version reads it and the rewrites it guards (the sglang analyzer's "
      "auto_resolutions whose condition names it); evaluates those conditions against the checkpoint's architecture, the "
      "GPU's compute capability, the flags and the environment. Warning when it is ignored (not read by this version, or "
      "every guarded rewrite needs another GPU / model), info otherwise.",
      "A variable copied from a recipe for another GPU or model silently does nothing: SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1 "
      "changes the draft MoE backend only for the DeepSeek family on SM100 (0.5.9) and only on ROCm from 0.5.15, so on "
      "an SM120 Qwen3.5 launch it is ignored.",
      "Remove variables that do nothing here; keep the ones whose rewrite applies.",
      ("sglang 0.5.9 sglang/srt/server_args.py:1312-1330 and sglang/srt/environ.py:323",
       "sglang 0.5.23 sglang/srt/arg_groups/overrides.py:865 (HIP only)", "sglang/srt/models/deepseek_common/utils.py enable_nextn_moe_bf16_cast_to_fp8"),
      "code",
      (_ex(True, "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1 on SM120 with a Qwen3.5 checkpoint", ("SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1",) + _NEXTN),
       _ex(False, "no environment variable for the launch", _NEXTN))),
    R("MTP310", "outcome-changed", INFO, "What the launch does changes between two SGLang versions",
      "Runs the same command against two SGLang versions (--compare-sglang, or --sglang OLD --sglang NEW) and reports each "
      "headline of 'what will happen' that differs: accepted flags, the algorithm SGLang really runs, the draft path and "
      "architecture, the FP4 backends, the verdict. Warning when the verdict gets worse.",
      "An upgrade can turn a working MTP launch into one whose draft is the wrong class, or make a flag disappear; a "
      "downgrade can silently lose the override for your architecture.",
      "Read the changes before upgrading; apply the corrected command of the new version.",
      ("docs/sglang.md (diff of two SGLang trees)",),
      "code",
      (Example(True, lambda: _files(new=True, arch="Qwen3_5MoeForCausalLM"), _NEXTN,
               "the new version maps the text-only architecture to its MTP class"),
       Example(False, lambda: _files(arch="Qwen3_5MoeForCausalLM"), _NEXTN, "one version only: nothing to compare"))),
)

_PARALLEL_SOURCES = ("sglang 0.5.9 sglang/srt/entrypoints/engine.py:942 and 0.5.23 :938 (gpu_id = base_gpu_id + ...)",
                     "sglang 0.5.9 sglang/srt/managers/data_parallel_controller.py:246 and 0.5.23 :445 (one replica after another)",
                     "sglang 0.5.9 sglang/srt/server_args.py:2116 (DP attention: tp_size % dp_size == 0)",
                     "CUDA C++ Programming Guide, CUDA Environment Variables: CUDA_VISIBLE_DEVICES",
                     "NVIDIA Container Toolkit docs (docker-specialized): NVIDIA_VISIBLE_DEVICES is read at container creation")

RULES = RULES + (
    R("MTP311", "too-few-gpus", E, "The command needs more GPUs than this node shows it",
      "Computes the GPUs one node of the launch uses from its parallel sizes the way SGLang places its processes "
      "(mtp_audit.engines.sglang.launch.parallel.plan_sglang): --tp-size x --pp-size per replica; --dp-size replicas without DP attention "
      "(GPUs = tp x pp x dp), none with --enable-dp-attention (dp divides tp, GPUs = tp x pp); --ep-size adds none; "
      "--nnodes divides tp x pp; --base-gpu-id / --gpu-id-step move the highest GPU id. Compares that with the CUDA devices "
      "visible: the preflight's GPUs after a CUDA_VISIBLE_DEVICES of the launch (indices, GPU-UUID prefixes, MIG devices; "
      "an empty value or an invalid entry hides the rest, as CUDA does). NVIDIA_VISIBLE_DEVICES before the program is "
      "reported as having no effect (only the container runtime reads it). A blocking gap when the GPUs are unknown or a "
      "UUID/MIG entry cannot be matched.",
      "SGLang starts one scheduler process per GPU and gives process k the CUDA device base_gpu_id + k x step; with "
      "fewer devices than that the process fails after the model config is read ('invalid device ordinal' or a CUDA "
      "error), often after minutes of start-up. MTP307's per-GPU memory is meaningless for GPUs that are not there.",
      "Lower --tp-size (or --dp-size / --pp-size) to the GPUs you have, widen CUDA_VISIBLE_DEVICES, or run on a larger node.",
      _PARALLEL_SOURCES, "code",
      (_ex(True, "--tp-size 2 on a one-GPU machine", _LS + ("--tp-size", "2")),
       _ex(True, "CUDA_VISIBLE_DEVICES= (empty) hides every GPU", ("CUDA_VISIBLE_DEVICES=",) + _LS),
       _ex(False, "--tp-size 1 on a one-GPU machine", _LS + ("--tp-size", "1")),
       _ex(False, "CUDA_VISIBLE_DEVICES=0 keeps the one GPU the --tp-size 1 launch needs",
           ("CUDA_VISIBLE_DEVICES=0",) + _LS + ("--tp-size", "1")))),
    R("MTP312", "parallel-sizes-rejected", E, "Parallel sizes SGLang refuses at start-up",
      "Checks the sizes against SGLang's start-up assertions: --ep-size must divide --tp-size (moe_tp_size = tp_size // "
      "ep_size); with DP attention --tp-size must be a multiple of --dp-size; --tp-size x --pp-size a multiple of "
      "--nnodes; no --dp-size replicas across nodes without DP attention.",
      "Each is an assert or ValueError in ServerArgs or the model runner: the server exits before serving, after the "
      "arguments were accepted by argparse.",
      "Use sizes that divide: --ep-size 1 or equal to --tp-size, --tp-size a multiple of the DP size and of --nnodes.",
      ("sglang 0.5.9 sglang/srt/distributed/parallel_state.py:1775 (moe_tp_size = tp // ep // moe_dp)",
       "sglang 0.5.23 sglang/srt/model_executor/model_runner_components/moe_ep_setup.py:150 (tp_size must be divisible by ep_size)",
       "sglang 0.5.9 sglang/srt/server_args.py:2116, :5132, :5143; 0.5.23 sglang/srt/arg_groups/validation_hook.py:179, :199"),
      "code",
      (_ex(True, "--ep-size 2 with --tp-size 1", _LS + ("--tp-size", "1", "--ep-size", "2")),
       _ex(True, "--dp-size 2 --enable-dp-attention with --tp-size 1", _LS + ("--tp-size", "1", "--dp-size", "2", "--enable-dp-attention")),
       _ex(False, "--ep-size equal to --tp-size", _LS + ("--tp-size", "1", "--ep-size", "1")))),
)

#: The hybrid GDN gate of the attention registry, in the shape of SGLang 0.5.20's (hand-written, not SGLang's code):
#: the allowed set is bound per GPU family before the assert, the SM100 set at module level.
_REGISTRY = '''HYBRID_GDN_SM100_BACKENDS = {"triton", "trtllm_mha", "fa4"}


def attn_backend_wrapper(runner, full_attn_backend):
    if cfg := mambaish_config(runner.model_config):
        if hybrid_gdn_config(runner.model_config) is not None:
            if is_blackwell():
                if get_platform().is_sm120:
                    allowed = {"triton", "trtllm_mha", "flashinfer"}
                else:
                    allowed = HYBRID_GDN_SM100_BACKENDS
                prefill_be = runner.prefill_attention_backend_str
                decode_be = runner.decode_attention_backend_str
                assert prefill_be in allowed and decode_be in allowed, (
                    f"Only {allowed} backends are supported on Blackwell GPUs for hybrid GDN models."
                )
    return full_attn_backend
'''


def _gdn_files(env: str, *, gdn: bool = True) -> dict[str, str]:
    """The example tree with the registry gate, a Qwen3.5-shaped checkpoint whose config declares Gated DeltaNet
    layers (``gdn``: the linear_* keys and full_attention_interval of Qwen/Qwen3.5-27B's config.json) and ``env``."""
    import json

    out = _files(env=env)
    out["sg/sglang/srt/layers/attention/attention_registry.py"] = _REGISTRY
    if gdn:
        cfg = json.loads(out["ckpt/config.json"])
        cfg.update({"linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                    "full_attention_interval": 4})
        out["ckpt/config.json"] = json.dumps(cfg, indent=1)
    return out


def _gdn_ex(fires: bool, note: str, args: tuple[str, ...], env: str, gdn: bool = True) -> Example:
    return Example(fires=fires, files=lambda: _gdn_files(env, gdn=gdn), args=args, note=note)


_B200 = env_dump("NVIDIA B200", "10.0")

RULES = RULES + (
    R("MTP313", "startup-assert", E, "An assert of this SGLang refuses a backend the launch uses: AssertionError at start-up",
      "Evaluates the release's own asserts on backend fields (attention, MoE runner, MoE all-to-all, FP4 GEMM, speculative "
      "algorithm: mtp_audit.engines.sglang.startup_facts.backend_asserts, read from every file that asserts on one, including a "
      "set bound in the function per branch or at module level) against the launch: the guard around the assert with "
      "the GPU family of the machine, the checkpoint's kind of linear attention from its config.json keys (Gated "
      "DeltaNet: linear_conv_kernel_dim + linear_key_head_dim with full_attention_interval or layer_types; Mamba2: "
      "hybrid_override_pattern), the architecture, and the backends the command gives (a per-phase backend falls back to "
      "--attention-backend, as ModelRunner does). A finding only when the guard certainly holds and the value is "
      "certainly refused; the attention backend line of 'What will happen' names the gate that accepts it otherwise.",
      "The assert runs when the model runner builds its attention backend, after the weights are loaded: the server "
      "dies with AssertionError minutes into start-up. Hybrid GDN models (Qwen3-Next, Qwen3.5) on SM100/SM103 accept "
      "only triton / trtllm_mha / fa4 in SGLang 0.5.18-0.5.20 and flashinfer too from 0.5.21; on SM120/SM121 triton / "
      "trtllm_mha / flashinfer.",
      "Use a backend the assert accepts (the corrected command does), or an SGLang release whose gate accepts yours.",
      ("sglang 0.5.12 sglang/srt/layers/attention/attention_registry.py:253",
       "sglang 0.5.20 sglang/srt/layers/attention/attention_registry.py:433-440; 0.5.21 :433-444; 0.5.23 :44, :466-476",
       "https://github.com/sgl-project/sglang/issues/35080 (Qwen3.5-35B-A3B, B300: 'Only {...} backends are supported on "
       "Blackwell GPUs for hybrid GDN models. Got prefill=flashinfer, decode=flashinfer')"),
      "code",
      (_gdn_ex(True, "--attention-backend flashinfer for a Gated DeltaNet model on a B200: the SM100 set has no flashinfer",
               _LS + ("--attention-backend", "flashinfer"), _B200),
       _gdn_ex(False, "--attention-backend triton on the same machine", _LS + ("--attention-backend", "triton"), _B200),
       _gdn_ex(False, "flashinfer on an SM120 GPU, whose set has it", _LS + ("--attention-backend", "flashinfer"), SM120_ENV),
       _gdn_ex(False, "flashinfer for a model without linear attention", _LS + ("--attention-backend", "flashinfer"), _B200,
               gdn=False))),
)

#: An EAGLE worker in the shape of SGLang 0.5.9 speculative/eagle_worker.py:157-183 (hand-written, not SGLang's code):
#: for EAGLE3 it calls ``set_embed`` on the draft model (``set_embed_and_head`` only when the class says it shares the
#: LM head) and reads ``hot_token_id``.
_EAGLE_WORKER = '''class EAGLEWorker:
    def __init__(self, server_args, target_worker):
        embed, head = target_worker.model_runner.model.get_embed_and_head()
        if self.speculative_algorithm.is_eagle3():
            if hasattr(self.draft_model_runner.model, "load_lm_head_from_target") and self.draft_model_runner.model.load_lm_head_from_target:
                self.draft_model_runner.model.set_embed_and_head(embed, head)
            else:
                self.draft_model_runner.model.set_embed(embed)
            if self.draft_model_runner.model.hot_token_id is not None:
                self.hot_token_id = self.draft_model_runner.model.hot_token_id
        else:
            self.draft_model_runner.model.set_embed_and_head(embed, head)
'''


def _worker_ex(fires: bool, note: str, args: tuple[str, ...]) -> Example:
    def files() -> dict[str, str]:
        return dict(_files(), **{"sg/sglang/srt/speculative/eagle_worker.py": _EAGLE_WORKER})
    return Example(fires=fires, files=files, args=args, note=note)


RULES = RULES + (
    R("MTP314", "draft-class-lacks-worker-api", E, "The speculative worker calls a method the draft model class does not define: "
      "AttributeError at start-up",
      "Reads, in every srt/speculative/*worker*.py of the release, what the start-up methods (__init__, init_*) call or read "
      "on the draft model (self.draft_model_runner.model.X / self.draft_runner.model.X) inside the branch of an algorithm "
      "(if self.speculative_algorithm.is_eagle3():), an attribute named in a hasattr test being optional; then what the "
      "draft class resolved for the launch defines (its defs, class-level names, self.X assignments and registered "
      "buffers), through its bases in the tree up to torch.nn.Module. Fires when every worker file that branches on the "
      "algorithm reads an attribute the class chain lacks. A base from another package, __getattr__ or setattr with a "
      "computed name: could not tell (a blocking gap), never a pass.",
      "EAGLE3 without --speculative-draft-model-path drafts with the target checkpoint, which SGLang builds as its MTP "
      "class (DeepseekV3ForCausalLMNextN, Qwen3_5ForCausalLMMTP). The EAGLE3 branch of the worker calls "
      "model.set_embed(embed) and reads model.hot_token_id, which only EAGLE3 draft classes define (LlamaForCausalLMEagle3): "
      "the server stops with AttributeError after loading the weights.",
      "Give the EAGLE3 draft model trained for this target with --speculative-draft-model-path, or use "
      "--speculative-algorithm NEXTN to draft with the checkpoint's own MTP heads.",
      ("sglang 0.5.9 sglang/srt/speculative/eagle_worker.py:159-174 (set_embed :168, hot_token_id :171)",
       "sglang 0.5.23 sglang/srt/speculative/eagle_worker_v2.py:355-367 (set_embed :363, hot_token_id :366)",
       "sglang 0.5.9 sglang/srt/models/deepseek_nextn.py:191, deepseek_v2.py:2781-2978, qwen3_5_mtp.py:37 (no set_embed, "
       "no hot_token_id)"),
      "code",
      (_worker_ex(True, "EAGLE3 with the target as the draft: Qwen3_5ForCausalLMMTP has no set_embed",
                  _LS + ("--speculative-algorithm", "EAGLE3")),
       _worker_ex(False, "NEXTN: the worker's other branch calls set_embed_and_head only when the class says so",
                  _NEXTN))),
)

RULES_BY_ID = {r.id: r for r in RULES}
