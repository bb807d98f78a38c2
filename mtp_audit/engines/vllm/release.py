"""One vLLM release's facts (``report.facts["vllm"]``, docs/vllm.md) as a frozen, typed view.

:func:`mtp_audit.engines.vllm.audit.link` writes the facts dict (the report's JSON); the readers of those facts (the
tree findings, the upgrade diff, the launch evaluation) read them through :class:`VllmRelease` instead of chains of
``.get(...) or {}`` guesses: each part has one shape, written down here, and a part the facts lack (an older
report, a partial audit) reads as "absent" (``None``, an empty tuple or mapping), never as an error.

Records that are lists of uniform rows in the facts (``rewrites``, ``draft_chains``, ``env_vars``, the proposer
chains ...) are kept as the facts' own mappings (their keys are listed on each attribute); the view never copies or
changes the facts dict, so a report written from it stays byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def _map(x: Any) -> Mapping[str, Any]:
    """``x`` when it is a mapping, else an empty one (a part the facts lack or hold as ``null``). Plain mappings, so a
    view pickles and deep-copies like the report it was read from."""
    return x if isinstance(x, Mapping) else {}


def _rows(x: Any) -> tuple[Mapping[str, Any], ...]:
    """The mappings of a list in the facts (empty when the list is absent)."""
    return tuple(r for r in x if isinstance(r, Mapping)) if isinstance(x, Sequence) and not isinstance(x, str) else ()


def _strs(x: Any) -> tuple[Any, ...]:
    """A list of the facts as a tuple (empty when absent)."""
    return tuple(x) if isinstance(x, Sequence) and not isinstance(x, str) else ()


@dataclass(frozen=True)
class MethodLiteral:
    """The ``Literal`` the ``method`` field is validated against (``facts.spec_config.method_literal``).

    Attributes:
        name: the Literal's name (``"SpeculativeMethod"``), ``None`` when unnamed.
        values: the methods it admits, in source order (``("ngram", "medusa", "mlp_speculator", ...)``).
        location: ``"vllm/config/speculative.py:55"`` (``path:line`` in the tree), ``None`` when not known.
    """

    name: str | None
    values: tuple[Any, ...]
    location: str | None


@dataclass(frozen=True)
class SpecConfigFacts:
    """``facts.spec_config``: how ``SpeculativeConfig`` is declared and validated.

    Attributes:
        location: the class's ``path:line`` (``None``: the class was not read).
        validated: whether pydantic validates the fields before ``__post_init__`` (a pydantic dataclass).
        validated_by: what makes it one (``"@config (vllm/config/utils.py:41 builds a pydantic dataclass)"``), or ``None``.
        method_field: ``path:line`` of the ``method`` annotation, or ``None``.
        method_literal: the validated Literal (:class:`MethodLiteral`), ``None`` when not statically resolvable.
        fields: the keys ``SpeculativeConfig(**...)`` accepts, in source order; ``None`` when not read.
    """

    location: str | None = None
    validated: bool = False
    validated_by: str | None = None
    method_field: str | None = None
    method_literal: MethodLiteral | None = None
    fields: tuple[str, ...] | None = None

    @classmethod
    def from_facts(cls, d: Any) -> SpecConfigFacts:
        """From ``facts["spec_config"]`` (absent: nothing known)."""
        d = _map(d)
        lit = d.get("method_literal")
        literal = MethodLiteral(lit.get("name"), _strs(lit.get("values")), lit.get("location")) if isinstance(lit, Mapping) else None
        fields = d.get("fields")
        return cls(d.get("location"), bool(d.get("validated")), d.get("validated_by"), d.get("method_field"), literal,
                   tuple(fields) if isinstance(fields, Sequence) and not isinstance(fields, str) else None)


@dataclass(frozen=True)
class MtpAlias:
    """``facts.mtp_alias``: the ``self.method = "mtp"`` rewrite of the per-model MTP methods (0.11+).

    Attributes:
        members: the methods rewritten to ``mtp`` (``("deepseek_mtp", "mimo_mtp", ...)``).
        set: the name of the set they are read from (``"MTPModelTypes"``), ``None`` for a literal tuple.
        set_location: ``path:line`` of that set, or ``None``.
        set_kind: ``"tuple"`` (0.11.0) or ``"Literal"`` (0.11.1+), ``None`` when not known.
        location: ``path:line`` of the rewrite.
        logged: whether a warning is logged before the write.
    """

    members: tuple[str, ...]
    set: str | None
    set_location: str | None
    set_kind: str | None
    location: str | None
    logged: bool


@dataclass(frozen=True)
class RunnerChoice:
    """``facts.runner``: how the model runner (V1 / V2) is chosen.

    Attributes:
        v2_runner_exists: whether the tree dispatches V2 speculators.
        env: ``"VLLM_USE_V2_MODEL_RUNNER"`` when ``vllm/envs.py`` defines it, else ``None``.
        env_default: that variable's default as source text (``'"0"'``, ``"None"``), or ``None``.
        auto_location: ``path:line`` of ``use_v2_model_runner`` (the automatic choice), or ``None``.
        default: the runner used by default in words (``"v1"``, ``"auto (V2 unless ...)"``), ``None`` when not read.
    """

    v2_runner_exists: bool = False
    env: str | None = None
    env_default: str | None = None
    auto_location: str | None = None
    default: str | None = None


@dataclass(frozen=True)
class V1Oracle:
    """``facts.v1_oracle`` (0.8-0.10): the methods ``EngineArgs._is_v1_supported_oracle`` lets onto the V1 engine.

    Attributes:
        accepted: the methods accepted (``("[ngram]", "eagle", "eagle3", "ngram")`` in 0.8.5).
        location: ``path:line`` of the test.
    """

    accepted: tuple[str, ...]
    location: str | None


@dataclass(frozen=True)
class NPredictRules:
    """``facts.n_predict_rules``: what ``SpeculativeConfig`` does with ``num_speculative_tokens`` against the draft's
    ``n_predict`` (each a ``path:line``, ``None`` when this release has no such statement).

    Attributes:
        default: the silent default ``num_speculative_tokens = n_predict``.
        divisible_error: the ``ValueError`` for a value that is not a multiple of ``n_predict``.
        reuse_warning: the warning that one MTP layer runs several times.
        reuse_warning_condition: that warning's guard as source text, or ``None``.
        reuse_warning_skips: the draft model types the guard leaves out.
    """

    default: str | None = None
    divisible_error: str | None = None
    reuse_warning: str | None = None
    reuse_warning_condition: str | None = None
    reuse_warning_skips: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lints:
    """``facts.lints``: code-shape findings of the tree.

    Attributes:
        paren_string_in: ``{"location", "test", "string"}`` rows: ``x in ("name")`` tests a substring.
        aliases_not_in_literal: alias members the validated Literal does not admit.
    """

    paren_string_in: tuple[Mapping[str, Any], ...] = ()
    aliases_not_in_literal: tuple[str, ...] = ()


@dataclass(frozen=True)
class VllmRelease:
    """The facts of one audited vLLM tree (docs/vllm.md), typed; build it with :meth:`from_facts`.

    Attributes:
        facts: the facts mapping it was read from (not copied; never changed).
        known: whether there were facts at all (``False``: no vLLM was audited; every part is absent).
        version: ``"0.33.0"``, ``None`` when the tree does not say.
        files: role -> tree path of the files read (``{"spec": "vllm/config/speculative.py", "runner_v1": ...}``).
        spec_config: :class:`SpecConfigFacts`.
        mtp_alias: :class:`MtpAlias`, ``None`` when the release has no MTP alias (before 0.11).
        rewrites: ``{"field", "kind", "value", "from", "via", "kept", "detector", "function", "condition", "depth",
            "location", "test_location", "logged", "log_location"}`` rows, in source order.
        runner: :class:`RunnerChoice`.
        v1_oracle: :class:`V1Oracle` (0.8-0.10), else ``None``.
        v0_spec_decode: ``path`` of the V0 spec-decode worker that recognises ``deepseek_mtp``, or ``None``.
        n_predict_rules: :class:`NPredictRules`.
        spec_flags: ``{"flag", "line", "location"}`` rows: the ``--spec-*`` shorthand options (0.33.0+).
        env_vars: ``{"name", "location", "default"}`` rows: the spec-decode / FP4 / MoE variables of ``vllm/envs.py``.
        unknown_env_check: ``path:line`` of the "Unknown vLLM environment variable" check, or ``None``.
        override_location: ``path:line`` of ``hf_config_override``, or ``None``.
        override_link: how the draft ``ModelConfig`` gets it: ``{"how": "direct" | "composed" | "unknown", "value",
            "location", ...}`` (empty when not read).
        draft_chains: ``{"key", "value", "model_type", "architectures", "registered", "conditional", "dynamic",
            "n_predict_from", "location", "arch_location", "text_config_location"}`` rows.
        post_init_arch_writes: ``{"to", "dynamic", "location", "registered", ...}`` rows.
        mtp_classes: ``{"arch", "module", "class", "dict", "location"}`` rows.
        speculators: the speculators-checkpoint hook (``{"location", "call_location", "logged", "merges_user_config",
            ...}``), or ``None``.
        speculator_configs: the 0.34.0+ ``SpeculatorConfig`` table (docs/vllm.md), or ``None`` before.
        lints: :class:`Lints`.
    """

    facts: Mapping[str, Any] = field(default_factory=dict, repr=False)
    known: bool = False
    version: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    spec_config: SpecConfigFacts = field(default_factory=SpecConfigFacts)
    mtp_alias: MtpAlias | None = None
    rewrites: tuple[Mapping[str, Any], ...] = ()
    runner: RunnerChoice = field(default_factory=RunnerChoice)
    v1_oracle: V1Oracle | None = None
    v0_spec_decode: str | None = None
    n_predict_rules: NPredictRules = field(default_factory=NPredictRules)
    spec_flags: tuple[Mapping[str, Any], ...] = ()
    env_vars: tuple[Mapping[str, Any], ...] = ()
    unknown_env_check: str | None = None
    override_location: str | None = None
    override_link: Mapping[str, Any] = field(default_factory=dict)
    draft_chains: tuple[Mapping[str, Any], ...] = ()
    post_init_arch_writes: tuple[Mapping[str, Any], ...] = ()
    mtp_classes: tuple[Mapping[str, Any], ...] = ()
    speculators: Mapping[str, Any] | None = None
    speculator_configs: Mapping[str, Any] | None = None
    lints: Lints = field(default_factory=Lints)

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any] | None) -> VllmRelease:
        """The view of ``facts`` (``report.facts["vllm"]``); ``None`` or a non-mapping: :attr:`known` false, all absent.
        Never raises on partial facts."""
        if not isinstance(facts, Mapping):
            return cls()
        alias, oracle, npr = _map(facts.get("mtp_alias")), _map(facts.get("v1_oracle")), _map(facts.get("n_predict_rules"))
        run, ov, lints = _map(facts.get("runner")), _map(facts.get("override")), _map(facts.get("lints"))
        return cls(
            facts=facts, known=True, version=facts.get("version"), files=_map(facts.get("files")),
            spec_config=SpecConfigFacts.from_facts(facts.get("spec_config")),
            mtp_alias=MtpAlias(_strs(alias.get("members")), alias.get("set"), alias.get("set_location"), alias.get("set_kind"),
                               alias.get("location"), bool(alias.get("logged"))) if alias else None,
            rewrites=_rows(facts.get("rewrites")),
            runner=RunnerChoice(bool(run.get("v2_runner_exists")), run.get("env"), run.get("env_default"), run.get("auto_location"),
                                run.get("default")),
            v1_oracle=V1Oracle(_strs(oracle.get("accepted")), oracle.get("location")) if oracle else None,
            v0_spec_decode=facts.get("v0_spec_decode"),
            n_predict_rules=NPredictRules(npr.get("default"), npr.get("divisible_error"), npr.get("reuse_warning"),
                                          npr.get("reuse_warning_condition"), _strs(npr.get("reuse_warning_skips"))),
            spec_flags=_rows(facts.get("spec_flags")), env_vars=_rows(facts.get("env_vars")),
            unknown_env_check=facts.get("unknown_env_check"),
            override_location=ov.get("location"), override_link=_map(ov.get("link")),
            draft_chains=_rows(facts.get("draft_chains")), post_init_arch_writes=_rows(facts.get("post_init_arch_writes")),
            mtp_classes=_rows(facts.get("mtp_classes")),
            speculators=facts.get("speculators") if isinstance(facts.get("speculators"), Mapping) else None,
            speculator_configs=facts.get("speculator_configs") if isinstance(facts.get("speculator_configs"), Mapping) else None,
            lints=Lints(_rows(lints.get("paren_string_in")), _strs(lints.get("aliases_not_in_literal"))),
        )

    @classmethod
    def from_report(cls, report: Any) -> VllmRelease:
        """The view of a vLLM :class:`~mtp_audit.report.Report`, of its JSON form (``{"facts": {"vllm": {...}}}``, e.g. a
        ``--baseline`` file), or of a launch view (an object with a ``report``); anything else: nothing known."""
        rep = getattr(report, "report", report)
        facts = getattr(rep, "facts", None)
        if facts is None and isinstance(rep, Mapping):
            facts = rep.get("facts")
        return cls.from_facts(_map(facts).get("vllm"))

    @property
    def alias_members(self) -> tuple[str, ...]:
        """The methods the MTP alias rewrites to ``mtp`` (empty without an alias)."""
        return self.mtp_alias.members if self.mtp_alias is not None else ()

    @property
    def env_var_names(self) -> frozenset[str]:
        """The names of :attr:`env_vars`."""
        return frozenset(e["name"] for e in self.env_vars if "name" in e)

    def dispatch(self, runner: str) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """``facts.proposers[runner]`` (``runner``: ``"v1"`` / ``"v2"``): method -> its proposer chain, each row
        ``{"class", "location", "when": "always" | "if <test>"}`` in dispatch order (empty: none read)."""
        return _map(_map(self.facts.get("proposers")).get(runner))

    def proposers_of(self, runner: str, method: Any) -> Sequence[Mapping[str, Any]]:
        """The proposer chain of ``runner`` for ``method`` (:meth:`dispatch`); empty when the runner has none for it."""
        return self.dispatch(runner).get(method) or ()

    def rewrites_of(self, field_name: str, kinds: tuple[str, ...]) -> list[Mapping[str, Any]]:
        """The :attr:`rewrites` of ``field_name`` whose ``kind`` is one of ``kinds``, by line in the source."""
        def line(r: Mapping[str, Any]) -> int:
            loc = str(r.get("location") or "")
            return int(loc.rpartition(":")[2]) if loc.rpartition(":")[2].isdigit() else 0

        return sorted((r for r in self.rewrites if r["field"] == field_name and r["kind"] in kinds), key=line)


def registered(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """A draft chain's or an ``__post_init__`` write's ``registered`` map (architecture -> registry location, a list for
    an f-string target, ``None``: not registered); empty when the registry was not read."""
    return _map(row.get("registered"))
