"""Rules of ``mtp-audit log`` (MTP500-MTP549): what an engine's own log and metrics say about MTP.

Registered under the analyzer name ``"log"`` (``ANALYZER_RULE_MODULES`` / ``ID_RANGES`` in
:mod:`mtp_audit.report.rules`); every finding answers the question :data:`mtp_audit.report.questions.RUNTIME` (did
the heads draft at run time, and what was accepted). Every example is a real excerpt from a public report (the URL is in
its note); :mod:`mtp_audit.runtime.examples` runs it through :func:`mtp_audit.runtime.analyze.analyze_log`.
"""

from __future__ import annotations

from mtp_audit.report import Severity
from mtp_audit.report.questions import RUNTIME
from mtp_audit.report.rules import Example, Rule

ANALYZER = "log"

# Real excerpts (verbatim lines) used by the examples, named by what they show; the public report each comes from
# (and so its engine) follows it.
HEALTHY = (
    "(APIServer pid=2523786) INFO 05-30 15:21:33 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 3.28, "
    "Accepted throughput: 47.40 tokens/s, Drafted throughput: 62.39 tokens/s, Accepted: 474 tokens, Drafted: 624 tokens, "
    "Per-position acceptance rate: 0.938, 0.769, 0.572, Avg Draft acceptance rate: 76.0%\n"
)  # vllm-project/vllm-ascend#9803
LLAMA_1_OF_633 = (
    "1.38.855.991 I slot print_timing: id  0 | task 0 |    graphs reused =        209\n"
    "1.38.855.993 I slot print_timing: id  0 | task 0 | draft acceptance = 0.00158 (    1 accepted /   633 generated), mean len =  1.00\n"
)  # ggml-org/llama.cpp#27151
SGL_NO_SPEC = (
    "[2025-03-11 16:44:27] [2025-03-11 01:44:27 TP0] Decode batch. #running-req: 5, #token: 266623, token usage: 0.61, "
    "gen throughput (token/s): 136.00, #queue-req: 0\n"
)  # sgl-project/sglang#4305
SGL_SPEC = (
    "[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: 3.05, "
    "accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2\n"
)  # sgl-project/sgl-kernel-npu#608
SGL_CRASH = (
    '2025-07-25T07:53:08.21748708+08:00 stdout F [2025-07-25 07:53:08 TP2] Scheduler hit an exception: Traceback (most recent call last):\n'
    '2025-07-25T07:53:08.217498394+08:00 stdout F   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1756, in run_batch\n'
    '2025-07-25T07:53:08.217499858+08:00 stdout F     ) = self.draft_worker.forward_batch_speculative_generation(batch)\n'
    '2025-07-25T07:53:08.217501559+08:00 stdout F   File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 325, in forward_batch_speculative_generation\n'
)  # sgl-project/sglang#8336
LLAMA_UNUSED = "".join(
    f"model has unused tensor blk.46.{name} (size = {size} bytes) -- ignoring\n"
    for name, size in (("attn_norm.weight", 16384), ("attn_q.weight", 53477376), ("attn_k.weight", 4456448),
                       ("attn_v.weight", 4456448), ("ffn_gate_exps.weight", 605552640))
)  # lemonade-sdk/llamacpp-rocm#9 (GLM-4.5-Air)
CLIENT = (
    "  code_python        pred= 192 draft= 144 acc= 118 rate=0.819 tok/s=13.3\n"
    "  code_cpp           pred= 192 draft= 142 acc= 120 rate=0.845 tok/s=13.7\n"
)  # ggml-org/llama.cpp#23269 (mtp-bench.py client)
V0_RUNNING_TOTALS = (
    "INFO 02-06 03:05:53 metrics.py:475] Speculative metrics: Draft acceptance rate: 0.200, System efficiency: 0.167, "
    "Number of speculative tokens: 5, Number of accepted tokens: 1, Number of draft tokens: 5, Number of emitted tokens: 1.\n"
    "INFO 02-06 03:18:09 metrics.py:475] Speculative metrics: Draft acceptance rate: 0.067, System efficiency: 0.167, "
    "Number of speculative tokens: 5, Number of accepted tokens: 1, Number of draft tokens: 15, Number of emitted tokens: 3.\n"
)  # vllm-project/vllm#7301 (comment of 2025-02-06)
SPEC613_LINE1 = (
    "(APIServer pid=76938) INFO 06-30 18:16:28 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 1.34, "
    "Accepted throughput: 0.69 tokens/s, Drafted throughput: 30.29 tokens/s, Accepted: 49 tokens, Drafted: 2160 tokens, "
    "Per-position acceptance rate: 0.340, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, "
    "0.000, 0.000, 0.000, Avg Draft acceptance rate: 2.3%\n"
)  # vllm-project/speculators#613
ASCEND12521 = (
    "(APIServer pid=95669) INFO 07-20 18:11:49 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.87, "
    "Accepted throughput: 9.40 tokens/s, Drafted throughput: 15.10 tokens/s, Accepted: 282 tokens, Drafted: 453 tokens, "
    "Per-position acceptance rate: 0.821, 0.609, 0.437, Avg Draft acceptance rate: 62.3%\n"
)  # vllm-project/vllm-ascend#12521
DFLASH_DECAY = "".join(
    f"(APIServer pid=76938) INFO 06-30 18:16:{s} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {m}, "
    f"Accepted: {a} tokens, Drafted: {d} tokens, Avg Draft acceptance rate: {r}%\n"
    for s, m, a, d, r in (("28", "1.34", 49, 2160, "2.3"), ("38", "1.22", 57, 3945, "1.4"), ("48", "1.17", 45, 3960, "1.1"))
)  # vllm-project/speculators#613 (fields as printed; the Per-position lists left out)


def _log(text: str) -> dict[str, str]:
    return {"server.log": text}


RULES: tuple[Rule, ...] = (
    Rule(
        id="MTP500", name="log-mtp-accepted-nothing", analyzer=ANALYZER, severity=Severity.ERROR, question=RUNTIME,
        summary="MTP drafted but the target accepted (almost) no draft token",
        what="Sums the accepted and drafted tokens of every speculative statistics line of the run (vLLM "
             "`SpecDecoding metrics`, SGLang `Decode batch ... accept len`, llama-server `draft acceptance`) and "
             "flags an overall acceptance below 3 % or a mean acceptance length below 1.05, from 21 verification steps on "
             "(fewer drafted tokens are could-not-tell: 0 accepted of so few is plausible at a healthy acceptance).",
        why="Every decode step pays for the draft heads and the verification of their tokens, and gets nothing "
            "back: the server is slower than without MTP. The usual causes are draft weights missing or randomly "
            "initialised, a draft quantized against its exclude list, or an engine bug of that release.",
        fix="Check the draft's weights (`mtp-audit checkpoint`), its quantization, and the engine version's known "
            "MTP bugs; until fixed, run without speculative decoding.",
        sources=("https://github.com/ggml-org/llama.cpp/issues/27151", "https://github.com/vllm-project/vllm/issues/55357",
                 "https://github.com/NVIDIA/TensorRT-LLM/issues/18662", "vllm/v1/spec_decode/metrics.py:121-128 @ v0.33.0"),
        basis="bug report",
        examples=(Example(True, _log(LLAMA_1_OF_633), note="llama.cpp#27151: 1 of 633 drafts accepted"),
                  Example(False, _log(HEALTHY), note="vllm-ascend#9803: mean acceptance length 3.28")),
    ),
    Rule(
        id="MTP501", name="log-mtp-never-ran", analyzer=ANALYZER, severity=Severity.WARNING, question=RUNTIME,
        summary="The log shows the engine serving without speculative decoding",
        what="Flags a log whose engine says speculation is off: SGLang `Decode batch` lines without `accept len` "
             "(the field is written only when a speculative algorithm is set), a vLLM engine config with "
             "`speculative_config=None`, an SGLang `speculative_algorithm=None`, or llama.cpp loading the MTP/NextN "
             "block as unused tensors with no draft statistics.",
        why="The MTP heads were shipped and loaded (or could have been) but no token was drafted: the deployment "
            "runs at plain decoding speed.",
        fix="Enable speculative decoding (SGLang `--speculative-algorithm EAGLE`/`NEXTN`, vLLM `--speculative-config "
            "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'`, llama-server `--spec-type draft-mtp`).",
        sources=("sglang/srt/managers/scheduler_components/metrics_reporter.py:963-1005 @ 0.5.23",
                 "vllm/v1/engine/core.py:140 @ v0.33.0", "https://github.com/ggml-org/llama.cpp/pull/26296"),
        basis="code",
        examples=(Example(True, _log(SGL_NO_SPEC), note="sglang#4305: Decode batch lines without accept len"),
                  Example(False, _log(SGL_SPEC), note="sgl-kernel-npu#608: accept len 3.05")),
    ),
    Rule(
        id="MTP502", name="log-mtp-stopped", analyzer=ANALYZER, severity=Severity.ERROR, question=RUNTIME,
        summary="Speculative decoding ran, then the engine crashed or switched it off",
        what="Flags a crash whose frames run speculative-decoding code, or that comes after the last speculative "
             "statistics line, and a TensorRT-LLM message that its `acceptance_rate_threshold` turned speculation off.",
        why="The server stopped serving (crash) or silently fell back to plain decoding (threshold).",
        fix="Read the exception and frame named in the finding; search the engine's tracker for it; for the "
            "threshold, lower `acceptance_rate_threshold` or fix what made acceptance drop.",
        sources=("sglang/srt/managers/scheduler.py:6372 @ 0.5.23", "https://github.com/sgl-project/sglang/issues/8336",
                 "TensorRT-LLM 1.4.0rc4 LLM API reference, MTPDecodingConfig.acceptance_rate_threshold"),
        basis="code",
        examples=(Example(True, _log(SGL_CRASH), note="sglang#8336: traceback through forward_batch_speculative_generation"),
                  Example(False, _log(SGL_SPEC), note="healthy decode lines")),
    ),
    Rule(
        id="MTP503", name="log-acceptance-decays", analyzer=ANALYZER, severity=Severity.WARNING, question=RUNTIME,
        summary="Acceptance falls over the log (last third well below the first)",
        what="Compares the mean acceptance length (or rate) of the first and last thirds of the statistics lines "
             "and flags a fall of more than 25 %.",
        why="Acceptance that decays with context (Qwen3.5/3.6 MTP at 32K+, vLLM 47602, SGLang 30763) can turn MTP "
            "into a net loss for long requests.",
        fix="Limit speculation to shorter contexts or fewer draft tokens; compare with a run without MTP at the same context.",
        sources=("https://github.com/vllm-project/vllm/issues/47602", "https://github.com/sgl-project/sglang/issues/30763"),
        basis="bug report",
        examples=(Example(True, _log(HEALTHY * 2 + ASCEND12521 * 2 + SPEC613_LINE1.replace(" 06-30 ", " 07-21 ") * 2),
                          note="real lines of vllm-ascend#9803 (3.28), #12521 (2.87), speculators#613 (1.34) in that order "
                               "(the last one's date moved after the second's, so time runs forward)"),
                  Example(False, _log(HEALTHY * 6), note="steady 3.28")),
    ),
    Rule(
        id="MTP504", name="log-acceptance-low", analyzer=ANALYZER, severity=Severity.WARNING, question=RUNTIME,
        summary="MTP drafts and some tokens are accepted, but the mean acceptance length is below 1.5",
        what="Flags a run whose mean acceptance length is under 1.5 tokens per step (but above the "
             "accepted-nothing threshold of MTP500).",
        why="Below about 1.5 the draft and verification cost often outweighs the accepted tokens.",
        fix="Try fewer draft tokens (1 or 2) and measure throughput with and without MTP.",
        sources=("https://github.com/vllm-project/vllm/issues/47277",),
        basis="bug report",
        examples=(Example(True, _log(V0_RUNNING_TOTALS), note="vllm#7301 (V0 running totals): 1 of 15 draft tokens, k=5: 1.33"),
                  Example(False, _log(HEALTHY), note="3.28 mean length")),
    ),
    Rule(
        id="MTP505", name="log-zero-acceptance-intervals", analyzer=ANALYZER, severity=Severity.WARNING,
        question=RUNTIME,
        summary="Some statistics intervals accepted nothing while others accepted drafts",
        what="Counts the intervals (or llama-server requests) with zero accepted tokens in a run that otherwise accepts.",
        why="Episodic 0 % acceptance (vLLM 55357, llama.cpp 27572 under -np N, SGLang under full batches) points to "
            "an engine state bug, not to a weak draft head.",
        fix="Note the lines named in the finding; correlate them with concurrency and restarts; report upstream.",
        sources=("https://github.com/vllm-project/vllm/issues/55357", "https://github.com/ggml-org/llama.cpp/issues/27572"),
        basis="bug report",
        examples=(Example(True, _log(HEALTHY + HEALTHY.replace("Accepted: 474", "Accepted: 0").replace("3.28", "1.00")),
                          note="one interval at 0 accepted"),
                  Example(False, _log(HEALTHY * 2), note="all intervals accept")),
    ),
    Rule(
        id="MTP506", name="log-mtp-tensors-unused", analyzer=ANALYZER, severity=Severity.WARNING, question=RUNTIME,
        summary="llama.cpp loaded the MTP/NextN block as unused tensors",
        what="Reads llama.cpp's `model has unused tensor blk.N...` lines and names the block that was left unused "
             "as a whole (its tensors carry `nextn`, or it is the block after the last trunk layer).",
        why="The GGUF carries the MTP head, but llama-server drafts with it only under `--spec-type draft-mtp` and "
            "only for architectures with a draft-mtp graph; otherwise the bytes are loaded for nothing.",
        fix="Start llama-server with `--spec-type draft-mtp` (architectures with a draft-mtp graph), or use a GGUF "
            "without the MTP block to save memory.",
        sources=("https://github.com/ggml-org/llama.cpp/pull/26296", "https://github.com/lemonade-sdk/llamacpp-rocm/issues/9"),
        basis="bug report",
        examples=(Example(True, _log(LLAMA_UNUSED), note="GLM-4.5-Air blk.46 (NextN) unused"),
                  Example(False, _log(LLAMA_1_OF_633), note="no unused tensors")),
    ),
    Rule(
        id="MTP507", name="log-engine-crash", analyzer=ANALYZER, severity=Severity.ERROR, question=RUNTIME,
        summary="The engine crashed; the last exception and its frame are named",
        what="Finds tracebacks (also cut ones and ones inside container or process prefixes) and fatal runtime "
             "messages, and names the exception and the innermost frame. An error line alone is not a crash.",
        why="A crash ends serving; the exception and frame tell which component failed.",
        fix="Search the engine's tracker for the exception and frame; a cut traceback needs the lines after it.",
        sources=("sglang/srt/managers/scheduler.py:6372 @ 0.5.23", "vllm/v1/executor/multiproc_executor.py:1189 @ v0.33.0"),
        basis="code",
        examples=(Example(True, _log(SGL_CRASH), note="sglang#8336"),
                  Example(False, _log("[2026-05-28 02:59:59] ERROR: request aborted by client\n" + SGL_SPEC),
                          note="an error line alone is not a crash")),
    ),
    Rule(
        id="MTP508", name="log-benchmark-client-lines", analyzer=ANALYZER, severity=Severity.INFO, question=RUNTIME,
        summary="Benchmark-client acceptance lines were found: kept apart as the client's figures",
        what="Recognises the summaries printed by benchmark clients (llama.cpp's mtp-bench.py `pred= draft= acc= rate=`, "
             "`sglang.bench_serving` `Accept length:`, `vllm bench serve` `Acceptance rate (%):`). They are never mixed "
             "with the engine's statistics; when the engine printed none, the verdict is taken from them and says so.",
        why="Those numbers are computed by the client, not reported by the engine; mixing them in would double count.",
        fix="Nothing to fix; paste the server's own log for the engine's figures.",
        sources=("vllm/benchmarks/serve.py:1473-1478 @ v0.33.0", "https://github.com/ggml-org/llama.cpp/pull/23269"),
        basis="code",
        examples=(Example(True, _log(CLIENT), note="mtp-bench.py lines"), Example(False, _log(HEALTHY), note="engine line")),
    ),
    Rule(
        id="MTP509", name="log-several-runs", analyzer=ANALYZER, severity=Severity.INFO, question=RUNTIME,
        summary="The log holds several engine runs; the verdict is for the last one (the latest in time)",
        what="Detects a second engine start (vLLM engine config, SGLang server_args, llama-server build line) after "
             "statistics or a crash of an earlier run, SGLang `Decode batch` lines without `accept len` after lines "
             "with it (SGLang writes the field whenever a speculative algorithm is set: a process started without "
             "one), and time going back between line stamps (rotated logs "
             "concatenated out of order, or llama.cpp's time since start beginning again); when an earlier run in "
             "the file is later in time, that run is reported. Several files given together follow the same rule "
             "(the last file given that decided, or an earlier one later in time), and the finding names every "
             "other file's own verdict.",
        why="Two runs pasted together would otherwise mix a broken run's acceptance with a fixed one's.",
        fix="Paste one run per file, or read the earlier runs' figures in the JSON facts.",
        sources=("vllm/v1/engine/core.py:140 @ v0.33.0", "sglang/srt/entrypoints/engine.py:311 @ 0.5.23"),
        basis="code",
        examples=(Example(True, _log(
            "(EngineCore_DP0 pid=6838) INFO 04-27 04:07:34 [core.py:97] Initializing a V1 LLM engine (v0.14.1.dev0+gb17039bcc.d20260311) with config: model='/llm/models/Qwen3.5-9B', speculative_config=SpeculativeConfig(method='mtp', model='/llm/models/Qwen3.5-9B', num_spec_tokens=2), seed=0\n"
            + HEALTHY
            + "(EngineCore_DP0 pid=6900) INFO 04-27 05:07:34 [core.py:97] Initializing a V1 LLM engine (v0.14.1.dev0+gb17039bcc.d20260311) with config: model='/llm/models/Qwen3.5-9B', speculative_config=SpeculativeConfig(method='mtp', model='/llm/models/Qwen3.5-9B', num_spec_tokens=2), seed=0\n"
            + HEALTHY), note="intel/llm-scaler#386 config line, two starts"),
                  Example(False, _log(HEALTHY * 2), note="one run")),
    ),
    Rule(
        id="MTP520", name="metrics-acceptance-window", analyzer=ANALYZER, severity=Severity.INFO, question=RUNTIME,
        summary="Acceptance over the window between two reads of the engine's Prometheus endpoint",
        what="Reads the speculative-decoding counters (vLLM `vllm:spec_decode_num_accepted_tokens_total`, "
             "`vllm:spec_decode_num_draft_tokens_total`, `vllm:spec_decode_num_drafts_total`; SGLang "
             "`sglang:spec_accept_length` gauge) twice and reports the acceptance between the reads.",
        why="A log may be rotated or silent; the counters of a running server answer the same question now.",
        fix="Nothing to fix; an acceptance near 0 is reported by MTP500.",
        sources=("vllm/v1/spec_decode/metrics.py:229-231 @ v0.33.0", "sglang/srt/observability/metrics_collector.py:511-518 @ 0.5.23"),
        basis="code",
        examples=(Example(True, _log(HEALTHY), args=("--metrics-fixture",), note="two scrapes of a vLLM server"),
                  Example(False, _log(HEALTHY), note="no --metrics")),
    ),
    Rule(
        id="MTP530", name="launch-log-agrees", analyzer=ANALYZER, severity=Severity.INFO, question=RUNTIME,
        summary="The log shows what the launch audit predicted",
        what="Holds the prediction of `mtp-audit launch` (speculative algorithm, draft tokens) against the "
             "configuration the engine printed and the statistics of the log.",
        why="Agreement is evidence the prediction is right for this deployment.",
        fix="Nothing to fix.",
        sources=("vllm/v1/engine/core.py:140 @ v0.33.0", "sglang/srt/entrypoints/engine.py:311 @ 0.5.23"),
        basis="code",
        examples=(Example(True, _log(HEALTHY), args=("--predict", "vllm", "mtp"), note="predicted MTP, statistics seen"),
                  Example(False, _log(HEALTHY), note="no prediction given")),
    ),
    Rule(
        id="MTP531", name="launch-log-disagrees", analyzer=ANALYZER, severity=Severity.WARNING, question=RUNTIME,
        summary="The log contradicts what the launch audit predicted",
        what="Each field where the engine's printed configuration or its behaviour differs from the prediction of "
             "`mtp-audit launch` is one finding (the prediction is then the bug to fix).",
        why="A prediction that the log contradicts would mislead every later audit of this deployment.",
        fix="Report the disagreement with both the command and the log; the prediction is the bug to fix.",
        sources=("vllm/v1/engine/core.py:140 @ v0.33.0", "sglang/srt/entrypoints/engine.py:311 @ 0.5.23"),
        basis="code",
        examples=(Example(True, _log(SGL_NO_SPEC), args=("--predict", "sglang", "EAGLE"), note="predicted EAGLE, decode without speculation"),
                  Example(False, _log(SGL_SPEC), args=("--predict", "sglang", "EAGLE"), note="predicted EAGLE, accept len seen")),
    ),
)

# Two reads of a vLLM /metrics endpoint for the MTP520 example: the metric names and label set of vLLM's
# spec-decode counters (vllm/v1/spec_decode/metrics.py:229-255 @ v0.33.0; labels as in vllm-project/vllm#24049,
# engine "0", model_name "/home/models/Qwen3-0.6B"), in prometheus_client's exposition format. The drafts
# count 22 and position-0 count 7 of the second read are the values shown in #24049; the rest are chosen.
_LBL = 'engine="0",model_name="/home/models/Qwen3-0.6B"'
METRICS_BEFORE = (
    "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n# TYPE vllm:spec_decode_num_drafts_total counter\n"
    f"vllm:spec_decode_num_drafts_total{{{_LBL}}} 10.0\n"
    "# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.\n# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
    f"vllm:spec_decode_num_draft_tokens_total{{{_LBL}}} 30.0\n"
    "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.\n# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
    f"vllm:spec_decode_num_accepted_tokens_total{{{_LBL}}} 4.0\n"
    "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.\n"
    "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
    f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{_LBL},position=\"0\"}} 3.0\n"
)
METRICS_AFTER = (
    METRICS_BEFORE.replace(" 10.0\n", " 22.0\n").replace(" 30.0\n", " 66.0\n").replace(" 4.0\n", " 9.0\n")
    .replace(" 3.0\n", " 7.0\n")
)
