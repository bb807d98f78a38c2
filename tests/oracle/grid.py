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


#: the fourth grid (recorded apart, tests/data/oracle/vllm-X-grid4.json): forms no earlier grid had: every MTP method
#: spelling the releases list (and one only the newest lists), token counts at the edges and of other JSON types,
#: ``"model": null``, an empty config, draft TP edge values, separate EAGLE / EAGLE-3 / draft-model checkpoints (and
#: the method a draft's folder name implies), prompt-lookup options, typos and keys removed in or new to a release
_EAGLE = "<draft:SafeAILab--EAGLE-LLaMA3-Instruct-8B>"
_EAGLE3 = "<draft:SafeAILab--EAGLE3-LLaMA3.1-Instruct-8B>"
FORMS_4 = {
    "qwen3_next_mtp-k1": {"method": "qwen3_next_mtp", "num_speculative_tokens": 1},
    "mimo_mtp-k1": {"method": "mimo_mtp", "num_speculative_tokens": 1},
    "mimo_v2_mtp-k1": {"method": "mimo_v2_mtp", "num_speculative_tokens": 1},
    "longcat_flash_mtp-k1": {"method": "longcat_flash_mtp", "num_speculative_tokens": 1},
    "glm4_moe_lite_mtp-k1": {"method": "glm4_moe_lite_mtp", "num_speculative_tokens": 1},
    "kimi_k3_mtp-k1": {"method": "kimi_k3_mtp", "num_speculative_tokens": 1},
    "pangu_ultra_moe_mtp-k1": {"method": "pangu_ultra_moe_mtp", "num_speculative_tokens": 1},
    "deepseek_mtp-k2": {"method": "deepseek_mtp", "num_speculative_tokens": 2},
    "deepseek_mtp-no-k": {"method": "deepseek_mtp"},
    "deepseek_mtp-self": {"method": "deepseek_mtp", "model": "<target>", "num_speculative_tokens": 1},
    "glm4_moe_mtp-k3": {"method": "glm4_moe_mtp", "num_speculative_tokens": 3},
    "mtp-k5": {"method": "mtp", "num_speculative_tokens": 5},
    "mtp-k8": {"method": "mtp", "num_speculative_tokens": 8},
    "mtp-k-float": {"method": "mtp", "num_speculative_tokens": 1.0},
    "mtp-k-float-2.5": {"method": "mtp", "num_speculative_tokens": 2.5},
    "mtp-k-bool": {"method": "mtp", "num_speculative_tokens": True},
    "mtp-k-word": {"method": "mtp", "num_speculative_tokens": "two"},
    "mtp-k-null": {"method": "mtp", "num_speculative_tokens": None},
    "mtp-model-null-k1": {"method": "mtp", "model": None, "num_speculative_tokens": 1},
    "model-null-k1": {"model": None, "num_speculative_tokens": 1},
    "empty": {},
    "mtp-dtp-null": {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": None},
    "mtp-dtp8": {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": 8},
    "eagle-draft-llama3": {"method": "eagle", "model": _EAGLE, "num_speculative_tokens": 3},
    "eagle3-draft-llama31": {"method": "eagle3", "model": _EAGLE3, "num_speculative_tokens": 3},
    "eagle-draft-eagle3cfg": {"method": "eagle", "model": _EAGLE3, "num_speculative_tokens": 3},
    "eagle3-draft-ds": {"method": "eagle3", "model": "<draft:sgl-project--SpecForge-deepseek-v3-671b-eagle3>",
                        "num_speculative_tokens": 3},
    "eagle3-draft-qwen3": {"method": "eagle3", "model": "<draft:sgl-project--SpecForge-qwen3-30B-A3B-eagle3.1>",
                           "num_speculative_tokens": 3},
    "eagle3-draft-gptoss": {"method": "eagle3", "model": "<draft:sgl-project--SpecForge-gpt-oss-20B-eagle3>",
                            "num_speculative_tokens": 3},
    "eagle3-draft-longcat": {"method": "eagle3", "model": "<draft:sgl-project--SpecForge-longcat-flash-eagle3>",
                             "num_speculative_tokens": 3},
    "model-draft-eagle-name": {"model": _EAGLE, "num_speculative_tokens": 3},
    "model-draft-eagle3-name": {"model": _EAGLE3, "num_speculative_tokens": 3},
    "model-draft-specforge-eagle3": {"model": "<draft:sgl-project--SpecForge-qwen3-30B-A3B-eagle3.1>",
                                     "num_speculative_tokens": 3},
    "EAGLE3-upper-draft": {"method": "EAGLE3", "model": _EAGLE3, "num_speculative_tokens": 3},
    "eagle-3-typo": {"method": "eagle-3", "model": _EAGLE3, "num_speculative_tokens": 3},
    "draft_model-llama3-k4": {"method": "draft_model", "model": "<draft:meta-llama--Meta-Llama-3-8B-Instruct>",
                              "num_speculative_tokens": 4},
    "draft_model-llama3-dtp1": {"method": "draft_model", "model": "<draft:meta-llama--Meta-Llama-3-8B-Instruct>",
                                "num_speculative_tokens": 4, "draft_tensor_parallel_size": 1},
    "draft_model-llama3-dtp2": {"method": "draft_model", "model": "<draft:meta-llama--Meta-Llama-3-8B-Instruct>",
                                "num_speculative_tokens": 4, "draft_tensor_parallel_size": 2},
    "draft_model-qwen3-8b": {"method": "draft_model", "model": "<draft:Qwen--Qwen3-8B>", "num_speculative_tokens": 2},
    "model-draft-qwen3-8b": {"model": "<draft:Qwen--Qwen3-8B>", "num_speculative_tokens": 2},
    "mtp-draft-glm47flash": {"method": "mtp", "model": "<draft:zai-org--GLM-4.7-Flash>", "num_speculative_tokens": 1},
    "dflash-draft-qwen3-8b": {"method": "dflash", "model": "<draft:Qwen--Qwen3-8B>", "num_speculative_tokens": 2},
    "ngram-pl-5-1": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 5, "prompt_lookup_min": 1},
    "ngram-plmin0": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 0},
    "ngram-plmax4-only": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
    "pl-no-method": {"num_speculative_tokens": 3, "prompt_lookup_max": 4},
    "ngram_gpu-pl": {"method": "ngram_gpu", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2},
    "mtp-typo-k": {"method": "mtp", "num_speculative_token": 1},
    "method-typo": {"method": "mtpp", "num_speculative_tokens": 1},
    "mtp-acceptance-method": {"method": "mtp", "num_speculative_tokens": 1, "acceptance_method": "typical_acceptance_sampler"},
    "mtp-revision": {"method": "mtp", "num_speculative_tokens": 1, "revision": "main"},
    "mtp-enforce-eager": {"method": "mtp", "num_speculative_tokens": 1, "enforce_eager": True},
    "mtp-quant-mxfp4": {"method": "mtp", "num_speculative_tokens": 1, "quantization": "mxfp4"},
    "mtp-rejection-synthetic": {"method": "mtp", "num_speculative_tokens": 1, "rejection_sample_method": "synthetic"},
}

#: real configs no earlier grid had (fixtures/oracle-configs, each with its SOURCE.txt): targets, then draft checkpoints
CONFIGS_4_TARGETS = (
    "openai--gpt-oss-20b", "zai-org--GLM-4.7-Flash", "zai-org--GLM-5.1", "Qwen--Qwen3-Next-80B-A3B-Instruct",
    "meta-llama--Meta-Llama-3-8B-Instruct", "Qwen--Qwen3-8B",
)
CONFIGS_4_DRAFTS = (
    "SafeAILab--EAGLE-LLaMA3-Instruct-8B", "SafeAILab--EAGLE3-LLaMA3.1-Instruct-8B",
    "sgl-project--SpecForge-deepseek-v3-671b-eagle3", "sgl-project--SpecForge-qwen3-30B-A3B-eagle3.1",
    "sgl-project--SpecForge-gpt-oss-20B-eagle3", "sgl-project--SpecForge-longcat-flash-eagle3",
    "sgl-project--SpecForge-qwen3.5-122b-a10b-mtp",
)
#: one earlier config per family the fourth grid's forms run on too
CONFIGS_4_EARLIER = (
    "deepseek-ai--DeepSeek-V3", "zai-org--GLM-5", "MiniMaxAI--MiniMax-M2.5", "Qwen--Qwen3-Next-80B-A3B-Thinking",
    "Qwen--Qwen3-30B-A3B", "XiaomiMiMo--MiMo-V2-Flash", "deepseek-ai--DeepSeek-V4-Flash", "mistralai--Mixtral-8x22B-v0.1",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
)


def grid4() -> list[tuple[str, str]]:
    """The (config, form) pairs of the fourth grid: :data:`FORMS_4` on every new target and one earlier config per
    family, and the first grid's forms on the new targets and on the draft checkpoints served alone."""
    return ([(c, f) for c in CONFIGS_4_TARGETS + CONFIGS_4_EARLIER for f in FORMS_4]
            + [(c, f) for c in CONFIGS_4_TARGETS + CONFIGS_4_DRAFTS for f in FORMS])
