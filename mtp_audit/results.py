"""Typed answers a program can act on without parsing text, read from a :class:`~mtp_audit.report.Report`.

- :func:`launch_result` -> :class:`LaunchResult`: the launch verdict as a :class:`LaunchVerdict` enum, the
  corrected command as an argv list and a string, what speculative algorithm really runs, the draft class.
- :func:`checkpoint_facts` -> :class:`CheckpointFacts`: MTP present, layers declared and found, tensors,
  bytes, storage formats.
- :func:`fp4_readiness` -> :class:`Fp4Readiness`: native FP4 on the machine, the compute capabilities,
  the GEMM and MoE backends.
- :func:`apply_config` -> :class:`Configured`: a ``[tool.mtp-audit]`` configuration (a pyproject.toml or a
  settings file) applied to a report as the CLI applies it: ignores, ``fail-on`` and the exit code.

Each reads ``report.facts`` (documented per analyzer in docs/); a report without that analyzer gives ``None``.
"""

from __future__ import annotations

import enum
import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtp_audit.report import Report, Severity, exit_code

__all__ = ["BackendChoice", "CheckpointFacts", "Configured", "Fp4Readiness", "LaunchResult", "LaunchVerdict", "apply_config",
           "checkpoint_facts", "fp4_readiness", "launch_result"]


class LaunchVerdict(str, enum.Enum):
    """The launch verdict (``facts["launch"]["verdict"]``): ``GO``, ``FIX_FIRST`` (an error stops this launch
    or makes it compute garbage), ``COULD_NOT_TELL`` (a blocking gap: never folded into ``GO``) or, for llama.cpp,
    ``GO_WITHOUT_MTP`` (nothing stops the launch, but its MTP head is not used)."""

    GO = "go"
    FIX_FIRST = "fix first"
    COULD_NOT_TELL = "could not tell"
    #: llama.cpp: the launch runs, but the GGUF's MTP head is not used by this command
    GO_WITHOUT_MTP = "go without MTP"


@dataclass(frozen=True)
class LaunchResult:
    """What ``mtp-audit launch`` decided.

    Attributes:
        verdict: go / fix first / could not tell.
        engine: the engine's id: ``"sglang"``, ``"vllm"``, ``"llamacpp"`` or ``"trtllm"``.
        corrected_argv: the corrected command as tokens, ``None`` when no command-line fix is known or needed.
        corrected_command: the same as one shell-quoted line, or ``None``.
        changed_flags: the flags the correction changes.
        speculative_requested: the algorithm or method the command asks for (``"NEXTN"``, ``"deepseek_mtp"``), or ``None``.
        speculative_runs_as: what the engine really runs (``"EAGLE"``, ``"mtp"``), or ``None``.
        draft_class: the draft model class (``"Qwen3_5ForCausalLMMTP"``), or ``None`` when unknown.
        summary: ``facts["launch"]["summary"]`` as it is (headline values in words).
        draft_tokens: tokens the draft proposes per step as the engine resolves them: vLLM ``num_speculative_tokens``,
            TensorRT-LLM ``max_draft_len``, llama.cpp ``--spec-draft-n-max`` as given; ``None`` when not stated.
    """

    verdict: LaunchVerdict
    engine: str
    corrected_argv: tuple[str, ...] | None
    corrected_command: str | None
    changed_flags: tuple[str, ...]
    speculative_requested: str | None
    speculative_runs_as: str | None
    draft_class: str | None
    summary: Mapping[str, Any]
    draft_tokens: int | None = None


@dataclass(frozen=True)
class CheckpointFacts:
    """The checkpoint's headline facts (``facts["checkpoint"]["summary"]``).

    Attributes:
        mtp_present: whether MTP tensors ship (``None``: could not tell, e.g. a config-only folder).
        mtp_layers_declared: MTP layers ``config.json`` declares (``None``: none declared).
        mtp_layers_found: MTP layers found among the tensors (``None``: tensors not examined).
        mtp_tensors: number of MTP tensors (``None``: not examined).
        mtp_bytes: bytes of the MTP tensors (estimated when ``mtp_bytes_estimated``), or ``None``.
        mtp_bytes_estimated: whether ``mtp_bytes`` comes from config.json rather than headers.
        mtp_format: storage format of the MTP tensors (``"BF16"``, ``"NVFP4"``), or ``None``.
        trunk_format: storage format of the rest of the model, or ``None``.
        quantization: the quantization config in words, or ``None``.
        architecture: ``architectures[0]`` of config.json, or ``None``.
    """

    mtp_present: bool | None
    mtp_layers_declared: int | None
    mtp_layers_found: int | None
    mtp_tensors: int | None
    mtp_bytes: int | None
    mtp_bytes_estimated: bool
    mtp_format: str | None
    trunk_format: str | None
    quantization: str | None
    architecture: str | None


@dataclass(frozen=True)
class BackendChoice:
    """One kernel backend a launch selects.

    Attributes:
        name: the backend (``"flashinfer_cutlass"``).
        how: how it was chosen (``"explicit"``, ``"auto"``), or ``None`` when not said.
        source: where the choice was read (``"launch command"``, a file of the engine), or ``None``.
    """

    name: str
    how: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class Fp4Readiness:
    """The FP4 headline: the engine's own verdict for its kernels where a launch gives one (``facts["launch"]["fp4"]``:
    TensorRT-LLM, llama.cpp), else the preflight's (``facts["preflight"]["summary"]``).

    Attributes:
        native_fp4: ``"capable"``, ``"not capable"``, ``"unknown"`` / ``"could not tell"``, or ``"not applicable"``.
        compute_capabilities: of the GPUs seen (``("12.0",)``).
        gpus: number of GPUs, or ``None``.
        fp4_gemm_backend / moe_runner_backend: the backends the launch selects (``None``: not selected or not known).
        engine: the engine the verdict is for.
    """

    native_fp4: str
    compute_capabilities: tuple[str, ...]
    gpus: int | None
    fp4_gemm_backend: BackendChoice | None
    moe_runner_backend: BackendChoice | None
    engine: str | None


@dataclass(frozen=True)
class Configured:
    """A report with a configuration applied.

    Attributes:
        report: the report with the configuration's ignores moved to ``report.ignored``.
        fail_on: the threshold (``None``: ``never``).
        exit_code: what the CLI would exit with (0, 1 or 3).
        expired: ``"RULE (source, expired YYYY-MM-DD)"`` for each ignore that no longer applies.
    """

    report: Report
    fail_on: Severity | None
    exit_code: int
    expired: tuple[str, ...]


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def launch_result(report: Report) -> LaunchResult | None:
    """The launch verdict of an :func:`mtp_audit.audit_launch` report, or ``None`` when ``report`` is not one."""
    facts = report.facts.get("launch")
    if not isinstance(facts, Mapping) or "verdict" not in facts:
        return None
    fixed = _opt_str(facts.get("corrected_command"))
    spec: Mapping[str, Any] = facts["speculative"] if isinstance(facts.get("speculative"), Mapping) else {}
    draft: Mapping[str, Any] = facts["draft"] if isinstance(facts.get("draft"), Mapping) else {}
    engine = _opt_str(facts.get("engine")) or ("vllm" if "vllm" in report.facts else "sglang")
    requested, runs_as = _opt_str(spec.get("requested") or spec.get("method_requested")), _opt_str(spec.get("runs_as") or spec.get("method"))
    if engine == "llamacpp":
        requested, runs_as = _llamacpp_speculative(facts.get("summary") or {})
    elif engine == "trtllm":
        requested, runs_as = _trtllm_speculative(spec)
    return LaunchResult(
        verdict=LaunchVerdict(facts["verdict"]),
        engine=engine,
        corrected_argv=tuple(shlex.split(fixed)) if fixed else None,
        corrected_command=fixed,
        changed_flags=tuple(str(f) for f in facts.get("changed_flags") or ()),
        speculative_requested=requested,
        speculative_runs_as=runs_as,
        draft_class=_draft_class(draft),
        summary=dict(facts.get("summary") or {}),
        draft_tokens=_draft_tokens(engine, spec, facts.get("summary") or {}),
    )


def _draft_class(draft: Mapping[str, Any]) -> str | None:
    """The draft model class a launch's ``facts["draft"]`` names: SGLang's ``draft_class``; vLLM's draft
    ``architectures`` after its config override (``MiMoMTPModel``) when they name exactly one class; else ``None``."""
    named = _opt_str(draft.get("draft_class"))
    if named is not None:
        return named
    archs = draft.get("architectures")
    return _opt_str(archs[0]) if isinstance(archs, (list, tuple)) and len(archs) == 1 else None


def _trtllm_speculative(spec: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(decoding_type the --config YAML asks for, what TensorRT-LLM runs)`` of a TensorRT-LLM launch's
    ``facts["speculative"]`` (``method`` is the YAML's ``decoding_type``: :func:`mtp_audit.engines.trtllm.launch.what_runs`);
    no ``speculative_config`` is ``(None, None)``; a decoding type TensorRT-LLM does not accept
    (:data:`mtp_audit.engines.trtllm.knowledge.DECODING_TYPES`) runs nothing known (``None``)."""
    from mtp_audit.engines.trtllm.knowledge import DECODING_TYPES

    method = _opt_str(spec.get("method"))
    if method is None or method == "none":
        return None, None
    return method, method if method in DECODING_TYPES else None


def _draft_tokens(engine: str, spec: Mapping[str, Any], summary: Mapping[str, Any]) -> int | None:
    """The draft length a launch's facts state, per engine (see :attr:`LaunchResult.draft_tokens`)."""
    if engine == "llamacpp":
        return _opt_int(summary.get("n_max"))
    for key in ("num_speculative_tokens", "max_draft_len", "num_draft_tokens"):
        if _opt_int(spec.get(key)) is not None:
            return _opt_int(spec.get(key))
    return None


def _llamacpp_speculative(summary: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(--spec-type values, what runs)`` of a llama.cpp launch summary: ``"draft-mtp"`` runs when ``mtp_runs``."""
    types = [str(t) for t in summary.get("spec_types") or () if t != "none"]
    return (",".join(types) or None), ("draft-mtp" if summary.get("mtp_runs") is True else None)


def checkpoint_facts(report: Report) -> CheckpointFacts | None:
    """The checkpoint headline of an :func:`mtp_audit.audit_checkpoint` (or launch) report, or ``None``."""
    facts = report.facts.get("checkpoint")
    s = facts.get("summary") if isinstance(facts, Mapping) else None
    if not isinstance(s, Mapping):
        return None
    found, tensors = _opt_int(s.get("mtp_layers_found")), _opt_int(s.get("mtp_tensors"))
    present = None if tensors is None and found is None else bool(tensors or found)
    return CheckpointFacts(
        mtp_present=present,
        mtp_layers_declared=_opt_int(s.get("mtp_layers_declared")),
        mtp_layers_found=found,
        mtp_tensors=tensors,
        mtp_bytes=_opt_int(s.get("mtp_bytes")),
        mtp_bytes_estimated=bool(s.get("mtp_bytes_estimated")),
        mtp_format=_opt_str(s.get("mtp_format")),
        trunk_format=_opt_str(s.get("trunk_format")),
        quantization=_opt_str(s.get("quantization")),
        architecture=_opt_str(s.get("architecture")),
    )


def fp4_readiness(report: Report) -> Fp4Readiness | None:
    """The FP4 headline of an :func:`mtp_audit.preflight` (or launch) report, or ``None``."""
    launch = report.facts.get("launch")
    own = launch.get("fp4") if isinstance(launch, Mapping) else None
    if isinstance(own, Mapping):
        verdicts = [v for v in own.get("verdicts") or () if isinstance(v, Mapping)]
        return Fp4Readiness(
            native_fp4=str(own.get("native_fp4") or "unknown"),
            compute_capabilities=tuple(sorted({str(v["compute_capability"]) for v in verdicts if v.get("compute_capability")})),
            gpus=len(verdicts) if verdicts else None, fp4_gemm_backend=None, moe_runner_backend=None,
            engine=_opt_str(own.get("engine")))
    facts = report.facts.get("preflight")
    s = facts.get("summary") if isinstance(facts, Mapping) else None
    if not isinstance(s, Mapping):
        return None
    resolved: Mapping[str, Any] = facts["resolved"] if isinstance(facts, Mapping) and isinstance(facts.get("resolved"), Mapping) else {}
    return Fp4Readiness(
        native_fp4=str(s.get("verdict") or "could not tell"),
        compute_capabilities=tuple(str(c) for c in s.get("compute_capabilities") or ()),
        gpus=_opt_int(s.get("gpus")),
        fp4_gemm_backend=_backend(resolved.get("fp4_gemm_backend")),
        moe_runner_backend=_backend(resolved.get("moe_runner_backend")),
        engine=_opt_str(s.get("engine")),
    )


def _backend(entry: Any) -> BackendChoice | None:
    """A ``facts["preflight"]["resolved"]`` entry (``{"value", "how", "source"}``) as a :class:`BackendChoice`."""
    if not isinstance(entry, Mapping) or not _opt_str(entry.get("value")):
        return None
    return BackendChoice(str(entry["value"]), _opt_str(entry.get("how")), _opt_str(entry.get("source")))


def apply_config(report: Report, config: str | os.PathLike[str] | None = None, *, ignore: Iterable[str] = (),
                 fail_on: str | None = None, today: Any = None) -> Configured:
    """Apply a ``[tool.mtp-audit]`` configuration to ``report`` the way the CLI does.

    Args:
        report: an audit result.
        config: a pyproject.toml with ``[tool.mtp-audit]``, or a settings file holding the keys at its top level;
            ``None``: the nearest pyproject.toml with the table, searched upwards from the current directory (none: defaults).
        ignore: further ignores, ``RULE`` or ``RULE=reason`` (the CLI's ``--ignore``).
        fail_on: ``info`` / ``warning`` / ``error`` / ``never``, over the configuration's.
        today: a ``datetime.date`` for expiries (default: today).

    Raises:
        InputError: the configuration cannot be read or is invalid (one line naming the file and the key).
        ValueError: ``fail_on`` is not one of the four values.
    """
    import datetime

    from mtp_audit.report.settings import Settings, resolve
    from mtp_audit.report.settings_file import find_pyproject, load_settings, parse_ignore

    path = Path(config) if config is not None else find_pyproject(Path.cwd())
    settings = load_settings(path, explicit=config is not None) if path is not None else Settings()
    if fail_on is not None and fail_on.lower() not in ("info", "warning", "error", "never"):
        raise ValueError(f"fail_on must be info, warning, error or never, got {fail_on!r}")
    names = [t.name for t in report.targets] + [t.name.split(" (")[0] for t in report.targets]
    resolved = resolve(settings, names, today=today or datetime.date.today(), cli_fail_on=fail_on,
                       cli_ignores=[parse_ignore(i) for i in ignore])
    applied = report.ignore(resolved.suppressions)
    threshold = None if resolved.fail_on == "never" else Severity.parse(resolved.fail_on)
    expired = tuple(f"{i.rule_id} ({i.source}, expired {i.expires})" for i in resolved.expired)
    return Configured(applied, threshold, exit_code(applied, threshold), expired)
