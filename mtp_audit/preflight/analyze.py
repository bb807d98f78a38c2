"""The preflight analysis: facts + intended launch -> findings (MTP2xx), gaps and a per-GPU verdict.

Each check is a function of a :class:`Context`; the rule it implements is named in its docstring and
defined (doc, sources, examples) in :mod:`mtp_audit.preflight.rules` (:func:`~mtp_audit.preflight.rules.rule_by_id`
finds the engines' own too). Facts behind each check:
``../shared/research/blackwell_fp4.md`` §10 (candidate rules R01-R35) and the matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from mtp_audit.engines.registry import DEFAULT_PREFLIGHT_ENGINE as DEFAULT_ENGINE
from mtp_audit.preflight import matrix as mx
from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts, fmt_value
from mtp_audit.preflight.kernels import KernelChecks
from mtp_audit.preflight.launch import CheckpointQuant, Launch
from mtp_audit.preflight.probe import ProbeResult
from mtp_audit.report import Evidence, Finding, Gap, Location, Severity
from mtp_audit.report import questions as Q
from mtp_audit.report.model import located_at

CAPABLE, NOT_CAPABLE, UNKNOWN = "capable", "not capable", "unknown"
#: The verdict of a device the FP4 checks do not apply to (an Ascend NPU; a CPU-only machine overall).
NOT_APPLICABLE = "not applicable"


def sm_name(cc: tuple[int, int]) -> str:
    """``(12, 0)`` -> ``"SM120"``."""
    return f"SM{cc[0]}{cc[1]}"


def cc_str(cc: tuple[int, int]) -> str:
    """``(12, 0)`` -> ``"12.0"``."""
    return f"{cc[0]}.{cc[1]}"


@dataclass
class Context:
    """Everything one preflight run knows.

    Attributes:
        facts: the machine.
        launch: the intended launch, or ``None`` (bare ``mtp-audit preflight``).
        quant: the checkpoint's quantization (from ``--model-path``), or ``None``.
        engine_facts: what the engine's own analyzer says of the release the launch runs (SGLang: the sglang
            analyzer's ``facts["sglang"]``; vLLM: the audited source's ``version``), or ``None`` (the capability
            matrix and the machine's installed packages are used instead).
        probe: the ``--probe`` result, or ``None``.
        engine: the registered engine id whose kernel checks apply (:mod:`mtp_audit.preflight.engine`).
        kernels: that engine's FP4 kernel checks and wording (its :meth:`~mtp_audit.engines.base.Engine.kernels`
            hook); the defaults add nothing.
        pins_checked: whether an installed package's ``Requires-Dist: torch`` pin was read (MTP209).
    """

    facts: MachineFacts
    engine: str = DEFAULT_ENGINE
    launch: Launch | None = None
    quant: CheckpointQuant | None = None
    engine_facts: dict[str, Any] | None = None
    probe: ProbeResult | None = None
    kernels: KernelChecks = field(default_factory=KernelChecks)
    pins_checked: bool = False
    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    resolved: dict[str, Any] = field(default_factory=dict)
    #: facts the native-FP4 verdict needs that were read but could not be decided (a driver written as 580.65)
    undecided: list[str] = field(default_factory=list)
    #: AMD gfx targets on which the engine's FP4 path at its version could not be told (its release is older than,
    #: or between, the audited ones) -> why: a GPU whose hardware computes the format natively is then "unknown"
    amd_paths_open: dict[str, str] = field(default_factory=dict)
    #: each GPU whose native-FP4 verdict :func:`verdicts` left unknown, in GPU order -> why: the ``why_open`` of the
    #: fact its reason rests on (:attr:`mtp_audit.preflight.facts.Fact.why_open`), ``None`` when that was looked for
    unknown_verdicts: dict[int, str | None] = field(default_factory=dict)

    # --- derived facts ---------------------------------------------------------------------
    @property
    def gpus(self) -> tuple[GpuFacts, ...]:
        """GPUs the server will use (all listed; ``--tp`` is not used to drop any)."""
        return self.facts.gpus

    @property
    def cc0(self) -> tuple[int, int] | None:
        """Compute capability of GPU 0: SGLang decides backends from device 0 (``get_device_sm``)."""
        for g in self.gpus:
            if g.cc:
                return g.cc
        return None

    def version(self, dist: str) -> Version | None:
        """Installed version of ``dist`` (from facts), or ``None``."""
        f = self.facts.package(dist)
        return mx.parse_version(f.value) if f.present else None

    def engine_fact(self, key: str) -> Any:
        """``key`` of :attr:`engine_facts` (``"version"``, ``"cli_arguments"``), or ``None`` when absent."""
        return self.engine_facts.get(key) if self.engine_facts else None

    @property
    def engine_version(self) -> Version | None:
        """The release of the engine the verdict is for, as its kernel checks tell it
        (:meth:`~mtp_audit.preflight.kernels.KernelChecks.version`: its analyzer's, else the installed package's)."""
        return self.kernels.version(self)


    def launch_env(self, name: str) -> str | None:
        """Environment variable ``name`` of the launch: a ``NAME=VALUE`` prefix of the command wins over the
        machine's recorded environment (live ``os.environ`` or a dump's environment section)."""
        if self.launch is not None and name in self.launch.env:
            return self.launch.env[name]
        return self.facts.env.get(name)

    @property
    def flashinfer(self) -> Version | None:
        """flashinfer-python version."""
        return self.version("flashinfer-python")

    @property
    def fp4_intent(self) -> bool:
        """Whether FP4 matters: no launch given (the bare question "can this stack run FP4?"),
        an FP4 ``--quantization``, or an FP4 checkpoint."""
        if self.quant is not None and self.quant.is_fp4:
            return True
        if self.launch is None:
            return True
        q = (self.launch.get("--quantization") or "").lower()
        if q in self.kernels.fp4_quantizations:
            return True
        return any(self.launch.get(flag) is not None for flag in self.kernels.fp4_flags)

    @property
    def mxfp4(self) -> bool:
        """The checkpoint or flag is MXFP4."""
        q = (self.launch.get("--quantization") if self.launch else "") or ""
        return q.lower() in ("mxfp4", "gpt_oss_mxfp4") or bool(self.quant and str(self.quant.algo).upper() == "MXFP4")

    def device(self, index: int | str) -> str:
        """The device label of GPU ``index`` (an index or a range such as ``"0-7"``) as its platform's torch names it
        (:func:`device_label`)."""
        return device_label(self.facts.accelerator.value if self.facts.accelerator.present else None, index)

    def add(self, rule_id: str, message: str, *, gpu: GpuFacts | None = None, evidence: Iterable[Evidence] = (),
            remediation: str | None = None, severity: Severity | None = None, detail: str = "",
            gpus: Iterable[GpuFacts] = ()) -> None:
        """Append a finding of ``rule_id`` located at GPU ``gpu`` (its :meth:`device` label), at every GPU of ``gpus``
        (one finding at their range, ``cuda:0-7``: a machine-wide cause such as the driver) or the machine;
        ``detail`` holds what does not fit a one-line message (rationale, cost)."""
        from mtp_audit.preflight.rules import rule_by_id

        many = [g.index for g in gpus]
        loc = (Location(symbol=self.device(index_ranges(many))) if many else
               Location(symbol=self.device(gpu.index)) if gpu is not None else Location(symbol="machine"))
        self.findings.append(rule_by_id(rule_id).finding(message, loc, evidence=tuple(evidence),
                                                          remediation=remediation, severity=severity, detail=detail))

    def gap(self, message: str, blocking: bool = False, question: str | None = None, why_open: str | None = None) -> None:
        """Record something the preflight could not decide; ``question``: the one it leaves open
        (:mod:`mtp_audit.report.questions`: ``FP4``, ``STACK``, ...), by which consumers scope it; ``why_open``: why
        (:attr:`mtp_audit.preflight.facts.Fact.why_open` of the fact it rests on)."""
        self.gaps.append(Gap("preflight", message, None, blocking, question, why_open))


#: torch's device type per platform where it is not ``cuda`` (ROCm builds of torch name AMD GPUs ``cuda:N`` too):
#: Intel GPUs ``xpu:N`` (torch.xpu), Intel Gaudi ``hpu:N`` (habana_frameworks.torch), Ascend NPUs ``npu:N``
#: (torch_npu registers the ``npu`` device type: ``torch.device("npu:0")``, https://github.com/Ascend/pytorch README).
_DEVICE_TYPES = {"xpu": "xpu", "hpu": "hpu", "cann": "npu"}


def device_label(platform: str | None, index: int | str) -> str:
    """``"xpu:0"`` / ``"hpu:0-7"`` / ``"npu:0"`` / ``"cuda:0"``: where a finding about device ``index`` (or a range) is located, by
    the machine's platform value (:mod:`mtp_audit.preflight.platforms`; ``cuda`` when unknown or NVIDIA/AMD)."""
    return f"{_DEVICE_TYPES.get(platform or '', 'cuda')}:{index}"


def ev(label: str, fact: Fact | Any) -> Evidence:
    """Evidence from a fact (with its source) or a plain value."""
    if isinstance(fact, Fact):
        return Evidence(label, f"{fact} [{fact.source}]" if fact.present and fact.source else str(fact))
    return Evidence(label, fmt_value(fact) if isinstance(fact, tuple) else str(fact))


# --- effective backends ------------------------------------------------------------------------






# --- checks ------------------------------------------------------------------------------------


def check_verdict_inputs(ctx: Context) -> None:
    """Gaps for missing headline facts."""
    f = ctx.facts
    if not f.gpus and f.enumerated:
        ctx.gap(f"CUDA_VISIBLE_DEVICES={f.env.get('CUDA_VISIBLE_DEVICES', '?')} hides all {len(f.enumerated)} GPU(s) the driver "
                "lists: CUDA sees none, so no GPU was checked", blocking=True, question=Q.GPU_COUNT)
    elif not f.gpus:
        ctx.gap(f"no GPU information ({f.gpu_list.missing or 'none listed'})", blocking=True, question=Q.GPU_COUNT,
                why_open=f.gpu_list.why_open)
    for g in f.gpus:
        if not g.compute_capability.present:
            ctx.gap(f"GPU {g.index}: compute capability unknown ({g.compute_capability.missing})", blocking=True, question=Q.FP4,
                    why_open=g.compute_capability.why_open)
        elif (conflict := name_cc_conflict(g)) is not None:
            ctx.gap(f"GPU {g.index}: {conflict}", blocking=True, question=Q.FP4)


def name_cc_conflict(g: GpuFacts) -> str | None:
    """Why GPU ``g``'s name and compute capability contradict each other (the tool's GPU table,
    :func:`mtp_audit.preflight.gpus.cc_from_name`, gives the name another compute capability: an edited or mixed-up
    facts file, ``NVIDIA H200`` with 10.0), or ``None`` when they agree or the table does not know the name. Neither
    fact is trusted over the other: which GPU it is could not be told."""
    from mtp_audit.preflight.gpus import cc_from_name

    named = cc_from_name(str(g.name.value)) if g.name.present and g.cc else None
    if named is None or g.cc is None or named[0] == g.cc:
        return None
    return (f"{g.name.value} has compute capability {cc_str(named[0])} ({named[1]}), but the facts give {cc_str(g.cc)} "
            f"[{g.compute_capability.source or 'no source'}]: could not tell which GPU it is")




def check_mixed_cc(ctx: Context) -> None:
    """MTP202: GPUs of different compute capability (SGLang picks backends from device 0)."""
    ccs = sorted({g.cc for g in ctx.gpus if g.cc})
    if len(ccs) > 1:
        how = ctx.kernels.device_choice
        ctx.add("MTP202", f"GPUs have different compute capabilities ({', '.join(cc_str(c) for c in ccs)}); {how}",
                evidence=[Evidence(f"GPU {g.index}", f"{g.name.value} ({cc_str(g.cc)})") for g in ctx.gpus if g.cc])


def check_torch_build(ctx: Context) -> None:
    """MTP203 (torch CUDA build < 12.8 on Blackwell) and MTP204 (GB10 range warning is cosmetic)."""
    tc = ctx.facts.torch_cuda
    v = mx.parse_version(tc.value) if tc.present else None
    for cc in sorted({g.cc for g in ctx.gpus if g.cc and g.cc[0] >= 10}):
        same = [x for x in ctx.gpus if x.cc == cc]  # torch's build is one per machine: every GPU of this CC is blocked
        g = same[0]
        if v is None:
            if ctx.facts.torch_version.present or tc.missing and "no +cu" in str(tc.missing):
                ctx.gap(f"torch's CUDA build unknown ({tc.missing}); cannot check it supports {sm_name(cc)}", question=Q.STACK,
                        why_open=tc.why_open)
            continue
        if v < Version("12.8"):
            which = f"GPU {g.index}, {g.name.value}" if len(same) == 1 else f"GPUs {index_ranges(x.index for x in same)}, {g.name.value}"
            ctx.add("MTP203", f"torch {ctx.facts.torch_version.value or '?'} is built for CUDA {tc.value}, which has no {sm_name(cc)} kernels "
                    f"({which}): every kernel fails with 'no kernel image is available'",
                    gpus=same, evidence=[ev("torch", ctx.facts.torch_version), ev("torch CUDA build", tc), ev("compute capability", g.compute_capability)],
                    remediation="Install a cu128 or newer torch build (pip install torch --index-url https://download.pytorch.org/whl/cu128, "
                                "or torch >= 2.8 from PyPI), matching the torch pin of your "
                                + ctx.kernels.torch_pin_holder)
        elif cc == (12, 1) and v < Version("13.0"):
            ctx.add("MTP204", f"torch built for CUDA {tc.value} prints 'Minimum and Maximum cuda capability supported by this version of PyTorch is (8.0) - (12.0)' "
                    f"on GB10 (12.1); the warning is cosmetic (SM121 runs sm_120 code)", gpu=g,
                    evidence=[ev("torch CUDA build", tc), ev("compute capability", g.compute_capability)])


def _cu13_components(ctx: Context) -> list[str]:
    out = []
    tc = ctx.facts.torch_cuda
    if tc.present and (mx.parse_version(tc.value) or Version("0")) >= Version("13.0"):
        out.append(f"torch CUDA {tc.value}")
    sk = ctx.version("sglang-kernel")
    if sk is not None and sk >= Version("0.4"):
        out.append(f"sglang-kernel {sk} (links libcudart.so.13)")
    jc = ctx.facts.package("flashinfer-jit-cache")
    if jc.present and "+cu13" in str(jc.value):
        out.append(f"flashinfer-jit-cache {jc.value}")
    return out


def _older_than(version: tuple[int, ...], floor: str) -> bool | None:
    """Whether a driver version is below ``floor``; ``None`` when it is written with fewer parts than the floor and
    equals the floor's first parts (``580.65`` against ``580.65.06``: any ``580.65.x`` may be meant)."""
    want = mx.version_tuple(floor)
    if len(version) < len(want) and tuple(want[: len(version)]) == tuple(version):
        return None
    return version < want


def check_driver(ctx: Context) -> None:
    """MTP205 (driver older than what the CUDA user space needs) and MTP206 (too old for Blackwell)."""
    drv = ctx.facts.driver_version
    if not drv.present:
        if any(g.cc and g.cc[0] >= 10 for g in ctx.gpus):
            ctx.gap(f"driver version unknown ({drv.missing}); driver floors not checked", question=Q.STACK, why_open=drv.why_open)
        return
    dv = mx.version_tuple(str(drv.value))
    need: list[tuple[str, str, str]] = []  # (cuda, why, floor)
    tc = ctx.facts.torch_cuda
    if tc.present:
        need.append((str(tc.value), f"torch built for CUDA {tc.value}", ""))
    comps = _cu13_components(ctx)
    if comps:
        need.append(("13.0", ", ".join(comps), ""))
    for cuda, why, _ in need:
        # minor-version compatibility: only the major's x.0 floor is required (docs: cuda-compatibility)
        cuda = f"{cuda.split('.')[0]}.0"
        floor = mx.driver_floor(cuda)
        if floor and _older_than(dv, floor[0]) is None:
            ctx.gap(f"driver {drv.value} is written without all its parts: whether it reaches {floor[0]} (CUDA {cuda}, needed by "
                    f"{why}) could not be told", blocking=True, question=Q.STACK)
            ctx.undecided.append(f"driver {drv.value} may be below {floor[0]} (written without all its parts)")
            break
        if floor and dv < mx.version_tuple(floor[0]):
            ctx.add("MTP205", f"driver {drv.value} is older than {floor[0]}, the minimum for CUDA {cuda} needed by {why}",
                    evidence=[ev("driver", drv), ev("driver CUDA", ctx.facts.cuda_driver_version), ev("needs", why)],
                    remediation=f"Install NVIDIA driver >= {floor[0]} (CUDA {cuda}) or install the cuda-compat forward-compatibility package; "
                                f"or use CUDA-{ctx.facts.cuda_driver_version.value or '12.x'} builds of torch / kernels")
            break
        cdv = ctx.facts.cuda_driver_version
        if cdv.present and (supported := mx.parse_version(cdv.value)) and (wanted := mx.parse_version(cuda)) and supported < wanted:
            ctx.add("MTP205", f"the driver supports CUDA {cdv.value} but {why} needs CUDA {cuda}",
                    evidence=[ev("driver", drv), ev("driver CUDA", cdv), ev("needs", why)],
                    remediation=f"Install NVIDIA driver >= {floor[0] if floor else '(see CUDA release notes)'} or use builds for CUDA {cdv.value}")
            break
    floor = mx.load()["blackwell_min_driver"]["min_driver"]
    # the driver is one per machine: every Blackwell GPU is blocked, one finding over all of them
    blackwell = [g for g in ctx.gpus if g.cc and g.cc[0] >= 10]
    if blackwell and _older_than(dv, floor):
        g = blackwell[0]
        which = (f"GPU {g.index} ({g.name.value})" if len(blackwell) == 1 else
                 f"GPUs {index_ranges(x.index for x in blackwell)} ({', '.join(dict.fromkeys(str(x.name.value) for x in blackwell))})")
        ctx.add("MTP206", f"driver {drv.value} is older than {floor}, the first driver (CUDA 12.8) that runs Blackwell {which}",
                gpus=blackwell, evidence=[ev("driver", drv), ev("compute capability", g.compute_capability)],
                remediation=f"Install NVIDIA driver >= {floor} (R570+; >= 580.65.06 for CUDA 13 stacks)")








def check_torch_pins(ctx: Context) -> None:
    """MTP209: an installed package's ``Requires-Dist: torch`` pin (recorded in the machine facts) that the installed
    torch does not meet. Sets ``ctx.pins_checked`` when any pin was read, so an engine's own release table of pins
    (:attr:`KernelChecks.checks`) only speaks where the machine recorded none."""
    tv = ctx.facts.torch_version
    if not tv.present:
        return
    installed = mx.base(mx.parse_version(tv.value) or Version("0"))
    for key, pin in sorted(ctx.facts.requires.items()):
        spec = str(pin.value or "")
        if not spec or not key.endswith("-> torch"):
            continue
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            ok = SpecifierSet(spec).contains(installed, prereleases=True)
        except InvalidSpecifier:
            continue
        ctx.pins_checked = True
        if not ok:
            dist = key.split(" ->")[0]
            ctx.add("MTP209", f"{dist} requires torch{spec} but torch {tv.value} is installed: its compiled ops are ABI-bound to one torch version and will fail to load",
                    evidence=[ev(f"{dist} Requires-Dist", pin), ev("torch", tv)],
                    remediation=f"pip install 'torch{spec}' (same CUDA build), or build {dist} from source against torch {installed} with nvcc >= 12.8")


def known_bad_text(fi: Version | None, row: dict[str, Any]) -> str:
    """One sentence for a matching ``known_bad`` matrix row: the installed flashinfer, the row's range, its reason
    and its primary source (an issue URL), nothing from other rows."""
    return f"flashinfer {fi} is in the known-bad range {row['flashinfer']}: {row['reason']} ({row['source']})"














def check_flashinfer_trio(ctx: Context) -> None:
    """MTP221: flashinfer-python / -cubin / -jit-cache base versions differ."""
    vs = {}
    for d in ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache"):
        v = ctx.version(d)
        if v is not None:
            vs[d] = v
    bases = {mx.base(v) for v in vs.values()}
    if len(bases) > 1:
        ctx.add("MTP221", "flashinfer packages disagree: " + ", ".join(f"{d} {v}" for d, v in vs.items()),
                evidence=[ev(d, ctx.facts.package(d)) for d in vs],
                remediation="pip install the same version of flashinfer-python, flashinfer-cubin and flashinfer-jit-cache "
                            f"(e.g. all =={max(bases)}, jit-cache with your CUDA tag)")






def check_flashinfer_arch_list(ctx: Context) -> None:
    """MTP224: FLASHINFER_CUDA_ARCH_LIST with plain 12.0/12.1 on flashinfer <= 0.6.0."""
    val = ctx.facts.env.get("FLASHINFER_CUDA_ARCH_LIST")
    fi = ctx.flashinfer
    if not val or fi is None or fi > Version("0.6.0"):
        return
    import re

    plain = [t for t in re.split(r"[\s;,]+", val) if re.fullmatch(r"12\.[01]", t)]
    if plain:
        ctx.add("MTP224", f"FLASHINFER_CUDA_ARCH_LIST={val} has plain {', '.join(plain)}: flashinfer {fi} compiles it verbatim as sm_120 without the a/f suffix, and FP4 code then traps or gives NaN",
                evidence=[Evidence("FLASHINFER_CUDA_ARCH_LIST", val), ev("flashinfer", ctx.facts.package("flashinfer-python"))],
                remediation="export FLASHINFER_CUDA_ARCH_LIST='12.0a' (GB10: '12.1a'; CUDA >= 12.9: '12.0f')")


def check_memory(ctx: Context) -> None:
    """MTP225: GPU memory not reported (GB10 unified memory)."""
    for g in ctx.gpus:
        if not g.memory_bytes.present and "Not Supported" in str(g.memory_bytes.missing):
            ctx.add("MTP225", f"GPU {g.index} ({g.name.value}) reports memory as 'Not Supported' (unified memory): size the KV cache from system memory, "
                    "not from GPU memory", gpu=g, evidence=[ev("memory", g.memory_bytes)],
                    remediation=ctx.kernels.memory_remediation)




































def check_probe(ctx: Context) -> None:
    """MTP227: the --probe FP4 GEMM gave NaN/Inf, a mismatch, or failed on an FP4-capable GPU."""
    p = ctx.probe
    if p is None:
        return
    if p.error:
        ctx.gap(f"probe did not run: {p.error}", question=Q.FP4)
        return
    cc = p.cc
    for r in p.results:
        if cc and cc[0] < 10:
            continue  # reported by MTP200 as evidence: no FP4 hardware, failure expected
        if r["status"] == "mismatch":
            ctx.add("MTP227", f"probe {r['path']} on {p.gpu}: nan={r.get('nan')} inf={r.get('inf')} relative error {r.get('rel_error')} (tolerance {r.get('tolerance')})",
                    evidence=[Evidence("probe", "; ".join(p.ran))],
                    remediation=ctx.kernels.probe_mismatch_remediation)
        elif r["status"] == "error":
            ctx.add("MTP227", f"probe {r['path']} failed on {p.gpu} ({sm_name(cc) if cc else '?'}): {r.get('error')}",
                    evidence=[Evidence("probe", "; ".join(p.ran))], severity=Severity.WARNING,
                    remediation="check the backend's requirements (cuDNN, flashinfer version) and the torch build")


def check_platform(ctx: Context) -> None:
    """MTP229: WSL2 / Windows host with SM12x FP4."""
    pf = ctx.facts.platform
    if pf.present and pf.value in ("wsl2", "windows") and any(g.cc and g.cc[0] == 12 for g in ctx.gpus) and ctx.fp4_intent:
        ctx.add("MTP229", f"{pf.value} host: most public SM120 FP4 reports on WSL2/Windows needed extra patching (gh:flashinfer-ai/flashinfer#2723)",
                evidence=[ev("platform", pf)], remediation="run on native Linux with the same driver and packages")


#: The machine's own checks: what the GPUs, driver, toolkit and installed packages are, whatever engine runs.
#: The FP4 kernel checks of the engine that runs the launch follow them (``ctx.kernels.checks``).
MACHINE_CHECKS: tuple[Callable[[Context], None], ...] = (
    check_verdict_inputs, check_mixed_cc, check_torch_build, check_driver, check_torch_pins, check_flashinfer_trio,
    check_flashinfer_arch_list, check_memory, check_probe, check_platform,
)


def _not_installed(fact: Fact) -> bool:
    """Whether a package fact says the distribution is absent (live: ``"not installed"``; ``sglang.check_env``:
    ``"not installed (Module Not Found)"``), as opposed to not recorded."""
    return not fact.present and str(fact.missing or "").startswith("not installed")


def check_fp4_kernel_evidence(ctx: Context) -> None:
    """The evidence a "capable" native-FP4 verdict needs of the engine (the same rule for every engine, each saying
    what its FP4 path loads: :attr:`KernelChecks.package` and :attr:`KernelChecks.fp4_kernel_packages`): its
    release, and one installed distribution of each kernel group. What is missing leaves the verdict undecided
    (:attr:`Context.undecided`: could not tell, exit 3), never "capable"; a package the facts show as not installed
    is said so. Kernel builds whose SM targets the engine's checks read but the facts lack are a non-blocking gap.
    Runs only where it matters: FP4 intent and a GPU with FP4 tensor cores (below SM100 the hardware decides)."""
    if not ctx.fp4_intent or not any(g.cc and g.cc[0] >= 10 for g in ctx.gpus):
        return
    from mtp_audit.engines.registry import engine_label

    k, label = ctx.kernels, engine_label(ctx.engine)
    if k.package is None:
        ctx.undecided.append(f"the preflight reads no {label} release or FP4 kernel build from a machine, so whether its FP4 kernels "
                             "run here was not checked")
        return
    pkg = ctx.facts.package(k.package)
    if _not_installed(pkg):
        ctx.undecided.append(f"{label} is {pkg.missing}, so no FP4 kernel of it is on this machine; "
                             "the verdict is that of the release you install, which was not given")
        ctx.gap(f"{label} is shown as {pkg.missing}: a launch of it on this machine as it stands "
                "does not start; its FP4 kernels were not checked", question=Q.FP4)
        return
    if ctx.engine_version is None:
        why = f"{label} {pkg.value} is not a release" if pkg.present else f"{label}'s version is not shown"
        if not any(u.startswith(why) for u in ctx.undecided):
            ctx.undecided.append(f"{why}, so the FP4 kernels it loads were not checked")
    _check_kernel_packages(ctx, label)


def _check_kernel_packages(ctx: Context, label: str) -> None:
    """The kernel groups of :func:`check_fp4_kernel_evidence`: each needs one installed distribution; installed ones
    of :attr:`KernelChecks.fp4_cubin_packages` whose shared objects' SM targets were not read get a non-blocking gap."""
    k = ctx.kernels
    for group in k.fp4_kernel_packages:
        facts = [ctx.facts.package(d) for d in group]
        names = " / ".join(group)
        if not any(f.present for f in facts):
            state = "not installed" if all(_not_installed(f) for f in facts) else "not shown"
            ctx.undecided.append(f"{names}, whose FP4 kernels {label} loads, {'is' if len(group) == 1 else 'are'} {state}")
    read = {b.package for b in ctx.facts.binaries if b.targets.present}
    unread = [d for d in k.fp4_cubin_packages if ctx.facts.package(d).present and d not in read]
    if unread:
        ctx.gap(f"SM targets of {', '.join(unread)} not read (a version only): whether its build holds FP4 kernels for this GPU "
                "was not checked", question=Q.FP4)


#: Findings about the launch command's text (a flag or value the installed SGLang's argparse rejects). They stop
#: the launch, but say nothing about what the GPU and its stack can run, so they stay out of the MTP228 verdict.
COMMAND_LINE_RULES = ("MTP226", "MTP230")


def narrowest_tensor_core_type(cc: tuple[int, int]) -> str:
    """What a GPU below SM100 has instead of FP4 tensor cores, as a parenthesis: FP8 from SM89 (Ada, Hopper), none
    below (Ampere and Turing: BF16/FP16 and INT8 are their narrowest). Source: PTX ISA, ``mma`` with ``.e4m3`` /
    ``.e5m2`` "requires sm_89 or higher"; ``.e2m1`` (FP4) "requires sm_100a" and later."""
    return "FP8 is the narrowest" if cc >= (8, 9) else "no FP8 either: FP8 tensor-core instructions start at SM89"


def verdicts(ctx: Context) -> list[dict[str, Any]]:
    """Per-GPU native-FP4 verdict: capable / not capable / unknown, with reasons (rule ids + text).

    The verdict describes the GPU and its software stack; findings of :data:`COMMAND_LINE_RULES` (a flag the
    installed SGLang does not know, a value outside its choices) are reported on their own and ignored here.
    """
    from mtp_audit.preflight import vendors

    ctx.unknown_verdicts.clear()
    if vendors.applies(ctx):
        return vendors.verdicts(ctx, CAPABLE, NOT_CAPABLE, UNKNOWN)
    out = []
    for g in ctx.gpus:
        cc = g.cc
        loc = ctx.device(g.index)
        errs = [f for f in ctx.findings if f.severity >= Severity.ERROR and located_at(f.location.symbol, loc, g.index)
                and f.rule_id not in COMMAND_LINE_RULES]
        conflict = name_cc_conflict(g)
        if cc is None:
            v, reasons = UNKNOWN, [f"compute capability unknown: {g.compute_capability.missing}"]
            _open_verdict(ctx, g.index, g.compute_capability)
        elif conflict is not None:
            v, reasons = UNKNOWN, [conflict]
            ctx.unknown_verdicts[g.index] = None  # read, and contradicting itself
        elif cc[0] < 10:
            v, reasons = NOT_CAPABLE, [f"{sm_name(cc)} has no FP4 tensor-core instructions ({narrowest_tensor_core_type(cc)})"] + [f"{f.rule_id}: {f.message}" for f in errs if f.rule_id != "MTP200"]
        elif errs:
            v, reasons = NOT_CAPABLE, [f"{f.rule_id}: {f.message}" for f in errs]
        else:
            blocking = [gp.message for gp in ctx.gaps]
            key_missing = []
            if not ctx.facts.torch_cuda.present:
                key_missing.append(f"torch CUDA build unknown ({ctx.facts.torch_cuda.missing})")
            if not ctx.facts.driver_version.present:
                key_missing.append(f"driver version unknown ({ctx.facts.driver_version.missing})")
            key_missing += ctx.undecided
            if key_missing:
                v, reasons = UNKNOWN, [f"{sm_name(cc)} has FP4 tensor cores, but " + "; ".join(key_missing)] + blocking
                _open_verdict(ctx, g.index, ctx.facts.torch_cuda, ctx.facts.driver_version)
            else:
                v, reasons = CAPABLE, [f"{sm_name(cc)} has FP4 tensor cores and no blocking problem was found in the stack"] + [f"not checked: {b}" for b in blocking]
        out.append({"gpu": g.index, "name": g.name.value, "compute_capability": cc_str(cc) if cc else None, "native_fp4": v, "reasons": reasons})
    return out


def _open_verdict(ctx: Context, gpu: int, *facts: Fact) -> None:
    """Record in :attr:`Context.unknown_verdicts` that GPU ``gpu``'s verdict is unknown, and why: the first
    ``why_open`` of the ``facts`` its reason names (``None`` when each was looked for)."""
    ctx.unknown_verdicts[gpu] = next((f.why_open for f in facts if f.why_open), None)


def index_ranges(indices: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 5]`` -> ``"0-3,5"`` (sorted, consecutive runs collapsed)."""
    xs = sorted(set(indices))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def verdict_groups(vs: list[dict[str, Any]]) -> list[tuple[tuple[str | None, str | None, str], list[dict[str, Any]]]]:
    """Per-GPU verdicts grouped by ``(name, compute capability, verdict)``, groups in order of their first GPU.

    MTP228 reports one finding per group (eight identical B200 lines say nothing the first did not).
    """
    groups: dict[tuple[str | None, str | None, str], list[dict[str, Any]]] = {}
    for v in vs:
        groups.setdefault((v["name"], v["compute_capability"], v["native_fp4"]), []).append(v)
    return list(groups.items())


def overall(vs: list[dict[str, Any]]) -> str:
    """Worst of the per-GPU verdicts; ``unknown`` without GPUs."""
    if not vs:
        return UNKNOWN
    kinds = {v["native_fp4"] for v in vs} - {NOT_APPLICABLE}
    if not kinds:
        return NOT_APPLICABLE
    return NOT_CAPABLE if NOT_CAPABLE in kinds else UNKNOWN if UNKNOWN in kinds else CAPABLE


def analyze(ctx: Context) -> Context:
    """Run every check on ``ctx`` (mutates and returns it): the NVIDIA checks on CUDA (and where the platform is not
    known), the platform's own checks on ROCm, CANN and CPU-only machines (:mod:`mtp_audit.preflight.vendors`)."""
    from mtp_audit.preflight import vendors

    checks = ((vendors.check_platform, vendors.check_device_flag, vendors.check_amd, vendors.check_ascend, vendors.check_intel_gaudi,
               vendors.check_cpu)
              if vendors.applies(ctx) else (*MACHINE_CHECKS, *ctx.kernels.checks, check_fp4_kernel_evidence))
    for check in checks:
        before = len(ctx.findings)
        check(ctx)
        if ctx.launch is None and check in ctx.kernels.default_flag_checks:
            ctx.findings[before:] = [_as_default_launch_note(f, ctx.kernels.label) for f in ctx.findings[before:]]
    return ctx


def _as_default_launch_note(f: Finding, engine: str) -> Finding:
    """``f`` (found without a launch) as information about a launch with the default flags: never an error or a
    warning about flags nobody passed. The message says so; the remediation stays (it names the flag to pass)."""
    from dataclasses import replace

    if f.severity <= Severity.INFO:
        return f
    return replace(f, severity=Severity.INFO,
                   message=f"no launch given; an FP4 launch with {engine}'s default flags would meet this ({f.severity.label} for "
                           f"that launch): {f.message}")


_ = Path  # re-exported type for callers' annotations
