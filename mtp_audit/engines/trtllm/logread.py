"""TensorRT-LLM's log lines as ``mtp-audit log`` reads them (a sourced table: TensorRT-LLM is not installable from the
package index): the ``[TRT-LLM]`` / ``[TensorRT-LLM]`` logger prefixes, ``MTPDecodingConfig`` and
``acceptance_rate_threshold`` (1.4.0rc4 LLM API reference, MTPDecodingConfig). No public log with per-interval
acceptance was found, so no TensorRT-LLM statistics line is read.
"""

from __future__ import annotations

import re

from mtp_audit.engines.base import LogSink

#: The engine id the log facts name (the registry's: :data:`mtp_audit.engines.registry.ENGINE_SPECS`).
ENGINE = "trtllm"
MARK = re.compile(r"\[TRT-LLM\]|\[TensorRT-LLM\]|tensorrt_llm/")
VERSION = re.compile(r"TensorRT-LLM version:?[ \t]{0,4}v?([0-9][\w.]{0,40})")
MTP = re.compile(r"MTPDecodingConfig\(|decoding_type['\"]?\s*[:=]\s*['\"]?MTP")
MAX_DRAFT = re.compile(r"max_draft_len['\"]?[ \t]{0,4}[:=][ \t]{0,4}(\d{1,6})")
THRESHOLD_OFF = re.compile(r"acceptance_rate_threshold[^\n]{0,160}?(?:disabl|turn(?:ed|ing) off)"
                           r"|(?:disabl|turn(?:ed|ing) off)[^\n]{0,80}?speculat[^\n]{0,80}?acceptance")


def recognise(raw: str, text: str) -> bool:
    """A line with TensorRT-LLM's logger prefix or a path inside its package."""
    return ("TRT-LLM" in raw or "TensorRT-LLM" in raw or "tensorrt_llm/" in raw) and MARK.search(raw) is not None


def read(sink: LogSink, line: int, raw: str, text: str, cut: bool) -> None:
    """TensorRT-LLM's version, ``MTPDecodingConfig`` / ``decoding_type: MTP`` with ``max_draft_len``, and the line that
    says the acceptance threshold turned speculation off."""
    if "TensorRT-LLM" not in text and "MTP" not in text and "acceptance_rate_threshold" not in text:
        return
    m = VERSION.search(text)
    if m:
        sink.version.setdefault(ENGINE, sink.fact(m.group(1), line))
    if MTP.search(text):
        sink.config.setdefault("algorithm", sink.fact("MTP", line))
        d = MAX_DRAFT.search(text)
        if d:
            sink.config.setdefault("num_speculative_tokens", sink.fact(int(d.group(1)), line))
    if THRESHOLD_OFF.search(text):
        sink.note("threshold_off", line, line)
