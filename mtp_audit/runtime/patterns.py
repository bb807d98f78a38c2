"""Regular expressions for what no single engine owns: Python tracebacks, the C/C++ runtimes' crash lines, llama.cpp-style
model-loading errors that launchers and forks print too, and benchmark clients' summaries. Each engine's own lines are
in its package (``mtp_audit/engines/<engine>/logdialect.py`` and ``logread.py``), lent through the registry.

Every repeat is bounded (a field, never the rest of an unbounded line), so each search is linear in the line.
"""

from __future__ import annotations

import re

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
#: llama-server naming the target as the model that failed (``tools/server/server-context.cpp:1086`` @ llama-cpp-python
#: 0.3.36), and Ollama reporting its llama-server runner ended by the load error (the runner's only model).
TARGET_LOAD_FAILED = re.compile(r"failed to load model, '|llama-server process has terminated")
#: Python's lines between chained tracebacks.
CHAINED = ("During handling of the above exception", "The above exception was the direct cause")

# --- benchmark clients (never engine output) ---------------------------------------------------
CLIENT = re.compile(
    r"\bpred=[ \t]{0,8}\d{1,12}[ \t]{1,8}draft=[ \t]{0,8}\d{1,12}[ \t]{1,8}acc=[ \t]{0,8}\d{1,12}[ \t]{1,8}rate=([0-9.]{1,12})"  # llama.cpp mtp-bench.py (PR #22673 gist)
    r"|^[ \t]{0,32}Accept length:[ \t]{0,32}([0-9.]{1,12})"                                  # sglang.bench_serving summary
    r"|^[ \t]{0,32}Acceptance (rate \(%\)|length):[ \t]{0,32}([0-9.]{1,12})"  # vllm bench serve (benchmarks/serve.py:1473-1478 @ v0.33.0)
)
