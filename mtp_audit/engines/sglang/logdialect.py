"""SGLang's log dialect: the lines ``mtp-audit log`` reads, each with its format string and source at a release, and the
launch command read by SGLang's own command parser (:mod:`mtp_audit.engines.sglang.launch.command`, heuristic mode:
a log carries no option table) with SGLang's own algorithm alias applied.

Sources (SGLang 0.5.23 wheel, checked by ``tests/test_logdialect_sources.py``):

* ``sglang/srt/speculative/spec_registry.py:183``: ``_RESERVED_ALIASES = frozenset({"NEXTN"})``;
  ``sglang/srt/speculative/spec_info.py:60-61``: a reserved alias is ``SpeculativeAlgorithm.EAGLE``
  (``--speculative-algorithm NEXTN`` runs EAGLE with the checkpoint's NextN/MTP layer as the draft).
"""

from __future__ import annotations

from typing import Any

from mtp_audit.engines.base import LogCommand, LogDialect, LogLineFormat, LogMetrics, MetricSample
from mtp_audit.engines.sglang import logread

RELEASE = "0.5.23"
#: ``--speculative-algorithm`` values SGLang runs as another algorithm (spec_registry.py:183, spec_info.py:60-61).
ALIASES = {"NEXTN": "EAGLE"}
ALIAS_SOURCE = f"sglang/srt/speculative/spec_registry.py:183, spec_info.py:60-61 @ {RELEASE}"

LINES = (
    LogLineFormat("statistics", "Decode batch{iter_msg}, #running-req: {num_running_reqs}, {token_usage_msg}",
                  f"sglang/srt/managers/scheduler_components/metrics_reporter.py:963 @ {RELEASE}", " batch"),
    LogLineFormat("statistics", "accept len: {spec_accept_length:.2f}, accept rate: {spec_accept_rate:.2f}, ",
                  f"sglang/srt/managers/scheduler_components/metrics_reporter.py:1005 @ {RELEASE}", "ccept"),
    LogLineFormat("config", "server_args={_server_args_for_logging(server_args)}",
                  f"sglang/srt/entrypoints/engine.py:311 @ {RELEASE}", "_args="),
    LogLineFormat("draft-class", "Load weight end. ", f"sglang/srt/model_executor/model_runner.py:1373 @ {RELEASE}",
                  "Load weight end"),
    LogLineFormat("fatal", "Scheduler hit an exception: {traceback}", f"sglang/srt/managers/scheduler.py:6372 @ {RELEASE}",
                  "Scheduler hit"),
)

#: Substrings only SGLang prints.
WORDS = ("Decode batch", "Prefill batch", "server_args=", "Scheduler hit an exception", "sglang/srt/", "sglang.launch_server",
         "Load weight end. ")


def log_command(toks: list[str]) -> LogCommand | None:
    """The SGLang server command that ``toks`` start (``python -m sglang.launch_server``, ``sglang serve``), read by
    SGLang's command parser, with ``NEXTN`` -> ``EAGLE`` applied; None when ``toks`` start no SGLang server."""
    from mtp_audit.engines.sglang.launch.command import parse_command
    from mtp_audit.errors import InputError

    try:
        cmd = parse_command(toks, None)
    except InputError:
        return None
    typed = _text(cmd.get("--speculative-algorithm"))
    method = ALIASES.get(typed.upper(), typed.upper()) if typed else None
    steps = _text(cmd.get("--speculative-num-steps"))
    draft = _text(cmd.get("--speculative-draft-model-path", "--speculative-draft-model"))
    notes: tuple[str, ...] = ()
    if draft is None:
        draft, notes = _abbreviated(cmd.options, "--speculative-draft-model-path")
    return LogCommand("sglang", cmd.entry, typed=typed, method=method,
                      alias=ALIAS_SOURCE if typed and typed.upper() in ALIASES else None, draft=draft,
                      num_speculative_tokens=int(steps) if steps and steps.isdigit() else None,
                      model=_text(cmd.get("--model-path", "--model")), notes=notes)


def _abbreviated(options: list[Any], flag: str) -> tuple[str | None, tuple[str, ...]]:
    """The value of ``flag`` given as a prefix (``--speculative-draft``): SGLang's parser is an ``argparse`` parser with
    ``allow_abbrev`` on (``prepare_server_args``, ``sglang/srt/server_args.py``), so a prefix that is unique at the
    running release means ``flag``; a log does not say the release, so the reading says it rests on that."""
    hits = [o for o in options if len(o.flag) > 12 and o.flag != flag and flag.startswith(o.flag) and o.value is not None]
    if len(hits) != 1:
        return None, ()
    return _text(hits[0].value), (f"{hits[0].flag} read as {flag} (an argparse abbreviation, if unique at that release)",)


def _text(value: object) -> str | None:
    if isinstance(value, list):
        value = value[-1] if value else None
    return None if value is None or value == "true" else str(value)


#: SGLang's Prometheus samples (``--enable-metrics``): the last logging interval's accept length and rate (gauges) and
#: the verification steps (a counter).
METRICS = LogMetrics("SGLang", "gauges", (
    MetricSample("accept_length", "sglang:spec_accept_length",
                 f"sglang/srt/observability/metrics_collector.py:512 @ {RELEASE}"),
    MetricSample("accept_rate", "sglang:spec_accept_rate", f"sglang/srt/observability/metrics_collector.py:518 @ {RELEASE}"),
    MetricSample("verify_calls", "sglang:spec_verify_calls_total",
                 f"sglang/srt/observability/metrics_collector.py:1866 @ {RELEASE}"),
))

DIALECT = LogDialect(
    "sglang", "SGLang", WORDS, (), LINES, log_command, ("sglang.launch_server", "sglang serve"),
    read=logread.read, fast=logread.fast, recognise=logread.recognise,
    deciding="'Decode batch' lines ('accept len:' appears in them when a speculative algorithm runs) and the "
             "'server_args=' line",
    # NEXTN runs as EAGLE with the checkpoint's own NextN/MTP layer as the draft (spec_registry.py:183)
    mtp_methods=("nextn", "eagle"), off_config="speculative_algorithm=None", fatal=("Scheduler hit an exception",),
    # "[%(asctime)s%(prefix)s] " with the rank tags (" TP0 EP0") of sglang/srt/utils/common.py configure_logger
    prefixes=(r"\[\d{4}-\d\d-\d\d[ T][\d:.,]{1,32}(?: [A-Z_]{1,10}\d{1,4}){0,8}\]\s?",),
    # metrics_reporter.py:967 @ 0.5.23 writes the accept fields whenever a speculative algorithm is set
    no_speculation_words="{n} SGLang 'Decode batch' line{s} without 'accept len' from line {first} (SGLang writes it "
                         "whenever a speculative algorithm is set)",
    known_zero=(("draft_model", lambda v: "eagle3" in str(v).lower(),
                 "an EAGLE3 draft run under --speculative-algorithm EAGLE: accept length stays 1.0 "
                 "(sgl-project/sglang#21272; use EAGLE3)"),),
    metrics=METRICS)
