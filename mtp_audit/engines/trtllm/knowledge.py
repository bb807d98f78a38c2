"""What TensorRT-LLM does with an MTP ``speculative_config``, as sourced data (no TensorRT-LLM code is copied or run).

Every fact names the file and symbol at a commit of NVIDIA/TensorRT-LLM on GitHub (``tensorrt_llm/llmapi/llm_args.py``
at 0004396720054fd8e205cbf616f21f0b57c6b412, ``tensorrt_llm/commands/serve.py`` at
00209af149e7774406881a37283dce303571eb11), a pull request, or the LLM API reference.
"""

from __future__ import annotations

LLM_ARGS = "tensorrt_llm/llmapi/llm_args.py@0004396"
SERVE = "tensorrt_llm/commands/serve.py@00209af"

#: ``trtllm-serve`` options (``serve`` click command) that take a value, every spelling -> the parameter name.
#: Source: SERVE, the ``@click.option`` decorators of ``serve``.
VALUE_OPTIONS: dict[str, str] = {
    "--tokenizer": "tokenizer", "--custom_tokenizer": "custom_tokenizer", "--host": "host", "--port": "port",
    "--backend": "backend", "--custom_module_dirs": "custom_module_dirs", "--log_level": "log_level",
    "--max_beam_width": "max_beam_width", "--max_batch_size": "max_batch_size", "--max_num_tokens": "max_num_tokens",
    "--max_seq_len": "max_seq_len", "--tensor_parallel_size": "tensor_parallel_size", "--tp_size": "tensor_parallel_size",
    "--pipeline_parallel_size": "pipeline_parallel_size", "--pp_size": "pipeline_parallel_size",
    "--context_parallel_size": "context_parallel_size", "--cp_size": "context_parallel_size",
    "--moe_expert_parallel_size": "moe_expert_parallel_size", "--ep_size": "moe_expert_parallel_size",
    "--moe_cluster_parallel_size": "moe_cluster_parallel_size", "--cluster_size": "moe_cluster_parallel_size",
    "--gpus_per_node": "gpus_per_node", "--free_gpu_memory_fraction": "free_gpu_memory_fraction",
    "--kv_cache_free_gpu_memory_fraction": "free_gpu_memory_fraction", "--num_postprocess_workers": "num_postprocess_workers",
    "--revision": "revision", "--config": "extra_llm_api_options", "--extra_llm_api_options": "extra_llm_api_options",
    "--reasoning_parser": "reasoning_parser", "--tool_parser": "tool_parser",
    "--metadata_server_config_file": "metadata_server_config_file", "--server_role": "server_role",
    "--otlp_traces_endpoint": "otlp_traces_endpoint", "--disagg_cluster_uri": "disagg_cluster_uri",
    "--media_io_kwargs": "media_io_kwargs", "--chat_template": "chat_template",
}
#: ``trtllm-serve`` on/off flags (``is_flag=True``). Source: SERVE.
FLAG_OPTIONS: dict[str, str] = {
    "--trust_remote_code": "trust_remote_code", "--fail_fast_on_attention_window_too_large": "fail_fast_on_attention_window_too_large",
    "--enable_chunked_prefill": "enable_chunked_prefill",
}
#: ``--backend`` choices, with the ``trt`` alias (SERVE ``ChoiceWithAlias``); MTP is a PyTorch-backend feature
#: (``MTPDecodingConfig.supports_backend``: ``pytorch`` and ``_autodeploy``, LLM_ARGS).
BACKENDS = ("pytorch", "tensorrt", "_autodeploy")
BACKEND_ALIASES = {"trt": "tensorrt"}
MTP_BACKENDS = ("pytorch", "_autodeploy")

#: ``speculative_config.decoding_type`` values (the ``decoding_type: Literal[...]`` of each ``*DecodingConfig`` in
#: LLM_ARGS) and whether the method drafts with the target checkpoint's MTP layers. ``SpeculativeConfig`` in LLM_ARGS
#: is ``Annotated[Union[...*DecodingConfig], Field(discriminator="decoding_type")]``: pydantic refuses any other
#: value (and a mapping without the key) while the LLM args are validated, so the server does not start. Older
#: releases dispatched in ``DecodingBaseConfig.from_dict`` and raised ``ValueError(f"Invalid decoding type: ...")``.
DECODING_TYPES: dict[str, str] = {
    "MTP": "the checkpoint's MTP layers draft (MTPDecodingConfig)",
    "Eagle": "an EAGLE/EAGLE3 draft model given as speculative_model (EagleDecodingConfig)",
    "Eagle3": "an EAGLE3 draft model given as speculative_model (Eagle3DecodingConfig)",
    "Lookahead": "lookahead decoding, TensorRT engine backend (LookaheadDecodingConfig)",
    "Medusa": "Medusa heads, TensorRT engine backend (MedusaDecodingConfig)",
    "SaveState": "no drafting: hidden states dumped for EAGLE3 training (SaveHiddenStatesDecodingConfig)",
    "NGram": "n-gram matching, no draft model (NGramDecodingConfig)",
    "SA": "suffix-automaton matching, no draft model (SADecodingConfig)",
    "Draft_Target": "a separate draft model (DraftTargetDecodingConfig)",
    "PARD": "a parallel-draft model (PARDDecodingConfig)",
    "DFlash": "a DFlash draft model (DFlashDecodingConfig)",
    "DSpark": "a DSpark drafter: DeepSeek-V4's mtp.* namespace or a standalone checkpoint (DSparkDecodingConfig)",
    "User_Provided": "a drafter object from Python code (UserProvidedDecodingConfig)",
    "AUTO": "a draft-model-free method chosen by heuristic (AutoDecodingConfig)",
}

#: MTPDecodingConfig defaults (LLM_ARGS): relaxed acceptance applies between these token ids, DeepSeek-R1's
#: ``<think>`` / ``</think>`` (first hard-coded "for DeepSeek R1", NVIDIA/TensorRT-LLM PR #3865).
BEGIN_THINKING_DEFAULT = 128798
END_THINKING_DEFAULT = 128799

#: Architectures whose TensorRT-LLM PyTorch model builds the checkpoint's MTP layers: architecture -> evidence.
MTP_ARCHITECTURES: dict[str, str] = {
    "DeepseekV3ForCausalLM": "docs/source/models/supported-models.md (MTP: Yes); tensorrt_llm/_torch/models/modeling_deepseekv3.py",
    "DeepseekV32ForCausalLM": "modeling_deepseekv3.py (DeepSeek-V3.2 DSA shares the DeepSeek-V3 MTP path)",
    "Glm4MoeForCausalLM": "NVIDIA/TensorRT-LLM PR #14457 (GLM MTP load fix); modeling_glm.py",
    "GlmMoeDsaForCausalLM": "NVIDIA/TensorRT-LLM #18662 (GLM-5 DSA served with MTP)",
    "Qwen3NextForCausalLM": "NVIDIA/TensorRT-LLM PR #12646 (Qwen3-Next / Qwen3.5 MTP, merged 2026-04-01)",
    "Qwen3_5MoeForConditionalGeneration": "NVIDIA/TensorRT-LLM PR #12646",
    "Qwen3_5MoeForCausalLM": "NVIDIA/TensorRT-LLM PR #12646",
    "Qwen3_5ForConditionalGeneration": "NVIDIA/TensorRT-LLM PR #12646",
    "NemotronHForCausalLM": "NVIDIA/TensorRT-LLM PR #17378 (Nemotron-H MTP, incl. a standalone MTP checkpoint), PR #17408",
}
#: Architectures whose maintainers say TensorRT-LLM runs no MTP for them: architecture -> evidence.
NO_MTP_ARCHITECTURES: dict[str, str] = {
    "MiniMaxM3ForCausalLM": "MiniMax-AI/MiniMax-M3 #13 (2026-06-22): \"Don't support MTP now\"",
}

#: Smallest compute capability the MTP path runs on: the MLA generation FMHA kernel is Hopper+
#: (examples/llm_speculative_decoding README, TensorRT-LLM 1.3.0rc24 docs).
MTP_MIN_CC = (9, 0)

#: ``DecodingBaseConfig.max_draft_len`` is ``Optional[NonNegativeInt]`` (LLM_ARGS) and ``MTPDecodingConfig`` only
#: refuses values <= 0: no upper bound. Each generation step of one request carries ``max_draft_len + 1`` tokens
#: (the linear chain's ``max_total_draft_tokens = max_draft_len``), inside the batch's ``max_num_tokens`` budget
#: (SERVE ``--max_num_tokens``, default ``BuildConfig.max_num_tokens``, 8192 in ``tensorrt_llm/builder.py``).
MAX_NUM_TOKENS_DEFAULT = 8192

#: Known silent failures: key -> (what happens, source).
KNOWN_TRAPS: dict[str, tuple[str, str]] = {
    "acceptance_rate_threshold": (
        "speculation is disabled permanently once the rolling average acceptance over acceptance_rate_window_size "
        "drops below the threshold; no error is raised and the server keeps serving without drafting",
        "MTPDecodingConfig / DecodingBaseConfig acceptance_rate_threshold (LLM API reference 1.4.0rc4, "
        "nvidia.github.io/TensorRT-LLM/1.4.0rc4/llm-api/reference/MTPDecodingConfig.html)"),
    "dsa_kv_cache_manager_v1": (
        "GLM-5.x on the DSA attention path with kv_cache_config.use_kv_cache_manager_v2: false accepts no draft token "
        "(acceptance length 1.0) while the server otherwise looks healthy",
        "NVIDIA/TensorRT-LLM #18662 (2026-09-03)"),
}

# --- FP4 kernels (the FP4 verdict for TensorRT-LLM's own kernels: mtp_audit.engines.trtllm.fp4) -------------------------
#: The PyTorch backend's NVFP4 (W4A4) GEMM op ``trtllm::fp4_gemm``: ``getDefaultGemmConfig`` has CUTLASS tile
#: configurations for ``sm >= 120`` (SM120/SM121), ``sm == 103`` and otherwise the SM100 one; there is none for SM90.
FP4_GEMM = "cpp/tensorrt_llm/thop/fp4Gemm.cpp:59-79@c23205d4f3b6ea4afa7a792af03c5dd229e93b2e"
#: The TensorRT engine backend's FP4 GEMM plugin refuses older GPUs outright:
#: ``TLLM_CHECK_WITH_INFO((getSMVersion() >= 100), "FP4 Gemm not supported before Blackwell")``.
FP4_PLUGIN = "cpp/tensorrt_llm/plugins/fp4GemmPlugin/fp4GemmPlugin.cpp Fp4GemmPlugin::init"
#: The support matrix's precisions: "Blackwell (SM100/SM120) - FP32, FP16, BF16, FP8, FP4, INT8, INT4", "Hopper
#: (SM90) - FP32, FP16, BF16, FP8, INT8, INT4" (no FP4).
SUPPORT_MATRIX = "docs/source/reference/support-matrix.md@9b062a8325a134de7966e9131984f8b2037c2ed6 (Software: Precision)"
#: Compute capabilities with an NVFP4 GEMM tile configuration in FP4_GEMM (SM110 falls to the SM100 configuration,
#: which nothing says is built for it: "unknown").
FP4_GEMM_CCS: dict[tuple[int, int], str] = {(10, 0): "SM100", (10, 3): "SM103", (12, 0): "SM120", (12, 1): "SM121"}
#: Below SM100 there are W4A16 paths (4-bit weights dequantized to BF16, no FP4 math) in later sources only: a Marlin
#: NVFP4 MoE backend for SM89-SM99, picked when ``moe_config.backend`` is ``MARLIN`` (MarlinFusedMoE
#: ``_QUANT_SUPPORT_TABLE`` NVFP4 ``sm_constraint ("in", set(range(89, 100)))``; moe_resolution.py ``BACKEND_FAMILY``
#: puts Marlin in the MARLIN family only), and an automatic W4A16 NVFP4 fallback on Hopper verified on Nemotron-H.
MARLIN_MOE = "tensorrt_llm/_torch/modules/fused_moe/fused_moe_marlin.py:55-64@06d4e712e90dce4d5d001355b34704e42559294e"
MOE_RESOLUTION = "tensorrt_llm/_torch/modules/fused_moe/moe_resolution.py@04c2347be3e41cb7b83eb1f5fadec2818ec24c60 BACKEND_FAMILY"
MARLIN_MOE_CCS = range(89, 100)
W4A16_HOPPER = "NVIDIA/TensorRT-LLM PR #14775 'Support Nemotron-H nvfp4 ckpt on Hopper' (merged 2026-05-30: W4A16 NVFP4 with automatic fallback on Hopper)"
#: Before those paths (and for what they do not cover) an FP4 checkpoint on Hopper fails at kernel dispatch: missing
#: kernels, NoneType failures, segfaults (a bug report; the fail-fast fix PR #12591 was still open).
HOPPER_FAILURES = "NVIDIA/TensorRT-LLM #12558 (via PR #12591: unsupported FP4 on SM90 fails at kernel dispatch)"
