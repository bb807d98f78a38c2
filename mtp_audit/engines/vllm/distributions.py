"""What vLLM installs that the preflight records on a machine (kept apart from the engine, so that collecting a
machine's facts imports no vLLM code): its distribution and where its CUDA kernels are.

Source: wheel:vllm-0.20.0 (``vllm/_C.abi3.so``, ``vllm/_C_stable_libtorch.abi3.so``, ``vllm/_moe_C.abi3.so``,
``vllm/cumem_allocator.abi3.so``; the FlashMLA, FlashAttention and DeepGEMM objects elsewhere are not read).
"""

from __future__ import annotations

#: Distribution -> the folders (in its RECORD) of the shared objects whose SM targets the preflight reads.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"vllm": ("vllm/_C", "vllm/_moe_C", "vllm/cumem_allocator")}
