"""llama.cpp's log lines (``llama-server``) as ``mtp-audit log`` reads them: the hand-kept patterns (bounded fields) and
the line reader lent to the log facts through :data:`mtp_audit.engines.llamacpp.logdialect.DIALECT` (format strings
and sources there).

Sources: ``tools/server/server-context.cpp:647`` @ llama-cpp-python 0.3.36 (``draft acceptance = %0.5f (%5d accepted /
%5d generated), mean len = %5.2f``); ggml-org/llama.cpp PR #24536 (2026-06: ``..., mean acceptance length = %5.2f,
acceptance rate per position = (...)``) and PR #14104 (``draft acceptance rate = ...``);
``src/llama-model-loader.cpp:1180`` (``model has unused tensor %s (size = %zu bytes) -- ignoring``);
``common/common.cpp:402`` (``%s: build %d (%s) with %s for %s%s``; older builds ``build: %d (%s) with ...``);
``version: ... (build N, commit X)`` from ``--version``.
"""

from __future__ import annotations

import re

from mtp_audit.engines.base import LogSink

#: The engine id the log facts name (the registry's: :data:`mtp_audit.engines.registry.ENGINE_SPECS`).
ENGINE = "llamacpp"
ACCEPT = re.compile(
    r"draft acceptance(?: rate)? = ([0-9.]{1,12}) \([ \t]{0,12}(\d{1,12}) accepted /[ \t]{0,12}(\d{1,12}) generated\)"
    r"(?:, mean (?:acceptance length|len) =[ \t]{0,12}([0-9.]{1,12}))?(?:, acceptance rate per position = \(([^)]{0,4096})\))?"
)
SLOT = re.compile(r"\bid[ \t]{1,8}(\d{1,6}) \| task (-?\d{1,12})")
UNUSED = re.compile(r"model has unused tensor (blk\.(\d{1,6})\.(\S{1,200})) \(size = (\d{1,20}) bytes\)")
STATS = re.compile(r"statistics[ \t]{1,16}(draft-[\w-]{1,64}|ngram-[\w-]{1,64}|mtp)[ \t]{0,16}:")
BUILD = re.compile(r"\bbuild(?::|[ \t]{0,4}=)?[ \t]{1,4}(\d{1,9}) \(([0-9a-f]{6,64})\)"
                   r"|version: \S{1,64} \(build (\d{1,9}), commit ([0-9a-f]{6,64})\)")
SPEC_INIT = re.compile(r"common_speculative\w{0,64}: (.{0,200})")
NLAYER = re.compile(r"print_info: n_layer\s+=\s*(\d+)")
MARK = re.compile(r"\bslot[ \t]{1,8}\w{1,64}: id[ \t]{1,8}\d{1,6} \||\bsrv[ \t]{1,8}\w{1,64}:|print_info:|load_tensors:"
                  r"|llama_model_loader:|common_speculative")
WORDS = ("slot ", "srv ", "print_info:", "load_tensors:", "llama_model_loader:", "common_speculative",
         "draft acceptance", "unused tensor", "build")
_READ = ("build", "unused tensor", "n_layer", "common_speculative", "statistics", "draft acceptance")


def recognise(raw: str, text: str) -> bool:
    """A line only llama.cpp prints: its log prefixes, its statistics, unused-tensor or build lines."""
    return any(k in text for k in WORDS) and (MARK.search(text) is not None or ACCEPT.search(text) is not None
                                              or UNUSED.search(text) is not None or BUILD.search(text) is not None)


def read(sink: LogSink, line: int, raw: str, text: str, cut: bool) -> None:
    """llama.cpp's build, unused-tensor, layer-count, speculative-init and ``draft acceptance`` lines."""
    if not any(k in text for k in _READ):
        return
    m = BUILD.search(text)
    if m:
        if m.group(1):  # the start-up build line (not --version's "version: ... (build N, commit X)")
            sink.run_start(line)
        build, commit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        sink.version[ENGINE] = sink.fact(f"b{build} ({commit})", line)
    m = UNUSED.search(text)
    if m:
        sink.unused_tensor(int(m.group(2)), m.group(3), int(m.group(4)), line)
        return
    m = NLAYER.search(text)
    if m:
        sink.note("n_layer", int(m.group(1)), line)
    m = SPEC_INIT.search(text)
    if m:
        sink.note("spec_init", m.group(1)[:200], line)
    m = STATS.search(text)
    if m:
        sink.note("draft_type", m.group(1), line)
        return
    m = ACCEPT.search(text)
    if m:
        slot = SLOT.search(text)
        per_pos = tuple(float(x) for x in re.findall(r"[0-9]*\.?[0-9]+", m.group(5) or ""))
        sink.interval(line, float(m.group(4)) if m.group(4) else None, float(m.group(1)), int(m.group(2)), int(m.group(3)),
                      per_pos, f"slot {slot.group(1)}" if slot else None)
