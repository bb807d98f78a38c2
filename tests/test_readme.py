"""README.md stays true: its rule table is what `mtp-audit rules --format markdown` prints, and
.ci/run runs exactly the README's test command."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_rule_table_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "markdown"]) == 0
    table = capsys.readouterr().out.strip()
    assert table in README, "regenerate the README rule table with: mtp-audit rules --format markdown"


def test_ci_runs_the_readme_test_command() -> None:
    cmd = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && python -m pytest -q'
    assert f"```bash\n{cmd}\n```" in README
    assert cmd in (ROOT / ".ci/run").read_text()


def test_readme_first_command_audits_a_bundled_fixture() -> None:
    line = next(x for x in README.splitlines() if x.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e . &&"))
    target = line.split("mtp-audit checkpoint ", 1)[1].strip()
    assert (ROOT / target / "config.json").is_file() and (ROOT / target / "model.safetensors.index.json").is_file()


def _console_examples() -> list[tuple[str, str]]:
    """``(command, output)`` for each ``$ mtp-audit ...`` of the README's "What it says, on real input" block
    (a trailing backslash continues the command on the next line)."""
    return _examples_under("## What it says, on real input")


def _examples_under(heading: str) -> list[tuple[str, str]]:
    """``(command, output)`` of the first console block under ``heading``."""
    section = README.split(heading, 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    out: list[tuple[str, list[str]]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\"):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            out.append((cmd, []))
        else:
            out[-1][1].append(line)
        i += 1
    return [(c, "\n".join(o) + "\n") for c, o in out]


EXAMPLES = _console_examples()
LOG_EXAMPLES = _examples_under("## Runtime logs: `mtp-audit log FILE... | -`")


def _argv(cmd: str) -> list[str]:
    import shlex

    from conftest import sglang_wheel

    argv = shlex.split(cmd)
    assert argv[0] == "mtp-audit"
    return [str(sglang_wheel("0.5.9")) if a == "sglang-0.5.9-py3-none-any.whl" else a for a in argv[1:]]


def test_readme_shows_the_four_commands() -> None:
    assert [c.split()[1] for c, _ in EXAMPLES] == ["checkpoint", "checkpoint", "sglang", "preflight", "launch"]


@pytest.mark.network
@pytest.mark.parametrize("cmd, expected", EXAMPLES, ids=[c.split()[1] + str(i) for i, (c, _) in enumerate(EXAMPLES)])
def test_readme_examples_are_real_output(cmd: str, expected: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each README example is what the command prints today, run from the repository root, and fits one
    screen: at most 25 lines, every finding line at most 200 columns."""
    import re

    monkeypatch.chdir(ROOT)
    argv = _argv(cmd)
    rc = main(argv)
    out = capsys.readouterr().out
    assert out == expected
    assert f"(exit {rc})" in out.splitlines()[0]
    assert len(out.splitlines()) <= 25
    finding = re.compile(r"^\S.*: MTP\d{3} (error|warning|info): ")
    assert all(len(ln) <= 200 for ln in out.splitlines() if finding.match(ln))


@pytest.mark.parametrize("cmd, expected", LOG_EXAMPLES, ids=[c.split()[-1].rsplit("/", 1)[-1] for c, _ in LOG_EXAMPLES])
def test_readme_log_examples_are_real_output(cmd: str, expected: str, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime-log examples are what ``mtp-audit log`` prints today (a new user found them out of date)."""
    monkeypatch.chdir(ROOT)
    main(_argv(cmd))
    assert capsys.readouterr().out == expected
