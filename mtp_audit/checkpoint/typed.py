"""The checkpoint analyzer's typed answer: what the engines read of one checkpoint audit, as frozen dataclasses.

How an engine gets it: :func:`checkpoint_answer` of the checkpoint report the analyzers lend it
(:meth:`mtp_audit.engines.base.Analyzers.checkpoint`). A report built by :func:`mtp_audit.checkpoint.answer.build_report`
carries its answer in :attr:`mtp_audit.report.Report.answer` (never serialized: the report's JSON is unchanged); a
report that does not carry one (a GGUF audit, a hub that could not be reached, a report loaded back from JSON) is read
once, here, from its ``facts["checkpoint"]`` document (:meth:`CheckpointAnswer.from_doc`), so no engine reads that
document itself. ``config.json`` is read once per audit: :attr:`CheckpointAnswer.config` is the bounded mapping the
checkpoint analyzer parsed (``None`` when it read none), which the engines use instead of reading the file again.

Extents: byte counts are :class:`~mtp_audit.known.Known` values, ``"exact"`` when every MTP tensor's header was read,
``"unknown"`` otherwise (an estimate from config dimensions is neither a count nor a bound: its value stays in
:attr:`MtpBytes.value` with ``estimated=True``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mtp_audit.readonly import ReadOnlyMap
from mtp_audit.valueclass import Value

if TYPE_CHECKING:  # imported where they are used, which a safetensors checkpoint audit is not (~0.4 ms a class):
    from mtp_audit.checkpoint.typed_gguf import GgufModel  # a GGUF audit's document, read by _gguf_model
    from mtp_audit.known import Known  # MtpBytes.known

#: ``CheckpointFacts.cache`` key under which the checkpoint analyzer keeps the ``config.json`` mapping it read (bounded,
#: :func:`mtp_audit.checkpoint.facts._read_config_and_schemes`).
RAW_CONFIG = "config.json"

_EMPTY: Mapping[str, Any] = ReadOnlyMap({})


def _map(d: Any, key: str) -> Mapping[str, Any]:
    """``d[key]`` when ``d`` is a mapping and that value is one, else an empty mapping."""
    v = d.get(key) if isinstance(d, Mapping) else None
    return v if isinstance(v, Mapping) else _EMPTY


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def frozen(d: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A read-only copy of ``d`` (:class:`~mtp_audit.readonly.ReadOnlyMap`; ``None`` stays ``None``); nested values are
    shared, not copied."""
    return None if d is None else ReadOnlyMap(d)


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class QuantAnswer(Value):
    """One quantization scheme of the checkpoint (one entry of ``facts["checkpoint"]["quantization"]``, primary first).

    Attributes:
        method: the config's ``quant_method`` / producer (``"modelopt"``, ``"compressed-tensors"``, ``"fp8"``), ``""``
            when none is written.
        algo: the algorithm (``"NVFP4"``, ``"MXFP4"``, ``"FP8"``, ``"MIXED_PRECISION"``), ``""`` when unknown.
        source: where it was read (``"hf_quant_config.json"``, ``"config.json#/quantization_config"``).
        group_size: elements per scale group, or ``None``.
    """

    method: str
    algo: str
    source: str
    group_size: int | None = None

    @property
    def fp4(self) -> str | None:
        """``"MXFP4"`` / ``"NVFP4"`` when :attr:`algo` names an FP4 format, else ``None``."""
        algo = self.algo.upper()
        return ("MXFP4" if "MX" in algo else "NVFP4") if "FP4" in algo else None

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> QuantAnswer:
        """From one ``facts["checkpoint"]["quantization"]`` entry (:meth:`QuantScheme.to_fact`)."""
        return cls(str(d.get("method") or ""), str(d.get("algo") or ""), str(d.get("source") or ""), _int(d.get("group_size")))


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class MtpBytes(Value):
    """Bytes of the MTP tensors (``facts["checkpoint"]["mtp"]["bytes"]``).

    Attributes:
        value: bytes, counted from the safetensors headers or estimated from config dimensions; ``None`` when neither.
        estimated: ``True`` for an estimate (config-only, metadata-only, or a header not read); ``None`` where the
            audit does not say (a GGUF audit's summary).
        reason: why there is no value (``"no config.json"``), else ``None``.
        where: the checkpoint as the report names it (the provenance of :attr:`known`).
        unestimated_tensors: for an estimate, the MTP tensors whose shape could not be derived (not counted), else
            ``None``.
        basis: what an estimate rests on when no tensor was listed (``"expected layout from config (no tensors
            inspected)"``), else ``None``.
    """

    value: int | None
    estimated: bool | None
    reason: str | None = None
    where: str = "checkpoint"
    unestimated_tensors: int | None = None
    basis: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON (``facts["checkpoint"]["mtp"]["bytes"]``): ``value`` and ``estimated``, then ``reason``, or
        ``unestimated_tensors`` and ``basis``, where they are said."""
        out: dict[str, Any] = {"value": self.value, "estimated": self.estimated}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.unestimated_tensors is not None:
            out["unestimated_tensors"] = self.unestimated_tensors
        if self.basis is not None:
            out["basis"] = self.basis
        return out

    @property
    def known(self) -> Known[int]:
        """The count as a :class:`Known`: ``"exact"`` from the headers of every MTP tensor, else ``"unknown"`` (the
        provenance's ``how`` carries the estimate or the reason)."""
        from mtp_audit.known import Known, Provenance

        if self.value is not None and not self.estimated:
            return Known.exact(self.value, Provenance(self.where, None, "safetensors headers of every MTP tensor"))
        how = f"estimated from config dimensions: {self.value:,} bytes" if self.value is not None else (self.reason or "not counted")
        return Known.unknown(Provenance(self.where, None, how))

    @classmethod
    def from_doc(cls, d: Mapping[str, Any], where: str = "checkpoint") -> MtpBytes:
        """From ``{"value", "estimated", "reason"?, "unestimated_tensors"?, "basis"?}``
        (:func:`mtp_audit.checkpoint.accounting.mtp_bytes`)."""
        return cls(_int(d.get("value")), bool(d.get("estimated")), _str(d.get("reason")), where,
                   _int(d.get("unestimated_tensors")), _str(d.get("basis")))

    @classmethod
    def unlisted(cls, where: str = "checkpoint") -> MtpBytes:
        """No MTP section in the audit (a GGUF audit, an audit that read nothing)."""
        return cls(None, None, "no MTP section in the checkpoint facts", where)


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class MtpAnswer(Value):
    """What the checkpoint declares and holds for MTP (``facts["checkpoint"]["mtp"]``).

    Attributes:
        declared_layers: MTP layers ``config.json`` declares (``None``: no config).
        declared_by: the key that declares them (``"num_nextn_predict_layers"``, ``"/text_config/mtp_num_hidden_layers"``),
            ``"implicit"`` for a family that always ships MTP, ``None`` when nothing declares any.
        found_layers: MTP layers with tensors found (``None``: not listed).
        tensors: MTP tensors found (``None``: the tensors could not be listed, or not a safetensors audit).
        format: storage format of the MTP linear modules (``"nvfp4"``, ``"bf16"``, ``"mixed"``), ``None`` when unknown.
        bytes: see :class:`MtpBytes` (:meth:`MtpBytes.unlisted` without an MTP section).
        listed: whether the audit wrote an MTP section with its bytes (a safetensors audit); a GGUF audit counts its
            nextn bytes in the summary only (:attr:`CheckpointAnswer.mtp_bytes`).
        attention_bytes: bytes of the MTP layers' attention tensors (headers read), else ``None``.
        embed_head_bytes: bytes of the MTP layers' own embedding / output head, else ``None``.
        dtypes: MTP tensors per safetensors dtype (``{"BF16": 12, "U8": 96}``).
        hallmarks: ``[name, layer, part]`` of the MTP tensors that map to GGUF nextn parts.
    """

    declared_layers: int | None = None
    declared_by: str | None = None
    found_layers: int | None = None
    tensors: int | None = None
    format: str | None = None
    bytes: MtpBytes = field(default_factory=MtpBytes.unlisted)
    listed: bool = False
    attention_bytes: int | None = None
    embed_head_bytes: int | None = None
    dtypes: Mapping[str, int] = field(default_factory=dict)
    hallmarks: tuple[tuple[Any, ...], ...] = ()

    @classmethod
    def from_doc(cls, d: Mapping[str, Any], where: str = "checkpoint") -> MtpAnswer:
        """From ``facts["checkpoint"]["mtp"]`` (empty: no section)."""
        b = _map(d, "bytes")
        listed = "value" in b
        found = d.get("found_layers")
        return cls(
            declared_layers=_int(d.get("declared_layers")),
            declared_by=_str(d.get("declared_by")),
            found_layers=_int(found) if not isinstance(found, list) else len(found),
            tensors=_int(d.get("tensors")),
            format=_str(d.get("format")),
            bytes=MtpBytes.from_doc(b, where) if listed else MtpBytes.unlisted(where),
            listed=listed,
            attention_bytes=_int(d.get("attention_bytes")),
            embed_head_bytes=_int(d.get("embed_head_bytes")),
            dtypes=ReadOnlyMap({str(k): int(v) for k, v in _map(d, "dtypes").items() if _int(v) is not None}),
            hallmarks=tuple(tuple(h) for h in d.get("hallmarks") or () if isinstance(h, (list, tuple))),
        )


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class ConfigSummary(Value):
    """What ``config.json`` says (``facts["checkpoint"]["config"]``, written from this by :meth:`to_dict`).

    Attributes:
        architectures: ``architectures``.
        model_type: top-level ``model_type`` (``""`` when absent).
        text_model_type: ``text_config.model_type``, or ``None``.
        speculators_config: the config has a ``speculators_config`` table (a speculators-format draft).
        text_config: the facts come from a nested ``text_config``.
        num_hidden_layers: trunk depth, or ``None``.
        num_experts: routed experts per MoE layer, or ``None`` (dense).
        experts_key: JSON pointer of the expert-count key, or ``None``.
        family, family_source: the layout family (``"deepseek-v3"``) and what identified it, or ``None``.
        dspark: the ``dspark_*`` keys (a DSpark drafter), or ``None``.
    """

    architectures: tuple[str, ...]
    model_type: str
    text_model_type: str | None = None
    speculators_config: bool = False
    text_config: bool = False
    num_hidden_layers: int | None = None
    num_experts: int | None = None
    experts_key: str | None = None
    family: str | None = None
    family_source: str | None = None
    dspark: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON section, in the document's key order."""
        return {"architectures": list(self.architectures), "model_type": self.model_type, "text_model_type": self.text_model_type,
                "speculators_config": self.speculators_config, "text_config": self.text_config,
                "num_hidden_layers": self.num_hidden_layers, "num_experts": self.num_experts, "experts_key": self.experts_key,
                "family": self.family, "family_source": self.family_source,
                "dspark": dict(self.dspark) if self.dspark is not None else None}

    @classmethod
    def from_doc(cls, c: Mapping[str, Any]) -> ConfigSummary:
        """From ``facts["checkpoint"]["config"]`` (ill-typed values read as unknown)."""
        dspark = c.get("dspark")
        return cls(tuple(str(a) for a in c.get("architectures") or ()), str(c.get("model_type") or ""), _str(c.get("text_model_type")),
                   bool(c.get("speculators_config")), bool(c.get("text_config")), _int(c.get("num_hidden_layers")),
                   _int(c.get("num_experts")), _str(c.get("experts_key")), _str(c.get("family")), _str(c.get("family_source")),
                   ReadOnlyMap(dspark) if isinstance(dspark, Mapping) else None)


#: The keys of ``facts["checkpoint"]["summary"]`` :class:`CheckpointSummary` holds, in the document's order.
SUMMARY_KEYS = ("architecture", "family", "mode", "mtp_layers_declared", "mtp_layers_found", "mtp_tensors", "mtp_format",
                "trunk_format", "mtp_bytes", "mtp_bytes_estimated", "tensors", "quantization", "mtp_exclude_patterns")


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class CheckpointSummary(Value):
    """The one-screen numbers (``facts["checkpoint"]["summary"]``, written from this by :meth:`to_dict`).

    Attributes:
        architecture: ``architectures[0]`` of ``config.json`` (GGUF: ``general.architecture``), or ``None``.
        family: the layout family (``"deepseek_v3"``), or ``None``.
        mode: how much was read (``"shards"``, ``"metadata-only"``, ``"config-only"``, ``"single-file"``,
            ``"index-file"``, ``"gguf"``).
        mtp_layers_declared, mtp_layers_found: MTP layers declared / with tensors found (``None``: unknown).
        mtp_tensors, tensors: MTP tensors / all tensors listed (``None``: not listed).
        mtp_format, trunk_format: storage formats (``"nvfp4"``, ``"bf16"``, ``"mixed"``, ``"none"``), ``None`` unknown.
        mtp_bytes: bytes of the MTP tensors, ``mtp_bytes_estimated``: whether an estimate.
        quantization: the primary scheme in words (``"NVFP4 (modelopt, hf_quant_config.json, group size 16)"``).
        mtp_exclude_patterns: the primary scheme's exclusion patterns covering MTP modules, ``", "``-joined.
    """

    architecture: str | None = None
    family: str | None = None
    mode: str | None = None
    mtp_layers_declared: int | None = None
    mtp_layers_found: int | None = None
    mtp_tensors: int | None = None
    mtp_format: str | None = None
    trunk_format: str | None = None
    mtp_bytes: int | None = None
    mtp_bytes_estimated: bool | None = None
    tensors: int | None = None
    quantization: str | None = None
    mtp_exclude_patterns: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON section, keys in :data:`SUMMARY_KEYS` order."""
        return {k: getattr(self, k) for k in SUMMARY_KEYS}

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> CheckpointSummary:
        """From ``facts["checkpoint"]["summary"]`` (keys it lacks stay ``None``; engine keys are ignored)."""
        return cls(**{k: d.get(k) for k in SUMMARY_KEYS})


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class CheckpointAnswer(Value):
    """What one checkpoint audit answers, typed (see the module docstring for how an engine gets it).

    Attributes:
        target: the checkpoint as the report names it.
        mode: see :attr:`CheckpointSummary.mode` (``None``: the audit read nothing, e.g. an unreachable hub).
        config_present: whether a ``config.json`` was parsed (``facts["checkpoint"]["config"]`` is not ``None``).
        architectures: ``config.architectures`` (empty without a config).
        model_type: top-level ``model_type`` (``""`` when absent), ``None`` without a config.
        text_model_type: ``text_config.model_type``, or ``None``.
        speculators: ``config.json`` has a ``speculators_config`` table (a speculators-format draft).
        config: the ``config.json`` mapping the analyzer read, read-only (bounded by the checkpoint source's read
            limits); ``None`` when it read none or the report does not carry it (a report loaded back from JSON).
        summary: see :class:`CheckpointSummary`.
        mtp: see :class:`MtpAnswer`.
        quantization: the quantization schemes, primary first.
        gguf_models: the GGUF models of a GGUF audit (empty otherwise).
        config_summary: see :class:`ConfigSummary` (``None`` without a ``config.json``).
    """

    target: str
    mode: str | None
    config_present: bool
    architectures: tuple[str, ...]
    model_type: str | None
    text_model_type: str | None
    speculators: bool
    config: Mapping[str, Any] | None
    summary: CheckpointSummary
    mtp: MtpAnswer
    quantization: tuple[QuantAnswer, ...] = ()
    gguf_models: tuple[GgufModel, ...] = ()
    config_summary: ConfigSummary | None = None

    @property
    def architecture(self) -> str | None:
        """``architectures[0]``, else the summary's architecture (GGUF: ``general.architecture``)."""
        return self.architectures[0] if self.architectures else self.summary.architecture

    @property
    def mtp_bytes(self) -> MtpBytes:
        """The MTP bytes: the MTP section's (:attr:`MtpAnswer.bytes`), else the summary's ``mtp_bytes`` (a GGUF audit's
        nextn blocks, counted from its headers; ``estimated`` then ``None``: not said)."""
        if self.mtp.listed:
            return self.mtp.bytes
        return MtpBytes(self.summary.mtp_bytes, self.summary.mtp_bytes_estimated, None, self.target)

    @property
    def fp4(self) -> str | None:
        """``"NVFP4"`` / ``"MXFP4"``: the first quantization scheme whose algorithm is FP4, else ``None``."""
        return next((q.fp4 for q in self.quantization if q.fp4), None)

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], target: str = "checkpoint", config: Mapping[str, Any] | None = None) -> CheckpointAnswer:
        """Read once from a ``facts["checkpoint"]`` document (schema: docs/checkpoint.md); ``config``: the raw
        ``config.json`` mapping when the caller holds it. Missing or ill-typed parts read as unknown, never raise."""
        cfg = doc.get("config")
        c = cfg if isinstance(cfg, Mapping) else _EMPTY
        summary = _map(doc, "summary")
        quants = doc.get("quantization")
        models = _map(doc, "gguf").get("models")
        return cls(
            target=target,
            mode=_str(doc.get("mode")),
            config_present=isinstance(cfg, Mapping),
            architectures=tuple(str(a) for a in c.get("architectures") or ()),
            model_type=_str(c.get("model_type")) if isinstance(cfg, Mapping) else None,
            text_model_type=_str(c.get("text_model_type")),
            speculators=bool(c.get("speculators_config")),
            config=frozen(config),
            summary=CheckpointSummary.from_doc(summary),
            mtp=MtpAnswer.from_doc(_map(doc, "mtp"), target),
            quantization=tuple(QuantAnswer.from_doc(q) for q in quants if isinstance(q, Mapping)) if isinstance(quants, list) else (),
            gguf_models=tuple(_gguf_model(m) for m in models if isinstance(m, Mapping)) if isinstance(models, list) else (),
            config_summary=ConfigSummary.from_doc(cfg) if isinstance(cfg, Mapping) else None,
        )


def _gguf_model(d: Mapping[str, Any]) -> GgufModel:
    """One :class:`~mtp_audit.checkpoint.typed_gguf.GgufModel` from one ``facts["checkpoint"]["gguf"]["models"]`` entry
    (:mod:`mtp_audit.checkpoint.gguf_audit`)."""
    from mtp_audit.checkpoint.typed_gguf import GgufModel, NextnBlock

    blocks = tuple(NextnBlock(int(b), ReadOnlyMap(_map(v, "parts")), ReadOnlyMap(_map(v, "scales")),
                              _int(v.get("block_bytes")) or 0)
                   for b, v in _map(d, "nextn_blocks").items() if isinstance(v, Mapping) and str(b).isdigit())
    types = {str(k): int(v) for k, v in _map(d, "tensor_types").items() if _int(v) is not None}
    return GgufModel(str(d.get("name") or ""), _str(d.get("kind")), _str(d.get("architecture")),
                     _int(d.get("nextn_predict_layers")), _str(d.get("drafter")),
                     ReadOnlyMap(types), blocks)


def checkpoint_answer(report: Any) -> CheckpointAnswer | None:
    """The typed answer of a checkpoint report: the one it carries (:attr:`mtp_audit.report.Report.answer`), else read
    from its ``facts["checkpoint"]`` (:meth:`CheckpointAnswer.from_doc`); ``None`` for ``None``, a report without
    checkpoint facts, or an empty document (an audit that read nothing)."""
    if report is None:
        return None
    if isinstance(getattr(report, "answer", None), CheckpointAnswer):
        return report.answer  # type: ignore[no-any-return]
    doc = report.facts.get("checkpoint")
    if not isinstance(doc, Mapping) or not doc:
        return None
    return CheckpointAnswer.from_doc(doc, report.targets[0].name if report.targets else "checkpoint")


def as_checkpoint_answer(ck: CheckpointAnswer | Mapping[str, Any] | None) -> CheckpointAnswer | None:
    """``ck`` as a typed answer: an answer as it is, a ``facts["checkpoint"]`` document read once
    (:meth:`CheckpointAnswer.from_doc`), ``None`` as ``None``. For the shared engine helpers while an engine still
    hands them the document."""
    if ck is None or isinstance(ck, CheckpointAnswer):
        return ck
    return CheckpointAnswer.from_doc(ck)
