"""A gap blocks only the question that depends on it (vLLM launches): real checkpoint configs (fixtures/oracle-configs,
copied from /work/shared/realdata) on a real environment dump whose driver version is missing, so the machine's native
FP4 verdict is unknown (fixtures/preflight/envdumps/vllm-57932.txt: an RTX PRO 6000 Blackwell, SM120, torch collect_env
without an 'Nvidia driver version' line)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.cli.main import main
from mtp_audit.engines.outcome import fp4_needed, fp4_text

pytestmark = pytest.mark.network

DUMP = FIXTURES / "preflight" / "envdumps" / "vllm-57932.txt"
CONFIGS = FIXTURES / "oracle-configs"


def _launch(capsys, *cmd: str) -> tuple[int, str]:
    rc = main(["launch", "-v", "--vllm", str(vllm_wheel("0.33.0")), "--env-dump", str(DUMP), "--", "vllm", "serve", *cmd])
    return rc, capsys.readouterr().out


def test_bf16_launch_without_quantization_or_speculation_is_not_blocked_by_fp4_or_mtp(capsys) -> None:
    rc, out = _launch(capsys, str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "-tp", "1")
    # MTP339 (warning): the dump's torch is not 0.33.0's pinned torch==2.14.0
    assert rc == 0 and out.startswith("WARN: go: vLLM 0.33.0: no speculative decoding; warnings: MTP339 (exit 0)")
    assert "[preflight, note] native FP4 verdict unknown: SM120 has FP4 tensor cores, but driver version unknown" in out
    assert "(a note for this launch: it runs no FP4 kernels)" in out
    assert "native FP4: not needed by this launch (unquantized checkpoint, no FP4 quantization method); the machine: unknown" in out


def test_fp8_checkpoint_gets_no_fp4_verdict_and_config_only_mtp_is_a_note(capsys) -> None:
    rc, out = _launch(capsys, str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1")
    assert rc == 0
    assert "[checkpoint, note] config.json declares 1 MTP layer(s) at /num_nextn_predict_layers" in out
    assert "(a note for this launch: no --speculative-config, so the MTP weights are not loaded)" in out
    assert "native FP4: not needed by this launch (FP8 checkpoint, no FP4 quantization method)" in out


def test_nvfp4_checkpoint_still_needs_the_fp4_verdict_and_says_what_runs(capsys) -> None:
    rc, out = _launch(capsys, str(CONFIGS / "nvidia--DeepSeek-V3.1-NVFP4"), "-tp", "1", "--speculative-config",
                      '{"method":"mtp","num_speculative_tokens":1}')
    assert rc == 3
    first = out.splitlines()[0]
    assert first.startswith("INCONCLUSIVE: could not tell: ")
    # what runs is named although the verdict is open: the replay decided it (vllm/config/speculative.py)
    assert "; vLLM 0.33.0: method mtp, draft the target (DeepSeekMTPModel), 1 token(s)" in first
    assert "[preflight, blocking] native FP4 verdict unknown" in out


def test_fp4_needed_reads_the_flag_and_the_declared_scheme() -> None:
    assert fp4_needed(None, "modelopt_fp4") is True and fp4_needed(None, None) is None
    assert fp4_needed({"summary": {"quantization": "FP8 (fp8, config.json#quantization_config, block 128x128)"}}, None) is False
    assert fp4_needed({"summary": {"quantization": "NVFP4 (modelopt, hf_quant_config.json, group size 16)"}}, None) is True
    assert fp4_needed({"summary": {"quantization": None}}, "fp8") is False


def test_fp4_text_says_a_software_block_on_fp4_hardware() -> None:
    pf = {"summary": {"verdict": "not capable"},
          "verdicts": [{"gpu": i, "compute_capability": "10.0", "native_fp4": "not capable",
                        "reasons": ["MTP203: torch 2.6.0+cu124 is built for CUDA 12.4 (< 12.8) on a Blackwell GPU"]} for i in range(8)]}
    assert fp4_text(pf, True, None) == ("not capable with this software stack (MTP203); the GPUs (compute capability 10.0) "
                                        "have FP4 tensor cores")
    pf["verdicts"][0]["compute_capability"] = "9.0"
    assert fp4_text(pf, True, None) == "not capable"


def test_vllm_tree_facts_appear_only_with_verbose(capsys) -> None:
    cmd = ["launch", "--vllm", str(vllm_wheel("0.33.0")), "--env-dump", str(DUMP), "--", "vllm", "serve",
           str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1", "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}']
    main(cmd)
    quiet = capsys.readouterr().out
    main(cmd[:1] + ["-v"] + cmd[1:])
    loud = capsys.readouterr().out
    # MTP404 (hf_config_override's 63 rewrites) and MTP400 (the 27-member alias set) describe the tree, not this launch
    assert "MTP404" not in quiet and "MTP400" not in quiet and "--speculative-algorithm" not in quiet
    assert "vLLM tree facts (not specific to this launch):" in loud and "MTP404 vllm/config/speculative.py:711:" in loud
