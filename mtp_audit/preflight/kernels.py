"""What the preflight asks the engine that runs a launch about its FP4 kernels: :class:`KernelChecks`.

The preflight says what the machine is (GPUs, driver, toolkit, packages: :data:`mtp_audit.preflight.analyze.MACHINE_CHECKS`).
Which FP4 GEMM and MoE kernels run on it, and what each needs, is the engine's own knowledge: each engine package
implements :class:`KernelChecks` (``mtp_audit/engines/<engine>/kernels.py``) and hands it out through its
:meth:`mtp_audit.engines.base.Engine.kernels` hook. The defaults here say "this engine has nothing to add": no
checks, no FP4 quantization names, neutral wording for the machine findings that mention the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from mtp_audit.preflight import matrix as mx


@dataclass(frozen=True)
class LaunchSyntax:
    """How the preflight reads the few options of an engine's launch command that decide its FP4 kernels (the
    engine's ``mtp-audit launch`` parser reads the whole command against a release; the preflight needs only these).

    Attributes:
        flags: canonical option -> the option strings that set it (aliases included).
        bool_flags: options that take no value and are recorded when present.
        underscores: option names may be written with ``_`` for ``-`` (vLLM's ``FlexibleArgumentParser``).
        lowered: canonical options whose values the engine lower-cases with ``-`` turned into ``_``.
        positional_model: the program tokens after which a positional model follows (``("vllm", "serve")``).
        model_label: how the command names the model (``"--model-path"``), for the gaps about it.
    """

    flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    bool_flags: tuple[str, ...] = ()
    underscores: bool = False
    lowered: tuple[str, ...] = ()
    positional_model: tuple[str, ...] = ()
    model_label: str = "model"


@dataclass(frozen=True)
class KernelChecks:
    """One engine's FP4 kernel knowledge, as the preflight uses it.

    Attributes:
        label: the engine as a person names it (``"SGLang"``).
        package: the distribution whose installed version is the engine's (``"sglang"``), or ``None``.
        checks: functions of the preflight's :class:`~mtp_audit.preflight.analyze.Context`, run after the machine's
            own checks; each adds findings (the rules an engine has alone are declared in its package,
            ``mtp_audit/engines/<engine>/preflight_rules.py``; shared ones in :mod:`mtp_audit.preflight.rules`) and gaps.
        fp4_quantizations: ``--quantization`` values of this engine that load FP4 weights.
        fp4_formats: ``--quantization`` values of this engine whose name does not say the FP4 format they load ->
            that format (``"mxfp4"`` / ``"nvfp4"``), for the checks off NVIDIA that depend on the format (the AMD FP4
            path, NVFP4 weights on an NPU); a name holding ``mxfp4`` or ``fp4`` says it.
        fp4_flags: options whose presence alone says the launch means FP4 (SGLang's ``--fp4-gemm-backend``).
        probe_gemm_flag: the option naming the dense FP4 GEMM backend the ``--probe`` should try, if any.
        device_choice: how the engine picks FP4 kernels on GPUs of different compute capabilities (MTP202).
        torch_pin_holder: what pins the torch this engine needs (MTP203's remediation).
        memory_remediation: how to size memory on a GPU that reports none (MTP225's remediation).
        probe_mismatch_remediation: which backend to switch to when the probe's FP4 GEMM is wrong (MTP227).
        syntax: how the preflight reads the engine's launch command (:class:`LaunchSyntax`).
        default_flag_checks: those of ``checks`` that judge the backends a launch's flags pick: without a launch
            they can only say what a launch with the engine's default flags would pick, a consequence of a command
            nobody gave, so the preflight turns what they find into information.
        platform_checks: platform value (``"rocm"``, ``"cann"``, ``"xpu"``:
            :data:`mtp_audit.preflight.platforms.LABELS` keys) -> functions of the preflight's context run off NVIDIA,
            after the platform's own checks (:mod:`mtp_audit.preflight.vendors`): what this engine does there (its
            FP4 path per AMD gfx target, its NPU or XPU quantization support). Their rules are declared in
            :mod:`mtp_audit.preflight.rules` too. On Intel XPU / Gaudi a check returns ``True`` when it answered the
            launch's FP4 question; a launch loading FP4 weights that no check answers gets a blocking FP4 gap.
        fp4_kernel_packages: the distributions, besides :attr:`package`, whose compiled kernels the engine's FP4 path
            loads on NVIDIA, as groups of alternatives (``(("sgl-kernel", "sglang-kernel"), ("flashinfer-python",))``:
            one of the first two and the third); each engine cites its release's ``Requires-Dist`` lines. The
            native-FP4 verdict "capable" needs the engine's release and one installed distribution of each group
            (:func:`mtp_audit.preflight.analyze.check_fp4_kernel_evidence`); ``package`` ``None`` means the preflight
            reads no release of this engine from a machine, so its FP4 verdict there is never "capable".
        fp4_cubin_packages: the distributions whose shared objects' SM targets this engine's checks read (SGLang's
            MTP208); installed but not read (an env dump lists versions only) is a non-blocking gap.
    """

    label: str = "the engine"
    package: str | None = None
    checks: tuple[Callable[[Any], None], ...] = ()
    fp4_quantizations: tuple[str, ...] = ()
    fp4_formats: Mapping[str, str] = field(default_factory=dict)
    fp4_flags: tuple[str, ...] = ()
    probe_gemm_flag: str | None = None
    device_choice: str = "the engine chooses FP4 kernels from the compute capability of one device"
    torch_pin_holder: str = "engine's wheel"
    memory_remediation: str = "lower the engine's GPU memory fraction (e.g. 0.7)"
    probe_mismatch_remediation: str = "switch the dense FP4 GEMM backend and re-run --probe"
    syntax: LaunchSyntax = field(default_factory=LaunchSyntax)
    default_flag_checks: tuple[Callable[[Any], None], ...] = ()
    platform_checks: Mapping[str, tuple[Callable[[Any], None], ...]] = field(default_factory=dict)
    fp4_kernel_packages: tuple[tuple[str, ...], ...] = ()
    fp4_cubin_packages: tuple[str, ...] = ()

    def version(self, ctx: Any) -> Version | None:
        """The engine's release: the ``version`` its own analyzer gives (``ctx.engine_facts``), else the installed
        :attr:`package`'s (machine facts); ``None`` when neither says."""
        given = ctx.engine_fact("version")
        parsed = mx.parse_version(str(given)) if given else None
        return parsed or (ctx.version(self.package) if self.package else None)

    def summary(self, ctx: Any) -> dict[str, str | None]:
        """Headline values of ``facts["preflight"]["summary"]`` this engine adds (its version, the backends the
        launch resolves to); ``{}`` by default."""
        return {}

    def flag_semantics(self, ctx: Any, release_facts: Mapping[str, Any] | None, ask_installed: bool,
                       matrix_source: str) -> str:
        """Where the meaning of the launch's FP4 options comes from (the summary's ``flag_semantics``), after
        putting what the engine's own analyzer says on ``ctx`` when it can. ``release_facts``: the engine
        analyzer's facts for the release the launch runs, when the caller has them; ``ask_installed``: whether the
        installed engine may be analysed; ``matrix_source``: the capability matrix's label (the default answer)."""
        return matrix_source
