"""What vLLM installs that the preflight records on a machine (kept apart from the engine, so that collecting a
machine's facts imports no vLLM code): its distribution and where its CUDA kernels are, and the optional distributions
whose presence decides what vLLM accepts.

Source: wheel:vllm-0.20.0 (``vllm/_C.abi3.so``, ``vllm/_C_stable_libtorch.abi3.so``, ``vllm/_moe_C.abi3.so``,
``vllm/cumem_allocator.abi3.so``; the FlashMLA, FlashAttention and DeepGEMM objects elsewhere are not read).
``arctic-inference``: suffix decoding needs it, ``SpeculativeConfig`` raises ``ImportError`` without it
(``has_arctic_inference()``, ``vllm/utils/import_utils.py`` 0.24.0 :506 / 0.33.0 :612, read at ``vllm/config/speculative.py``
0.24.0 :851 / 0.33.0 :1727); no vLLM release requires it (0.24.0 / 0.33.0 / 0.34.0 METADATA).
``transformers``: vLLM builds a checkpoint's ``hf_config`` from a transformers config class where the release has none
of its own (``_CONFIG_REGISTRY``, ``vllm/transformers_utils/config.py``), so the version installed decides that class's
defaults (the ``max_model_len`` vLLM derives: :func:`mtp_audit.engines.vllm.launch.config_class.length_defaults`); the
releases admit a range of it (``Requires-Dist: transformers >= 5.5.3`` in 0.24.0 METADATA, unbounded above).
"""

from __future__ import annotations

#: The optional distribution whose presence ``has_arctic_inference()`` tests (suffix decoding).
ARCTIC_INFERENCE = "arctic-inference"
#: The distribution whose config classes vLLM builds a checkpoint's ``hf_config`` from (its version decides their defaults).
TRANSFORMERS = "transformers"

#: Distribution -> the folders (in its RECORD) of the shared objects whose SM targets the preflight reads (``()``: none;
#: the distribution is recorded installed or not, with its version).
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"vllm": ("vllm/_C", "vllm/_moe_C", "vllm/cumem_allocator"), ARCTIC_INFERENCE: (),
                                              TRANSFORMERS: ()}
