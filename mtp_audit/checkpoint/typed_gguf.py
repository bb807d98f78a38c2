"""The GGUF part of the checkpoint analyzer's typed answer (:mod:`mtp_audit.checkpoint.typed`): the models of a GGUF
audit and their nextn blocks (:attr:`mtp_audit.checkpoint.typed.CheckpointAnswer.gguf_models`), read from a report's
``facts["checkpoint"]["gguf"]`` document by :meth:`mtp_audit.checkpoint.typed.CheckpointAnswer.from_doc`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtp_audit.valueclass import Value


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class NextnBlock(Value):
    """One ``blk.N.nextn.*`` block of a GGUF model.

    Attributes:
        block: the block number ``N``.
        parts: nextn part -> tensor type (``{"eh_proj": "NVFP4", "enorm": "F32"}``).
        scales: nextn part -> whether / which scale siblings it has (as the GGUF audit writes them).
        block_bytes: bytes of the whole block (its nextn parts and the block's own layer).
    """

    block: int
    parts: Mapping[str, str]
    scales: Mapping[str, Any]
    block_bytes: int


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class GgufModel(Value):
    """One GGUF model of a GGUF audit (``facts["checkpoint"]["gguf"]["models"][i]``).

    Attributes:
        name: the file (first part of a split set) as the report names it.
        kind: ``"model"`` or a sidecar kind.
        architecture: ``general.architecture``, or ``None``.
        nextn_predict_layers: ``{arch}.nextn_predict_layers``, or ``None`` when absent.
        drafter: the drafter kind of an assistant model (Gemma-4 ``"assistant"``), else ``None``.
        tensor_types: tensors per GGML type (``{"NVFP4": 720, "F32": 181}``).
        blocks: its nextn blocks, in the document's order.
    """

    name: str
    kind: str | None
    architecture: str | None
    nextn_predict_layers: int | None
    drafter: str | None
    tensor_types: Mapping[str, int]
    blocks: tuple[NextnBlock, ...]

    @property
    def head_bytes(self) -> int:
        """Bytes of the nextn blocks (0: none)."""
        return sum(b.block_bytes for b in self.blocks)
