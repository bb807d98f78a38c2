"""What a quantization config declares for ONE module: its storage format (NVFP4, MXFP4, FP8, MXFP8, INT4,
INT8 or BF16), group size, zero points and activation precision, read from the config's own fields, never
guessed from tensor names.

Pure functions over parsed JSON; :class:`~mtp_audit.checkpoint.config.QuantScheme` holds the result per
dialect and resolves a module name against it (:meth:`QuantScheme.declared_format`). How each engine reads
the same fields (the sources of the rules below):

- ModelOpt ``quant_algo`` names (``NVFP4``, ``W4A16_NVFP4``, ``FP8``, ``FP8_PB_WO``, ``MXFP8``...): vLLM 0.33.0
  ``model_executor/layers/quantization/modelopt.py:150-160`` (``LINEAR_ALGOS``); a MIXED_PRECISION layer absent
  from ``quantized_layers`` is left unquantized (same file, :1884 "Layer not in quantized_layers").
- compressed-tensors ``config_groups.*.{targets,weights}``: ``num_bits``, ``type`` (int / float), ``group_size``,
  ``symmetric`` (false = zero points), targets matched as exact names, ``re:`` regexes or module class names
  (vLLM 0.33.0 ``compressed_tensors/utils.py`` ``find_matched_target``).
- Quark ``global_quant_config`` / ``layer_quant_config`` / ``exclude``: ``weight.dtype`` (``int4``, ``uint4``,
  ``fp8_e4m3``, ``fp4``...), ``group_size``, ``symmetric`` (vLLM 0.33.0 ``quantization/quark/quark.py:724-808``
  ``_find_matched_config``: layer config first, then the global one; ``quark/utils.py:69-90`` W4A16 fields).
- GPTQ / AWQ ``bits`` (``w_bit``), ``group_size`` (``q_group_size``), ``sym`` / ``zero_point``, GPTQ
  ``dynamic`` ``+:`` overrides and ``-:`` skips.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtp_audit.valueclass import Value

__all__ = ["DeclaredFormat", "BF16", "algo_format", "weight_spec_format", "declared_bytes"]


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class DeclaredFormat(Value):
    """How a quantization config says one linear module is stored.

    Attributes:
        format: ``"NVFP4"``, ``"MXFP4"``, ``"FP8"``, ``"MXFP8"``, ``"INT4"``, ``"INT8"`` or ``"BF16"`` (unquantized).
        group_size: elements per scale group (NVFP4 16, MXFP4/MXFP8 32, INT4 e.g. 128); None = per tensor or
            per channel.
        zero_point: asymmetric integer quantization: a zero point per group is stored beside the scale.
        activations: ``"A16"`` (weight only), ``"A8"``, ``"A4"`` or ``""`` when the config does not say.
        block: FP8 block shape (``(128, 128)``) for block-scaled FP8.
        algo: the config's own name for it (``"W4A16_NVFP4"``, ``"uint4 per_group"``), for messages.
        pointer: file and JSON pointer of the entry that decided (``"config.json#/quantization_config/exclude"``).
    """

    format: str
    group_size: int | None = None
    zero_point: bool = False
    activations: str = ""
    block: tuple[int, int] | None = None
    algo: str = ""
    pointer: str = ""

    @property
    def quantized(self) -> bool:
        """Whether the module is stored quantized."""
        return self.format != "BF16"

    def label(self) -> str:
        """``"INT4 W4A16, group 128, zero points"``, ``"NVFP4 W4A16, group 16"``, ``"FP8 block 128x128"``, ``"BF16"``."""
        if not self.quantized:
            return "BF16"
        head = self.format + (f" W{_bits(self.format)}{self.activations}" if self.activations else "")
        bits = [head]
        if self.block:
            bits.append("block " + "x".join(map(str, self.block)))
        elif self.group_size:
            bits.append(f"group {self.group_size}")
        if self.zero_point:
            bits.append("zero points")
        return ", ".join(bits)


#: Unquantized (excluded, or not named by a config that lists what it quantizes).
BF16 = DeclaredFormat("BF16")


def _bits(fmt: str) -> int:
    return 4 if fmt in ("NVFP4", "MXFP4", "INT4") else 8


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value == int(value) and value > 0 else None


#: ModelOpt ``quant_algo`` -> (format, group size, activations, block). vLLM 0.33.0 modelopt.py:140-156
#: ``LINEAR_ALGOS`` (NVFP4 W4A4, W4A16_NVFP4, FP8 per tensor, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO block, MXFP8).
_MODELOPT_ALGOS: dict[str, tuple[str, int | None, str, tuple[int, int] | None]] = {
    "NVFP4": ("NVFP4", 16, "A4", None),
    "W4A16_NVFP4": ("NVFP4", 16, "A16", None),
    "NVFP4_AWQ": ("NVFP4", 16, "A4", None),
    "W4A8_NVFP4_FP8": ("NVFP4", 16, "A8", None),
    "FP8": ("FP8", None, "A8", None),
    "FP8_PER_CHANNEL_PER_TOKEN": ("FP8", None, "A8", None),
    "FP8_PB_WO": ("FP8", None, "A16", (128, 128)),
    "MXFP8": ("MXFP8", 32, "A8", None),
    "MXFP4": ("MXFP4", 32, "", None),
    "W4A16_AWQ": ("INT4", 128, "A16", None),
    "INT4_AWQ": ("INT4", 128, "A16", None),
    "W4A8_AWQ": ("INT4", 128, "A8", None),
    "INT8_SQ": ("INT8", None, "A8", None),
}


def algo_format(algo: str, group_size: Any = None, pointer: str = "") -> DeclaredFormat | None:
    """The format of a ModelOpt ``quant_algo`` (``"W4A16_NVFP4"`` -> NVFP4 W4A16 group 16); ``group_size`` from the
    entry overrides the default (``FP8_PB_WO`` uses it as the block edge). None for an unknown name."""
    a = str(algo or "").upper()
    if a in ("", "NONE", "UNQUANTIZED", "BF16", "FP16"):
        return DeclaredFormat("BF16", algo=a or "BF16", pointer=pointer) if a else None
    row = _MODELOPT_ALGOS.get(a)
    if row is None:
        return None
    fmt, gs, act, block = row
    g = _int(group_size)
    if block and g:
        block = (g, g)
    elif g and gs is not None:
        gs = g
    return DeclaredFormat(fmt, gs, False, act, block, a, pointer)


def _activation_bits(spec: Any) -> str:
    """``"A16"`` for no input quantization (``None``), ``"A8"`` / ``"A4"`` from a spec's bits or dtype."""
    if spec is None:
        return "A16"
    if isinstance(spec, list):
        spec = spec[0] if spec and isinstance(spec[0], Mapping) else None
        if spec is None:
            return ""
    if not isinstance(spec, Mapping):
        return ""
    dtype = str(spec.get("dtype") or "").lower()
    bits = _int(spec.get("num_bits")) or (4 if "4" in dtype else 8 if "8" in dtype else None)
    return f"A{bits}" if bits else ""


def weight_spec_format(weight: Any, inputs: Any = "?", pointer: str = "") -> DeclaredFormat | None:
    """The format of a compressed-tensors ``weights`` object or a Quark ``weight`` spec (a list: Quark NVFP4,
    first element the FP4 spec). ``inputs`` is the matching activation spec (``None`` = weight only); left at
    ``"?"`` when unknown. None when the spec names no format this module knows (never a guess)."""
    if isinstance(weight, list):
        weight = weight[0] if weight and isinstance(weight[0], Mapping) else None
    if not isinstance(weight, Mapping):
        return None
    dtype = str(weight.get("dtype") or "").lower()
    kind = str(weight.get("type") or "").lower()
    bits = _int(weight.get("num_bits"))
    gs = _int(weight.get("group_size"))
    scale = str(weight.get("scale_format") or weight.get("scale_dtype") or "").lower()
    act = "" if inputs == "?" else _activation_bits(inputs)
    sym = weight.get("symmetric")
    zp = sym is False or (dtype.startswith("uint") and sym is not True)
    if dtype in {"fp4", "fp4_e2m1", "float4_e2m1fn", "mxfp4", "nvfp4"} or (bits == 4 and kind == "float"):
        fmt = "NVFP4" if gs == 16 and "e8m0" not in scale else "MXFP4" if gs == 32 or "e8m0" in scale else None
        return DeclaredFormat(fmt, gs, False, act, None, dtype or "4-bit float", pointer) if fmt else None
    if dtype.startswith("fp8") or dtype.startswith("float8") or (bits == 8 and kind == "float"):
        fmt = "MXFP8" if "e8m0" in scale else "FP8"
        block = weight.get("block_structure")
        blk = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None
        return DeclaredFormat(fmt, gs if fmt == "MXFP8" else None, False, act, blk, dtype or "8-bit float", pointer)
    if dtype in {"int4", "uint4"} or (bits == 4 and kind in ("int", "")):
        return DeclaredFormat("INT4", gs, zp, act, None, dtype or "4-bit int", pointer)
    if dtype in {"int8", "uint8"} or (bits == 8 and kind in ("int", "")):
        return DeclaredFormat("INT8", gs, zp, act, None, dtype or "8-bit int", pointer)
    return None


_BYTES = {"BF16": 2, "F16": 2, "F32": 4}


def declared_bytes(shape: tuple[int, int], fmt: DeclaredFormat) -> int:
    """Bytes a linear module of logical ``(out, in)`` ``shape`` takes stored as ``fmt``, with that format's
    scale tensors:

    - NVFP4: packed weight ``n/2`` + FP8 E4M3 group scales ``n/group`` + F32 ``weight_scale_2`` + F32
      ``input_scale`` unless weight-only (A16);
    - MXFP4: ``n/2`` + one E8M0 byte per 32; MXFP8: ``n`` + one byte per 32;
    - FP8: ``n`` + F32 block scales ``ceil(out/b)*ceil(in/b)`` (block), else one F32 scale (+ one F32
      ``input_scale`` for static A8);
    - INT4: ``n/2`` + 16-bit group scales ``2*n/group`` + packed 4-bit zero points ``n/group/2`` when
      asymmetric (GPTQ/AWQ ``qzeros`` and Quark ``weight_zero_point`` are I32 holding 8 values: vLLM 0.33.0
      ``quark/schemes/quark_w4a16_int4.py:143-152``); per-channel when no group size;
    - INT8: ``n`` + 16-bit scale per group or per output channel (+ 1 byte zero point when asymmetric);
    - BF16: 2 bytes per element.
    """
    o, i = shape
    n = o * i
    f = fmt.format
    if f == "NVFP4":
        return math.ceil(n / 2) + math.ceil(n / (fmt.group_size or 16)) + 4 + (0 if fmt.activations == "A16" else 4)
    if f == "MXFP4":
        return math.ceil(n / 2) + math.ceil(n / (fmt.group_size or 32))
    if f == "MXFP8":
        return n + math.ceil(n / (fmt.group_size or 32))
    if f == "FP8":
        if fmt.block:
            return n + 4 * math.ceil(o / fmt.block[0]) * math.ceil(i / fmt.block[1])
        return n + 4 + (4 if fmt.activations == "A8" else 0)
    if f in ("INT4", "INT8"):
        groups = math.ceil(n / fmt.group_size) if fmt.group_size else o
        data = math.ceil(n / 2) if f == "INT4" else n
        zps = (math.ceil(groups / 2) if f == "INT4" else groups) if fmt.zero_point else 0
        return data + 2 * groups + zps
    return n * _BYTES.get(f, 2)
