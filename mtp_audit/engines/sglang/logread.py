"""SGLang's log lines as ``mtp-audit log`` reads them: the hand-kept patterns (bounded fields) and the line reader lent
to the log facts through :data:`mtp_audit.engines.sglang.logdialect.DIALECT` (its format strings and sources are there).

Sources: ``sglang/srt/managers/scheduler_components/metrics_reporter.py:963,1005`` @ 0.5.23 (``Decode batch[ [iter]],
#running-req: ..., accept len: %.2f, accept rate: %.2f, ...``: the accept fields are written only when a speculative
algorithm is set, line 967, so Decode batch lines without them mean speculation was off);
``scheduler_metrics_mixin.py:249,270`` @ 0.5.4 (the same fields); releases before 2025-06 wrote ``Decode batch.``
(sgl-project/sglang#4305 log); ``sglang/srt/entrypoints/engine.py:311`` @ 0.5.23 (``server_args={...}``; older releases
``server_args=ServerArgs(...)``); ``sglang/srt/model_executor/model_runner.py:1373`` (``Load weight end. ...
type=<class>``).
"""

from __future__ import annotations

import re
from typing import Any

from mtp_audit.engines.base import LogSink
from mtp_audit.engines.logfields import figure

ENGINE = "sglang"
DECODE = re.compile(r"Decode batch(?: \[\d+\])?[.,]")
SERVER_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)")
LOAD_END = re.compile(r"Load weight end\.[^\n]{0,512}?\btype=(\w{1,128})")
TAG = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d((?: (?:DP|TP|EP|PP|CP|ATTN_DP)\d{1,4}){1,8})\]")
#: ``key=value`` or ``'key': value`` pairs of a printed ServerArgs / dict (bounded values: the flat fields read here).
FIELD = re.compile(r"['\"]?(?<!\w)(\w{1,128})['\"]?[ \t]{0,8}[=:][ \t]{0,8}('(?:[^'\\]|\\.){0,1024}'|\"(?:[^\"\\]|\\.){0,1024}\"|[^,(){}\[\]]{1,1024})")
KEYS = {"model_path": "model", "speculative_algorithm": "algorithm", "speculative_draft_model_path": "draft_model",
        "speculative_num_steps": "num_steps", "speculative_eagle_topk": "eagle_topk",
        "speculative_num_draft_tokens": "num_draft_tokens", "speculative_draft_model_quantization": "draft_quantization",
        "quantization": "quantization", "tp_size": "tp_size", "dp_size": "dp_size", "ep_size": "ep_size",
        "disable_cuda_graph": "disable_cuda_graph", "speculative_moe_runner_backend": "speculative_moe_runner_backend"}
WORDS = ("Decode batch", "Prefill batch", "server_args=", "Scheduler hit an exception", "sglang/srt/")


def recognise(raw: str, text: str) -> bool:
    """A line only SGLang prints: its words, or its ``[date time TP0 EP0]`` prefix."""
    return any(k in text for k in WORDS) or (raw.startswith("[") and TAG.match(raw) is not None)


def fast(sink: LogSink, line: int, raw: str) -> bool:
    """A ``Decode batch`` line with accept fields, read without the general path."""
    if "Decode batch" in raw and "accept " in raw and "Traceback" not in raw:
        sink.vote(ENGINE, line)  # type: ignore[attr-defined]
        read(sink, line, raw, raw, False)
        return True
    return False


def read(sink: LogSink, line: int, raw: str, text: str, cut: bool) -> None:
    """SGLang's ``server_args``, ``Load weight end`` and ``Decode batch`` lines."""
    if "server_args" not in text and "Load weight end" not in text and "Decode batch" not in text:
        return
    m = SERVER_ARGS.search(text) if "server_args" in text else None
    if m:
        sink.run_start(line)
        sink.open_config(line, text[m.end():], cut, read_config)
        return
    m = LOAD_END.search(text) if "Load weight end" in text else None
    if m:
        key = "draft_class" if "model_class" in sink.config else "model_class"
        sink.config.setdefault(key, sink.fact(m.group(1), line))
        if key == "draft_class":
            sink.draft.setdefault("class", sink.fact(m.group(1), line))
    if "Decode batch" not in text or not DECODE.search(text):
        return
    (got_len, length), (got_rate, rate) = figure(text, "accept len: "), figure(text, "accept rate: ")
    if got_len == "ok" and text[text.find("accept len: ") - 6:].startswith("block "):
        got_len, length = "absent", None
    if (got_len != "ok" or got_rate != "ok") and _not_read(sink, line, raw, text, (got_len, got_rate)):
        return
    seen = sink.scratch(ENGINE)
    if length is None and rate is None:
        if not cut and "gen throughput" in text:
            # after SGLang's own speculative lines, a process started without speculation (a restart)
            sink.no_speculation(line, restart=seen.pop("speculative", False))
        return
    tag = TAG.match(raw) if raw.startswith("[") else None
    sink.interval(line, length, rate, source=tag.group(1).strip() if tag else None)
    seen["speculative"] = True


def _not_read(sink: LogSink, line: int, raw: str, text: str, got: tuple[str, str]) -> bool:
    """True when a Decode batch line whose accept fields are not both whole (:func:`figure` states ``got``) is not
    read now: it stops inside or after them (SGLang prints ", " after each, metrics_reporter.py:1005 @ 0.5.23), or
    before its last fields ("gen throughput (token/s): ..., #queue-req: ...", :1039-1043), and waits for a fold's next
    line; or, read as it is, a figure is cut or not a number (said, not counted)."""
    if ("cut" in got or "end" in got or "gen throughput" not in text) and sink.hold(ENGINE, line, raw):
        return True
    why = "cut" if "cut" in got else "bad" if "bad" in got else None
    if why is not None:
        sink.unread(line, why)
    return why is not None


def read_config(sink: LogSink, body: str, line: int) -> None:
    """The flat fields of ``server_args`` that decide speculation (:data:`KEYS`)."""
    for m in FIELD.finditer(body):
        key = m.group(1)
        if key not in KEYS:
            continue
        v: Any = m.group(2).strip().strip("'\"")
        v = None if v == "None" else int(v) if v.isdigit() else v
        sink.config.setdefault(KEYS[key], sink.fact(v, line))
