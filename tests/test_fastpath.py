"""The click-free path for plain ``checkpoint`` and ``sglang`` invocations (mtp_audit/cli/fastpath.py): its
argument table is the commands' click declaration, it gives click's parameters (values and order) and option
callbacks' results, it declines what only click should answer, and a run through it writes the same output with
the same exit code as a run through click."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.cli import config, fastpath
from mtp_audit.cli.fast import main as fast_main
from mtp_audit.cli.hubopts import DEFAULT_JOBS, MAX_JOBS
from mtp_audit.cli.main import cli
from mtp_audit.cli.main import main as click_main
from mtp_audit.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
CALLBACKS = {"config_file": config._config_callback, "ignore_rules": config._ignore_callback,
             "verbose": config._verbose_callback}


def click_command(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    return command


def no_default(value: object) -> bool:
    """No default given (``None``; click >= 8.2 writes its ``UNSET`` sentinel) or a flag's ``False``."""
    import click._utils

    return value is None or value is False or value is getattr(click._utils, "UNSET", None)


def describe(param: click.Parameter) -> tuple:
    """A click parameter in the table's terms (what the fast parser relies on)."""
    t = param.type
    if isinstance(param, click.Argument):
        kind = "args" if param.nargs == -1 else "arg" if param.nargs == 1 and param.required else "?"
    elif getattr(param, "count", False):
        kind = "count" if param.default in (None, 0) else "?"
    elif param.is_flag:
        kind = "flag"
    elif isinstance(t, click.Choice):
        kind = "choice" if not t.case_sensitive else "?"
    elif isinstance(t, click.IntRange):
        kind = "jobs" if (t.min, t.max, t.min_open, t.max_open, t.clamp, param.default) == (
            1, MAX_JOBS, False, False, False, DEFAULT_JOBS) else "?"
    elif isinstance(t, click.Path):
        kind = "path" if (t.exists, t.file_okay, t.dir_okay, t.readable, t.writable, t.executable, t.resolve_path,
                          t.allow_dash, t.type) == (False, True, False, True, False, False, False, False, Path) else "?"
    else:
        kind = "str" if t is click.STRING else "?"
    if kind in ("flag", "str", "path", "choice") and not no_default(param.default):
        kind = "?"  # the table's defaults: None, False, ()
    kind = ("!" if not param.expose_value else "") + kind + ("*" if param.multiple else "")
    extra = tuple(t.choices) if isinstance(t, click.Choice) else None
    opts = tuple(param.opts) if isinstance(param, click.Option) else ()
    callback = CALLBACKS.get(param.name) if param.callback is not None else None
    assert param.callback is callback, f"{param.name}: a callback the fast path does not run"
    assert getattr(param, "envvar", None) is None and param.is_eager == (param.name in fastpath._EAGER)
    assert not getattr(param, "secondary_opts", None)
    return param.name, opts, kind, extra


@pytest.mark.parametrize("name", sorted(fastpath.TABLES))
def test_table_is_the_click_declaration(name: str) -> None:
    assert tuple(describe(p) for p in click_command(name).params) == fastpath.TABLES[name][1]


def click_parse(args: list[str]) -> tuple[list, object] | None:
    """``(params as ordered items, meta or the option callbacks' error)`` as click fills them, or ``None`` where
    click refuses ``args`` itself."""
    command = click_command(args[0])
    try:
        ctx = command.make_context(args[0], list(args[1:]), parent=click.Context(cli))
    except (click.ClickException, click.exceptions.Exit):
        return None
    except InputError as exc:
        return None if "--help" in args else [], str(exc)  # "--help": click's eager exit would come first
    return list(ctx.params.items()), dict(ctx.meta)


def fast_meta(parsed: tuple) -> object:
    """The option callbacks' results (``meta``) or error, as the fast path runs them."""
    from mtp_audit.cli.invocation import Invocation

    inv = Invocation(parsed[0], parsed[1])
    try:
        config._config_callback(inv, None, parsed[2]["config_file"])
        config._ignore_callback(inv, None, parsed[2]["ignore_rules"])
        config._verbose_callback(inv, None, parsed[2]["verbose"])
    except InputError as exc:
        return str(exc)
    return inv.meta


def _values(existing_file: str) -> st.SearchStrategy[str]:
    return st.sampled_from(["json", "JSON", "text", "sarif", "md", "warning", "never", "ERROR", "8", "0", "65", "x",
                            "-", "", "-x", "MTP001", "MTP1", "MTP001=why", "mtp999", existing_file, "no/such/file.json",
                            str(ROOT), "a=b"])


def _tokens(name: str, existing_file: str) -> st.SearchStrategy[list[str]]:
    opts = [o for p in fastpath.TABLES[name][1] for o in p[1]] + ["--bogus", "-qv", "--form", "--help", "--"]
    one = st.one_of(st.sampled_from(opts), _values(existing_file),
                    st.builds(lambda o, v: f"{o}={v}", st.sampled_from(opts), _values(existing_file)))
    return st.lists(one, max_size=7)


def _pairs(name: str, existing_file: str) -> st.SearchStrategy[list[str]]:
    """Mostly valid invocations: options with values of their own kind, positionals among them."""
    good = {"flag": [], "jobs": ["1", "8", "64", " 3"], "choice": ["json", "Text", "never", "warning", "info"],
            "str": ["MTP001", "MTP1", "MTP001=reason", "main", "tok"], "path": [existing_file, "new.json", "-"]}
    items = []
    for _pname, opts, kind, _ in fastpath.TABLES[name][1]:
        base = kind.strip("!*")
        for o in opts:
            if base in ("flag", "count"):
                items.append(st.just([o]))
            else:
                items.append(st.builds(lambda o, v: [o, v], st.just(o), st.sampled_from(good[base])))
                if o.startswith("--"):
                    items.append(st.builds(lambda o, v: [f"{o}={v}"], st.just(o), st.sampled_from(good[base])))
    items.append(st.builds(lambda v: [v], st.sampled_from([str(FIXTURE), "a-target", "x.whl"])))
    return st.lists(st.one_of(items), max_size=6).map(lambda groups: [t for g in groups for t in g])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(fastpath.TABLES)), st.booleans(), st.data())
def test_fast_parse_is_click_parse(name: str, valid: bool, data: st.DataObject) -> None:
    """Whatever the fast parser accepts, click accepts with the same parameters in the same order and the same
    callback results; what click refuses, the fast parser declines."""
    strategy = _pairs if valid else _tokens
    args = [name, *data.draw(strategy(name, str(FIXTURE / "config.json")))]
    parsed = fastpath.parse(args)
    expected = click_parse(args)
    if parsed is None:
        return
    assert expected is not None, args
    meta = fast_meta(parsed)
    assert meta == expected[1], args
    if not isinstance(meta, str):  # click stops filling its parameters at a callback's error
        assert list(parsed[1].items()) == expected[0], args


PLAIN = [
    ["checkpoint", str(FIXTURE)],
    ["checkpoint", str(FIXTURE), "-f", "json", "-o", "out.json", "--fail-on", "never", "-q"],
    ["checkpoint", "-j", "3", "--offline", str(FIXTURE), "--select", "MTP0", "--severity", "warning", "-v"],
    ["checkpoint", str(FIXTURE), "--ignore", "MTP001=pruned", "--format=sarif", "--output=out.sarif"],
    ["sglang"],
    ["sglang", "some-tree", "--baseline", str(FIXTURE / "config.json"), "-f", "markdown"],
]


@pytest.mark.parametrize("args", PLAIN, ids=lambda a: " ".join(a[:4]))
def test_plain_invocations_take_the_fast_path(args: list[str]) -> None:
    parsed = fastpath.parse(args)
    assert parsed is not None
    assert list(parsed[1].items()) == click_parse(args)[0]


@pytest.mark.parametrize("args", [["checkpoint"], ["checkpoint", "a", "b"], ["checkpoint", "a", "--help"],
                                  ["checkpoint", "a", "-qv"], ["checkpoint", "a", "--form", "json"],
                                  ["checkpoint", "a", "-f", "yaml"], ["checkpoint", "a", "-j", "0"],
                                  ["checkpoint", "a", "-o", str(ROOT)], ["checkpoint", "a", "-o"],
                                  ["checkpoint", "a", "--quiet=1"], ["checkpoint", "--", "a"], ["vllm", "x"],
                                  ["--version"], ["checkpoint", "a", "-o", "-x"]])
def test_what_only_click_answers_is_declined(args: list[str]) -> None:
    assert fastpath.parse(args) is None


def run_both(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> list[tuple]:
    """Exit code, stdout, stderr and the files written, through click and through the fast path."""
    out = []
    for label, entry in (("click", click_main), ("fast", fast_main)):
        work = tmp_path / label
        work.mkdir()
        monkeypatch.chdir(work)
        code = entry(list(args))
        cap = capsys.readouterr()
        files = {p.name: p.read_text() for p in sorted(work.iterdir())}
        out.append((code, cap.out, cap.err.replace(str(work), "WORK"), files))
    return out


@pytest.mark.parametrize("args", [
    PLAIN[0], PLAIN[1], PLAIN[2], PLAIN[3],
    ["checkpoint", str(FIXTURE), "--ignore", "MTP999"],  # an option callback's error
    ["checkpoint", "no/such/folder"],  # the analyzer's input error
    ["checkpoint", str(FIXTURE), "-o", "a.md", "-o", "a.json", "-f", "json"],  # formats and outputs do not pair up
    ["sglang", str(FIXTURE / "config.json")],
], ids=lambda a: " ".join(a[1:5]).replace(str(ROOT), ""))
def test_fast_run_is_click_run(args: list[str], tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    via_click, via_fast = run_both(args, tmp_path, capsys, monkeypatch)
    assert via_fast == via_click
    assert via_fast[0] in (0, 1, 2, 3)


def test_fast_run_writes_the_checkpoint_report(tmp_path: Path, capsys, monkeypatch) -> None:
    """The real fixture through the fast path: MTP001, exit 1, a JSON report with its one error."""
    via_click, via_fast = run_both(PLAIN[1][:6], tmp_path, capsys, monkeypatch)
    assert via_fast == via_click and via_fast[0] == 1
    report = json.loads(via_fast[3]["out.json"])
    assert [f["rule_id"] for f in report["findings"] if f["severity"] == "error"] == ["MTP001"]


def test_plain_run_does_not_import_click(tmp_path: Path) -> None:
    code = ("import sys; from mtp_audit.cli.fast import main; rc = main(['checkpoint', sys.argv[1], '-f', 'json', "
            "'-o', sys.argv[2]]); print(rc, 'click' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(FIXTURE), str(tmp_path / "r.json")], check=False, capture_output=True,
                          text=True, cwd=str(tmp_path), env={**os.environ, "COLUMNS": "100"})
    assert proc.stdout.split() == ["1", "False"], proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "findings"


_COLLECTIONS = """
import gc, sys
from mtp_audit.cli.fast import main
gc.collect()
if sys.argv[3] == "disabled":
    gc.disable()
starts = []
gc.callbacks.append(lambda phase, info: phase == "start" and starts.append(info["generation"]))
rc = main(["checkpoint", sys.argv[1], "-f", "json", "-o", sys.argv[2]])
print(rc, len(starts), gc.isenabled())
"""


@pytest.mark.parametrize("state", ["enabled", "disabled"])
def test_checkpoint_run_loads_without_collections(state: str, tmp_path: Path) -> None:
    """A fresh process: loading the CLI and the analyzer and running the audit sets off no collection (20 before the
    collector was paused while the CLI loads), and the collector is left as the caller
    had it."""
    proc = subprocess.run([sys.executable, "-c", _COLLECTIONS, str(FIXTURE), str(tmp_path / "r.json"), state],
                          check=False, capture_output=True, text=True, cwd=str(tmp_path), env={**os.environ, "COLUMNS": "100"})
    assert proc.stdout.split() == ["1", "0", str(state == "enabled")], proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "findings"


def test_commands_run_with_the_collector_as_the_caller_had_it(tmp_path: Path, monkeypatch) -> None:
    """The pause ends where a command's own work starts (the SGLang audit runs with the collector enabled) and when
    click takes over; a checkpoint audit pauses it again for its own run; afterwards it is enabled as before."""
    import gc

    import mtp_audit.checkpoint
    import mtp_audit.cli.sglang

    seen: dict[str, bool] = {}
    real_audit = mtp_audit.checkpoint.audit_checkpoint
    real_sglang = mtp_audit.cli.sglang.callback

    def audit(*a, **k):
        seen["checkpoint"] = gc.isenabled()
        return real_audit(*a, **k)

    def sglang(*a, **k):
        seen["sglang"] = gc.isenabled()
        return real_sglang(*a, **k)

    monkeypatch.setattr(mtp_audit.checkpoint, "audit_checkpoint", audit)
    monkeypatch.setattr(mtp_audit.cli.sglang, "callback", sglang)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    fast_main(["checkpoint", str(FIXTURE), "-f", "json", "-o", str(tmp_path / "c.json")])
    assert gc.isenabled()
    fast_main(["sglang", str(FIXTURE / "config.json"), "-o", str(tmp_path / "s.txt")])
    assert gc.isenabled()
    assert seen == {"checkpoint": False, "sglang": True}
    assert fast_main(["checkpoint", "--severity"]) == 2  # click answers: a missing value
    assert gc.isenabled()
