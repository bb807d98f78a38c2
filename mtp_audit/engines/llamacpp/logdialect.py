"""llama.cpp's log dialect (``llama-server``, ``llama-cli``, and the launchers that wrap them): the lines ``mtp-audit log``
reads, each with its format string and source at a release, and the launch command read by llama.cpp's command parser
(:mod:`mtp_audit.engines.llamacpp.command`).

Sources: the llama.cpp tree vendored in the ``llama-cpp-python`` 0.3.36 sdist (``vendor/llama.cpp/``, checked by
``tests/test_logdialect_sources.py``); the older statistics spellings from ggml-org/llama.cpp PR #24536 (2026-06,
``mean acceptance length = ..., acceptance rate per position = (...)``) and PR #14104 (``draft acceptance rate = ...``).
``common/speculative.cpp:33-45`` @ 0.3.36 names the ``--spec-type`` values (``draft-mtp`` runs the model's own MTP
head, or the drafter GGUF of ``-md``); ik_llama.cpp spells it ``mtp[:n_max=..]`` (ik_llama.cpp PR #2369).
"""

from __future__ import annotations

from mtp_audit.engines.base import LogCommand, LogDialect, LogLineFormat, LogMetrics, MetricSample
from mtp_audit.engines.llamacpp import logread

RELEASE = "llama-cpp-python 0.3.36 (vendor/llama.cpp)"

LINES = (
    LogLineFormat("statistics", "draft acceptance = %0.5f (%5d accepted / %5d generated), mean len = %5.2f\n",
                  f"tools/server/server-context.cpp:647 @ {RELEASE}", "ccept"),
    LogLineFormat("unused-tensor", "model has unused tensor %s (size = %zu bytes) -- ignoring\n",
                  f"src/llama-model-loader.cpp:1180 @ {RELEASE}", "-- ignoring"),
    LogLineFormat("draft-load-failure", "failed to load draft model, '%s'\n", f"tools/server/server-context.cpp:1118 @ {RELEASE}",
                  "failed to load"),
    LogLineFormat("draft-load-failure", "%s: failed to load draft model, '%s'\n", f"common/speculative.cpp:2544 @ {RELEASE}",
                  "failed to load"),
    LogLineFormat("arch-unknown", "unknown model architecture: '", f"src/llama-model.cpp:371 @ {RELEASE}", "architecture"),
    LogLineFormat("load-failure", "%s: error loading model: %s\n", f"src/llama.cpp:375 @ {RELEASE}", "rror"),
    LogLineFormat("fatal", "GGML_ASSERT(%s) failed", f"ggml/include/ggml.h:288 @ {RELEASE}", "GGML_ASSERT"),
    LogLineFormat("version", "%s: build %d (%s) with %s for %s%s\n", f"common/common.cpp:402 @ {RELEASE}", "build"),
)

#: Substrings only llama.cpp prints (its log prefixes and its own words).
WORDS = ("print_info:", "load_tensors:", "llama_model_loader:", "common_speculative", "draft acceptance", "unused tensor",
         "llama_context:", "ggml_cuda_init:", "srv  ", "slot launch_slot_", "GGML_ASSERT", "llama-server", "llama_model_load:")

#: Launchers that wrap llama.cpp and print their own lines around its output (named in the report).
WRAPPERS = (("ollama", "Ollama"), ("Ollama", "Ollama"), ("LocalAI", "LocalAI"), ("local-ai", "LocalAI"),
            ("localai", "LocalAI"), ("lemonade", "Lemonade"), ("Lemonade", "Lemonade"), ("KoboldCpp", "KoboldCpp"),
            ("koboldcpp", "KoboldCpp"))


def log_command(toks: list[str]) -> LogCommand | None:
    """The ``llama-server`` / ``llama-cli`` command that ``toks`` start, read by llama.cpp's command parser: the
    ``--spec-type`` value(s) as the method (``draft-mtp``; ik_llama.cpp's ``mtp``), ``-md`` as the draft,
    ``--spec-draft-n-max`` as k; None when ``toks`` start no llama.cpp program."""
    from mtp_audit.engines.llamacpp.command import is_llamacpp, parse_command
    from mtp_audit.errors import InputError

    prog = is_llamacpp(toks)
    if prog is None:
        return None
    try:
        cmd = parse_command(toks)
    except InputError as exc:
        return LogCommand(logread.ENGINE, prog, notes=(str(exc),))
    names = cmd.spec_names
    typed = ",".join(names) if names else ("--spec-default" if cmd.spec_default else None)
    return LogCommand(logread.ENGINE, prog, typed=typed, method=typed, draft=cmd.draft_model,
                      num_speculative_tokens=cmd.n_max, model=cmd.model or cmd.hf_repo)


#: llama-server's Prometheus counters (``--metrics``), one series per server, no labels but ``position``: the names at
#: ``tools/server/server-task.cpp:1554-1564``, written with the ``llamacpp:`` prefix at ``server-task.cpp:1596-1598``;
#: the per-position counter at ``server-task.cpp:1606-1613``. ``drafts`` are verification steps ("Total speculative
#: decoding verification steps"): the mean acceptance length is ``1 + accepted / drafts``, as llama-server's own log
#: line computes it (``tools/server/server-context.cpp:634``). Older llama-server releases export no speculative counter
#: (llama-cpp-python 0.3.16's ``tools/server/server.cpp:4058-4103`` has none).
METRICS = LogMetrics("llama-server", "counters", (
    MetricSample("drafted", "llamacpp:spec_decode_num_draft_tokens_total", f"tools/server/server-task.cpp:1554 @ {RELEASE}"),
    MetricSample("accepted", "llamacpp:spec_decode_num_accepted_tokens_total",
                 f"tools/server/server-task.cpp:1558 @ {RELEASE}"),
    MetricSample("drafts", "llamacpp:spec_decode_num_drafts_total", f"tools/server/server-task.cpp:1562 @ {RELEASE}"),
    MetricSample("per_pos", "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
                 f"tools/server/server-task.cpp:1611 @ {RELEASE}"),
))

DIALECT = LogDialect(
    logread.ENGINE, "llama.cpp", WORDS, WRAPPERS, LINES, log_command, ("llama-server", "llama-cli", "llama_server"),
    read=logread.read, recognise=logread.recognise,
    deciding="the 'draft acceptance = ... accepted / ... generated' line llama-server prints at the end of each request",
    mtp_methods=("draft-mtp", "mtp"), native_fatal=("GGML_ASSERT",),
    # common/log.cpp: time since start "M.SS.mmm.uuu" and the level letter, with timestamps on (llama-server's default)
    prefixes=(r"\d{1,6}\.\d\d\.\d\d\d\.\d\d\d [IWED] ",),
    stamps=(("since-start", r"(\d{1,6})\.(\d\d)\.(\d\d\d)\.\d\d\d [IWED] "),),
    unused_advice="the MTP/NextN head was loaded but no draft ran (--spec-type draft-mtp not given, or no draft-mtp "
                  "graph for this architecture)",
    source_causes=(("slot ", "slot 0", "a llama-server slot other than 0 drafting (llama.cpp#27572: drafts of slots > 0 "
                                       "were not armed)"),),
    zero_causes=("a backend/driver problem in the draft graph (llama.cpp#27151 was RADV_DEBUG=nocompute on Vulkan)",),
    metrics=METRICS)
