"""One-pass, bounded reading of an engine log: bytes in, cleaned numbered lines out.

The reader never holds more than one chunk (:data:`CHUNK_BYTES`) plus one line (:data:`MAX_LINE_BYTES`)
in memory, whatever the size of the log, and reads at most the byte budget it is given. Only lines that
carry one of the :data:`LITERALS` (or that follow a line which asked for its continuation: a traceback, a
hard-wrapped configuration line) are decoded and handed on; every other line is counted and skipped inside
the chunk by C-level substring searches, the same ones in every chunk, so a line is read or skipped by what
it says and never by where it sits; that is what makes a 1 GB log a matter of seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

#: Bytes read per ``read()`` call.
CHUNK_BYTES = 1 << 20
#: Longest line kept; the rest of a longer line is dropped and the line is marked ``cut``.
MAX_LINE_BYTES = 64 * 1024

#: Substrings that make a line worth decoding, searched the same way in every chunk wherever the line sits
#: (a line is read or skipped by what it says, never by its offset): each engine's own wording (cited where
#: it is parsed, in :mod:`mtp_audit.runtime.patterns` and the engines' log dialects), launch commands, Python's
#: and the C/C++ runtimes' crash words, wrappers' and benchmark clients' words. Each literal is searched by
#: one C-level substring scan per chunk; a line is handed on when it holds any of them. Short common stems
#: cover several lines each: ``ccept`` (vLLM ``acceptance``, SGLang ``accept len``, llama-server ``draft
#: acceptance`` and ``draft acceptance rate``, clients' ``Accept length``, TensorRT-LLM's
#: ``acceptance_rate_threshold``), ``rror`` (``Error``, ``CUDA error``, ``fatal error``), ``xception`` (``Scheduler hit
#: an exception``, ``WorkerProc hit an exception``), ``draft`` (``Sharing target model ... with the draft model``,
#: ``failed to load draft model``), `` --`` (a launch command's options and their continuation lines, llama.cpp's
#: ``) -- ignoring``), `` serve`` (``vllm serve``, ``sglang serve``, ``API server version``), ``llama`` (llama.cpp's
#: programs and loader, Ollama), ``load model,`` (llama-server's ``failed to load model, 'PATH'``). Each literal
#: costs one scan of the chunk, so the set is kept short.
LITERALS: tuple[bytes, ...] = (
    b"ccept", b" batch", b"LLM engine (v", b"architecture", b"MTP", b"_args=", b"Load weight end", b"build", b"n_layer",
    b"speculative", b"#calls(", b"RT-LLM", b"Traceback", b'File "', b"rror", b"xception", b"GGML_ASSERT",
    b"Segmentation fault", b"core dumped", b"pred=", b"terminate called", b"what():", b"ssert", b" --", b"draft",
    b" serve", b"-serve", b"load model,", b"launch_server", b"llama", b"obold", b"LocalAI", b"local-ai", b"emonade", b"default args",
)
#: Every literal as one alternation: used on single lines (a line cut at the line cap).
MARKERS = re.compile(b"|".join(re.escape(m) for m in LITERALS))

#: Colour and cursor escapes as they arrive: real ESC, a caret-escaped ``^[[`` (``cat -v``, many
#: terminals' copy) and ``\ufffd[`` (an ESC that a UTF-8 decoder or a web form replaced).
ANSI = re.compile(r"(?:\x1b|\^\[|\ufffd)\[[0-9;?]*[A-Za-z]")
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
          (b"PK\x03\x04", "zip"))
_ODD = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\ufffd]")


class LogLine(NamedTuple):
    """One line of the log as the extractor sees it.

    Attributes:
        number: 1-based line number in its file.
        text: the decoded line without colour codes or the trailing newline; invalid UTF-8 becomes U+FFFD.
        cut: the line was longer than :data:`MAX_LINE_BYTES` and only its start is kept.
        open_end: the log ends inside this line (no line end follows): a paste may have been cut there, so the
            figures it holds may be cut too (``Mean acceptance length: 1.3`` of ``1.34``).
    """

    number: int
    text: str
    cut: bool = False
    open_end: bool = False


def clean(raw: bytes) -> str:
    """Decode ``raw`` (UTF-8, errors replaced), drop a trailing CR, and remove ANSI colour codes."""
    text = raw.decode("utf-8", "replace")
    if text.endswith("\r"):
        text = text[:-1]
    if ("\x1b" in text or "^[" in text or "\ufffd" in text) and "[" in text:
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

    #: What the first bytes say the input is, when it is a known compressed format (``gzip``, ``zstd``, ...).
    compressed: str | None = None
    #: The byte budget reading stopped at while the input went on (None: read to its end).
    stopped_at: int | None = None
    #: The number of the last line when the log ends inside it (no line end after it), else None.
    open_end_line: int | None = None

    def sample(self, chunk: bytes) -> None:
        """Measure the first chunk (NUL bytes, control characters, invalid UTF-8, compression magic)."""
        self.compressed = next((name for magic, name in _MAGIC if chunk.startswith(magic)), None)
        self.first_chunk_bytes = len(chunk)
        self.nul_bytes = chunk.count(b"\0")
        text = chunk[:65536].decode("utf-8", "replace")
        self.sample_chars = len(text)
        self.odd_chars = len(_ODD.findall(text))


def read_lines(stream: BinaryIO, wants_next: Callable[[], bool], stats: ReadStats,
               limit: int | None = None) -> Iterator[LogLine]:
    """Yield the lines of ``stream`` that carry one of the :data:`LITERALS`, plus every line while
    ``wants_next()`` is true (the consumer is inside a traceback or a wrapped line).

    Args:
        stream: a binary stream, read once, :data:`CHUNK_BYTES` at a time.
        wants_next: asked before each skipped line; when it returns True the line is yielded too.
        stats: filled in as the stream is read.
        limit: most bytes read (None: no limit). When the stream holds more, reading stops there and
            ``stats.stopped_at`` is set to the limit (a partial last line is still handed on).

    Memory is bounded by one chunk plus one :data:`MAX_LINE_BYTES` line; time is linear in the bytes read
    (substring scans per chunk, then per-line work on handed-on lines only). Raises only what
    ``stream.read`` raises (``OSError``).
    """
    carry = b""
    number = 1
    skipping_cut = False
    while True:
        chunk = _read(stream, limit, stats)
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
        stats.open_end_line = number
        yield LogLine(number, clean(carry), False, True)


def _read(stream: BinaryIO, limit: int | None, stats: ReadStats) -> bytes:
    """The next chunk, at most ``limit - stats.bytes_read`` bytes; at the limit, one more byte is asked
    for to tell a log that ends there from one that goes on (``stats.stopped_at``)."""
    if limit is None:
        return stream.read(CHUNK_BYTES)
    left = limit - stats.bytes_read
    if left > 0:
        return stream.read(min(CHUNK_BYTES, left))
    if stats.stopped_at is None and stream.read(1):
        stats.stopped_at = limit
    return b""


def _emit(raw: bytes, number: int, cut: bool, wants_next: Callable[[], bool], *, force: bool = False) -> Iterator[LogLine]:
    if force or MARKERS.search(raw) or wants_next():
        yield LogLine(number, clean(raw), cut)


def _marked_starts(buf: bytes, end: int) -> list[int]:
    """Start offsets, in order, of the lines of ``buf[:end]`` that contain one of the :data:`LITERALS`."""
    rfind, find = buf.rfind, buf.find
    found: set[int] = set()
    for lit in LITERALS:
        pos = find(lit, 0, end)
        while pos >= 0:
            found.add(rfind(b"\n", 0, pos) + 1)
            nl = find(b"\n", pos, end)
            if nl < 0:
                break
            pos = find(lit, nl + 1, end)
    return sorted(found)


def _scan(buf: bytes, end: int, base: int, wants_next: Callable[[], bool], stats: ReadStats) -> Iterator[LogLine]:
    """The marked lines of ``buf[:end]`` (complete lines), and every line while ``wants_next()``; unmarked
    stretches are skipped by C-level substring searches."""
    stats.lines += buf.count(b"\n", 0, end)
    pos, number = 0, base
    for start in _marked_starts(buf, end):
        if start < pos:
            continue
        while wants_next() and pos < start:
            nl = buf.find(b"\n", pos, end)
            yield _line(buf[pos:nl], number, stats)
            pos, number = nl + 1, number + 1
        if start < pos:
            continue
        number += buf.count(b"\n", pos, start)
        nl = buf.find(b"\n", start, end)
        yield _line(buf[start:nl], number, stats)
        pos, number = nl + 1, number + 1
    while wants_next() and pos < end:
        nl = buf.find(b"\n", pos, end)
        yield _line(buf[pos:nl], number, stats)
        pos, number = nl + 1, number + 1


def _line(raw: bytes, number: int, stats: ReadStats) -> LogLine:
    cut = len(raw) > MAX_LINE_BYTES
    if cut:
        stats.cut_lines += 1
    return LogLine(number, clean(raw[:MAX_LINE_BYTES]), cut)
