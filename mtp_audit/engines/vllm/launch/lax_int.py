"""How vLLM's ``SpeculativeConfig`` takes an integer field from ``--speculative-config`` JSON: pydantic's lax mode.

``SpeculativeConfig`` is a pydantic dataclass (``vllm/config/utils.py`` ``config`` with ``ConfigDict(extra="forbid")``,
no strict mode, 0.24.0-0.34.0), so an ``int`` field converts what JSON gives it (pydantic "Conversion Table", lax mode:
``str`` -> ``int`` "must be a valid integer", surrounding whitespace stripped, ``_`` separators and a sign allowed, a
zero fraction accepted; ``float`` -> ``int`` only without a fractional part; ``bool`` -> ``int``). Checked against the
real vLLM 0.24.0, 0.33.0 and 0.34.0 building ``SpeculativeConfig(method="ngram", num_speculative_tokens=X, ...)`` on
CPU: ``"2"``, ``" 2 "``, ``"+2"``, ``"02"``, ``"2.0"``, ``2.0`` -> 2; ``"2_0"`` -> 20; ``True`` -> 1; ``"2.5"``, ``2.5``, ``"２"`` (a digit outside ASCII),
``"2."``, ``"2e0"``, ``"0x2"``, ``""``, ``"x"``, ``[]``, ``{}`` -> ValidationError (``int_parsing`` / ``int_type`` /
``int_from_float``).
"""

from __future__ import annotations

import re
from typing import Any

#: Not an integer to pydantic's lax mode: the field's ValidationError.
NOT_AN_INT = object()

_INT_TEXT = re.compile(r"[+-]?\d+(?:_\d+)*(?:\.0+)?", re.ASCII)


def lax_int(value: Any) -> Any:
    """``value`` as the ``int`` pydantic's lax mode makes of it, ``None`` for ``None`` (the field is optional), or
    :data:`NOT_AN_INT` where pydantic raises (module docstring)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else NOT_AN_INT
    if isinstance(value, str):
        text = value.strip()
        return int(text.split(".", 1)[0]) if _INT_TEXT.fullmatch(text) else NOT_AN_INT
    return NOT_AN_INT
