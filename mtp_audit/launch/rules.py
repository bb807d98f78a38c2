"""Launch cross-check rules MTP300-MTP312: documentation, sources and runnable examples.

The checks live in :mod:`mtp_audit.launch.analyze` (and :mod:`mtp_audit.launch.outcome` for MTP310).
Examples write a small SGLang package folder (``sg/sglang/...``, hand-written in the shape of SGLang
0.5.9's files, never copied SGLang code), a metadata-only checkpoint (``ckpt/config.json`` +
``ckpt/model.safetensors.index.json``) and an ``env.txt`` in the ``python3 -m sglang.check_env``
format; ``example.args`` is the launch command, run from the example folder.
"""

from __future__ import annotations

import json

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

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

_ENV = ("Python: 3.12.3 (main, Jan 22 2026, 20:57:42) [GCC 13.3.0]\nCUDA available: True\nGPU 0: {gpu}\n"
        "GPU 0 Compute Capability: {cc}\nCUDA_HOME: /usr/local/cuda\nNVCC: Cuda compilation tools, release 12.9, V12.9.86\n"
        "CUDA Driver Version: 580.95.05\nPyTorch: 2.9.1+cu129\nsglang: 0.5.9\nsgl_kernel: 0.3.21\nflashinfer_python: 0.6.8\n"
        "flashinfer_cubin: 0.6.8\nflashinfer_jit_cache: Module Not Found\ntriton: 3.5.1\n")
SM120_ENV = _ENV.format(gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition", cc="12.0")


def checkpoint_files(folder: str = "ckpt", *, arch: str = "Qwen3_5MoeForConditionalGeneration", mtp: bool = True,
                     nvfp4: bool = False, experts: int = 2) -> dict[str, str]:
    """A metadata-only Qwen3.5-MoE-shaped checkpoint: ``config.json`` + index naming the tensors
    (``mtp.*`` with ``experts`` experts and ``mtp_num_hidden_layers: 1`` when ``mtp``), optionally with a
    ModelOpt NVFP4 ``hf_quant_config.json``."""
    cfg = {"architectures": [arch], "model_type": "qwen3_5_moe_text", "hidden_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 128, "num_experts": experts, "num_experts_per_tok": 1,
           "moe_intermediate_size": 128, "shared_expert_intermediate_size": 128, "vocab_size": 1024,
           "torch_dtype": "bfloat16"}
    if mtp:
        cfg["mtp_num_hidden_layers"] = 1
    names = ["model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"]
    for layer in range(2):
        names += [f"model.layers.{layer}.self_attn.{p}.weight" for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
        names += [f"model.layers.{layer}.mlp.experts.{e}.{p}.weight" for e in range(experts) for p in ("gate_proj", "up_proj", "down_proj")]
    if mtp:
        names += ["mtp.fc.weight", "mtp.norm.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight"]
        names += [f"mtp.layers.0.self_attn.{p}.weight" for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
        names += [f"mtp.layers.0.mlp.experts.{e}.{p}.weight" for e in range(experts) for p in ("gate_proj", "up_proj", "down_proj")]
        names += ["mtp.layers.0.mlp.gate.weight", "mtp.layers.0.input_layernorm.weight", "mtp.layers.0.post_attention_layernorm.weight"]
    files = {f"{folder}/config.json": json.dumps(cfg, indent=1),
             f"{folder}/model.safetensors.index.json": json.dumps({"metadata": {}, "weight_map": {n: "model-00001-of-00001.safetensors" for n in names}}, indent=1)}
    if nvfp4:
        files[f"{folder}/hf_quant_config.json"] = json.dumps({"producer": {"name": "modelopt"}, "quantization": {
            "quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16, "exclude_modules": ["lm_head", "mtp*"]}}, indent=1)
    return files


def _files(*, env: str = SM120_ENV, new: bool = False, draft: bool = False, **ck: object) -> dict[str, str]:
    out = dict(_SG)
    out.update(checkpoint_files(**ck))  # type: ignore[arg-type]
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


def _ex(fires: bool, note: str, args: tuple[str, ...], **files: object) -> Example:
    return Example(fires=fires, files=lambda: _files(**files), args=args, note=note)  # type: ignore[arg-type]


def R(id: str, name: str, sev: Severity, summary: str, what: str, why: str, fix: str, sources: tuple[str, ...], basis: str,
      examples: tuple[Example, ...]) -> Rule:
    return Rule(id, name, "launch", sev, summary, what, why, fix, sources, basis, examples)


RULES: tuple[Rule, ...] = (
    R("MTP300", "launch-args-rejected", E, "SGLang's argument parser rejects the launch command",
      "Parses the command with the option table of the targeted SGLang version (flags, aliases, actions, nargs, types and "
      "choices from the sglang analyzer) the way Python's argparse does, and reports what it would reject: an option this "
      "version does not declare, an ambiguous prefix, a missing value, a value outside the choices, a value of the wrong type, "
      "a value given to a flag that takes none, a missing --model-path, --help, or an entry point this version lacks "
      "(`sglang serve` before 0.5.9).",
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
    R("MTP305", "mtp-heads-unused", I, "The checkpoint carries MTP heads but the command does not use them",
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
    R("MTP307", "mtp-memory-per-gpu", I, "Memory the draft's MTP weights take on each GPU",
      "Divides the bytes of the MTP tensors (as stored: BF16 in NVFP4 releases) by --tp-size (attention is split over "
      "TP; experts over EP x MoE-TP = TP) and compares them with the smallest GPU the preflight saw. Info below 10% of a GPU, "
      "warning from 10%, error when larger than the GPU.",
      "The MTP layer of an FP4 checkpoint is usually kept in BF16 (Qwen3.5-397B-A17B-NVFP4: 1,553 tensors, 13.2 GB): about "
      "4x its FP4 size. SGLang loads the draft after sizing the target's KV cache, so the draft comes out of the remaining "
      "memory; at low --tp-size it shrinks the KV cache or fails at start-up.",
      "Raise --tp-size, lower --mem-fraction-static, or use a checkpoint whose MTP layer is quantized.",
      ("nvidia/Qwen3.5-397B-A17B-NVFP4 hf_quant_config.json (its MTP layer is stored BF16)", "sglang/srt/server_args.py moe_tp_size = tp_size // ep_size"),
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
    R("MTP309", "launch-env-var", I, "An environment variable of the launch that this SGLang reads, and what it changes",
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
    R("MTP310", "outcome-changed", I, "What the launch does changes between two SGLang versions",
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
      "(mtp_audit.launch.parallel.plan_sglang): --tp-size x --pp-size per replica; --dp-size replicas without DP attention "
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

# --- the vLLM form (issue 11): a hand-written vLLM tree in the shape of 0.33.0's files ------------------
_VL_SPEC = """from typing import Literal, get_args

from pydantic.dataclasses import dataclass

logger = None

MTPModelTypes = Literal["deepseek_mtp", "mimo_mtp", "qwen3_5_mtp", "mtp"]
SpeculativeMethod = Literal["ngram", "draft_model", "eagle", "eagle3", "deepseek_mtp", "mimo_mtp", "qwen3_5_mtp", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None
    model: str | None = None
    num_speculative_tokens: int | None = None

    @staticmethod
    def hf_config_override(hf_config):
        if hf_config.model_type in ("deepseek_v3", "deepseek_v32"):
            hf_config.model_type = "deepseek_mtp"
        if hf_config.model_type == "deepseek_mtp":
            n_predict = getattr(hf_config, "num_nextn_predict_layers", None)
            hf_config.update({"n_predict": n_predict, "architectures": ["DeepSeekMTPModel"]})
        if hf_config.model_type in ("qwen3_5_moe", "qwen3_5_moe_text"):
            text_config = getattr(hf_config, "text_config", hf_config)
            hf_config.model_type = "qwen3_5_mtp"
            n_predict = getattr(text_config, "mtp_num_hidden_layers", None)
            hf_config.update({"n_predict": n_predict, "architectures": ["Qwen3_5MoeMTP"]})
        return hf_config

    def __post_init__(self):
        if self.method in get_args(MTPModelTypes) and self.method != "mtp":
            logger.warning("method `%s` is deprecated and replaced with mtp.", self.method)
            self.method = "mtp"
        if self.model is None and self.num_speculative_tokens is not None:
            if self.method == "mtp":
                self.model = self.target_model_config.model
                if not self.quantization:
                    self.quantization = self.target_model_config.quantization
            elif self.method in ("ngram", "[ngram]"):
                self.model = "ngram"
            else:
                raise ValueError("num_speculative_tokens was provided but without speculative model.")
        if self.model is not None:
            self.draft_model_config = ModelConfig(model=self.model, hf_overrides=SpeculativeConfig.hf_config_override)
            if self.method in ("eagle", "eagle3"):
                pass
            elif "eagle-" in self.draft_model_config.model.lower():
                self.method = "eagle"
            elif self.draft_model_config.hf_config.model_type in get_args(MTPModelTypes):
                self.method = "mtp"
                if self.num_speculative_tokens > 1:
                    logger.warning("Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer")
            elif self.method == "draft_model":
                pass
            else:
                raise NotImplementedError(f"Unsupported speculative method: '{self.method}'")
            n_predict = getattr(self.draft_model_config.hf_config, "n_predict", None)
            if n_predict is not None:
                if self.num_speculative_tokens is None:
                    self.num_speculative_tokens = n_predict
                elif self.num_speculative_tokens > n_predict and self.num_speculative_tokens % n_predict != 0:
                    raise ValueError(f"num_speculative_tokens:{self.num_speculative_tokens} must be divisible by {n_predict=}")

    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3", "mtp")
"""
_VL_REGISTRY = """_TEXT_GENERATION_MODELS = {
    "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),
    "Qwen3_5MoeForConditionalGeneration": ("qwen3_5", "Qwen3_5MoeForConditionalGeneration"),
}
_SPECULATIVE_DECODING_MODELS = {
    "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
    "Qwen3_5MoeMTP": ("qwen3_5_mtp", "Qwen3_5MoeMTP"),
}
"""
_VL_RUNNER = """class GPUModelRunner:
    def __init__(self):
        if self.speculative_config:
            if self.speculative_config.method == "ngram":
                self.drafter = NgramProposer(self.vllm_config)
            elif self.speculative_config.uses_draft_model():
                self.drafter = DraftModelProposer(self.vllm_config, self.device, self)
            elif self.speculative_config.use_eagle():
                self.drafter = EagleProposer(self.vllm_config, self.device, self)
"""
_VL = {"vl/vllm/__init__.py": "", "vl/vllm/_version.py": '__version__ = version = "0.33.0"\n', "vl/vllm/envs.py": "",
       "vl/vllm/config/__init__.py": "", "vl/vllm/config/speculative.py": _VL_SPEC,
       "vl/vllm/model_executor/models/registry.py": _VL_REGISTRY, "vl/vllm/v1/worker/gpu_model_runner.py": _VL_RUNNER}
_VS = ("vllm", "serve", "ckpt")


def _spec(**kv: object) -> tuple[str, ...]:
    return ("--speculative-config", json.dumps(kv))


def _vfiles(*, env: str = SM120_ENV, **ck: object) -> dict[str, str]:
    out = dict(_VL)
    out.update(checkpoint_files(**ck))  # type: ignore[arg-type]
    out["env.txt"] = env
    return out


def _vex(fires: bool, note: str, args: tuple[str, ...], **files: object) -> Example:
    return Example(fires=fires, files=lambda: _vfiles(**files), args=args, note=note)  # type: ignore[arg-type]


_VSRC = "vllm 0.33.0 vllm/config/speculative.py"
VLLM_RULES: tuple[Rule, ...] = (
    R("MTP320", "vllm-spec-config-rejected", E, "vLLM rejects the speculative config before the model loads",
      "Replays what vLLM does with --speculative-config (JSON, --speculative-config.KEY, and the --spec-method/--spec-model/"
      "--spec-tokens shorthand of 0.33.0) up to the proposer: invalid JSON; a shorthand key also in the JSON ('mutually "
      "exclusive'); a --spec-* option this version lacks; a method outside the validated SpeculativeMethod Literal (0.11.0: "
      "glm4_moe_mtp is in the alias set but not in the Literal); an MTP method with neither num_speculative_tokens nor model "
      "(no draft config is built, _verify_args raises); num_speculative_tokens without a model for a method that needs one; "
      "an explicit method no auto-detection test matches (NotImplementedError); num_speculative_tokens not a multiple of "
      "the draft's MTP layers; no proposer for the method in the runner; no model at all.",
      "The engine exits during config creation with a ValueError / NotImplementedError / pydantic error. The failure is "
      "early, but {\"method\": \"deepseek_mtp\"} alone (the most common MTP config in forum posts) is one of them: without "
      "num_speculative_tokens the draft = target rewrite does not happen.",
      "Apply the corrected command (facts.launch.summary.corrected_command, evaluated again before it is shown); or fix the "
      "key named in the finding.",
      (f"{_VSRC}:1252-1295 (draft = target needs num_speculative_tokens), :1497 (NotImplementedError), :1603-1612 (divisibility), "
       ":1947 (_verify_args)", "vllm 0.11.0 vllm/config/speculative.py:213-238, :389-394, :520",
       "vllm 0.33.0 vllm/engine/arg_utils.py:1864-1872, :2108-2121"),
      "code",
      (_vex(True, "deepseek-style MTP method without num_speculative_tokens", _VS + _spec(method="qwen3_5_mtp")),
       _vex(False, "num_speculative_tokens given: the target is its own draft", _VS + _spec(method="qwen3_5_mtp", num_speculative_tokens=1)))),
    R("MTP321", "vllm-method-overridden", W, "vLLM's auto-detection silently replaces the method the command gives",
      "Runs the auto-detection elif chain of SpeculativeConfig.__post_init__ (the analyzer's auto-detect rewrites, in source "
      "order) on the draft after hf_config_override: a method other than the ones it keeps (eagle, eagle3 [, dflash, dspark]) "
      "is replaced when a test matches, e.g. {\"method\": \"draft_model\", \"model\": <a DeepSeek or Qwen3.5 checkpoint>} "
      "runs as mtp.",
      "The command says one thing and vLLM runs another, with no log line: the proposer, the draft architecture and the "
      "acceptance rate are those of the other method.",
      "Write the method vLLM runs (the finding names it), or pick a draft that is not an MTP checkpoint.",
      (f"{_VSRC}:1431-1499 (auto-detection)", "vllm 0.11.0 vllm/config/speculative.py:313-353"),
      "code",
      (_vex(True, "draft_model on the Qwen3.5 MTP checkpoint becomes mtp", _VS + _spec(method="draft_model", model="ckpt", num_speculative_tokens=1)),
       _vex(False, "mtp as given", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP322", "vllm-draft-class-not-registered", E, "The draft architecture after hf_config_override is not in this vLLM's registry",
      "Runs SpeculativeConfig.hf_config_override statically on the checkpoint's model_type and architectures[0] together "
      "and looks the architectures it writes up in the model registry (vllm/model_executor/models/registry.py).",
      "The draft ModelConfig asks the registry for a class it does not have: the engine stops while building the draft.",
      "Use a vLLM version that registers the MTP class (`mtp-audit vllm` lists mtp_classes), or drop --speculative-config.",
      (f"{_VSRC} hf_config_override", "vllm/model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS"),
      "code",
      (Example(True, lambda: dict(_vfiles(), **{"vl/vllm/model_executor/models/registry.py": _VL_REGISTRY.replace('    "Qwen3_5MoeMTP": ("qwen3_5_mtp", "Qwen3_5MoeMTP"),\n', "")}),
               _VS + _spec(method="mtp", num_speculative_tokens=1), "Qwen3_5MoeMTP is not registered"),
       _vex(False, "Qwen3_5MoeMTP is registered", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP323", "vllm-num-speculative-tokens", I, "num_speculative_tokens against the checkpoint's MTP layers",
      "Reads the draft's n_predict the way hf_config_override does (num_nextn_predict_layers, text_config."
      "mtp_num_hidden_layers, ... as declared in config.json) and applies vLLM's rules: not given -> silently the layer count; "
      "more than one token -> the same MTP layer runs several times (vLLM logs a warning). The divisibility error is MTP320.",
      "A silent default hides how many tokens are drafted; running one MTP layer k times lowers the acceptance rate of the "
      "later tokens. Neither stops the server (hence info).",
      "Give num_speculative_tokens explicitly; with one MTP layer, measure the acceptance rate before going above 1-3.",
      (f"{_VSRC}:1483-1491 (reuse warning), :1601-1603 (default)", "vllm 0.11.0 vllm/config/speculative.py:333, :388"),
      "code",
      (_vex(True, "model given, num_speculative_tokens not: default = 1 MTP layer", _VS + _spec(method="mtp", model="ckpt")),
       _vex(False, "one token for one layer", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP324", "vllm-mtp-without-weights", E, "vLLM runs the mtp method but the draft checkpoint has no MTP tensors",
      "Fires when the method after aliasing and auto-detection is mtp and the checkpoint the draft loads from (the target "
      "when model is omitted) has no MTP tensors (decided from the index or shard headers).",
      "The MTP draft class finds no weights: the load fails, or the draft runs uninitialised and every token is rejected. "
      "Real case: REAP-pruned Qwen3.5-25B-A3B keeps mtp_num_hidden_layers=1 but ships none of its mtp.* tensors.",
      "Drop --speculative-config (the corrected command does), or use a checkpoint that ships its MTP weights.",
      ("fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding", f"{_VSRC} hf_config_override (qwen3_5_moe -> Qwen3_5MoeMTP)"),
      "real checkpoint",
      (_vex(True, "mtp on a checkpoint without mtp.* tensors", _VS + _spec(method="mtp", num_speculative_tokens=1), mtp=False),
       _vex(False, "mtp on a checkpoint with its MTP layer", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP325", "vllm-mtp-heads-unused", I, "The checkpoint carries MTP heads but the vLLM command has no speculative config",
      "Fires when the checkpoint has MTP tensors and the command gives no --speculative-config (nor --spec-*).",
      "vLLM skips the MTP weights and decodes one token per step; the heads shipped for faster decoding are idle.",
      "Add --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":N}' (N = the MTP layer count) if memory allows.",
      ("vLLM docs features/spec_decode (MTP)", f"{_VSRC} __post_init__"),
      "documentation",
      (_vex(True, "MTP present, no speculative config", _VS),
       _vex(False, "speculative config given", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP326", "vllm-env-var-not-read", W, "A VLLM_* spec-decode / FP4 / MoE variable of the launch that this vLLM does not define",
      "For each VLLM_* variable of the launch (KEY=VALUE before the program, --env, or the current environment) whose name "
      "is about speculative decoding, FP4 or MoE kernels, looks it up in this vLLM's vllm/envs.py (facts.vllm.env_vars).",
      "vLLM ignores a variable it does not define (recent versions log 'Unknown vLLM environment variable detected'). "
      "0.24 retired ten FP4/MoE backend variables (VLLM_USE_FLASHINFER_MOE_FP4, ...) in favour of --moe-backend, so a "
      "recipe written for an older release silently runs another MoE kernel.",
      "Remove the variable; choose the FP4/MoE kernel with --moe-backend (0.24+).",
      ("vllm 0.11.0 vllm/envs.py VLLM_USE_FLASHINFER_MOE_FP4", "vllm 0.33.0 vllm/envs.py (no VLLM_USE_FLASHINFER_MOE_FP4), "
       "vllm/engine/arg_utils.py:1845 --moe-backend", "wheel:vllm-0.20.0:vllm/envs.py vs wheel:vllm-0.24.0:vllm/envs.py (0.24 env-var retirement)"),
      "code",
      (_vex(True, "VLLM_USE_FLASHINFER_MOE_FP4=1 on a vLLM whose envs.py does not define it",
            ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + _VS + _spec(method="mtp", num_speculative_tokens=1)),
       Example(False, lambda: dict(_vfiles(), **{"vl/vllm/envs.py": 'environment_variables = {\n    "VLLM_USE_FLASHINFER_MOE_FP4": lambda: False,\n}\n'}),
               ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + _VS + _spec(method="mtp", num_speculative_tokens=1), "defined in this vLLM's envs.py"))),
    R("MTP327", "vllm-positional-model-ignored", E, "python -m vllm.entrypoints.openai.api_server ignores a positional model",
      "Fires when the api_server entry point gets the model as a positional argument and no --model. Its parser (make_arg_parser) "
      "declares the optional model_tag positional, but only `vllm serve` copies it to --model.",
      "The server starts without an error and serves ModelConfig's default model (Qwen/Qwen3-0.6B in 0.11.0 and 0.33.0), "
      "not the checkpoint named: the MTP heads, the FP4 kernels and the answers are those of another model.",
      "Write --model MODEL (the corrected command does), or launch with vllm serve MODEL.",
      ("vllm 0.11.0 vllm/entrypoints/cli/serve.py:47-48 (args.model = args.model_tag), vllm/entrypoints/openai/api_server.py:1942-1953, "
       "vllm/entrypoints/openai/cli_args.py:241, vllm/config/model.py:92",
       "vllm 0.33.0 vllm/entrypoints/launchers/api_server/entry.py:204-226, vllm/entrypoints/common/cli_args.py:439, vllm/config/model.py:155"),
      "code",
      (_vex(True, "api_server with a positional model", ("python", "-m", "vllm.entrypoints.openai.api_server", "ckpt")),
       _vex(False, "api_server with --model", ("python", "-m", "vllm.entrypoints.openai.api_server", "--model", "ckpt")))),
    R("MTP328", "vllm-too-few-gpus", E, "The vLLM command needs more GPUs than this node shows it",
      "Computes the GPUs one node of a vLLM launch uses (mtp_audit.launch.parallel.plan_vllm: -tp x -pp per replica, / --nnodes, "
      "x the local data-parallel ranks) and compares them with the CUDA devices visible (the preflight's GPUs after a "
      "CUDA_VISIBLE_DEVICES of the launch, by CUDA's rules). A blocking gap when the GPUs are unknown.",
      "vLLM starts one worker per GPU of the local world; with fewer devices it stops while creating the workers, before the "
      "model loads but after the config and tokenizer are read.",
      "Lower -tp (or -pp / -dp), widen CUDA_VISIBLE_DEVICES, or run on a larger node.",
      ("vllm 0.20.0 vllm/config/parallel.py (world_size = pipeline_parallel_size x tensor_parallel_size)",
       "vllm 0.20.0 vllm/engine/arg_utils.py (-tp, -pp, -dp, -dpl, --nnodes)", "CUDA C++ Programming Guide: CUDA_VISIBLE_DEVICES"),
      "code",
      (_vex(True, "-tp 2 on a one-GPU machine", _VS + ("-tp", "2")),
       _vex(False, "-tp 1 on a one-GPU machine", _VS + ("-tp", "1")))),
)

RULES = RULES + VLLM_RULES

RULES_BY_ID = {r.id: r for r in RULES}
