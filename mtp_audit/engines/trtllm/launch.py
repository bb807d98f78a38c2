"""What TensorRT-LLM will do with one ``trtllm-serve`` command: the YAML's ``speculative_config`` replayed against
:mod:`mtp_audit.engines.trtllm.knowledge`, the checkpoint's MTP layers and tokenizer, and the machine's GPUs
(rules MTP700-MTP719)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer, checkpoint_answer
from mtp_audit.engines.argv import shell_join
from mtp_audit.engines.base import (
    DraftMemory,
    DraftQuestion,
    Engine,
    EngineOutcome,
    Fp4Verdict,
    KernelQuestion,
    LaunchRequest,
    LogDialect,
)
from mtp_audit.engines.outcome import COULD_NOT_TELL, FIX_FIRST, mtp_errors_as_warnings, verdict, verdict_sentence
from mtp_audit.engines.trtllm import knowledge as K
from mtp_audit.engines.trtllm import parity as P
from mtp_audit.engines.trtllm.command import TrtllmCommand, parse_trtllm_command, trtllm_entry
from mtp_audit.engines.trtllm.memory import check_mtp_memory
from mtp_audit.engines.trtllm.rules import RULES_BY_ID
from mtp_audit.errors import InputError
from mtp_audit.known import Known
from mtp_audit.preflight.typed import MachineAnswer, machine_answer
from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity

ANALYZER = "launch"


@dataclass
class TCtx:
    """What one evaluation knows: the command, its YAML, the checkpoint (its typed answer; the raw ``config.json`` the
    checkpoint audit read, for a local folder; its tokenizer ids) and the machine (its typed answer), with the findings
    and gaps so far."""

    cmd: TrtllmCommand
    yaml_doc: dict[str, Any] = field(default_factory=dict)
    yaml_name: str | None = None
    ck: CheckpointAnswer | None = None
    raw_config: Mapping[str, Any] | None = None
    folder: Path | None = None
    machine: MachineAnswer | None = None
    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)

    @property
    def spec(self) -> dict[str, Any] | None:
        s = self.yaml_doc.get("speculative_config")
        return s if isinstance(s, dict) else None

    @property
    def is_mtp(self) -> bool:
        return self.spec is not None and str(self.spec.get("decoding_type", "")) == "MTP"

    def add(self, rule_id: str, message: str, where: str | None = None, evidence: Sequence[tuple[str, str]] = ()) -> None:
        """Add a finding of ``rule_id`` located at the YAML (or ``where``)."""
        loc = Location(path=where or self.yaml_name) if (where or self.yaml_name) else Location(symbol="trtllm-serve")
        self.findings.append(RULES_BY_ID[rule_id].finding(message, loc, evidence=[Evidence(k, v) for k, v in evidence]))

    def gap(self, message: str, *, blocking: bool, why_open: str | None = None) -> None:
        """Record something the launch audit could not decide; ``why_open``: why it is open (the
        :attr:`~mtp_audit.known.Known.why_open` of the machine fact it rests on)."""
        self.gaps.append(Gap(ANALYZER, message, self.yaml_name, blocking, why_open=why_open))


def mtp_layers(ctx: TCtx) -> tuple[int | None, int]:
    """``(MTP layers, MTP tensors found)`` of the checkpoint: the layers found when its tensor list was read, else the
    layers its config declares (``None``: not said)."""
    ck = ctx.ck
    if ck is None:
        return None, 0
    tensors = ck.mtp.tensors or 0
    if ck.mode not in (None, "config-only"):
        return ck.mtp.found_layers or 0, tensors
    return ck.mtp.declared_layers, tensors


#: Longest run of digits read as an integer from the command line or a YAML string (no engine option takes a longer
#: one; CPython refuses to convert more than 4,300 digits, and the reports format the number).
MAX_INT_DIGITS = 100


def _as_int(value: Any, where: str) -> Any:
    """A value as pydantic's lax mode (or click's ``INT``) reads an int field: ``"3"`` is 3; anything else is returned
    as it is. ``where`` names the value for the error.

    Raises:
        InputError: a string of more than :data:`MAX_INT_DIGITS` digits (bounded before ``int()`` converts it).
    """
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        digits = value.strip().lstrip("+-")
        if len(digits) > MAX_INT_DIGITS:
            raise InputError(where, f"an integer of {len(digits):,} digits: over the bound of {MAX_INT_DIGITS} "
                             "(no engine option takes one)")
        return int(value.strip())
    return value


def architecture(ctx: TCtx) -> str | None:
    return ctx.ck.architectures[0] if ctx.ck is not None and ctx.ck.architectures else None


def check_options(ctx: TCtx) -> None:
    """MTP711: options click refuses; MTP710: MTP on the TensorRT engine backend."""
    for opt in ctx.cmd.unknown:
        ctx.add("MTP711", f"trtllm-serve has no option {opt}: click exits with 'No such option: {opt}'", where="trtllm-serve",
                evidence=[("option", opt)])
    for opt in ctx.cmd.missing_value:
        ctx.add("MTP711", f"{opt} needs a value: click exits with 'Option {opt} requires an argument'", where="trtllm-serve",
                evidence=[("option", opt)])
    backend = K.BACKEND_ALIASES.get(ctx.cmd.values.get("backend", "pytorch"), ctx.cmd.values.get("backend", "pytorch"))
    if ctx.is_mtp and backend not in K.MTP_BACKENDS:
        ctx.add("MTP710", f"--backend {ctx.cmd.values['backend']} with decoding_type MTP: MTP runs only on "
                f"{' and '.join(K.MTP_BACKENDS)}", where="trtllm-serve", evidence=[("backend", backend)])


def check_model(ctx: TCtx) -> None:
    """MTP717: no MODEL argument (click's required argument of ``serve``)."""
    if ctx.cmd.model is None:
        ctx.add("MTP717", f"{ctx.cmd.entry} has no MODEL argument: click exits with 'Missing argument MODEL' before "
                "anything loads", where="trtllm-serve", evidence=[("command", shell_join(ctx.cmd.argv))])


def check_decoding_type(ctx: TCtx) -> None:
    """MTP715: a ``speculative_config`` whose ``decoding_type`` is none of the union's literals (or is missing)."""
    spec = ctx.spec
    if spec is None:
        return
    accepted = ", ".join(sorted(K.DECODING_TYPES))
    if "decoding_type" not in spec:
        ctx.add("MTP715", "speculative_config has no decoding_type: the union is discriminated on it, so pydantic refuses "
                f"the LLM args and the server does not start (accepted: {accepted})", evidence=[("decoding_type", "missing")])
        return
    dtype = spec["decoding_type"]
    if isinstance(dtype, str) and dtype in K.DECODING_TYPES:
        return
    close = [k for k in K.DECODING_TYPES if str(dtype).lower() == k.lower()] or difflib.get_close_matches(
        str(dtype), list(K.DECODING_TYPES), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    ctx.add("MTP715", f"speculative_config.decoding_type {dtype!r} is not one TensorRT-LLM accepts: validation of the LLM "
            f"args fails and the server does not start (accepted: {accepted}){hint}",
            evidence=[("decoding_type", repr(dtype)), ("accepted", accepted)])


def check_requested(ctx: TCtx) -> None:
    """MTP700: MTP layers in the checkpoint (tensors found, or declared where no tensor list was read), no
    speculative_config in the launch."""
    declared, tensors = mtp_layers(ctx)
    config_only = ctx.ck is not None and ctx.ck.mode == "config-only"
    if ctx.spec is not None or not (tensors > 0 or (config_only and (declared or 0) > 0)):
        return
    where = "no --config YAML" if ctx.yaml_name is None else f"{ctx.yaml_name} has no speculative_config"
    have = f"{tensors:,} MTP tensors" if tensors else f"{declared} declared MTP layer(s) (tensors not listed)"
    ctx.add("MTP700", f"the checkpoint carries {have} but {where}: TensorRT-LLM builds no drafter and the MTP heads are "
            "unused", evidence=[("MTP layers declared", str(declared)), ("MTP tensors", str(tensors))])


def check_draft_len(ctx: TCtx) -> None:
    """MTP701 (not positive), MTP702 (deprecated key), MTP704 (longer than the checkpoint's layers)."""
    spec = ctx.spec or {}
    if "num_nextn_predict_layers" in spec:
        dropped = "max_draft_len" in spec
        ctx.add("MTP702", "speculative_config.num_nextn_predict_layers is deprecated: " + (
            f"dropped because max_draft_len {spec['max_draft_len']} is given" if dropped else
            f"renamed to max_draft_len {spec['num_nextn_predict_layers']} with a warning"),
            evidence=[("num_nextn_predict_layers", str(spec["num_nextn_predict_layers"]))])
    n = _as_int(spec.get("max_draft_len", spec.get("num_nextn_predict_layers")), f"{ctx.yaml_name} max_draft_len")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n <= 0):
        ctx.add("MTP701", f"max_draft_len {n!r}: TensorRT-LLM raises ValueError('max_draft_len must be > 0 for MTP')",
                evidence=[("max_draft_len", repr(n))])
        return
    if isinstance(n, int) and _over_token_budget(ctx, n):
        return
    declared, _ = mtp_layers(ctx)
    if isinstance(n, int) and declared and n > declared:
        mode = "MTP-Eagle: the one MTP layer drafts every position" if declared == 1 else "vanilla MTP: layers reused by modulo"
        ctx.add("MTP704", f"max_draft_len {n} with {declared} MTP layer(s) in the checkpoint: {mode}",
                evidence=[("max_draft_len", str(n)), ("MTP layers", str(declared))])


def _token_budget(ctx: TCtx) -> tuple[int, str]:
    """``(max_num_tokens, where it came from)``: the command's ``--max_num_tokens``, the YAML's, else the default."""
    for raw, where in ((ctx.cmd.values.get("max_num_tokens"), ctx.cmd.given.get("max_num_tokens", "")),
                       (ctx.yaml_doc.get("max_num_tokens"), f"{ctx.yaml_name} max_num_tokens")):
        value = _as_int(raw, where)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, where
    return K.MAX_NUM_TOKENS_DEFAULT, "the default max_num_tokens"


def _over_token_budget(ctx: TCtx, n: int) -> bool:
    """MTP716 and a blocking gap when one request's generation step (``n + 1`` tokens) exceeds the batch budget."""
    budget, where = _token_budget(ctx)
    if n + 1 <= budget:
        return False
    ctx.add("MTP716", f"max_draft_len {n:,}: one request's generation step carries {n + 1:,} tokens, above {where} "
            f"({budget:,}); TensorRT-LLM sets no upper bound on max_draft_len (NonNegativeInt) and allocates draft buffers "
            "of max_draft_len tokens per request", evidence=[("max_draft_len", str(n)), ("max_num_tokens", str(budget))])
    ctx.gap(f"max_draft_len {n:,} is beyond the batch's token budget ({budget:,}): whether TensorRT-LLM refuses it at "
            "start-up or fails while allocating or scheduling could not be told", blocking=True)
    return True


def check_layers_present(ctx: TCtx) -> None:
    """MTP703: MTP requested, nothing to draft with; MTP709: the mtp.* layers are a DSpark drafter."""
    if ctx.raw_config and any(str(k).startswith("dspark_") for k in ctx.raw_config):
        keys = sorted(k for k in ctx.raw_config if str(k).startswith("dspark_"))
        ctx.add("MTP709", "the checkpoint's config has DSpark keys (" + ", ".join(keys[:4]) + "): its draft layers are a "
                "DSpark drafter; use decoding_type: DSpark", evidence=[("config keys", ", ".join(keys))])
        return
    layers, tensors = mtp_layers(ctx)
    spec = ctx.spec
    if ctx.ck is None or (spec is not None and spec.get("speculative_model")):
        return
    if not layers and not tensors:
        declared = ctx.ck.mtp.declared_layers
        ctx.add("MTP703", "decoding_type MTP, but the checkpoint " + (f"declares {declared} MTP layer(s) and ships none of their "
                "tensors" if declared else "declares no MTP layer and has no MTP tensors") + ", and no speculative_model is given",
                evidence=[("MTP layers declared", str(declared)), ("MTP tensors", str(tensors))])


def check_architecture(ctx: TCtx) -> None:
    """MTP707 for an architecture with no MTP in TensorRT-LLM; a gap for one the table does not know."""
    arch = architecture(ctx)
    if arch is None:
        return
    if arch in K.NO_MTP_ARCHITECTURES:
        ctx.add("MTP707", f"{arch}: TensorRT-LLM runs no MTP for it ({K.NO_MTP_ARCHITECTURES[arch]})",
                evidence=[("architecture", arch)])
    elif arch not in K.MTP_ARCHITECTURES:
        ctx.gap(f"{arch}: not in the table of architectures whose TensorRT-LLM model builds MTP layers; whether MTP runs "
                "could not be told", blocking=True)


def tokenizer_think_ids(folder: Path | None) -> dict[str, int] | None:
    """``{"<think>": id, "</think>": id}`` (those found) from the checkpoint's ``tokenizer_config.json``
    (``added_tokens_decoder``) or ``tokenizer.json`` (``added_tokens``); ``None`` when neither file is readable."""
    from mtp_audit.sources.bounded import read_json_bounded

    if folder is None:
        return None
    for name in ("tokenizer_config.json", "tokenizer.json"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            doc = read_json_bounded(path, limit=64 << 20)
        except InputError:
            continue
        return _think_ids(doc)
    return None


def _think_ids(doc: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if not isinstance(doc, dict):
        return out
    for key, tok in (doc.get("added_tokens_decoder") or {}).items():
        if isinstance(tok, dict) and tok.get("content") in ("<think>", "</think>") and str(key).isdigit():
            out[tok["content"]] = int(key)
    for tok in doc.get("added_tokens") or []:
        if isinstance(tok, dict) and tok.get("content") in ("<think>", "</think>") and isinstance(tok.get("id"), int):
            out[tok["content"]] = tok["id"]
    return out


def check_think_tokens(ctx: TCtx) -> None:
    """MTP706: relaxed acceptance keyed on think-token ids the tokenizer does not have."""
    spec = ctx.spec or {}
    if not spec.get("use_relaxed_acceptance_for_thinking"):
        return
    begin = spec.get("begin_thinking_phase_token", K.BEGIN_THINKING_DEFAULT)
    end = spec.get("end_thinking_phase_token", K.END_THINKING_DEFAULT)
    ids = tokenizer_think_ids(ctx.folder)
    if ids is None:
        ctx.gap("use_relaxed_acceptance_for_thinking: the checkpoint's tokenizer was not read, so the think-token ids "
                f"{begin}/{end} were not checked", blocking=False)
        return
    want = (ids.get("<think>"), ids.get("</think>"))
    if want != (begin, end):
        ctx.add("MTP706", f"relaxed acceptance between token ids {begin} and {end}, but the tokenizer's <think>/</think> "
                f"are {want[0]}/{want[1]}", evidence=[("configured", f"{begin}/{end}"), ("tokenizer", f"{want[0]}/{want[1]}")])


def check_traps(ctx: TCtx) -> None:
    """MTP705 (acceptance_rate_threshold) and MTP712 (GLM-5 DSA with the v1 KV-cache manager)."""
    spec = ctx.spec or {}
    if spec.get("acceptance_rate_threshold") is not None:
        ctx.add("MTP705", f"acceptance_rate_threshold {spec['acceptance_rate_threshold']}: "
                + K.KNOWN_TRAPS["acceptance_rate_threshold"][0], evidence=[("acceptance_rate_threshold", str(spec["acceptance_rate_threshold"]))])
    kv = ctx.yaml_doc.get("kv_cache_config")
    if architecture(ctx) == "GlmMoeDsaForCausalLM" and isinstance(kv, dict) and kv.get("use_kv_cache_manager_v2") is False:
        ctx.add("MTP712", "GLM MoE DSA with kv_cache_config.use_kv_cache_manager_v2: false: "
                + K.KNOWN_TRAPS["dsa_kv_cache_manager_v1"][0], evidence=[("use_kv_cache_manager_v2", "false")])


def machine_ccs(machine: MachineAnswer | None) -> list[tuple[int, int]]:
    """Compute capabilities of the machine's GPUs (those known)."""
    return [cc for g in (machine.gpus if machine is not None else ()) if (cc := g.cc) is not None]


def non_nvidia_devices(machine: MachineAnswer | None) -> list[str]:
    """Names of the machine's devices that are not NVIDIA GPUs (an AMD gfx target, an Ascend NPU), and the accelerator
    platform when the preflight names a non-CUDA one (``rocm``, ``cann``, ``xpu``, ``hpu``, ``cpu``). The machine's
    ``platform`` fact is its operating system (``linux``, ``wsl2``, ``windows``: a collect_env's ``Python platform``
    line) and says nothing about its devices."""
    if machine is None:
        return []
    out = []
    platform = machine.accelerator.value
    if isinstance(platform, str) and platform.lower() != "cuda":
        out.append(f"platform {platform}")
    for gpu in machine.gpus:
        name = str(gpu.name.value or "")
        arch = gpu.arch.value
        if arch or name.lower().startswith(("amd", "ascend", "huawei")):
            out.append(name or str(arch))
    return out


def check_hardware(ctx: TCtx) -> None:
    """MTP713: not an NVIDIA machine; MTP708: an MTP launch on GPUs below SM90; a gap when no GPU is known."""
    others = non_nvidia_devices(ctx.machine)
    if others:
        ctx.add("MTP713", f"the machine's devices are not NVIDIA GPUs ({', '.join(others[:3])}): TensorRT-LLM runs on "
                "NVIDIA GPUs only", where="machine", evidence=[("devices", ", ".join(others))])
        return
    ccs = machine_ccs(ctx.machine)
    if not ccs:
        from mtp_audit.preflight.nomachine import NOT_SERVING_MACHINE

        why_open = ctx.machine.gpu_count.why_open if ctx.machine is not None else None  # the GPU list not looked for
        ctx.gap("the GPUs' compute capability is unknown: whether TensorRT-LLM's MTP kernels (SM90+) run could not be "
                "told" + (f" ({NOT_SERVING_MACHINE})" if why_open else ""), blocking=True, why_open=why_open)
        return
    low = sorted({cc for cc in ccs if cc < K.MTP_MIN_CC})
    if low:
        ctx.add("MTP708", f"GPU compute capability {', '.join(f'{a}.{b}' for a, b in low)} is below 9.0: the MTP path needs "
                "Hopper or newer", where="machine", evidence=[("compute capability", ", ".join(f"{a}.{b}" for a, b in ccs))])


def check_gpu_count(ctx: TCtx) -> None:
    """MTP714: the command's tensor x pipeline x context parallel sizes need more GPUs than the machine shows (not
    checked when ``--gpus_per_node`` says the launch spans nodes, nor on a machine that is not NVIDIA's: MTP713)."""
    def size(name: str) -> int:
        raw = ctx.cmd.values.get(name) or ctx.yaml_doc.get(name)
        where = ctx.cmd.given.get(name) or f"{ctx.yaml_name} {name}"
        value = _as_int(raw if isinstance(raw, str) else str(raw or ""), where)
        return value if isinstance(value, int) and value > 0 else 1

    m = ctx.machine
    seen = len(m.gpus) if m is not None else 0
    if "gpus_per_node" in ctx.cmd.values or "gpus_per_node" in ctx.yaml_doc or non_nvidia_devices(m):
        return
    world = size("tensor_parallel_size") * size("pipeline_parallel_size") * size("context_parallel_size")
    if _too_few_in_command(ctx, world):
        return
    listed: Known[int] | None = m.gpu_count if m is not None else None
    if not seen:
        if world > 1 and m is not None:
            why = listed.source.how if listed is not None else "no GPU listed"
            ctx.gap(f"GPU count: the command needs {world} GPUs (tp x pp x cp) but the GPUs are unknown ({why}): could not tell",
                    blocking=True, why_open=listed.why_open if listed is not None else None)
        return
    if world > seen and listed is not None and listed.extent != "exact":
        ctx.gap(f"GPU count: the command needs {world} GPUs (tp x pp x cp); at least {seen} seen ({listed.source.how or listed.source}): "
                "could not tell (give the whole nvidia-smi output, or nvidia-smi -q / --query-gpu)", blocking=True)
    elif world > seen:
        ctx.add("MTP714", f"the command needs {world} GPUs (tp x pp x cp) but the machine shows {seen}: TensorRT-LLM starts one "
                "rank per GPU and fails to place the rest", where="machine",
                evidence=[("tp x pp x cp", str(world)), ("GPUs seen", str(seen))])


def _too_few_in_command(ctx: TCtx, world: int) -> bool:
    """MTP714 from the command's own ``CUDA_VISIBLE_DEVICES``, on any machine: it leaves at most
    :func:`mtp_audit.preflight.visible.visible_at_most` devices to every rank's CUDA runtime (CUDA docs, "CUDA
    Environment Variables"), whatever the GPUs listed. Returns whether the finding was added."""
    from mtp_audit.preflight.visible import visible_at_most

    value = ctx.cmd.env.get("CUDA_VISIBLE_DEVICES")
    most = visible_at_most(value) if value is not None else None
    if most is None or world <= most:
        return False
    ctx.add("MTP714", f"the command needs {world} GPUs (tp x pp x cp) but CUDA_VISIBLE_DEVICES={value} (command) leaves at most "
            f"{most} visible: TensorRT-LLM starts one rank per GPU and fails to place the rest", where="machine",
            evidence=[("tp x pp x cp", str(world)),
                      ("CUDA_VISIBLE_DEVICES", f"{value} (command): at most {most} device(s), each entry names at most one")])
    return True


CHECKS = (check_model, check_options, check_decoding_type, check_requested, check_gpu_count)
MTP_CHECKS = (check_draft_len, check_layers_present, check_architecture, check_think_tokens, check_traps, check_hardware,
              check_mtp_memory)


def read_yaml(ctx: TCtx, cwd: Path) -> None:
    """Load the ``--config`` YAML (bounded, ``safe_load`` only) into ``ctx.yaml_doc``.

    Raises:
        InputError: a missing, unreadable or malformed YAML, or one whose top level is not a mapping.
    """
    from mtp_audit.sources.yamlfile import read_yaml_bounded

    path_text = ctx.cmd.yaml_path
    if path_text is None:
        return
    path = Path(path_text).expanduser()
    full = path if path.is_absolute() else cwd / path
    doc = read_yaml_bounded(full, display=f"{ctx.cmd.given.get('extra_llm_api_options', '--config')} {path_text}")
    if doc is not None and not isinstance(doc, dict):
        raise InputError(f"--config {path_text}", f"the YAML is a {type(doc).__name__}, expected a mapping of LLM args")
    ctx.yaml_doc, ctx.yaml_name = dict(doc or {}), path_text


def read_checkpoint(ctx: TCtx, request: LaunchRequest) -> list[Report]:
    """Audit MODEL through the lent checkpoint analyzer; keep, for a local folder, the raw ``config.json`` that audit
    read (once) for the keys its answer does not name (DSpark). Returns the sub-reports."""
    if ctx.cmd.model is None:  # MTP717
        return []
    report, gap = request.analyzers.checkpoint(ctx.cmd.model, "MODEL")
    if gap is not None:
        ctx.gaps.append(gap)
    if report is None:
        return []
    ctx.ck = checkpoint_answer(report)
    local = Path(ctx.cmd.model).expanduser()
    local = local if local.is_absolute() else request.cwd / local
    if local.is_dir():
        ctx.folder = local
        ctx.raw_config = ctx.ck.config if ctx.ck is not None and (local / "config.json").is_file() else None
    return [report]


def what_runs(ctx: TCtx) -> dict[str, Any]:
    """The speculative headline: method, draft length and mode, from the YAML after TensorRT-LLM's own remapping."""
    spec = ctx.spec
    if spec is None:
        return {"method": "none", "detail": "no speculative_config: no drafter is built"}
    dtype = str(spec.get("decoding_type", "?"))
    out: dict[str, Any] = {"method": dtype, "detail": K.DECODING_TYPES.get(
        dtype, "not one TensorRT-LLM accepts")}
    if dtype == "MTP":
        declared, _ = mtp_layers(ctx)
        n = spec.get("max_draft_len", spec.get("num_nextn_predict_layers", declared))
        out["max_draft_len"] = n
        out["mode"] = ("MTP_EAGLE_ONE_MODEL" if (declared or 1) == 1 and not spec.get("use_mtp_vanilla") else "MTP (vanilla)")
        out["mode_source"] = K.LLM_ARGS + " MTPDecodingConfig.spec_dec_mode"
    return out


def corrected_command(ctx: TCtx) -> list[str] | None:
    """The command with the fixes a flag can make: an undeclared option spelt as ``trtllm-serve`` declares it (the
    underscore spelling, or the closest declared one), ``--backend tensorrt`` dropped for MTP; ``None`` when nothing
    changes."""
    declared = list(K.VALUE_OPTIONS) + list(K.FLAG_OPTIONS)
    out: list[str] = []
    skip = False
    for tok in ctx.cmd.argv:
        if skip:
            skip = False
            continue
        opt, eq, val = tok.partition("=")
        if opt in ctx.cmd.unknown:
            close = difflib.get_close_matches(opt.replace("-", "_").replace("__", "--", 1), declared, n=1, cutoff=0.8)
            out.append((close[0] + eq + val) if close else tok)
            continue
        if opt == "--backend" and ctx.is_mtp and any(f.rule_id == "MTP710" for f in ctx.findings):
            skip = not eq
            continue
        out.append(tok)
    return out if out != list(ctx.cmd.argv) else None


def build_facts(ctx: TCtx, findings: Sequence[Finding], gaps: Sequence[Gap]) -> dict[str, Any]:
    """``facts["launch"]``: summary, answer and closing lines, verdict, what runs, the corrected command, the command."""
    from mtp_audit.engines.argv import shell_join

    v = verdict(findings, gaps)
    errors = [f for f in findings if f.severity >= Severity.ERROR]
    blocking = [g for g in gaps if g.blocking]
    runs = what_runs(ctx)
    # what runs is said in the conditional unless the verdict is go: an error stops the start, a blocking gap leaves it open
    verb = {FIX_FIRST: "would run", COULD_NOT_TELL: "would run"}.get(v, "runs")
    cond = " if it started" if v == FIX_FIRST else ""
    if runs["method"] not in K.DECODING_TYPES and runs["method"] != "none":
        head = f"TensorRT-LLM does not start: speculative_config.decoding_type {runs['method']} is {runs['detail']}"
    elif runs["method"] == "none":
        head = f"TensorRT-LLM {verb} no speculative decoding{cond} (no speculative_config: no drafter is built)"
    else:
        head = f"TensorRT-LLM {verb} {runs['method']}" + (f" ({runs['mode']}, max_draft_len {runs['max_draft_len']})"
                                                        if runs.get("mode") else f": {runs['detail']}") + cond
    sentence = verdict_sentence(v, errors, blocking, findings)
    fixed = corrected_command(ctx)
    fixed_text = shell_join(fixed) if fixed else None
    summary = {"verdict": v, "engine": "trtllm", "speculative": runs["method"], "draft_mode": runs.get("mode"),
               "max_draft_len": runs.get("max_draft_len"), "config": ctx.yaml_name, "corrected_command": fixed_text}
    answer = [f"{_lead(v, errors, blocking, findings)}; {head}"] + ([f"corrected command: {fixed_text}"] if fixed_text else [])
    lines = [head + ".", sentence] + ([f"Corrected command: {fixed_text}"] if fixed_text else [])
    return {"summary": summary, "answer": answer, "closing": {"title": "What will happen (TensorRT-LLM)", "lines": lines},
            "verdict": v, "corrected_command": fixed_text, "corrected_argv": fixed, "engine": "trtllm",
            "speculative": runs, "command": ctx.cmd.to_dict(), "config": ctx.yaml_doc.get("speculative_config")}


def _lead(v: str, errors: Sequence[Finding], blocking: Sequence[Gap], findings: Sequence[Finding]) -> str:
    """The answer's verdict first, in the shape of the SGLang and vLLM launches: ``fix first: N error(s) (ids)``,
    ``could not tell: <first blocking gap>``, ``go`` (with its warning ids)."""
    if v == FIX_FIRST:
        return f"fix first: {len(errors)} error(s) ({', '.join(sorted({f.rule_id for f in errors}))})"
    if v == COULD_NOT_TELL:
        return f"could not tell: {blocking[0].message}" + (f" (+{len(blocking) - 1} more blocking gap(s))" if len(blocking) > 1 else "")
    warn = sorted({f.rule_id for f in findings if f.severity == Severity.WARNING})
    return "go" + (f" (warnings: {', '.join(warn)})" if warn else "")


def machine_only(ctx: TCtx, pf: Report) -> Report:
    """The preflight report reduced to its machine facts: its FP4 findings answer for SGLang's or vLLM's kernels, so they
    are dropped; TensorRT-LLM's own verdict (:meth:`TrtllmEngine.fp4_verdict`) replaces them."""
    import dataclasses

    ctx.machine = machine_answer(pf)
    return dataclasses.replace(pf, findings=(), gaps=())


def moe_backend(ctx: TCtx) -> str | None:
    """The YAML's ``moe_config.backend`` (``MoeConfig.backend`` of the LLM args), ``None`` when not given."""
    moe = ctx.yaml_doc.get("moe_config")
    value = moe.get("backend") if isinstance(moe, dict) else None
    return str(value) if value is not None else None


def check_fp4(ctx: TCtx, engine: Engine) -> dict[str, Any] | None:
    """The engine's FP4 verdict for its own kernels (MTP718 and its gap join the launch's); ``None`` on a machine
    that is not NVIDIA's (MTP713 says it)."""
    from mtp_audit.engines.base import KernelQuestion

    if non_nvidia_devices(ctx.machine):
        return None
    answer = engine.fp4_verdict(KernelQuestion(ctx.ck, ctx.machine, {"moe_backend": moe_backend(ctx)}))
    if answer is None:
        return None
    ctx.findings += answer.findings
    ctx.gaps += answer.gaps
    return answer.to_dict()


class TrtllmEngine(Engine):
    """:class:`~mtp_audit.engines.base.Engine` for TensorRT-LLM (``trtllm-serve``), from sourced knowledge tables."""

    name = "trtllm"
    label = "TensorRT-LLM"
    target_option = ""
    rules_module = "mtp_audit.engines.trtllm.rules"
    entry_examples = ("trtllm-serve MODEL --config mtp.yaml ...",)
    platforms, platforms_source, parity = P.PLATFORMS, P.PLATFORMS_SOURCE, P.PARITY

    def log_dialect(self) -> LogDialect:
        """How this engine writes its log (``mtp_audit.engines.trtllm.logdialect``)."""
        from mtp_audit.engines.trtllm.logdialect import DIALECT

        return DIALECT

    def entry(self, toks: Sequence[str]) -> str | None:
        """``"trtllm-serve"`` (or ``"trtllm-serve serve"``) when the command starts TensorRT-LLM's server."""
        found = trtllm_entry(toks)
        return found[1] if found is not None else None

    def release(self, target: Any) -> tuple[Any, Gap | None]:
        """The knowledge table's sources (TensorRT-LLM is not read from a release).

        Raises:
            InputError: a release target was given.
        """
        if target is not None:
            raise InputError("release", "TensorRT-LLM is checked against a sourced knowledge table, not a release tree")
        return {"llm_args": K.LLM_ARGS, "serve": K.SERVE}, None

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        """See :meth:`mtp_audit.engines.base.Engine.evaluate`: the YAML, the checkpoint and the machine, then MTP700-MTP719.

        Raises:
            InputError: the ``--config`` YAML is missing or malformed, or MODEL does not exist (and is not a hub id).
        """
        from mtp_audit.engines.outcome import machine_notes

        ctx = TCtx(cmd=parse_trtllm_command(request.toks))
        read_yaml(ctx, request.cwd)
        reports = read_checkpoint(ctx, request)
        if not ctx.is_mtp:  # the MTP layers are never loaded: their defects cannot break this launch
            reports = [mtp_errors_as_warnings(r, "TensorRT-LLM", "speculative_config") for r in reports]
        reports.append(machine_only(ctx, request.analyzers.preflight(None, engine=None)))
        for check in CHECKS + (MTP_CHECKS if ctx.is_mtp else ()):
            check(ctx)
        fp4 = check_fp4(ctx, self)
        ctx.gaps[:] = machine_notes(ctx.gaps)  # --no-machine: the machine facts not examined are notes
        findings = [f for r in reports for f in r.findings] + ctx.findings
        gaps = [g for r in reports for g in r.gaps] + ctx.gaps
        facts = build_facts(ctx, findings, gaps)
        if fp4 is not None:
            facts["fp4"] = fp4
            facts["summary"]["native_fp4"] = fp4["native_fp4"]
            if fp4["needed"]:
                facts["closing"]["lines"].insert(1, f"Native FP4 (TensorRT-LLM's kernels): {fp4['native_fp4']}.")
        return EngineOutcome(name=shell_join(request.toks), version=None, findings=ctx.findings, gaps=ctx.gaps,
                             reports=reports, facts=facts)

    def draft_memory(self, question: DraftQuestion) -> DraftMemory | None:
        """The MTP layers' bytes per GPU at load (:func:`mtp_audit.engines.trtllm.memory.draft_memory`, MTP719)."""
        from mtp_audit.engines.trtllm.memory import draft_memory

        return draft_memory(question)

    def fp4_verdict(self, question: KernelQuestion) -> Fp4Verdict | None:
        """TensorRT-LLM's NVFP4 kernels against the machine's GPUs (:func:`mtp_audit.engines.trtllm.fp4.fp4_verdict`,
        rule MTP718)."""
        from mtp_audit.engines.trtllm.fp4 import fp4_verdict

        return fp4_verdict(question)
