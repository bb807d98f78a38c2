"""The engine-neutral statement-order replay (mtp_audit.engines.code.statements) on small sources written for each Python
rule it follows; the vLLM functions themselves are replayed in tests/test_replay_vllm.py."""

from __future__ import annotations

import ast
import textwrap

from mtp_audit.engines.code.statements import UNKNOWN, HookRaise, Obj, Replay

SRC = textwrap.dedent('''
    MODES = Literal["a", "b"]

    class C:
        k: int | None = None
        mode: str | None = Field(default="a")

        def post(self):
            if self.mode in get_args(MODES) and self.mode != "b":
                logger.warning("mode %s", self.mode)
            if self.k > 1:
                self.big = True
            self.done = True

        def check(self):
            assert self.k is not None, f"k is required, got {self.k!r}"
            if self.k < 0:
                raise ValueError(f"k={self.k} must be >= 0")
            return self.k * 2

        def early(self):
            if self.flag:
                return "early"
            self.after = True
            return "late"

        def uses_helper(self):
            self.out = C._helper(self.name)

        @staticmethod
        def _helper(name):
            if name is None:
                return False
            parts = name.split(".")
            return len(parts) >= 2 and all(p.isidentifier() for p in parts)

        def build(self):
            self.cfg = Thing(self.k)
            self.arch = self.cfg.arch
''')


def _replay(**hooks) -> Replay:
    return Replay(ast.parse(SRC), "pkg/c.py", cls="C", hooks=hooks)


def test_none_compared_with_int_raises_type_error_at_its_line() -> None:
    r = _replay()
    (p,) = r.call("post", Obj("C", {"k": None, "mode": "a"}))
    assert p.raised is not None and p.raised.type == "TypeError"
    assert p.raised.message == "'>' not supported between instances of 'NoneType' and 'int'"
    assert p.raised.location == "pkg/c.py:11" and p.logs == [("mode %s", "pkg/c.py:10")]
    assert p.bound.get("done") is UNKNOWN


def test_known_values_take_one_path_and_unknown_ones_fork_only_when_the_outcome_differs() -> None:
    r = _replay()
    (p,) = r.call("post", Obj("C", {"k": 2, "mode": "b"}))
    assert p.raised is None and p.bound.get("big") is True and p.bound.get("done") is True and p.logs == []
    paths = r.call("post", Obj("C", {"k": UNKNOWN, "mode": "b"}))
    assert len(paths) == 2 and {p.bound.get("big") for p in paths} == {True, UNKNOWN}
    assert [a[:2] for a in paths[0].assumed] == [("self.k > 1", True)]


def test_false_assert_and_raise_end_the_path_with_their_message() -> None:
    r = _replay()
    (p,) = r.call("check", Obj("C", {"k": None}))
    assert (p.raised.type, p.raised.message, p.raised.location) == ("AssertionError", "k is required, got None", "pkg/c.py:16")
    (p,) = r.call("check", Obj("C", {"k": -3}))
    assert (p.raised.type, p.raised.message, p.raised.location) == ("ValueError", "k=-3 must be >= 0", "pkg/c.py:18")
    (p,) = r.call("check", Obj("C", {"k": 4}))
    assert p.raised is None and p.ret == 8
    paths = r.call("check", Obj("C", {"k": UNKNOWN}))
    assert sorted(str(p.raised.type) if p.raised else "returns" for p in paths) == ["AssertionError", "ValueError", "returns"]


def test_early_return_ends_the_function() -> None:
    r = _replay()
    (p,) = r.call("early", Obj("C", {"flag": True}))
    assert p.ret == "early" and p.bound.get("after") is UNKNOWN
    (p,) = r.call("early", Obj("C", {"flag": 0}))
    assert p.ret == "late" and p.bound.get("after") is True


def test_static_helpers_are_followed_with_str_methods_and_generators() -> None:
    r = _replay()
    for name, want in (("pkg.MyProposer", True), ("org/model", False), (None, False), ("nodots", False)):
        (p,) = r.call("uses_helper", Obj("C", {"name": name}))
        assert p.bound.get("out") is want, name


def test_hooks_stand_for_calls_outside_the_file() -> None:
    r = _replay(Thing=lambda rp, p, args, kw, n: Obj("Thing", {"arch": f"X{args[0]}"}))
    (p,) = r.call("build", Obj("C", {"k": 3}))
    assert p.bound.get("arch") == "X3"

    def refuse(rp, p, args, kw, n):
        raise HookRaise("ValueError", "not supported", "other.py:9")

    (p,) = _replay(Thing=refuse).call("build", Obj("C", {"k": 3}))
    assert str(p.raised) == "ValueError: not supported (other.py:9)"


def test_field_defaults_are_read_from_the_class() -> None:
    assert _replay().field_defaults() == {"k": None, "mode": "a"}


def test_unfollowable_statements_lose_the_path_instead_of_guessing() -> None:
    src = "class C:\n    def f(self):\n        while self.x:\n            self.y = 1\n"
    (p,) = Replay(ast.parse(src), "w.py", cls="C").call("f", Obj("C"))
    assert p.lost == "While statement at w.py:3 is not replayed"
