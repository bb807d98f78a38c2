"""The one escaping function for everything a person reads: text and Markdown reports, JSON and SARIF
documents (as a person opens them in a terminal, a pager or a code-review page) and the one-line errors on
stderr.

Audited values (a shard name from a weight map, a file name, a launch command, a GPU name from an
environment dump) are attacker-chosen text. Written raw, they could clear the screen or recolour it (ESC,
CSI ``U+009B``), start a new report line with a fake ``PASS:`` (LF, CR, ``U+0085`` NEL, ``U+2028`` /
``U+2029``), or make the text read in another order than it is stored (the Unicode bidirectional overrides
and isolates, "Trojan Source", CVE-2021-42574). The characters escaped, :data:`UNSAFE`:

- C0 controls ``U+0000``-``U+001F`` and DEL ``U+007F``;
- C1 controls ``U+0080``-``U+009F`` (NEL ``U+0085`` and CSI ``U+009B`` among them);
- the line and paragraph separators ``U+2028``, ``U+2029``;
- the bidirectional formatting characters: ``U+061C`` (ALM), ``U+200E``/``U+200F`` (LRM/RLM),
  ``U+202A``-``U+202E`` (embeddings and overrides), ``U+2066``-``U+2069`` (isolates);
- the byte-order mark / zero-width no-break space ``U+FEFF`` (invisible inside a value).

:func:`escape` writes each as a visible escape (``\\n``, ``\\r``, ``\\t``, ``\\xNN`` below ``U+0100``,
``\\uNNNN`` above); :func:`escape_json` rewrites them inside an already serialised JSON document as JSON
``\\uNNNN`` escapes, so the document still decodes to exactly the same values.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Any, TypeVar

#: Code points that never reach a person's screen raw (see the module docstring).
UNSAFE: frozenset[int] = frozenset(
    [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, 0x061C, 0x200E, 0x200F,
     *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF]
)

_NAMED = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_TABLE = {c: _NAMED.get(c) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in UNSAFE}
# The patterns below are compiled on first use (``re``'s own cache), not at import: most text is printable ASCII and
# never reaches them, and a text report needs no Markdown pattern (four compiles, ~0.8 ms of every run's start-up).
_UNSAFE_RE = "[" + "".join(re.escape(chr(c)) for c in sorted(UNSAFE)) + "]"
# in a serialised JSON document, json.dumps already escapes C0 inside strings; raw LF / spaces are layout
_JSON_RE = "[" + "".join(re.escape(chr(c)) for c in sorted(UNSAFE) if c >= 0x20) + "]"

T = TypeVar("T")


def escape(text: str) -> str:
    """``text`` with every :data:`UNSAFE` character written as a visible escape (``\\x1b``, ``\\n``,
    ``\\u202e``), so it stays on one line, cannot send terminal control sequences and reads in the
    order it is stored. Other characters (letters of any script, emoji, a backslash) are kept."""
    if text.isascii() and text.isprintable():  # the ASCII members of UNSAFE are exactly its unprintable ones
        return text
    if re.search(_UNSAFE_RE, text) is None:
        return text
    return text.translate(_TABLE)


def escape_json(document: str) -> str:
    """A serialised JSON (or SARIF) document with every :data:`UNSAFE` character that ``json.dumps``
    leaves raw (DEL, C1, the separators, bidi controls, ``U+FEFF``) written as a JSON ``\\uNNNN``
    escape: ``json.loads`` of the result gives exactly the same values."""
    if document.isascii() and "\x7f" not in document:  # DEL is the one ASCII member json.dumps leaves raw
        return document  # (str.isascii is a flag of the string object: no scan)
    return re.sub(_JSON_RE, lambda m: f"\\u{ord(m.group()):04x}", document)


_MD_CHARS = r"[\\`\[\]|*~]|(?<![^\W_])_|_(?![^\W_])"
_MD_AUTOLINK = r"(?i)(?<=[a-z0-9])(:)(?=//)|(?<![a-z0-9])(www)(\.)"


def markdown_text(text: str) -> str:
    """``text`` (already :func:`escape` d) as Markdown prose that GitHub renders as exactly that text:

    - ``&`` and ``<`` as ``&amp;`` / ``&lt;``: no tag, no HTML block, no entity of the value's own;
    - ``\\``, `````` ` ``````, ``[``, ``]``, ``|``, ``*``, ``~`` backslash-escaped, and every ``_`` not between two
      letters or digits (GitHub never emphasises inside a word with ``_``, so ``num_nextn_predict_layers`` stays as
      it is): no link, image (``![``), reference, code span, table cell, emphasis or strikethrough;
    - the ``:`` of ``scheme://`` and the ``.`` of ``www.`` backslash-escaped: no bare-URL autolink.

    A ``mailto:`` autolink of ``a@b.c`` text is kept (GitHub makes it after escapes are read; its target is the text
    shown)."""
    out = text.replace("&", "&amp;").replace("<", "&lt;") if ("&" in text or "<" in text) else text
    out = re.sub(_MD_CHARS, lambda m: "\\" + m.group(), out)
    if ":" in out or "w" in out or "W" in out:
        out = re.sub(_MD_AUTOLINK, lambda m: "\\:" if m.group(1) else m.group(2) + "\\.", out)
    return out


def markdown_code(text: str, *, table: bool = True) -> str:
    """``text`` (already :func:`escape` d) as a Markdown code span GitHub shows literally (HTML and links inside a
    code span are text): delimited by one backtick more than the longest run of backticks in ``text``, padded with a
    space when ``text`` has a backtick. ``table``: inside a table row, where ``|`` is written ``\\|`` (GitHub splits
    cells before it reads code spans)."""
    body = text.replace("|", "\\|") if table else text
    if "`" not in body:
        return f"`{body}`"
    longest = max(len(run) for run in re.findall("`+", body))
    fence = "`" * (longest + 1)
    return f"{fence} {body} {fence}"


def markdown_fence(lines: list[str]) -> str:
    """The fence for a fenced code block holding ``lines``: three backticks, or one more than the longest run of
    backticks in them (so no line can close the block)."""
    runs = [len(run) for line in lines for run in re.findall("`+", line)]
    return "`" * max(3, max(runs, default=0) + 1)


def escape_deep(value: T) -> T:
    """``value`` with :func:`escape` applied to every string inside it: strings, lists, tuples, dict keys
    and values, and the fields of (frozen) dataclasses such as :class:`~mtp_audit.report.Report`, rebuilt
    with :func:`dataclasses.replace`. Enums, numbers and other objects are returned as they are. Used on a
    report before the text and Markdown renderers see it, so no audited value reaches them raw."""
    return _deep(value)


def _deep(value: Any) -> Any:
    if isinstance(value, str):
        return value if isinstance(value, enum.Enum) else escape(value)
    if isinstance(value, (list, tuple)):
        items = [_deep(v) for v in value]
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
            return type(value)(*items)
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        return {(_deep(k) if isinstance(k, str) else k): _deep(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _deep(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    return value
