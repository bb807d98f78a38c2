"""Library misuse: the top-level functions under hypothesis strategies of wrong types.

Invariant: a wrong type or an unknown keyword argument raises ``TypeError`` whose one-line message names the
function and the argument; never ``AttributeError``/``KeyError`` from inside, never an ignored argument.
``mtp_audit.preflight(...)`` works before and after any ``mtp_audit.preflight.*`` import.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fuzzkit import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import mtp_audit
from mtp_audit.api import SPECS

REPO = Path(__file__).resolve().parents[1]
MIMO = str(REPO / "fixtures" / "checkpoint" / "jj8127--mimo_kor")

#: Valid values for the required arguments, so that only the argument under test is wrong.
REQUIRED: dict[str, dict[str, Any]] = {
    "audit_checkpoint": {"target": MIMO},
    "audit_sglang": {"target": None},
    "diff_sglang": {"old_report": {}, "new_report": {}},
    "diff_vllm": {"old_report": {}, "new_report": {}},
    "audit_vllm": {"target": None},
    "compare_checkpoints": {"base": MIMO, "derived": MIMO},
    "audit_launch": {"argv": ["vllm", "serve", MIMO]},
    "get_rule": {"rule_id": "MTP001"},
    "exit_code": {"report": None, "fail_on": None},
    "render": {"report": None, "fmt": "json"},
    "launch_result": {"report": None},
    "checkpoint_facts": {"report": None},
    "fp4_readiness": {"report": None},
    "apply_config": {"report": None},
}

WRONG = st.one_of(st.integers(), st.floats(allow_nan=True), st.binary(max_size=8), st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.integers(), st.integers(), max_size=2), st.just(object()), st.just(b"x"),
                  st.sets(st.text(max_size=3), max_size=2), st.just(["a", 1]), st.just({"K": 1}))

CASES = [(fn, p) for fn, params in sorted(SPECS.items()) for p in sorted(params) if SPECS[fn][p][1] != "anything"]


@fuzz_settings(300)
@given(case=st.sampled_from(CASES), data=st.data())
def test_wrong_types_raise_a_clear_type_error(case: tuple[str, str], data: st.DataObject) -> None:
    fn_name, param = case
    test, expected = SPECS[fn_name][param]
    bad = data.draw(WRONG.filter(lambda v: not test(v)))
    kwargs = dict(REQUIRED.get(fn_name, {}))
    if "report" in kwargs:  # the functions that read a report get a real one; the wrong value replaces it below
        from mtp_audit.report import Report

        kwargs["report"] = Report.build("checkpoint", "x")
    kwargs[param] = bad
    with pytest.raises(TypeError) as err:
        getattr(mtp_audit, fn_name)(**kwargs)
    message = str(err.value)
    assert message.startswith(f"{fn_name}(") and param in message and "\n" not in message


@fuzz_settings(100)
@given(fn_name=st.sampled_from(sorted(SPECS)), key=st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12))
def test_unknown_keyword_arguments_raise(fn_name: str, key: str) -> None:
    import inspect

    from mtp_audit.engines.registry import engine_ids

    fn = getattr(mtp_audit, fn_name)
    if key in inspect.signature(fn).parameters or key in ("offline", "jobs", "token"):
        return
    if fn_name == "audit_launch" and key.removeprefix("compare_") in engine_ids():  # release keywords (**releases)
        return
    if fn_name == "render":  # its **sarif keywords are the SARIF renderer's, passed on only for fmt="sarif"
        return
    kwargs = dict(REQUIRED.get(fn_name, {}), **{key: 1})
    if "report" in kwargs:
        from mtp_audit.report import Report

        kwargs["report"] = Report.build("checkpoint", "x")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        fn(**kwargs)


def test_preflight_is_callable_after_its_subpackage_is_imported() -> None:
    code = ("import mtp_audit\n"
            "from mtp_audit.launch import audit_launch\n"
            "import mtp_audit.preflight.facts\n"
            "r = mtp_audit.preflight(env_dumps=[])\n"
            "print(type(r).__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Report"


def test_examples_from_the_report() -> None:
    with pytest.raises(TypeError, match=r"audit_launch\(argv=...\)"):
        mtp_audit.audit_launch([1, 2])
    with pytest.raises(TypeError, match=r"audit_launch\(env=...\)"):
        mtp_audit.audit_launch(["vllm", "serve", "m"], env=["A=1"])
    with pytest.raises(TypeError, match=r"get_rule\(rule_id=...\)"):
        mtp_audit.get_rule(None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sglnag'"):
        mtp_audit.audit_launch(["vllm", "serve", "m"], sglnag="x")


def test_fail_on_takes_the_cli_spelling_and_a_wrong_word_is_a_value_error() -> None:
    """``exit_code(report, fail_on="error")`` was a TypeError ("expected a Severity or None"): the CLI's --fail-on
    words are accepted (``never`` = None); a word outside them, like ``render(report, "xml")`` (was a TypeError
    too), is a ValueError: the type is right, the value is not."""
    from mtp_audit.report import Finding, Location, Report, Severity

    rep = Report.build("checkpoint", "x", findings=[Finding("MTP001", Severity.WARNING, "w", Location(path="x"))])
    assert [mtp_audit.exit_code(rep, w) for w in ("error", "WARNING", "info", "never")] == [0, 1, 1, 0]
    assert mtp_audit.exit_code(rep, Severity.WARNING) == 1 and mtp_audit.exit_code(rep, None) == 0
    with pytest.raises(ValueError, match=r"^exit_code\(fail_on=...\): expected .* got str 'fatal'$"):
        mtp_audit.exit_code(rep, "fatal")
    with pytest.raises(ValueError, match=r"^render\(fmt=...\): expected one of 'text', 'json', 'markdown', 'sarif', got str 'xml'$"):
        mtp_audit.render(rep, "xml")
    assert mtp_audit.render(rep, "text", fail_on="never") == mtp_audit.render(rep, "text", fail_on=None)


def test_a_deprecated_keyword_warns_at_the_callers_line() -> None:
    """The DeprecationWarning of ``preflight(env_dump=...)`` named mtp_audit/api.py (the wrapper), not the call."""
    import warnings

    dump = str(REPO / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        mtp_audit.preflight(env_dump=dump)
    (w,) = [x for x in caught if issubclass(x.category, DeprecationWarning)]
    assert (w.filename, w.lineno) == (__file__, line) and str(w.message) == "preflight(env_dump=...) is deprecated; use env_dumps=..."
