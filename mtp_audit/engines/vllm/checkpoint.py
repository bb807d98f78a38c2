"""What vLLM does with a checkpoint's quantization declaration, for the checkpoint analyzer: the ModelOpt method it
resolves a ``quant_algo`` to whatever ``--quantization`` says (:func:`vllm_quantization_method`), and where it builds
the MTP module unquantized whatever the exclusion list says (:func:`vllm_list_overrides`). The hooks
:meth:`~mtp_audit.engines.base.Engine.quantization_method` and :meth:`~mtp_audit.engines.base.Engine.list_overrides`,
reached through :data:`mtp_audit.engines.registry.CHECKPOINT_HOOK_SPECS` without importing the launch package.
"""

from __future__ import annotations

from mtp_audit.checkpoint.heads import MtpQuantOverride

#: vLLM's own quantization method for a ModelOpt checkpoint, by ``quant_algo`` (vLLM 0.33.0; the same
#: overrides exist in 0.20.0, ``modelopt.py:2058-2065`` for MIXED_PRECISION). ``ModelConfig._verify_quantization``
#: (``vllm/config/model.py:1429-1449``) asks every override in turn and assigns the first answer to
#: ``self.quantization``, replacing what ``--quantization`` said: a MIXED_PRECISION checkpoint launched with
#: ``--quantization modelopt_fp4`` (or ``modelopt``) runs ``modelopt_mixed``, whose per-layer
#: ``quantized_layers`` decide each module (``modelopt.py:1748-1800``; a module no entry names is unquantized,
#: :1884).
VLLM_MODELOPT_METHODS: tuple[tuple[str, str, str], ...] = (
    ("MIXED_PRECISION", "modelopt_mixed", "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1658-1664"),
    ("FP4", "modelopt_fp4", "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:776-782"),
    ("MXFP8", "modelopt_mxfp8", "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1236-1242"),
    ("FP8", "modelopt", "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:453-459"),
)
#: Where vLLM lets the checkpoint's answer replace ``--quantization``.
VLLM_OVERRIDE_LOOP = "vllm 0.33.0 vllm/config/model.py:1429-1449 (ModelConfig._verify_quantization)"


def vllm_modelopt_method(quant_algo: str) -> tuple[str, str] | None:
    """``(vLLM quantization method, source)`` that vLLM resolves a ModelOpt ``quant_algo`` to, whatever
    ``--quantization`` names (see :data:`VLLM_MODELOPT_METHODS`); None for an algorithm none of them claims.
    ``"MIXED_PRECISION"`` -> ``"modelopt_mixed"``; ``"NVFP4"`` / ``"W4A16_NVFP4"`` -> ``"modelopt_fp4"``
    (``"FP4" in algo``); exactly ``"FP8"`` -> ``"modelopt"``."""
    a = str(quant_algo or "").upper()
    if a == "MIXED_PRECISION":
        return VLLM_MODELOPT_METHODS[0][1:]
    if "FP4" in a:
        return VLLM_MODELOPT_METHODS[1][1:]
    if "MXFP8" in a:
        return VLLM_MODELOPT_METHODS[2][1:]
    if a == "FP8":
        return VLLM_MODELOPT_METHODS[3][1:]
    return None


def vllm_quantization_method(method: str, quant_algo: str) -> dict[str, str] | None:
    """The checkpoint's ``vllm_method`` fact: for a ModelOpt checkpoint, ``{"method", "source", "replaces_flag"}``
    of the vLLM quantization method it resolves to (:func:`vllm_modelopt_method`), whatever ``--quantization``
    says; ``None`` for another method, no ``quant_algo``, or one no override claims."""
    if method != "modelopt" or not quant_algo:
        return None
    got = vllm_modelopt_method(quant_algo)
    if got is None:
        return None
    return {"method": got[0], "source": got[1], "replaces_flag": VLLM_OVERRIDE_LOOP}


#: Where vLLM builds (part of) the MTP module unquantized whatever the exclusion list says (Qwen3.5 dense and MoE
#: share ``qwen3_5_mtp.py``); read in the named wheel, re-read by ``tests/test_checkpoint_severity.py``.
LIST_OVERRIDES: tuple[MtpQuantOverride, ...] = (
    MtpQuantOverride(
        "vLLM", "0.20.0", "vllm/model_executor/models/qwen3_5_mtp.py", (80, 88),
        ("qwen3.5-moe", "qwen3.5-dense"), ("modelopt",), ("NVFP4",), ("mtp.fc",),
        needle="missing from hf_quant_config.json exclude_modules. Force unquantized.",
        what="mtp.fc is built unquantized for modelopt_fp4 (landed as vLLM PR #38832; the code comment cites the closed #38650); the rest of the MTP module follows "
        "the exclude list",
    ),
)


def vllm_list_overrides() -> tuple[MtpQuantOverride, ...]:
    """vLLM's rows of "build the MTP module unquantized whatever the exclusion list says"
    (:meth:`~mtp_audit.engines.base.Engine.list_overrides`): :data:`LIST_OVERRIDES`."""
    return LIST_OVERRIDES
