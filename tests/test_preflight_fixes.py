"""Fresh-user findings on ``mtp-audit preflight``: dumps of different machines, launch-flag findings
kept out of the per-GPU verdict, flag choices, the facts summary, non-SGLang launch commands, grouped
MTP228 verdicts, known-bad messages and user-facing sources. Values checked by hand against the
fixture dumps in fixtures/preflight/envdumps (their SOURCE.txt names the issues they come from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.cli import main
from mtp_audit.errors import InputError
from mtp_audit.preflight import preflight
from mtp_audit.preflight.rules import B200, env

F = Path(__file__).resolve().parent.parent / "fixtures" / "preflight"
E = F / "envdumps"


def run_cli(args, capsys):
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- 1. dumps of different machines are the user's mistake -------------------------------------


@pytest.mark.parametrize("a,b,fact", [
    # h200-nvidia-smi.txt: 1x NVIDIA H200 (9.0), driver 580.159.04; sglang-11208.txt: 4x NVIDIA GB200 (10.0), driver 570.172.08
    ("h200-nvidia-smi.txt", "sglang-11208.txt", "GPU list differs: 1x NVIDIA H200 (9.0) vs 4x NVIDIA GB200 (10.0)"),
    # pytorch-150733.txt: 1x RTX 5090 D (12.0); sglang-24834.txt: 8x B200 (10.0)
    ("pytorch-150733.txt", "sglang-24834.txt", "GPU list differs: 1x NVIDIA GeForce RTX 5090 D (12.0) vs 8x NVIDIA B200 (10.0)"),
])
def test_dumps_of_two_machines_are_an_input_error(capsys, a, b, fact):
    rc, out, err = run_cli(["preflight", "--env-dump", str(E / a), "--env-dump", str(E / b)], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mtp-audit: error: ")
    assert a in err and b in err and fact in err


def test_same_gpus_different_driver_is_a_conflict(tmp_path):
    one = tmp_path / "one.txt"
    two = tmp_path / "two.txt"
    one.write_text(env(B200, n=2, driver="580.95.05"))
    two.write_text(env(B200, n=2, driver="570.172.08"))
    with pytest.raises(InputError) as exc:
        preflight(env_dumps=[one, two], use_sglang_analyzer=False)
    assert "one.txt" in str(exc.value) and "two.txt" in str(exc.value)
    assert "driver version differs: 580.95.05 vs 570.172.08" in str(exc.value)


def test_dumps_of_one_machine_still_merge():
    # both GB10 (12.1), driver 580.95.05: sglang-13198.txt has torch 2.9.1+cu130, the nvidia-smi dump the driver's CUDA 13.0
    r = preflight(env_dumps=[E / "sglang-13198.txt", E / "k8s-device-plugin-1482.txt"], use_sglang_analyzer=False)
    m = r.facts["preflight"]["machine"]
    assert [g["name"]["value"] for g in m["gpus"]] == ["NVIDIA GB10"]
    assert m["driver_version"]["value"] == "580.95.05"
    assert m["torch_version"]["value"] == "2.9.1+cu130"
    assert m["cuda_driver_version"]["value"] == "13.0"
    assert r.facts["preflight"]["summary"]["origin"] == "env-dump:sglang-check-env+nvidia-smi"


# --- 5. a launch command that is not SGLang ------------------------------------------------------


def test_non_sglang_launch_is_one_line_exit_2(capsys):
    rc, out, err = run_cli(["preflight", "--env-dump", str(E / "sglang-24834.txt"), "--", "ls", "-la"], capsys)
    assert rc == 2 and out == ""
    assert err == ("mtp-audit: error: launch command: not an SGLang launch command: expected python -m sglang.launch_server … "
                   "or sglang serve … (got 'ls -la')\n")


# --- 2. a flag the installed SGLang lacks is not "not capable" ------------------------------------


def test_unknown_flag_of_old_sglang_keeps_gb200_capable(capsys):
    # sglang-11208.txt: SGLang 0.5.2 (no --fp4-gemm-backend before 0.5.8), 4x GB200 (10.0), torch 2.8.0+cu129, driver 570.172.08
    rc, out, _ = run_cli(["preflight", "--env-dump", str(E / "sglang-11208.txt"), "-f", "json", "--",
                          "python", "-m", "sglang.launch_server", "--fp4-gemm-backend", "flashinfer_trtllm"], capsys)
    d = json.loads(out)
    pf = d["facts"]["preflight"]
    assert [v["native_fp4"] for v in pf["verdicts"]] == ["capable"] * 4
    assert pf["summary"]["verdict"] == "capable"
    errors = [f for f in d["findings"] if f["severity"] == "error"]
    assert [f["rule_id"] for f in errors] == ["MTP226"]
    assert "SGLang 0.5.2 has no --fp4-gemm-backend option" in errors[0]["message"]
    assert rc == 1  # the launch still fails at argparse
