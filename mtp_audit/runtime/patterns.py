"""The log lines of each engine, as regular expressions, each with the engine source that prints it.

Fields are matched one by one (never one regex per whole line), so a line whose columns were cut by
a terminal, reordered by a release, or wrapped by a paste still yields the fields it has.

Sources (release tag, file:line):

vLLM
    * ``vllm/v1/engine/core.py:140`` @ v0.33.0: ``Initializing a V1 LLM engine (v%s) with config: %s``;
      the config's ``speculative_config`` is ``SpeculativeConfig(method=..., model=..., num_spec_tokens=...)``
      (``vllm/config/speculative.py:2210`` @ v0.33.0) or ``None``. V0 spelled it ``Initializing an LLM engine``.
    * ``vllm/v1/spec_decode/metrics.py:121-128`` @ v0.33.0: ``SpecDecoding metrics: Mean acceptance length: %.2f,
      Accepted throughput: %.2f tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens,
      Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%``; v0.9.2 (``metrics.py:88-89``) led with
      ``Draft acceptance rate: %.1f%%``; V0 (``vllm/spec_decode/metrics.py:526`` @ v0.8.5) wrote ``Speculative metrics:
      Draft acceptance rate: %.3f, ..., Number of accepted tokens: %d, Number of draft tokens: %d``.
    * ``vllm/config/model.py:744`` @ v0.33.0: ``Resolved architecture: %s`` (target first, then the draft).
    * ``vllm/v1/spec_decode/llm_base_proposer.py:1472,1522,1540`` @ v0.33.0: ``Detected MTP model. Sharing target
      model embedding weights with the draft model.``, ``Sharing target model lm_head weights with the draft model.``
    * ``vllm/v1/engine/core.py:1586`` and ``vllm/v1/executor/multiproc_executor.py:1189`` @ v0.33.0:
      ``EngineCore encountered a fatal error.`` / ``WorkerProc hit an exception.`` (crash markers).

SGLang
    * ``sglang/srt/managers/scheduler_components/metrics_reporter.py:963,1005`` @ 0.5.23: ``Decode batch[ [iter]],
      #running-req: ..., accept len: %.2f, accept rate: %.2f, ...`` -- the accept fields are written only when a
      speculative algorithm is set (``if self.scheduler.spec_algorithm.is_none()``, line 967), so Decode batch lines
      without them mean speculation was off; ``sglang/srt/managers/scheduler_metrics_mixin.py:249,270`` @ 0.5.4 has the
      same fields; releases before 2025-06 wrote ``Decode batch.`` (sgl-project/sglang#4305 log).
    * ``sglang/srt/entrypoints/engine.py:311`` @ 0.5.23: ``server_args={...}`` (a dict); older releases printed
      ``server_args=ServerArgs(...)``.
    * ``sglang/srt/model_executor/model_runner.py:1373`` @ 0.5.23: ``Load weight end. elapsed=..., type=<class>, ...``.
    * ``sglang/srt/managers/scheduler.py:6372`` @ 0.5.23: ``Scheduler hit an exception: <traceback>``.

llama.cpp (llama-server)
    * ``tools/server/server-context.cpp`` (ggml-org/llama.cpp PR #24536, 2026-06): ``draft acceptance = %0.5f (%5d
      accepted / %5d generated), mean acceptance length = %5.2f, acceptance rate per position = (...)``; later
      builds shortened it to ``..., mean len = %5.2f`` (PR #27342 log); builds before 2025-06 wrote
      ``draft acceptance rate = %0.5f (%5d accepted / %5d generated)`` (PR #14104).
    * ``src/llama-model-loader.cpp``: ``model has unused tensor %s (size = %zu bytes) -- ignoring``.
    * ``build: %d (%s) with ...`` at start (``common/common.cpp`` @ llama-cpp-python 0.3.36 writes ``%s: build %d (%s)
      with %s for %s%s``, line 402); ``version: ... (build N, commit X)`` from ``--version``.

TensorRT-LLM
    * the ``[TRT-LLM]`` / ``[TensorRT-LLM]`` logger prefix; ``MTPDecodingConfig`` and ``acceptance_rate_threshold``
      (TensorRT-LLM 1.4.0rc4 LLM API reference, MTPDecodingConfig). No public 2026 log with per-interval
      acceptance was found, so no TensorRT-LLM statistics line is parsed.
"""

from __future__ import annotations

import re

# --- vLLM ---------------------------------------------------------------------------------------
VLLM_ENGINE_INIT = re.compile(r"Initializing an? (?:V1 )?LLM engine \(v([^)\s]{1,64})\) with config: ?(.*)")
VLLM_SERVER_VERSION = re.compile(r"vLLM API server version ([0-9][\w.+-]*)")
VLLM_SPEC_CONFIG = re.compile(r"speculative_config=(None|SpeculativeConfig\(([^()]{0,4096})\))")
VLLM_SPEC_STATS = re.compile(r"SpecDecoding metrics:|Speculative metrics:|Mean acceptance length:|Per-position acceptance rate:")
VLLM_MEAN_LEN = re.compile(r"Mean acceptance length:\s*([0-9.]+)")
VLLM_ACCEPTED = re.compile(r"\bAccepted:\s*([0-9]+) tokens|Number of accepted tokens:\s*([0-9]+)")
VLLM_DRAFTED = re.compile(r"Drafted:\s*([0-9]+) tokens|Number of draft tokens:\s*([0-9]+)")
VLLM_ACC_TPUT = re.compile(r"Accepted throughput:\s*([0-9.]+)")
VLLM_DRAFT_TPUT = re.compile(r"Drafted throughput:\s*([0-9.]+)")
VLLM_V0_K = re.compile(r"Number of speculative tokens:\s*(\d+)")
VLLM_RATE = re.compile(r"Draft acceptance rate:\s*([0-9.]+)(%?)")
VLLM_PER_POS = re.compile(r"Per-position acceptance rate:\s*([0-9.,\s]+)")
VLLM_ARCH = re.compile(r"Resolved architecture:\s*(\w+)")
VLLM_DRAFT_SHARE = re.compile(r"Sharing target model (embedding|lm_head) weights with the draft model")
VLLM_ENGINE_TAG = re.compile(r"\((\w{1,64}) pid=(\d{1,10})\)")
VLLM_FATAL = re.compile(r"EngineCore encountered a fatal error|WorkerProc hit an exception|EngineDeadError")
VLLM_VERSION_IN_PATH = re.compile(r"site-packages/vllm/")

# --- SGLang -------------------------------------------------------------------------------------
SGL_DECODE = re.compile(r"Decode batch(?: \[\d+\])?[.,]")
SGL_ACCEPT_LEN = re.compile(r"accept len:\s*([0-9.]+)")
SGL_ACCEPT_RATE = re.compile(r"accept rate:\s*([0-9.]+)")
SGL_GEN_TPUT = re.compile(r"gen throughput \(token/s\):\s*([0-9.]+)")
SGL_RUNNING = re.compile(r"#running-req:\s*(\d+)")
SGL_SERVER_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)")
SGL_LOAD_END = re.compile(r"Load weight end\.[^\n]{0,512}?\btype=(\w{1,128})")
SGL_FATAL = re.compile(r"Scheduler hit an exception")
SGL_TAG = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d((?: (?:DP|TP|EP|PP|CP|ATTN_DP)\d{1,4}){1,8})\]")
SGL_PATH = re.compile(r"sglang/srt/")
SGL_VERSION = re.compile(r"\bsglang[=\s:v]{1,8}(\d{1,4}\.\d{1,4}\.\d{1,4}(?:\.post\d{1,4}|rc\d{1,4})?)")

#: ``key=value`` or ``'key': value`` pairs of a printed ServerArgs / dict (values up to the next comma at
#: parenthesis depth 0 are good enough for the flat fields read here).
SGL_FIELD = re.compile(r"['\"]?(?<!\w)(\w{1,128})['\"]?[ \t]{0,8}[=:][ \t]{0,8}('(?:[^'\\]|\\.){0,1024}'|\"(?:[^\"\\]|\\.){0,1024}\"|[^,(){}\[\]]{1,1024})")
SGL_KEYS = ("model_path", "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps",
            "speculative_eagle_topk", "speculative_num_draft_tokens", "speculative_draft_model_quantization",
            "quantization", "tp_size", "dp_size", "ep_size", "disable_cuda_graph", "speculative_moe_runner_backend")

# --- llama.cpp ----------------------------------------------------------------------------------
LCPP_ACCEPT = re.compile(
    r"draft acceptance(?: rate)? = ([0-9.]+) \(\s*(\d+) accepted /\s*(\d+) generated\)"
    r"(?:, mean (?:acceptance length|len) =\s*([0-9.]+))?(?:, acceptance rate per position = \(([^)]*)\))?"
)
LCPP_SLOT = re.compile(r"\bid\s+(\d+) \| task (-?\d+)")
LCPP_UNUSED = re.compile(r"model has unused tensor (blk\.(\d{1,6})\.(\S{1,200})) \(size = (\d{1,20}) bytes\)")
LCPP_STATS = re.compile(r"statistics[ \t]{1,16}(draft-[\w-]{1,64}|ngram-[\w-]{1,64}|mtp)[ \t]{0,16}:")
LCPP_BUILD = re.compile(r"\bbuild(?::|[ \t]{0,4}=)?[ \t]{1,4}(\d{1,9}) \(([0-9a-f]{6,64})\)|version: \S{1,64} \(build (\d{1,9}), commit ([0-9a-f]{6,64})\)")
LCPP_SPEC_INIT = re.compile(r"common_speculative\w{0,64}: (.{0,200})")
LCPP_NLAYER = re.compile(r"print_info: n_layer\s+=\s*(\d+)")
LCPP_ARCH = re.compile(r"general\.architecture[ \t]{1,16}(?:str[ \t]{1,16})?=[ \t]{0,16}(\w{1,64})|print_info: arch[ \t]{1,32}=[ \t]{0,16}(\w{1,64})")
LCPP_MARK = re.compile(r"\bslot\s+\w+: id\s+\d+ \||\bsrv\s+\w+:|print_info:|load_tensors:|llama_model_loader:|common_speculative")
LCPP_FATAL = re.compile(r"GGML_ASSERT|Segmentation fault|core dumped")

# --- TensorRT-LLM -------------------------------------------------------------------------------
TRT_MARK = re.compile(r"\[TRT-LLM\]|\[TensorRT-LLM\]|tensorrt_llm/")
TRT_VERSION = re.compile(r"TensorRT-LLM version:?[ \t]{0,4}v?([0-9][\w.]{0,40})")
TRT_MTP = re.compile(r"MTPDecodingConfig\(|decoding_type['\"]?\s*[:=]\s*['\"]?MTP")
TRT_MAX_DRAFT = re.compile(r"max_draft_len['\"]?[ \t]{0,4}[:=][ \t]{0,4}(\d{1,6})")
TRT_THRESHOLD_OFF = re.compile(r"acceptance_rate_threshold[^\n]{0,160}?(?:disabl|turn(?:ed|ing) off)"
                               r"|(?:disabl|turn(?:ed|ing) off)[^\n]{0,80}?speculat[^\n]{0,80}?acceptance")

# --- crashes (Python and C runtimes) -------------------------------------------------------------
TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
FRAME = re.compile(r'File "([^"\n]{1,1024})", line (\d{1,9}), in (\S{1,256})')
EXCEPTION = re.compile(r"^[ \t]{0,64}((?:[A-Za-z_]\w{0,64}\.){0,8}[A-Z]\w{0,64}?(?:Error|Exception|Exit|Interrupt|Warning)|AssertionError|KeyboardInterrupt)(?::[ \t]{0,8}(.*))?$")
CUDA_ERROR = re.compile(r"CUDA error: ([^.\n]{1,300})")

# --- C/C++ runtimes and model loading -----------------------------------------------------------
#: ``std::terminate`` of a C++ exception (libstdc++ ``__gnu_cxx::__verbose_terminate_handler``): the type, then
#: ``  what():  <message>`` on the next line.
CXX_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^'\n]{1,200})'")
CXX_WHAT = re.compile(r"\bwhat\(\):[ \t]{0,8}(.{0,300})")
#: TensorRT-LLM ``TLLM_CHECK`` (``[TensorRT-LLM][ERROR] Assertion failed: <expr> (<file>:<line>)``) and glibc ``assert``
#: (``prog: file.c:12: func: Assertion `expr' failed.``).
ASSERT_FAILED = re.compile(r"Assertion failed:?[ \t]{0,4}(.{1,300})|Assertion `([^\n]{1,300}?)' failed")
#: llama.cpp model loading (``src/llama.cpp:375``, ``src/llama-model.cpp:371`` @ llama-cpp-python 0.3.36) and its
#: draft loading (``tools/server/server-context.cpp:1118``, ``common/speculative.cpp:2544``).
LOAD_ERROR = re.compile(r"error loading model: (.{1,300})")
ARCH_UNKNOWN = re.compile(r"unknown model architecture: '([^'\n]{1,100})'")
DRAFT_LOAD_FAILED = re.compile(r"failed to load draft model,? '([^'\n]{1,500})'")
#: Python's lines between chained tracebacks.
CHAINED = ("During handling of the above exception", "The above exception was the direct cause")

# --- benchmark clients (never engine output) ---------------------------------------------------
CLIENT = re.compile(
    r"\bpred=[ \t]{0,8}\d{1,12}[ \t]{1,8}draft=[ \t]{0,8}\d{1,12}[ \t]{1,8}acc=[ \t]{0,8}\d{1,12}[ \t]{1,8}rate=([0-9.]{1,12})"  # llama.cpp mtp-bench.py (PR #22673 gist)
    r"|^[ \t]{0,32}Accept length:[ \t]{0,32}([0-9.]{1,12})"                                  # sglang.bench_serving summary
    r"|^[ \t]{0,32}Acceptance (rate \(%\)|length):[ \t]{0,32}([0-9.]{1,12})"  # vllm bench serve (benchmarks/serve.py:1473-1478 @ v0.33.0)
)
