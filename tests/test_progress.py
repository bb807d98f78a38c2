"""Progress bars go to stderr on a terminal only (never with CI or MTP_AUDIT_NO_PROGRESS set, never on a
pipe), through tqdm (rate and time left); a cold SGLang tree scan shows one, a warm (cached) one does not."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mtp_audit.progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> Tty:
    """A terminal for stderr; set in the test itself (pytest's capture restores sys.stderr after fixture setup)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MTP_AUDIT_NO_PROGRESS", raising=False)
    return Tty()


def use(monkeypatch: pytest.MonkeyPatch, fake: Tty, *, asked: bool = True) -> None:
    """stderr a terminal, and progress requested as the CLI requests it (the library draws none unless asked)."""
    import contextvars

    import mtp_audit.progress as progress

    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(progress, "_REQUESTED", contextvars.ContextVar("requested", default=asked))


def test_the_library_draws_no_bar_unless_asked(tty: Tty, monkeypatch: pytest.MonkeyPatch) -> None:
    from mtp_audit.progress import requested

    use(monkeypatch, tty, asked=False)
    with Progress(3, "things") as p:
        assert not p.shown
    with requested(), Progress(3, "things") as p:
        assert p.shown
    assert "mtp-audit: things" in tty.getvalue()


def test_bar_on_a_terminal(tty: Tty, monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, tty)
    with Progress(3, "things") as p:
        assert p.shown
        for _ in range(3):
            p.step()
    out = tty.getvalue()
    assert "mtp-audit: things" in out and "3/3" in out and out.endswith("\n")
    assert p.done == 3 and not p.shown


@pytest.mark.parametrize("env", ["CI", "MTP_AUDIT_NO_PROGRESS"])
def test_no_bar_in_ci(tty: Tty, monkeypatch: pytest.MonkeyPatch, env: str) -> None:
    use(monkeypatch, tty)
    monkeypatch.setenv(env, "1")
    with Progress(3, "things") as p:
        p.step(3)
    assert tty.getvalue() == "" and p.done == 3 and not p.shown


def test_no_bar_on_a_pipe_or_below_min_total(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CI", raising=False)
    with Progress(50, "things") as p:  # capsys's stderr is not a terminal
        p.step(50)
    assert capsys.readouterr().err == "" and not p.shown


def test_below_min_total(tty: Tty, monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, tty)
    with Progress(5, "things", min_total=20) as p:
        p.step(5)
    assert tty.getvalue() == ""


def test_cold_sglang_scan_shows_progress_warm_does_not(tty: Tty, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mtp_audit.engines.sglang import audit as sg
    from mtp_audit.engines.sglang import treescan

    use(monkeypatch, tty)
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(treescan, "PROGRESS_MIN_FILES", 1)
    root = tmp_path / "tree"
    (root / "sglang/srt").mkdir(parents=True)
    (root / "sglang/srt/server_args.py").write_text(
        'class ServerArgs:\n    def _handle(self):\n        if self.speculative_algorithm == "NEXTN":\n'
        '            self.speculative_algorithm = "EAGLE"\n')
    (root / "sglang/srt/other.py").write_text('def f(self):\n    self.speculative_algorithm = "EAGLE"\n')
    sg.audit_sglang(root)
    out = tty.getvalue()
    assert "mtp-audit: parsing" in out and "1/1" in out  # server_args.py; other.py needs only the env-var pass
    tty.truncate(0)
    tty.seek(0)
    sg.audit_sglang(root)
    assert tty.getvalue() == ""  # every file came from the cache


def test_help_imports_no_progress_and_no_analyzer() -> None:
    code = ("import sys; from mtp_audit.cli.main import main; rc = main(['--help']); "
            "bad = [m for m in sys.modules if m == 'mtp_audit.progress' or m.split('.')[:2] in (['mtp_audit', 'checkpoint'], "
            "['mtp_audit', 'engines'], ['mtp_audit', 'preflight'], ['mtp_audit', 'launch'], ['mtp_audit', 'formats'])]; "
            "assert rc == 0 and not bad, bad")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert time.perf_counter() - t < 5
