"""TensorRT-LLM launch cross-check rules MTP700-MTP749: documentation, sources and runnable examples.

The checks live in :mod:`mtp_audit.engines.trtllm.launch`. Examples write a metadata-only checkpoint, an ``mtp.yaml``
(the ``--config`` file) and an ``env.txt``; ``example.args`` is the ``trtllm-serve`` command, run from the example
folder through :mod:`mtp_audit.launch.examples`.
"""

from __future__ import annotations

import json
from typing import Any

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule
from mtp_audit.synth.launch import SM120_ENV, checkpoint_files, env_dump

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_LLM_ARGS = "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396720054fd8e205cbf616f21f0b57c6b412"
_SERVE = "NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py@00209af149e7774406881a37283dce303571eb11"
_TS = ("trtllm-serve", "ckpt")
_CFG = _TS + ("--config", "mtp.yaml")
_QWEN_THINK = json.dumps({"added_tokens_decoder": {"151667": {"content": "<think>"}, "151668": {"content": "</think>"}}})
_DS_THINK = json.dumps({"added_tokens_decoder": {"128798": {"content": "<think>"}, "128799": {"content": "</think>"}}})


def _yaml(spec: dict[str, object] | None, **extra: object) -> str:
    doc: dict[str, object] = dict(extra)
    if spec is not None:
        doc["speculative_config"] = spec
    return json.dumps(doc)  # JSON is YAML


def _files(spec: dict[str, object] | None = None, *, env: str = SM120_ENV, mtp: bool = True, tokenizer: str | None = None,
           arch: str = "Qwen3_5MoeForConditionalGeneration", extra: dict[str, object] | None = None,
           dspark: bool = False, nvfp4: bool = False) -> dict[str, str]:
    out = dict(checkpoint_files(arch=arch, mtp=mtp, nvfp4=nvfp4))
    if dspark:  # DeepSeek-V4-0731's config keys of its embedded DSpark drafter
        cfg = json.loads(out["ckpt/config.json"])
        cfg.update(dspark_block_size=4, dspark_target_layer_ids=[1, 2])
        out["ckpt/config.json"] = json.dumps(cfg)
    out["mtp.yaml"] = _yaml(spec, **(extra or {}))
    out["env.txt"] = env
    if tokenizer is not None:
        out["ckpt/tokenizer_config.json"] = tokenizer
    return out


def _ex(fires: bool, note: str, args: tuple[str, ...], **files: Any) -> Example:
    return Example(fires=fires, files=lambda: _files(**files), args=args, note=note)


def R(id: str, name: str, sev: Severity, summary: str, what: str, why: str, fix: str, sources: tuple[str, ...], basis: str,
      examples: tuple[Example, ...]) -> Rule:
    return Rule(id, name, "trtllm", sev, summary, what, why, fix, sources, basis, examples)


_MTP = {"decoding_type": "MTP", "max_draft_len": 3}

RULES: tuple[Rule, ...] = (
    R("MTP700", "trtllm-mtp-not-requested", W, "The checkpoint ships MTP layers but the launch drafts with none",
      "Reads the --config / --extra_llm_api_options YAML: no speculative_config (or no YAML at all) while the checkpoint "
      "declares or carries MTP layers.",
      "trtllm-serve builds no drafter without a speculative_config: the MTP layers are skipped and every token costs a full "
      "target step, so the speed-up the checkpoint was exported for never happens. Nothing is logged about it.",
      "Add speculative_config: {decoding_type: MTP, max_draft_len: N} to the YAML passed with --config.",
      (_SERVE + " (serve: --config/--extra_llm_api_options YAML merged into the LLM args)",), "code",
      (_ex(True, "MTP checkpoint, YAML without speculative_config", _CFG, spec=None),
       _ex(False, "MTP requested", _CFG, spec=_MTP),
       _ex(False, "checkpoint without MTP", _CFG, spec=None, mtp=False))),
    R("MTP701", "trtllm-draft-len-invalid", E, "TensorRT-LLM rejects the MTP draft length at start-up",
      "decoding_type MTP with max_draft_len (or the deprecated num_nextn_predict_layers) that is not a positive integer.",
      "MTPDecodingConfig.set_max_total_draft_tokens raises ValueError('max_draft_len must be > 0 for MTP') while the LLM "
      "args are validated: the server exits before the model loads.",
      "Set max_draft_len to 1 or more (the checkpoint's MTP layer count is the usual choice), or leave it out to take "
      "the checkpoint's num_nextn_predict_layers.",
      (_LLM_ARGS + " MTPDecodingConfig.set_max_total_draft_tokens",), "code",
      (_ex(True, "max_draft_len 0", _CFG, spec={"decoding_type": "MTP", "max_draft_len": 0}),
       _ex(False, "max_draft_len 3", _CFG, spec=_MTP))),
    R("MTP702", "trtllm-deprecated-nextn-key", W, "num_nextn_predict_layers in the YAML is deprecated and may be dropped",
      "speculative_config.num_nextn_predict_layers: TensorRT-LLM renames it to max_draft_len with a deprecation warning; "
      "when max_draft_len is given too, num_nextn_predict_layers is dropped without a word.",
      "Old YAMLs (DeepSeek-R1 examples) still carry num_nextn_predict_layers: 3. Beside a max_draft_len it is ignored, so "
      "a value that differs is silently not the draft length that runs; a future release removes the key.",
      "Use max_draft_len only.",
      (_LLM_ARGS + " MTPDecodingConfig._remap_deprecated_num_nextn_predict_layers",
       "NVIDIA/TensorRT-LLM PR #12341 (max_draft_len replaces num_nextn_predict_layers)"), "code",
      (_ex(True, "only the deprecated key", _CFG, spec={"decoding_type": "MTP", "num_nextn_predict_layers": 1}),
       _ex(False, "max_draft_len", _CFG, spec=_MTP))),
    R("MTP703", "trtllm-mtp-layers-missing", E, "decoding_type MTP, but the checkpoint has no MTP layers to draft with",
      "The checkpoint declares no MTP layer (num_nextn_predict_layers or the family's key is 0 or absent) and carries no "
      "MTP tensors, and no speculative_model names a separate MTP checkpoint.",
      "TensorRT-LLM builds the MTP layers from the checkpoint's config and loads their weights by name: with none the "
      "load fails (missing MTP weights) or the configuration is refused.",
      "Serve a checkpoint with its MTP layers (many quantized exports drop them), pass the MTP heads as speculative_model, "
      "or drop speculative_config.",
      ("NVIDIA/TensorRT-LLM PR #17378 (a standalone MTP checkpoint as speculative_model)",
       _LLM_ARGS + " MTPDecodingConfig.num_nextn_predict_layers (auto-populated from the pretrained config)"), "code",
      (_ex(True, "checkpoint without MTP, decoding_type MTP", _CFG, spec=_MTP, mtp=False),
       _ex(False, "checkpoint with MTP", _CFG, spec=_MTP))),
    R("MTP704", "trtllm-draft-len-reuses-layers", INFO, "max_draft_len is above the checkpoint's MTP layers: layers are reused",
      "max_draft_len larger than the checkpoint's MTP layer count.",
      "With one MTP layer TensorRT-LLM runs MTP-Eagle (the one layer drafts every position); with several it runs vanilla "
      "MTP and reuses the layers by modulo. Acceptance falls with each reused position, so a long draft can cost more than "
      "it saves.",
      "Measure acceptance per position (the engine's logs) before raising max_draft_len past the layer count.",
      (_LLM_ARGS + " MTPDecodingConfig.spec_dec_mode (MTP_EAGLE_ONE_MODEL for one layer)",
       "NVIDIA/TensorRT-LLM PR #12530 and PR #14457 (layers reused by modulo; load-time KeyErrors fixed)"), "code",
      (_ex(True, "3 draft tokens, 1 MTP layer", _CFG, spec=_MTP),
       _ex(False, "1 draft token, 1 MTP layer", _CFG, spec={"decoding_type": "MTP", "max_draft_len": 1}))),
    R("MTP705", "trtllm-acceptance-threshold-off-switch", W, "acceptance_rate_threshold can switch speculation off for good",
      "speculative_config.acceptance_rate_threshold is set.",
      "Once the rolling average acceptance over acceptance_rate_window_size drops below the threshold, TensorRT-LLM "
      "disables speculation permanently for the server's life; no error is raised and the server keeps serving slower.",
      "Leave acceptance_rate_threshold unset unless you watch the acceptance metrics; restart the server to re-enable.",
      ("TensorRT-LLM LLM API reference 1.4.0rc4, MTPDecodingConfig.acceptance_rate_threshold",), "documentation",
      (_ex(True, "threshold 0.3", _CFG, spec=dict(_MTP, acceptance_rate_threshold=0.3)),
       _ex(False, "no threshold", _CFG, spec=_MTP))),
    R("MTP706", "trtllm-think-tokens-mismatch", W, "Relaxed acceptance uses think-token ids this tokenizer does not have",
      "use_relaxed_acceptance_for_thinking: true with begin/end_thinking_phase_token (defaults 128798/128799, DeepSeek-R1's "
      "<think>/</think>) compared with the checkpoint tokenizer's <think> and </think> ids (tokenizer.json added_tokens "
      "or tokenizer_config.json added_tokens_decoder).",
      "Relaxed acceptance accepts any top-k draft inside the thinking phase, which TensorRT-LLM finds by these ids. With "
      "another tokenizer's ids the phase is never entered (no speed-up) or is entered on an unrelated token (relaxed, "
      "lower-quality acceptance outside thinking).",
      "Set begin_thinking_phase_token / end_thinking_phase_token to the tokenizer's <think> / </think> ids, or turn "
      "relaxed acceptance off.",
      (_LLM_ARGS + " MTPDecodingConfig.begin_thinking_phase_token / end_thinking_phase_token",
       "NVIDIA/TensorRT-LLM PR #3865 (ids hard-coded for DeepSeek R1)"), "code",
      (_ex(True, "Qwen tokenizer, DeepSeek default ids", _CFG, spec=dict(_MTP, use_relaxed_acceptance_for_thinking=True),
           tokenizer=_QWEN_THINK),
       _ex(False, "ids set to the tokenizer's", _CFG, spec=dict(_MTP, use_relaxed_acceptance_for_thinking=True,
                                                                begin_thinking_phase_token=151667, end_thinking_phase_token=151668),
           tokenizer=_QWEN_THINK),
       _ex(False, "DeepSeek tokenizer, default ids", _CFG, spec=dict(_MTP, use_relaxed_acceptance_for_thinking=True),
           tokenizer=_DS_THINK))),
    R("MTP707", "trtllm-mtp-architecture", E, "TensorRT-LLM runs no MTP for this architecture",
      "The checkpoint's architecture against the families whose TensorRT-LLM model builds MTP layers (sourced table); "
      "an architecture the maintainers say has no MTP is an error, one the table does not know is 'could not tell'.",
      "decoding_type MTP on a model class without MTP layers fails when the drafter is built, or loads without drafting.",
      "Serve the model without speculative_config, or with a method it supports (NGram, Eagle with a draft model).",
      ("docs/source/models/supported-models.md (MTP column)", "MiniMax-AI/MiniMax-M3 #13 (\"Don't support MTP now\")"), "code",
      (_ex(True, "MiniMax-M3", _CFG, spec=_MTP, arch="MiniMaxM3ForCausalLM"),
       _ex(False, "Qwen3.5-MoE", _CFG, spec=_MTP))),
    R("MTP708", "trtllm-mtp-needs-hopper", E, "TensorRT-LLM's MTP path needs compute capability 9.0 or newer",
      "decoding_type MTP on a machine whose GPUs are below SM90 (from the preflight's machine facts).",
      "The MTP example and kernels require the MLA generation FMHA kernel, built for Hopper and newer: on Ampere or Ada "
      "the launch fails when the drafter's attention runs.",
      "Run on Hopper or Blackwell GPUs, or serve without MTP.",
      ("TensorRT-LLM examples/llm_speculative_decoding README (1.3.0rc24: MTP requires Hopper+)",), "documentation",
      (_ex(True, "A100 (8.0)", _CFG, spec=_MTP, env=env_dump("NVIDIA A100-SXM4-80GB", "8.0")),
       _ex(False, "RTX PRO 6000 Blackwell (12.0)", _CFG, spec=_MTP))),
    R("MTP709", "trtllm-dspark-is-not-mtp", E, "The checkpoint's mtp.* layers are a DSpark drafter, not MTP",
      "decoding_type MTP on a checkpoint whose config carries dspark_* keys (DeepSeek-V4's embedded DSpark drafter lives "
      "under mtp.* but has no eh_proj/enorm/hnorm).",
      "TensorRT-LLM serves that drafter only with decoding_type DSpark; as MTP the layers do not match what the MTP "
      "builder expects.",
      "Use speculative_config: {decoding_type: DSpark, max_draft_len: N}.",
      (_LLM_ARGS + " DSparkDecodingConfig (draft_is_embedded_in_target: the mtp.* namespace of DeepSeek-V4)",), "code",
      (_ex(True, "dspark keys, decoding_type MTP", _CFG, spec=_MTP, dspark=True),
       _ex(False, "MTP checkpoint", _CFG, spec=_MTP))),
    R("MTP710", "trtllm-mtp-backend", E, "MTP does not run on the TensorRT engine backend",
      "--backend tensorrt (or trt) with decoding_type MTP.",
      "MTPDecodingConfig.supports_backend accepts only pytorch and _autodeploy: the LLM args are refused.",
      "Drop --backend (pytorch is the default).",
      (_LLM_ARGS + " MTPDecodingConfig.supports_backend", _SERVE + " --backend choices"), "code",
      (_ex(True, "--backend trt", _CFG + ("--backend", "trt"), spec=_MTP),
       _ex(False, "default backend", _CFG, spec=_MTP))),
    R("MTP711", "trtllm-unknown-option", E, "trtllm-serve refuses an option it does not declare",
      "Each option of the command against the serve command's click options (every spelling).",
      "click exits with 'No such option' before anything loads.",
      "Fix the spelling (trtllm-serve spells options with underscores: --tp_size, --extra_llm_api_options).",
      (_SERVE + " (@click.option of serve)",), "code",
      (_ex(True, "--tp-size (dash)", _CFG + ("--tp-size", "2"), spec=_MTP),
       _ex(False, "--tp_size", _CFG + ("--tp_size", "1"), spec=_MTP))),
    R("MTP712", "trtllm-dsa-kv-cache-v1", W, "GLM-5 DSA with the v1 KV-cache manager accepts no MTP draft",
      "A GLM MoE DSA checkpoint with kv_cache_config.use_kv_cache_manager_v2: false and decoding_type MTP.",
      "Reported on GLM-5.3: MTP loads, the server is healthy, and the acceptance length stays 1.0 (no draft accepted).",
      "Leave use_kv_cache_manager_v2 at its default (true) on the DSA path.",
      ("NVIDIA/TensorRT-LLM #18662 (2026-09-03)",), "bug report",
      (_ex(True, "GLM-5 DSA, manager v1", _CFG, spec=_MTP, arch="GlmMoeDsaForCausalLM",
           extra={"kv_cache_config": {"use_kv_cache_manager_v2": False}}),
       _ex(False, "GLM-5 DSA, default manager", _CFG, spec=_MTP, arch="GlmMoeDsaForCausalLM"))),
)

RULES = RULES + (
    R("MTP713", "trtllm-not-nvidia", E, "TensorRT-LLM runs on NVIDIA GPUs only",
      "The machine's devices (from the preflight): an AMD Instinct GPU (gfx target), an Ascend NPU, or a platform other "
      "than CUDA.",
      "TensorRT-LLM's kernels are CUDA kernels; on ROCm or CANN the server does not start.",
      "Serve on NVIDIA GPUs, or use an engine that runs on this platform (vLLM or SGLang on ROCm; vllm-ascend or SGLang's NPU "
      "backend on Ascend).",
      ("NVIDIA/TensorRT-LLM README (NVIDIA GPUs; CUDA)",), "documentation",
      (_ex(True, "an MI300X machine", _CFG, spec=_MTP, env="GPU: AMD Instinct MI300X (gfx942)\nROCm version: 6.4.1\n"),
       _ex(False, "an NVIDIA machine", _CFG, spec=_MTP))),
    R("MTP714", "trtllm-too-few-gpus", E, "The command needs more GPUs than the machine shows",
      "--tp_size x --pp_size x --cp_size (or the same keys in the YAML) against the GPUs the preflight saw, unless "
      "--gpus_per_node says the launch spans nodes.",
      "TensorRT-LLM starts one rank per GPU; with fewer GPUs the launch fails while the ranks are placed.",
      "Lower --tp_size to the GPUs you have, or run on a larger node.",
      (_SERVE + " (serve: tensor_parallel_size, pipeline_parallel_size, context_parallel_size, gpus_per_node)",), "code",
      (_ex(True, "--tp_size 8 on a one-GPU machine", _CFG + ("--tp_size", "8"), spec=_MTP),
       _ex(False, "--tp_size 1", _CFG + ("--tp_size", "1"), spec=_MTP))),
)

RULES = RULES + (
    R("MTP715", "trtllm-unknown-decoding-type", E, "speculative_config.decoding_type is not one TensorRT-LLM accepts",
      "speculative_config.decoding_type (exact, case-sensitive) against the decoding_type literals of the "
      "SpeculativeConfig union (MTP, Eagle, Eagle3, NGram, SA, Draft_Target, PARD, DFlash, DSpark, ...; the finding names "
      "them all); a speculative_config without decoding_type too.",
      "SpeculativeConfig is a pydantic union discriminated on decoding_type: any other value (a typo such as MPT, a "
      "lower-case mtp) is a validation error while the LLM args are built, and trtllm-serve exits before the model loads.",
      "Spell decoding_type as TensorRT-LLM declares it (MTP for the checkpoint's MTP layers).",
      (_LLM_ARGS + " SpeculativeConfig (Field(discriminator=\"decoding_type\")) and each *DecodingConfig.decoding_type",),
      "code",
      (_ex(True, "decoding_type MPT (typo)", _CFG, spec={"decoding_type": "MPT", "max_draft_len": 1}),
       _ex(True, "decoding_type mtp (lower case)", _CFG, spec={"decoding_type": "mtp", "max_draft_len": 1}),
       _ex(False, "decoding_type MTP", _CFG, spec=_MTP))),
    R("MTP716", "trtllm-draft-len-over-token-budget", W, "max_draft_len is larger than a batch's token budget",
      "decoding_type MTP with max_draft_len + 1 above max_num_tokens (--max_num_tokens or the YAML's, else the "
      "default 8192, BuildConfig.max_num_tokens).",
      "TensorRT-LLM bounds max_draft_len only from below (NonNegativeInt, > 0 for MTP). Every generation step of one "
      "request carries max_draft_len + 1 tokens and its draft buffers hold max_draft_len tokens per request, so a draft "
      "longer than the batch's token budget cannot be scheduled as configured; what the engine does then (a refusal "
      "while allocating, or a failure later) is not derived, so the verdict is 'could not tell'.",
      "Set max_draft_len to the checkpoint's MTP layer count or a few more (1-4 is usual).",
      (_LLM_ARGS + " DecodingBaseConfig.max_draft_len (Optional[NonNegativeInt]), MTPDecodingConfig.set_max_total_draft_tokens",
       _SERVE + " --max_num_tokens (default BuildConfig.max_num_tokens)"), "code",
      (_ex(True, "max_draft_len 100000", _CFG, spec={"decoding_type": "MTP", "max_draft_len": 100000}),
       _ex(False, "max_draft_len 3", _CFG, spec=_MTP))),
    R("MTP717", "trtllm-missing-model", E, "trtllm-serve is given no MODEL",
      "The command has no positional MODEL argument (the checkpoint folder or hub id).",
      "MODEL is a required click argument of serve: click exits with 'Missing argument MODEL' before anything loads.",
      "Put the checkpoint folder or hub id right after trtllm-serve (or trtllm-serve serve).",
      (_SERVE + " (serve's required MODEL click argument)",), "code",
      (_ex(True, "no MODEL", ("trtllm-serve", "--config", "mtp.yaml"), spec=_MTP),
       _ex(False, "MODEL given", _CFG, spec=_MTP))),
)

_H100_ENV = env_dump("NVIDIA H100 80GB HBM3", "9.0")

RULES = RULES + (
    R("MTP718", "trtllm-no-native-fp4", W, "An FP4 checkpoint on GPUs without FP4 tensor cores does not run as FP4 in TensorRT-LLM",
      "An FP4 (NVFP4) checkpoint served by trtllm-serve on GPUs whose compute capability has no NVFP4 GEMM configuration "
      "in TensorRT-LLM (below SM100: Hopper, Ada, Ampere). One finding per compute capability; the launch's FP4 verdict "
      "(facts launch.fp4) says per GPU which kernels run.",
      "TensorRT-LLM's native NVFP4 GEMM (trtllm::fp4_gemm) has CUTLASS tile configurations for SM100, SM103 and SM120 "
      "only, its TensorRT plugin refuses anything below SM100 ('FP4 Gemm not supported before Blackwell'), and its "
      "support matrix lists no FP4 for Hopper. Later builds dequantize NVFP4 to BF16 on Hopper (W4A16: 4-bit weights, "
      "no FP4 speed-up) or run the MoE layers through Marlin with moe_config.backend MARLIN; earlier ones fail at kernel "
      "dispatch. The TensorRT-LLM release is not read, so which one applies is a blocking gap, not a pass.",
      "Serve NVFP4 on Blackwell (B200/B300/GB200, RTX PRO 6000), or use an FP8 checkpoint on Hopper; to accept W4A16 "
      "on SM89-SM99, use a build with the Hopper W4A16 fallback (or moe_config.backend: MARLIN for the MoE layers).",
      ("NVIDIA/TensorRT-LLM cpp/tensorrt_llm/thop/fp4Gemm.cpp:59-79@c23205d4f3b6ea4afa7a792af03c5dd229e93b2e "
       "(getDefaultGemmConfig: SM120 / SM103 / SM100 tile configurations)",
       "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/plugins/fp4GemmPlugin/fp4GemmPlugin.cpp Fp4GemmPlugin::init "
       "('FP4 Gemm not supported before Blackwell')",
       "NVIDIA/TensorRT-LLM docs/source/reference/support-matrix.md@9b062a8325a134de7966e9131984f8b2037c2ed6 (Precision)",
       "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/modules/fused_moe/fused_moe_marlin.py:55-64@06d4e712e90dce4d5d001355b34704e42559294e",
       "NVIDIA/TensorRT-LLM PR #14775 (W4A16 NVFP4 on Hopper, merged 2026-05-30); #12558 / PR #12591 (failures on SM90)"),
      "code",
      (_ex(True, "NVFP4 checkpoint on an H100 (SM90)", _CFG, spec=_MTP, env=_H100_ENV, nvfp4=True),
       _ex(False, "NVFP4 checkpoint on an RTX PRO 6000 (SM120)", _CFG, spec=_MTP, nvfp4=True),
       _ex(False, "BF16 checkpoint on an H100", _CFG, spec=_MTP, env=_H100_ENV))),
)

RULES = RULES + (
    R("MTP719", "trtllm-mtp-memory-per-gpu", INFO, "Memory the MTP layers' weights take on each GPU at load",
      "decoding_type MTP: the checkpoint's MTP bytes (exact from safetensors headers, else estimated from config) over "
      "the tensor-parallel size (--tp_size or the YAML's tensor_parallel_size), against the smallest GPU the machine "
      "shows: info below 10% of a GPU, warning from 10%, error above it. The figure is the load-time peak; the steady "
      "state is not derived.",
      "The MTP layers of an FP4 checkpoint are usually kept in BF16 (about 4x their FP4 size) and come on top of the "
      "target's weights: at low tensor parallelism they shrink the KV cache or fail the load.",
      "Raise --tp_size, lower kv_cache_config.free_gpu_memory_fraction, or use a checkpoint whose MTP layers are quantized.",
      ("nvidia/Qwen3.5-397B-A17B-NVFP4 hf_quant_config.json (its MTP layer is stored BF16)",
       _LLM_ARGS + " (tensor_parallel_size; the MTP layers are built with the target's mapping)"),
      "real checkpoint",
      (_ex(True, "MTP launch", _CFG, spec=_MTP), _ex(False, "no speculative_config", _CFG, spec=None))),
)

RULES_BY_ID = {r.id: r for r in RULES}
