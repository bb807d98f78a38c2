"""What an engine is to mtp-audit: the :class:`Engine` interface every engine package implements, and the inputs a
launch audit hands it (:class:`Machine`, :class:`LaunchRequest`, :class:`Analyzers`).

An engine owns everything about itself (reading its source or its sourced knowledge tables, parsing its launch
command, replaying its decisions, its rules); :mod:`mtp_audit.launch` only picks the engine from the command, lends
it the checkpoint and machine analyzers, and assembles the report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from mtp_audit.report import Finding, Gap, Report

if TYPE_CHECKING:
    from mtp_audit.checkpoint.heads import HeadsAnswer, HeadsEvidence, MtpQuantOverride
    from mtp_audit.checkpoint.typed import CheckpointAnswer
    from mtp_audit.preflight.kernels import KernelChecks


@dataclass
class Machine:
    """Where the preflight reads the machine from: at most one of the fields (none: the live machine).

    Attributes:
        env_dumps: environment dumps (``--env-dump``).
        facts_file: stored preflight facts (``--facts``).
        facts: an already-built :class:`~mtp_audit.preflight.facts.MachineFacts`.
        engine: ``--engine`` for the preflight's verdict (``None``: detected).
        no_machine: ``--no-machine``: the machine running the audit is not the serving machine and is never read;
            the machine is ``env_dumps`` only, or nothing (:mod:`mtp_audit.preflight.nomachine`).
    """

    env_dumps: tuple[Path, ...] = ()
    facts_file: Path | None = None
    facts: Any = None
    engine: str | None = None
    no_machine: bool = False


def open_release(open_target: Callable[[Any], Any], target: Any, label: str, option: str,
                 example: str = "") -> tuple[Any, Gap | None]:
    """An engine release as its analyzer opens it: ``open_target(target)``, where ``None`` is the installed package.
    An installed package that cannot be found is a blocking gap, not an input error (an audit machine need not have
    the engine installed); its advice is said once and names a release version (``option example``, e.g.
    ``--vllm 0.33.0``) when ``example`` is given.

    Raises:
        InputError: an explicit target that cannot be opened (not this engine, a corrupt wheel).
    """
    from mtp_audit.errors import InputError

    if target is not None:
        return open_target(target), None
    try:
        return open_target(None), None
    except InputError as exc:
        why = exc.problem.split(";", 1)[0]  # the installed-package lookup's own advice is said below, once
        release = f"a release version such as {option} {example}, " if example else "a release version, "
        return None, Gap("launch", f"no {label} to check the command against ({why}); pass {option} TARGET "
                                   f"({release}a .whl, an unpacked wheel, a package folder or a checkout)", None, True)


def unfetched_release_gap(label: str, option: str, version: str, problem: str) -> Gap:
    """The blocking gap for a release named by version that cannot be fetched now (the package index unreachable and
    the release not cached: ``problem`` from :class:`mtp_audit.sources.pypi.IndexUnavailable`), worded like
    :func:`open_release`'s for a missing installed engine: the command is not checked against that release."""
    return Gap("launch", f"no {label} to check the command against ({option} {version}: {problem})", None, True)


class Analyzers(Protocol):
    """The analyzers a launch audit lends an engine (implemented by :class:`mtp_audit.launch.analyzers.LaunchAnalyzers`):
    an engine asks, the combiner decides how they run (caching, machine source).

    The reports carry their analyzer's typed answer, which is what an engine reads (never the report's facts
    documents): :func:`mtp_audit.checkpoint.typed.checkpoint_answer` of a checkpoint report (the ``config.json`` read
    once, the summary, the MTP declaration and bytes with their extent, the schemes, the GGUF models) and
    :func:`mtp_audit.preflight.typed.machine_answer` of a machine report (the GPUs, their count with its extent,
    packages, platform). The answer is :attr:`mtp_audit.report.Report.answer`, never serialized."""

    def checkpoint(self, path_text: str, flag: str) -> tuple[Report | None, Gap | None]:
        """The checkpoint report for a model path as the command gives it (``flag`` names where it came from).

        Raises:
            InputError: a path that does not exist and is not a hub repo id, or that is not a checkpoint.
        """
        ...

    def preflight(self, launch: Sequence[str] | None, *, engine: str | None, **engine_facts: Any) -> Report:
        """The machine report for this command (``launch``: the tokens the preflight reads FP4/MoE options from, or
        ``None`` for the machine alone;
        ``engine``: the engine that runs it, unless the user named another with ``--engine``; ``None``: let the
        preflight tell it from the command)."""
        ...


@dataclass
class LaunchRequest:
    """One launch to evaluate: the command and its surroundings.

    Attributes:
        toks: the command's tokens (``KEY=VALUE`` prefixes included).
        machine: where the machine facts come from.
        env: extra environment variables of the launch (``--env KEY=VALUE``), applied last.
        environ: the current environment (only the variables the engine reads are used).
        cwd: the folder relative model paths are resolved against.
        analyzers: the checkpoint and machine analyzers to ask.
    """

    toks: list[str]
    machine: Machine
    env: Mapping[str, str] | None
    environ: Mapping[str, str]
    cwd: Path
    analyzers: Analyzers


@dataclass
class EngineOutcome:
    """What an engine says of one launch at one release.

    Attributes:
        name: the target name of the launch report (the command, as one line).
        version: the engine release evaluated against (``None``: unknown).
        findings, gaps: the engine's launch cross-checks (its rule range) and what it could not tell.
        reports: the sub-reports to merge (the engine's own source report, checkpoints, preflight).
        facts: ``facts["launch"]``: ``summary`` (headline values incl. ``verdict``), ``answer``, ``closing``,
            ``verdict``, ``corrected_command``, what runs (``speculative``, ``draft``, ``parallel``), ``command``, ``env``.
        context: what the engine's own :meth:`Engine.compare` needs of this evaluation beyond the facts (SGLang: the
            release's facts and what the launch knows, to evaluate an upgrade's rewrites); never reported.
    """

    name: str
    version: str | None
    findings: list[Finding]
    gaps: list[Gap]
    reports: list[Report]
    facts: dict[str, Any] = field(default_factory=dict)
    context: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class LogLineFormat:
    """One line an engine prints that ``mtp-audit log`` reads, as data.

    Attributes:
        key: what the reader takes from it (``"statistics"``, ``"config"``, ``"version"``, ``"draft-class"``,
            ``"draft-load-failure"``, ``"fatal"``, ``"unused-tensor"``, ``"arch-unknown"``).
        fmt: the format string as written in the engine's source (``%``-style, ``{}``-style or C ``printf``).
        source: ``path:line @ release`` where ``fmt`` is written.
        literal: a substring of every line printed from ``fmt`` (what the reader searches for).
    """

    key: str
    fmt: str
    source: str
    literal: str


@dataclass(frozen=True)
class LogCommand:
    """A launch command found in a log, read by its engine's own command parser.

    Attributes:
        engine: the engine id as the log facts name it (``"sglang"``, ``"vllm"``, ``"llamacpp"``, ``"trtllm"``: the registry's ids).
        entry: the entry point (``"vllm serve"``, ``"llama-server"``).
        typed: the speculative method as typed (``"NEXTN"``, ``"deepseek_mtp"``, ``"draft-mtp"``), or None.
        method: the method that runs after the engine's own aliases (``"EAGLE"``, ``"mtp"``), or None when
            none is asked for; ``alias``: where the engine rewrites ``typed`` into ``method`` (``file:line @
            release``), or None.
        draft: the draft model (as typed, or the engine's default, e.g. the target for vLLM ``mtp``), or None.
        num_speculative_tokens: k (draft tokens per step, or SGLang's steps), None when not given.
        model: the target model. config_file: a configuration file the command names (TensorRT-LLM's YAML).
        notes: what the reading could not settle (an unbalanced quote, an option without its value).
    """

    engine: str
    entry: str
    typed: str | None = None
    method: str | None = None
    alias: str | None = None
    draft: str | None = None
    num_speculative_tokens: int | None = None
    model: str | None = None
    config_file: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricSample:
    """One Prometheus sample an engine exports that ``mtp-audit log --metrics`` reads, as data.

    Attributes:
        key: what it says: ``"accepted"``, ``"drafted"``, ``"drafts"`` (draft tokens accepted, draft tokens made,
            verification steps: counters), ``"per_pos"`` (accepted tokens per draft position: a counter with the label
            ``position``), ``"accept_length"``, ``"accept_rate"`` (gauges: the last logging interval's mean
            acceptance length and rate, 0..1), ``"verify_calls"`` (a counter of verification steps).
        name: the sample's name as exposed (a counter with its ``_total`` suffix: ``vllm:spec_decode_num_drafts_total``).
        source: ``path:line @ release`` where the engine names it (prometheus_client adds ``_total`` to a counter's name
            when the source writes it without).
    """

    key: str
    name: str
    source: str


@dataclass(frozen=True)
class LogMetrics:
    """What an engine's Prometheus endpoint says about speculative decoding (:attr:`LogDialect.metrics`).

    Attributes:
        label: how findings name the server (``"llama-server"``, ``"vLLM"``).
        window: ``"counters"``: the ``accepted``/``drafted``/``drafts`` counters since the server started (the window is
            their increase between two reads); ``"gauges"``: the last interval's ``accept_length``/``accept_rate``,
            read at the second read, and ``verify_calls`` counted between the reads.
        samples: the samples read (:class:`MetricSample`).
    """

    label: str
    window: str
    samples: tuple[MetricSample, ...]


class LogSink(Protocol):
    """The facts of one log as an engine's line reader (:attr:`LogDialect.read`) adds to them;
    :class:`mtp_audit.runtime.extract.LogFacts` implements it. ``config``, ``draft`` and ``version`` map a key to a
    fact made by :meth:`fact` (its ``value`` and ``line``)."""

    config: dict[str, Any]
    draft: dict[str, Any]
    version: dict[str, Any]

    def fact(self, value: Any, line: int) -> Any:
        """A fact: ``value`` read at ``line``."""

    def run_start(self, line: int) -> None:
        """An engine run starts at ``line`` (its start-up line)."""

    def interval(self, line: int, mean_len: float | None = None, rate: float | None = None, accepted: int | None = None,
                 drafted: int | None = None, per_pos: tuple[float, ...] = (), source: str | None = None) -> None:
        """One statistics line: mean acceptance length, acceptance rate (0..1), token counts, per-position rates, source."""

    def per_position(self, line: int, values: tuple[float, ...]) -> None:
        """Per-position rates continuing the statistics line just before ``line``."""

    def open_config(self, line: int, body: str, cut: bool, read: Callable[[Any, str, int], None]) -> None:
        """A configuration printed at ``line``, maybe hard-wrapped over the next lines: ``read(sink, body, line)`` once
        its parentheses close (or its continuation ends)."""

    def no_speculation(self, line: int, restart: bool = False) -> None:
        """A statistics line printed without speculative fields (the engine prints them whenever speculation is on);
        ``restart``: the same engine printed speculative statistics lines before it, so a process without speculation
        started since (a new run, when the current run has statistics)."""

    def unused_tensor(self, block: int, name: str, size: int, line: int) -> None:
        """A tensor of block ``block`` loaded but unused (``size`` bytes)."""

    def note(self, key: str, value: Any, line: int) -> None:
        """Another fact: ``n_layer``, ``spec_init``, ``draft_type``, ``threshold_off``, ``command`` (a :class:`LogCommand`
        from what the engine logged of its arguments, kept when no launch command was read before it)."""

    def scratch(self, engine: str) -> dict[str, Any]:
        """Per-log state an engine reader keeps between lines (running totals)."""

    def hold(self, engine: str, line: int, raw: str) -> bool:
        """A statistics line that stops before its figures end (a number at the line end, or before the fields the
        format prints last): True when it waits for the next line (``engine``'s reader reads it again, joined with that
        line when the line continues it: a fold); False when it is to be read now as it is."""

    def unread(self, line: int, why: str) -> None:
        """A statistics line whose figures cannot be read (``why``: ``cut``, its figure runs to the line end and no
        line continues it; ``bad``, a figure that is not a number): counted as no statistics, and said."""


@dataclass(frozen=True)
class LogDialect:
    """How one engine writes its log: what ``mtp-audit log`` needs to know about an engine, kept in the engine's
    package (``mtp_audit/engines/<engine>/logdialect.py``) and handed to the reader by the registry.

    Attributes:
        engine: the engine id in log facts (the registry's id, e.g. ``llamacpp``); label: its name for people.
        words: substrings only this engine prints (each one recognises the engine wherever it appears).
        wrappers: ``(substring, name)`` of launchers that wrap this engine and print their own lines around its
            output (Ollama, LocalAI, ... for llama.cpp): recognised as this engine, and named.
        lines: the lines read, each with its format string and source (:class:`LogLineFormat`).
        command: the engine's command reader: tokens starting at a program -> :class:`LogCommand`, or None when
            the tokens do not start this engine.
        command_words: substrings of a line that may hold this engine's launch command (``vllm serve``).
        read: the engine's line reader: ``read(sink, line_number, raw, text, cut)`` adds what the line says to the
            :class:`LogSink` (``raw``: the line as printed; ``text``: without container and logger prefixes).
        fast: the reader of the statistics lines that make up most of a long log: ``fast(sink, number, raw)`` is True
            when it took the line (then nothing else reads it).
        recognise: ``recognise(raw, text)`` is True when the line is this engine's (beyond :attr:`words`).
        deciding: the lines that would decide when a log of this engine lacks them (for "could not tell").
        mtp_methods: methods, as this engine prints them, that draft with the checkpoint's MTP/NextN heads.
        off_config: how this engine prints "no speculation" in its configuration (``speculative_config=None``).
        fatal: substrings of this engine's fatal lines (marking a traceback as its crash).
        native_fatal: substrings of lines that are a crash on their own (a C/C++ abort).
        zero_causes: likely causes, specific to this engine, when nothing was accepted.
        known_zero: public reports of zero acceptance, matched on the printed configuration:
            ``(config key, test on its value, cause)``.
        no_speculation_words: how to say that statistics lines came without speculative fields (``{n}`` lines,
            ``{s}`` plural ending, from line ``{first}``).
        unused_advice: what an MTP/NextN block loaded as unused tensors means for this engine.
        source_causes: ``(source prefix, source left out, cause)``: a cause when a source of that prefix other than the
            one left out drafted and nothing was accepted (llama-server slots other than 0).
        prefixes: regular expressions (bounded, matched at the line start) of what this engine's logger writes
            before a message (vLLM's ``(EngineCore_DP0 pid=1) INFO 04-27 04:07:34 [core.py:97]``); stripped before
            lines are read.
        stamps: ``(kind, regex)`` of this engine's own time stamps at the line start: ``"month-day"`` (groups month,
            day, hour, minute, second: no year) or ``"since-start"`` (groups minutes, seconds, milliseconds since the
            process started: going back means a restart).
        metrics: the speculative-decoding samples of this engine's Prometheus endpoint (:class:`LogMetrics`), or None
            when ``--metrics`` reads none of this engine's.
    """

    engine: str
    label: str
    words: tuple[str, ...]
    wrappers: tuple[tuple[str, str], ...]
    lines: tuple[LogLineFormat, ...]
    command: Callable[[list[str]], LogCommand | None]
    command_words: tuple[str, ...] = ()
    read: Callable[[LogSink, int, str, str, bool], None] | None = None
    fast: Callable[[LogSink, int, str], bool] | None = None
    recognise: Callable[[str, str], bool] | None = None
    deciding: str = ""
    mtp_methods: tuple[str, ...] = ()
    off_config: str = ""
    fatal: tuple[str, ...] = ()
    native_fatal: tuple[str, ...] = ()
    zero_causes: tuple[str, ...] = ()
    known_zero: tuple[tuple[str, Callable[[Any], bool], str], ...] = ()
    no_speculation_words: str = ""
    unused_advice: str = ""
    source_causes: tuple[tuple[str, str, str], ...] = ()
    prefixes: tuple[str, ...] = ()
    stamps: tuple[tuple[str, str], ...] = ()
    metrics: LogMetrics | None = None


@dataclass(frozen=True)
class KernelQuestion:
    """What an engine's :meth:`Engine.fp4_verdict` hook is asked about: one launch's checkpoint on one machine.

    Attributes:
        checkpoint: the served checkpoint's typed answer (:class:`~mtp_audit.checkpoint.typed.CheckpointAnswer`;
            ``None``: not audited).
        machine: the machine's typed answer (:class:`~mtp_audit.preflight.typed.MachineAnswer`: its GPUs, platform, ...;
            ``None``: no machine facts).
        options: the engine's own options that pick kernels (a MoE backend, ``--quantization``), as the launch gives
            them (name -> value).
    """

    checkpoint: CheckpointAnswer | None
    #: a MachineAnswer or None; typed Any so that this interface imports nothing of the preflight (which reads the
    #: engine registry: the import graph stays acyclic)
    machine: Any
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuFp4:
    """One GPU's native-FP4 answer for one engine's kernels.

    Attributes:
        gpu: the GPU index; name: its name; compute_capability: ``"9.0"`` (``None``: unknown).
        native_fp4: ``"capable"`` / ``"not capable"`` / ``"unknown"`` / ``"not applicable"``.
        reasons: why, in sentences (rule ids first where a finding says it).
    """

    gpu: int
    name: str | None
    compute_capability: str | None
    native_fp4: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Fp4Verdict:
    """An engine's answer to "do this machine's GPUs run the FP4 kernels this launch needs", for the engine's own
    kernels (not another engine's capability matrix).

    Attributes:
        engine: the engine id.
        needed: whether the launch runs FP4 kernels (``None``: could not tell, the checkpoint was not audited).
        overall: the worst per-GPU verdict (``"not applicable"`` when ``needed`` is ``False`` or the engine's kernels
            take no FP4 path that needs particular hardware: ``reason`` says why).
        gpus: per-GPU answers.
        kernels: what the answer is about (``"NVFP4 GEMM / MoE (CUTLASS)"``).
        sources: where the kernel facts come from (file:line at a commit or release).
        findings, gaps: what the engine reports about it (its own rule range).
        reason: for ``"not applicable"``: why.
    """

    engine: str
    needed: bool | None
    overall: str
    gpus: tuple[GpuFp4, ...] = ()
    kernels: str = ""
    sources: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    gaps: tuple[Gap, ...] = ()
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``facts["launch"]["fp4"]`` (findings and gaps are reported on their own)."""
        return {"engine": self.engine, "needed": self.needed, "native_fp4": self.overall, "kernels": self.kernels,
                "verdicts": [{"gpu": g.gpu, "name": g.name, "compute_capability": g.compute_capability,
                              "native_fp4": g.native_fp4, "reasons": list(g.reasons)} for g in self.gpus],
                "sources": list(self.sources), "reason": self.reason}


@dataclass(frozen=True)
class DraftQuestion:
    """What an engine's :meth:`Engine.draft_memory` hook is asked: the draft checkpoint's facts and the launch's sizes.

    Attributes:
        checkpoint: the typed answer of the checkpoint the draft's MTP layers come from
            (:class:`~mtp_audit.checkpoint.typed.CheckpointAnswer`; llama.cpp: the GGUF model holding the head,
            :class:`~mtp_audit.checkpoint.typed_gguf.GgufModel`; an engine not yet on the typed answers may still hand the
            ``facts["checkpoint"]`` document); ``None``: not audited.
        tensor_parallel: the tensor-parallel size the draft is sharded over.
    """

    checkpoint: Any  # CheckpointAnswer | GgufModel | Mapping[str, Any] | None (the document while vLLM hands it)
    tensor_parallel: int


@dataclass(frozen=True)
class DraftMemory:
    """The draft's weights per GPU, in bytes.

    Attributes:
        mtp_bytes: the MTP tensors' bytes (exact from headers or estimated from config: ``estimated``).
        peak_per_gpu: at load, before the engine frees anything.
        steady_per_gpu: once the engine has shared or freed what it does (``None``: not derived).
        tensor_parallel: the size the bytes are split over.
        how: how the split was made and where the engine's behaviour comes from.
    """

    mtp_bytes: int
    estimated: bool
    peak_per_gpu: float
    steady_per_gpu: float | None
    tensor_parallel: int
    how: str


@dataclass(frozen=True)
class PinCheck:
    """One pin of an engine release against the machine.

    Attributes:
        package: the pinned distribution (``"torch"``); spec: the release's specifier (``"==2.14.0"``).
        machine: the machine's version (``None``: unknown); holds: whether it satisfies the pin (``None``: unknown).
        source: where the pin was read (``"vllm 0.33.0 METADATA Requires-Dist"``).
    """

    package: str
    spec: str
    machine: str | None
    holds: bool | None
    source: str


@dataclass(frozen=True)
class Coverage:
    """How an engine answers one check of the parity matrix (:mod:`mtp_audit.engines.parity`): exactly one of

    Attributes:
        rules: the rule ids that implement it (each must be a registered rule).
        na: why the check does not apply to this engine (or platform).
        open: what is still missing, when the engine should answer it and does not yet.
    """

    rules: tuple[str, ...] = ()
    na: str = ""
    open: str = ""


class Engine(ABC):
    """One serving engine, as ``mtp-audit launch`` sees it.

    Class attributes:
        name: the engine's id (``"sglang"``, ``"vllm"``, ...), also the ``--engine`` value.
        label: how the engine is named to a person (``"SGLang"``).
        target_option: the command-line option that picks the release to check against (``"--sglang"``).
        rules_module: the module whose ``RULES`` declare this engine's launch cross-checks.
        index_package: the distribution on the package index whose versions name this engine's releases
            (``"sglang"``); empty: a release target is not a package version (:meth:`by_version`).
        example_tree: the folder of a launch rule's example that holds this engine's release (``"sg"``; with
            ``-new``: a second release to compare with); empty: the engine's examples need no release tree.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    target_option: ClassVar[str]
    rules_module: ClassVar[str]
    index_package: ClassVar[str] = ""
    example_tree: ClassVar[str] = ""
    #: how the engine's server is started, for the "not an engine launch" message
    entry_examples: ClassVar[tuple[str, ...]] = ()
    #: platforms (:data:`mtp_audit.preflight.platforms.LABELS` keys) the engine runs on, with its source
    platforms: ClassVar[tuple[str, ...]] = ("cuda",)
    platforms_source: ClassVar[str] = ""
    #: check (:data:`mtp_audit.engines.parity.CHECKS`) -> its coverage, or a mapping platform -> coverage (``"*"``: the
    #: other platforms); a check left out is an empty cell of the parity matrix, which its test refuses
    parity: ClassVar[Mapping[str, Coverage | Mapping[str, Coverage]]] = {}

    @abstractmethod
    def entry(self, toks: Sequence[str]) -> str | None:
        """The entry point if this command starts this engine's server (``"vllm serve"``), else ``None``."""

    @abstractmethod
    def release(self, target: Any) -> tuple[Any, Gap | None]:
        """This engine's facts at one release (``target``: a version folder, wheel, report, or ``None`` for the
        installed one); an engine that cannot be found is a blocking gap, not an error.

        Raises:
            InputError: an explicit target that cannot be opened.
        """

    @abstractmethod
    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        """What will run for this command on this checkpoint and machine at this release: the algorithm, draft,
        backends, refusals with file:line, the corrected command (re-checked), as an :class:`EngineOutcome`.

        Raises:
            InputError: a command this engine cannot start (a model path that does not exist, ...).
        """

    def by_version(self, target: Any) -> Any:
        """``target`` as :meth:`release` takes it: for an engine with an :attr:`index_package`, a release version
        (``"0.33.0"``) that is not an existing path becomes the local wheel
        :func:`mtp_audit.sources.pypi.by_version` fetches or finds in the cache (what the CLI's release options do);
        anything else, and every target of an engine without one, is returned as given.

        Raises:
            InputError / IndexUnavailable: as :func:`mtp_audit.sources.pypi.release_wheel`.
        """
        if not self.index_package or not isinstance(target, str):
            return target
        from mtp_audit.sources.pypi import by_version

        return by_version(self.index_package, target)

    def kernels(self) -> KernelChecks | None:
        """This engine's FP4 kernel knowledge for the preflight (which GEMM / MoE kernels it picks on a machine and
        what each needs, its FP4 ``--quantization`` names, how its remediations are worded), or ``None``: the
        engine has nothing to add, and the preflight answers for the machine alone."""
        return None

    def uses_heads(self, evidence: HeadsEvidence) -> HeadsAnswer | None:
        """Whether this engine will draft with the MTP heads of the checkpoint ``evidence`` describes (what the
        files declare and hold, the errors that stop a load), in its own words; ``None``: the engine has nothing
        to say about a checkpoint's heads."""
        return None

    def list_overrides(self) -> tuple[MtpQuantOverride, ...]:
        """Where this engine's code builds a checkpoint's MTP module (or part of it) unquantized whatever the
        checkpoint's exclusion list says, one row per architecture family and quantization method, each read in a
        named release (the checkpoint analyzer's MTP007 is then a warning naming it); none by default."""
        return ()

    def quantization_method(self, method: str, quant_algo: str) -> Mapping[str, str] | None:
        """This engine's own quantization method for a checkpoint whose config declares ``method`` and
        ``quant_algo`` (``"modelopt"``, ``"MIXED_PRECISION"``; empty when none), whatever the launch's ``--quantization`` says, as
        ``{"method", "source", "replaces_flag"}`` (reported as ``<engine id>_method`` of the checkpoint's
        quantization facts); ``None``: nothing to say (the default)."""
        return None

    def gguf_mtp_graph(self, arch: str | None, build: int | None) -> tuple[bool | None, Any]:
        """For an engine that loads GGUF files: whether its ``build`` (``None``: the newest known) has a graph that
        drafts with the MTP head of a GGUF of architecture ``arch``, as ``(answer, row)`` (answer ``None``: could
        not tell; ``row``: the engine's table row, with ``sidecar``: the head always ships as a separate GGUF).
        ``(None, None)`` by default: the engine does not read GGUF."""
        return None, None

    def log_dialect(self) -> LogDialect | None:
        """How this engine writes its log (:class:`LogDialect`), or None when ``mtp-audit log`` has nothing of it."""
        return None
    def fp4_verdict(self, question: KernelQuestion) -> Fp4Verdict | None:
        """The FP4 verdict for this engine's own kernels on the machine (a hook: an engine that does not implement it
        has nothing to add, and the preflight's verdict stands). ``question`` holds the checkpoint's and the machine's
        facts and the engine's kernel options."""
        return None

    def draft_memory(self, question: DraftQuestion) -> DraftMemory | None:
        """The draft's bytes per GPU for this engine (a hook: ``None``, nothing to add, by default)."""
        return None

    def release_pins(self, release: Any, machine: Mapping[str, Any]) -> tuple[PinCheck, ...]:
        """The release's pins (torch, CUDA) against ``machine`` (``facts["preflight"]``) (a hook: none by default)."""
        return ()

    def compare(self, request: LaunchRequest, old: EngineOutcome, new: EngineOutcome) -> EngineOutcome:
        """The outcome at ``new`` annotated with what changed since ``old`` (two releases of this engine).

        Raises:
            InputError: the engine cannot compare releases.
        """
        from mtp_audit.errors import InputError

        raise InputError(self.target_option, f"comparing two {self.label} releases is not supported")
