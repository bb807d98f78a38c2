"""The preflight analysis: facts + intended launch -> findings (MTP2xx), gaps and a per-GPU verdict.

Each check is a function of a :class:`Context`; the rule it implements is named in its docstring and
defined (doc, sources, examples) in :mod:`mtp_audit.preflight.rules`. Facts behind each check:
``../shared/research/blackwell_fp4.md`` §10 (candidate rules R01-R35) and the matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from mtp_audit.preflight import matrix as mx
from mtp_audit.preflight.elf import cubin_loads_on, fp4_capable_cubins
from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts, fmt_value
from mtp_audit.preflight.launch import CheckpointQuant, Launch
from mtp_audit.preflight.probe import ProbeResult
from mtp_audit.report import Evidence, Finding, Gap, Location, Severity

FP4_QUANTIZATIONS = ("modelopt_fp4", "nvfp4_online", "mxfp4", "modelopt_mixed", "w4afp8")
#: vLLM ``--quantization`` values that load FP4 weights (QuantizationMethods, wheel:vllm-0.20.0:vllm/model_executor/layers/quantization/__init__.py:17-34).
VLLM_FP4_QUANTIZATIONS = ("modelopt_fp4", "modelopt_mixed", "mxfp4", "gpt_oss_mxfp4")
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
        sglang_facts: ``facts["sglang"]`` of the sglang analyzer, or ``None`` (matrix used instead).
        probe: the ``--probe`` result, or ``None``.
        engine: ``"sglang"`` or ``"vllm"``: whose semantics the checks apply (:mod:`mtp_audit.preflight.engine`).
        vllm_version: the version of the vLLM source the launch audit names (``--vllm TARGET``), which wins over the
            machine's installed vllm; ``None`` when none was named.
    """

    facts: MachineFacts
    engine: str = "sglang"
    vllm_version: str | None = None
    launch: Launch | None = None
    quant: CheckpointQuant | None = None
    sglang_facts: dict[str, Any] | None = None
    probe: ProbeResult | None = None
    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    resolved: dict[str, Any] = field(default_factory=dict)
    #: facts the native-FP4 verdict needs that were read but could not be decided (a driver written as 580.65)
    undecided: list[str] = field(default_factory=list)

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

    @property
    def sglang(self) -> Version | None:
        """SGLang version: the sglang analyzer's, else the facts'."""
        v = None
        if self.sglang_facts and self.sglang_facts.get("version"):
            v = mx.parse_version(str(self.sglang_facts["version"]))
        v = v or self.version("sglang")
        # a source checkout reports 0.0.0.devN+g<sha>: its release is unknown, not "older than 0.1"
        return None if v is not None and v < Version("0.1") else v

    @property
    def is_vllm(self) -> bool:
        """The verdict is for vLLM."""
        return self.engine == "vllm"

    @property
    def engine_name(self) -> str:
        """``"SGLang"`` or ``"vLLM"``."""
        return "vLLM" if self.is_vllm else "SGLang"

    @property
    def vllm(self) -> Version | None:
        """vLLM version: the audited vLLM source's (``--vllm TARGET``), else the facts' (``vLLM Version`` of a
        collect-env dump, or the installed package)."""
        if self.vllm_version:
            v = mx.parse_version(self.vllm_version)
            if v is not None:
                return v
        return self.version("vllm")

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
        if q in (VLLM_FP4_QUANTIZATIONS if self.is_vllm else FP4_QUANTIZATIONS):
            return True
        return not self.is_vllm and self.launch.get("--fp4-gemm-backend") is not None

    @property
    def mxfp4(self) -> bool:
        """The checkpoint or flag is MXFP4."""
        q = (self.launch.get("--quantization") if self.launch else "") or ""
        return q.lower() in ("mxfp4", "gpt_oss_mxfp4") or bool(self.quant and str(self.quant.algo).upper() == "MXFP4")

    def add(self, rule_id: str, message: str, *, gpu: GpuFacts | None = None, evidence: Iterable[Evidence] = (),
            remediation: str | None = None, severity: Severity | None = None, detail: str = "") -> None:
        """Append a finding of ``rule_id`` located at GPU ``gpu`` (or the machine); ``detail`` holds what
        does not fit a one-line message (rationale, cost)."""
        from mtp_audit.preflight.rules import RULES_BY_ID

        loc = Location(symbol=f"cuda:{gpu.index}") if gpu is not None else Location(symbol="machine")
        self.findings.append(RULES_BY_ID[rule_id].finding(message, loc, evidence=tuple(evidence),
                                                          remediation=remediation, severity=severity, detail=detail))

    def gap(self, message: str, blocking: bool = False) -> None:
        """Record something the preflight could not decide."""
        self.gaps.append(Gap("preflight", message, None, blocking))


def ev(label: str, fact: Fact | Any) -> Evidence:
    """Evidence from a fact (with its source) or a plain value."""
    if isinstance(fact, Fact):
        return Evidence(label, f"{fact} [{fact.source}]" if fact.present and fact.source else str(fact))
    return Evidence(label, fmt_value(fact) if isinstance(fact, tuple) else str(fact))


# --- effective backends ------------------------------------------------------------------------


def _flag_from_sglang_facts(ctx: Context, flag: str) -> dict[str, Any] | None:
    if not ctx.sglang_facts:
        return None
    args = ctx.sglang_facts.get("cli_arguments") or {}
    return args.get(flag) if isinstance(args, dict) else None


def effective_backend(ctx: Context, flag: str, table: str) -> tuple[str | None, str, str]:
    """``(backend, how, source)`` SGLang will use for ``flag`` on GPU 0.

    ``how`` is ``"explicit"``, ``"default"`` or ``"auto"``. ``backend`` is ``None`` when it cannot be
    told (SGLang version unknown, or outside the matrix), with the reason in ``source``.
    """
    cc = ctx.cc0
    given = ctx.launch.get(flag) if ctx.launch else None
    if given and given != "auto":
        return given, "explicit", "launch command"
    sg = ctx.sglang
    if sg is None:
        return None, "auto", "SGLang version unknown"
    value = given
    how = "auto"
    if value is None:
        arg = _flag_from_sglang_facts(ctx, flag)
        if arg and arg.get("default"):
            value = str(arg["default"]).strip("'\"")
            how = "default"
            if value != "auto":
                return value, how, f"sglang analyzer: {arg.get('default_location') or arg.get('location', 'server_args')}"
        elif table == "fp4_gemm_backend":
            row = mx.sglang_row(table, sg)
            if row and row.get("default") and row["default"] != "auto":
                return row["default"], "default", row["source"]
            if row and row.get("effective_default") and "auto" not in row:
                return row["effective_default"], "default", row["source"]
    if cc is None:
        return None, how, "GPU compute capability unknown"
    to, src = mx.resolve_auto(table, sg, cc, ctx.launch.get("--quantization") if ctx.launch else None)
    return to, "auto", src


# --- checks ------------------------------------------------------------------------------------


def check_verdict_inputs(ctx: Context) -> None:
    """Gaps for missing headline facts."""
    f = ctx.facts
    if not f.gpus and f.enumerated:
        ctx.gap(f"CUDA_VISIBLE_DEVICES={f.env.get('CUDA_VISIBLE_DEVICES', '?')} hides all {len(f.enumerated)} GPU(s) the driver "
                "lists: CUDA sees none, so no GPU was checked", blocking=True)
    elif not f.gpus:
        ctx.gap(f"no GPU information ({f.gpu_list.missing or 'none listed'})", blocking=True)
    for g in f.gpus:
        if not g.compute_capability.present:
            ctx.gap(f"GPU {g.index}: compute capability unknown ({g.compute_capability.missing})", blocking=True)


def check_no_native_fp4(ctx: Context) -> None:
    """MTP200 / MTP201 on SGLang: no FP4 tensor cores (SM < 100); Marlin W4A16 fallback and its cost.
    vLLM: :func:`check_vllm_fp4`."""
    if ctx.is_vllm:
        return
    marlin = mx.load()["marlin_w4a16"]
    sg = ctx.sglang
    gemm, _, _ = effective_backend(ctx, "--fp4-gemm-backend", "fp4_gemm_backend")
    moe, _, _ = effective_backend(ctx, "--moe-runner-backend", "moe_runner_backend_nvfp4")
    has_marlin = sg is not None and sg >= Version(mx.load()["sglang"]["marlin_fallback_from"])
    for g in ctx.gpus:
        cc = g.cc
        if cc is None or cc[0] >= 10 or not ctx.fp4_intent:
            continue
        evs = [ev("GPU", g.name), ev("compute capability", g.compute_capability), ev("FP4 instruction", "none (FP8 is the narrowest tensor-core type on SM90)")]
        if ctx.probe and ctx.probe.results:
            for r in ctx.probe.results:
                evs.append(Evidence(f"probe {r['path']}", r.get("error") or r["status"]))
        marlin_detail = f"{marlin['what']}. Cost: {marlin['cost']}."
        if has_marlin and gemm == "marlin" and moe in ("marlin", None):
            ctx.add("MTP201", f"GPU {g.index} ({g.name.value}, {sm_name(cc)}) has no FP4 tensor cores; SGLang {sg} runs this NVFP4 checkpoint "
                    "through Marlin W4A16 (4-bit weights, BF16 tensor-core math)", gpu=g, evidence=evs, detail=marlin_detail)
            continue
        if sg is None:
            fallback, detail = "SGLang >= 0.5.13 falls back to Marlin W4A16 (4-bit weights, BF16 math)", (
                "On SGLang >= 0.5.13 the fallback is Marlin W4A16 (--fp4-gemm-backend marlin --moe-runner-backend marlin; "
                f"'auto' picks it on SM80-SM90): {marlin_detail}")
        elif has_marlin:
            fallback, detail = f"SGLang {sg} falls back to Marlin W4A16 (4-bit weights, BF16 math)", (
                f"SGLang {sg} falls back to Marlin W4A16 (--fp4-gemm-backend marlin --moe-runner-backend marlin; 'auto' picks it "
                f"on SM80-SM90): {marlin_detail}")
        else:
            fallback, detail = f"SGLang {sg} has no Marlin NVFP4 fallback (added in 0.5.13): native NVFP4 kernels will refuse this GPU", ""
        ctx.add("MTP200", f"GPU {g.index} ({g.name.value}, compute capability {cc_str(cc)}) has no FP4 tensor cores "
                f"(SM100/SM103/SM110/SM120/SM121 only); {fallback}", gpu=g, evidence=evs, detail=detail,
                remediation=("Run NVFP4 on Blackwell (B200/B300/RTX PRO 6000/RTX 50xx/GB10), or accept W4A16: "
                             "--fp4-gemm-backend marlin --moe-runner-backend marlin on SGLang >= 0.5.13"
                             + ("" if has_marlin or sg is None else f" (upgrade from {sg})")))


def check_mixed_cc(ctx: Context) -> None:
    """MTP202: GPUs of different compute capability (SGLang picks backends from device 0)."""
    ccs = sorted({g.cc for g in ctx.gpus if g.cc})
    if len(ccs) > 1:
        how = ("vLLM chooses FP4 kernels from current_platform.get_device_capability(), device 0 by default "
               "(wheel:vllm-0.20.0:vllm/platforms/cuda.py:592)" if ctx.is_vllm else "SGLang chooses FP4 backends from GPU 0 only")
        ctx.add("MTP202", f"GPUs have different compute capabilities ({', '.join(cc_str(c) for c in ccs)}); {how}",
                evidence=[Evidence(f"GPU {g.index}", f"{g.name.value} ({cc_str(g.cc)})") for g in ctx.gpus if g.cc])


def check_torch_build(ctx: Context) -> None:
    """MTP203 (torch CUDA build < 12.8 on Blackwell) and MTP204 (GB10 range warning is cosmetic)."""
    tc = ctx.facts.torch_cuda
    v = mx.parse_version(tc.value) if tc.present else None
    for cc in sorted({g.cc for g in ctx.gpus if g.cc and g.cc[0] >= 10}):
        g = next(x for x in ctx.gpus if x.cc == cc)
        if v is None:
            if ctx.facts.torch_version.present or tc.missing and "no +cu" in str(tc.missing):
                ctx.gap(f"torch's CUDA build unknown ({tc.missing}); cannot check it supports {sm_name(cc)}")
            continue
        if v < Version("12.8"):
            ctx.add("MTP203", f"torch {ctx.facts.torch_version.value or '?'} is built for CUDA {tc.value}, which has no {sm_name(cc)} kernels "
                    f"(GPU {g.index}, {g.name.value}): every kernel fails with 'no kernel image is available'",
                    gpu=g, evidence=[ev("torch", ctx.facts.torch_version), ev("torch CUDA build", tc), ev("compute capability", g.compute_capability)],
                    remediation="Install a cu128 or newer torch build (pip install torch --index-url https://download.pytorch.org/whl/cu128, "
                                "or torch >= 2.8 from PyPI), matching the torch pin of your "
                                + ("vllm wheel (its Requires-Dist torch==...)" if ctx.is_vllm else "sglang / sgl-kernel"))
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
            ctx.gap(f"driver version unknown ({drv.missing}); driver floors not checked")
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
                    f"{why}) could not be told", blocking=True)
            ctx.undecided.append(f"driver {drv.value} may be below {floor[0]} (written without all its parts)")
            break
        if floor and dv < mx.version_tuple(floor[0]):
            ctx.add("MTP205", f"driver {drv.value} is older than {floor[0]}, the minimum for CUDA {cuda} needed by {why}",
                    evidence=[ev("driver", drv), ev("driver CUDA", ctx.facts.cuda_driver_version), ev("needs", why)],
                    remediation=f"Install NVIDIA driver >= {floor[0]} (CUDA {cuda}) or install the cuda-compat forward-compatibility package; "
                                f"or use CUDA-{ctx.facts.cuda_driver_version.value or '12.x'} builds of torch / kernels")
            break
        cdv = ctx.facts.cuda_driver_version
        if cdv.present and mx.parse_version(cdv.value) and mx.parse_version(cuda) and mx.parse_version(cdv.value) < mx.parse_version(cuda):
            ctx.add("MTP205", f"the driver supports CUDA {cdv.value} but {why} needs CUDA {cuda}",
                    evidence=[ev("driver", drv), ev("driver CUDA", cdv), ev("needs", why)],
                    remediation=f"Install NVIDIA driver >= {floor[0] if floor else '(see CUDA release notes)'} or use builds for CUDA {cdv.value}")
            break
    floor = mx.load()["blackwell_min_driver"]["min_driver"]
    for g in ctx.gpus:
        if g.cc and g.cc[0] >= 10 and _older_than(dv, floor):
            ctx.add("MTP206", f"driver {drv.value} is older than {floor}, the first driver (CUDA 12.8) that runs Blackwell GPU {g.index} ({g.name.value})",
                    gpu=g, evidence=[ev("driver", drv), ev("compute capability", g.compute_capability)],
                    remediation=f"Install NVIDIA driver >= {floor} (R570+; >= 580.65.06 for CUDA 13 stacks)")
            break


def check_jit_nvcc(ctx: Context) -> None:
    """MTP207: SGLang >= 0.5.10 JIT-compiles its NVFP4 kernels; needs nvcc new enough for the SM (SGLang only)."""
    if ctx.is_vllm:
        return
    sg = ctx.sglang
    cc = ctx.cc0
    if sg is None or cc is None or cc[0] < 10 or not ctx.fp4_intent or sg < Version(mx.load()["sglang"]["jit_nvfp4_from"]):
        return
    floors = {tuple(r["target_for"]): r for r in mx.load()["toolkit_floors"]}
    row = floors.get(cc)
    need = row["min_nvcc"] if row else "12.8"
    tk = ctx.facts.toolkit
    g = next(x for x in ctx.gpus if x.cc == cc)
    if not tk.present:
        if ctx.facts.origin == "live" or "not found" in str(tk.missing) or "Not Available" in str(tk.missing):
            ctx.add("MTP207", f"SGLang {sg} JIT-compiles its NVFP4 kernels for {sm_name(cc)} at first use, but no nvcc was found ({tk.missing})",
                    gpu=g, evidence=[ev("nvcc", tk), ev("sglang", sg)],
                    remediation=f"Install the CUDA toolkit >= {need} and set CUDA_HOME (e.g. export CUDA_HOME=/usr/local/cuda-13.0)")
        else:
            ctx.gap(f"nvcc version unknown ({tk.missing}); SGLang {sg} JIT kernels need nvcc >= {need} for {sm_name(cc)}")
        return
    tv = mx.parse_version(tk.value)
    if tv is not None and tv < Version(need):
        ctx.add("MTP207", f"nvcc {tk.value} cannot build sm_{cc[0]}{cc[1]}a kernels (needs >= {need}); SGLang {sg} JIT-compiles its NVFP4 kernels at first use",
                gpu=g, evidence=[ev("nvcc", tk), ev("GPU", g.compute_capability)],
                remediation=f"Install CUDA toolkit >= {need} and point CUDA_HOME at it")


_KERNEL_PKGS = ("sgl-kernel", "sglang-kernel")


def check_kernel_binaries(ctx: Context) -> None:
    """MTP208: the sgl-kernel / sglang-kernel shared object has no cubin that loads on (or can run FP4 on) the GPU
    (SGLang only: vLLM does not load sgl-kernel)."""
    if ctx.is_vllm:
        return
    bins = [b for b in ctx.facts.binaries if b.package in _KERNEL_PKGS and b.targets.present and "sm90/" not in b.path]
    if not bins:
        return
    sg = ctx.sglang
    aot_fp4 = sg is None or sg < Version(mx.load()["sglang"]["jit_nvfp4_from"])
    for cc in sorted({g.cc for g in ctx.gpus if g.cc and g.cc[0] >= 10}):
        g = next(x for x in ctx.gpus if x.cc == cc)
        for b in bins:
            targets = tuple(b.targets.value)
            loads = [t for t in targets if cubin_loads_on(t, cc)]
            ptx_ok = [p for p in (b.ptx.value or ()) if p.startswith("compute_") and not p.endswith("a") and int(p[8:].rstrip("af")) // 10 <= cc[0]]
            evs = [Evidence("cubins", ", ".join(targets) or "none"), ev("compute capability", g.compute_capability)]
            if not loads and not ptx_ok:
                extra = (" (sm_120a cubins load only on 12.0, not on GB10's 12.1)" if cc == (12, 1) and "sm_120a" in targets else "")
                ctx.add("MTP208", f"{b.package} {b.path} has no kernel image for {sm_name(cc)} (GPU {g.index}, {g.name.value}): found {', '.join(targets)}{extra}; "
                        "the first kernel fails with 'no kernel image is available for execution on the device'",
                        gpu=g, evidence=evs,
                        remediation=("Install a build with sm_121a (e.g. sgl-kernel==<ver>+cu130 from SGLang's cu130 wheel index) or build sgl-kernel "
                                     "from source with nvcc >= 13.0 on aarch64; check with cuobjdump --list-elf"
                                     if cc == (12, 1) else f"Install an sgl-kernel built with nvcc >= 12.8 (sm_{cc[0]}{cc[1]}a) for your torch"))
            elif aot_fp4 and ctx.fp4_intent and not fp4_capable_cubins(targets, cc):
                ctx.add("MTP208", f"{b.package} {b.path} has only plain cubins for {sm_name(cc)} ({', '.join(loads)}): SGLang {sg or '<= 0.5.9'} runs NVFP4 from these AOT kernels, "
                        "and FP4 code built without the a/f suffix compiles to trap stubs or a software E2M1 path (NaN)",
                        gpu=g, evidence=evs,
                        remediation=f"Rebuild sgl-kernel with nvcc >= 12.8 so it gets sm_{cc[0]}{cc[1]}a and -DENABLE_NVFP4=1")


def check_torch_pins(ctx: Context) -> None:
    """MTP209: kernel wheel / sglang built for a different torch than the installed one."""
    tv = ctx.facts.torch_version
    if not tv.present:
        return
    installed = mx.base(mx.parse_version(tv.value) or Version("0"))
    checked = False
    for key, pin in sorted(ctx.facts.requires.items()):
        spec = str(pin.value or "")
        if not spec or not key.endswith("-> torch"):
            continue
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            ok = SpecifierSet(spec).contains(installed, prereleases=True)
        except InvalidSpecifier:
            continue
        checked = True
        if not ok:
            dist = key.split(" ->")[0]
            ctx.add("MTP209", f"{dist} requires torch{spec} but torch {tv.value} is installed: its compiled ops are ABI-bound to one torch version and will fail to load",
                    evidence=[ev(f"{dist} Requires-Dist", pin), ev("torch", tv)],
                    remediation=f"pip install 'torch{spec}' (same CUDA build), or build {dist} from source against torch {installed} with nvcc >= 12.8")
    sg = ctx.sglang
    if checked or sg is None or ctx.is_vllm:
        return
    for row in mx.load()["sglang"]["torch_pins"]:
        if mx.in_range(sg, row["sglang"]) and installed != Version(row["torch"]):
            ctx.add("MTP209", f"sglang {sg} pins torch=={row['torch']} (and its sgl-kernel is built for it) but torch {tv.value} is installed",
                    evidence=[ev("sglang", ctx.facts.package("sglang")), ev("torch", tv), Evidence("pin source", mx.load()["sglang"]["torch_pins_source"])],
                    remediation=f"pip install torch=={row['torch']} (cu128+ build), or rebuild sgl-kernel from source against torch {installed} with nvcc >= 12.8 "
                                "(sm_100a/sm_120a + ENABLE_NVFP4)")


def known_bad_text(fi: Version | None, row: dict[str, Any]) -> str:
    """One sentence for a matching ``known_bad`` matrix row: the installed flashinfer, the row's range, its reason
    and its primary source (an issue URL), nothing from other rows."""
    return f"flashinfer {fi} is in the known-bad range {row['flashinfer']}: {row['reason']} ({row['source']})"


def _resolve_fp4_backend(ctx: Context, flag: str, matrix_key: str, result_key: str, label: str) -> tuple[Any, ...] | None:
    """Shared start of the FP4 backend checks: GPU 0's capability (None below SM100 or without FP4
    intent), the backend ``flag`` resolves to (:func:`effective_backend`, recorded in
    ``ctx.resolved[result_key]``; a gap when unknown), GPU 0's facts and the base evidence.

    Returns ``(cc, gpu, backend, how, source, evidence)`` or ``None`` when there is nothing to check (always
    ``None`` for vLLM, whose backends :func:`check_vllm_fp4` checks).
    """
    cc = ctx.cc0
    if ctx.is_vllm or cc is None or not ctx.fp4_intent or cc[0] < 10:
        return None
    backend, how, src = effective_backend(ctx, flag, matrix_key)
    ctx.resolved[result_key] = {"value": backend, "how": how, "source": src}
    if backend is None:
        ctx.gap(f"effective {flag} unknown ({src})")
        return None
    g = next(x for x in ctx.gpus if x.cc == cc)
    evs = [Evidence(label, f"{backend} ({how}; {src})"), ev("compute capability", g.compute_capability)]
    return cc, g, backend, how, src, evs


def check_gemm_backend(ctx: Context) -> None:
    """MTP210 trtllm, MTP211 cute-dsl, MTP212 flashinfer_cutlass on SM12x, MTP213/214 cuDNN."""
    resolved = _resolve_fp4_backend(ctx, "--fp4-gemm-backend", "fp4_gemm_backend", "fp4_gemm_backend", "fp4 gemm backend")
    if resolved is None:
        return
    cc, g, backend, how, src, evs = resolved
    label = f"--fp4-gemm-backend {backend}" + ("" if how == "explicit" else f" (SGLang {ctx.sglang} '{how}' resolves to it on {sm_name(cc)})")
    sm = cc[0] * 10 + cc[1]
    fi = ctx.flashinfer
    if backend == "flashinfer_trtllm" and cc[0] != 10:
        ctx.add("MTP210", f"{label} is SM100/SM103-only: flashinfer raises \"mm_fp4 does not support backend 'trtllm' with capability {sm}\" on compute capability {cc_str(cc)}",
                gpu=g, evidence=evs, remediation="--fp4-gemm-backend flashinfer_cudnn (known-good on SM120 with cuDNN >= 9.10.2 / cudnn-frontend >= 1.13)")
    if backend == "flashinfer_cutedsl":
        rows = [r for r in mx.load()["flashinfer_mm_fp4"] if r["backend"] == "cute-dsl" and (fi is None and r["flashinfer"].startswith("<") or mx.in_range(fi, r["flashinfer"]))]
        sms = rows[0]["sms"] if rows else []
        if sm not in sms:
            ctx.add("MTP211", f"{label}: flashinfer {fi or '(version unknown)'} has no cute-dsl FP4 GEMM for SM{sm} (supported: {', '.join(map(str, sms))})",
                    gpu=g, evidence=evs, remediation="--fp4-gemm-backend flashinfer_cudnn" + (" (or flashinfer >= 0.7.4 for explicit cute-dsl on SM12x)" if cc[0] == 12 else ""))
    if backend == "flashinfer_cutlass" and cc[0] == 12:
        bad = [k for k in mx.load()["known_bad"] if "flashinfer_cutlass" in k.get("gemm_backend", []) and mx.in_range(fi, k["flashinfer"])]
        sev = Severity.ERROR if bad else None
        ctx.add("MTP212", f"{label} on {sm_name(cc)}: the flashinfer CUTLASS dense FP4 GEMM has public NaN/zero-output reports on SM12x "
                f"(NaN rows under mixed batches, gh:sgl-project/sglang#20047)" + "".join(f"; {known_bad_text(fi, k)}" for k in bad),
                gpu=g, evidence=evs + [ev("flashinfer", ctx.facts.package("flashinfer-python"))], severity=sev,
                remediation="--fp4-gemm-backend flashinfer_cudnn (the incident's known-good SM120 combination with --moe-runner-backend flashinfer_cutlass)")
    if backend == "flashinfer_cudnn":
        _check_cudnn(ctx, g, cc, evs)


def _cudnn_backend(ctx: Context) -> Fact:
    for name in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"):
        f = ctx.facts.package(name)
        if f.present:
            return f
    return Fact.absent("nvidia-cudnn-cu12/-cu13 not recorded")


def _check_cudnn(ctx: Context, g: GpuFacts, cc: tuple[int, int], evs: list[Evidence]) -> None:
    c = mx.load()["cudnn_fp4"]
    be = _cudnn_backend(ctx)
    fe = ctx.facts.package("nvidia-cudnn-frontend")
    problems = []
    if be.present and (mx.parse_version(be.value) or Version("0")) < Version(c["backend_min"]):
        problems.append(f"cuDNN {be.value} < {c['backend_min']}")
    if fe.present and (mx.parse_version(fe.value) or Version("0")) < Version(c["frontend_min"]):
        problems.append(f"cudnn-frontend {fe.value} < {c['frontend_min']}")
    for f, name in ((be, "cuDNN backend"), (fe, "nvidia-cudnn-frontend")):
        if not f.present:
            if "not installed" in str(f.missing):
                problems.append(f"{name} not installed")
            else:
                ctx.gap(f"{name} version unknown ({f.missing}); flashinfer_cudnn needs cuDNN >= {c['backend_min']} and cudnn-frontend >= {c['frontend_min']}")
    if problems:
        ctx.add("MTP213", f"--fp4-gemm-backend flashinfer_cudnn needs cuDNN >= {c['backend_min']} and cudnn-frontend >= {c['frontend_min']}: " + "; ".join(problems),
                gpu=g, evidence=evs + [ev("cuDNN", be), ev("cudnn-frontend", fe)],
                remediation=f"pip install 'nvidia-cudnn-cu13>={c['backend_min']}' 'nvidia-cudnn-frontend>={c['frontend_min']}' (cu12 stacks: nvidia-cudnn-cu12)")
    if ctx.mxfp4 and cc[0] == 12 and be.present and (mx.parse_version(be.value) or Version("0")) < Version(c["mxfp4_sm12x_backend_min"]):
        ctx.add("MTP214", f"cuDNN {be.value} has no MXFP4 FP4 GEMM on SM120/SM121 (needs >= {c['mxfp4_sm12x_backend_min']})", gpu=g,
                evidence=[ev("cuDNN", be), Evidence("checkpoint", "MXFP4")], remediation=f"pip install 'nvidia-cudnn-cu13>={c['mxfp4_sm12x_backend_min']}'")


def check_moe_backend(ctx: Context) -> None:
    """MTP215 SM100-only MoE backends, MTP216 'auto'->TRTLLM (0.5.10-0.5.12; 0.5.13 on without --quantization modelopt_fp4), MTP217 cutlass+NVFP4,
    MTP219 old flashinfer CUTLASS MoE on SM12x, MTP220 TRTLLM MoE NaN flashinfer range."""
    resolved = _resolve_fp4_backend(ctx, "--moe-runner-backend", "moe_runner_backend_nvfp4", "moe_runner_backend", "moe runner backend")
    if resolved is None:
        return
    cc, g, backend, how, src, evs = resolved
    sg = ctx.sglang
    fi = ctx.flashinfer
    sm100_only = mx.load()["sglang"]["sm100_only_moe_backends"]
    if backend in sm100_only and cc[0] != 10:
        if how == "explicit":
            ctx.add("MTP215", f"--moe-runner-backend {backend} uses trtllm-gen / CuTe-DSL MoE kernels that are SM100-only; GPU {g.index} is {sm_name(cc)} (compute capability {cc_str(cc)})",
                    gpu=g, evidence=evs, remediation="--moe-runner-backend flashinfer_cutlass")
        elif sg is not None and sg >= Version("0.5.13"):
            # 0.5.13 on move auto to flashinfer_cutlass on SM120 only for --quantization modelopt_fp4 (0.5.23
            # overrides.py:1513-1518); without it the ModelOpt MoE layer picks flashinfer_trtllm (modelopt_quant.py:3117-3123)
            ctx.add("MTP216", f"SGLang {sg} keeps --moe-runner-backend auto without --quantization modelopt_fp4, and the ModelOpt "
                    f"NVFP4 MoE layer then picks {backend} for every compute capability >= 10.0; its MoE kernels are SM100-only "
                    f"and fail on {sm_name(cc)}", gpu=g, evidence=evs,
                    remediation="--quantization modelopt_fp4 (SGLang then picks flashinfer_cutlass on SM110/SM120), or "
                                "--moe-runner-backend flashinfer_cutlass")
        else:
            ctx.add("MTP216", f"SGLang {sg} resolves --moe-runner-backend auto to {backend} for every compute capability >= 10.0; its NVFP4 MoE is SM100-only and fails on {sm_name(cc)}",
                    gpu=g, evidence=evs, remediation="--moe-runner-backend flashinfer_cutlass (or upgrade to SGLang >= 0.5.13, whose auto picks flashinfer_cutlass on SM120)")
    q = (ctx.launch.get("--quantization") if ctx.launch else "") or ""
    nvfp4 = q == "modelopt_fp4" or bool(ctx.quant and str(ctx.quant.algo).upper() == "NVFP4")
    if backend == "cutlass" and how == "explicit" and nvfp4 and sg is not None and sg >= Version("0.5.13"):
        ctx.add("MTP217", f"SGLang {sg} raises 'moe_runner_backend=cutlass is not supported for NVFP4 MoE'", gpu=g, evidence=evs,
                remediation="--moe-runner-backend flashinfer_cutlass")
    if backend == "flashinfer_cutlass" and cc[0] == 12 and fi is not None and fi < Version("0.6.8"):
        ctx.add("MTP219", f"flashinfer {fi} vendors CUTLASS 4.2.1, whose SM120 grouped block-scaled FP4 MoE GEMM fails to initialise or returns garbage (and crashes GB10 CUDA-graph capture)",
                gpu=g, evidence=evs + [ev("flashinfer", ctx.facts.package("flashinfer-python"))],
                remediation="pip install 'flashinfer-python>=0.6.8' (CUTLASS 4.4.2) with matching flashinfer-cubin / flashinfer-jit-cache")
    if backend in ("flashinfer_trtllm", "flashinfer_trtllm_routed") and cc[0] == 10:
        for k in mx.load()["known_bad"]:
            if k["id"] == "fi-trtllm-moe-nan" and mx.in_range(fi, k["flashinfer"]):
                ctx.add("MTP220", known_bad_text(fi, k),
                        gpu=g, evidence=evs + [ev("flashinfer", ctx.facts.package("flashinfer-python"))],
                        remediation="pip install 'flashinfer-python>=0.6.18' (or <=0.6.16rc4), or --moe-runner-backend flashinfer_cutlass")


def check_nvfp4_online(ctx: Context) -> None:
    """MTP218: --quantization nvfp4_online is SM100/SM103-only (an SGLang quantization)."""
    if ctx.is_vllm or not ctx.launch or (ctx.launch.get("--quantization") or "") != "nvfp4_online":
        return
    for g in ctx.gpus:
        if g.cc and g.cc[0] != 10:
            ctx.add("MTP218", f"--quantization nvfp4_online is supported only on Blackwell SM100/SM103; GPU {g.index} is {sm_name(g.cc)}", gpu=g,
                    evidence=[ev("compute capability", g.compute_capability)], remediation="use a pre-quantized NVFP4 checkpoint with --quantization modelopt_fp4")
            return


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


def check_fp8_kv_trtllm_mha(ctx: Context) -> None:
    """MTP222: FP8 KV cache + trtllm_mha attention on SM12x (SGLang's --attention-backend)."""
    if not ctx.launch or ctx.is_vllm:
        return
    cc = ctx.cc0
    attn = ctx.launch.get("--attention-backend")
    kv_flag = (ctx.launch.get("--kv-cache-dtype") or "").lower()
    kv = kv_flag.startswith("fp8") or (kv_flag in ("", "auto") and bool(ctx.quant and str(ctx.quant.kv_cache or "").upper() == "FP8"))
    if cc and cc[0] == 12 and attn == "trtllm_mha" and kv:
        g = next(x for x in ctx.gpus if x.cc == cc)
        ctx.add("MTP222", f"--attention-backend trtllm_mha with an FP8 KV cache on {sm_name(cc)}: there is no FP8 prefill FMHA for SM120/SM121; the server dies in CUDA-graph capture",
                gpu=g, evidence=[Evidence("kv cache", kv_flag or f"FP8 ({ctx.quant.source if ctx.quant else ''})"), ev("compute capability", g.compute_capability)],
                remediation="--attention-backend flashinfer (or triton), or --kv-cache-dtype bf16")


def check_pdmux(ctx: Context) -> None:
    """MTP223: --enable-pdmux on Blackwell (an SGLang flag)."""
    if ctx.is_vllm or not ctx.launch or "--enable-pdmux" not in ctx.launch.bools:
        return
    cc = ctx.cc0
    if cc and cc[0] >= 10:
        g = next(x for x in ctx.gpus if x.cc == cc)
        ctx.add("MTP223", f"--enable-pdmux raises 'Unsupported compute capability: {cc_str(cc)}' in pdmux_context.get_arch_constraints", gpu=g,
                evidence=[ev("compute capability", g.compute_capability)], remediation="drop --enable-pdmux")


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
                    remediation="--gpu-memory-utilization 0.85 or less on GB10 (vLLM)" if ctx.is_vllm else
                    "lower --mem-fraction-static (e.g. 0.7) (SGLang)")


# --- vLLM --------------------------------------------------------------------------------------

#: Backends tried for a fix, best first, per kind and SM major (vLLM names, matrix ``vllm.nvfp4_backend_sms``).
_VLLM_FIX_ORDER = {"moe": ("flashinfer_cutlass", "cutlass", "marlin"),
                   "linear": ("flashinfer_cutlass", "cutlass", "marlin"), "linear12": ("flashinfer_cudnn", "flashinfer_cutlass", "cutlass", "marlin")}


@dataclass(frozen=True)
class VllmRequest:
    """One explicit vLLM FP4 backend choice of the launch.

    Attributes:
        kind: ``"moe"`` or ``"linear"`` (dense GEMM).
        backend: the backend in ``--moe-backend`` / ``--linear-backend`` spelling; ``"flashinfer"`` for
            ``VLLM_USE_FLASHINFER_MOE_FP4=1`` without ``VLLM_FLASHINFER_MOE_BACKEND`` (any FlashInfer NVFP4 MoE).
        via: how the launch asks for it (``"--moe-backend flashinfer_trtllm"``, ``"VLLM_NVFP4_GEMM_BACKEND=cutlass"``).
        form: ``"flag"`` or ``"env"`` (the remediation is given in the same form).
        source: where vLLM reads it (matrix row source).
        off_sm100: the backend vLLM uses instead off the SM100 family, when it substitutes one itself
            (``VLLM_FLASHINFER_MOE_BACKEND=latency`` -> flashinfer_cutlass), else ``None``.
    """

    kind: str
    backend: str
    via: str
    form: str
    source: str
    off_sm100: str | None = None

    def backend_on(self, cc: tuple[int, int]) -> str:
        """The backend vLLM runs on compute capability ``cc`` for this request."""
        return self.off_sm100 if self.off_sm100 and cc[0] != 10 else self.backend


def _vllm() -> dict[str, Any]:
    return mx.load()["vllm"]


def vllm_backend_runs(kind: str, backend: str, cc: tuple[int, int]) -> tuple[bool | None, str]:
    """Whether vLLM's NVFP4 ``backend`` of ``kind`` runs on compute capability ``cc``, with the matrix row's source;
    ``(None, "")`` for a backend the matrix has no row for. ``"flashinfer"`` (any FlashInfer MoE) runs where
    flashinfer_cutlass, flashinfer_trtllm or flashinfer_cutedsl runs."""
    if backend == "flashinfer":
        parts = [vllm_backend_runs("moe", b, cc) for b in ("flashinfer_trtllm", "flashinfer_cutedsl", "flashinfer_cutlass")]
        return any(ok for ok, _ in parts), "; ".join(src for _, src in parts)
    for row in _vllm()["nvfp4_backend_sms"]:
        if row["kind"] == kind and row["backend"] == backend:
            if "sm_families" in row:
                return cc[0] * 10 in row["sm_families"], row["source"]
            return tuple(cc) >= tuple(row["min_cc"]), row["source"]
    return None, ""


def _vllm_env_row(name: str) -> dict[str, Any]:
    return next(r for r in _vllm()["env_vars"] if r["name"] == name)


def _vllm_flag_row(flag: str) -> dict[str, Any]:
    return next(r for r in _vllm()["flags"] if r["flag"] == flag)


def _vllm_requests(ctx: Context) -> list[VllmRequest]:
    """The explicit FP4 backend choices of a vLLM launch, after MTP226 (flag missing / invalid value) and MTP232
    (retired env var) findings and version gaps. An explicit ``--moe-backend`` wins over the env vars (the oracle
    checks it first: wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/oracle/nvfp4.py:216 before :228)."""
    v = ctx.vllm
    out: list[VllmRequest] = []
    given: dict[str, str] = {}
    for flag, kind in (("--moe-backend", "moe"), ("--linear-backend", "linear")):
        val = ctx.launch.get(flag) if ctx.launch else None
        if val is None:
            continue
        row = _vllm_flag_row(flag)
        first = row["vllm"].lstrip(">=")
        if v is None:
            ctx.gap(f"vLLM version unknown: {flag} {val} not checked against the vLLM release (the flag exists from vLLM {first})")
        elif not mx.in_range(v, row["vllm"]):
            fix = ("upgrade vLLM to >= 0.17.0; on this version choose the FlashInfer MoE with VLLM_USE_FLASHINFER_MOE_FP4=1 and "
                   "VLLM_FLASHINFER_MOE_BACKEND, or leave the MoE backend to vLLM" if flag == "--moe-backend" else
                   "drop --linear-backend and set VLLM_NVFP4_GEMM_BACKEND (vLLM 0.11.1-0.23), or upgrade vLLM to >= 0.22.0")
            ctx.add("MTP226", f"vLLM {v} has no {flag} option (added in vLLM {first}): the server stops with 'unrecognized arguments'",
                    evidence=[Evidence(flag, val), ev("vllm", ctx.facts.package("vllm")), Evidence("source", row["source"])], remediation=fix)
            continue
        else:
            ch = next((c for c in row["choices"] if mx.in_range(v, c["vllm"])), None)
            if ch is None:
                ctx.gap(f"{flag} {val} not checked: the choices of vLLM {v} are not in the capability matrix (read from the "
                        + ", ".join(c["vllm"] for c in row["choices"]) + " wheels)")
            elif val not in ch["values"]:
                ctx.add("MTP226", f"{flag} {val} is not accepted by vLLM {v}: argparse stops with 'invalid choice' (choices: {', '.join(ch['values'])})",
                        evidence=[Evidence(flag, val), Evidence("source", ch["source"])], remediation=f"use one of: {', '.join(ch['values'])}")
                continue
        given[kind] = val
        if val != "auto":
            out.append(VllmRequest(kind, val, f"{flag} {val}", "flag", row["source"]))
    retired = _vllm()["retired_env_vars"]
    set_vars = [n for n in retired["names"] if ctx.launch_env(n) is not None]
    for name in set_vars:
        if v is not None and mx.in_range(v, retired["vllm"]):
            kind = "linear" if name in ("VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_FBGEMM", "VLLM_USE_NVFP4_CT_EMULATIONS") else "moe"
            fix = "--linear-backend <backend> (e.g. --linear-backend marlin)" if kind == "linear" else "--moe-backend <backend> (e.g. --moe-backend flashinfer_cutlass)"
            ctx.add("MTP232", f"{name}={ctx.launch_env(name)} is not read by vLLM {v}: it was removed in vLLM 0.24.0, which only logs "
                    f"'Unknown vLLM environment variable detected: {name}' and chooses the backend itself (with --fail-on-environ-validation the "
                    "server refuses to start)", evidence=[Evidence(name, str(ctx.launch_env(name))), ev("vllm", ctx.facts.package("vllm")),
                                                          Evidence("source", retired["source"])],
                    remediation=f"unset {name} and pass {fix}")
    if v is None and set_vars:
        ctx.gap(f"vLLM version unknown: whether {', '.join(set_vars)} {'is' if len(set_vars) == 1 else 'are'} still read "
                "(removed in vLLM 0.24.0) was not checked")

    def applies(name: str) -> bool:
        return v is None or mx.in_range(v, _vllm_env_row(name)["vllm"])

    if "linear" not in given:
        val = ctx.launch_env("VLLM_NVFP4_GEMM_BACKEND")
        row = _vllm_env_row("VLLM_NVFP4_GEMM_BACKEND")
        if val and applies("VLLM_NVFP4_GEMM_BACKEND") and val in row["values"] and row["values"][val] not in ("marlin", "emulation"):
            out.append(VllmRequest("linear", row["values"][val], f"VLLM_NVFP4_GEMM_BACKEND={val}", "env", row["source"]))
        if str(ctx.launch_env("VLLM_USE_TRTLLM_FP4_GEMM") or "") == "1" and applies("VLLM_USE_TRTLLM_FP4_GEMM"):
            r = _vllm_env_row("VLLM_USE_TRTLLM_FP4_GEMM")
            out.append(VllmRequest("linear", "flashinfer_trtllm", "VLLM_USE_TRTLLM_FP4_GEMM=1", "env", r["source"]))
    fi = str(ctx.launch_env("VLLM_USE_FLASHINFER_MOE_FP4") or "")
    row = _vllm_env_row("VLLM_USE_FLASHINFER_MOE_FP4")
    raises = v is not None and v >= Version(row["raises_from"])
    if "moe" not in given and fi not in ("", "0") and applies("VLLM_USE_FLASHINFER_MOE_FP4") and raises:
        be = ctx.launch_env("VLLM_FLASHINFER_MOE_BACKEND")
        brow = _vllm_env_row("VLLM_FLASHINFER_MOE_BACKEND")
        if be in brow["values"]:
            out.append(VllmRequest("moe", brow["values"][be], f"VLLM_USE_FLASHINFER_MOE_FP4={fi} VLLM_FLASHINFER_MOE_BACKEND={be}", "env",
                                   row["source"] + "; " + brow["source"], brow["latency_off_sm100"] if be == "latency" else None))
        else:
            out.append(VllmRequest("moe", "flashinfer", f"VLLM_USE_FLASHINFER_MOE_FP4={fi}", "env", row["source"]))
    elif "moe" not in given and fi not in ("", "0") and v is None:
        ctx.gap(f"vLLM version unknown: what VLLM_USE_FLASHINFER_MOE_FP4={fi} does on this GPU depends on it (vLLM {row['raises_from']}-0.23 "
                "raise when no FlashInfer NVFP4 MoE runs; 0.11 falls back to Marlin)")
    return out


def _vllm_fix(ctx: Context, req: VllmRequest, cc: tuple[int, int]) -> str:
    """A vLLM-only remediation for ``req`` failing on ``cc``, in the request's own form (flag or env var)."""
    v = ctx.vllm
    if req.kind == "moe":
        order = _VLLM_FIX_ORDER["moe"]
    else:
        order = _VLLM_FIX_ORDER["linear12" if cc[0] == 12 else "linear"]
    alt = next((b for b in order if vllm_backend_runs("moe" if req.kind == "moe" else "linear", b, cc)[0]), "marlin")
    auto = " (or drop it: below SM100 vLLM picks Marlin W4A16 by itself)" if cc[0] < 10 else ""
    if req.form == "flag":
        flag = "--moe-backend" if req.kind == "moe" else "--linear-backend"
        return f"{flag} {alt}{auto}"
    if req.kind == "linear":
        env_val = {b: e for e, b in _vllm_env_row("VLLM_NVFP4_GEMM_BACKEND")["values"].items()}.get(alt, "marlin")
        newer = " (vLLM >= 0.22: --linear-backend " + alt + ")"
        return f"VLLM_NVFP4_GEMM_BACKEND={env_val}{auto}{newer}" if v is None or v < Version("0.24") else f"--linear-backend {alt}"
    if alt == "flashinfer_cutlass":
        return "VLLM_FLASHINFER_MOE_BACKEND=throughput (FlashInfer CUTLASS MoE), or unset VLLM_FLASHINFER_MOE_BACKEND (vLLM >= 0.17: --moe-backend flashinfer_cutlass)"
    return ("unset VLLM_USE_FLASHINFER_MOE_FP4 (vLLM then falls back to Marlin W4A16 below SM100)" + (" or pass --moe-backend marlin" if v is not None and v >= Version("0.17") else ""))


def check_vllm_fp4(ctx: Context) -> None:
    """vLLM: MTP200 (no FP4 fallback in this vLLM below SM100), MTP201 (Marlin W4A16 fallback and its cost),
    MTP226 (--moe-backend / --linear-backend missing from this vLLM or value not accepted), MTP231 (an explicit
    FP4 backend that cannot run on the GPU), MTP232 (FP4/MoE env var that vLLM >= 0.24 no longer reads).

    Facts: ``matrix["vllm"]`` (each row names the vLLM wheel file:line it was read from).
    """
    if not ctx.is_vllm:
        return
    _vllm_unchecked_options(ctx)
    requests = _vllm_requests(ctx)
    if not ctx.fp4_intent:
        return
    if requests and ctx.mxfp4:
        ctx.gap("vLLM MXFP4 backend requirements are not in the capability matrix (NVFP4 only): " + ", ".join(r.via for r in requests) + " not checked")
    one_kind = len({x.cc for x in ctx.gpus}) == 1  # every GPU has the same SM: findings are the machine's
    for cc in sorted({g.cc for g in ctx.gpus if g.cc}):
        group = [g for g in ctx.gpus if g.cc == cc]
        label = f"GPU {group[0].index}" if len(group) == 1 else f"GPUs {index_ranges(x.index for x in group)}"
        at = None if one_kind else group[0]
        failed = _vllm_backends_fail(ctx, requests if not ctx.mxfp4 else [], cc, group[0], label, at)
        if cc[0] < 10:
            _vllm_below_sm100(ctx, cc, group[0], label, at, failed)


def _vllm_unchecked_options(ctx: Context) -> None:
    """Gaps for the launch's vLLM options the preflight has no table for, and for a vLLM that is not installed."""
    if ctx.launch is None:
        return
    from mtp_audit.preflight.launch import VLLM_FLAGS

    known = {a for names in VLLM_FLAGS.values() for a in names}
    rest = [o for o in dict.fromkeys(ctx.launch.options) if o not in known]
    if rest:
        ctx.gap(f"vLLM options not checked (no vLLM option table at hand): {', '.join(rest)}")
    vp = ctx.facts.package("vllm")
    if not vp.present and "not installed" in str(vp.missing) and not ctx.vllm_version:
        ctx.gap("vllm is not installed in this environment: the launch runs a vLLM from elsewhere (or fails to start); "
                "checks that depend on the vLLM version were skipped")


def _vllm_backends_fail(ctx: Context, requests: list[Any], cc: tuple[int, int], g: Any, label: str, at: Any) -> bool:
    """MTP231 for each explicitly requested NVFP4 backend that cannot run on compute capability ``cc``; whether any."""
    failed = False
    for req in requests:
        ok, src = vllm_backend_runs(req.kind, req.backend_on(cc), cc)
        if ok is None or ok:
            continue
        failed = True
        what = ("vLLM raises \"Found VLLM_USE_FLASHINFER_MOE_FP4=1, but no FlashInfer NVFP4 MoE backend supports the configuration\""
                if req.backend == "flashinfer" else
                "an explicit choice is not replaced by a fallback: model loading fails (\"NvFp4 MoE backend ... does not support the deployment configuration\")"
                if req.kind == "moe" else "an explicit choice is not replaced by a fallback: model loading (or the first FP4 GEMM) fails")
        ctx.add("MTP231", f"{req.via}: vLLM's {req.backend_on(cc)} NVFP4 {'MoE' if req.kind == 'moe' else 'GEMM'} cannot run on {label} "
                f"({g.name.value}, {sm_name(cc)}); {what}", gpu=at,
                evidence=[Evidence("requested", req.via), ev("compute capability", g.compute_capability),
                          ev("vllm", ctx.facts.package("vllm")), Evidence("requirement", src), Evidence("read by", req.source)],
                remediation=_vllm_fix(ctx, req, cc))
    return failed


def _vllm_below_sm100(ctx: Context, cc: tuple[int, int], g: Any, label: str, at: Any, failed: bool) -> None:
    """MTP200 / MTP201 (and gaps) for GPUs without FP4 tensor cores: which fallback this vLLM takes, at what cost."""
    v = ctx.vllm
    evs = [ev("GPU", g.name), ev("compute capability", g.compute_capability), ev("vllm", ctx.facts.package("vllm")),
           Evidence("FP4 instruction", "none (FP8 is the narrowest tensor-core type on SM90)")]
    if ctx.mxfp4:
        _vllm_mxfp4_below_sm100(ctx, cc, g, label, at, evs)
        return
    rows = _vllm()["nvfp4_fallback"]
    fb = next((r for r in rows if mx.in_range(v, r["vllm"])), None) if v is not None else None
    if cc < tuple(_vllm()["marlin_min_cc"]):
        ctx.add("MTP200", f"{label} ({g.name.value}, compute capability {cc_str(cc)}): no FP4 tensor cores, and below vLLM's Marlin FP4 "
                f"floor (compute capability 7.5): vLLM has no NVFP4 kernel for it", gpu=at, evidence=evs + [Evidence("source", _vllm()["marlin_min_cc_source"])],
                remediation="Run on a GPU of compute capability >= 7.5 (Marlin W4A16) or Blackwell (native NVFP4)")
        return
    if fb is not None and fb["fallback"] == "none":
        ctx.add("MTP200", f"{label} ({g.name.value}, compute capability {cc_str(cc)}): no FP4 tensor cores, and vLLM {v} has no Marlin NVFP4 "
                "fallback: it raises 'Current platform does not support NVFP4 quantization. Please use Blackwell and above.'",
                gpu=at, evidence=evs + [Evidence("source", fb["source"])],
                remediation="Upgrade vLLM (>= 0.9.2 falls back to Marlin W4A16 on its own below SM100), or run NVFP4 on Blackwell")
        return
    if failed:
        return  # the explicit backend stops the load first; its finding says how to get the Marlin fallback
    if fb is None:
        known = "vLLM version unknown" if v is None else f"vLLM {v} is between the releases the capability matrix was read from"
        ctx.gap(f"{known}: the Marlin NVFP4 fallback below SM100 is in vLLM 0.9.2 and >= 0.11 (checked wheels), not in 0.8.5")
    marlin = mx.load()["marlin_w4a16"]
    head = f"vLLM {v}" if fb is not None else "vLLM (0.9.2 and >= 0.11 in the checked wheels)"
    extra = _vllm_dense_marlin_note(ctx, fb)
    ctx.add("MTP201", f"{label} ({g.name.value}, {sm_name(cc)}): no FP4 tensor cores; {head} falls back on its own to Marlin W4A16 for "
            f"this FP4 checkpoint: {marlin['what']}. Cost: {marlin['cost']}.{extra}", gpu=at,
            evidence=evs + [Evidence("source", fb["source"] if fb else rows[-1]["source"])],
            remediation="Accept the W4A16 cost, or move the deployment to Blackwell for native NVFP4 (no vLLM flag is needed for the fallback)")


def _vllm_mxfp4_below_sm100(ctx: Context, cc: tuple[int, int], g: Any, label: str, at: Any, evs: list[Evidence]) -> None:
    """MTP201 (weight-only MXFP4 kernels and their cost) where the matrix covers this vLLM, a gap where it does not."""
    v = ctx.vllm
    mrow = _vllm()["mxfp4_fallback"]
    if v is None or not mx.in_range(v, mrow["vllm"]):
        ctx.gap(f"{'vLLM version unknown' if v is None else f'vLLM {v}'}: its MXFP4 path below SM100 is in the capability matrix "
                f"for vLLM {mrow['vllm']} only (weight-only MXFP4 kernels there)")
        return
    marlin = mx.load()["marlin_w4a16"]
    ctx.add("MTP201", f"{label} ({g.name.value}, {sm_name(cc)}): no FP4 tensor cores; vLLM {v} runs this MXFP4 checkpoint with "
            f"{mrow['what']}. Cost: {marlin['cost']}.", gpu=at, evidence=evs + [Evidence("source", mrow["source"])],
            remediation="Accept the weight-only cost, or move the deployment to Blackwell for native MXFP4 (no vLLM flag is needed)")


def _vllm_dense_marlin_note(ctx: Context, fb: dict[str, Any] | None) -> str:
    """For vLLM releases whose Marlin fallback covers MoE layers only: the note (and gap) that the dense layers of a
    ModelOpt checkpoint may not fall back when FlashInfer is installed."""
    v = ctx.vllm
    if fb is None or fb["fallback"] != "marlin-moe-only":
        return ""
    modelopt = (ctx.launch is not None and (ctx.launch.get("--quantization") or "") == "modelopt_fp4") or bool(
        ctx.quant and "hf_quant_config" in ctx.quant.source)
    fi = ctx.facts.package("flashinfer-python")
    if not modelopt or (not fi.present and "not installed" in str(fi.missing)):
        return ""
    ctx.gap(f"vLLM {v}: {fb['dense_note']} ({fb['source']}); with FlashInfer "
            f"{'installed' if fi.present else 'possibly installed'} the dense layers of this ModelOpt checkpoint may not use Marlin "
            "(whether FlashInfer's FP4 GEMM then runs below SM100 was not established)")
    return " The MoE layers fall back to Marlin; the dense layers may not (see the gaps)."


LAUNCH_CHECK = "the full argparse check of the command (prefixes, types, every value) is `mtp-audit launch --sglang <wheel|checkout>`"


def _choices_from_matrix(flag: str, sg: Version | None) -> tuple[list[str] | None, str]:
    """Argparse choices of ``flag`` on SGLang ``sg`` from the matrix (``sglang.launch_choices``), with the row's source."""
    for row in mx.load()["sglang"].get("launch_choices", {}).get(flag, []):
        if mx.in_range(sg, row["sglang"]):
            return list(row["choices"]), row["source"]
    return None, ""


def _known_options(ctx: Context) -> set[str] | None:
    """Every option string of the SGLang the launch will run (first names and aliases), or ``None`` without a table."""
    args = (ctx.sglang_facts or {}).get("cli_arguments")
    if not isinstance(args, dict) or not args:
        return None
    names = {"-h", "--help"}
    for flag, rec in args.items():
        names.add(flag)
        if isinstance(rec, dict):
            names.update(str(a) for a in rec.get("aliases") or ())
    return names


def check_flag_choices(ctx: Context) -> None:
    """MTP226: a value of --fp4-gemm-backend / --moe-runner-backend / --quantization outside this SGLang version's
    choices (or --fp4-gemm-backend on a version without it); MTP230: an option this SGLang does not have.

    Choices come from the sglang analyzer's ``cli_arguments`` when given, else from the matrix
    (``sglang.fp4_gemm_backend`` rows, ``sglang.launch_choices``: ``MOE_RUNNER_BACKEND_CHOICES`` /
    ``QUANTIZATION_CHOICES`` of sglang/srt/server_args.py (<= 0.5.18) or sglang/srt/arg_groups/choices.py (>= 0.5.20)
    in each wheel). Unknown options need the option table, which only the sglang analyzer gives; without it the
    options the preflight does not interpret are listed in a non-blocking gap.
    """
    if not ctx.launch or not ctx.launch.is_sglang or ctx.is_vllm:
        return
    sg = ctx.sglang
    for flag in ("--fp4-gemm-backend", "--moe-runner-backend", "--quantization"):
        given = ctx.launch.get(flag)
        if given is None:
            continue
        arg = _flag_from_sglang_facts(ctx, flag)
        if arg is not None:
            choices, src = arg.get("choices"), f"sglang analyzer: {arg.get('choices_location') or arg.get('location', '?')}"
        elif ctx.sglang_facts is not None and isinstance(ctx.sglang_facts.get("cli_arguments"), dict):
            continue  # an option the SGLang does not have: MTP230 below
        elif flag == "--fp4-gemm-backend":
            row = mx.sglang_row("fp4_gemm_backend", sg) if sg else None
            choices, src = (row.get("choices"), row["source"]) if row else (None, "")
            if row is not None and choices is None:
                ctx.add("MTP226", f"SGLang {sg} has no {flag} option (added in 0.5.8; older versions read SGLANG_FLASHINFER_FP4_GEMM_BACKEND): "
                        "the launch stops with 'unrecognized arguments'",
                        evidence=[Evidence(flag, given), Evidence("source", src)], remediation=f"drop {flag} and set SGLANG_FLASHINFER_FP4_GEMM_BACKEND, or upgrade SGLang")
                continue
        else:
            choices, src = _choices_from_matrix(flag, sg)
        if not choices and arg is None:
            why = f"the choices of SGLang {sg} are not in the capability matrix" if sg else "the SGLang version is unknown"
            ctx.gap(f"{flag} {given} not checked: {why}; {LAUNCH_CHECK}")
        elif choices and given not in choices:
            ctx.add("MTP226", f"{flag} {given} is not accepted by SGLang {sg or '(version unknown)'}: argparse stops with 'invalid choice' "
                    f"(choices: {', '.join(choices)})",
                    evidence=[Evidence(flag, given), Evidence("source", src)], remediation=f"use one of: {', '.join(choices)}")
    known = _known_options(ctx)
    if known is not None:
        for opt in dict.fromkeys(ctx.launch.options):
            if opt in known or any(k.startswith(opt) for k in known if k.startswith("--")):
                continue  # exact, or a prefix argparse may accept (allow_abbrev): `mtp-audit launch` decides
            ctx.add("MTP230", f"SGLang {sg or '(version unknown)'} has no option {opt}: the launch would stop with 'unrecognized arguments' "
                    f"({LAUNCH_CHECK})", evidence=[Evidence("option", opt), Evidence("source", "sglang analyzer: cli_arguments")],
                    remediation=f"drop {opt} or correct its spelling; run mtp-audit launch for the whole command")
    else:
        from mtp_audit.preflight.launch import BOOL_FLAGS, FLAGS

        interpreted = {a for names in FLAGS.values() for a in names} | set(BOOL_FLAGS)
        rest = [o for o in dict.fromkeys(ctx.launch.options) if o not in interpreted]
        if rest:
            ctx.gap(f"options not checked (no SGLang option table at hand): {', '.join(rest)}; {LAUNCH_CHECK}")


def check_probe(ctx: Context) -> None:
    """MTP227: the --probe FP4 GEMM gave NaN/Inf, a mismatch, or failed on an FP4-capable GPU."""
    p = ctx.probe
    if p is None:
        return
    if p.error:
        ctx.gap(f"probe did not run: {p.error}")
        return
    cc = p.cc
    for r in p.results:
        if cc and cc[0] < 10:
            continue  # reported by MTP200 as evidence: no FP4 hardware, failure expected
        if r["status"] == "mismatch":
            ctx.add("MTP227", f"probe {r['path']} on {p.gpu}: nan={r.get('nan')} inf={r.get('inf')} relative error {r.get('rel_error')} (tolerance {r.get('tolerance')})",
                    evidence=[Evidence("probe", "; ".join(p.ran))],
                    remediation=("switch the dense FP4 GEMM: --linear-backend flashinfer_cudnn (vLLM >= 0.22) or "
                                 "VLLM_NVFP4_GEMM_BACKEND=flashinfer-cudnn (vLLM 0.11.1-0.23), and re-run --probe") if ctx.is_vllm else
                    "switch --fp4-gemm-backend (flashinfer_cudnn on SM120) and re-run --probe")
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


CHECKS: tuple[Callable[[Context], None], ...] = (
    check_verdict_inputs, check_no_native_fp4, check_vllm_fp4, check_mixed_cc, check_torch_build, check_driver, check_jit_nvcc,
    check_kernel_binaries, check_torch_pins, check_gemm_backend, check_moe_backend, check_nvfp4_online,
    check_flashinfer_trio, check_fp8_kv_trtllm_mha, check_pdmux, check_flashinfer_arch_list, check_memory,
    check_flag_choices, check_probe, check_platform,
)


#: Findings about the launch command's text (a flag or value the installed SGLang's argparse rejects). They stop
#: the launch, but say nothing about what the GPU and its stack can run, so they stay out of the MTP228 verdict.
COMMAND_LINE_RULES = ("MTP226", "MTP230")


def verdicts(ctx: Context) -> list[dict[str, Any]]:
    """Per-GPU native-FP4 verdict: capable / not capable / unknown, with reasons (rule ids + text).

    The verdict describes the GPU and its software stack; findings of :data:`COMMAND_LINE_RULES` (a flag the
    installed SGLang does not know, a value outside its choices) are reported on their own and ignored here.
    """
    from mtp_audit.preflight import vendors

    if vendors.applies(ctx):
        return vendors.verdicts(ctx, CAPABLE, NOT_CAPABLE, UNKNOWN)
    out = []
    for g in ctx.gpus:
        cc = g.cc
        loc = f"cuda:{g.index}"
        errs = [f for f in ctx.findings if f.severity >= Severity.ERROR and f.location.symbol in (loc, "machine")
                and f.rule_id not in COMMAND_LINE_RULES]
        if cc is None:
            v, reasons = UNKNOWN, [f"compute capability unknown: {g.compute_capability.missing}"]
        elif cc[0] < 10:
            v, reasons = NOT_CAPABLE, [f"{sm_name(cc)} has no FP4 tensor-core instructions (FP8 is the narrowest)"] + [f"{f.rule_id}: {f.message}" for f in errs if f.rule_id != "MTP200"]
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
            else:
                v, reasons = CAPABLE, [f"{sm_name(cc)} has FP4 tensor cores and no blocking problem was found in the stack"] + [f"not checked: {b}" for b in blocking]
        out.append({"gpu": g.index, "name": g.name.value, "compute_capability": cc_str(cc) if cc else None, "native_fp4": v, "reasons": reasons})
    return out


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

    checks = ((vendors.check_platform, vendors.check_device_flag, vendors.check_amd, vendors.check_ascend)
              if vendors.applies(ctx) else CHECKS)
    for check in checks:
        before = len(ctx.findings)
        check(ctx)
        if ctx.launch is None and check in LAUNCH_DEFAULT_CHECKS:
            ctx.findings[before:] = [_as_default_launch_note(f) for f in ctx.findings[before:]]
    return ctx


#: Checks of the backends SGLang picks for a launch's flags: without a launch they can only say what a launch with
#: SGLang's default flags would pick, a consequence of a command nobody gave, so what they find is information.
LAUNCH_DEFAULT_CHECKS: tuple[Callable[[Context], None], ...] = (check_gemm_backend, check_moe_backend)


def _as_default_launch_note(f: Finding) -> Finding:
    """``f`` (found without a launch) as information about a launch with the default flags: never an error or a
    warning about flags nobody passed. The message says so; the remediation stays (it names the flag to pass)."""
    from dataclasses import replace

    if f.severity <= Severity.INFO:
        return f
    return replace(f, severity=Severity.INFO,
                   message=f"no launch given; an FP4 launch with SGLang's default flags would meet this ({f.severity.label} for "
                           f"that launch): {f.message}")


_ = Path  # re-exported type for callers' annotations
