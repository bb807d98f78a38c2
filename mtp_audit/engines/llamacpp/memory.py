"""The MTP head's memory in a llama.cpp launch (rule MTP612, the :meth:`LlamaCppEngine.draft_memory
<mtp_audit.engines.llamacpp.launch.LlamaCppEngine.draft_memory>` hook): the GGUF's nextn blocks are ordinary blocks
of the model (``{arch}.block_count`` includes them, ``n_layer_nextn <= n_layer_all``), and llama.cpp places each block
whole on one device with ``--split-mode layer`` (the default): the device whose share of the split holds the last
blocks, or the CPU when ``-ngl`` leaves them there; ``--split-mode row`` splits a block's matrices over the GPUs.
Nothing is freed once loaded, so the peak is the steady state.

Source: llama-cpp-python 0.3.36 sdist ``vendor/llama.cpp/src/llama-model.cpp:1329-1330`` (``n_layer_nextn``) and
``:1589-1614`` (``get_layer_buft_list``: one device per layer from the split fractions; ``i_gpu_start`` from ``-ngl``).
"""

from __future__ import annotations

from mtp_audit.checkpoint.typed_gguf import GgufModel
from mtp_audit.engines.base import DraftMemory, DraftQuestion
from mtp_audit.engines.outcome import fmt_bytes
from mtp_audit.report import Evidence, Finding, Location

PLACEMENT = "llama-cpp-python 0.3.36 sdist vendor/llama.cpp/src/llama-model.cpp:1589-1614"


def head_bytes(entry: GgufModel | None) -> int:
    """Bytes of a GGUF model's nextn blocks (:attr:`~mtp_audit.checkpoint.typed_gguf.GgufModel.head_bytes`; 0 without one)."""
    return entry.head_bytes if entry is not None else 0


def draft_memory(question: DraftQuestion) -> DraftMemory | None:
    """The MTP head's bytes, whole on one device (``question.checkpoint``: the GGUF model entry holding the head;
    ``tensor_parallel`` is ignored: llama.cpp splits by layer)."""
    b = head_bytes(question.checkpoint if isinstance(question.checkpoint, GgufModel) else None)
    if b <= 0:
        return None
    return DraftMemory(b, False, float(b), float(b), 1, f"the nextn block(s) whole on one device ({PLACEMENT})")


def memory_finding(entry: GgufModel | None, flag: str, split_mode: str | None) -> Finding | None:
    """MTP612 for the GGUF that carries the head (``flag``: ``-m`` or ``-md``), ``None`` when it has no nextn bytes."""
    from mtp_audit.engines.llamacpp.rules import RULES_BY_ID

    answer = draft_memory(DraftQuestion(entry, 1))
    if answer is None:
        return None
    where = ("its matrices split over the GPUs (--split-mode row)" if split_mode == "row" else
             "whole on the one device that holds the last blocks (--split-mode layer, the default), or on the CPU when "
             "-ngl leaves the last blocks there")
    return RULES_BY_ID["MTP612"].finding(
        f"the MTP head's {len(entry.blocks) if entry is not None else 0} nextn block(s) take {fmt_bytes(answer.mtp_bytes)}, "
        f"{where}; llama.cpp frees nothing of it, so this is both the load-time peak and the steady state",
        Location(symbol=flag), evidence=[Evidence("nextn bytes", fmt_bytes(answer.mtp_bytes)),
                                         Evidence("placement", PLACEMENT)])
