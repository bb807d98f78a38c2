"""Machine facts for the preflight: frozen dataclasses, each value possibly *missing with a reason*.

A live collection (:mod:`mtp_audit.preflight.collect`), an environment dump
(:mod:`mtp_audit.preflight.envdump`) and a stored facts file all produce one :class:`MachineFacts`.
``to_dict`` / ``from_dict`` round-trip it through JSON so a collection made on a GPU box can be
stored in the repository and replayed (``mtp-audit preflight --facts FILE``).

Nothing here guesses: a fact that was not observed is a :class:`Fact` with ``value=None`` and a
``missing`` reason ("nvidia-smi not found", "dump truncated before the PyTorch line").
Facts and their meaning: ``../shared/research/blackwell_fp4.md`` §7 (detection methods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.engines.registry import engine_distributions
from mtp_audit.known import AT_LEAST, EXACT, Extent, Known, Provenance
from mtp_audit.report.questions import NOT_EXAMINED


def same_value(x: str, y: str) -> bool:
    """Whether two spellings of a version are one value: equal, or one release with the local tag (``+cu128``) of at most one."""
    if x.strip() == y.strip():
        return True
    from packaging.version import InvalidVersion, Version

    try:
        vx, vy = Version(x), Version(y)
    except InvalidVersion:
        return False
    return vx.public == vy.public and (not vx.local or not vy.local or vx.local == vy.local)


#: Version of the facts JSON written by :meth:`MachineFacts.to_dict`.
FACTS_SCHEMA_VERSION = 1

#: Distribution names whose versions the preflight reads (importlib.metadata / dumps): the engines' own
#: (:func:`mtp_audit.engines.registry.engine_distributions`), then the kernel libraries and the stack they run on.
#: Source: blackwell_fp4.md §7.2.
PACKAGES: tuple[str, ...] = (
    *engine_distributions(),
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "torch",
    "triton",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-cudnn-frontend",
    "nvidia-cutlass-dsl",
    "nvidia-ml-py",
    # AMD ROCm and Ascend stacks (the platform-specific checks of mtp_audit.preflight.vendors read them)
    "aiter",
    "petit-kernel",
    "torch-npu",
    "vllm-ascend",
    "sgl-kernel-npu",
    "triton-ascend",
)


#: How a package fact that was looked for and not found reads (``Fact.missing`` starts with it): the live machine's
#: ``importlib.metadata``, a dump that says so of that package ("Module Not Found", "not installed"), or a whole pip
#: listing that does not list it. Any other missing reason ("not in the part of the listing shown", "not recorded")
#: leaves the package's presence unknown.
NOT_INSTALLED = "not installed"


#: Marker in ``MachineFacts.gpu_list.source`` of a GPU list known to be incomplete (an nvidia-smi table cut
#: after its first rows), kept in the human text; the typed answer is ``gpu_list.extent == "at least"``.
PARTIAL_GPU_LIST = "at least"


@dataclass(frozen=True)
class Fact:
    """One observed value, or the reason it is missing.

    Attributes:
        value: a JSON-friendly scalar, list or ``[major, minor]`` pair; ``None`` when missing.
        source: where it was read (``"nvml"``, ``"nvidia-smi"``, ``"torch/version.py"``,
            ``"sglang check_env line 7"``).
        missing: why there is no value; ``None`` when the value is present.
        extent: how much of the value was seen (:data:`mtp_audit.known.Extent`): ``"exact"`` (the default
            of a present fact), ``"at least"`` (a lower bound: a GPU count from a table cut before its end, or
            products named without a count); a missing fact is ``"unknown"`` whatever this field says.
        unexamined: a missing fact that was not looked for, by request (``--no-machine``: the machine running the
            audit is not the serving machine; :mod:`mtp_audit.preflight.nomachine`), as opposed to one looked for
            and not found: written to JSON as ``"why_open": "not-examined"`` beside ``missing`` (which says it in
            words); :attr:`why_open` is the reason of a gap resting on it.
    """

    value: Any = None
    source: str = ""
    missing: str | None = None
    extent: Extent = EXACT
    unexamined: bool = False

    @classmethod
    def of(cls, value: Any, source: str, extent: Extent = EXACT) -> Fact:
        """A present fact. ``value`` must not be ``None``; ``extent`` is ``"exact"`` or ``"at least"``.

        Raises:
            ValueError: ``value`` is ``None`` or ``extent`` is not one of those two.
        """
        if value is None:
            raise ValueError("Fact.of needs a value; use Fact.absent for a missing fact")
        if extent not in (EXACT, AT_LEAST):
            raise ValueError(f"a present fact is exact or at least, not {extent!r}")
        return cls(value=value, source=source, extent=extent)

    def known(self, where: str = "", line: int | None = None) -> Known[Any]:
        """This fact as a :class:`mtp_audit.known.Known`: its value and extent (``"unknown"`` when missing, with its
        :attr:`why_open`), with the fact's source (or its missing reason) as the provenance's ``how`` and ``where``
        naming the input."""
        src = Provenance(where or self.source, line, self.source if where else "") if self.present else \
            Provenance(where or self.source or "not observed", line, self.missing or "not observed")
        if not self.present:
            return Known.unknown(src, self.why_open)
        return Known(self.value, self.extent if self.extent in (EXACT, AT_LEAST) else EXACT, src)

    @classmethod
    def absent(cls, reason: str, source: str = "") -> Fact:
        """A missing fact with its reason (one line)."""
        return cls(value=None, source=source, missing=reason)

    @property
    def present(self) -> bool:
        """True when a value was observed."""
        return self.value is not None

    @property
    def why_open(self) -> str | None:
        """Why a gap resting on this fact is open (a :class:`~mtp_audit.report.Gap`'s ``why_open``):
        :data:`~mtp_audit.report.questions.NOT_EXAMINED` for a missing fact not looked for (:attr:`unexamined`),
        else ``None`` (present, or looked for and not found)."""
        return NOT_EXAMINED if self.unexamined and not self.present else None

    def or_(self, other: Fact) -> Fact:
        """This fact if present, else ``other`` (used when merging several dumps)."""
        return self if self.present else (other if other.present else self)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"value": ..., "source": ...}`` or ``{"missing": reason, ...}`` (with ``"why_open"`` when
        :attr:`unexamined`)."""
        if self.present:
            out = {"value": _jsonable(self.value), "source": self.source}
            if self.extent != EXACT:
                out["extent"] = self.extent  # written only when not exact: exact facts keep their stored form
            return out
        d: dict[str, Any] = {"missing": self.missing or "not observed"}
        if self.source:
            d["source"] = self.source
        if self.why_open is not None:
            d["why_open"] = self.why_open
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Fact:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: ``d`` is not a dict of that shape.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"expected a fact object, got {type(d).__name__}")
        if "value" in d and d["value"] is not None:
            v = d["value"]
            if isinstance(v, list):
                v = tuple(tuple(x) if isinstance(x, list) else x for x in v)
            src = str(d.get("source", ""))
            extent = d.get("extent", EXACT)
            if extent not in (EXACT, AT_LEAST):
                raise ValueError(f"fact extent must be 'exact' or 'at least', not {extent!r}")
            if extent == EXACT and f"table cut: {PARTIAL_GPU_LIST}" in src:
                extent = AT_LEAST  # a facts file written before extents were stored: its source says the table was cut
            return cls(value=v, source=src, extent=extent)
        return cls(value=None, source=str(d.get("source", "")), missing=str(d.get("missing", "not observed")),
                   unexamined=d.get("why_open") == NOT_EXAMINED)

    def __str__(self) -> str:
        if self.present:
            return fmt_value(self.value)
        return f"missing ({self.missing})"


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def fmt_value(v: Any) -> str:
    """Human form of a fact value: ``(12, 0)`` -> ``"12.0"``, tuples joined by ``", "``."""
    if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return f"{v[0]}.{v[1]}"
    if isinstance(v, tuple):
        return ", ".join(fmt_value(x) for x in v)
    return str(v)


#: Missing-reason of a GPU UUID absent from a stored facts file (not written back by :meth:`GpuFacts.to_dict`).
_NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class GpuFacts:
    """One GPU.

    Attributes:
        index: position as reported (NVML / nvidia-smi index, or order in a dump).
        name: marketing name, e.g. ``"NVIDIA H200"``.
        compute_capability: ``(major, minor)`` e.g. ``(12, 0)``.
        memory_bytes: total memory in bytes; GB10 reports "Not Supported" (unified memory), which is
            a missing fact with that reason (gh:NVIDIA/k8s-device-plugin#1482).
        uuid: ``"GPU-dc089148-adda-1e6a-8c18-d58d61d51415"`` (NVML ``nvmlDeviceGetUUID``, nvidia-smi
            ``--query-gpu=uuid`` / ``-q`` "GPU UUID"); what ``CUDA_VISIBLE_DEVICES=GPU-...`` is matched against.
        arch: the device architecture off NVIDIA: an AMD gfx target (``"gfx942"``) or an Ascend model
            (``"Ascend 910B3"``); left out of the JSON when not observed (NVIDIA facts files round-trip unchanged).
    """

    index: int
    name: Fact = field(default_factory=lambda: Fact.absent("not observed"))
    compute_capability: Fact = field(default_factory=lambda: Fact.absent("not observed"))
    memory_bytes: Fact = field(default_factory=lambda: Fact.absent("not observed"))
    uuid: Fact = field(default_factory=lambda: Fact.absent("not observed"))
    arch: Fact = field(default_factory=lambda: Fact.absent("not observed"))

    @property
    def cc(self) -> tuple[int, int] | None:
        """``(major, minor)`` or ``None``."""
        v = self.compute_capability.value
        return (int(v[0]), int(v[1])) if v is not None else None

    def to_dict(self) -> dict[str, Any]:
        """JSON form. ``uuid`` is left out when it was not recorded (facts files written before UUIDs were
        collected round-trip unchanged)."""
        d = {
            "index": self.index,
            "name": self.name.to_dict(),
            "compute_capability": self.compute_capability.to_dict(),
            "memory_bytes": self.memory_bytes.to_dict(),
        }
        if self.uuid.present or self.uuid.missing != _NOT_RECORDED:
            d["uuid"] = self.uuid.to_dict()
        if self.arch.present:
            d["arch"] = self.arch.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GpuFacts:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: a wrong shape, or a value no GPU has: a compute capability that is not two integers
                ``0 <= major <= MAX_CC_MAJOR``, ``0 <= minor <= 9``; a memory size that is not an integer in
                ``[0, MAX_GPU_MEMORY_BYTES]``.
        """
        gpu = cls(
            index=int(d["index"]),
            name=Fact.from_dict(d.get("name", {})),
            compute_capability=Fact.from_dict(d.get("compute_capability", {})),
            memory_bytes=Fact.from_dict(d.get("memory_bytes", {})),
            uuid=Fact.from_dict(d.get("uuid", {"missing": _NOT_RECORDED})),
            arch=Fact.from_dict(d.get("arch", {"missing": "not observed"})),
        )
        _check_gpu_values(gpu)
        return gpu


#: Bounds of a plausible GPU in a facts file: compute capabilities run to 12.x today (CUDA 13 programming guide,
#: "Compute Capabilities"); memory to a few hundred GiB per device. Past these a file is damaged or made up.
MAX_CC_MAJOR = 20
MAX_GPU_MEMORY_BYTES = 1 << 44  # 16 TiB
#: Most GPUs in one facts file (one node; an NVL72 rack lists 72).
MAX_GPUS = 1024


#: The container each key of a facts document holds (:meth:`MachineFacts.to_dict`).
_SHAPES = {"gpus": list, "enumerated": list, "binaries": list, "notes": list, "packages": dict, "requires": dict, "env": dict}


def _check_shapes(d: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first key of a facts document that holds the wrong kind of value
    (``'gpus' is a string, expected a list``), and the first GPU entry that is not an object."""
    names = {list: "a list", dict: "an object"}
    kinds = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list", dict: "an object",
             type(None): "null"}
    for key, want in _SHAPES.items():
        if key in d and not isinstance(d[key], want):
            raise ValueError(f"malformed facts document: '{key}' is {kinds.get(type(d[key]), 'another kind of value')}, "
                             f"expected {names[want]}")
    for key in ("gpus", "enumerated"):
        for i, g in enumerate(d.get(key) or []):
            if not isinstance(g, dict) or "index" not in g:
                raise ValueError(f"malformed facts document: '{key}'[{i}] is not a GPU object with an 'index'")


def _check_gpu_values(gpu: GpuFacts) -> None:
    cc = gpu.compute_capability.value
    if cc is not None:
        if (not isinstance(cc, (list, tuple)) or len(cc) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in cc)
                or not (0 <= cc[0] <= MAX_CC_MAJOR and 0 <= cc[1] <= 9)):
            raise ValueError(f"GPU {gpu.index}: compute_capability {str(cc)[:40]} is not two integers (major 0-{MAX_CC_MAJOR}, minor 0-9)")
    mem = gpu.memory_bytes.value
    if mem is not None and (not isinstance(mem, int) or isinstance(mem, bool) or not 0 <= mem <= MAX_GPU_MEMORY_BYTES):
        raise ValueError(f"GPU {gpu.index}: memory_bytes {str(mem)[:40]} is not a byte count (0 to {MAX_GPU_MEMORY_BYTES})")


@dataclass(frozen=True)
class BinaryFacts:
    """SM targets compiled into one shared object of a kernel package (read from its ELF fatbin).

    Attributes:
        package: distribution name (``"sgl-kernel"``, ``"flashinfer-jit-cache"``, ``"vllm"``).
        path: path relative to the package's site-packages folder (``"sgl_kernel/sm100/common_ops.abi3.so"``).
        targets: sorted ELF cubin targets, e.g. ``("sm_100a", "sm_120a", "sm_90")``; missing with a
            reason when the file could not be read.
        ptx: sorted PTX targets (``("compute_90",)``).
    """

    package: str
    path: str
    targets: Fact = field(default_factory=lambda: Fact.absent("not scanned"))
    ptx: Fact = field(default_factory=lambda: Fact.absent("not scanned"))

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"package": self.package, "path": self.path, "targets": self.targets.to_dict(), "ptx": self.ptx.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BinaryFacts:
        """Inverse of :meth:`to_dict`."""
        return cls(
            package=str(d["package"]),
            path=str(d["path"]),
            targets=Fact.from_dict(d.get("targets", {})),
            ptx=Fact.from_dict(d.get("ptx", {})),
        )


def _absent() -> Fact:
    return Fact.absent("not observed")


@dataclass(frozen=True)
class MachineFacts:
    """Everything the preflight knows about one machine.

    Attributes:
        origin: ``"live"``, ``"env-dump:<format>[+<format>...]"`` or ``"facts-file"``.
        gpus: one entry per GPU, in index order.
        gpu_list: why the GPU list is empty or partial (missing fact) or how it was read.
        driver_version: e.g. ``"580.95.05"`` (R610+ calls it "KMD Version").
        cuda_driver_version: highest CUDA the driver supports, ``"13.0"`` (R610+: "CUDA UMD Version").
        toolkit: ``nvcc --version`` release, ``"13.0"``.
        cuda_home: ``CUDA_HOME`` / ``CUDA_PATH`` / the folder nvcc was found in.
        torch_version: e.g. ``"2.11.0+cu130"``.
        torch_cuda: CUDA torch was built with, ``"13.0"`` (``torch/version.py`` ``cuda = ...``).
        torch_arch_list: ``torch.cuda.get_arch_list()`` (only with ``--import-torch`` or from a dump).
        packages: distribution name (:data:`PACKAGES`) -> version fact.
        requires: ``"<dist> -> torch"`` -> the ``Requires-Dist`` pin string (e.g. ``"torch==2.9.1"``).
        binaries: SM targets of kernel shared objects.
        env: selected environment variables (``FLASHINFER_CUDA_ARCH_LIST``, ``CUDA_VISIBLE_DEVICES``).
        platform: ``"linux"``, ``"wsl2"``, ``"windows"``.
        notes: free lines worth showing (a ``MISMATCH`` line of flashinfer's collect_env, NVML errors).
        enumerated: every GPU the driver listed before this process's ``CUDA_VISIBLE_DEVICES`` was
            applied to :attr:`gpus`; empty when no such filter was applied (then :attr:`gpus` is the
            whole list). A launch that sets its own ``CUDA_VISIBLE_DEVICES`` is matched against it.
        engine: the serving engine the dump is for, ``"sglang"`` or ``"vllm"`` (``sglang.check_env`` /
            ``vllm collect-env`` / what a free-form text mentions), with provenance. The preflight's engine choice
            reads it (:func:`mtp_audit.preflight.engine.machine_hint`; an explicit ``--engine`` or the launch command wins).
        accelerator: the platform, ``"cuda"``, ``"rocm"``, ``"cann"``, ``"xpu"``, ``"hpu"`` or ``"cpu"``, with the fact that decided it
            (:func:`mtp_audit.preflight.platforms.detect`).
        rocm_version: the ROCm torch was built with / the HIP runtime (``"6.3.42131-fa1d09cbd"``), ROCm machines only.
        cann_version: the Ascend CANN toolkit version (``"8.1.RC1"``), Ascend machines only.
    """

    origin: str
    gpus: tuple[GpuFacts, ...] = ()
    gpu_list: Fact = field(default_factory=_absent)
    driver_version: Fact = field(default_factory=_absent)
    cuda_driver_version: Fact = field(default_factory=_absent)
    toolkit: Fact = field(default_factory=_absent)
    cuda_home: Fact = field(default_factory=_absent)
    torch_version: Fact = field(default_factory=_absent)
    torch_cuda: Fact = field(default_factory=_absent)
    torch_arch_list: Fact = field(default_factory=_absent)
    packages: Mapping[str, Fact] = field(default_factory=dict)
    requires: Mapping[str, Fact] = field(default_factory=dict)
    binaries: tuple[BinaryFacts, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    platform: Fact = field(default_factory=_absent)
    notes: tuple[str, ...] = ()
    enumerated: tuple[GpuFacts, ...] = ()
    engine: Fact = field(default_factory=_absent)
    accelerator: Fact = field(default_factory=_absent)
    rocm_version: Fact = field(default_factory=_absent)
    cann_version: Fact = field(default_factory=_absent)

    _SCALARS = (
        "gpu_list",
        "driver_version",
        "cuda_driver_version",
        "toolkit",
        "cuda_home",
        "torch_version",
        "torch_cuda",
        "torch_arch_list",
        "platform",
        "engine",
        "accelerator",
        "rocm_version",
        "cann_version",
    )
    #: Scalars added after facts files were first stored: left out of the JSON while not observed.
    _LATER = ("engine", "accelerator", "rocm_version", "cann_version")

    @property
    def all_gpus(self) -> tuple[GpuFacts, ...]:
        """Every GPU the driver listed (:attr:`enumerated` when a ``CUDA_VISIBLE_DEVICES`` filter was applied, else :attr:`gpus`)."""
        return self.enumerated or self.gpus

    @property
    def gpu_count(self) -> Known[int]:
        """How many GPUs the driver lists (before any ``CUDA_VISIBLE_DEVICES`` filter of :attr:`enumerated`), as a
        typed answer: ``"exact"`` when the whole list was seen (a live query, a table whose end is seen, a count
        written out), ``"at least"`` with the GPUs seen as the bound (a table cut before its end, prose naming
        products without a count), ``"unknown"`` with the reason when no GPU was read. Provenance: this
        :attr:`origin` and the list's source."""
        f = self.gpu_list
        if f.present and not isinstance(f.value, int):
            f = Fact.of(len(self.all_gpus), f.source, f.extent) if self.all_gpus else Fact.absent(f"GPU count shown as {f.value!r}")
        return f.known(self.origin)

    @property
    def gpu_list_partial(self) -> bool:
        """Whether the GPU list is a lower bound (``gpu_list.extent == "at least"``)."""
        return self.gpu_list.present and self.gpu_list.extent == AT_LEAST

    def package(self, name: str) -> Fact:
        """Version fact of distribution ``name`` (missing when not recorded)."""
        return self.packages.get(name) or Fact.absent(f"{name} version not recorded")

    def installed(self, name: str) -> Fact:
        """Whether distribution ``name`` is installed: ``True`` when its version was seen, ``False`` when it was looked
        for and not found (:data:`NOT_INSTALLED`), missing (unknown) otherwise; the source is the version fact's."""
        f = self.package(name)
        if f.present:
            return Fact.of(True, f.source)
        if (f.missing or "").startswith(NOT_INSTALLED):
            return Fact.of(False, f"{f.source}: {f.missing}" if f.source else str(f.missing))
        return Fact.absent(f.missing or "not observed", f.source)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (sorted keys where order carries no meaning)."""
        d: dict[str, Any] = {"facts_schema_version": FACTS_SCHEMA_VERSION, "origin": self.origin}
        d["gpus"] = [g.to_dict() for g in self.gpus]
        for name in self._SCALARS:
            f = getattr(self, name)
            if name in self._LATER and not f.present and f.missing in ("not observed", "not recorded"):
                continue  # added after facts files were first stored: absent from those, and they stay as stored
            d[name] = f.to_dict()
        d["packages"] = {k: self.packages[k].to_dict() for k in sorted(self.packages)}
        d["requires"] = {k: self.requires[k].to_dict() for k in sorted(self.requires)}
        d["binaries"] = [b.to_dict() for b in sorted(self.binaries, key=lambda b: (b.package, b.path))]
        d["env"] = {k: self.env[k] for k in sorted(self.env)}
        d["notes"] = list(self.notes)
        if self.enumerated:
            d["enumerated"] = [g.to_dict() for g in self.enumerated]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> MachineFacts:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: not a facts document (wrong shape or a newer ``facts_schema_version``).
        """
        if not isinstance(d, Mapping) or "origin" not in d:
            raise ValueError("not an mtp-audit facts document (no 'origin' key)")
        ver = d.get("facts_schema_version")
        if not isinstance(ver, int) or ver > FACTS_SCHEMA_VERSION:
            raise ValueError(f"unsupported facts_schema_version {ver!r} (this mtp-audit reads {FACTS_SCHEMA_VERSION})")
        _check_shapes(d)
        for key in ("gpus", "enumerated"):
            if isinstance(d.get(key), list) and len(d[key]) > MAX_GPUS:
                raise ValueError(f"{key} lists {len(d[key]):,} GPUs (at most {MAX_GPUS} in one facts file)")
        try:
            kwargs: dict[str, Any] = {name: Fact.from_dict(d.get(name, {"missing": "not recorded"})) for name in cls._SCALARS}
            return cls(
                origin=str(d["origin"]),
                gpus=tuple(GpuFacts.from_dict(g) for g in d.get("gpus", [])),
                packages={str(k): Fact.from_dict(v) for k, v in dict(d.get("packages", {})).items()},
                requires={str(k): Fact.from_dict(v) for k, v in dict(d.get("requires", {})).items()},
                binaries=tuple(BinaryFacts.from_dict(b) for b in d.get("binaries", [])),
                env={str(k): str(v) for k, v in dict(d.get("env", {})).items()},
                notes=tuple(str(n) for n in d.get("notes", [])),
                enumerated=tuple(GpuFacts.from_dict(g) for g in d.get("enumerated", [])),
                **kwargs,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed facts document: {exc}") from None

    def conflict_with(self, other: MachineFacts) -> str | None:
        """The first machine fact on which two dumps disagree, as one line, or ``None``.

        Compared (only where both sides report the fact): the GPU count, each GPU's compute
        capability and name, the driver version and the driver's CUDA version. Names match when one
        is a prefix of the other after trimming, because collect_env and the nvidia-smi table
        truncate long names ("... Workstation Edi"). Differing package versions are not a conflict
        (two tools may run in two Python environments of one machine). The text speaks of "the
        first" and "the second" dump; the caller names the files.
        """
        a, b = self.gpus, other.gpus
        if a and b:
            def desc(gs: tuple[GpuFacts, ...]) -> str:
                names = sorted({f"{g.name.value or '?'} ({fmt_value(g.compute_capability.value) if g.cc else '?'})" for g in gs})
                return f"{len(gs)}x " + ", ".join(names)

            partial = (len(a) < len(b) and self.gpu_list_partial) or (len(b) < len(a) and other.gpu_list_partial)
            if len(a) != len(b) and not partial:
                return f"GPU list differs: {desc(a)} vs {desc(b)}"
            for x, y in zip(a, b):
                if x.cc and y.cc and x.cc != y.cc:
                    return (f"GPU {x.index} compute capability differs: {fmt_value(x.compute_capability.value)} ({x.name.value or '?'}) "
                            f"vs {fmt_value(y.compute_capability.value)} ({y.name.value or '?'})")
                na, nb = (str(g.name.value).strip().rstrip(".").strip() if g.name.present else "" for g in (x, y))
                if na and nb and not (na.startswith(nb) or nb.startswith(na)):
                    return f"GPU {x.index} name differs: {na} vs {nb}"
        for name, label in (("driver_version", "driver version"), ("cuda_driver_version", "driver CUDA version")):
            fa, fb = getattr(self, name), getattr(other, name)
            if fa.present and fb.present and str(fa.value).strip() != str(fb.value).strip():
                return f"{label} differs: {fa.value} vs {fb.value}"
        return None

    def merged_with(self, other: MachineFacts) -> MachineFacts:
        """Combine two partial views of one machine (two dumps pasted together).

        Present facts of ``self`` win; GPUs come from whichever has more; packages, requires, env
        and binaries are united.
        """
        kwargs = {name: getattr(self, name).or_(getattr(other, name)) for name in self._SCALARS}
        gpus = self.gpus if len(self.gpus) >= len(other.gpus) else other.gpus
        if self.gpus and other.gpus:
            # per position; the longer list supplies the GPUs the shorter (partial) one does not show
            mine, theirs = list(self.gpus), list(other.gpus)
            gpus = tuple(
                GpuFacts(
                    index=a.index,
                    name=a.name.or_(b.name),
                    compute_capability=a.compute_capability.or_(b.compute_capability),
                    memory_bytes=a.memory_bytes.or_(b.memory_bytes),
                    uuid=a.uuid.or_(b.uuid),
                    arch=a.arch.or_(b.arch),
                )
                for a, b in zip(mine, theirs)
            ) + tuple(gpus[min(len(mine), len(theirs)):])
            if len(mine) < len(theirs) and self.gpu_list.present:
                kwargs["gpu_list"] = other.gpu_list.or_(self.gpu_list)
            elif len(mine) == len(theirs) and self.gpu_list_partial and other.gpu_list.present and not other.gpu_list_partial:
                kwargs["gpu_list"] = other.gpu_list  # the other dump saw the end of the same list
        ea, eb = self.engine, other.engine
        if ea.present and eb.present and ea.value != eb.value:
            kwargs["engine"] = Fact.absent(f"the dumps disagree: {ea.value} ({ea.source}) vs {eb.value} ({eb.source})")
        packages = dict(other.packages)
        for k, v in self.packages.items():
            packages[k] = v.or_(packages[k]) if k in packages else v
        requires = {**other.requires, **self.requires}
        return MachineFacts(
            origin=f"{self.origin}+{other.origin.split(':', 1)[-1]}",
            gpus=gpus,
            packages=packages,
            requires=requires,
            binaries=self.binaries + tuple(b for b in other.binaries if b not in self.binaries),
            env={**other.env, **self.env},
            notes=self.notes + tuple(n for n in other.notes if n not in self.notes),
            **kwargs,
        )
