"""CLI plumbing shared by every command: usage errors, --version, atomic --output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtp_audit import __version__
from mtp_audit.cli.main import main
from mtp_audit.cli.outputs import write_atomic
from mtp_audit.errors import InputError


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"mtp-audit, version {__version__}"


def test_unknown_command_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert capsys.readouterr().err == "mtp-audit: error: frobnicate: no such command (see 'mtp-audit --help')\n"


def test_a_mistyped_command_gets_the_closest_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lunch"]) == 2
    assert capsys.readouterr().err == "mtp-audit: error: lunch: no such command; did you mean launch? (see 'mtp-audit --help')\n"
    assert main(["chekpoint", "x"]) == 2
    assert "chekpoint: no such command; did you mean checkpoint?" in capsys.readouterr().err


def test_unknown_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--bogus"]) == 2
    assert capsys.readouterr().err == "mtp-audit: error: --bogus: no such option (see 'mtp-audit rules --help')\n"


def test_python_dash_m_runs_without_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "mtp_audit", "explain", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == "mtp-audit: error: nope: no such rule (see 'mtp-audit rules')\n"
    assert "Traceback" not in proc.stderr


def test_help_lists_every_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "mtp_audit", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for cmd in ("checkpoint", "explain", "rules"):
        assert f"  {cmd}" in proc.stdout


def test_write_atomic_replaces_whole_file(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old")
    write_atomic(out, "new\n")
    assert out.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


def test_write_atomic_missing_folder_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_atomic(tmp_path / "nope" / "r.json", "x")
    assert not (tmp_path / "nope").exists()


def test_write_atomic_refuses_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        write_atomic(tmp_path, "x")


def test_fast_help_is_what_click_renders(monkeypatch, capsys) -> None:
    """``mtp-audit --help`` is served from mtp_audit/cli/help_text.py without importing click; it must be exactly
    what click renders at 80 columns (regenerate help_text.py when a command's help changes)."""
    from mtp_audit.cli.fast import main as fast
    from mtp_audit.cli.help_text import TEXT
    from mtp_audit.cli.main import main as full

    monkeypatch.setenv("COLUMNS", "80")
    assert full(["--help"]) == 0
    assert capsys.readouterr().out == TEXT
    assert fast(["--help"]) == 0 and capsys.readouterr().out == TEXT
    monkeypatch.setenv("COLUMNS", "60")  # narrower: click renders it
    assert fast(["-h"]) == 0 and capsys.readouterr().out != TEXT
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "mtp_audit", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0 and proc.stdout == TEXT and "click" not in proc.stderr


def test_mistyped_local_path_with_a_slash_is_not_a_hub_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``fixtures/nonexist`` where ``fixtures`` is a folder here: no such file or folder (exit 2), the hub never asked."""
    (tmp_path / "fixtures").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["checkpoint", "fixtures/nonexist"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mtp-audit: error: fixtures/nonexist: no such file or folder ('fixtures' is a folder here")
    assert "huggingface" not in err


def test_model_dir_to_a_missing_folder_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["launch", "--no-machine", "--model-dir", "/models=/nonexistent", "--", "vllm", "serve", "/models/x"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["mtp-audit: error: --model-dir /models=/nonexistent: /nonexistent does not exist"]
