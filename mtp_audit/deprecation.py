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
                    warnings.warn(f"{func.__name__}({old}=...) is deprecated; use {new}=...", DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap
