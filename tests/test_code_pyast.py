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
