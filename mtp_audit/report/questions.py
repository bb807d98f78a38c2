"""The questions an audit answers, as the ids a :class:`~mtp_audit.report.model.Finding` or
:class:`~mtp_audit.report.model.Gap` names (``question``), so that a consumer (another analyzer, an engine, a
deployment tool) scopes findings and gaps by what they are about, never by searching their text.

A finding or gap without a question is about the analyzer's own subject as a whole (``None`` in the model; no
``question`` key in JSON).

A gap also says *why* it is open (``why_open``), so a consumer tells a fact the audit was told not to look at from
one it looked for and did not find: :data:`NOT_EXAMINED`, or ``None`` (the evidence read did not tell: missing, cut,
unreadable; no ``why_open`` key in JSON).
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

#: Why a gap is open: the fact behind it was not looked at, by request (``--no-machine``: the machine running the
#: audit is not the serving machine, and it is never read). Such a gap is a note where the audit's own questions
#: decide (:func:`mtp_audit.preflight.nomachine.machine_note`); it is never an answer.
NOT_EXAMINED = "not-examined"

#: Every ``why_open`` id a gap may carry.
WHY_OPEN: tuple[str, ...] = (NOT_EXAMINED,)
