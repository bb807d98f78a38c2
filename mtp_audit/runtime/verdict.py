"""The verdict of a log: one stable word, its likely causes ranked from the facts, and the findings.

Verdict words (``facts["log"]["verdict"]``): ``ran-and-helped``, ``ran-but-accepted-nothing``,
``ran-then-stopped``, ``never-ran``, ``could-not-tell``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtp_audit.engines.base import LogDialect
from mtp_audit.report import Evidence, Finding, Location
from mtp_audit.report.rules import get_rule
from mtp_audit.runtime.command import dialects
from mtp_audit.runtime.extract import Crash, LogFacts, strip_prefixes

VERDICTS = ("ran-and-helped", "ran-but-accepted-nothing", "ran-then-stopped", "never-ran", "could-not-tell")

#: Below this overall acceptance rate (fraction of drafted tokens) MTP "accepted nothing".
NOTHING_RATE = 0.03
#: Below this mean acceptance length (tokens per step, bonus token included) MTP "accepted nothing".
NOTHING_LEN = 1.05
#: Below this mean acceptance length MTP helps little (MTP504).
LOW_LEN = 1.5
#: A fall of the last third below this share of the first third is a decay (MTP503).
DECAY = 0.75

#: A low but healthy acceptance of the first draft token of a verification step: 20 % (well above
#: :data:`NOTHING_RATE`; the real MTP reports in fixtures/logs accept far more).
LOW_HEALTHY_FIRST = 0.2
#: The fewest verification steps whose "0 accepted" is evidence of rejected drafts (MTP500). A step accepts nothing
#: exactly when it rejects its first draft token, so at :data:`LOW_HEALTHY_FIRST` all of S steps accept nothing with
#: probability (1 - 0.2) ** S: 0.8 ** 20 = 0.0115, 0.8 ** 21 = 0.0092, so 21 steps are the first below 1 %.
MIN_STEPS = 21
#: Draft tokens per step assumed when the log does not configure it (DeepSeek-style MTP runs 1-3 deep; a deeper
#: draft needs proportionally more drafted tokens for the same number of steps).
DEFAULT_DEPTH = 3


def min_drafted(depth: int | None = None, steps: int | None = None) -> int:
    """The fewest drafted tokens (a count) whose "0 accepted" is evidence (:data:`MIN_STEPS` steps of ``depth`` draft
    tokens; :data:`DEFAULT_DEPTH` when ``depth`` is None). With ``steps`` known (vLLM's ``num_drafts`` counter) the
    steps themselves are compared: 0 when there are enough, else :data:`MIN_STEPS` steps' worth of tokens."""
    if steps is not None:
        return 0 if steps >= MIN_STEPS else MIN_STEPS * (depth or DEFAULT_DEPTH)
    return MIN_STEPS * (depth or DEFAULT_DEPTH)


#: The lines that would decide when no engine was recognised (each engine's own are its dialect's ``deciding``).
NO_ENGINE_DECIDING = ("any line of {engines} (none was recognised): the server's own start-up configuration and the "
                      "lines it prints while serving")


def deciding_lines(engine: str | None) -> str:
    """The lines that would decide for ``engine`` (its dialect's), or :data:`NO_ENGINE_DECIDING` naming every engine."""
    d = dialect_of(engine)
    if d is not None and d.deciding:
        return d.deciding
    labels = [x.label for x in dialects()]
    return NO_ENGINE_DECIDING.format(engines=", ".join(labels[:-1]) + " or " + labels[-1] if len(labels) > 1 else "".join(labels))


def dialect_of(engine: str | None) -> LogDialect | None:
    """The log dialect of ``engine`` (an engine id of the log facts), or None."""
    return next((d for d in dialects() if d.engine == engine), None)


@dataclass
class Outcome:
    """The verdict and what backs it.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        sentence: the answer in words.
        causes: likely causes, most likely first.
        findings: findings of this module's rules.
        deciding: for ``could-not-tell``, the lines that would decide.
    """

    verdict: str
    sentence: str
    causes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    deciding: str | None = None


def _loc(path: str, line: int | None) -> Location:
    return Location(path=path, line=line)


def _fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def decide(f: LogFacts, path: str) -> Outcome:
    """Decide the verdict for the last run of ``f`` (facts of the file shown as ``path``)."""
    s = f.series
    crash = _last_crash(f)
    if s.intervals:
        if crash is not None and crash.line > (s.last.line if s.last else 0):
            return _stopped_after(f, crash, path)
        if f.threshold_off:
            return Outcome("ran-then-stopped", f"{subject(f)} ran, then TensorRT-LLM turned speculation off (line {f.threshold_off})",
                           findings=[get_rule("MTP502").finding("speculation was turned off by acceptance_rate_threshold",
                                                                 _loc(path, f.threshold_off), severity=None)])
        odd = _implausible(f)
        if odd is not None:
            return Outcome("could-not-tell", f"could not tell whether {subject(f)} helped: {odd}",
                           deciding=deciding_lines(f.engine))
        if _accepted_nothing(f):
            few = _too_few(f)
            if few is not None:
                return Outcome("could-not-tell", f"could not tell whether {subject(f)} helped: {few}", deciding=deciding_lines(f.engine))
            return _nothing(f, path)
        stopped = _stopped_accepting(f, path)
        if stopped is not None:
            return stopped
        return _helped(f, path)
    if f.draft_failure is not None:
        return _draft_failed(f, path)
    if crash is not None and crash.speculative:
        if crash.during_init:
            return Outcome("never-ran", f"{subject(f)} never ran: the engine crashed while building the draft"
                           f"{_draft_words(f)} ({_crash_words(crash)})",
                           causes=["the draft worker failed to start"], findings=[_crash_finding(crash, path)])
        return _stopped_after(f, crash, path)
    if crash is None and f.client_figures:
        return _by_client(f, path)
    return _no_stats(f, crash, path)


#: Consecutive statistics lines at the end of a run that accepted nothing, at least, for "accepting nothing since".
TRAILING_ZERO = 3


def _stopped_accepting(f: LogFacts, path: str) -> Outcome | None:
    """``ran-but-accepted-nothing`` when the run's last :data:`TRAILING_ZERO` or more statistics lines accepted nothing
    after earlier ones accepted drafts: the present state outranks the whole-log average."""
    s = f.series
    if s.tail_zero < TRAILING_ZERO or s.tail_zero >= s.intervals:
        return None
    when = f" / {s.tail_zero_time}" if s.tail_zero_time else ""
    since = f"accepting nothing since line {s.tail_zero_first}{when}"
    out = Outcome("ran-but-accepted-nothing", f"{subject(f)} ran and accepted drafts at first, but has been {since}: "
                  f"the last {s.tail_zero} of {s.intervals} statistics lines accepted nothing (whole log: {_figures(f)})",
                  causes=["speculation stopped accepting while serving (a draft/KV state problem, a slot or request "
                          "pattern; compare the lines around the first zero)"] + _nothing_causes(f))
    out.findings.append(get_rule("MTP500").finding(
        f"{since}: the last {s.tail_zero} of {s.intervals} statistics lines accepted no draft token",
        _loc(path, s.tail_zero_first), detail="; ".join(out.causes)))
    return out


def _draft_words(f: LogFacts) -> str:
    draft = f.config.get("draft_model")
    name = draft.value if draft is not None else (f.command.value.draft if f.command is not None else None)
    cls = f.draft.get("class")
    parts = [f" {name}" if name else "", f" ({cls.value})" if cls is not None else ""]
    return "".join(parts)


def _draft_failed(f: LogFacts, path: str) -> Outcome:
    """``never-ran``: the draft model failed to load (llama.cpp ``failed to load draft model``), naming it, its
    architecture and the cause."""
    d = f.draft_failure
    assert d is not None
    arch = f", architecture '{d['architecture']}'" if d["architecture"] else ""
    cause = f"{d['cause']} (line {d['cause_line']})" if d["cause_line"] else d["cause"]
    reason = f"the draft {d['draft']} failed to load (line {d['line']}){arch}: {cause}"
    return Outcome("never-ran", f"{subject(f)} never ran: {reason}", causes=[reason],
                   findings=[get_rule("MTP501").finding(f"speculative decoding did not run: {reason}", _loc(path, d["line"]))])


def _by_client(f: LogFacts, path: str) -> Outcome:
    """No engine statistics, but a benchmark client's summary: the verdict from the client's figure, labelled so."""
    fig = f.client_figures[-1]
    same = [x["value"] for x in f.client_figures if (x["client"], x["what"]) == (fig["client"], fig["what"])]
    value = sum(same) / len(same)
    low = value < (NOTHING_LEN if fig["what"] == "accept length" else NOTHING_RATE)
    shown = f"{fig['what']} {value * 100:.1f} %" if fig["what"] == "rate" else f"{fig['what']} {value:.2f}"
    lines = f"line {fig['line']}" if len(same) == 1 else f"mean of {len(same)} lines, the last at line {fig['line']}"
    words = (f"by the benchmark client's own summary ({fig['client']}, {lines}: {shown}); the engine's "
             "statistics lines are not in the log")
    if low:
        return Outcome("ran-but-accepted-nothing", f"{subject(f)} ran but accepted almost nothing, {words}",
                       findings=[get_rule("MTP500").finding(f"the client reports {shown}: the draft tokens are rejected "
                                                            "(the client's figure, not the engine's)", _loc(path, fig["line"]))])
    return Outcome("ran-and-helped", f"{subject(f)} ran and helped, {words}")


def subject(f: LogFacts) -> str:
    """What the verdict is about, in the log's own terms: ``MTP`` when the configured method drafts with MTP heads (its
    name says mtp/nextn, or the engine's dialect lists it: SGLang's EAGLE, which its NEXTN alias becomes),
    ``speculative decoding (ngram)`` for another method, and
    ``speculative decoding (method not in the log)`` when the log does not say."""
    shown = method(f)
    value = shown.strip().lower() if shown else ""
    if not value:
        return "speculative decoding (method not in the log)"
    d = dialect_of(f.engine)
    if "mtp" in value or "nextn" in value or (d is not None and value in d.mtp_methods):
        return "MTP"
    return f"speculative decoding ({shown})"


def method(f: LogFacts) -> str | None:
    """The speculative method: as the engine printed it after its rewrites, else as the launch command in the log asks
    for it after the engine's aliases (``NEXTN`` -> ``EAGLE``, ``deepseek_mtp`` -> ``mtp``), else None."""
    alg = f.config.get("algorithm")
    if alg is not None and alg.value not in (None, "None", "NONE"):
        return str(alg.value)
    if f.command is not None and f.command.value.method:
        return str(f.command.value.method)
    return None


def _last_crash(f: LogFacts) -> Crash | None:
    return f.crashes[-1] if f.crashes else None


def _implausible(f: LogFacts) -> str | None:
    """Why the statistics cannot be believed, or None: figures no engine prints (a damaged, edited or merged
    paste), or token counts on every line with nothing drafted (the drafter produced no token to judge)."""
    s = f.series
    bad = s.impossible
    if bad is not None:
        what = (f"{bad.accepted} accepted of {bad.drafted} drafted tokens" if bad.accepted is not None and bad.drafted is not None
                else f"a mean acceptance length of {bad.mean_len:.2f} (below 1: each step yields the target's own token)"
                if bad.mean_len is not None and bad.mean_len < 1.0
                else f"an acceptance rate of {bad.rate * 100:.1f} %" if bad.rate is not None else f"{bad.accepted} accepted tokens")
        return f"line {bad.line} prints {what}, which no engine prints (a damaged or edited log)"
    high, most = s.len_high, _draft_length(f)
    if high is not None and high.mean_len is not None and most is not None and high.mean_len > 1 + most[0]:
        return (f"line {high.line} prints a mean acceptance length of {high.mean_len:.2f}, above 1 + {most[0]} draft tokens "
                f"per step (line {most[1]}), which no engine prints (a damaged or edited log)")
    if s.counted and s.counted == s.intervals and s.drafted == 0:
        return f"{s.intervals} statistics line(s) count 0 drafted tokens: nothing was drafted to accept"
    return None


def _draft_length(f: LogFacts) -> tuple[int, int] | None:
    """The most draft tokens one verification step can accept, as the log configures it, and its line: vLLM's
    ``num_speculative_tokens`` (mean acceptance length ``1 + accepted / drafts``, ``vllm/v1/spec_decode/metrics.py`` @
    v0.33.0), SGLang's ``speculative_num_steps`` and ``speculative_num_draft_tokens - 1`` (an accepted path is at most
    that deep), the launch command's; the largest of those printed (None: the log says none)."""
    found: list[tuple[int, int]] = []
    # only what the reported run printed: a restart may change it
    start = f.reported_run["start"] if f.reported_run is not None else f.runs[-1] if f.runs else 0
    for key, less in (("num_speculative_tokens", 0), ("num_steps", 0), ("num_draft_tokens", 1)):
        fact = f.config.get(key)
        if fact is not None and isinstance(fact.value, int) and fact.value - less > 0 and fact.line >= start:
            found.append((fact.value - less, fact.line))
    k = f.command.value.num_speculative_tokens if f.command is not None else None
    if isinstance(k, int) and k > 0 and f.command is not None and f.command.line >= start:
        found.append((k, f.command.line))
    return max(found) if found else None


def _too_few(f: LogFacts) -> str | None:
    """Why "accepted nothing" is no evidence, or None: every statistics line counts its tokens and together they
    drafted fewer than :func:`min_drafted` (of the draft depth the log configures), so 0 accepted is plausible at a
    low healthy acceptance."""
    s = f.series
    if not s.counted or s.counted != s.intervals:
        return None
    most = _draft_length(f)
    need = min_drafted(most[0] if most else None)
    if s.drafted >= need:
        return None
    depth = f"{most[0]} per step (line {most[1]})" if most else f"{DEFAULT_DEPTH} per step assumed"
    return (f"too few drafted tokens: {s.drafted} ({s.accepted} accepted); 0 accepted is evidence from {need} on "
            f"({MIN_STEPS} steps of {depth}: at a low healthy 20 % first-token acceptance all {MIN_STEPS} reject with "
            "under 1 % chance)")


def _accepted_nothing(f: LogFacts) -> bool:
    s = f.series
    rate, mean_len = s.rate, s.mean_len
    if rate is not None and rate < NOTHING_RATE:
        return True
    return mean_len is not None and mean_len < NOTHING_LEN and (rate is None or rate < 0.1)


def _figures(f: LogFacts) -> str:
    s = f.series
    parts = []
    if s.mean_len is not None:
        parts.append(f"mean acceptance length {_fmt(s.mean_len)}")
    if s.rate is not None:
        parts.append(f"acceptance {s.rate * 100:.1f} %" + (f" ({s.accepted} of {s.drafted} drafted tokens)" if s.drafted else ""))
    parts.append(f"{s.intervals} statistics line{'s' if s.intervals != 1 else ''}")
    return ", ".join(parts)


def _helped(f: LogFacts, path: str) -> Outcome:
    s = f.series
    out = Outcome("ran-and-helped", f"{subject(f)} ran and helped: {_figures(f)}")
    trend = s.thirds()
    if trend is not None:
        first, last = trend
        out.sentence += f"; trend {first:.2f} -> {last:.2f}"
        if last < first * DECAY or (first > 1.0 and (last - 1.0) < (first - 1.0) * DECAY):
            out.findings.append(get_rule("MTP503").finding(
                f"acceptance falls from {first:.2f} in the first third of the log to {last:.2f} in the last third",
                _loc(path, s.last.line if s.last else None)))
    if s.mean_len is not None and s.mean_len < LOW_LEN:
        out.findings.append(get_rule("MTP504").finding(
            f"mean acceptance length {s.mean_len:.2f} over {s.intervals} statistics lines: MTP gains little",
            _loc(path, s.first.line if s.first else None)))
    if 0 < s.zero < s.intervals:
        out.findings.append(get_rule("MTP505").finding(
            f"{s.zero} of {s.intervals} statistics lines accepted nothing while the others accepted drafts",
            _loc(path, s.first.line if s.first else None)))
    out.findings += _source_zero(f, path)
    return out


def _source_zero(f: LogFacts, path: str) -> list[Finding]:
    """Sources (slots, processes) that accepted nothing while another accepted (llama.cpp#27572, buun #110)."""
    dead = [k for k, (a, d, _) in f.series.sources.items() if d >= 8 and a == 0]
    alive = [k for k, (a, d, _) in f.series.sources.items() if a > 0]
    if dead and alive:
        return [get_rule("MTP505").finding(f"{', '.join(sorted(dead)[:4])} accepted 0 drafted tokens while "
                                           f"{', '.join(sorted(alive)[:4])} accepted drafts", _loc(path, f.series.first.line if f.series.first else None))]
    return []


def _nothing(f: LogFacts, path: str) -> Outcome:
    s = f.series
    causes = _nothing_causes(f)
    out = Outcome("ran-but-accepted-nothing", f"{subject(f)} ran but accepted almost nothing: {_figures(f)}", causes=causes)
    ev = [Evidence("first statistics line", str(s.first.line if s.first else "-"), _loc(path, s.first.line if s.first else None))]
    out.findings.append(get_rule("MTP500").finding(
        f"{_figures(f)}: the draft tokens are rejected" + (f"; likely: {causes[0]}" if causes else ""),
        _loc(path, s.first.line if s.first else None), evidence=ev, detail="; ".join(causes)))
    return out


def _nothing_causes(f: LogFacts) -> list[str]:
    """Likely causes of zero acceptance, ranked from what the log shows."""
    causes: list[str] = []
    if f.draft.get("missing"):
        causes.append(f"draft weights missing (line {f.draft['missing'].line})")
    q = f.config.get("draft_quantization") or f.config.get("quantization")
    if q is not None and q.value not in (None, "None"):
        causes.append(f"the model runs quantized ({q.value}, line {q.line}): an MTP head loaded with the target's "
                      "quantization against its checkpoint's exclude list computes garbage drafts (check with mtp-audit checkpoint)")
    d = dialect_of(f.engine)
    for prefix, spared, cause in d.source_causes if d is not None else ():
        if any(k.startswith(prefix) and k != spared for k in f.series.sources):
            causes.append(cause)
    causes += _known_bugs(f)
    d = dialect_of(f.engine)
    causes += list(d.zero_causes) if d is not None else []
    causes.append("draft head weights missing, randomly initialised or not matching the target (check with mtp-audit checkpoint)")
    causes.append("a known engine bug of this version (search the tracker for the version and the draft class)")
    return causes


def _known_bugs(f: LogFacts) -> list[str]:
    """Public reports of zero acceptance (the engine dialect's ``known_zero``) whose printed configuration matches."""
    out: list[str] = []
    d = dialect_of(f.engine)
    seen: set[str] = set()
    for key, test, cause in d.known_zero if d is not None else ():
        fact = f.config.get(key)
        if fact is not None and test(fact.value) and cause not in seen:
            seen.add(cause)
            out.append(f"{cause} (line {fact.line})")
    return out


def _crash_words(crash: Crash) -> str:
    frame = crash.frames[-1] if crash.frames else None
    exc = crash.exception or ("traceback cut before its exception line" if crash.cut else "no exception line")
    where = f" in {frame[2]} ({frame[0].rsplit('/', 1)[-1]}:{frame[1]})" if frame else ""
    msg = f": {crash.message}" if crash.message else ""
    return f"{exc}{msg}{where}, line {crash.line}"


def _crash_finding(crash: Crash, path: str) -> Finding:
    ev = tuple(Evidence("frame", f"{fr[0]}:{fr[1]} in {fr[2]}") for fr in crash.frames[-3:])
    return get_rule("MTP507").finding(f"engine crash: {_crash_words(crash)}", _loc(path, crash.line), evidence=ev,
                                      detail="the traceback was cut before its exception line; paste the lines after it"
                                      if crash.cut else "")


def _stopped_after(f: LogFacts, crash: Crash, path: str) -> Outcome:
    out = Outcome("ran-then-stopped", f"{subject(f)} ran, then the engine crashed: {_crash_words(crash)}",
                  causes=["a crash in the speculative path" if crash.speculative else "a crash after speculative decoding ran"])
    if f.series.intervals:
        out.sentence += f" (before it: {_figures(f)})"
    out.findings += [get_rule("MTP502").finding(f"speculative decoding stopped: {_crash_words(crash)}", _loc(path, crash.line)),
                     _crash_finding(crash, path)]
    return out


def _no_stats(f: LogFacts, crash: Crash | None, path: str) -> Outcome:
    """No speculative statistics: never ran (with the line that says so) or could not tell. A model-load failure whose
    model the log does not name (:attr:`Crash.model_unnamed`: the draft's failure only turns speculation off) is no
    MTP507 error: the line after it decides, and the sentence says it is missing."""
    extra = [_crash_finding(crash, path)] if crash is not None and not crash.model_unnamed else []
    off = _off_reason(f)
    if off is not None:
        reason, line = off
        return Outcome("never-ran", f"{subject(f)} never ran: {reason}", causes=[reason],
                       findings=[get_rule("MTP501").finding(f"speculative decoding did not run: {reason}", _loc(path, line))] + extra)
    engine = f.engine
    said = _config_words(f)
    sentence = f"could not tell whether {subject(f)} ran" + (f" ({said})" if said else "")
    if crash is not None:
        sentence += (f": a model failed to load ({_crash_words(crash)}), and the log does not say whether it was the "
                     "target or the draft" if crash.model_unnamed else
                     f": the engine crashed before any speculative statistics line ({_crash_words(crash)})")
    return Outcome("could-not-tell", sentence, findings=extra, deciding=deciding_lines(engine))


def _off_reason(f: LogFacts) -> tuple[str, int] | None:
    alg = f.config.get("algorithm")
    if alg is not None and alg.value in (None, "None", "NONE"):
        d = dialect_of(f.engine)
        key = d.off_config if d is not None and d.off_config else "speculative_algorithm=None"
        return f"the engine printed {key} (line {alg.line})", alg.line
    n, first = f.decode_without_spec
    d = dialect_of(f.engine)
    if n and not f.series.intervals:
        words = d.no_speculation_words if d is not None and d.no_speculation_words else \
            "{n} statistics line{s} without speculative fields from line {first}"
        return words.format(n=n, s="s" if n != 1 else "", first=first), first
    blk = f.mtp_block()
    if blk is not None:
        idx, (count, size, line, _) = blk
        advice = d.unused_advice if d is not None and d.unused_advice else "the MTP/NextN head was loaded but no draft ran"
        return (f"{d.label if d is not None else 'the engine'} left block blk.{idx} ({count} tensors, "
                f"{size / 2**20:.0f} MiB) unused from line {line}: {advice}", line)
    return None


def _config_words(f: LogFacts) -> str:
    c = f.config
    parts = []
    if "algorithm" in c:
        parts.append(f"configured: {c['algorithm'].value}")
    for key in ("num_speculative_tokens", "num_draft_tokens"):
        if key in c:
            parts.append(f"{key} {c[key].value}")
    if "draft_model" in c:
        parts.append(f"draft {c['draft_model'].value}")
    if parts:
        return ", ".join(parts) + f" (line {next(iter(c.values())).line}), but no speculative statistics line"
    cmd = f.command
    if cmd is not None and cmd.value.method:
        k = f", k {cmd.value.num_speculative_tokens}" if cmd.value.num_speculative_tokens is not None else ""
        draft = f", draft {cmd.value.draft}" if cmd.value.draft else ""
        return (f"the launch command asks for {cmd.value.method}{k}{draft} (line {cmd.line}), but no speculative "
                "statistics line")
    return ""


def facts_dict(f: LogFacts) -> dict[str, Any]:
    """The JSON facts of a log (``facts["log"]`` minus verdict and answer)."""
    s = f.series
    return {
        "engine": f.engine,
        "engine_votes": dict(f.votes),
        "version": {k: v.to_dict() for k, v in f.version.items()},
        "config": {k: v.to_dict() for k, v in f.config.items()},
        "draft": {k: v.to_dict() for k, v in f.draft.items()},
        "statistics": {
            "intervals": s.intervals, "accepted_tokens": s.accepted, "drafted_tokens": s.drafted,
            "acceptance_rate": None if s.rate is None else round(s.rate, 5),
            "mean_acceptance_length": None if s.mean_len is None else round(s.mean_len, 4),
            "zero_intervals": s.zero, "first_line": s.first.line if s.first else None,
            "last_line": s.last.line if s.last else None, "per_position_last": list(s.per_pos_last),
            "curve": [{"first_line": b.first_line, "last_line": b.last_line, "intervals": b.count,
                       "value": None if b.value is None else round(b.value, 4), "zero": b.zero} for b in s.buckets],
            "sources": {k: {"accepted": v[0], "drafted": v[1], "intervals": v[2]} for k, v in s.sources.items()},
            "last_printed": None if s.last_printed is None else {
                "line": s.last_printed[0], "text": strip_prefixes(s.last_printed[1]).strip()[:300]},
        },
        "runs": {"starts": f.runs[:16], "earlier": f.earlier_runs[:16], "time_back": f.time_back,
                 "reported": f.reported_run},
        "decode_without_speculation": {"lines": f.decode_without_spec[0], "first_line": f.decode_without_spec[1] or None},
        "unused_tensors": {f"blk.{k}": {"tensors": v[0], "bytes": v[1], "first_line": v[2], "nextn_named": v[3]}
                           for k, v in sorted(f.unused.items())[:16]},
        "crashes": [c.to_dict() for c in f.crashes],
        "benchmark_client_lines": {"lines": f.client[0], "first_line": f.client[1] or None},
        "draft_types": f.draft_types,
        "command": _command_dict(f),
        "wrapper": None if f.wrapper is None else f.wrapper.to_dict(),
        "draft_failure": f.draft_failure,
        "client_figures": f.client_figures,
        "accepting_nothing_since": None if f.series.tail_zero < TRAILING_ZERO else {
            "line": f.series.tail_zero_first, "time": f.series.tail_zero_time, "intervals": f.series.tail_zero},
    }


def _command_dict(f: LogFacts) -> dict[str, Any] | None:
    """The launch command in the log (``facts.log.files[i].command``), with what the rest of the log says about it."""
    if f.command is None:
        return None
    from dataclasses import asdict

    from mtp_audit.runtime.command import check, describe

    cmd, line = f.command.value, f.command.line
    printed = {k: (v.value, v.line) for k, v in f.config.items()}
    d = asdict(cmd)
    d["notes"] = list(cmd.notes)
    d.update(line=line, text=describe(cmd, line), check=check(cmd, line, printed, f.series.intervals > 0))
    return d
