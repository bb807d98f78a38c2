"""A gap blocks only the question that depends on it (SGLang launches), and numbers read as what they are: real
checkpoint configs (fixtures/oracle-configs, copied from /work/shared/realdata) against the real SGLang 0.5.23 wheel,
on two real environment dumps: fixtures/preflight/envdumps/vllm-57932.txt (an RTX PRO 6000 Blackwell, SM120, torch
2.13.0, no driver version line: the native FP4 verdict is unknown there only when nothing else decides it) and
sglang-18943.txt (8x B200, torch 2.9.1 under an SGLang dev build: SGLang 0.5.23 pins torch 2.14.1)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, sglang_wheel

from mtp_audit.cli.main import main

pytestmark = pytest.mark.network

DUMPS = FIXTURES / "preflight" / "envdumps"
CONFIGS = FIXTURES / "oracle-configs"
LS = ["python", "-m", "sglang.launch_server", "--model-path"]


def _launch(capsys, dump: str | None, *cmd: str, sglang: str | None = "0.5.23") -> tuple[int, str]:
    args = ["launch", "-v"] + (["--sglang", str(sglang_wheel(sglang))] if sglang else [])
    args += (["--env-dump", str(DUMPS / dump)] if dump else []) + ["--", *LS, *cmd]
    rc = main(args)
    return rc, capsys.readouterr().out


def test_fp8_checkpoint_config_only_without_speculation_is_not_blocked_by_its_mtp_check(capsys) -> None:
    # DeepSeek-V3: FP8 block-128 checkpoint, config.json only (num_nextn_predict_layers 1, no index): before, the MTP
    # check of the config blocked ("1 blocking") a launch that loads no MTP weights
    rc, out = _launch(capsys, "sglang-18943.txt", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "--tp-size", "8")
    assert "[checkpoint, note] config.json declares 1 MTP layer(s) at /num_nextn_predict_layers" in out
    assert "(a note for this launch: no --speculative-algorithm, so the MTP weights are not loaded)" in out
    assert "(0 blocking)" in out
    # an FP8 checkpoint gets no FP4 verdict as the answer: the machine's verdict is said after "not needed"
    assert "native FP4: not needed by this launch (FP8 checkpoint, no FP4 quantization method); the machine: not capable" in out
    assert rc == 0


def test_torch_pin_of_another_install_reads_as_not_capable_with_the_reason(capsys) -> None:
    # 8x B200 whose dump lists sglang 0.0.0.dev1+gd3bae71e3 with torch 2.9.1: the launch is audited against 0.5.23,
    # whose pin (torch 2.14.1) comes with installing it; before, MTP209 made every launch on it exit 1
    rc, out = _launch(capsys, "sglang-18943.txt", str(CONFIGS / "nvidia--Qwen3.5-397B-A17B-NVFP4"), "--tp-size", "8")
    assert "machine: MTP209 warning: sglang 0.5.23 pins torch==2.14.1" in out
    assert "(a warning for this launch: the machine has sglang 0.0.0.dev1+gd3bae71e3 installed, not 0.5.23" in out
    assert ("native FP4: not capable with this software stack (MTP209); the GPUs (compute capability 10.0) have FP4 "
            "tensor cores") in out
    assert rc == 0


def test_torch_pin_is_a_warning_when_the_machine_does_not_show_sglang(capsys) -> None:
    # a vLLM collect_env says nothing of SGLang: installing 0.5.23 replaces torch (a warning, as vLLM's MTP339);
    # that 0.5.23 already sits beside torch 2.13 is not shown, so the error case is a note (was: MTP209 error, exit 1)
    rc, out = _launch(capsys, "vllm-57932.txt", str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "--tp-size", "1")
    assert rc == 0 and ("machine: MTP209 warning: sglang 0.5.23 pins torch==2.14.1 (and its sgl-kernel is built for it) but "
                        "torch 2.13.0+cu132 is installed (a warning: no SGLang recorded; installing it replaces torch)") in out
    assert ("[preflight, note] whether sglang 0.5.23 is already installed beside that torch is not shown (sglang version not "
            "recorded): if it is, its sgl-kernel fails to load (MTP209 would be an error)") in out
    assert "native FP4: not needed by this launch (unquantized checkpoint, no FP4 quantization method)" in out


def test_torch_pin_is_a_warning_when_sglang_is_shown_not_installed(tmp_path, capsys) -> None:
    dump = tmp_path / "env.txt"
    dump.write_text((DUMPS / "sglang-24834.txt").read_text().replace("sglang: 0.5.12.dev136+g9dfb1d2eb", "sglang: Module Not Found"))
    main(["launch", "-v", "--sglang", str(sglang_wheel("0.5.23")), "--env-dump", str(dump), "--", *LS,
          str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "--tp-size", "1"])
    out = capsys.readouterr().out
    assert "is installed (a warning: SGLang not installed; installing it replaces torch)" in out


def test_torch_pin_stays_an_error_when_the_machine_has_that_release(tmp_path, capsys) -> None:
    dump = tmp_path / "env.txt"
    dump.write_text((DUMPS / "vllm-57932.txt").read_text() + "\nsglang: 0.5.23\n")
    main(["launch", "-v", "--sglang", str(sglang_wheel("0.5.23")), "--env-dump", str(dump), "--", *LS,
          str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "--tp-size", "1"])
    out = capsys.readouterr().out
    assert "machine: MTP209 error: sglang 0.5.23 pins torch==2.14.1" in out


def test_tp_without_an_option_table_is_read_as_the_tp_size(capsys) -> None:
    # no --sglang and no SGLang installed: the command is split heuristically; --tp 8 was read as nothing, so the
    # draft's MTP bytes came out "per GPU under --tp-size 1" next to a command that says 8
    ck = CONFIGS / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
    rc, out = _launch(capsys, None, str(ck), "--tp", "8", "--speculative-algorithm", "NEXTN", sglang=None)
    assert rc == 3
    # what runs is said although the verdict is open, and without SGLang facts it is not guessed
    assert out.splitlines()[0].endswith("; SGLang (version unknown): speculative decoding: NEXTN requested (what it runs "
                                        "as is read from the SGLang source: pass --sglang) (exit 3)")
    assert ("MTP307 info: the draft's MTP weights take about 151,352,448 bytes (151.4 MB) per GPU under --tp-size 8 "
            "(written --tp; read without an SGLang option table, as argparse's prefix match would)") in out
    assert "per GPU under --tp-size 1" not in out  # 151,352,448 x 8 = 1,210,819,584 bytes: the whole MTP layer


def test_gemma4_only_rewrite_is_not_shown_on_a_qwen35_launch(capsys) -> None:
    # 0.5.23 speculative_hook.py rewrites NEXTN to FROZEN_KV_MTP only "and is_gemma4_draft": evaluated against the
    # checkpoint (Qwen3_5MoeForConditionalGeneration), it is false, so neither a finding nor the headline quotes it
    ck = CONFIGS / "Qwen--Qwen3.5-397B-A17B"
    rc, out = _launch(capsys, "sglang-18943.txt", str(ck), "--tp-size", "8", "--speculative-algorithm", "NEXTN")
    assert "rewritten to FROZEN_KV_MTP" not in out and "FROZEN_KV_MTP instead when" not in out
    assert "MTP101 info: --speculative-algorithm NEXTN is an alias of EAGLE" in out  # the rewrite that applies stays
    # and what the speculative hook then decides (the auto choice, 0.5.23 speculative_hook.py:1159-1173)
    assert ("Speculative decoding: NEXTN runs as EAGLE (silent rewrite at sglang/srt/arg_groups/speculative_hook.py:116); "
            "after SGLang's resolution: steps 3, topk 1, draft tokens 4.") in out


def test_could_not_tell_still_says_what_runs(capsys) -> None:
    ck = CONFIGS / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"  # config only: its MTP tensors cannot be checked
    rc, out = _launch(capsys, "sglang-18943.txt", str(ck), "--tp-size", "8", "--speculative-algorithm", "NEXTN")
    assert rc == 3 and out.startswith("INCONCLUSIVE: could not tell: ")
    assert out.splitlines()[0].endswith("; SGLang 0.5.23: speculative decoding: NEXTN runs as EAGLE, draft the target "
                                        "checkpoint (Qwen3_5ForCausalLMMTP); steps 3, topk 1, draft tokens 4 (exit 3)")


def test_a_checkpoint_gap_is_scoped_by_its_question_not_its_words() -> None:
    """Without a speculative flag, the checkpoint's gaps about the MTP heads are notes; a gap that only mentions MTP
    (an environment variable's name, MTP_AUDIT_NETWORK_SECONDS) but answers no MTP question still blocks."""
    from mtp_audit.engines.outcome import scope_gap
    from mtp_audit.report import Gap
    from mtp_audit.report.questions import MTP_HEADS

    heads = Gap("checkpoint", "config.json declares 1 layer(s), but no shard was read", question=MTP_HEADS)
    scoped = scope_gap(heads, fp4=None, speculative=False, spec_flag="--speculative-algorithm")
    assert scoped.blocking is False and scoped.question == MTP_HEADS
    assert scoped.message.endswith("(a note for this launch: no --speculative-algorithm, so the MTP weights are not loaded)")
    spent = Gap("checkpoint", "config.json: the run's network time is spent (MTP_AUDIT_NETWORK_SECONDS); stopped reading")
    assert scope_gap(spent, fp4=None, speculative=False, spec_flag="--speculative-algorithm") == spent
    assert scope_gap(heads, fp4=None, speculative=True, spec_flag="--speculative-algorithm") == heads
