"""Configuration: ``[tool.mtp-audit]`` in the nearest pyproject.toml (or ``--config FILE``), ``--ignore RULE``,
per-target overrides, expiring ignores; ignored findings counted, listed with -v, marked in JSON and SARIF.

Real inputs: the REAP checkpoint (MTP001 error, exit 1 by default) and the stored H200 facts (MTP200 error
and MTP228 info).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from mtp_audit.cli.main import main
from mtp_audit.report.ignores import Ignore
from mtp_audit.report.settings import Settings, SettingsError, parse_settings, resolve

ROOT = Path(__file__).resolve().parents[1]
REAP = ROOT / "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
H200 = ROOT / "fixtures/preflight/h200-live-facts.json"
SCHEMA = json.loads((ROOT / "mtp_audit/schema/report.schema.json").read_text())
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())


def run(capsys, args: list[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder as the current directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(proj: Path, body: str, name: str = "pyproject.toml") -> Path:
    p = proj / name
    p.write_text(body)
    return p


def test_no_config_keeps_the_defaults(proj, capsys) -> None:
    rc, out, err = run(capsys, ["checkpoint", str(REAP)])
    assert rc == 1 and err == ""
    assert out.splitlines()[-1] == "1 finding (1 error, 0 warning, 0 info); 1 not examined (0 blocking); status: findings"


def test_fail_on_and_ignore_from_pyproject(proj, capsys) -> None:
    write(proj, '[project]\nname = "x"\n\n[tool.mtp-audit]\nfail-on = "info"\n'
                'ignore = [{ rule = "MTP200", reason = "we serve this H200 with W4A16 on purpose" }]\n')
    rc, out, err = run(capsys, ["preflight", "--facts", str(H200)])
    assert rc == 1 and err == ""  # MTP228 (info) is at fail-on info; MTP200 is ignored
    lines = out.splitlines()
    assert lines[0].endswith("(exit 1; 1 ignored)")
    assert [ln.split(": ", 2)[1] for ln in lines if ln.startswith("cuda:0: ")] == ["MTP228 info"]
    assert lines[-1] == "1 finding (0 error, 0 warning, 1 info); 1 ignored; status: pass"
    rc, out, _ = run(capsys, ["preflight", "--facts", str(H200), "-v"])
    i = out.splitlines().index("ignored (1):")
    assert out.splitlines()[i + 1].startswith("  cuda:0: MTP200 warning: GPU 0 (NVIDIA H200, compute capability 9.0) has no FP4 tensor cores")
    assert out.splitlines()[i + 1].endswith("[ignored: we serve this H200 with W4A16 on purpose; pyproject.toml]")
    # the command line wins over the file
    rc, _, _ = run(capsys, ["preflight", "--facts", str(H200), "--fail-on", "error"])
    assert rc == 0


def test_config_is_found_walking_up_and_files_without_the_table_are_skipped(proj, capsys, monkeypatch) -> None:
    write(proj, '[tool.mtp-audit]\nfail-on = "never"\n')
    sub = proj / "a" / "b"
    sub.mkdir(parents=True)
    (proj / "a" / "pyproject.toml").write_text('[project]\nname = "mtp-audit-user"\n')  # names us, has no table
    monkeypatch.chdir(sub)
    rc, _, err = run(capsys, ["checkpoint", str(REAP)])
    # found, but a discovered file may not lower the gate (the audited checkout must not choose its own verdict)
    assert rc == 1 and err.startswith(f"mtp-audit: warning: {proj / 'pyproject.toml'}: fail-on = \"never\" in a discovered")
    rc, _, err = run(capsys, ["checkpoint", str(REAP), "--config", str(proj / "pyproject.toml")])
    assert rc == 0 and err == ""


def test_explicit_config_file_with_top_level_keys(proj, capsys) -> None:
    cfg = write(proj, 'ignore = [{ rule = "mtp001", reason = "pruned fixture" }]\n', "ci.toml")
    rc, out, _ = run(capsys, ["checkpoint", str(REAP), "--config", str(cfg), "-f", "json"])
    doc = json.loads(out)
    assert rc == 0 and doc["findings"] == [] and doc["summary"]["ignored"] == 1
    assert doc["ignored"][0]["rule_id"] == "MTP001"
    assert doc["ignored"][0]["suppression"] == {"rule_id": "MTP001", "reason": "pruned fixture", "source": "ci.toml"}
    assert doc["status"] == "pass"
    jsonschema.validate(doc, SCHEMA)


@pytest.mark.parametrize("body, problem", [
    ('[tool.mtp-audit]\nfail_on = "info"\n',
     "tool.mtp-audit.fail_on: unknown key (expected one of: fail-on, ignore, overrides)"),
    ('[tool.mtp-audit]\nignore = [{ rule = "MTP001" }]\n',
     "tool.mtp-audit.ignore[0].reason: missing: every ignore needs a reason (why MTP001 does not apply here)"),
    ('[tool.mtp-audit]\nignore = [{ rule = "MTP001", reason = "  " }]\n',
     "tool.mtp-audit.ignore[0].reason: missing: every ignore needs a reason (why MTP001 does not apply here)"),
    ('[tool.mtp-audit]\nignore = [{ rule = "MTP999", reason = "x" }]\n',
     "tool.mtp-audit.ignore[0].rule: unknown rule MTP999 (see 'mtp-audit rules')"),
    ('[tool.mtp-audit]\nignore = [{ rule = "MTP001", reason = "x", until = 2030-01-01 }]\n',
     "tool.mtp-audit.ignore[0].until: unknown key (expected one of: rule, reason, expires)"),
    ('[tool.mtp-audit]\nignore = [{ rule = "MTP001", reason = "x", expires = "next year" }]\n',
     "tool.mtp-audit.ignore[0].expires: expected a date YYYY-MM-DD, got 'next year'"),
    ('[tool.mtp-audit]\nfail-on = "fatal"\n',
     "tool.mtp-audit.fail-on: expected one of info, warning, error, never, got 'fatal'"),
    ('[[tool.mtp-audit.overrides]]\nfail-on = "never"\n',
     "tool.mtp-audit.overrides[0].target: missing (a glob matched against the audited target, e.g. \"fixtures/*\")"),
    ('[[tool.mtp-audit.overrides]]\ntarget = "x/*"\nfail-on = "never"\nignores = []\n',
     "tool.mtp-audit.overrides[0].ignores: unknown key (expected one of: target, fail-on, ignore)"),
    ('[tool.mtp-audit\n', "invalid TOML: "),
])
def test_bad_config_is_a_usage_error(proj, capsys, body, problem) -> None:
    cfg = write(proj, body)
    out_file = proj / "report.json"
    rc, out, err = run(capsys, ["checkpoint", str(REAP), "-f", "json", "-o", str(out_file)])
    assert rc == 2 and out == "" and not out_file.exists()
    assert err.count("\n") == 1 and err.startswith(f"mtp-audit: error: {cfg}: {problem}")


def test_missing_config_file_is_a_usage_error(proj, capsys) -> None:
    rc, out, err = run(capsys, ["checkpoint", str(REAP), "--config", "nope.toml"])
    assert rc == 2 and out == "" and err == "mtp-audit: error: nope.toml: no such file\n"


def test_expired_ignore_stops_applying_and_says_so(proj, capsys) -> None:
    write(proj, '[tool.mtp-audit]\nignore = [{ rule = "MTP001", reason = "until the re-export", expires = 2000-01-01 }]\n')
    rc, out, err = run(capsys, ["checkpoint", str(REAP)])
    assert rc == 1 and "MTP001 error" in out and "ignored" not in out
    assert err == ("mtp-audit: warning: pyproject.toml: the ignore of MTP001 expired on 2000-01-01 and no longer applies "
                   "(reason was: until the re-export)\n")
    # a usage error is still one stderr line
    rc, out, err = run(capsys, ["checkpoint", str(REAP), "-o", str(proj / "missing" / "r.txt")])
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("mtp-audit: error: ")
    write(proj, '[tool.mtp-audit]\nignore = [{ rule = "MTP001", reason = "until the re-export", expires = "2999-12-31" }]\n')
    rc, out, err = run(capsys, ["checkpoint", str(REAP), "-v"])
    assert rc == 0 and err == ""
    assert "[ignored: until the re-export; pyproject.toml, until 2999-12-31]" in out


def test_per_target_override(proj, capsys, monkeypatch) -> None:
    shutil.copytree(REAP, proj / "ckpts" / "reap")
    shutil.copytree(REAP, proj / "other" / "reap")
    write(proj, '[tool.mtp-audit]\nfail-on = "error"\n\n[[tool.mtp-audit.overrides]]\ntarget = "ckpts/*"\n'
                'ignore = [{ rule = "MTP001", reason = "pruned on purpose" }]\n')
    rc, out, _ = run(capsys, ["checkpoint", "ckpts/reap"])
    assert rc == 0 and out.splitlines()[-1].startswith("0 findings (0 error, 0 warning, 0 info); 1 ignored;")
    rc, _, _ = run(capsys, ["checkpoint", "other/reap"])
    assert rc == 1  # the override does not match
    # the glob is matched relative to the settings file's folder, whatever the current directory
    monkeypatch.chdir(proj / "other")
    rc, out, _ = run(capsys, ["checkpoint", "../ckpts/reap", "-f", "json"])
    doc = json.loads(out)
    assert rc == 0 and doc["ignored"][0]["suppression"]["source"] == "pyproject.toml overrides[0] (target 'ckpts/*')"


def test_command_line_ignore_and_sarif_suppressions(proj, capsys) -> None:
    rc, out, _ = run(capsys, ["checkpoint", str(REAP), "--ignore", "MTP001"])
    assert rc == 0
    assert out.splitlines()[0].endswith("(exit 0; 1 ignored)")
    assert out.splitlines()[-1] == "0 findings (0 error, 0 warning, 0 info); 1 ignored; 1 not examined (0 blocking); status: pass"
    rc, out, _ = run(capsys, ["checkpoint", str(REAP), "--ignore", "MTP001=pruned fixture", "-f", "sarif"])
    doc = json.loads(out)
    jsonschema.validate(doc, SARIF_SCHEMA)
    [res] = doc["runs"][0]["results"]
    assert res["ruleId"] == "MTP001" and res["level"] == "error"
    assert res["suppressions"] == [{"kind": "external", "status": "accepted", "justification": "pruned fixture",
                                    "properties": {"rule_id": "MTP001", "reason": "pruned fixture", "source": "--ignore"}}]
    rc, out, err = run(capsys, ["checkpoint", str(REAP), "--ignore", "MTP9"])
    assert rc == 2 and out == "" and err == "mtp-audit: error: --ignore MTP9: unknown rule MTP9 (see 'mtp-audit rules')\n"


def test_markdown_lists_ignored(proj, capsys) -> None:
    rc, out, _ = run(capsys, ["checkpoint", str(REAP), "--ignore", "MTP001=pruned", "-f", "markdown"])
    assert rc == 0
    assert "## Ignored" in out and "| MTP001 | error | `config.json [/mtp_num_hidden_layers]` |" in out
    assert "| pruned | --ignore |" in out


def test_resolve_precedence() -> None:
    s = parse_settings({"fail-on": "warning", "ignore": [{"rule": "MTP105", "reason": "top"}],
                        "overrides": [{"target": "a/*", "fail-on": "never", "ignore": [{"rule": "MTP105", "reason": "override"}]},
                                      {"target": "a/b", "fail-on": "info"}]},
                       source="pyproject.toml", known_rules={"MTP105"})
    import datetime

    today = datetime.date(2026, 12, 1)
    r = resolve(s, ["a/b"], today=today)
    assert r.fail_on == "info" and r.suppressions["MTP105"].reason == "override"  # the last matching fail-on wins
    r = resolve(s, ["c"], today=today)
    assert r.fail_on == "warning" and r.suppressions["MTP105"].reason == "top"
    r = resolve(s, ["c"], today=today, cli_fail_on="error", cli_ignores=[Ignore("MTP105", "", "--ignore")])
    assert r.fail_on == "error" and r.suppressions["MTP105"].source == "--ignore"
    assert resolve(Settings(), [], today=today).fail_on == "error"
    with pytest.raises(SettingsError) as exc:
        parse_settings({"overrides": [{"target": "x"}]}, source="p", known_rules=())
    assert str(exc.value) == "tool.mtp-audit.overrides[0]: sets nothing (give fail-on or ignore)"
