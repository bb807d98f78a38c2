"""The questions an audit answers, as the ids a :class:`~mtp_audit.report.model.Finding` or
:class:`~mtp_audit.report.model.Gap` names (``question``), so that a consumer (another analyzer, an engine, a
deployment tool) scopes findings and gaps by what they are about, never by searching their text.

A finding or gap without a question is about the analyzer's own subject as a whole (``None`` in the model; no
``question`` key in JSON).
"""

from __future__ import annotations

#: Can the FP4 (NVFP4 / MXFP4) kernels the launch needs run on this machine with this stack?
FP4 = "fp4"
#: Will the engine draft with the checkpoint's MTP / NextN heads (and does the checkpoint hold them)?
MTP_HEADS = "mtp-heads"
#: Are there as many GPUs as the launch's parallel sizes need?
GPU_COUNT = "gpu-count"
#: Do the weights, the draft and the KV cache fit the GPUs' memory?
MEMORY = "memory"
#: Will the server start with this command (its arguments, its speculative configuration)?
STARTS = "starts"
#: Does the installed stack (torch, CUDA, drivers, the engine's pins) match what the release needs?
STACK = "stack"
#: Did the heads draft at run time, and what was accepted (logs, metrics)?
RUNTIME = "runtime"

#: Every question id, in the order reports list them.
QUESTIONS: tuple[str, ...] = (FP4, MTP_HEADS, GPU_COUNT, MEMORY, STARTS, STACK, RUNTIME)
