"""Without a launch the preflight states what the machine can run; what SGLang's default flags would pick for a
launch nobody wrote is information, never an error or a warning. The GB10 dump is a complete sglang.check_env of
a DGX Spark with the stack pip installs for SGLang 0.5.17 (fixtures/preflight/envdumps/constructed/SOURCE.txt)."""

from __future__ import annotations

from conftest import FIXTURES

from mtp_audit.cli.main import main
from mtp_audit.preflight import preflight
from mtp_audit.report import Severity

GB10 = FIXTURES / "preflight" / "envdumps" / "constructed" / "gb10-sglang-0.5.17.txt"
B13198 = FIXTURES / "preflight" / "envdumps" / "sglang-13198.txt"


def _by_rule(r):
    return {f.rule_id: f for f in r.findings}


def test_gb10_preflight_without_a_launch_passes(capsys):
    assert main(["preflight", "--env-dump", str(GB10)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS: GPU 0 (NVIDIA GB10, compute capability 12.1) can run native FP4 on SGLang 0.5.17")
    r = preflight(env_dumps=[GB10], use_engine_analyzer=False)
    assert [f.rule_id for f in r.findings if f.severity > Severity.INFO] == []
    f = _by_rule(r)["MTP216"]
    assert f.message.startswith("no launch given; an FP4 launch with SGLang's default flags would meet this (error for that launch)")
    assert "--moe-runner-backend flashinfer_cutlass" in f.remediation
    assert _by_rule(r)["MTP212"].message.startswith("no launch given;")


def test_the_launch_that_causes_it_still_errs():
    launch = ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "modelopt_fp4",
              "--moe-runner-backend", "flashinfer_trtllm"]
    r = preflight(env_dumps=[GB10], launch=launch, use_engine_analyzer=False)
    assert _by_rule(r)["MTP215"].severity == Severity.ERROR  # an SM100-only MoE backend passed on SM121
    plain = ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--fp4-gemm-backend", "auto"]
    assert _by_rule(preflight(env_dumps=[GB10], launch=plain, use_engine_analyzer=False))["MTP216"].severity == Severity.ERROR


def test_a_machine_fault_is_still_an_error_without_a_launch():
    """sglang#13198: torch 2.9.1 under an sglang that pins 2.8.0 is the machine's own problem (MTP209)."""
    r = preflight(env_dumps=[B13198], use_engine_analyzer=False)
    assert [f.rule_id for f in r.findings if f.severity == Severity.ERROR] == ["MTP209"]
    assert _by_rule(r)["MTP212"].severity == Severity.INFO
