"""``-v`` / ``-vv`` show the package's ``logging`` records on stderr for one command (INFO / DEBUG) and nothing is left
configured afterwards; progress bars (tqdm) show the rate and the time left, on a terminal only."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
from hubfixture import FakeHub, FakeRepo, build_mimo, isolate_hf

from mtp_audit.cli.main import main

MIMO = "XiaomiMiMo/MiMo-7B-Base"


def _log_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("mtp-audit: mtp_audit.")]


def test_verbosity_levels_of_a_hub_audit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = FakeRepo(MIMO, build_mimo())
    with FakeHub([repo]) as hub:
        isolate_hf(monkeypatch, tmp_path, endpoint=hub.endpoint)
        quiet = main(["checkpoint", MIMO, "-q"])
        assert _log_lines(capsys.readouterr().err) == []
        assert main(["checkpoint", MIMO, "-q", "-v", "--no-cache"]) == quiet
        info = _log_lines(capsys.readouterr().err)
        assert any(ln.startswith(f"mtp-audit: mtp_audit.sources.hub: {MIMO}: revision main is commit {repo.commit} (")
                   and ln.endswith(f" files) on {hub.endpoint}") for ln in info), info
        assert any(ln.startswith(f"mtp-audit: mtp_audit.sources.hub: {MIMO}@{repo.commit}: 4 shard header(s):") for ln in info)
        assert main(["checkpoint", MIMO, "-q", "-vv", "--no-cache"]) == quiet
        debug = _log_lines(capsys.readouterr().err)
        assert f"mtp-audit: mtp_audit.sources.hub: {MIMO}@{repo.commit}: config.json from hf-cache" in debug
        assert len(debug) > len(info)
    logger = logging.getLogger("mtp_audit")
    assert all(isinstance(h, logging.NullHandler) for h in logger.handlers) and logger.level == logging.NOTSET


def test_progress_shows_rate_and_time_left_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import mtp_audit.progress as progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MTP_AUDIT_NO_PROGRESS", raising=False)
    for tty, expect in ((True, True), (False, False)):
        stream = Tty() if tty else io.StringIO()
        monkeypatch.setattr("sys.stderr", stream)
        with progress.requested(), progress.Progress(2_000_000, "vllm 0.33.0 from the package index", unit="B") as bar:
            bar.step(1_000_000)
            bar.step(1_000_000)
        text = stream.getvalue()
        assert ("mtp-audit: vllm 0.33.0 from the package index" in text) is expect
        assert (("MB/s" in text or "B/s" in text) and "2.00M/2.00M" in text.replace("MB", "M")) is expect, text
