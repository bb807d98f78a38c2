"""The oracle grid: every ``--speculative-config`` form compared between real vLLM and the replay (``<target>``:
the served model itself). Shared by build_vllm_oracle.py (run under a real vllm) and test_vllm_oracle.py."""

FORMS = {
    "mtp-k1": {"method": "mtp", "num_speculative_tokens": 1},
    "mtp-k2": {"method": "mtp", "num_speculative_tokens": 2},
    "mtp-k3": {"method": "mtp", "num_speculative_tokens": 3},
    "mtp-no-k": {"method": "mtp"},
    "mtp-model-no-k": {"method": "mtp", "model": "<target>"},
    "mtp-model-k1": {"method": "mtp", "model": "<target>", "num_speculative_tokens": 1},
    "model-k1": {"model": "<target>", "num_speculative_tokens": 1},
    "k1-only": {"num_speculative_tokens": 1},
    "eagle-self": {"method": "eagle", "model": "<target>", "num_speculative_tokens": 1},
    "eagle3-self": {"method": "eagle3", "model": "<target>", "num_speculative_tokens": 1},
    "deepseek_mtp-k1": {"method": "deepseek_mtp", "num_speculative_tokens": 1},
    "draft_model-self": {"method": "draft_model", "model": "<target>", "num_speculative_tokens": 1},
    "ngram-k3": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3},
}

#: the wider grid recorded for vLLM 0.34.0 (the keys and methods issue reports found unreplayed: pydantic's field table,
#: draft tensor / context parallel sizes, max_model_len, per-method options, suffix / ngram_gpu, removed and new keys)
FORMS_WIDE = {
    "mtp-k4": {"method": "mtp", "num_speculative_tokens": 4},
    "mtp-k0": {"method": "mtp", "num_speculative_tokens": 0},
    "nextn-k1": {"method": "nextn", "num_speculative_tokens": 1},
    "qwen3_5_mtp-k1": {"method": "qwen3_5_mtp", "num_speculative_tokens": 1},
    "glm4_moe_mtp-k1": {"method": "glm4_moe_mtp", "num_speculative_tokens": 1},
    "mtp-dtp1": {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": 1},
    "mtp-dtp2": {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": 2},
    "mtp-ddcp2": {"method": "mtp", "num_speculative_tokens": 1, "draft_decode_context_parallel_size": 2},
    "mtp-tp-key": {"method": "mtp", "num_speculative_tokens": 1, "tensor_parallel_size": 1},
    "mtp-mml-huge": {"method": "mtp", "num_speculative_tokens": 1, "max_model_len": 100000000},
    "mtp-removed-key": {"method": "mtp", "num_speculative_tokens": 1, "disable_padded_drafter_batch": True},
    "mtp-new-key": {"method": "mtp", "num_speculative_tokens": 1, "speculator_options": {}},
    "mtp-index-share": {"method": "mtp", "num_speculative_tokens": 1, "index_share_for_mtp_iteration": True},
    "ngram-index-share": {"method": "ngram", "num_speculative_tokens": 3, "index_share_for_mtp_iteration": True},
    "mtp-parallel-drafting": {"method": "mtp", "num_speculative_tokens": 1, "parallel_drafting": True},
    "mtp-lm-head-fp8": {"method": "mtp", "num_speculative_tokens": 1, "draft_lm_head_quantization": "fp8"},
    "ngram-lm-head-fp8": {"method": "ngram", "num_speculative_tokens": 3, "draft_lm_head_quantization": "fp8"},
    "suffix-no-k": {"method": "suffix"},
    "suffix-k4": {"method": "suffix", "num_speculative_tokens": 4},
    "ngram_gpu-k3": {"method": "ngram_gpu", "num_speculative_tokens": 3},
    "ngram-no-k": {"method": "ngram"},
    "ngram-min-gt-max": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2},
    "model-ngram": {"model": "ngram", "num_speculative_tokens": 3},
    "draft_model-no-model": {"method": "draft_model", "num_speculative_tokens": 1},
    "eagle-no-model": {"method": "eagle", "num_speculative_tokens": 1},
    "dflash-self": {"method": "dflash", "model": "<target>", "num_speculative_tokens": 1},
    "model-no-k": {"model": "<target>"},
}

#: the checkpoint configs (folders of /work/shared/realdata copied to fixtures/oracle-configs/)
CONFIGS = (
    "deepseek-ai--DeepSeek-V3", "deepseek-ai--DeepSeek-R1", "nvidia--DeepSeek-V3.1-NVFP4", "zai-org--GLM-5", "zai-org--GLM-5-FP8",
    "MiniMaxAI--MiniMax-M2.5", "nvidia--MiniMax-M2.5-NVFP4", "Qwen--Qwen3.5-122B-A10B", "Qwen--Qwen3.5-397B-A17B",
    "nvidia--Qwen3.5-397B-A17B-NVFP4", "Qwen--Qwen3.5-27B", "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding",
    "Qwen--Qwen3-Next-80B-A3B-Thinking", "XiaomiMiMo--MiMo-7B-Base", "jj8127--mimo_kor",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "Qwen--Qwen3-30B-A3B", "mistralai--Mixtral-8x22B-v0.1",
)

#: the third grid (recorded apart, tests/data/oracle/vllm-X-grid3.json, so the first two stay as recorded): forms no
#: earlier grid had: the speculative ``quantization`` against the draft checkpoint's own, a separate draft checkpoint
#: (``<draft:NAME>``: the folder of config NAME), more draft TP / DCP sizes, a small ``max_model_len``, bad token counts,
#: method spellings and the methods without an MTP head, ngram / suffix options, keys removed in or new to a release
FORMS_NEW = {
    "mtp-quant-fp8": {"method": "mtp", "num_speculative_tokens": 1, "quantization": "fp8"},
    "mtp-quant-modelopt_fp4": {"method": "mtp", "num_speculative_tokens": 1, "quantization": "modelopt_fp4"},
    "mtp-quant-modelopt": {"method": "mtp", "num_speculative_tokens": 1, "quantization": "modelopt"},
    "mtp-quant-awq": {"method": "mtp", "num_speculative_tokens": 1, "quantization": "awq"},
    "mtp-quant-bogus": {"method": "mtp", "num_speculative_tokens": 1, "quantization": "not_a_method"},
    "mtp-quant-null": {"method": "mtp", "num_speculative_tokens": 1, "quantization": None},
    "ngram-quant-fp8": {"method": "ngram", "num_speculative_tokens": 3, "quantization": "fp8"},
    "mtp-dtp4": {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": 4},
    "mtp-ddcp1": {"method": "mtp", "num_speculative_tokens": 1, "draft_decode_context_parallel_size": 1},
    "mtp-mml-1024": {"method": "mtp", "num_speculative_tokens": 2, "max_model_len": 1024},
    "mtp-k-neg": {"method": "mtp", "num_speculative_tokens": -1},
    "mtp-k-str": {"method": "mtp", "num_speculative_tokens": "2"},
    "mtp-k6": {"method": "mtp", "num_speculative_tokens": 6},
    "MTP-upper": {"method": "MTP", "num_speculative_tokens": 1},
    "method-null-k1": {"method": None, "num_speculative_tokens": 1},
    "medusa-self": {"method": "medusa", "model": "<target>", "num_speculative_tokens": 1},
    "mlp_speculator-self": {"method": "mlp_speculator", "model": "<target>", "num_speculative_tokens": 1},
    "eagle3-no-model": {"method": "eagle3", "num_speculative_tokens": 1},
    "ernie_mtp-k1": {"method": "ernie_mtp", "num_speculative_tokens": 1},
    "ngram-min-only": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2},
    "ngram-max0": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 0},
    "ngram-k0": {"method": "ngram", "num_speculative_tokens": 0},
    "ngram_gpu-no-k": {"method": "ngram_gpu"},
    "suffix-depth16": {"method": "suffix", "suffix_decoding_max_tree_depth": 16},
    "suffix-corpus": {"method": "suffix", "num_speculative_tokens": 4, "suffix_decoding_corpus_tokens": 1000},
    "mtp-hetero-vocab": {"method": "mtp", "num_speculative_tokens": 1, "use_heterogeneous_vocab": True},
    "mtp-unknown-key": {"method": "mtp", "num_speculative_tokens": 1, "not_a_key": 1},
    "mtp-disable-bs": {"method": "mtp", "num_speculative_tokens": 1, "disable_by_batch_size": 4},
    "mtp-draft-r1": {"method": "mtp", "model": "<draft:deepseek-ai--DeepSeek-R1>", "num_speculative_tokens": 1},
    "model-draft-r1": {"model": "<draft:deepseek-ai--DeepSeek-R1>", "num_speculative_tokens": 1},
    "draft_model-qwen3": {"method": "draft_model", "model": "<draft:Qwen--Qwen3-30B-A3B>", "num_speculative_tokens": 2},
    "draft_model-qwen3-quant": {"method": "draft_model", "model": "<draft:Qwen--Qwen3-30B-A3B>", "num_speculative_tokens": 2,
                                "quantization": "fp8"},
    "eagle-draft-qwen3": {"method": "eagle", "model": "<draft:Qwen--Qwen3-30B-A3B>", "num_speculative_tokens": 1},
}

#: checkpoint configs no earlier grid had (fixtures/checkpoint, copied to fixtures/oracle-configs/ with their SOURCE.txt)
CONFIGS_NEW = (
    "XiaomiMiMo--MiMo-V2-Flash", "deepseek-ai--DeepSeek-V4-Flash", "nvidia--DeepSeek-V4-Flash-NVFP4", "stepfun-ai--Step-3.7-Flash",
    "tbressers--WizardLM-2-8x22B", "nvidia--Qwen3.5-122B-A10B-NVFP4", "nvidia--Qwen3.6-35B-A3B-NVFP4", "moonshotai--Kimi-K3",
)


def grid3() -> list[tuple[str, str]]:
    """The (config, form) pairs of the third grid: every earlier config with :data:`FORMS_NEW`, and every new config
    with all forms."""
    every = {**FORMS, **FORMS_WIDE, **FORMS_NEW}
    return [(c, f) for c in CONFIGS for f in FORMS_NEW] + [(c, f) for c in CONFIGS_NEW for f in every]
