"""Hold a launch prediction against what the log shows (``mtp-audit launch ... --log FILE``).

A prediction is a small dict built by the launch combiner from its own facts: ``engine`` (an engine id of
:mod:`mtp_audit.engines.registry`, ``sglang``/``vllm``/``trtllm``; an alias such as ``tensorrt-llm`` is read as its id),
``algorithm`` (the speculative algorithm that will run, after the engine's rewrites, e.g. ``EAGLE`` for SGLang's
NEXTN, ``mtp`` for vLLM; None when no speculation is predicted; absent when the launch audit could not tell what
runs), optionally ``num_speculative_tokens``.
"""

from __future__ import annotations

from typing import Any

from mtp_audit.engines.registry import canonical_id, engine_label
from mtp_audit.report import Evidence, Finding, Location
from mtp_audit.report.rules import get_rule
from mtp_audit.runtime.extract import LogFacts

#: Names the engines print for the same algorithm (SGLang rewrites NEXTN to EAGLE: server_args.py
#: ``_resolve_speculative_algorithm_alias`` @ 0.5.23).
ALIASES = {"NEXTN": "EAGLE", "DEEPSEEK_MTP": "MTP", "QWEN3_NEXT_MTP": "MTP"}


def _norm(value: Any) -> str | None:
    if value in (None, "None", "none", ""):
        return None
    text = str(value).upper()
    return ALIASES.get(text, text)


def hold_against(prediction: dict[str, Any], facts: LogFacts, verdict: str, path: str) -> list[Finding]:
    """MTP530 (info) when the log agrees with ``prediction``, one MTP531 (warning) per disagreement. A prediction
    without ``algorithm`` (the launch audit could not tell what runs) is held against the engine and the draft tokens
    only: whatever the log shows of speculation contradicts nothing."""
    disagree: list[tuple[str, str, int | None]] = []
    want_engine = canonical_id(prediction["engine"]) if prediction.get("engine") else None
    if want_engine and facts.engine and want_engine != facts.engine:
        disagree.append((f"predicted engine {engine_label(want_engine)}, the log is {engine_label(facts.engine)}'s", "engine",
                         facts.first_seen.get(facts.engine)))
    told = "algorithm" in prediction
    want = _norm(prediction.get("algorithm"))
    got = facts.config.get("algorithm")
    if told:
        disagree += _algorithm_disagreements(want, facts, verdict)
    n = prediction.get("num_speculative_tokens")
    got_n = facts.config.get("num_speculative_tokens") or facts.config.get("num_steps")
    if n is not None and got_n is not None and str(got_n.value) != str(n):
        disagree.append((f"predicted {n} draft token(s), the engine printed {got_n.value} (line {got_n.line})", "tokens", got_n.line))
    if disagree:
        return [get_rule("MTP531").finding(msg, Location(path=path, line=line), evidence=(Evidence("field", field),))
                for msg, field, line in disagree]
    on = engine_label(want_engine) if want_engine else "the engine"
    if not told:
        return [get_rule("MTP530").finding(f"the launch audit could not tell what runs on {on}; the log contradicts "
                                           "nothing it predicted", Location(path=path),
                                           evidence=(Evidence("seen", "no contradiction"),))]
    seen = "speculative statistics" if facts.series.intervals else ("its configuration" if got else "no contradiction")
    return [get_rule("MTP530").finding(f"predicted {want or 'no speculation'} on {on}; the log shows the same ({seen})",
                                       Location(path=path), evidence=(Evidence("seen", seen),))]


def _algorithm_disagreements(want: str | None, facts: LogFacts, verdict: str) -> list[tuple[str, str, int | None]]:
    """``(message, field, line)`` of each way the log contradicts the predicted algorithm ``want`` (None: no
    speculation): the algorithm the engine printed, decoding without speculation, statistics of an unpredicted one."""
    out: list[tuple[str, str, int | None]] = []
    got = facts.config.get("algorithm")
    if got is not None and _norm(got.value) != want:
        out.append((f"predicted speculative algorithm {want or 'none'}, the engine printed {got.value} (line {got.line})",
                    "algorithm", got.line))
    if want and verdict == "never-ran":
        out.append((f"predicted {want}, but the log shows decoding without speculation", "speculation", None))
    if want is None and facts.series.intervals:
        out.append(("predicted no speculative decoding, but the log has speculative statistics", "speculation",
                    facts.series.first.line if facts.series.first else None))
    return out
