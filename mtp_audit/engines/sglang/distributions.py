"""What SGLang installs that the preflight records on a machine (kept apart from the engine, so that collecting a
machine's facts imports no SGLang code): its distributions and where their CUDA kernels are.

Both kernel distributions install the import package ``sgl_kernel`` (the ``sgl_kernel:`` line of
``python3 -m sglang.check_env``, gh:sgl-project/sglang#24834); its shared objects sit under it
(``sgl_kernel/sm100/common_ops.abi3.so``).
"""

from __future__ import annotations

#: Distribution -> the folders (in its RECORD) of the shared objects whose SM targets the preflight reads (``()``: none).
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"sglang": (), "sgl-kernel": ("sgl_kernel/",), "sglang-kernel": ("sgl_kernel/",)}
