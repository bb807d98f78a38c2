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
