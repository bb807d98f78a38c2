"""One-pass, bounded reading of an engine log: bytes in, cleaned numbered lines out.

The reader never holds more than one chunk (:data:`CHUNK_BYTES`) plus one line (:data:`MAX_LINE_BYTES`)
in memory, whatever the size of the log. Only lines that carry one of the :data:`MARKERS` (or that
follow a line which asked for its continuation: a traceback, a hard-wrapped configuration line) are
decoded and handed on; every other line is counted and skipped inside the chunk by one regular
expression search, which is what makes a 1 GB log a matter of seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

#: Bytes read per ``read()`` call.
CHUNK_BYTES = 1 << 20
#: Longest line kept; the rest of a longer line is dropped and the line is marked ``cut``.
MAX_LINE_BYTES = 64 * 1024

#: Substrings that make a line worth decoding. Each engine's own wording, cited where it is matched
#: (:mod:`mtp_audit.runtime.patterns`); the crash markers are Python's and the C runtimes' own.
MARKERS = re.compile(
    rb"SpecDecoding metrics|Speculative metrics|Mean acceptance length|Per-position acceptance|Draft acceptance rate"
    rb"|LLM engine \(v|speculative_config|non-default args|Resolved architecture|Detected MTP|Sharing target|vLLM API server version"
    rb"|Decode batch|Prefill batch|accept len|accept rate|server_args|Load weight end|Scheduler hit an exception|sglang"
    rb"|draft acceptance|unused tensor|common_speculative|build: |version: |general.architecture|n_layer  |statistics "
    rb"|TRT-LLM|TensorRT-LLM|MTPDecodingConfig|acceptance_rate_threshold|decoding_type"
    rb"|Traceback|  File \"|Error|Exception|exception|GGML_ASSERT|Segmentation fault|core dumped|fatal error"
    rb"|pred=|Accept length|Acceptance length|Acceptance rate"
)

#: Colour and cursor escapes as they arrive: real ESC, a caret-escaped ``^[[`` (``cat -v``, many
#: terminals' copy) and ``\ufffd[`` (an ESC that a UTF-8 decoder or a web form replaced).
ANSI = re.compile(r"(?:\x1b|\^\[|\ufffd)\[[0-9;?]*[A-Za-z]")
_ODD = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\ufffd]")


@dataclass(frozen=True)
class LogLine:
    """One line of the log as the extractor sees it.

    Attributes:
        number: 1-based line number in its file.
        text: the decoded line without colour codes or the trailing newline; invalid UTF-8 becomes U+FFFD.
        cut: the line was longer than :data:`MAX_LINE_BYTES` and only its start is kept.
    """

    number: int
    text: str
    cut: bool = False


def clean(raw: bytes) -> str:
    """Decode ``raw`` (UTF-8, errors replaced), drop a trailing CR, and remove ANSI colour codes."""
    text = raw.decode("utf-8", "replace")
    if text.endswith("\r"):
        text = text[:-1]
    if "[" in text:
        text = ANSI.sub("", text)
    return text


@dataclass
class ReadStats:
    """What the reader saw, for the report and for deciding that input is not a text log.

    Attributes:
        bytes_read: bytes consumed.
        lines: lines counted (the last one without a newline included).
        cut_lines: lines longer than :data:`MAX_LINE_BYTES`.
        nul_bytes: NUL bytes in the first chunk (a text log has none).
        odd_chars: control characters (other than tab, newline, CR, ESC) and undecodable bytes in the
            first chunk's first 64 KiB.
        first_chunk_bytes: size of the first chunk (for the NUL ratio).
    """

    bytes_read: int = 0
    lines: int = 0
    cut_lines: int = 0
    nul_bytes: int = 0
    odd_chars: int = 0
    sample_chars: int = 0
    first_chunk_bytes: int = 0

    @property
    def looks_binary(self) -> bool:
        """More than 1 % NUL bytes, or more than 10 % control characters and undecodable bytes, at the
        start of the input: not a text log."""
        if self.first_chunk_bytes and self.nul_bytes * 100 > self.first_chunk_bytes:
            return True
        return self.sample_chars >= 64 and self.odd_chars * 10 > self.sample_chars

    def sample(self, chunk: bytes) -> None:
        """Measure the first chunk (NUL bytes, control characters, invalid UTF-8)."""
        self.first_chunk_bytes = len(chunk)
        self.nul_bytes = chunk.count(b"\0")
        text = chunk[:65536].decode("utf-8", "replace")
        self.sample_chars = len(text)
        self.odd_chars = len(_ODD.findall(text))


def read_lines(stream: BinaryIO, wants_next: Callable[[], bool], stats: ReadStats) -> Iterator[LogLine]:
    """Yield the lines of ``stream`` that carry a :data:`MARKERS` match, plus every line while
    ``wants_next()`` is true (the consumer is inside a traceback or a wrapped line).

    Args:
        stream: a binary stream, read once, :data:`CHUNK_BYTES` at a time.
        wants_next: asked before each skipped line; when it returns True the line is yielded too.
        stats: filled in as the stream is read.

    Memory is bounded by one chunk plus one :data:`MAX_LINE_BYTES` line. Raises only what
    ``stream.read`` raises (``OSError``).
    """
    carry = b""
    number = 1
    skipping_cut = False
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            break
        if stats.first_chunk_bytes == 0:
            stats.sample(chunk)
        stats.bytes_read += len(chunk)
        buf = carry + chunk
        if skipping_cut:
            nl = buf.find(b"\n")
            if nl < 0:
                carry = b""
                continue
            buf = buf[nl + 1:]
            skipping_cut = False
        last_nl = buf.rfind(b"\n")
        if last_nl < 0:
            if len(buf) > MAX_LINE_BYTES:
                stats.cut_lines += 1
                yield from _emit(buf[:MAX_LINE_BYTES], number, True, wants_next)
                number += 1
                stats.lines += 1
                carry, skipping_cut = b"", True
            else:
                carry = buf
            continue
        yield from _scan(buf, last_nl + 1, number, wants_next, stats)
        number += buf.count(b"\n", 0, last_nl + 1)
        carry = buf[last_nl + 1:]
        if len(carry) > MAX_LINE_BYTES:
            stats.cut_lines += 1
            stats.lines += 1
            yield from _emit(carry[:MAX_LINE_BYTES], number, True, wants_next)
            number += 1
            carry, skipping_cut = b"", True
    if carry:
        stats.lines += 1
        yield from _emit(carry, number, False, wants_next, force=True)


def _emit(raw: bytes, number: int, cut: bool, wants_next: Callable[[], bool], *, force: bool = False) -> Iterator[LogLine]:
    if force or MARKERS.search(raw) or wants_next():
        yield LogLine(number, clean(raw), cut)


def _scan(buf: bytes, end: int, base: int, wants_next: Callable[[], bool], stats: ReadStats) -> Iterator[LogLine]:
    """The marked lines of ``buf[:end]`` (complete lines), skipping unmarked stretches in C."""
    stats.lines += buf.count(b"\n", 0, end)
    pos, number = 0, base
    while pos < end:
        if wants_next():
            nl = buf.find(b"\n", pos, end)
            raw = buf[pos:nl]
            if len(raw) > MAX_LINE_BYTES:
                stats.cut_lines += 1
            yield LogLine(number, clean(raw[:MAX_LINE_BYTES]), len(raw) > MAX_LINE_BYTES)
            pos, number = nl + 1, number + 1
            continue
        m = MARKERS.search(buf, pos, end)
        if m is None:
            return
        before = buf.rfind(b"\n", pos, m.start())
        start = pos if before < 0 else before + 1
        number += buf.count(b"\n", pos, start)
        nl = buf.find(b"\n", m.end(), end)
        raw = buf[start:nl]
        if len(raw) > MAX_LINE_BYTES:
            stats.cut_lines += 1
        yield LogLine(number, clean(raw[:MAX_LINE_BYTES]), len(raw) > MAX_LINE_BYTES)
        pos, number = nl + 1, number + 1
