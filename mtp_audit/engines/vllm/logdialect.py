"""vLLM's log dialect: the lines ``mtp-audit log`` reads, each with its format string and source at a release, and the
launch command read by vLLM's own command parser (:mod:`mtp_audit.engines.vllm.launch.command`) with vLLM's own
method aliases applied.

Sources (vLLM v0.33.0 wheel, checked by ``tests/test_logdialect_sources.py``):

* ``vllm/config/speculative.py:38-67``: ``MTPModelTypes``; ``:1246-1250``: every one of them but ``mtp`` is rewritten
  to ``mtp`` ("method `%s` is deprecated and replaced with mtp."); ``:1252-1263``: ``mtp`` without a ``model`` drafts
  with the target model itself; ``:1240-1244``: no method and ``model`` ``ngram`` is ``ngram``, any other model
  ``draft_model``.
"""

from __future__ import annotations

from pathlib import PurePath

from mtp_audit.engines.base import LogCommand, LogDialect, LogLineFormat
from mtp_audit.engines.vllm import logread

RELEASE = "v0.33.0"

#: ``MTPModelTypes`` (``vllm/config/speculative.py:38-67`` @ v0.33.0): rewritten to ``mtp`` (:1246-1250).
MTP_METHODS = ("deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
               "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
               "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
               "bailing_hybrid_mtp", "mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp", "hy_v3_mtp",
               "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp")
ALIAS_SOURCE = f"vllm/config/speculative.py:1246-1250 @ {RELEASE}"

LINES = (
    LogLineFormat("statistics", "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, "
                  "Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance "
                  "rate: %s, Avg Draft acceptance rate: %.1f%%", f"vllm/v1/spec_decode/metrics.py:121-128 @ {RELEASE}",
                  "SpecDecoding metrics"),
    LogLineFormat("config", "Initializing a V1 LLM engine (v%s) with config: %s", f"vllm/v1/engine/core.py:140 @ {RELEASE}",
                  "LLM engine (v"),
    LogLineFormat("draft-class", "Resolved architecture: %s", f"vllm/config/model.py:744 @ {RELEASE}", "Resolved architecture"),
    LogLineFormat("draft-shared", "Detected MTP model. Sharing target model embedding weights with the draft model.",
                  f"vllm/v1/spec_decode/llm_base_proposer.py:1472-1473 @ {RELEASE}", "Sharing target"),
    LogLineFormat("draft-shared", "Sharing target model lm_head weights with the draft model.",
                  f"vllm/v1/spec_decode/llm_base_proposer.py:1522 @ {RELEASE}", "Sharing target"),
    LogLineFormat("fatal", "EngineCore encountered a fatal error.", f"vllm/v1/engine/core.py:1586 @ {RELEASE}", "rror"),
    LogLineFormat("fatal", "WorkerProc hit an exception.", f"vllm/v1/executor/multiproc_executor.py:1189 @ {RELEASE}",
                  "xception"),
)

#: Substrings only vLLM prints: its statistics line and its fragments, its start-up lines, its fatal lines.
WORDS = ("SpecDecoding metrics", "Speculative metrics", "Mean acceptance length", "Per-position acceptance rate",
         "tokens, Drafted: ", "LLM engine (v", "EngineCore encountered", "WorkerProc hit", "EngineDeadError",
         "vLLM API server version", "site-packages/vllm/", "Resolved architecture: ", "Sharing target model ")

#: Container images whose entry point is vLLM's server (the arguments after the image are the server's).
IMAGES = ("vllm/vllm-openai", "vllm-openai")


def log_command(toks: list[str]) -> LogCommand | None:
    """The vLLM server command that ``toks`` start (``vllm serve``, the api_server module, or a ``vllm/vllm-openai``
    image followed by the server's arguments), read by vLLM's command parser, with vLLM's method aliases applied;
    None when ``toks`` start no vLLM server."""
    from mtp_audit.engines.vllm.launch.command import parse_vllm_command, vllm_entry

    toks = _image_args(toks)
    if vllm_entry(toks) is None:
        return None
    cmd = parse_vllm_command(toks, spec_shorthand=True)
    spec = cmd.spec if isinstance(cmd.spec, dict) else {}
    typed = spec.get("method")
    method, alias = _method(typed, spec.get("model"))
    draft = spec.get("model")
    if draft is None and method == "mtp" and spec.get("num_speculative_tokens") is not None:
        draft = cmd.model  # speculative.py:1252-1263: mtp drafts with the target model itself
    k = spec.get("num_speculative_tokens")
    return LogCommand("vllm", cmd.entry, typed=None if typed is None else str(typed), method=method, alias=alias,
                      draft=None if draft is None else str(draft), num_speculative_tokens=k if isinstance(k, int) else None,
                      model=cmd.model, notes=tuple(m for _, _, m in cmd.problems))


def _image_args(toks: list[str]) -> list[str]:
    """``vllm/vllm-openai[:tag] ARGS`` as the server command the image runs (its entry point is ``vllm serve``)."""
    if toks and PurePath(toks[0].split(":", 1)[0]).name in {PurePath(i).name for i in IMAGES} and "/" in toks[0]:
        return ["vllm", "serve", *toks[1:]]
    return toks


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


DIALECT = LogDialect(
    "vllm", "vLLM", WORDS, (), LINES, log_command, ("vllm serve", "vllm.entrypoints", "vllm-openai"),
    read=logread.read, fast=logread.fast, recognise=logread.recognise,
    deciding="a 'SpecDecoding metrics:' line (vLLM logs one per stats interval while requests run, unless "
             "--disable-log-stats) and the engine config line 'Initializing a V1 LLM engine ... speculative_config=...'",
    mtp_methods=MTP_METHODS, off_config="speculative_config=None",
    # vllm/logger.py _FORMAT "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s", datefmt "%m-%d %H:%M:%S";
    # the process tag "(EngineCore_DP0 pid=6838) " before it in multi-process runs
    prefixes=(r"\(\w{1,64} pid=\d{1,10}\)[ \t]{0,8}(?:[A-Z]{1,10}[ \t]{1,8}\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?[ \t]{1,8}"
              r"\[[^\]\n]{0,256}\]\s?)?",
              r"(?:[A-Z]{1,10}[ \t]{1,8})?\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?[ \t]{1,8}\[[\w.]{1,128}:\d{1,6}\]\s?"),
    stamps=(("month-day", r"(?:\(\w{1,64} pid=\d{1,10}\)[ \t]{0,8})?[A-Z]{4,8}[ \t]{1,4}(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"),),
    fatal=("EngineCore encountered a fatal error", "WorkerProc hit an exception", "EngineDeadError"),
    known_zero=(("model", lambda v: "nvfp4" in str(v).lower(),
                 "NVFP4 target with MTP: episodic exactly-0 % acceptance reported on SM120 (vllm-project/vllm#55357)"),
                ("quantization", lambda v: "fp4" in str(v).lower(),
                 "NVFP4 target with MTP: episodic exactly-0 % acceptance reported on SM120 (vllm-project/vllm#55357)")))
