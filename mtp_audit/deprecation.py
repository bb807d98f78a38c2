"""Old keyword names of the public functions, kept working with a :class:`DeprecationWarning`.

One idea has one name across the library: ``env_dumps`` (pasted environment dumps: a path or a list of
paths), ``facts_file`` (stored machine facts, ``mtp-audit preflight --save-facts``), ``machine_facts``
(an already built :class:`~mtp_audit.preflight.facts.MachineFacts`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def caller_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn` that names the first frame outside this package, counted from the
    function that calls this one (the public functions run behind wrappers of :mod:`mtp_audit.api`, so a fixed
    level would name the wrapper's line, not the user's call)."""
    import os
    import sys
    import types

    pkg = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: types.FrameType | None = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def renamed_keywords(renames: Mapping[str, str]) -> Callable[[F], F]:
    """Decorator: accept each old keyword of ``renames`` (old -> new) as its new name, with a
    ``DeprecationWarning`` naming both.

    Raises (from the wrapped call):
        TypeError: both the old and the new name given.
    """

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def inner(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{func.__name__}() got both {old!r} (deprecated) and {new!r}")
                    warnings.warn(f"{func.__name__}({old}=...) is deprecated; use {new}=...", DeprecationWarning,
                                  stacklevel=caller_stacklevel())
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


#: Old keywords of :func:`mtp_audit.preflight.preflight` that became entries of its ``engine_facts`` mapping (engine id
#: -> what that engine's own analyzer says of the release the launch runs): old keyword -> (engine id, the field of
#: that engine's facts it was, or ``None`` for the whole facts mapping).
ENGINE_FACT_KEYWORDS: dict[str, tuple[str, str | None]] = {"sglang_facts": ("sglang", None), "vllm_version": ("vllm", "version")}


def folded(kwargs: Mapping[str, Any], into: str, folds: Mapping[str, tuple[str, str | None]],
           warn: str = "") -> dict[str, Any]:
    """``kwargs`` with each old keyword of ``folds`` (old -> (key, field)) moved into the mapping keyword ``into``:
    ``into[key] = value`` (``field`` ``None``) or ``into[key] = {field: value}``. ``warn``: the function's name, to
    warn (``DeprecationWarning``) for each old keyword found; ``""``: no warning (a caller that only checks the call).

    Raises:
        TypeError: an old keyword whose ``key`` ``into`` already has.
    """
    out = dict(kwargs)
    for old, (key, fld) in folds.items():
        if old not in out:
            continue
        value = out.pop(old)
        merged = dict(out.get(into) or {})
        if key in merged:
            raise TypeError(f"{warn or 'the function'}() got both {old!r} (deprecated) and {into}[{key!r}]")
        if warn:
            shown = f"{into}={{{key!r}: ...}}" if fld is None else f"{into}={{{key!r}: {{{fld!r}: ...}}}}"
            warnings.warn(f"{warn}({old}=...) is deprecated; use {shown}", DeprecationWarning, stacklevel=caller_stacklevel())
        if value is not None:
            merged[key] = value if fld is None else {fld: value}
        out[into] = merged
    return out


def folded_keywords(into: str, folds: Mapping[str, tuple[str, str | None]]) -> Callable[[F], F]:
    """Decorator: accept each old keyword of ``folds`` as an entry of the mapping keyword ``into`` (:func:`folded`),
    with a ``DeprecationWarning`` naming both.

    Raises (from the wrapped call):
        TypeError: an old keyword and the entry it stands for both given.
    """

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def inner(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **folded(kwargs, into, folds, func.__name__))

        return inner  # type: ignore[return-value]

    return wrap
