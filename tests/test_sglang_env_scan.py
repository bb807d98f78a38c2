"""The env-var scan (``scan_env``: substring gates, then the read regex only around each hint) answers exactly what the
two regular expressions it stands for answer over the whole file."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.engines.sglang import scan
from mtp_audit.engines.sglang.target import open_target
from tests.conftest import sglang_wheel


def _by_regex(data: bytes) -> dict[str, list[list[Any]]]:
    """The specification: ``_ENV_DEFINED`` and ``_ENV_READ`` run over the whole file, reads in comments dropped."""
    def line(at: int) -> int:
        return data.count(b"\n", 0, at) + 1

    defined = [[m.group(1).decode(), line(m.start(1))] for m in scan._ENV_DEFINED.finditer(data)]
    read = [[next(g for g in m.groups() if g).decode(), line(m.start())] for m in scan._ENV_READ.finditer(data)
            if not scan._in_comment(data, m.start())]
    return {"defined": defined, "read": read}


def test_every_file_of_a_real_wheel() -> None:
    """SGLang 0.5.23: 3,985 files; 46 of them read or define such a variable."""
    tree = open_target(sglang_wheel("0.5.23"))
    try:
        hits = 0
        for rel in sorted(tree.files):
            data = tree.read(rel) or b""
            got = scan.scan_env(data)
            assert got == _by_regex(data), rel
            hits += bool(got["defined"] or got["read"])
    finally:
        tree.close()
    assert hits == 46


PIECES = [b"Env", b"env", b"envs.", b"EnvBool(", b"os.environ", b".get(", b"[", b"(", b'"', b"'", b"getenv(",
          b"get_bool_env_var(", b"MTP", b"SPEC", b"FP4", b"NEXTN", b"SGLANG_", b"_X", b"NV", b" ", b"\t", b"\n",
          b"    ", b" = ", b": bool", b"#", b"x", b"A", b"9", b"_", b".", b"\r\n"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_random_sources(parts: list[bytes]) -> None:
    data = b"".join(parts)
    assert scan.scan_env(data) == _by_regex(data)
