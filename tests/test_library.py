"""The library as another tool uses it: typed (mypy --strict), listed by help()/dir(), strict keywords,
typed results, no side effects on the host process."""

from __future__ import annotations

import gc
import logging
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

import mtp_audit

REAP = FIXTURES / "checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
DUMP = FIXTURES / "preflight/envdumps/sglang-13198.txt"
AUDIT_FUNCTIONS = ("audit_checkpoint", "compare_checkpoints", "audit_sglang", "diff_sglang", "audit_vllm", "diff_vllm",
                   "audit_machine", "audit_launch")


@pytest.mark.slow
def test_a_script_using_the_library_type_checks_under_mypy_strict() -> None:
    pytest.importorskip("mypy")
    script = REPO / "tests/data/typed/deploy_gate.py"
    # --follow-imports=silent: the script is checked strictly against the library's types; the library's own
    # internals are not part of this check
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir", "/dev/null", str(script)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and mypy does see real types: a wrong use is an error
    bad = script.parent / "bad_use.py"
    try:
        bad.write_text("import mtp_audit\nr = mtp_audit.launch_result(mtp_audit.audit_launch(['x']))\nv: int = r.verdict\n")
        proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                               "--cache-dir", "/dev/null", str(bad)], capture_output=True, text=True, cwd=REPO, timeout=600)
        assert proc.returncode == 1 and "union-attr" in proc.stdout and "LaunchVerdict" in proc.stdout, proc.stdout
    finally:
        bad.unlink()


def test_py_typed_ships() -> None:
    assert (REPO / "mtp_audit/py.typed").is_file()
    assert '"py.typed"' in (REPO / "pyproject.toml").read_text()


def test_help_and_dir_list_every_audit_function() -> None:
    import pydoc

    text = pydoc.render_doc(mtp_audit, renderer=pydoc.plaintext)
    names = dir(mtp_audit)
    for name in AUDIT_FUNCTIONS:
        assert name in names and name in mtp_audit.__all__
        assert f"{name}(" in text or f"{name} = " in text  # an alias shows as "audit_machine = preflight(...)"
        assert callable(getattr(mtp_audit, name))


def test_preflight_is_callable_even_after_its_package_is_imported() -> None:
    """``mtp_audit.preflight`` names both a function and a package; importing a module of the package makes the
    attribute the package, which must still run the preflight when called."""
    import mtp_audit.preflight.envdump  # noqa: F401

    report = mtp_audit.preflight(env_dumps=[DUMP])
    assert [f.rule_id for f in report.findings] == [f.rule_id for f in mtp_audit.audit_machine(env_dumps=[DUMP]).findings]


def test_misspelt_keywords_raise_type_error() -> None:
    with pytest.raises(TypeError, match="offlien"):
        mtp_audit.audit_checkpoint(REAP, offlien=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mtp_audit.preflight(env_dump_file=DUMP)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mtp_audit.audit_launch(["python"], sglnag="x")  # type: ignore[call-arg]


def test_old_keyword_names_still_work_with_a_deprecation_warning() -> None:
    new = mtp_audit.preflight(env_dumps=[DUMP])
    with pytest.warns(DeprecationWarning, match=r"preflight\(facts=...\) is deprecated; use machine_facts="):
        from mtp_audit.preflight.envdump import parse_dump

        old = mtp_audit.preflight(facts=parse_dump(DUMP.read_text()))
    assert [f.rule_id for f in old.findings] == [f.rule_id for f in new.findings]
    with pytest.raises(TypeError, match="both"):
        mtp_audit.preflight(facts=None, machine_facts=None)


def test_audit_launch_splits_one_string_like_a_shell() -> None:
    cmd = f"python -m sglang.launch_server --model-path '{REAP}' --speculative-algorithm NEXTN"
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        as_string = mtp_audit.audit_launch(cmd, env_dumps=DUMP, sglang=None, environ={})
    as_list = mtp_audit.audit_launch(cmd.replace("'", "").split(), env_dumps=DUMP, sglang=None, environ={})
    assert as_string.to_dict() == as_list.to_dict()
    assert as_string.targets[0].name.startswith("python -m sglang.launch_server --model-path")


def test_typed_results_from_real_reports() -> None:
    ck = mtp_audit.checkpoint_facts(mtp_audit.audit_checkpoint(REAP))
    assert ck is not None and ck.mtp_layers_declared == 1 and ck.mtp_layers_found == 0 and ck.mtp_present is False
    fp4 = mtp_audit.fp4_readiness(mtp_audit.preflight(env_dumps=DUMP))
    assert fp4 is not None and fp4.native_fp4 == "not capable" and fp4.compute_capabilities == ("12.1",)
    report = mtp_audit.audit_launch(["python", "-m", "sglang.launch_server", "--model-path", str(REAP),
                                     "--speculative-algorithm", "NEXTN"], env_dumps=DUMP, environ={})
    res = mtp_audit.launch_result(report)
    assert res is not None and isinstance(res.verdict, mtp_audit.LaunchVerdict)
    assert res.verdict is mtp_audit.LaunchVerdict.FIX_FIRST and res.engine == "sglang"
    assert res.corrected_argv is None or res.corrected_argv[:3] == ("python", "-m", "sglang.launch_server")
    assert mtp_audit.launch_result(mtp_audit.audit_checkpoint(REAP)) is None


def test_apply_config_is_the_cli_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.mtp-audit]\nfail-on = "warning"\nignore = [{ rule = "MTP001", reason = "pruned fixture" }]\n')
    report = mtp_audit.audit_checkpoint(REAP)
    done = mtp_audit.apply_config(report, cfg)
    assert [i.finding.rule_id for i in done.report.ignored] == ["MTP001"] and done.exit_code == 0
    assert done.fail_on is mtp_audit.Severity.WARNING
    assert mtp_audit.apply_config(report, cfg, fail_on="never").fail_on is None
    found = mtp_audit.apply_config(report, fail_on="info")  # config=None: the pyproject.toml of the current folder
    assert found.exit_code == 0 and found.fail_on is mtp_audit.Severity.INFO and len(found.report.ignored) == 1
    with pytest.raises(mtp_audit.InputError, match="no such file|cannot read"):
        mtp_audit.apply_config(report, tmp_path / "missing.toml")


def _tracked(objs: list[object]) -> int:
    """How many of ``objs`` the collector's generations hold (a frozen object is in none of them)."""
    ids = {id(o) for o in gc.get_objects()}
    return sum(id(o) in ids for o in objs)


def test_no_side_effects_on_the_host_process(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """The garbage collector as the host left it (enabled, disabled, or with frozen objects), nothing printed.

    The host's frozen objects stay frozen (none back in a generation, as ``gc.unfreeze()`` would put them) and
    the audit freezes nothing of its own (its report is in a generation; the freeze count never grows). The
    count is not compared for equality: a frozen object that the interpreter frees during the audit (a cache
    entry replaced, a frame of the test runner) leaves it by reference counting, which depends on what ran
    before in the same process."""
    keep = [[i] for i in range(10)]  # lists are tracked by the collector: their generation can be checked
    gc.freeze()
    frozen = gc.get_freeze_count()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            report = mtp_audit.audit_checkpoint(REAP)
            assert gc.isenabled() is enabled
            assert _tracked(keep) == 0 and 0 < gc.get_freeze_count() <= frozen
            assert _tracked([report]) == 1
    finally:
        gc.enable()
        gc.unfreeze()
    assert _tracked(keep) == len(keep)  # the check itself can tell frozen from not
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert not logging.getLogger("mtp_audit").handlers or all(isinstance(h, logging.NullHandler) for h in logging.getLogger("mtp_audit").handlers)


@pytest.mark.network
def test_cache_writes_can_be_turned_off_or_pointed_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``MTP_AUDIT_CACHE_DIR=""`` turns the result cache off; a folder points it there."""
    from conftest import sglang_wheel

    whl = sglang_wheel("0.5.4")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", "")
    off = mtp_audit.audit_sglang(whl)
    assert not (tmp_path / "home").exists()
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "elsewhere"))
    on = mtp_audit.audit_sglang(whl)
    assert any((tmp_path / "elsewhere").rglob("*.json")) and not (tmp_path / "home").exists()
    assert [f.rule_id for f in on.findings] == [f.rule_id for f in off.findings]


def test_the_stub_names_every_public_name() -> None:
    """``__init__.pyi`` (what type checkers read) and the lazy loader (what runs) list the same names."""
    import ast

    tree = ast.parse((REPO / "mtp_audit/__init__.pyi").read_text())
    stubbed = {a.asname for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names}
    assert stubbed == set(mtp_audit.__all__) - {"__version__"}
