"""llama-server ``-m`` naming a GGUF whose header llama.cpp refuses: the launch's defect (MTP013, exit 1) with the rest
of the launch audited, not an input error of the audit (exit 2). The truncated file is the bundled Qwen3.6 layout
GGUF cut at 50,000 bytes (its tensor data ends at byte 109,344, checked by hand)."""

from __future__ import annotations

from conftest import FIXTURES

from mtp_audit.cli.main import main

GGUF = FIXTURES / "gguf" / "Qwen3.6-35B-A3B-MTP-layout.gguf"


def _launch(capsys, model) -> tuple[int, str]:
    rc = main(["launch", "--no-machine", "--llamacpp-build", "10444", "--", "llama-server", "-m", str(model),
               "--spec-type", "draft-mtp"])
    return rc, capsys.readouterr().out


def test_a_truncated_model_gguf_is_mtp013_not_exit_2(tmp_path, capsys) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(GGUF.read_bytes()[:50_000])
    rc, out = _launch(capsys, cut)
    assert rc == 1
    assert "cut.gguf: MTP013 error: cut.gguf: tensor data ends at byte 109,344, past the end of the 50,000-byte file (truncated)" in out
    assert f"[launch, blocking] -m {cut}: llama.cpp refuses its header (MTP013), so whether it carries an MTP head could not be told" in out
    assert "MTP607 info: --spec-draft-n-max is not set" in out  # the rest of the launch is still audited


def test_the_whole_file_still_passes(capsys) -> None:
    rc, out = _launch(capsys, GGUF)
    assert rc == 0 and out.startswith("PASS: llama.cpp (b10444) drafts with the MTP head of Qwen3.6-35B-A3B-MTP-layout.gguf")
