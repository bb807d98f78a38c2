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

from mtp_audit.engines.base import LogCommand, LogDialect, LogLineFormat, LogMetrics, MetricSample
from mtp_audit.engines.vllm import logread
from mtp_audit.engines.vllm.logread import ALIAS_SOURCE, MTP_METHODS, RELEASE, spec_command

__all__ = ["ALIAS_SOURCE", "DIALECT", "MTP_METHODS", "RELEASE", "log_command"]

LINES = (
    LogLineFormat("statistics", "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, "
                  "Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance "
                  "rate: %s, Avg Draft acceptance rate: %.1f%%", f"vllm/v1/spec_decode/metrics.py:121-128 @ {RELEASE}",
                  "SpecDecoding metrics"),
    LogLineFormat("config", "Initializing a V1 LLM engine (v%s) with config: %s", f"vllm/v1/engine/core.py:140 @ {RELEASE}",
                  "LLM engine (v"),
    LogLineFormat("command", "non-default args: %s", f"vllm/entrypoints/common/startup.py:96 @ {RELEASE}", "default args"),
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
         "vLLM API server version", "site-packages/vllm/", "Resolved architecture: ", "Sharing target model ",
         "non-default args: ")

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
    return spec_command(cmd.entry, spec, cmd.model, tuple(m for _, _, m in cmd.problems))



def _image_args(toks: list[str]) -> list[str]:
    """``vllm/vllm-openai[:tag] ARGS`` as the server command the image runs (its entry point is ``vllm serve``)."""
    if toks and PurePath(toks[0].split(":", 1)[0]).name in {PurePath(i).name for i in IMAGES} and "/" in toks[0]:
        return ["vllm", "serve", *toks[1:]]
    return toks


#: vLLM's Prometheus counters (prometheus_client adds ``_total``), one series per engine core (label ``engine``).
METRICS = LogMetrics("vLLM", "counters", (
    MetricSample("drafts", "vllm:spec_decode_num_drafts_total", f"vllm/v1/spec_decode/metrics.py:229 @ {RELEASE}"),
    MetricSample("drafted", "vllm:spec_decode_num_draft_tokens_total", f"vllm/v1/spec_decode/metrics.py:230 @ {RELEASE}"),
    MetricSample("accepted", "vllm:spec_decode_num_accepted_tokens_total", f"vllm/v1/spec_decode/metrics.py:231 @ {RELEASE}"),
    MetricSample("per_pos", "vllm:spec_decode_num_accepted_tokens_per_pos_total",
                 f"vllm/v1/spec_decode/metrics.py:255 @ {RELEASE}"),
))

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
                 "NVFP4 target with MTP: episodic exactly-0 % acceptance reported on SM120 (vllm-project/vllm#55357)")),
    metrics=METRICS)
