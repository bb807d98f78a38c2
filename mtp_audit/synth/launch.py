"""Fixture builders for the launch rules' examples of every engine: a metadata-only Qwen3.5-MoE-shaped checkpoint
(``config.json`` + index) and an SM120 environment dump in ``python3 -m sglang.check_env``'s format. Never used by an
audit.
"""

from __future__ import annotations

import json

_ENV = ("Python: 3.12.3 (main, Jan 22 2026, 20:57:42) [GCC 13.3.0]\nCUDA available: True\nGPU 0: {gpu}\n"
        "GPU 0 Compute Capability: {cc}\nCUDA_HOME: /usr/local/cuda\nNVCC: Cuda compilation tools, release 12.9, V12.9.86\n"
        "CUDA Driver Version: 580.95.05\nPyTorch: 2.9.1+cu129\nsglang: 0.5.9\nsgl_kernel: 0.3.21\nflashinfer_python: 0.6.8\n"
        "flashinfer_cubin: 0.6.8\nflashinfer_jit_cache: Module Not Found\ntriton: 3.5.1\n")
SM120_ENV = _ENV.format(gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition", cc="12.0")


def env_dump(gpu: str, cc: str) -> str:
    """An environment dump (``python3 -m sglang.check_env`` format) of a one-GPU machine: ``gpu`` its name, ``cc`` its
    compute capability as ``"9.0"``."""
    return _ENV.format(gpu=gpu, cc=cc)


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
