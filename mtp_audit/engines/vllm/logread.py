"""vLLM's log lines as ``mtp-audit log`` reads them: the hand-kept patterns (bounded fields) and the line reader lent to
the log facts through :data:`mtp_audit.engines.vllm.logdialect.DIALECT` (its format strings and sources are there).

Sources (release tag, file:line):

* ``vllm/v1/engine/core.py:140`` @ v0.33.0: ``Initializing a V1 LLM engine (v%s) with config: %s``; the config's
  ``speculative_config`` is ``SpeculativeConfig(method=..., model=..., num_spec_tokens=...)``
  (``vllm/config/speculative.py:2210`` @ v0.33.0) or ``None``. V0 spelled it ``Initializing an LLM engine``.
* ``vllm/v1/spec_decode/metrics.py:121-128`` @ v0.33.0: the ``SpecDecoding metrics:`` line; v0.9.2 (``metrics.py:88-89``)
  led with ``Draft acceptance rate: %.1f%%``; V0 (``vllm/spec_decode/metrics.py:526`` @ v0.8.5) wrote ``Speculative
  metrics: Draft acceptance rate: %.3f, ..., Number of accepted tokens: %d, Number of draft tokens: %d`` (running totals).
* ``vllm/config/model.py:744`` @ v0.33.0: ``Resolved architecture: %s`` (target first, then the draft).
* ``vllm/v1/spec_decode/llm_base_proposer.py:1472,1522,1540`` @ v0.33.0: ``Sharing target model embedding|lm_head
  weights with the draft model``.
"""

from __future__ import annotations

import re
from typing import Any

from mtp_audit.engines.base import LogCommand, LogSink
from mtp_audit.engines.logfields import fields, integer, number, numbers, whole

ENGINE = "vllm"
RELEASE = "v0.33.0"
#: ``MTPModelTypes`` (``vllm/config/speculative.py:38-67`` @ v0.33.0): rewritten to ``mtp`` (:1246-1250).
MTP_METHODS = ("deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
               "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
               "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
               "bailing_hybrid_mtp", "mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp", "hy_v3_mtp",
               "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp")
ALIAS_SOURCE = f"vllm/config/speculative.py:1246-1250 @ {RELEASE}"

ENGINE_INIT = re.compile(r"Initializing an? (?:V1 )?LLM engine \(v([^)\s]{1,64})\) with config: ?(.*)")
SERVER_VERSION = re.compile(r"vLLM API server version ([0-9][\w.+-]*)")
SPEC_CONFIG = re.compile(r"speculative_config=(None|SpeculativeConfig\(([^()]{0,4096})\))")
SPEC_STATS = re.compile(r"SpecDecoding metrics:|Speculative metrics:|Mean acceptance length:|Per-position acceptance rate:")
#: The first field of a statistics line whose start is lost (``s: Mean acceptance length: 3.28, ...`` of a fold).
FIRST_FIELD = re.compile(r"(?:Mean acceptance length|(?:Avg )?Draft acceptance rate|Accepted|Drafted|Per-position acceptance "
                         r"rate|Number of \w{1,16} tokens): ")
ARCH = re.compile(r"Resolved architecture:\s*(\w+)")
DRAFT_SHARE = re.compile(r"Sharing target model (embedding|lm_head) weights with the draft model")
ENGINE_TAG = re.compile(r"\((\w{1,64}) pid=(\d{1,10})\)")
PROC = re.compile(r"\((?:APIServer|EngineCore|Worker|VllmWorker)\w* pid=\d+\)")
#: ``non-default args: {...}`` (``vllm/entrypoints/common/startup.py:96`` @ v0.33.0): the arguments as typed, a dict repr.
NON_DEFAULT = re.compile(r"non-default args: \{")
SPEC_DICT = re.compile(r"'speculative_config': \{([^{}\n]{0,2048})\}")
DICT_ITEM = re.compile(r"'(\w{1,64})': ('([^'\n]{0,1024})'|[\w.+-]{1,64})")
MODEL_ARG = re.compile(r"'(?:model_tag|model)': '([^'\n]{1,1024})'")
WORDS = ("SpecDecoding metrics", "Speculative metrics", "Mean acceptance length", "Per-position acceptance rate",
         "LLM engine (v", "EngineCore encountered", "WorkerProc hit", "EngineDeadError", "vLLM API server version",
         "site-packages/vllm/")


def recognise(raw: str, text: str) -> bool:
    """A line only vLLM prints: its process tags (``(EngineCore_DP0 pid=6838)``) or its own words."""
    return ("pid=" in raw and PROC.search(raw) is not None) or any(k in text for k in WORDS)


def fast(sink: LogSink, number_: int, raw: str) -> bool:
    """The ``SpecDecoding metrics:`` line, read without the general path."""
    if "SpecDecoding metrics: " in raw and "Traceback" not in raw:
        sink.vote(ENGINE, number_)  # type: ignore[attr-defined]
        _stats(sink, number_, raw, raw)
        return True
    return False


def read(sink: LogSink, line: int, raw: str, text: str, cut: bool) -> None:
    """vLLM's start-up, draft-loading and statistics lines (see the module docstring)."""
    if "non-default args: " in text and NON_DEFAULT.search(text):
        _non_default_args(sink, line, text)
        return
    if "LLM engine (v" not in text and "vLLM API" not in text and "Resolved architecture" not in text \
            and "Sharing target" not in text and not ("acceptance" in text or "Speculative metrics" in text
                                                      or "tokens, Drafted: " in text):
        return
    m = ENGINE_INIT.search(text)
    if m:
        sink.run_start(line)
        sink.version.setdefault(ENGINE, sink.fact(m.group(1), line))
        sink.open_config(line, m.group(2), cut, read_config)
        return
    m = SERVER_VERSION.search(text)
    if m:
        sink.run_start(line)
        sink.version[ENGINE] = sink.fact(m.group(1), line)
    _draft_lines(sink, line, text)
    if SPEC_STATS.search(text) or "tokens, Drafted: " in text:
        _stats(sink, line, raw, text)


def _draft_lines(sink: LogSink, line: int, text: str) -> None:
    m = ARCH.search(text)
    if m:
        key = "draft_class" if "model_class" in sink.config or re.search(r"MTP|NextN|Eagle|Draft", m.group(1)) else "model_class"
        sink.config.setdefault(key, sink.fact(m.group(1), line))
        if key == "draft_class":
            sink.draft.setdefault("class", sink.fact(m.group(1), line))
    m = DRAFT_SHARE.search(text)
    if m:
        sink.draft["shared_" + ("embedding" if m.group(1) == "embedding" else "lm_head")] = sink.fact(True, line)


#: Fields whose value the format always follows with more (``, ``, `` tokens``, ``%``): a line ending inside one is cut,
#: unless the value has all the decimals its conversion prints (``Mean acceptance length: %.2f``, V0 ``Draft acceptance
#: rate: %.3f``): a bare ``Mean acceptance length: 5.00`` is whole.
FOLLOWED = {"Mean acceptance length": 2, "Accepted": 0, "Drafted": 0, "Avg Draft acceptance rate": 0,
            "Draft acceptance rate": 3, "Number of accepted tokens": 0, "Number of draft tokens": 0}


def _stats(sink: LogSink, line: int, raw: str, text: str) -> None:
    """Fields of a ``SpecDecoding metrics:`` (or V0 ``Speculative metrics:``) line, by name, in any order;
    a line cut short keeps the fields before the cut. A line that does not end with the ``%`` of its average rate
    (``Avg Draft acceptance rate: %.1f%%``, ``metrics.py:121-128`` @ v0.33.0; v0.9.2's ends with its per-position
    list, ``metrics.py:88-89``) waits for the next line (a fold joins it); a line ending inside a field of :data:`FOLLOWED` is cut and not read."""
    end = text[-1:]
    if (end != "%" or "Avg Draft" not in text) and sink.hold(ENGINE, line, raw):
        return
    cut = text.find("metrics: ")
    if cut < 0:  # a fragment (a fold or a terminal cut its start): its fields from the first one named
        m = FIRST_FIELD.search(text)
        cut = m.start() - 9 if m else -9
    kv = fields(text[cut + 9:])
    if end and end in "0123456789.":
        last = next(reversed(kv), "")
        if last in FOLLOWED and not (FOLLOWED[last] and whole(kv[last], FOLLOWED[last])):
            sink.unread(line, "cut")
            return
    per_pos = tuple(numbers(kv.get("Per-position acceptance rate", "")))
    rate = None
    for key in ("Avg Draft acceptance rate", "Draft acceptance rate"):
        if key in kv:
            val = number(kv[key])
            rate = None if val is None else val / 100.0 if "%" in kv[key] else val
            break
    mean_len = number(kv.get("Mean acceptance length", ""))
    acc = integer(kv.get("Accepted", kv.get("Number of accepted tokens", "")))
    drafted = integer(kv.get("Drafted", kv.get("Number of draft tokens", "")))
    if mean_len is None and rate is None and acc is None:
        if per_pos:
            sink.per_position(line, per_pos)
        return
    source = None
    if "pid=" in raw:
        tag = ENGINE_TAG.search(raw)
        source = f"{tag.group(1)} pid={tag.group(2)}" if tag else None
    k = integer(kv.get("Number of speculative tokens", ""))
    if k and acc is not None and drafted is not None:
        acc, drafted, mean_len, rate = _v0_interval(sink.scratch(ENGINE), source, k, acc, drafted, rate)
    sink.interval(line, mean_len, rate, acc, drafted, per_pos, source)


def _v0_interval(prev_of: dict[str, Any], source: str | None, k: int, acc: int, drafted: int,
                 rate: float | None) -> tuple[int, int, float | None, float | None]:
    """vLLM V0 ``Speculative metrics`` counts are running totals (``vllm/spec_decode/metrics.py`` @ v0.8.5
    accumulates them): the interval is the difference from the previous line of the same source; its mean
    acceptance length is ``1 + accepted / (drafted / k)`` (each draft proposes ``k`` tokens)."""
    key = source or ""
    prev = prev_of.get(key, (0, 0))
    prev_of[key] = (acc, drafted)
    if acc >= prev[0] and drafted >= prev[1]:
        acc, drafted = acc - prev[0], drafted - prev[1]
    mean_len = 1 + acc / (drafted / k) if drafted and k else None
    return acc, drafted, mean_len, (acc / drafted if drafted else rate)


def read_config(sink: LogSink, body: str, line: int) -> None:
    """The engine config line: ``speculative_config=SpeculativeConfig(method=..., model=..., num_spec_tokens=...)`` or
    ``None``, and the target's ``model``, ``quantization``, ``tensor_parallel_size``."""
    m = SPEC_CONFIG.search(body)
    if m:
        if m.group(1) == "None":
            sink.config["algorithm"] = sink.fact(None, line)
        else:
            inner = m.group(2)
            for key, out in (("method", "algorithm"), ("model", "draft_model"), ("num_spec_tokens", "num_speculative_tokens")):
                f = re.search(rf"\b{key}=('([^'\n]{{0,1024}})'|[^,)]{{1,1024}})", inner)
                if f:
                    v = f.group(2) if f.group(2) is not None else f.group(1)
                    sink.config[out] = sink.fact(int(v) if v.isdigit() else v, line)
    for key, out in (("model", "model"), ("quantization", "quantization"), ("tensor_parallel_size", "tensor_parallel_size")):
        f = re.search(rf"(?:^|, ){key}=('([^'\n]{{0,1024}})'|[^,]{{1,1024}})", body)
        if f:
            sink.config.setdefault(out, sink.fact(f.group(2) if f.group(2) is not None else f.group(1), line))


def _non_default_args(sink: LogSink, line: int, text: str) -> None:
    """The arguments vLLM's server was given, as it logs them at start (a dict repr, read field by field, never
    evaluated): its ``speculative_config`` read like a ``--speculative-config`` of a command, after vLLM's aliases."""
    m = SPEC_DICT.search(text)
    spec: dict[str, object] = {}
    for item in DICT_ITEM.finditer(m.group(1) if m else ""):
        raw = item.group(3) if item.group(3) is not None else item.group(2)
        spec[item.group(1)] = int(raw) if raw.isdigit() else raw
    model = MODEL_ARG.search(text)
    sink.note("command", spec_command("non-default args", spec, model.group(1) if model else None), line)


def spec_command(entry: str, spec: dict[str, Any], model: str | None, notes: tuple[str, ...] = ()) -> LogCommand:
    """The :class:`LogCommand` of a speculative config as given (``--speculative-config``, or the ``speculative_config``
    of vLLM's ``non-default args`` line) for target ``model``, with vLLM's method aliases and draft default applied."""
    typed = spec.get("method")
    method, alias = _method(typed, spec.get("model"))
    draft = spec.get("model")
    if draft is None and method == "mtp" and spec.get("num_speculative_tokens") is not None:
        draft = model  # speculative.py:1252-1263: mtp drafts with the target model itself
    k = spec.get("num_speculative_tokens")
    return LogCommand("vllm", entry, typed=None if typed is None else str(typed), method=method, alias=alias,
                      draft=None if draft is None else str(draft), num_speculative_tokens=k if isinstance(k, int) else None,
                      model=model, notes=notes)


def _method(typed: object, model: object) -> tuple[str | None, str | None]:
    """The method vLLM runs for ``typed`` (and the draft ``model``), and where it rewrites it (or None)."""
    if typed is None:
        if model is None:
            return None, None
        return ("ngram" if model in ("ngram", "[ngram]") else "draft_model"), f"vllm/config/speculative.py:1240-1244 @ {RELEASE}"
    text = str(typed)
    if text in MTP_METHODS and text != "mtp":
        return "mtp", ALIAS_SOURCE
    return text, None
