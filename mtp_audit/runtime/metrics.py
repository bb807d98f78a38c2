"""``--metrics URL``: read a running engine's Prometheus endpoint twice and report the acceptance between.

The exposition text is parsed by ``prometheus_client.parser.text_string_to_metric_families`` (the
optional ``metrics`` extra; never parsed by hand). Which samples each engine exports, and where its source names them,
is the engine's: its log dialect's ``metrics`` (:class:`mtp_audit.engines.base.LogMetrics`, one
:class:`~mtp_audit.engines.base.MetricSample` with its ``file:line @ release`` each), handed on by
:func:`mtp_audit.engines.registry.log_dialects`. Two kinds of window: ``counters`` (accepted and drafted tokens and
verification steps since the server started; the window is their increase) and ``gauges`` (the last interval's
acceptance length and rate at the second read, verification steps counted between the reads). An engine whose dialect
has no ``metrics`` is not read.

Counters are compared series by series (each label set on its own): a counter lower at the second read than at
the first means its engine restarted between the reads; the window then reports that series from the restart
(its second value), says that a reset happened (``reset``) and that the window is shorter than the interval.
A value that is not a finite number (``NaN``, ``+Inf``), or a negative counter, makes the figures it feeds "could
not tell" (``unknown``: the reasons), never a pass.

Bounds: the shared HTTP policy (:mod:`mtp_audit.sources.netpolicy`): one URL, ``http``/``https`` only, the
host must be a loopback address or the host the user named in ``allow_host``; no redirect is followed; each read
ends within ``timeout`` seconds in all (not per socket read) and within the run's network time
(``MTP_AUDIT_NETWORK_SECONDS``; the pause between the reads does not count); a byte cap; every protocol error one
line.
"""

from __future__ import annotations

import ipaddress
import math
import time
from typing import Any

from mtp_audit.engines.base import LogMetrics
from mtp_audit.errors import InputError, Unavailable
from mtp_audit.report import Evidence, Finding, Location
from mtp_audit.report.rules import get_rule
from mtp_audit.sources import netpolicy

#: Largest exposition text read (bytes).
MAX_BYTES = 8 * 1024 * 1024

def _dialects() -> tuple[tuple[str, LogMetrics], ...]:
    """``(engine id, its metrics)`` of every engine that exports any: the counter engines first, then the gauge
    engines, each in registry order (the first whose samples the endpoint shows names the window)."""
    from mtp_audit.engines.registry import log_dialects

    found = [(d.engine, d.metrics) for d in log_dialects() if d.metrics is not None]
    return tuple(sorted(found, key=lambda em: em[1].window != "counters"))


def window_kind(engine: str | None) -> str | None:
    """``"counters"`` or ``"gauges"``: how the metrics of ``engine`` (an engine id) make a window; None when it
    exports none."""
    return next((m.window for e, m in _dialects() if e == engine), None)


Series = dict[str, dict[tuple[tuple[str, str], ...], float]]


def check_url(url: str, allow_host: str | None = None) -> str:
    """Return ``url`` if it may be read: ``http(s)`` (:func:`mtp_audit.sources.netpolicy.check_url`), and a loopback
    host or exactly ``allow_host``.

    Raises:
        InputError: another scheme, no host, or a host that is neither loopback nor ``allow_host``.
    """
    try:
        parts = netpolicy.check_url(url, url)
    except netpolicy.NetProblem as exc:
        raise InputError("--metrics", exc.problem.replace(" URL refused", " URL refused: not an http(s) URL")) from None
    host = parts.hostname or ""
    if host == "localhost" or host == (allow_host or "").lower():
        return url
    try:
        if ipaddress.ip_address(host).is_loopback:
            return url
    except ValueError:
        pass
    raise InputError("--metrics", f"{host}: not a loopback address; name it with --metrics-host {host} to allow it")


def fetch(url: str, timeout: float, max_bytes: int = MAX_BYTES) -> str:
    """GET ``url`` once (no redirects) and return its text; the whole read (connection, headers, body) ends within
    ``timeout`` seconds and within the run's network time.

    Raises:
        Unavailable: connection refused, timed out, the run's network time spent, an answer that breaks HTTP, or a
            5xx/429: "could not tell" (exit 3), as for an unreachable hub.
        InputError: another HTTP error status (the URL is wrong), a redirect, or more than ``max_bytes`` bytes.
    """
    try:
        answer = netpolicy.get(url, headers={"Accept": "text/plain"}, timeout=timeout, seconds=timeout, limit=max_bytes,
                               expect=(200,), redirects=netpolicy.NO_REDIRECTS, where="--metrics")
    except netpolicy.NetProblem as exc:
        if exc.kind in netpolicy.UNAVAILABLE_KINDS:
            raise Unavailable(f"--metrics {url}: {exc.problem} (is the server up, and is this its metrics port?)") from None
        raise InputError("--metrics", f"{url}: {exc.problem}") from None
    if answer.status >= 500 or answer.status == 429:
        raise Unavailable(f"--metrics {url}: the server answered HTTP {answer.status}")
    if answer.status != 200:
        raise InputError("--metrics", f"{url}: HTTP {answer.status}")
    return answer.body.decode("utf-8", "replace")


#: Most characters of a parser's complaint shown in an error line (escaped: the answer may be binary).
SHOWN_CHARS = 80


def series(text: str, url: str | None = None) -> Series:
    """Every speculative-decoding sample of one exposition text, series by series: ``{key: {labels: value}}`` where
    ``key`` is a :attr:`~mtp_audit.engines.base.MetricSample.key` prefixed by its engine's id (``vllm.accepted``,
    ``llamacpp.drafts``, ``sglang.accept_length``, ``<engine>.per_pos``: labels include ``position``). Values are as
    parsed (``nan`` and ``inf`` included).

    Raises:
        InputError: the text is not Prometheus exposition format (naming ``url`` when given; the parser's complaint
            cut to :data:`SHOWN_CHARS` characters, escaped).
    """
    from prometheus_client.parser import text_string_to_metric_families

    wanted = {s.name: f"{engine}.{s.key}" for engine, m in _dialects() for s in m.samples}
    out: Series = {}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name in wanted:
                    out.setdefault(wanted[s.name], {})[tuple(sorted(s.labels.items()))] = float(s.value)
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        said = ascii(str(exc)[:SHOWN_CHARS])[1:-1] + ("..." if len(str(exc)) > SHOWN_CHARS else "")
        raise InputError("--metrics", (f"{url}: " if url else "") + f"not Prometheus exposition text ({said})") from None
    return out


def sample(text: str) -> dict[str, Any]:
    """The speculative-decoding samples of one exposition text, summed over series, by
    :attr:`~mtp_audit.engines.base.MetricSample.key`: counter sums, per-position sums (``per_pos``), gauges. Keys
    absent when the engine does not export them.

    Raises:
        InputError: the text is not Prometheus exposition format.
    """
    out: dict[str, Any] = {}
    per_pos: dict[str, float] = {}
    for key, values in series(text).items():
        field = key.rsplit(".", 1)[1]
        if field == "per_pos":
            for labels, v in values.items():
                pos = dict(labels).get("position", "?")
                per_pos[pos] = per_pos.get(pos, 0.0) + v
        else:
            out[field] = out.get(field, 0.0) + sum(values.values())
    if per_pos:
        out["per_pos"] = per_pos
    return out


def _counter_delta(before: dict[Any, float], after: dict[Any, float], what: str, unknown: list[str]) -> tuple[int | None, bool]:
    """``(sum of increases, reset)`` of one counter between two reads, series by series: a series that went down
    (its engine restarted) counts from the restart (its second value); a series seen only at the second read counts
    whole. ``None`` (with the reason in ``unknown``) when a value is not a finite, non-negative number."""
    total, reset = 0.0, False
    for labels, b in after.items():
        a = before.get(labels, 0.0)
        if not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b < 0:
            bad = a if not math.isfinite(a) or a < 0 else b
            unknown.append(f"{what} is {bad!r} (not a finite count)")
            return None, reset
        if b < a:
            reset = True
            total += b
        else:
            total += b - a
    return int(total), reset


def _counter_window(engine: str, a: Series, b: Series, w: dict[str, Any]) -> None:
    """Fill ``w`` with a counter engine's window: counts, rates, per position, reset."""
    unknown: list[str] = []
    resets = False
    for k in ("accepted", "drafted", "drafts"):
        w[k], reset = _counter_delta(a.get(f"{engine}.{k}", {}), b.get(f"{engine}.{k}", {}), k, unknown)
        resets |= reset
    per_pos_a, per_pos_b = a.get(f"{engine}.per_pos", {}), b.get(f"{engine}.per_pos", {})
    positions: dict[str, int] = {}
    for pos in sorted({dict(lb).get("position", "?") for lb in per_pos_b}):
        pick = {lb: v for lb, v in per_pos_b.items() if dict(lb).get("position", "?") == pos}
        got, reset = _counter_delta(per_pos_a, pick, f"accepted at position {pos}", unknown)
        resets |= reset
        if got is not None:
            positions[pos] = got
    known = all(w[k] is not None for k in ("accepted", "drafted", "drafts"))
    if not known:  # the three figures go together: a known "drafted" beside an unknown "accepted" is no verdict
        w["accepted"] = w["drafted"] = w["drafts"] = None
    w["acceptance_rate"] = w["accepted"] / w["drafted"] if known and w["drafted"] > 0 else None
    w["mean_acceptance_length"] = 1 + w["accepted"] / w["drafts"] if known and w["drafts"] else None
    if known and w["drafts"] and positions:
        w["per_position"] = {p: v / w["drafts"] for p, v in positions.items()}
    w["reset"] = resets
    if unknown:
        w["unknown"] = unknown


def _gauge(values: dict[Any, float], what: str, unknown: list[str]) -> float | None:
    """The sum of a gauge's series, or None (reason in ``unknown``) when a value is not a finite, non-negative
    number (an acceptance length or rate is never below 0)."""
    bad = [v for v in values.values() if not math.isfinite(v) or v < 0]
    if bad:
        unknown.append(f"{what} is {bad[0]!r}")
        return None
    return sum(values.values())


def _gauge_window(engine: str, a: Series, b: Series, w: dict[str, Any]) -> None:
    """Fill ``w`` with a gauge engine's window: its gauges at the second read and its verify calls in the window."""
    unknown: list[str] = []
    length, rate, calls = f"{engine}.accept_length", f"{engine}.accept_rate", f"{engine}.verify_calls"
    w["accept_length"] = _gauge(b[length], "accept length", unknown) if length in b else None
    w["accept_rate"] = _gauge(b[rate], "accept rate", unknown) if rate in b else None
    w["verify_calls"], w["reset"] = (None, False)
    if calls in b:
        w["verify_calls"], w["reset"] = _counter_delta(a.get(calls, {}), b[calls], "verify calls", unknown)
    if unknown:
        w["unknown"] = unknown


def window_from_texts(before: str, after: str, seconds: float, url: str) -> dict[str, Any]:
    """Acceptance between two exposition texts read ``seconds`` apart.

    Returns a dict: ``url``, ``seconds``, ``engine`` (the id of the engine whose samples the second read shows:
    ``vllm``/``llamacpp``/``sglang``, or None), ``accepted``/``drafted``/``drafts`` (token and draft counts in the
    window: counter engines), ``acceptance_rate`` (0..1), ``mean_acceptance_length`` (1 + accepted/drafts),
    ``per_position`` (rates), ``accept_length``/``accept_rate`` (gauges at the second read: gauge engines),
    ``verify_calls``; ``reset`` (a counter went down: the engine restarted and
    the figures are of the run since the restart); ``unknown`` (reasons a figure is "could not tell": ``NaN``,
    ``+Inf``, a negative counter), the figure then ``None``. Every value is JSON (no NaN, no infinity).

    Raises:
        InputError: a text is not Prometheus exposition format.
    """
    a, b = series(before, url), series(after, url)
    w: dict[str, Any] = {"url": url, "seconds": seconds, "engine": None}
    for engine, m in _dialects():
        if m.window == "counters" and all(f"{engine}.{k}" in b for k in ("accepted", "drafted")):
            w["engine"] = engine
            _counter_window(engine, a, b, w)
            return w
        if m.window == "gauges" and (f"{engine}.accept_length" in b or f"{engine}.accept_rate" in b):
            w["engine"] = engine
            _gauge_window(engine, a, b, w)
            return w
    return w


def read_window(url: str, seconds: float, *, timeout: float = 5.0, allow_host: str | None = None,
                max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """Read ``url`` twice, ``seconds`` apart, and return :func:`window_from_texts` of the two reads. One run
    (:func:`mtp_audit.sources.bounded.run_budget`): each read ends within ``timeout`` seconds in all, both within the
    run's network time (the pause between them not counted).

    Raises:
        InputError: the URL is not allowed (:func:`check_url`), a read fails, or a text does not parse.
        Unavailable: the server cannot be reached, breaks HTTP or is too slow (:func:`fetch`).
    """
    from mtp_audit.sources.bounded import run_budget

    check_url(url, allow_host)
    with run_budget() as run:
        first = fetch(url, timeout, max_bytes)
        pause = max(0.0, seconds)
        time.sleep(pause)
        run.off_network(pause)
        second = fetch(url, timeout, max_bytes)
    return window_from_texts(first, second, seconds, url)


def _counter_findings(w: dict[str, Any], label: str, loc: Location) -> list[Finding]:
    """MTP520 and MTP500 of a counter engine's window (``label``: how the engine's metrics name the server)."""
    if w.get("unknown"):
        return [get_rule("MTP520").finding(f"{label} metrics window: could not tell the acceptance: "
                                           + "; ".join(w["unknown"]), loc)]
    rate, mlen = w.get("acceptance_rate"), w.get("mean_acceptance_length")
    restart = (" (a counter went down between the reads: the engine restarted; counted from the restart, within "
               f"the {w['seconds']:g} s)") if w.get("reset") else f" in {w['seconds']:g} s"
    words = (f"{w['accepted']} of {w['drafted']} drafted tokens accepted{restart}"
             + (f" ({rate * 100:.1f} %, mean acceptance length {mlen:.2f})" if rate is not None and mlen else ""))
    out = [get_rule("MTP520").finding(f"{label} metrics window: {words}", loc,
                                      evidence=(Evidence("drafts", str(w.get("drafts"))),))]
    if rate is not None and rate < 0.03 and not window_too_few(w):
        out.append(get_rule("MTP500").finding(f"{label} metrics window: {words}: the draft tokens are rejected", loc))
    return out


def window_too_few(w: dict[str, Any]) -> str | None:
    """Why a counter window's "accepted nothing" is no evidence, or None: it drafted too few steps
    (:func:`mtp_audit.runtime.verdict.min_drafted`: its ``drafts`` counter below
    :data:`~mtp_audit.runtime.verdict.MIN_STEPS`, or, without that counter, fewer drafted tokens than that many steps
    of the default depth)."""
    from mtp_audit.runtime.verdict import MIN_STEPS, min_drafted

    drafted, steps = w.get("drafted") or 0, w.get("drafts")
    need = min_drafted(None, steps) if steps is not None else min_drafted()
    if (steps is not None and steps >= MIN_STEPS) or (steps is None and drafted >= need):
        return None
    shown = f"{steps} draft steps, {drafted} drafted tokens" if steps is not None else f"{drafted} drafted tokens"
    return (f"too few drafted in the window: {shown} ({w.get('accepted')} accepted); 0 accepted is evidence from "
            f"{MIN_STEPS} steps on (at a low healthy 20 % first-token acceptance all {MIN_STEPS} reject with under 1 % chance)")


def metrics_findings(w: dict[str, Any]) -> list[Finding]:
    """MTP520 (the window's figures, or why they could not be told) and MTP500 (drafting with ~0 % accepted) for a
    metrics window."""
    loc = Location(symbol=w["url"])
    known = dict(_dialects())
    got = known.get(w["engine"] or "")
    if got is not None and got.window == "counters":
        return _counter_findings(w, got.label, loc)
    if got is not None:
        return [_gauge_finding(w, got.label, loc)]
    labels = [f"{m.label}'s" for m in known.values()]
    which = (f" (neither {', '.join(labels[:-1])} nor {labels[-1]})" if len(labels) > 1
             else f" (not {labels[0]})" if labels else "")
    return [get_rule("MTP520").finding(f"no speculative-decoding metric at {w['url']}{which}", loc)]


def _gauge_finding(w: dict[str, Any], label: str, loc: Location) -> Finding:
    """MTP520 of a gauge engine's window: the gauges at the second read, the verify calls in the window."""
    unknown = "; ".join(w.get("unknown") or [])
    if w.get("accept_length") is None and w.get("accept_rate") is None:
        return get_rule("MTP520").finding(f"{label} metrics at the second read: could not tell: {unknown}", loc)
    restart = " (the counter went down between the reads: the engine restarted)" if w.get("reset") else ""
    return get_rule("MTP520").finding(
        f"{label} metrics at the second read: accept length {w.get('accept_length')}, accept rate {w.get('accept_rate')}"
        + (f", {w['verify_calls']} verify calls in {w['seconds']:g} s{restart}" if w.get("verify_calls") is not None else "")
        + (f"; could not tell: {unknown}" if unknown else ""), loc)
