"""Per-tensor and per-module facts: which parameter of which module a tensor is, whether a module is
a linear layer, how it is stored (BF16 / NVFP4 / FP8 / ...), and estimated shapes and bytes when no
shard header is at hand.

Format detection from sibling tensors follows ``../shared/research/checkpoint_formats.md`` §4:

- ModelOpt NVFP4: ``weight`` U8 [N, K/2] + ``weight_scale`` F8_E4M3 [N, K/16] + ``weight_scale_2`` F32
  scalar + ``input_scale`` F32 scalar (vLLM ``modelopt.py``, SGLang ``modelopt_quant.py``);
- compressed-tensors NVFP4: ``weight_packed`` + ``weight_scale`` + ``weight_global_scale``
  (+ ``input_global_scale``) (vLLM ``compressed_tensors_w4a4_nvfp4.py``);
- FP8 block (DeepSeek / Qwen): ``weight`` F8_E4M3 + ``weight_scale_inv`` F32 [ceil(N/128), ceil(K/128)]
  (vLLM ``fp8.py``); ModelOpt FP8: ``weight`` F8_E4M3 + ``weight_scale`` F32 scalar;
- GPTQ / AWQ: ``qweight`` I32 + ``qzeros`` + ``scales``; MLX affine: ``weight`` U32 + ``scales`` + ``biases``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any

from mtp_audit.sources.local import TensorInfo

#: Parameter suffixes that belong to a module (everything after the module's dotted path).
PARAM_SUFFIXES = frozenset(
    {
        "weight",
        "bias",
        "weight_scale",
        "weight_scale_inv",
        "weight_scale_2",
        "input_scale",
        "weight_packed",
        "weight_global_scale",
        "input_global_scale",
        "weight_shape",
        "weight_zero_point",
        "qweight",
        "qzeros",
        "scales",
        "biases",
        "g_idx",
        "k_scale",
        "v_scale",
    }
)

#: Suffixes that only exist next to a quantized weight (their presence marks the module quantized).
SCALE_SUFFIXES = frozenset(
    {
        "weight_scale",
        "weight_scale_inv",
        "weight_scale_2",
        "input_scale",
        "weight_global_scale",
        "input_global_scale",
        "qzeros",
        "scales",
        "g_idx",
        "weight_zero_point",
    }
)

#: Formats that mean "stored quantized".
QUANTIZED = frozenset({"NVFP4", "FP8", "INT4", "INT8", "MXFP4", "FP4", "MLX-affine"})

_LINEAR_NAME = re.compile(r"^(?:.*_proj|fc\d?|dense|query_key_value|w[123]|kv_a_proj_with_mqa|in_proj\w*|out_proj)$")
_UNQUANT_DTYPES = {"BF16": "BF16", "F16": "F16", "F32": "F32", "F64": "F64"}
_TORCH_DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32", "half": "F16", "float": "F32"}


def split_param(name: str) -> tuple[str, str]:
    """``"mtp.fc.weight"`` -> ``("mtp.fc", "weight")``; a name without a known parameter suffix is its
    own module with an empty suffix (``"...mlp.gate.e_score_correction_bias"``)."""
    module, _, param = name.rpartition(".")
    if module and param in PARAM_SUFFIXES:
        return module, param
    return name, ""


def module_leaf(module: str) -> str:
    """Last meaningful component of a module path (``"model.mtp_linear_proj.0"`` -> ``"mtp_linear_proj"``)."""
    parts = module.rsplit(".", 2)
    if parts[-1].isdigit() and len(parts) > 1:
        return parts[-2]
    return parts[-1]


@functools.lru_cache(maxsize=4096)
def is_linear_leaf(leaf: str) -> bool:
    """Whether a module's last name component is a projection (``q_proj``, ``fc``, ``w1``, ``dense``...)."""
    return _LINEAR_NAME.match(leaf) is not None


def is_linear(module: str, params: Mapping[str, TensorInfo | None]) -> bool:
    """Whether ``module`` is a linear layer that a weight-quantization scheme would quantize.

    True when it has quantization siblings, or its name is a projection (``*_proj``, ``fc``, ``dense``,
    ``query_key_value``, ``w1/w2/w3``) and its weight (if a header is known) is 2-D. Routers
    (``mlp.gate``, ``shared_expert_gate``), embeddings and LM heads are not counted: ModelOpt and
    compressed-tensors leave them unquantized by design.
    """
    if len(params) > 1 and (SCALE_SUFFIXES.intersection(params) or "qweight" in params or "weight_packed" in params):
        return True
    if "weight" not in params:
        return False
    if not is_linear_leaf(module_leaf(module)):
        return False
    info = params.get("weight")
    return info is None or len(info.shape) == 2


def module_format(params: Mapping[str, TensorInfo | None], torch_dtype: str = "", hint: str = "") -> tuple[str, bool]:
    """How a linear module is stored, read from its tensors.

    Args:
        params: parameter suffix -> header info (``None`` when only the index names the tensor).
        torch_dtype: config ``torch_dtype`` (used for unquantized weights without a header).
        hint: the format the quantization config declares for this module (``"FP8"``, ``"MXFP4"``,
            ``"INT4"``), used only where the tensor names alone cannot tell (a ``weight_scale`` sibling without
            a header is FP8 per tensor, MXFP4 or symmetric INT4 alike; ``weight_zero_point`` is INT4 or INT8).

    Returns:
        ``(format, inferred)``: format is one of ``NVFP4``, ``FP8``, ``INT4``, ``MXFP4``, ``FP4``,
        ``INT8``, ``MLX-affine``, ``BF16``, ``F16``, ``F32`` or ``unquantized``; ``inferred`` is True when
        the weight's dtype was not read from a header (decided from sibling names and config).
    """
    s = set(params)
    w = params.get("weight") or params.get("weight_packed") or params.get("qweight")
    dtype = w.dtype if w is not None else None
    inferred = dtype is None
    if "weight_packed" in s:
        if "weight_global_scale" in s:
            return "NVFP4", inferred
        if hint == "MXFP4" and dtype in (None, "U8"):
            # compressed-tensors mxfp4-pack-quantized: weight_packed uint8 + weight_scale uint8 (E8M0), group 32
            # (vLLM 0.33.0 compressed_tensors/schemes/compressed_tensors_w4a4_mxfp4.py:69-88)
            return "MXFP4", inferred
        return ("INT8" if hint == "INT8" else "INT4"), inferred
    if "qweight" in s:
        return ("INT8" if hint == "INT8" else "INT4"), inferred
    if "weight_scale_2" in s:
        return "NVFP4", inferred
    if "weight_scale_inv" in s:
        return "FP8", inferred
    if "scales" in s and "biases" in s:
        return "MLX-affine", inferred
    if "weight_zero_point" in s and dtype in (None, "I32", "U8", "I8"):
        # asymmetric integer weights (Quark uint4 packs 8 per I32: vLLM 0.33.0 quark_w4a16_int4.py:130-152)
        return ("INT8" if hint == "INT8" or dtype in ("U8", "I8") else "INT4"), inferred
    if "weight_scale" in s:
        return _scaled_format(dtype, hint)
    if dtype is not None:
        if dtype.startswith("F8_"):
            return "FP8", False
        if dtype in ("U8", "F4"):
            return "FP4", False
        if dtype == "I8":
            return "INT8", False
        return _UNQUANT_DTYPES.get(dtype, dtype), False
    return _TORCH_DTYPES.get(torch_dtype.lower(), "unquantized"), True


def _scaled_format(dtype: str | None, hint: str) -> tuple[str, bool]:
    """Format of a weight with a ``weight_scale`` sibling (and no more specific sibling), from its header dtype,
    or from the declared format ``hint`` without a header (FP8 when nothing declares one)."""
    if dtype in ("F8_E4M3", "F8_E5M2"):
        return "FP8", False
    if dtype in ("U8", "F4"):
        return "MXFP4", False
    if dtype == "I32":
        return ("INT8" if hint == "INT8" else "INT4"), False  # packed integers (Quark int4: 8 per I32)
    if dtype == "I8":
        return "INT8", False
    if dtype is None:
        return (hint if hint in ("MXFP4", "INT4", "INT8", "NVFP4", "MXFP8") else "FP8"), True
    return _UNQUANT_DTYPES.get(dtype, dtype), False


def is_quantized(fmt: str) -> bool:
    """Whether ``fmt`` (from :func:`module_format`) is a quantized storage format."""
    return fmt in QUANTIZED


# --- estimates ----------------------------------------------------------------------------------


def _dims(d: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for k, v in d.items():
        if isinstance(v, int) and not isinstance(v, bool):
            out[k] = v
    return out


def linear_shape(module: str, dims: Mapping[str, Any], num_experts: int | None) -> tuple[int, int] | None:
    """Logical ``(out_features, in_features)`` of a linear (or router / embedding) module, derived from
    config dimensions; None when the name or a needed dimension is unknown.

    Shapes follow the loaders named in checkpoint_formats.md §2 and match the DeepSeek-V3 header dump
    (simpx/model-inspect README @ 5894630): e.g. ``eh_proj`` (H, 2H), ``q_b_proj``
    (heads*(nope+rope), q_lora_rank), ``experts.N.down_proj`` (H, moe_intermediate_size). The module name enters
    only as :func:`shape_key` (:class:`Shapes` answers many modules of one config from that key).
    """
    return _shape_of(shape_key(module), _dims(dims), dims.get("attn_output_gate") is True, num_experts)


def shape_key(module: str) -> tuple[str, bool, bool]:
    """All that :func:`linear_shape` reads of a module name: its leaf (:func:`module_leaf`), whether it sits inside
    routed experts (``.experts.`` in the name or at its end), whether inside a shared expert."""
    return module_leaf(module), ".experts." in module + ".", "shared_expert" in module


class Shapes:
    """:func:`linear_shape` for the modules of one config (``dims``, ``num_experts``), each answer computed once per
    :func:`shape_key` (788 MTP modules of DeepSeek-V3 have 13 keys): the same answers, without filtering ``dims`` and
    deriving the shape again per module."""

    def __init__(self, dims: Mapping[str, Any], num_experts: int | None) -> None:
        self._args = (_dims(dims), dims.get("attn_output_gate") is True, num_experts)
        self._memo: dict[tuple[str, bool, bool], tuple[int, int] | None] = {}

    def linear(self, module: str) -> tuple[int, int] | None:
        """``linear_shape(module, dims, num_experts)``."""
        return self.of(shape_key(module))

    def of(self, key: tuple[str, bool, bool]) -> tuple[int, int] | None:
        """``linear_shape`` of a module whose :func:`shape_key` is ``key``."""
        if key in self._memo:
            return self._memo[key]
        got = self._memo[key] = _shape_of(key, *self._args)
        return got


def _shape_of(key: tuple[str, bool, bool], d: Mapping[str, int], gate: bool,
              num_experts: int | None) -> tuple[int, int] | None:
    """:func:`linear_shape` of a module with :func:`shape_key` ``key``, from the integer dimensions ``d``
    (:func:`_dims`) and whether ``attn_output_gate`` is true."""
    leaf, in_experts, in_shared = key
    h = d.get("hidden_size")
    if h is None:
        return None
    nh = d.get("num_attention_heads")
    hd = d.get("head_dim") or (h // nh if nh else None)
    nkv = d.get("num_key_value_heads", nh)
    mi = d.get("moe_intermediate_size")
    si = d.get("shared_expert_intermediate_size") or (mi * d["n_shared_experts"] if mi and d.get("n_shared_experts") else None)
    inter = mi if in_experts else si if in_shared else d.get("intermediate_size")
    if leaf in ("gate_proj", "up_proj", "w1", "w3"):
        return (inter, h) if inter else None
    if leaf in ("down_proj", "w2"):
        return (h, inter) if inter else None
    if leaf in ("eh_proj", "fc", "input_proj", "mtp_linear_proj"):
        return (h, 2 * h)
    ql, kvl = d.get("q_lora_rank"), d.get("kv_lora_rank")
    nope, rope, vh = d.get("qk_nope_head_dim"), d.get("qk_rope_head_dim"), d.get("v_head_dim")
    if leaf == "q_a_proj" and ql:
        return (ql, h)
    if leaf == "q_b_proj" and ql and nh and nope is not None and rope is not None:
        return (nh * (nope + rope), ql)
    if leaf == "kv_a_proj_with_mqa" and kvl and rope is not None:
        return (kvl + rope, h)
    if leaf == "kv_b_proj" and kvl and nh and nope is not None and vh:
        return (nh * (nope + vh), kvl)
    if leaf == "q_proj" and nh and hd:
        return (nh * hd * (2 if gate else 1), h)
    if leaf in ("k_proj", "v_proj") and nkv and hd:
        return (nkv * hd, h)
    if leaf == "o_proj" and nh:
        if vh and kvl:
            return (h, nh * vh)
        return (h, nh * hd) if hd else None
    if leaf == "gate" and num_experts:
        return (num_experts, h)
    if leaf == "shared_expert_gate":
        return (1, h)
    if leaf in ("embed_tokens", "head", "lm_head") and d.get("vocab_size"):
        return (d["vocab_size"], h)
    return None


def vector_len(module: str, param: str, dims: Mapping[str, Any], num_experts: int | None) -> int | None:
    """Length of a 1-D tensor (norm weights, biases, router bias) from config dimensions, or None."""
    d = _dims(dims)
    leaf = module_leaf(module)
    if param == "" and module.endswith("e_score_correction_bias"):
        return num_experts
    if param == "bias":
        shape = linear_shape(module, dims, num_experts)
        return shape[0] if shape else None
    if param != "weight" or "norm" not in leaf:
        return None
    nh = d.get("num_attention_heads")
    hd = d.get("head_dim") or (d["hidden_size"] // nh if nh and d.get("hidden_size") else None)
    if leaf == "q_a_layernorm":
        return d.get("q_lora_rank")
    if leaf == "kv_a_layernorm":
        return d.get("kv_lora_rank")
    if leaf in ("q_norm", "k_norm"):
        return hd
    return d.get("hidden_size")


_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "unquantized": 2}


def estimate_module_bytes(
    shape: tuple[int, int],
    fmt: str,
    params: set[str] | frozenset[str],
    *,
    block: tuple[int, ...] | None = None,
    group_size: int | None = None,
) -> int:
    """Bytes a linear module of logical ``shape`` takes when stored as ``fmt``.

    NVFP4: packed weight ``out*in/2`` + FP8 scales ``out*in/16`` + 4 bytes per F32 scalar sibling present
    (``weight_scale_2``, ``input_scale``, ``weight_global_scale``, ``input_global_scale``); FP8 block:
    ``out*in`` + F32 ``ceil(out/b0)*ceil(in/b1)``; FP8 per-tensor: ``out*in`` + 4 per scalar; INT4:
    ``out*in/2`` + F16 scales per group; unquantized: 2 bytes (BF16/F16) or 4 (F32) per element.
    ``bias`` siblings are not included.
    """
    o, i = shape
    n = o * i
    if fmt == "NVFP4":
        gs = group_size if group_size and group_size > 0 else 16
        scalars = sum(1 for p in ("weight_scale_2", "input_scale", "weight_global_scale", "input_global_scale") if p in params)
        return math.ceil(n / 2) + math.ceil(n / gs) + 4 * scalars
    if fmt == "FP8":
        if "weight_scale_inv" in params:
            b0, b1 = block[:2] if block and len(block) >= 2 and min(block[:2]) > 0 else (128, 128)
            return n + 4 * math.ceil(o / b0) * math.ceil(i / b1)
        return n + 4 * sum(1 for p in ("weight_scale", "input_scale") if p in params)
    if fmt in ("INT4", "MXFP4", "FP4"):
        gs = group_size if group_size and group_size > 0 else (32 if fmt == "MXFP4" else 128)
        return math.ceil(n / 2) + math.ceil(n / gs) * (1 if fmt == "MXFP4" else 2)
    if fmt == "INT8":
        return n
    return n * _BYTES.get(fmt, 2)


def bytes_if_quantized(shape: tuple[int, int], fmt: str, *, block: tuple[int, ...] | None, group_size: int | None) -> int:
    """Bytes of a linear module of ``shape`` had it been stored as ``fmt`` with that format's usual
    siblings (NVFP4: ``weight_scale`` + ``weight_scale_2`` + ``input_scale``; FP8 block: ``weight_scale_inv``
    when ``block`` is given, else per-tensor ``weight_scale``)."""
    if fmt == "NVFP4":
        params = frozenset({"weight", "weight_scale", "weight_scale_2", "input_scale"})
    elif fmt == "FP8":
        params = frozenset({"weight", "weight_scale_inv"}) if block else frozenset({"weight", "weight_scale"})
    else:
        params = frozenset({"weight"})
    return estimate_module_bytes(shape, fmt, params, block=block, group_size=group_size)
