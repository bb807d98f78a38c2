"""GGUF checkpoints (llama.cpp): which files form one model, and the MTP facts their headers give.

A GGUF model is one file, or a split set ``NAME-0000k-of-0000n.gguf`` (``llama_split_path`` in llama.cpp:
``%s-%05d-of-%05d.gguf``; each part carries ``split.no``, ``split.count`` and ``split.tensors.count``). An
MTP-only sidecar ``mtp-NAME.gguf`` (written by ``convert_hf_to_gguf.py --mtp``, ggml-org/llama.cpp PR #25589)
holds the head alone and is passed to llama-server with ``-md``; ``mmproj*.gguf`` files are vision
projectors and are not models.

The MTP facts (gguf-py 0.19.0 ``constants.py``: key ``{arch}.nextn_predict_layers`` at line 129, tensors
``blk.{bid}.nextn.*`` at lines 1383-1388): ``{arch}.block_count`` counts the trunk *and* the k MTP blocks,
which are the last k (``blk.{block_count-k}`` .. ``blk.{block_count-1}``); each carries ``nextn.eh_proj``,
``nextn.enorm``, ``nextn.hnorm``, ``nextn.shared_head_norm`` and optionally ``nextn.embed_tokens`` and
``nextn.shared_head_head`` (shared with the trunk when absent), plus its ordinary attention/FFN tensors.
Gemma-4 assistant drafters add ``nextn.pre_projection`` / ``nextn.post_projection``. NVFP4 tensors (GGML
type 40) may carry sibling ``.scale`` / ``.input_scale`` tensors (llama.cpp PR #23563).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.checkpoint.layouts import HF_TO_GGUF, hf_hallmarks  # noqa: F401 - the mapping's home is layouts
from mtp_audit.sources.gguf import GGML_TYPES, GGUFHeader, SkippedArray

#: ``NAME-0000k-of-0000n.gguf``.
SPLIT_RE = re.compile(r"^(?P<base>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")

#: ``blk.N.nextn.PART.PARAM``.
NEXTN_RE = re.compile(r"^blk\.(\d+)\.nextn\.([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)$")
BLOCK_RE = re.compile(r"^blk\.(\d+)\.")

#: Tensors every MTP block needs (llama.cpp loads them as required for the draft-mtp graph; ik_llama.cpp
#: PR #1745 and ollama #16282 show exactly these four in real Qwen3.5/3.6 files).
REQUIRED_NEXTN = ("eh_proj", "enorm", "hnorm", "shared_head_norm")
OPTIONAL_NEXTN = ("embed_tokens", "shared_head_head", "pre_projection", "post_projection")

#: Architectures of MTP drafter GGUFs whose head is a small model of its own rather than ``blk.N.nextn.*`` tensors:
#: Gemma-4 assistants (``gemma4_assistant``: the public GGUF schema, ggml-org/llama.cpp #23161 and ik_llama.cpp PR #1783;
#: ``gemma4-assistant``: ggml-org/llama.cpp PR #28183, elizaOS/llama.cpp PR #32; ``gemma4_mtp``: ik_llama.cpp PR #1744).
DRAFTER_ARCHS = frozenset({"gemma4_assistant", "gemma4-assistant", "gemma4_mtp"})

#: Tensor names that mark a Gemma-4 assistant drafter (``pre_projection`` / ``post_projection`` as the converters write
#: them: ``mtp_pre_proj.weight`` in ik_llama.cpp PR #1925, ``assistant.pre_projection`` in turbo-tan/llama.cpp-tq3
#: PR #27, ``nextn.pre_projection`` in lemonade-sdk/lemonade #2166).
DRAFTER_TENSOR_RE = re.compile(r"(^|\.)(mtp_pre_proj|mtp_post_proj|pre_projection|post_projection)\.weight$")

#: Parameter suffixes that are scales of a quantized weight, not weights.
SCALE_PARAMS = ("scale", "input_scale")

#: GGML types of 4 bits or fewer per weight (block bytes * 8 / block size <= 4.5).
LOW_BIT = frozenset(i for i, (_, block, size) in GGML_TYPES.items() if block > 1 and size * 8 / block <= 4.5)


@dataclass
class GGUFModel:
    """One model of a GGUF folder: its part files and what their headers say.

    Attributes:
        name: the model's file name (the first part's name for split sets).
        files: the part files in order.
        headers: file -> header for every part read.
        kind: ``"model"`` or ``"sidecar"`` (an MTP-only ``mtp-*.gguf``).
        expected_parts: ``n`` of ``-of-0000n`` (1 for a single file).
    """

    name: str
    files: list[str]
    headers: dict[str, GGUFHeader] = field(default_factory=dict)
    kind: str = "model"
    expected_parts: int = 1

    @property
    def first(self) -> GGUFHeader | None:
        """The first part's header (the one holding the model's metadata)."""
        return self.headers.get(self.files[0]) if self.files else None

    @property
    def arch(self) -> str | None:
        """``general.architecture``."""
        return self.first.architecture if self.first else None

    def kv(self, key: str) -> Any:
        """A metadata value of the first part, None when absent or an array that was not built."""
        head = self.first
        value = head.kv.get(key) if head else None
        return None if isinstance(value, SkippedArray) else value

    def arch_int(self, suffix: str) -> int | None:
        """``{arch}.{suffix}`` as an int (None when absent or not an integer)."""
        value = self.kv(f"{self.arch}.{suffix}") if self.arch else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def tensors(self) -> list[tuple[str, Any]]:
        """``(file, tensor info)`` over every part read, in order."""
        return [(f, t) for f in self.files if f in self.headers for t in self.headers[f].tensors]


@dataclass
class NextnBlock:
    """The MTP tensors of one block.

    Attributes:
        block: the block index N of ``blk.N``.
        parts: nextn part (``eh_proj``) -> GGML type name of its ``.weight``.
        scales: nextn part -> the scale params present (``["scale", "input_scale"]``).
        nbytes: bytes of the block's nextn tensors.
        block_tensors: every ``blk.N.*`` tensor (the MTP decoder's attention/FFN included).
        block_bytes: their bytes.
    """

    block: int
    parts: dict[str, str] = field(default_factory=dict)
    scales: dict[str, list[str]] = field(default_factory=dict)
    nbytes: int = 0
    block_tensors: int = 0
    block_bytes: int = 0

    @property
    def missing(self) -> list[str]:
        """Required nextn parts this block lacks."""
        return [p for p in REQUIRED_NEXTN if p not in self.parts]


def group_models(names: list[str]) -> tuple[list[GGUFModel], list[str]]:
    """Group ``.gguf`` file names into models (split sets gathered, sidecars marked).

    Returns:
        ``(models, skipped)``: skipped are vision projectors (``mmproj*``).
    """
    sets: dict[str, dict[int, str]] = {}
    counts: dict[str, int] = {}
    models: list[GGUFModel] = []
    skipped: list[str] = []
    for rel in sorted(names):
        base = rel.rsplit("/", 1)[-1]
        if base.lower().startswith("mmproj"):
            skipped.append(rel)
            continue
        m = SPLIT_RE.match(rel)
        if m:
            sets.setdefault(m["base"], {})[int(m["no"])] = rel
            counts[m["base"]] = max(counts.get(m["base"], 0), int(m["count"]))
            continue
        models.append(GGUFModel(rel, [rel], kind=_kind(base)))
    for stem, parts in sets.items():
        files = [parts[k] for k in sorted(parts)]
        models.append(GGUFModel(files[0], files, kind=_kind(stem.rsplit("/", 1)[-1]), expected_parts=counts[stem]))
    return sorted(models, key=lambda m: m.name), skipped


def _kind(base: str) -> str:
    return "sidecar" if base.lower().startswith("mtp-") else "model"


def drafter_kind(model: GGUFModel) -> str | None:
    """``"gemma4-assistant"`` when the model is a Gemma-4 MTP drafter (its architecture, an ``{arch}.assistant.type``
    of ``mtp`` (turbo-tan/llama.cpp-tq3 PR #27), or its pre/post projection tensors), else None."""
    arch = model.arch or ""
    marked = model.kv(f"{arch}.assistant.type") == "mtp" or any(DRAFTER_TENSOR_RE.search(t.name) for _, t in model.tensors())
    return "gemma4-assistant" if arch in DRAFTER_ARCHS or marked else None


def nextn_blocks(model: GGUFModel) -> dict[int, NextnBlock]:
    """Every block that has ``blk.N.nextn.*`` tensors, with their parts, types, scales and bytes."""
    blocks: dict[int, NextnBlock] = {}
    for _, t in model.tensors():
        m = NEXTN_RE.match(t.name)
        if not m:
            continue
        b = blocks.setdefault(int(m[1]), NextnBlock(int(m[1])))
        part, param = m[2], m[3]
        b.nbytes += t.nbytes
        if param in SCALE_PARAMS:
            b.scales.setdefault(part, []).append(param)
        elif param == "weight":
            b.parts[part] = t.type_name
    if blocks:
        for _, t in model.tensors():
            m = BLOCK_RE.match(t.name)
            if m and int(m[1]) in blocks:
                blocks[int(m[1])].block_tensors += 1
                blocks[int(m[1])].block_bytes += t.nbytes
    return dict(sorted(blocks.items()))


def nvfp4_nextn(model: GGUFModel, blocks: dict[int, NextnBlock]) -> list[str]:
    """NVFP4 nextn weights that carry ``.scale`` / ``.input_scale`` siblings (``blk.N.nextn.PART``)."""
    return [f"blk.{b.block}.nextn.{p}" for b in blocks.values() for p, t in b.parts.items()
            if t == "NVFP4" and b.scales.get(p)]


def type_counts(blocks: dict[int, NextnBlock]) -> dict[str, int]:
    """GGML type name -> number of nextn weights of that type."""
    return dict(sorted(Counter(t for b in blocks.values() for t in b.parts.values()).items()))


def low_bit_parts(blocks: dict[int, NextnBlock]) -> list[str]:
    """nextn projection weights stored at 4 bits or fewer (``blk.N.nextn.PART (TYPE)``)."""
    low = {GGML_TYPES[i][0] for i in LOW_BIT}
    return [f"blk.{b.block}.nextn.{p} ({t})" for b in blocks.values() for p, t in b.parts.items()
            if t in low and not p.endswith("norm")]


@dataclass
class SplitProblem:
    """A split set that llama.cpp cannot load as is (``llama_model_loader`` checks ``split.count`` and
    opens every ``-0000k-of-0000n`` part)."""

    model: str
    problem: str


def split_problems(model: GGUFModel) -> list[SplitProblem]:
    """Missing parts, a ``split.count`` that disagrees with the names, a ``split.no`` out of place, or a
    ``split.tensors.count`` that differs from the tensors of all parts together."""
    out: list[SplitProblem] = []
    if model.expected_parts <= 1 and len(model.files) <= 1:
        return out
    present = {int(m["no"]) for f in model.files if (m := SPLIT_RE.match(f))}
    missing = [k for k in range(1, model.expected_parts + 1) if k not in present]
    if missing:
        out.append(SplitProblem(model.name, f"{len(missing)} of {model.expected_parts} parts missing "
                                            f"(part {', '.join(str(k) for k in missing[:5])})"))
    for f in model.files:
        h = model.headers.get(f)
        m = SPLIT_RE.match(f)
        if h is None or m is None:
            continue
        count, no = h.kv.get("split.count"), h.kv.get("split.no")
        if count is not None and count != model.expected_parts:
            out.append(SplitProblem(f, f"split.count is {count}, the file name says {model.expected_parts}"))
        if no is not None and no != int(m["no"]) - 1:
            out.append(SplitProblem(f, f"split.no is {no}, the file name says part {int(m['no'])} (split.no {int(m['no']) - 1})"))
    total = model.kv("split.tensors.count")
    if isinstance(total, int) and not missing and len(model.headers) == len(model.files):
        n = sum(len(h.tensors) for h in model.headers.values())
        if n != total:
            out.append(SplitProblem(model.name, f"split.tensors.count is {total:,}, the parts hold {n:,} tensors"))
    return out


#: Hugging Face MTP module (its last dotted parts) -> the GGUF nextn part llama.cpp's converter writes for it.
