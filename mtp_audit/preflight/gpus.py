"""GPU product name -> compute capability, from the data table ``mtp_audit/data/gpus.json``.

The table has one row per product (or product family sharing one compute capability) with the
marketing variants people type as ``aliases`` and a ``source`` per row (NVIDIA's CUDA GPUs page
https://developer.nvidia.com/cuda-gpus unless the row names a datasheet, CUDA release notes or an
issue). Jetson Thor is 11.0 from CUDA 13.0 on and was 10.1 in CUDA 12.8/12.9; its row says so.

Matching works on words, never on substrings: a name is lower-cased and split into runs of letters
and runs of digits (``"A100-SXM4-80GB"`` -> ``a 100 sxm 4 80 gb``), and an alias matches only as a
complete run of those words. The longest alias found wins (``"RTX PRO 6000 Blackwell Max-Q"`` beats
``"RTX PRO 6000"``); so ``"NVIDIA H"`` (a name cut off in a paste) and ``"NVIDIA B20"`` match nothing,
and ``"A10"`` never matches ``"A100"``. A name with no complete alias returns ``None``: the caller
reports the compute capability as missing, never guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

_WORD = re.compile(r"[a-z]+|\d+")




def words(text: str) -> tuple[str, ...]:
    """``"NVIDIA RTX PRO 6000 Blackwell Max-Q"`` -> ``("nvidia", "rtx", "pro", "6000", "blackwell", "max", "q")``."""
    return tuple(_WORD.findall(text.lower()))


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text`` (as :func:`words`) with their ``(start, end)`` character offsets in ``text``."""
    return [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text.lower())]


@dataclass(frozen=True)
class GpuMatch:
    """One table hit.

    Attributes:
        product: the row's product name (``"B300 (HGX B300, 'B300 SXM6 AC')"``).
        alias: the alias that matched, as written in the table.
        cc: ``(major, minor)`` compute capability.
        source: the row's source (URL or ``gh:owner/repo#N``).
        note: the row's note (e.g. Thor's CUDA 12.x numbering), or ``""``.
        start: character offset of the match in the searched text.
        end: end offset of the match in the searched text.
    """

    product: str
    alias: str
    cc: tuple[int, int]
    source: str
    note: str = ""
    start: int = 0
    end: int = 0


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The parsed ``gpus.json`` (cached). Raises ``OSError``/``ValueError`` only if the package is broken."""
    return json.loads(resources.files("mtp_audit").joinpath("data/gpus.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _alias_index() -> dict[tuple[str, ...], tuple[str, dict[str, Any]]]:
    out: dict[tuple[str, ...], tuple[str, dict[str, Any]]] = {}
    for row in table()["rows"]:
        for alias in row["aliases"]:
            key = words(alias)
            if key in out and out[key][1] is not row:
                raise ValueError(f"gpus.json: alias {alias!r} is in two rows")
            out[key] = (alias, row)
    return out


@lru_cache(maxsize=1)
def _lengths_by_first_word() -> dict[str, tuple[int, ...]]:
    """First word of an alias -> the word counts of the aliases starting with it, longest first."""
    out: dict[str, set[int]] = {}
    for key in _alias_index():
        out.setdefault(key[0], set()).add(len(key))
    return {w: tuple(sorted(ns, reverse=True)) for w, ns in out.items()}


def find_all(text: str) -> list[GpuMatch]:
    """Every GPU product named in ``text``, left to right, each the longest alias at its position;
    overlapping shorter hits are dropped. Linear in ``len(text)``: a word that starts no alias costs one
    dict lookup; one that does tries only the alias lengths that start with it."""
    idx = _alias_index()
    firsts = _lengths_by_first_word()
    spans = word_spans(text)
    ws = [w for w, _, _ in spans]
    out: list[GpuMatch] = []
    i = 0
    while i < len(ws):
        best = None
        for n in firsts.get(ws[i], ()):
            if n > len(ws) - i:
                continue
            hit = idx.get(tuple(ws[i:i + n]))
            if hit is not None:
                best = (n, hit)
                break
        if best is None:
            i += 1
            continue
        n, (alias, row) = best
        out.append(GpuMatch(product=row["product"], alias=alias, cc=(int(row["cc"][0]), int(row["cc"][1])),
                            source=row["source"], note=row.get("note", ""), start=spans[i][1], end=spans[i + n - 1][2]))
        i += n
    return out


def lookup(name: str) -> GpuMatch | None:
    """The most specific (longest) table alias contained in ``name`` as whole words, or ``None``.

    When a name contains aliases of two rows with different compute capabilities (``"B200 or H100"``),
    the answer is ``None``: a name is one product.
    """
    hits = find_all(name)
    if not hits:
        return None
    if len({h.cc for h in hits}) > 1:
        return None
    return max(hits, key=lambda h: (len(words(h.alias)), len(h.alias)))


def cc_from_name(name: str) -> tuple[tuple[int, int], str] | None:
    """``(compute capability, source)`` of a GPU product name, or ``None`` (see :func:`lookup`)."""
    hit = lookup(name)
    if hit is None:
        return None
    return hit.cc, f"{hit.source}; matched '{hit.alias}'"
