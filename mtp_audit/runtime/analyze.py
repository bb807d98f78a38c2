"""``analyze_log``: engine logs (files or standard input) -> one :class:`~mtp_audit.report.Report`.

Each file is read once (:func:`mtp_audit.runtime.reader.read_lines`), its facts collected
(:class:`mtp_audit.runtime.extract.LogFacts`) and judged (:func:`mtp_audit.runtime.verdict.decide`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from mtp_audit.errors import InputError
from mtp_audit.report import Finding, Gap, Location, Report
from mtp_audit.report.questions import RUNTIME
from mtp_audit.report.rules import get_rule
from mtp_audit.runtime.extract import LogFacts
from mtp_audit.runtime.reader import ReadStats, read_lines
from mtp_audit.runtime.rules import RULES
from mtp_audit.runtime.verdict import VERDICTS, Outcome, decide, facts_dict, method
from mtp_audit.sources.bounded import charge_read, current_run

ANALYZER = "log"
STDIN = "-"



def read_log(stream: BinaryIO, name: str) -> tuple[LogFacts, ReadStats]:
    """Collect the facts of one log stream.

    Args:
        stream: binary stream, read once in bounded chunks.
        name: how the user named it (for errors).

    Reading stops at what is left of the run's byte budget (``MTP_AUDIT_MAX_READ_BYTES``, see
    :class:`mtp_audit.sources.bounded.RunBudget`); ``stats.stopped_at`` then says where, and the facts are
    those of the bytes read.

    Raises:
        InputError: the stream is binary data (more than 1 % NUL bytes in its first MiB) or cannot be read.
    """
    facts, stats = LogFacts(), ReadStats()
    run = current_run()
    limit = None if run is None else max(0, run.max_read_bytes - run.read_bytes)
    try:
        for ln in read_lines(stream, facts.wants_next, stats, limit):
            if stats.looks_binary:
                raise InputError(name, _binary_problem(stats))
            facts.feed(ln)
    except OSError as exc:
        raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
    finally:
        if run is not None:
            charge_read(min(stats.bytes_read, limit or 0), name)
    if stats.looks_binary:
        raise InputError(name, _binary_problem(stats))
    facts.finish()
    return facts, stats


def _binary_problem(stats: ReadStats) -> str:
    if stats.compressed:
        return f"{stats.compressed}-compressed data, not a text log (decompress it first, e.g. zcat FILE | mtp-audit log -)"
    return "binary data, not a text log"


def _open(path: str) -> BinaryIO:
    if path == STDIN:
        return _stdin()
    p = Path(path)
    if not p.exists():
        raise InputError(path, "no such file")
    if p.is_dir():
        raise InputError(path, "is a folder, not a log file")
    from mtp_audit.sources.bounded import NotRegularFile, open_regular

    try:  # one non-blocking open, checked on the descriptor: a FIFO is refused at once, never waited on
        return os.fdopen(open_regular(p), "rb")
    except NotRegularFile as exc:
        raise InputError(path, f"{exc} (pipe a stream in with '-')") from None
    except OSError as exc:
        raise InputError(path, f"cannot open: {exc.strerror or exc}") from None


def _stdin() -> BinaryIO:
    """Standard input as bytes; a closed standard input (``<&-``: Python then has no ``sys.stdin``) is one line.

    Raises:
        InputError: standard input is closed.
    """
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise InputError(STDIN, "standard input is closed (pipe a log in, or name a file)")
    return stream


def _curve_line(f: LogFacts) -> str | None:
    s = f.series
    if s.intervals < 2 or s.first is None or s.last is None:
        return None
    vals = [b.value for b in s.buckets if b.value is not None]
    what = "mean acceptance length" if s.len_count else "1 + acceptance rate"
    ends = f" {vals[0]:.2f} -> {vals[-1]:.2f}" if vals else ""
    return f"{what} over {s.intervals} lines ({s.first.line}-{s.last.line}): {s.sparkline()}{ends}"


def _file_result(path: str) -> tuple[dict[str, Any], Outcome, LogFacts]:
    stream = _open(path)
    try:
        facts, stats = read_log(stream, path)
    finally:
        if path != STDIN:
            stream.close()
    shown = "<stdin>" if path == STDIN else path
    outcome = decide(facts, shown)
    d = facts_dict(facts)
    d.update(file=shown, verdict=outcome.verdict, sentence=outcome.sentence, causes=outcome.causes,
             deciding_lines=outcome.deciding, bytes=stats.bytes_read, lines=stats.lines, cut_lines=stats.cut_lines,
             stopped_at_bytes=stats.stopped_at, open_end_line=stats.open_end_line)
    return d, outcome, facts


def _side_findings(f: LogFacts, path: str) -> list[Finding]:
    """Findings that do not depend on the verdict: unused MTP block, client lines, several runs."""
    out = []
    blk = f.mtp_block()
    if blk is not None:
        idx, (count, size, line, nextn) = blk
        out.append(get_rule("MTP506").finding(
            f"{_label(f.engine)} loaded block blk.{idx} ({count} tensors, {size / 2**20:.0f} MiB"
            + (", named nextn" if nextn else "") + ") as unused tensors: the MTP/NextN head is not drafting",
            Location(path=path, line=line)))
    if f.client[0]:
        out.append(get_rule("MTP508").finding(
            f"{f.client[0]} benchmark-client line(s) from line {f.client[1]} "
            + ("left out: they are the client's numbers, not the engine's" if f.series.intervals else
               "read as the client's numbers, not the engine's (the engine printed no statistics line)"),
            Location(path=path, line=f.client[1])))
    if f.earlier_runs:
        out.append(_runs_finding(f, path))
    return out


def _label(engine: str | None) -> str:
    from mtp_audit.runtime.verdict import dialect_of

    d = dialect_of(engine)
    return d.label if d is not None else "the engine"


def _runs_finding(f: LogFacts, path: str) -> Finding:
    """MTP509: several runs in one log (engine restarts, or time going back: rotated logs out of order)."""
    n = len(f.earlier_runs) + (1 if f.reported_run is None else 0)  # the reported run is not among the earlier
    back = f.time_back[0] if f.time_back else None
    went = (f"; time goes back at line {back['line']} ({back['from']} -> {back['to']}: a restart, or rotated logs "
            "concatenated out of order)") if back else ""
    if f.spec_off_from is not None:
        went += (f"; from line {f.spec_off_from} the statistics lines have no speculative fields, which "
                 f"{_label(f.engine)} writes whenever speculation is set: a run started without it")
    if f.reported_run is not None:
        r = f.reported_run
        return get_rule("MTP509").finding(
            f"{n} engine runs in this log{went}; the verdict is for the latest in time, lines {r['start']}-{r['end']}",
            Location(path=path, line=r["start"]))
    return get_rule("MTP509").finding(
        f"{n} engine runs in this log{went}; the verdict is for the last, from line {f.runs[-1]}",
        Location(path=path, line=f.runs[-1]))


def reported_file(results: list[Any]) -> tuple[Any, str]:
    """The file whose verdict is reported when several are given, and why: the rule of one log holding several runs
    (MTP509), applied across files, so that ``mtp-audit log A B`` and ``cat A B | mtp-audit log -`` agree. The
    last file given that decided something (a verdict other than could-not-tell; the last file when none did), unless
    an earlier one's reported run is later in time (its last stamp, of the same clock kind: rotated logs given out of
    order)."""
    decided = [r for r in results if r[1].verdict != "could-not-tell"] or results
    main, why = decided[-1], "the last file given that decided"
    last = main[2].reported_stamp
    for r in decided[:-1]:
        st = r[2].reported_stamp
        if st is not None and last is not None and st.kind == last.kind and st.key > last.key:
            main, last, why = r, st, "the latest in time"
    if len(results) == 1:
        why = ""
    return main, why


def _files_finding(main: Any, why: str, results: list[Any]) -> Finding:
    """MTP509 for several files: which file's run is reported, and every other file's own verdict."""
    others = "; ".join(f"{d['file']}: {o.verdict}" for d, o, _ in results if d is not main[0])
    return get_rule("MTP509").finding(
        f"{len(results)} log files; the verdict is for {why}, {main[0]['file']} (the rule of several runs in one log); "
        f"the other files' own verdicts: {others}", Location(path=main[0]["file"]))


def analyze_log(paths: Sequence[str | os.PathLike[str]], *, prediction: dict[str, Any] | None = None,
                metrics: dict[str, Any] | None = None, metrics_unavailable: str | None = None) -> Report:
    """Audit engine logs: did MTP run, what was accepted, and (with ``prediction``) does it match?

    Args:
        paths: log files; ``"-"`` reads standard input. Each file is judged on its own; with several, the reported
            verdict is one file's (:func:`reported_file`: the latest in time, as for several runs in one log) and an
            MTP509 finding names the others' verdicts.
        prediction: what ``mtp-audit launch`` predicted: ``{"engine": ..., "algorithm": ..., "num_speculative_tokens": ...}``
            (see :func:`mtp_audit.runtime.compare.hold_against`), or None.
        metrics: the result of :func:`mtp_audit.runtime.metrics.read_window` to add, or None.
        metrics_unavailable: why a ``--metrics`` endpoint asked for could not be read (the
            :class:`~mtp_audit.errors.Unavailable` problem), or None: the logs' report stands and the metrics window is a
            blocking gap of the runtime question beside it (a definite failure of the logs still outranks it).

    Returns:
        A report whose ``facts["log"]`` holds ``verdict`` (one of :data:`~mtp_audit.runtime.verdict.VERDICTS`),
        ``engine`` (an engine id of :mod:`mtp_audit.engines.registry`: ``sglang``/``vllm``/``llamacpp``/``trtllm``, or None), ``answer`` and ``files``.

    Raises:
        InputError: a path does not exist, is a folder, cannot be read, or holds binary data.
    """
    if not paths:
        raise InputError("FILE", "no log given (name a file, or '-' for standard input)")
    results, findings, gaps = [], [], []
    for raw in paths:
        path = os.fspath(raw)
        d, outcome, facts = _file_result(path)
        results.append((d, outcome, facts))
        findings += _side_findings(facts, d["file"])
        if d["stopped_at_bytes"] is not None:
            gaps.append(Gap(ANALYZER, f"{d['file']}: read only its first {d['stopped_at_bytes']} bytes (the run's read budget, "
                                      "MTP_AUDIT_MAX_READ_BYTES); the verdict is for those bytes, not for the rest of the log",
                            d["file"], question=RUNTIME))
        if d["open_end_line"] is not None and d["stopped_at_bytes"] is None:  # the budget's own gap says it otherwise
            gaps.append(_open_end_gap(d, facts))
        gaps += _unread_gaps(facts, d["file"])
        if outcome.verdict == "could-not-tell":
            lacks = "no statistics line could be read (above), and it lacks" if facts.unread_lines and not \
                facts.series.intervals else "the log lacks"
            # statistics lines were read but do not decide (too few drafted tokens, figures no engine prints): say so
            why = (outcome.sentence if facts.series.intervals and outcome.sentence.startswith("could not tell")
                   else f"could not tell whether MTP ran: {lacks} {outcome.deciding}")
            gaps.append(Gap(ANALYZER, f"{d['file']}: {why}", d["file"], question=RUNTIME))
    main, why = reported_file(results)
    findings = main[1].findings + findings
    if len(results) > 1:
        findings.append(_files_finding(main, why, results))
    top = _top_facts(main, results)
    if prediction is not None:
        from mtp_audit.runtime.compare import hold_against

        findings += hold_against(prediction, main[2], main[1].verdict, main[0]["file"])
    if metrics is not None:
        from mtp_audit.runtime.metrics import metrics_findings

        top["metrics"] = metrics
        findings += metrics_findings(metrics)
    if metrics_unavailable is not None:
        gaps.append(Gap(ANALYZER, f"{metrics_unavailable}: the metrics window was not read; the verdict is the log's "
                                  "alone", question=RUNTIME))
    name = ", ".join(r[0]["file"] for r in results)
    return Report.build(ANALYZER, name, findings=findings, gaps=gaps, facts=top, rule_ids=[r.id for r in RULES])


def _open_end_gap(d: dict[str, Any], facts: Any) -> Gap:
    """The gap of a log that ends inside its last line (no line end after it: a paste or ``$(...)`` capture, or a cut).
    That line's figures are not read. It blocks the runtime question only when no statistics line before it was read
    (then the cut line may be the only one that holds figures); otherwise it is a note: the verdict is that of the
    complete statistics lines, which the last line can only extend by one more interval."""
    n = facts.series.intervals
    where = f"{d['file']}: the log ends inside line {d['open_end_line']} (no line end after it): a paste may have been cut there, so "
    if not n:
        return Gap(ANALYZER, where + "its figures were not read", d["file"], question=RUNTIME)
    return Gap(ANALYZER, where + f"its figures were not read; the verdict is that of the {n} complete statistics "
               f"line{'s' if n != 1 else ''} before it", d["file"], blocking=False, question=RUNTIME)


#: Why a statistics line's figures were not read, in words (:meth:`LogFacts.unread` reasons).
UNREAD_WHY = {
    "cut": "stop{s} inside a figure and no line continues {them} (a terminal or a paste cut {them} there)",
    "bad": "print{s} a figure that is not a number, or one no engine prints (a damaged or edited line)",
}


def _unread_gaps(f: LogFacts, path: str) -> list[Gap]:
    """One gap per reason statistics lines were not read: how many, the first, and how it ends (or reads)."""
    out = []
    for why, (count, first) in f.unread_lines.items():
        line, text = first[0]
        one = count == 1
        words = UNREAD_WHY[why].format(s="s" if one else "", them="it" if one else "them")
        shown = ("..." + text[-60:] if len(text) > 60 else text) if why == "cut" else text[:120]
        out.append(Gap(ANALYZER, f"{path}: {count} statistics line{'' if one else 's'} from line {line} {words}: "
                                 f"'{shown}'; not counted", path, question=RUNTIME))
    return out


def _engine_line(d: dict[str, Any]) -> str | None:
    """``engine: llama.cpp (via Ollama (wraps llama.cpp), line 1), version b6000 (line 3)``, or None when unknown. The
    engine is named by its label (``vLLM``, ``llama.cpp``), for people; ``facts["log"]["engine"]`` holds its id."""
    if d["engine"] is None:
        return None
    out = f"engine: {_label(d['engine'])}"
    if d["wrapper"] is not None:
        out += f" (via {d['wrapper']['value']}, line {d['wrapper']['line']})"
    version = d["version"].get(d["engine"])
    if version is not None:
        out += f", version {version['value']} (line {version['line']})"
    return out


def _value(doc: Mapping[str, Any] | None, key: str, *, raw: bool = False) -> Any:
    """``doc[key]["value"]`` of a log fact (``raw``: ``doc[key]`` itself); ``None`` when either is absent."""
    v = doc.get(key) if isinstance(doc, Mapping) else None
    return v if raw else (v.get("value") if isinstance(v, Mapping) else None)


def _top_facts(main: tuple[dict[str, Any], Outcome, LogFacts], results: list[Any]) -> dict[str, Any]:
    d, outcome, facts = main
    assert outcome.verdict in VERDICTS
    answer = [f"{outcome.verdict}: {outcome.sentence}" + (f" [{d['file']}]" if len(results) > 1 else "")]
    who = _engine_line(d)
    if who:
        answer.append(who)
    printed = d["statistics"]["last_printed"]
    if printed is not None:
        answer.append(f"last statistics line (line {printed['line']}), as printed: {printed['text']}")
    curve = _curve_line(facts)
    if curve:
        answer.append(curve)
    elif outcome.deciding:
        answer.append(f"lines that would decide: {outcome.deciding}")
    if d["command"] is not None:
        answer.append(d["command"]["text"])
        answer += d["command"]["check"]
    return {"verdict": outcome.verdict, "engine": d["engine"], "answer": answer,
            "summary": {"verdict": outcome.verdict, "engine": d["engine"],
                        "version": _value(d["version"], d["engine"] or ""),
                        "algorithm": method(facts),
                        "draft": _value(d["config"], "draft_model") or _value(d["command"], "draft", raw=True),
                        "num_speculative_tokens": _value(d["config"], "num_speculative_tokens")
                        or _value(d["command"], "num_speculative_tokens", raw=True),
                        "mean_acceptance_length": d["statistics"]["mean_acceptance_length"],
                        "acceptance_rate": d["statistics"]["acceptance_rate"],
                        "intervals": d["statistics"]["intervals"]},
            "files": [r[0] for r in results]}


def analyze_metrics_only(metrics: dict[str, Any]) -> Report:
    """A report from a ``--metrics`` window alone (no log file).

    The verdict: ``ran-but-accepted-nothing`` when tokens were drafted and under 3 % accepted (``could-not-tell``
    below the minimum sample, :func:`mtp_audit.runtime.metrics.window_too_few`),
    ``ran-and-helped`` when accepted, ``could-not-tell`` when nothing was drafted in the window or no
    speculative metric was exported.
    """
    from mtp_audit.runtime.metrics import metrics_findings, window_kind, window_too_few

    rate = metrics.get("acceptance_rate")
    kind = window_kind(metrics.get("engine"))
    few = window_too_few(metrics) if kind == "counters" and metrics.get("drafted") and rate is not None and rate < 0.03 else None
    if few is not None:
        verdict = "could-not-tell"
    elif kind == "counters" and metrics.get("drafted"):
        verdict = "ran-but-accepted-nothing" if rate is not None and rate < 0.03 else "ran-and-helped"
    elif kind == "gauges" and metrics.get("accept_length"):
        verdict = "ran-but-accepted-nothing" if metrics["accept_length"] < 1.05 else "ran-and-helped"
    else:
        verdict = "could-not-tell"
    findings = metrics_findings(metrics)
    gaps = [] if verdict != "could-not-tell" else [
        Gap(ANALYZER, f"{metrics['url']}: {few}; send more requests during the window or read the log", question=RUNTIME)
        if few is not None else
        Gap(ANALYZER, f"{metrics['url']}: no speculative token was drafted in the {metrics['seconds']:g} s window "
                      "(no traffic, or speculation off); send requests during the window or read the log", question=RUNTIME)]
    answer = [f"{verdict}: " + (findings[0].message if findings else "no speculative-decoding metric")]
    facts = {"verdict": verdict, "engine": metrics.get("engine"), "answer": answer, "metrics": metrics,
             "summary": {"verdict": verdict, "engine": metrics.get("engine"),
                         "acceptance_rate": rate, "mean_acceptance_length": metrics.get("mean_acceptance_length")},
             "files": []}
    return Report.build(ANALYZER, metrics["url"], findings=findings, gaps=gaps, facts=facts, rule_ids=[r.id for r in RULES])
