"""``--metrics URL``: read a running engine's Prometheus endpoint twice and report the acceptance between.

The exposition text is parsed by ``prometheus_client.parser.text_string_to_metric_families`` (the
optional ``metrics`` extra; never parsed by hand). Metric names, from each engine's source:

* vLLM ``vllm/v1/spec_decode/metrics.py:229-231,252-255`` @ v0.33.0: counters
  ``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens``,
  ``vllm:spec_decode_num_accepted_tokens`` and ``vllm:spec_decode_num_accepted_tokens_per_pos``
  (label ``position``), exposed with the ``_total`` suffix, one series per engine (label ``engine``).
* SGLang ``sglang/srt/observability/metrics_collector.py:511-518,1865-1866`` @ 0.5.23: gauges
  ``sglang:spec_accept_length`` and ``sglang:spec_accept_rate`` (the last logging interval), counter
  ``sglang:spec_verify_calls_total``.

llama-server and TensorRT-LLM counters are not read (their names could not be confirmed from source here).

Bounds: one URL, ``http``/``https`` only, the host must be a loopback address or the host the user named
in ``allow_host``; no redirect is followed; each read has a timeout and a byte cap.
"""

from __future__ import annotations

import ipaddress
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from mtp_audit.errors import InputError, Unavailable
from mtp_audit.report import Evidence, Finding, Location
from mtp_audit.report.rules import get_rule

#: Largest exposition text read (bytes).
MAX_BYTES = 8 * 1024 * 1024

VLLM = {"accepted": "vllm:spec_decode_num_accepted_tokens_total", "drafted": "vllm:spec_decode_num_draft_tokens_total",
        "drafts": "vllm:spec_decode_num_drafts_total"}
VLLM_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
SGLANG = {"accept_length": "sglang:spec_accept_length", "accept_rate": "sglang:spec_accept_rate",
          "verify_calls": "sglang:spec_verify_calls_total"}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        """Refuse every redirect: only the URL the user named is read."""
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} not followed", headers, fp)


def check_url(url: str, allow_host: str | None = None) -> str:
    """Return ``url`` if it may be read: ``http(s)``, and a loopback host or exactly ``allow_host``.

    Raises:
        InputError: another scheme, no host, or a host that is neither loopback nor ``allow_host``.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InputError("--metrics", f"{url}: not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("--metrics", f"{url}: not an http(s) URL with a host")
    host = parts.hostname
    if host == "localhost" or host == (allow_host or "").lower():
        return url
    try:
        if ipaddress.ip_address(host).is_loopback:
            return url
    except ValueError:
        pass
    raise InputError("--metrics", f"{host}: not a loopback address; name it with --metrics-host {host} to allow it")


def fetch(url: str, timeout: float, max_bytes: int = MAX_BYTES) -> str:
    """GET ``url`` once (no redirects) and return its text.

    Raises:
        Unavailable: connection refused or timed out: the server is down or not there yet, "could not tell" (exit 3),
            as for an unreachable hub.
        InputError: an HTTP error status (the URL is wrong), or more than ``max_bytes`` bytes.
    """
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers={"Accept": "text/plain"}), timeout=timeout) as resp:
            data = resp.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise InputError("--metrics", f"{url}: HTTP {exc.code} {exc.msg}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unavailable(f"--metrics {url}: {reason} (is the server up, and is this its metrics port?)") from None
    if len(data) > max_bytes:
        raise InputError("--metrics", f"{url}: more than {max_bytes} bytes")
    return data.decode("utf-8", "replace")


def sample(text: str) -> dict[str, Any]:
    """The speculative-decoding samples of one exposition text: vLLM counter sums (over engines),
    per-position sums, SGLang gauges. Keys absent when the engine does not export them.

    Raises:
        InputError: the text is not Prometheus exposition format.
    """
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, Any] = {}
    per_pos: dict[str, float] = {}
    wanted = {v: k for k, v in {**VLLM, **SGLANG}.items()}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name in wanted:
                    out[wanted[s.name]] = out.get(wanted[s.name], 0.0) + s.value
                elif s.name == VLLM_PER_POS:
                    pos = s.labels.get("position", "?")
                    per_pos[pos] = per_pos.get(pos, 0.0) + s.value
    except (ValueError, TypeError, IndexError) as exc:
        raise InputError("--metrics", f"not Prometheus exposition text ({exc})") from None
    if per_pos:
        out["per_pos"] = per_pos
    return out


def window_from_texts(before: str, after: str, seconds: float, url: str) -> dict[str, Any]:
    """Acceptance between two exposition texts read ``seconds`` apart.

    Returns a dict: ``url``, ``seconds``, ``engine`` (``vllm``/``sglang``/None), ``accepted``/``drafted``/``drafts``
    (token and draft counts in the window, vLLM), ``acceptance_rate`` (0..1), ``mean_acceptance_length``
    (1 + accepted/drafts), ``per_position`` (rates), ``accept_length``/``accept_rate`` (SGLang gauges at the
    second read).
    """
    a, b = sample(before), sample(after)
    w: dict[str, Any] = {"url": url, "seconds": seconds, "engine": None}
    if "accepted" in b and "drafted" in b:
        w["engine"] = "vllm"
        for k in ("accepted", "drafted", "drafts"):
            w[k] = int(b.get(k, 0) - a.get(k, 0))
        w["acceptance_rate"] = w["accepted"] / w["drafted"] if w["drafted"] > 0 else None
        w["mean_acceptance_length"] = 1 + w["accepted"] / w["drafts"] if w.get("drafts") else None
        if w.get("drafts") and "per_pos" in b:
            w["per_position"] = {p: (v - a.get("per_pos", {}).get(p, 0.0)) / w["drafts"] for p, v in sorted(b["per_pos"].items())}
    elif "accept_length" in b or "accept_rate" in b:
        w["engine"] = "sglang"
        w["accept_length"], w["accept_rate"] = b.get("accept_length"), b.get("accept_rate")
        w["verify_calls"] = int(b.get("verify_calls", 0) - a.get("verify_calls", 0)) if "verify_calls" in b else None
    return w


def read_window(url: str, seconds: float, *, timeout: float = 5.0, allow_host: str | None = None,
                max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """Read ``url`` twice, ``seconds`` apart, and return :func:`window_from_texts` of the two reads.

    Raises:
        InputError: the URL is not allowed (:func:`check_url`), a read fails, or a text does not parse.
    """
    check_url(url, allow_host)
    first = fetch(url, timeout, max_bytes)
    time.sleep(max(0.0, seconds))
    second = fetch(url, timeout, max_bytes)
    return window_from_texts(first, second, seconds, url)


def metrics_findings(w: dict[str, Any]) -> list[Finding]:
    """MTP520 (the window's figures) and MTP500 (drafting with ~0 % accepted) for a metrics window."""
    loc = Location(symbol=w["url"])
    if w["engine"] == "vllm":
        rate, mlen = w.get("acceptance_rate"), w.get("mean_acceptance_length")
        words = (f"{w['accepted']} of {w['drafted']} drafted tokens accepted in {w['seconds']:g} s"
                 + (f" ({rate * 100:.1f} %, mean acceptance length {mlen:.2f})" if rate is not None and mlen else ""))
        out = [get_rule("MTP520").finding(f"vLLM metrics window: {words}", loc,
                                          evidence=(Evidence("drafts", str(w.get("drafts"))),))]
        if rate is not None and rate < 0.03 and w["drafted"] >= 8:
            out.append(get_rule("MTP500").finding(f"vLLM metrics window: {words}: the draft tokens are rejected", loc))
        return out
    if w["engine"] == "sglang":
        return [get_rule("MTP520").finding(
            f"SGLang metrics at the second read: accept length {w.get('accept_length')}, accept rate {w.get('accept_rate')}"
            + (f", {w['verify_calls']} verify calls in {w['seconds']:g} s" if w.get("verify_calls") is not None else ""), loc)]
    return [get_rule("MTP520").finding(f"no speculative-decoding metric at {w['url']} (neither vLLM's nor SGLang's)", loc)]
