"""The exact byte pre-filters of the SGLang scan (mtp_audit/engines/sglang/prefilter.py) give the answers of the
regular expressions they stand for: on random byte strings built from the pieces those patterns look at, and on
every .py file of the real 0.5.23 wheel."""

from __future__ import annotations

import re
import zipfile

import pytest
from conftest import sglang_wheel
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.engines.sglang.prefilter import (
    ASSERT_ON_FIELD,
    FIELD_COPY_LINE,
    AssertedFieldFinder,
    WordFinder,
)

#: Pieces the two patterns turn on: the fields, prefixes and suffixes, the run classes either side, line ends.
PIECES = [b"assert", b"assert(", b"assert ", b"(", b" ", b"\t", b"\n", b"\r", b"\f", b"\v", b".", b"x", b"_", b"1", b"#",
          b" = ", b"=", b"_str", b"decode_", b"attention_backend", b"moe_runner_backend", b"moe_a2a_backend",
          b"fp4_gemm_backend", b"speculative_algorithm", b"server_args.", b"self.", b"\xc3\xa9", b"\x00", b"'", b")"]
FINDER = AssertedFieldFinder()


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join))
def test_asserted_field_finder_is_the_regex(data: bytes) -> None:
    assert (FINDER.search(data) is not None) == (FINDER.pattern.search(data) is not None)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join))
def test_word_finder_is_the_regex(data: bytes) -> None:
    w = WordFinder(b"assert")
    assert (w.search(data) is not None) == (w.pattern.search(data) is not None)


def test_the_finder_pattern_is_the_two_documented_alternatives() -> None:
    assert FINDER.pattern.pattern == b"(?m)" + ASSERT_ON_FIELD + b"|" + FIELD_COPY_LINE
    assert re.compile(b"(?m)" + FIELD_COPY_LINE).search(b"x\n    b = server_args.decode_attention_backend_str \nassert b")


@pytest.mark.parametrize(("data", "hit"), [
    (b"assert (\n    runner.server_args.attention_backend == 'triton'\n)", True),  # 0.5.23 shape, across lines
    (b"assert  x.moe_runner_backend in ('a',)", True),
    (b"assert x.moe_runner_backendz", False),  # not the whole field name
    (b"assert x.y(z).moe_runner_backend", False),  # a call between: [\w.]* stops at ")"
    (b"xassert(a.b.speculative_algorithm)", True),  # the pattern has no boundary before "assert"
    (b"    backend = server_args.prefill_attention_backend\n", True),
    (b"    backend = server_args.prefill_attention_backend\r\nassert backend", True),  # a CRLF checkout
    (b"    backend = server_args.prefill_attention_backend\rx\n", False),  # a lone CR is no line end here
    (b"    backend = server_args.prefill_attention_backend # c\n", False),
    (b"backend = server_args.attention_backend\n", False),  # not indented
    (b"assert attention_backend", False),  # no attribute
])
def test_asserted_field_finder_on_shapes(data: bytes, hit: bool) -> None:
    assert (FINDER.search(data) is not None) is hit
    assert (FINDER.pattern.search(data) is not None) is hit


def test_word_finder_rejects_a_non_word() -> None:
    with pytest.raises(ValueError):
        WordFinder(b"a b")


def test_finders_agree_with_their_regexes_on_every_file_of_the_real_wheel() -> None:
    """Every .py file of the SGLang 0.5.23 wheel (4,719 files): the same answers, 21 files with a field match (checked with
    the regex when written)."""
    word = WordFinder(b"assert")
    matched = 0
    with zipfile.ZipFile(sglang_wheel("0.5.23")) as zf:
        names = [n for n in zf.namelist() if n.endswith(".py")]
        for name in names:
            data = zf.read(name)
            want = FINDER.pattern.search(data) is not None
            assert (FINDER.search(data) is not None) == want, name
            assert (word.search(data) is not None) == (word.pattern.search(data) is not None), name
            matched += want
    assert len(names) == 4719
    assert matched == 21


# --- source text cut from one line table per file (mtp_audit/engines/code/index.py) ----------------------------

SOURCES = [
    "def f(x):\n    return x > 1\n",
    "def f(x):\r\n    y = 'é'  # ü\r\n    return y\r\n",
    "x = 1\rdef g():\r    return 'ß' + \"\\u00e9\"\r",
    "class C:\n    def m(self):\n        return (self.a\n                > 2)\n\x0c\ndef h(): pass",
    "@dec(1)\nasync def k(a: int = 2) -> 'Ø':\n    await a\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_source_segment_is_get_source_segment(source: str) -> None:
    import ast

    from mtp_audit.engines.code.index import ModuleIndex

    tree = ast.parse(source)
    ix = ModuleIndex("x.py", source, tree)
    nodes = [n for n in ast.walk(tree) if hasattr(n, "end_lineno")]
    assert nodes
    for n in nodes:
        assert ix.source_segment(n) == ast.get_source_segment(source, n)
    assert "".join(ix.source_lines()) == source


def test_source_segment_on_every_function_of_the_real_spec_hook_file() -> None:
    """0.5.23 ``srt/arg_groups/speculative_hook.py``: every function's text as ``ast.get_source_segment`` gives it."""
    import ast

    from mtp_audit.engines.code.index import ModuleIndex

    with zipfile.ZipFile(sglang_wheel("0.5.23")) as zf:
        text = zf.read("sglang/srt/arg_groups/speculative_hook.py").decode()
    tree = ast.parse(text)
    ix = ModuleIndex("speculative_hook.py", text, tree)
    fns = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert len(fns) == 20
    for fn in fns:
        assert ix.source_segment(fn) == ast.get_source_segment(text, fn)


TRACKED_PIECES = [b".", b"x", b"_", b"1", b" ", b"\n", b"(", b"speculative_", b"speculative_algorithm", b"quantization",
                  b"fp4", b"nvfp4", b"moe_runner_backend", b"moe_a2a_backend", b"\xc3\xa9", b"self.", b"=="]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(TRACKED_PIECES), max_size=30).map(b"".join))
def test_attribute_finder_is_the_regex(data: bytes) -> None:
    from mtp_audit.engines.sglang.names import TRACKED_SOURCE
    from mtp_audit.engines.sglang.prefilter import AttributeFinder

    f = AttributeFinder(TRACKED_SOURCE)
    assert (f.search(data) is not None) == (f.pattern.search(data) is not None)


def test_attribute_finder_shapes() -> None:
    from mtp_audit.engines.sglang.names import TRACKED_SOURCE
    from mtp_audit.engines.sglang.prefilter import AttributeFinder

    f = AttributeFinder(TRACKED_SOURCE)
    assert f.search(b"x.speculative_num_steps") and not f.search(b"x.speculative_") and not f.search(b"speculative_x")
    assert f.search(b"a.quantization)") and not f.search(b"a.quantization_config") and not f.search(b"a.weight_quantization")
    assert f.search(b"cfg.use_nvfp4_gemm") and not f.search(b"cfg. nvfp4") and f.search(b"self.fp4")
    assert not f.search(b"x" * 5000 + b"fp4" * 3000)  # one long run: linear, no dot before it
    with pytest.raises(ValueError):
        AttributeFinder(r"\w+x")


@pytest.mark.parametrize(("data", "hit"), [
    (b"x.quantization", True), (b"(x.  # note\n  quantization)", True), (b"(x.\n quantization)", True), (b"x. \\\n quantization", True),
    (b"quantization=1", False), (b"x.quantization_config", False), (b"x.weight_quantization", False), (b"def quantization():", False),
])
def test_attribute_named(data: bytes, hit: bool) -> None:
    from mtp_audit.engines.sglang.prefilter import attribute_named

    assert attribute_named(data, {"quantization"}) is hit


@pytest.mark.parametrize(("data", "hit"), [
    (b"class ModelConfig:", True), (b"x = 1\nclass \\\n  ModelConfig(Base):", True), (b"class\tModelConfig", True),
    (b"from a import (\n    ModelConfig,\n)", False), (b"subclass ModelConfig", False), (b"class ModelConfigs:", False),
    (b"ModelConfig(quantization=q)", False),
])
def test_class_named(data: bytes, hit: bool) -> None:
    from mtp_audit.engines.sglang.prefilter import class_named

    assert class_named(data, {"ModelConfig"}) is hit


def test_names_outside_ascii_are_seen_in_their_nfkc_form() -> None:
    from mtp_audit.engines.sglang.flow import may_consume, may_refill

    assert may_consume("x.ｑuantization  # é\n".encode(), {"quantization"})  # fullwidth q: NFKC gives q
    assert may_refill("class ＭodelConfig:\n".encode(), {"ModelConfig"})
    assert not may_refill("class Other:  # é\n".encode(), {"ModelConfig"})
