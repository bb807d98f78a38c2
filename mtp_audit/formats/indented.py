"""Indented JSON text, byte for byte what ``json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)`` writes,
with the standard library's C encoder doing the work inside every container that holds no container.

CPython's C encoder (``_json.make_encoder``) ignores ``indent``: with it, ``json.dumps`` falls back to the pure-Python
generator encoder, one generator step per value passed up through every level of nesting. A 0.9 MB SGLang report
took 28 ms that way against 7.5 ms compact (``benchmarks/bench_sglang.py``, the warm ``-f json`` case). Here a
container whose values are all scalars is handed to a C encoder whose item separator is ``",\\n"`` plus the next
level's indentation, so the C encoder writes the same lines the indenting one would, less the newline after the
opening bracket and before the closing one, which are added around it; only containers holding containers are
walked in Python. ``tests/test_formats.py`` checks the equality on generated documents.
"""

from __future__ import annotations

import json
import json.encoder
import math
from typing import Any

_INDENT = "  "
_SCALARS = frozenset({str, int, float, bool, type(None)})
_FLAT: dict[int, Any] = {}  # nesting level -> the C encoder with that level's item separator
_STR = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes a string with (C when present)


def dumps(obj: Any) -> str:
    """``json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)`` (same text, same exceptions
    for what JSON cannot hold), with every non-finite float written as a string: ``"NaN"``, ``"Infinity"``,
    ``"-Infinity"`` (:func:`nonfinite_as_text`). RFC 8259 has no such numbers, and ``JSON.parse``, jq and Go's
    ``encoding/json`` reject a document holding them bare. The encoders run with ``allow_nan=False`` as the guard: a
    document of finite numbers is written in one pass, byte for byte as before; one that trips the guard is copied
    with its non-finite floats as text and written again.

    A document with anything other than plain ``dict`` / ``list`` / ``tuple`` containers and ``str`` keys (a
    subclass, a non-string key) is handed to ``json.dumps`` itself, so the result never differs.

    Raises:
        TypeError, ValueError: as ``json.dumps`` (a value JSON cannot encode; a circular reference)."""
    try:
        return _dumps(obj)
    except ValueError as exc:  # a non-finite float met the guard (or a circular reference: raised again below)
        keyed = [False]
        try:
            finite = _as_written(obj, keyed)
        except RecursionError:
            raise exc from None
        if keyed[0]:  # a non-string key: its text sorts apart from the key itself, so the order is fixed here
            return json.dumps(finite, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False)
        return _dumps(finite)


def _dumps(obj: Any) -> str:
    """:func:`dumps` without the rewrite of non-finite floats (they raise ``ValueError``)."""
    parts: list[str] = []
    if _c_make_encoder() is None:
        return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    try:
        _encode(obj, 0, parts.append)
    except (_Unusual, RecursionError, TypeError, ValueError):  # json.dumps: the same text, or its own error
        return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return "".join(parts)


#: How a non-finite float is written as text (the spelling Python's ``json`` module gives it).
NONFINITE_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def nonfinite_as_text(obj: Any) -> Any:
    """A copy of ``obj`` (dicts, lists, tuples as lists) with every NaN or infinite float replaced by its text
    (:data:`NONFINITE_TEXT`) and every number, ``bool`` or ``None`` key by the text ``json.dumps`` gives it (so keys of
    mixed types still sort); everything else is kept as it is.

    Raises:
        RecursionError: a circular reference (or nesting deeper than the interpreter's limit)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else NONFINITE_TEXT[repr(float(obj))]
    if isinstance(obj, dict):
        return {_key_text(k): nonfinite_as_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [nonfinite_as_text(v) for v in obj]
    return obj


def _as_written(obj: Any, keyed: list[bool]) -> Any:
    """:func:`nonfinite_as_text` with every dict's items in the order ``json.dumps(sort_keys=True)`` writes them:
    sorted by the key itself (``sorted(dct.items())``, ``json/encoder.py`` ``_iterencode_dict``), before the key is
    turned into text (``False`` sorts before ``inf``, while ``"Infinity"`` sorts before ``"false"``). Sets
    ``keyed[0]`` when a key is not a string (the copy must then be written unsorted to keep that order).

    Raises:
        RecursionError: a circular reference (or nesting deeper than the interpreter's limit).
        TypeError: keys that cannot be compared (as ``json.dumps``)."""
    if isinstance(obj, dict):
        if any(not isinstance(k, str) for k in obj):
            keyed[0] = True
        return {_key_text(k): _as_written(v, keyed) for k, v in sorted(obj.items(), key=lambda kv: kv[0])}
    if isinstance(obj, (list, tuple)):
        return [_as_written(v, keyed) for v in obj]
    return nonfinite_as_text(obj)


def _key_text(key: Any) -> Any:
    """A key as the standard encoder writes it (``1`` -> ``"1"``, ``True`` -> ``"true"``), non-finite floats as text."""
    if isinstance(key, (float, int)) or key is None:
        return NONFINITE_TEXT.get(repr(float(key))) if isinstance(key, float) and not math.isfinite(key) else json.dumps(key)
    return key


class _Unusual(Exception):
    """A value this encoder does not promise to write exactly as ``json.dumps`` does."""


def _flat(level: int) -> Any:
    """The C encoder for the scalars of a container at ``level`` (items separated by a newline and the indentation
    of ``level + 1``)."""
    enc = _FLAT.get(level)
    if enc is None:
        enc = _FLAT[level] = _c_encoder(",\n" + _INDENT * (level + 1))
    return enc


def _c_make_encoder() -> Any:
    """The standard library's C encoder factory (``json.encoder.c_make_encoder``, which typeshed does not declare),
    read when called; ``None`` without the C accelerator."""
    return getattr(json.encoder, "c_make_encoder", None)


def _c_encoder(item_separator: str) -> Any:
    """``obj -> text`` by the standard library's C encoder with ``json.dumps``'s settings for this output (sorted
    keys, no ASCII escaping, NaN refused, no indentation) and ``item_separator``; ``None`` without the C
    accelerator (then :func:`dumps` leaves everything to ``json.dumps``)."""
    make = _c_make_encoder()
    if make is None:
        return None
    enc = make(None, _no_default, _STR, None, ": ", item_separator, True, False, False)
    return lambda obj: "".join(enc(obj, 0))


def _no_default(obj: Any) -> Any:
    raise _Unusual


def _scalar(obj: Any) -> str:
    """A scalar as ``json.dumps`` writes it."""
    t = type(obj)
    if t is str:
        return _STR(obj)
    if obj is None:
        return "null"
    if t is bool:
        return "true" if obj else "false"
    if t is int:
        return int.__repr__(obj)
    return _flat(0)(obj)  # a float as json.dumps writes it (NaN and the infinities raise ValueError)


def _encode(obj: Any, level: int, out: Any) -> None:
    """Append the text of ``obj`` at nesting ``level`` to ``out`` (a circular reference recurses until
    ``RecursionError``, and :func:`dumps` then lets ``json.dumps`` report it)."""
    t = type(obj)
    if t is dict:
        _encode_dict(obj, level, out)
    elif t is list or t is tuple:
        _encode_list(obj, level, out)
    elif t in _SCALARS:
        out(_scalar(obj))
    else:
        raise _Unusual


def _encode_dict(obj: dict[Any, Any], level: int, out: Any) -> None:
    if not obj:
        out("{}")
        return
    inner, closing = "\n" + _INDENT * (level + 1), "\n" + _INDENT * level + "}"
    if all(type(v) in _SCALARS for v in obj.values()):
        out("{" + inner + _flat(level)(obj)[1:-1] + closing)
        return
    flat, sep, run = _flat(level), "{" + inner, {}
    for key in sorted(obj):
        if type(key) is not str:
            raise _Unusual  # the standard encoder's key conversions
        value = obj[key]
        if type(value) in _SCALARS:
            run[key] = value  # a run of scalar members: written by the C encoder in one call
            continue
        if run:
            out(sep + flat(run)[1:-1])
            sep, run = "," + inner, {}
        out(sep + _STR(key) + ": ")
        _encode(value, level + 1, out)
        sep = "," + inner
    if run:
        out(sep + flat(run)[1:-1])
    out(closing)


def _encode_list(obj: list[Any] | tuple[Any, ...], level: int, out: Any) -> None:
    if not obj:
        out("[]")
        return
    inner, closing = "\n" + _INDENT * (level + 1), "\n" + _INDENT * level + "]"
    if all(type(v) in _SCALARS for v in obj):
        out("[" + inner + _flat(level)(list(obj))[1:-1] + closing)
        return
    sep = "[" + inner
    for value in obj:
        if type(value) in _SCALARS:
            out(sep + _scalar(value))
        else:
            out(sep)
            _encode(value, level + 1, out)
        sep = "," + inner
    out(closing)
