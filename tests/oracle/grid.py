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

#: the checkpoint configs (folders of /work/shared/realdata copied to fixtures/oracle-configs/)
CONFIGS = (
    "deepseek-ai--DeepSeek-V3", "deepseek-ai--DeepSeek-R1", "nvidia--DeepSeek-V3.1-NVFP4", "zai-org--GLM-5", "zai-org--GLM-5-FP8",
    "MiniMaxAI--MiniMax-M2.5", "nvidia--MiniMax-M2.5-NVFP4", "Qwen--Qwen3.5-122B-A10B", "Qwen--Qwen3.5-397B-A17B",
    "nvidia--Qwen3.5-397B-A17B-NVFP4", "Qwen--Qwen3.5-27B", "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding",
    "Qwen--Qwen3-Next-80B-A3B-Thinking", "XiaomiMiMo--MiMo-7B-Base", "jj8127--mimo_kor",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "Qwen--Qwen3-30B-A3B", "mistralai--Mixtral-8x22B-v0.1",
)
