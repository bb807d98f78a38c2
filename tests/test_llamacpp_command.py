"""llama.cpp command parsing and the sourced tables (values checked against the cited pull requests)."""

from __future__ import annotations

import pytest

from mtp_audit.engines.llamacpp import tables as T
from mtp_audit.engines.llamacpp.command import is_llamacpp, parse_command
from mtp_audit.errors import InputError


def test_flags_that_decide_mtp() -> None:
    cmd = parse_command(["CUDA_VISIBLE_DEVICES=0", "./build/bin/llama-server", "-m", "a-00001-of-00003.gguf", "-md", "mtp-a.gguf",
                         "--spec-type", "ngram-mod,draft-mtp", "--spec-draft-n-max=4", "-np", "2", "-sm", "tensor",
                         "--spec-default", "--jinja"])
    assert (cmd.program, cmd.model, cmd.draft_model) == ("llama-server", "a-00001-of-00003.gguf", "mtp-a.gguf")
    assert cmd.spec_names == ["ngram-mod", "draft-mtp"] and cmd.wants_mtp()
    assert (cmd.n_max, cmd.parallel, cmd.split_mode, cmd.spec_default) == (4, 2, "tensor", True)
    assert cmd.flags["draft_model"] == "-md"


def test_ik_spelling_with_options_and_repeated_spec_type() -> None:
    cmd = parse_command("llama-server -m m.gguf --spec-type mtp:n_max=3,p_min=0.5 --spec-type ngram-mod".split())
    assert cmd.spec_names == ["mtp", "ngram-mod"] and cmd.spec_types[0].options == {"n_max": "3", "p_min": "0.5"}
    assert cmd.n_max == 3


def test_old_draft_flags_and_errors() -> None:
    assert parse_command(["llama-cli", "-m", "m.gguf", "--draft-max", "16", "--model-draft", "d.gguf"]).n_max == 16
    with pytest.raises(InputError, match="expects a number"):
        parse_command(["llama-server", "-np", "four"])
    with pytest.raises(InputError, match="expects a value"):
        parse_command(["llama-server", "-m"])
    assert is_llamacpp(["python", "-m", "sglang.launch_server"]) is None
    assert is_llamacpp(["env", "A=1", "C:/llama/llama-server.exe", "-m", "x"]) == "llama-server"


def test_tables_rows_by_build() -> None:
    assert T.arch_has_mtp_graph("qwen35moe", 9180)[0] is True  # release b9180 named by lmstudio-bug-tracker #1924
    assert T.arch_has_mtp_graph("qwen35moe", 9179)[0] is False
    assert T.arch_has_mtp_graph("glm4moe", 99999)[0] is False
    assert T.arch_has_mtp_graph("qwen3next", 9980)[0] is None  # estimated from PR #25589's date: could not tell
    assert T.arch_has_mtp_graph("qwen3next", 10444)[0] is True
    assert T.arch_has_mtp_graph("llama", 10444) == (None, None)
    assert T.n_max_default(9000)[0] == 16 and T.n_max_default(10444)[0] == 3 and T.n_max_default(9215)[0] is None
    assert all(row.source for row in T.ARCH_SUPPORT) and all(t.source for t in T.TRAPS)


def test_fork_from_spelling_without_build(tmp_path) -> None:
    """No build given: ``mtp:n_max=3`` can only be ik_llama.cpp (mainline has no options syntax); plain ``mtp`` is
    ik_llama.cpp's spelling and mainline's old one, so with the fork unknown it is "could not tell" (a blocking gap
    naming both spellings, was MTP602); a mainline build refuses it (MTP602)."""
    from mtp_audit.launch import audit_launch
    from mtp_audit.synth.gguf import model_kv, nextn_tensors, trunk_tensors, write_gguf

    write_gguf(tmp_path / "m.gguf", model_kv("qwen35", blocks=3, nextn=1), trunk_tensors(range(2)) + nextn_tensors(2))
    ik = audit_launch(["llama-server", "-m", "m.gguf", "--spec-type", "mtp:n_max=3"], cwd=tmp_path)
    assert ik.facts["launch"]["summary"]["engine"] == "ik_llama.cpp"
    assert [f.rule_id for f in ik.findings if f.severity.label == "error"] == []
    plain = audit_launch(["llama-server", "-m", "m.gguf", "--spec-type", "mtp"], cwd=tmp_path)
    assert [f.rule_id for f in plain.findings if f.severity.label == "error"] == []
    assert plain.facts["launch"]["summary"]["verdict"] == "could not tell"
    assert [g.message for g in plain.gaps if g.blocking][0] == (
        "--spec-type mtp: llama.cpp spells it draft-mtp; ik_llama.cpp spells it mtp; the build is unknown, so whether this "
        "server accepts it could not be told (give --llamacpp-build N, or ik:N for ik_llama.cpp)")
    mainline = audit_launch(["llama-server", "-m", "m.gguf", "--spec-type", "mtp"], cwd=tmp_path, llamacpp="10444")
    assert [f.message for f in mainline.findings if f.rule_id == "MTP602"] == [
        "--spec-type mtp is not a speculative type of llama.cpp; this fork spells it draft-mtp: the server stops at argument parsing"]
    both = audit_launch(["llama-server", "-m", "m.gguf", "--spec-type", "mtp:n_max=3,draft-mtp"], cwd=tmp_path)
    assert [f.rule_id for f in both.findings if f.severity.label == "error"] == ["MTP602"]  # ik's syntax names the fork
