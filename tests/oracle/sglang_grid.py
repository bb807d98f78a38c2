"""The SGLang oracle grid: real checkpoint configs x SGLang speculative flag forms x declared GPUs (+ a few
``--quantization`` / ``--moe-runner-backend`` launches). Shared by build_sglang_oracle.py (run under a real sglang)
and test_sglang_oracle.py / replay_sglang_grid.py (mtp-audit's side). ``<target>`` is the served checkpoint itself."""

#: the flag forms, appended to ``--model-path <target>``
FORMS: dict[str, list[str]] = {
    "none": [],
    "NEXTN": ["--speculative-algorithm", "NEXTN"],
    "nextn-lower": ["--speculative-algorithm", "nextn"],
    "EAGLE": ["--speculative-algorithm", "EAGLE"],
    "EAGLE3": ["--speculative-algorithm", "EAGLE3"],
    "MTP": ["--speculative-algorithm", "MTP"],
    "NEXTN-3-1-4": ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                    "--speculative-num-draft-tokens", "4"],
    "NEXTN-steps2": ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2"],
    "NEXTN-3-4-8": ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "4",
                    "--speculative-num-draft-tokens", "8"],
    "NEXTN-draft-self": ["--speculative-algorithm", "NEXTN", "--speculative-draft-model-path", "<target>"],
    "EAGLE-draft-self-1-1-2": ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "<target>",
                               "--speculative-num-steps", "1", "--speculative-eagle-topk", "1",
                               "--speculative-num-draft-tokens", "2"],
    "EAGLE3-draft-self": ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "<target>"],
    "STANDALONE-draft-self": ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", "<target>"],
    "NGRAM": ["--speculative-algorithm", "NGRAM"],
    "NEXTN-moe-triton": ["--speculative-algorithm", "NEXTN", "--moe-runner-backend", "triton"],
    "NEXTN-moe-flashinfer_trtllm": ["--speculative-algorithm", "NEXTN", "--moe-runner-backend", "flashinfer_trtllm"],
}

#: forms run only on FP4 (ModelOpt NVFP4) checkpoints
FP4_FORMS: dict[str, list[str]] = {
    "NEXTN-modelopt_fp4": ["--speculative-algorithm", "NEXTN", "--quantization", "modelopt_fp4"],
    "NEXTN-fp4-gemm-cutlass": ["--speculative-algorithm", "NEXTN", "--fp4-gemm-backend", "flashinfer_cutlass"],
}

#: checkpoint configs: folder name -> fixtures sub-folder holding it (config.json, hf_quant_config.json where present)
CONFIGS: dict[str, str] = {
    "deepseek-ai--DeepSeek-V3": "oracle-configs",
    "deepseek-ai--DeepSeek-R1": "oracle-configs",
    "nvidia--DeepSeek-V3.1-NVFP4": "oracle-configs",
    "zai-org--GLM-5": "oracle-configs",
    "zai-org--GLM-5-FP8": "oracle-configs",
    "MiniMaxAI--MiniMax-M2.5": "oracle-configs",
    "nvidia--MiniMax-M2.5-NVFP4": "oracle-configs",
    "Qwen--Qwen3.5-397B-A17B": "oracle-configs",
    "nvidia--Qwen3.5-397B-A17B-NVFP4": "oracle-configs",
    "Qwen--Qwen3.5-27B": "oracle-configs",
    "Qwen--Qwen3-Next-80B-A3B-Thinking": "oracle-configs",
    "XiaomiMiMo--MiMo-7B-Base": "oracle-configs",
    "XiaomiMiMo--MiMo-V2-Flash": "checkpoint",
    "moonshotai--Kimi-K3": "checkpoint",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4": "oracle-configs",
    "mistralai--Mixtral-8x22B-v0.1": "oracle-configs",
}

#: declared GPUs: what the oracle's patched platform layer reports, and the real environment dump (fixtures/preflight/
#: envdumps) mtp-audit reads for the same machine. ``memory_mib``: total memory per GPU (the dumps without it: the
#: product's data sheet); ``cuda``: torch.version.cuda.
GPUS: dict[str, dict] = {
    "H200": {"name": "NVIDIA H200", "cc": [9, 0], "count": 1, "memory_mib": 143771, "cuda": "13.0",
             "env_dump": "h200-nvidia-smi.txt"},
    "B200": {"name": "NVIDIA B200", "cc": [10, 0], "count": 8, "memory_mib": 183359, "cuda": "12.9",
             "env_dump": "sglang-18943.txt"},
    "RTX-PRO-6000": {"name": "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "cc": [12, 0], "count": 1,
                     "memory_mib": 97887, "cuda": "12.9", "env_dump": "vllm-57932.txt"},
}


def is_fp4(folder: str) -> bool:
    """Whether the checkpoint in ``folder`` declares NVFP4 (ModelOpt ``quant_algo`` in hf_quant_config.json or
    config.json's ``quantization_config``, or 4-bit float weights of a compressed-tensors group)."""
    import json
    import os

    texts = []
    for f in ("config.json", "hf_quant_config.json"):
        if os.path.exists(os.path.join(folder, f)):
            with open(os.path.join(folder, f)) as fh:
                d = json.load(fh)
            texts.append(json.dumps(d.get("quantization_config") or d.get("quantization") or {}))
    blob = " ".join(texts).upper()
    return "NVFP4" in blob or ('"NUM_BITS": 4, "TYPE": "FLOAT"' in blob)


def cases(folders: dict[str, str]) -> list[tuple[str, str, str, list[str]]]:
    """Every ``(config, form id, gpu, flags)`` of the grid (``folders``: config name -> its folder)."""
    out = []
    for name in CONFIGS:
        forms = dict(FORMS)
        if is_fp4(folders[name]):
            forms.update(FP4_FORMS)
        for gpu in GPUS:
            for form, flags in forms.items():
                out.append((name, form, gpu, flags))
    return out
