"""Equality, hashing and ``repr`` for frozen dataclasses, written once instead of compiled for every class.

``@dataclass(frozen=True)`` compiles six methods of every class with ``exec`` when its module is imported
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``; CPython 3.11
``dataclasses._process_class``): 0.3-0.5 ms a class, about 20 ms for the value classes a ``mtp-audit checkpoint`` run
imports, as much as the interpreter's own start-up (``benchmarks/bench_checkpoint.py``). A class declared
``@dataclass(frozen=True, eq=False, repr=False)`` on :class:`Value` has only ``__init__`` and the two frozen-attribute
guards compiled; it inherits ``__eq__``, ``__hash__`` and ``__repr__`` from :class:`Value`, which behave as the
generated ones do (CPython 3.11 ``dataclasses._cmp_fn``, ``_hash_fn``, ``_repr_fn``):

- ``a == b``: when ``b`` is of exactly ``a``'s class, the tuples of their fields with ``compare=True`` compared, else
  ``NotImplemented`` (so Python falls back to identity). Python 3.13's generated ``__eq__`` compares field by field
  instead, which differs only for a value that is not equal to itself (a NaN: equal here when it is the same object);
- ``hash(a)``: the hash of the tuple of the fields with ``hash=True``, or ``hash=None`` and ``compare=True``;
- ``repr(a)``: ``QualName(field=repr(value), ...)`` over the fields with ``repr=True``, ``...`` for an instance met again
  while its own ``repr`` is being written (a cycle), per thread.

``dataclasses.fields``, ``replace``, ``asdict``, ``astuple``, the frozen-instance errors, ``__match_args__`` and pickling
are the dataclass machinery's own and unchanged; only ``__dataclass_params__`` says ``eq=False, repr=False``.
``tests/test_valueclass.py`` holds every such class of the package to the behaviour of the plain dataclass with the same
fields.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import Any

#: Per class: (the compared fields' values, the hashed fields' values, the names ``repr`` shows), built on first use.
_PLANS: dict[type, tuple[Callable[[Any], tuple[Any, ...]], Callable[[Any], tuple[Any, ...]], tuple[str, ...]]] = {}

#: ``(id(instance), thread)`` of the ``repr`` calls running (the cycle guard of ``dataclasses._recursive_repr``).
_IN_REPR: set[tuple[int, int]] = set()


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function of an instance giving the tuple of its attributes ``names`` (C speed: ``attrgetter``)."""
    if not names:
        return lambda _obj: ()
    get = attrgetter(*names)
    if len(names) == 1:
        return lambda obj: (get(obj),)
    return get


def _plan(cls: type) -> tuple[Callable[[Any], tuple[Any, ...]], Callable[[Any], tuple[Any, ...]], tuple[str, ...]]:
    """``cls``'s compared values, hashed values and shown names (from ``dataclasses.fields``), computed once."""
    got = _PLANS.get(cls)
    if got is None:
        fs = dataclasses.fields(cls)
        compared = tuple(f.name for f in fs if f.compare)
        hashed = tuple(f.name for f in fs if (f.compare if f.hash is None else f.hash))
        got = _PLANS[cls] = (_values(compared), _values(hashed), tuple(f.name for f in fs if f.repr))
    return got


class Value:
    """Base of a frozen dataclass declared ``@dataclass(frozen=True, eq=False, repr=False)``: its equality, hash and
    ``repr`` as ``@dataclass(frozen=True)`` would generate them (see the module docstring)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            values = _plan(self.__class__)[0]
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_plan(self.__class__)[1](self))

    def __repr__(self) -> str:
        key = id(self), get_ident()
        if key in _IN_REPR:
            return "..."
        _IN_REPR.add(key)
        try:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _plan(self.__class__)[2])
            return f"{self.__class__.__qualname__}({shown})"
        finally:
            _IN_REPR.discard(key)
