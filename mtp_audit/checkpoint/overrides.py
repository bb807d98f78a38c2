"""Engine code that ignores a checkpoint's quantization exclude list for the MTP module: ONE data table.

An exclude list that does not cover an MTP linear stored unquantized makes an engine that trusts the list
build that module quantized, and the BF16 weight then fails to load (or loads as garbage): MTP007 is an error.
Some engines know this and build the MTP module (or part of it) unquantized for one architecture and one
quantization method whatever the list says; then the same checkpoint loads on that engine, and MTP007 is a
warning naming it. Every row was read in the named engine release (wheel from PyPI, file and line numbers of
that release); ``tests/test_checkpoint_overrides.py`` re-reads the cited lines from the real wheels.

Nothing here reads files.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class MtpQuantOverride:
    """One engine's "build the MTP module unquantized" rule.

    Attributes:
        engine: ``"SGLang"`` or ``"vLLM"``.
        version: the release the lines were read in (``"0.5.23"``).
        file: path inside the wheel (``"sglang/srt/models/qwen3_5_mtp.py"``).
        lines: ``(first, last)`` line of the override in that release.
        families: :data:`mtp_audit.checkpoint.layouts.LAYOUTS` family ids it applies to.
        methods: quantization methods it applies to (:attr:`QuantScheme.method`).
        algos: weight formats it applies to (:attr:`QuantScheme.algo`).
        covers: fnmatch patterns of the MTP modules it builds unquantized (``("mtp.*",)`` = the whole
            module; ``("mtp.fc",)`` = only the fc projection).
        needle: text that the cited lines contain (checked against the wheel by the tests).
        what: one line saying what the code does.
    """

    engine: str
    version: str
    file: str
    lines: tuple[int, int]
    families: tuple[str, ...]
    methods: tuple[str, ...]
    algos: tuple[str, ...]
    covers: tuple[str, ...]
    needle: str
    what: str

    @property
    def where(self) -> str:
        """``"SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69"``."""
        a, b = self.lines
        return f"{self.engine} {self.version} {self.file}:{a}" + (f"-{b}" if b != a else "")

    def applies(self, family: str | None, method: str, algo: str) -> bool:
        """Whether the override runs for this family, quantization method and weight format."""
        return family in self.families and method in self.methods and algo in self.algos

    def covers_module(self, module: str) -> bool:
        """Whether the override builds ``module`` unquantized."""
        return any(fnmatch.fnmatchcase(module, p) for p in self.covers)


#: The table. Qwen3.5 dense and MoE share ``qwen3_5_mtp.py`` in both engines.
MTP_QUANT_OVERRIDES: tuple[MtpQuantOverride, ...] = (
    MtpQuantOverride(
        "SGLang", "0.5.23", "sglang/srt/models/qwen3_5_mtp.py", (65, 69),
        ("qwen3.5-moe", "qwen3.5-dense"), ("modelopt",), ("NVFP4",), ("mtp.*",),
        needle='quant_config.get_name() == "modelopt_fp4"',
        what="_mtp_quant_config returns None for a serialized modelopt_fp4 checkpoint: the whole MTP module is "
        "built BF16, whatever exclude_modules says",
    ),
    MtpQuantOverride(
        "vLLM", "0.20.0", "vllm/model_executor/models/qwen3_5_mtp.py", (80, 88),
        ("qwen3.5-moe", "qwen3.5-dense"), ("modelopt",), ("NVFP4",), ("mtp.fc",),
        needle="missing from hf_quant_config.json exclude_modules. Force unquantized.",
        what="mtp.fc is built unquantized for modelopt_fp4 (landed as vLLM PR #38832; the code comment cites the closed #38650); the rest of the MTP module follows "
        "the exclude list",
    ),
)


def overrides_for(family: str | None, method: str, algo: str) -> list[MtpQuantOverride]:
    """The table rows that apply to a checkpoint of ``family`` quantized with ``method`` / ``algo``."""
    return [o for o in MTP_QUANT_OVERRIDES if o.applies(family, method, algo)]
