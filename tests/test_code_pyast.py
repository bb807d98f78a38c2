"""The engine-neutral ``ast`` helpers (mtp_audit.engines.code.pyast) on snippets in the shape of vLLM 0.33.0's
vllm/config/speculative.py (nested Literals, a tuple set, a log call before a write)."""

from __future__ import annotations

import ast

from mtp_audit.engines.code.pyast import dotted, is_log_call, module_string_sets, parse_source, strings_in

SRC = '''from typing import Literal
MTPModelTypes = Literal["deepseek_mtp", "mimo_mtp"]
EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes]
KEEP = ("eagle", "eagle3")
ONE = "x"
logger.warning("method `%s` is deprecated and replaced with mtp.", m)
'''


def test_module_string_sets_flattens_nested_literals() -> None:
    tree, _, gap = parse_source("speculative.py", SRC.encode())
    assert gap is None
    sets = module_string_sets(tree)
    assert sets["EagleModelTypes"] == {"values": ["eagle", "eagle3", "deepseek_mtp", "mimo_mtp"], "line": 3, "kind": "Literal"}
    assert sets["KEEP"] == {"values": ["eagle", "eagle3"], "line": 4, "kind": "tuple"}
    assert "ONE" not in sets


def test_log_call_and_message_text() -> None:
    call = ast.parse(SRC).body[-1].value
    assert is_log_call(call) and dotted(call.func) == "logger.warning"
    assert strings_in(call) == "method `%s` is deprecated and replaced with mtp."
    assert not is_log_call(ast.parse("print('x')").body[0].value)


def test_parse_source_never_raises() -> None:
    assert parse_source("a.py", b"\xff")[2] == "not UTF-8 (byte 0); not parsed"
    assert parse_source("a.py", b"def (:\n")[2].startswith("does not parse as Python 3 at line 1")


def test_fewer_collections_in_overlapping_threads_puts_the_thresholds_back() -> None:
    """Two audits in two threads whose parse phases overlap (the first ends while the second still parses): the
    process's GC thresholds are the caller's afterwards (each block used to restore what it found, so the one that
    entered second put back the raised threshold)."""
    import gc
    import threading

    from mtp_audit.engines.code.index import fewer_collections

    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
        seen: list[int] = []

        def one() -> None:
            with fewer_collections():
                first_in.set()
                second_in.wait(5)
            first_out.set()

        def two() -> None:
            first_in.wait(5)
            with fewer_collections():
                second_in.set()
                first_out.wait(5)
                seen.append(gc.get_threshold()[0])  # still parsing: still raised

        threads = [threading.Thread(target=one), threading.Thread(target=two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert seen == [20000]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
