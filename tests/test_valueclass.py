"""``mtp_audit.valueclass.Value``: every frozen dataclass of the package declared on it compares, hashes and prints as
the plain ``@dataclass(frozen=True)`` with the same fields would (the methods that class would have compiled are
called on the same instances and must answer the same)."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
from pathlib import Path

import pytest

from mtp_audit.valueclass import Value

PKG = Path(__file__).resolve().parents[1] / "mtp_audit"


def _value_classes() -> list[type]:
    """Every subclass of ``Value`` the package declares (each module naming ``(Value)`` imported)."""
    for p in sorted(PKG.rglob("*.py")):
        if "(Value):" in p.read_text(encoding="utf-8"):
            rel = p.relative_to(PKG.parent).with_suffix("")
            importlib.import_module(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    out, todo = [], list(Value.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return sorted(out, key=lambda c: (c.__module__, c.__qualname__))


CLASSES = _value_classes()


def _reference(cls: type) -> type:
    """The plain frozen dataclass with ``cls``'s fields: the methods ``@dataclass(frozen=True)`` would have compiled."""
    specs = [(f.name, f.type, dataclasses.field(compare=f.compare, hash=f.hash, repr=f.repr)) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True)


def _bare(cls: type, values: list[object]) -> object:
    """An instance of ``cls`` holding ``values`` in its fields, in order (no ``__init__`` or ``__post_init__`` run)."""
    obj = object.__new__(cls)
    for f, v in zip(dataclasses.fields(cls), values):
        object.__setattr__(obj, f.name, v)
    return obj


def test_the_package_declares_them():
    names = {f"{c.__module__}.{c.__qualname__}" for c in CLASSES}
    assert {"mtp_audit.report.model.Finding", "mtp_audit.report.model.Report", "mtp_audit.checkpoint.typed.CheckpointAnswer",
            "mtp_audit.sources.local.ShardHeader"} <= names
    assert len(CLASSES) == 34


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_declared_frozen_without_generated_methods(cls: type):
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert (params.frozen, params.eq, params.repr) == (True, False, False)
    assert not {"__eq__", "__hash__", "__repr__"} & set(cls.__dict__)  # Value's, not the class's own


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_same_equality_hash_and_repr_as_the_plain_dataclass(cls: type):
    ref = _reference(cls)
    n = len(dataclasses.fields(cls))
    a = _bare(cls, list(range(n)))
    same = _bare(cls, list(range(n)))
    for obj in (a, same):
        assert repr(obj) == ref.__repr__(obj)
        assert hash(obj) == ref.__hash__(obj)
    assert (a == same) is ref.__eq__(a, same) is True
    for i in range(n):  # each field changed in turn: equal again only where the field is not compared
        other = _bare(cls, [*range(i), 100 + i, *range(i + 1, n)])
        assert (a == other) is ref.__eq__(a, other)
        assert (hash(a) == hash(other)) is (ref.__hash__(a) == ref.__hash__(other))
        assert repr(other) == ref.__repr__(other)
    assert a.__eq__(object()) is NotImplemented and a != object()


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _Odd(Value):
    a: int
    b: list[object] = dataclasses.field(default_factory=list, compare=False)
    c: str = dataclasses.field(default="hidden", repr=False)
    d: int = dataclasses.field(default=0, hash=False)


@dataclasses.dataclass(frozen=True)
class _OddPlain:
    a: int
    b: list[object] = dataclasses.field(default_factory=list, compare=False)
    c: str = dataclasses.field(default="hidden", repr=False)
    d: int = dataclasses.field(default=0, hash=False)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _One(Value):
    a: int


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _None(Value):
    pass


def test_field_options_cycles_and_the_dataclass_machinery():
    x, p = _Odd(1, [], "s", 2), _OddPlain(1, [], "s", 2)
    assert repr(x) == repr(p).replace("_OddPlain", "_Odd") == "_Odd(a=1, b=[], d=2)"
    assert x == _Odd(1, [9], "s", 2) and p == _OddPlain(1, [9], "s", 2)  # b is not compared
    assert (x == _Odd(1, [], "t", 2)) is (p == _OddPlain(1, [], "t", 2)) is False  # c is, though not shown
    assert hash(_Odd(1, d=2)) == hash(_Odd(1, d=3)) and hash(_OddPlain(1, d=2)) == hash(_OddPlain(1, d=3))
    assert (x == _Odd(1, [], "s", 3)) is (p == _OddPlain(1, [], "s", 3)) is False
    loop: list[object] = []
    y, q = _Odd(1, loop), _OddPlain(1, [])
    loop.append(y)
    q.b.append(q)
    assert repr(y) == "_Odd(a=1, b=[...], d=0)" and repr(q) == "_OddPlain(a=1, b=[...], d=0)"
    assert repr(_One(3)) == "_One(a=3)" and hash(_One(3)) == hash((3,)) and _One(3) == _One(3) != _One(4)
    assert repr(_None()) == "_None()" and _None() == _None() and hash(_None()) == hash(())
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2  # type: ignore[misc]
    assert dataclasses.replace(x, a=5) == _Odd(5, [], "s", 2)
    assert dataclasses.asdict(_One(3)) == {"a": 3} and _Odd.__match_args__ == ("a", "b", "c", "d")
    assert pickle.loads(pickle.dumps(_One(3))) == _One(3)
    assert len({_One(1), _One(1), _One(2)}) == 2
