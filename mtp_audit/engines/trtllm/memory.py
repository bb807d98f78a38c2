"""The MTP layers' bytes per GPU of a TensorRT-LLM MTP launch (rule MTP719): the checkpoint's MTP bytes over the
tensor-parallel size (the MTP layers are built with the target's mapping, ``tensorrt_llm/_torch/models/
modeling_speculative.py`` / ``modeling_deepseekv3.py`` at the LLM_ARGS commit), against the smallest GPU."""

from __future__ import annotations

import dataclasses
from typing import Any

from mtp_audit.checkpoint.typed import as_checkpoint_answer
from mtp_audit.checkpoint.typed_gguf import GgufModel
from mtp_audit.engines.base import DraftMemory, DraftQuestion
from mtp_audit.engines.outcome import fmt_bytes
from mtp_audit.report import Severity


def tensor_parallel(ctx: Any) -> int:
    """``--tp_size`` / ``--tensor_parallel_size`` of the command, else the YAML's ``tensor_parallel_size``, else 1."""
    raw = ctx.cmd.values.get("tensor_parallel_size") or str(ctx.yaml_doc.get("tensor_parallel_size") or "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


def draft_memory(question: DraftQuestion) -> DraftMemory | None:
    """The MTP layers' bytes per GPU: the checkpoint's MTP bytes over the tensor-parallel size, the load-time peak only
    (``None``: MTP bytes unknown). What ``TrtllmEngine.draft_memory`` answers."""
    ck = as_checkpoint_answer(question.checkpoint) if not isinstance(question.checkpoint, GgufModel) else None
    b = ck.mtp.bytes if ck is not None else None
    if b is None or b.value is None or b.value <= 0:
        return None
    tp = max(1, question.tensor_parallel)
    return DraftMemory(b.value, bool(b.estimated), b.value / tp, None, tp,
                       "all MTP bytes over tensor_parallel_size; the steady state is not derived")


def check_mtp_memory(ctx: Any) -> None:
    """MTP719: the MTP layers' bytes per GPU at load under the launch's tensor parallelism: info below 10 % of the
    smallest GPU, warning from 10 %, error above it; the steady state is not derived."""
    answer = draft_memory(DraftQuestion(ctx.ck, tensor_parallel(ctx)))
    if answer is None:
        return
    b, tp, per_gpu = answer.mtp_bytes, answer.tensor_parallel, answer.peak_per_gpu
    mems = [m for g in (ctx.machine.gpus if ctx.machine is not None else ())
            if isinstance(m := g.memory_bytes.value, int) and m > 0]
    head = (f"the MTP layers' weights take about {fmt_bytes(per_gpu)} per GPU at load (peak) under tensor_parallel_size "
            f"{tp}; the steady state is not derived")
    ev = [("MTP bytes", fmt_bytes(b)), ("tensor_parallel_size", str(tp))]
    if not mems:
        ctx.add("MTP719", head + " (GPU memory unknown)", evidence=ev)
        return
    mem = min(mems)
    frac = per_gpu / mem
    sev = Severity.ERROR if per_gpu > mem else Severity.WARNING if frac >= 0.10 else Severity.INFO
    tail = ("more than a whole GPU: the MTP layers cannot be loaded" if sev == Severity.ERROR else
            "it comes out of the memory the KV cache gets (kv_cache_config.free_gpu_memory_fraction)"
            if sev == Severity.WARNING else "small next to the GPU")
    ctx.add("MTP719", f"{head}, {frac:.1%} of the {fmt_bytes(mem)} GPU: {tail}",
            evidence=ev + [("GPU memory (smallest)", fmt_bytes(mem))])
    if sev != Severity.INFO:
        ctx.findings[-1] = dataclasses.replace(ctx.findings[-1], severity=sev)
