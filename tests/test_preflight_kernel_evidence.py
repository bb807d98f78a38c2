"""The native-FP4 verdict "capable" needs the engine's release and the kernel packages its FP4 path loads
(:func:`mtp_audit.preflight.analyze.check_fp4_kernel_evidence`), and a GPU name and compute capability that agree
(:func:`mtp_audit.preflight.analyze.name_cc_conflict`).

Inputs: fixtures/preflight/envdumps/sglang-24834.txt (a real ``python3 -m sglang.check_env`` of 8 x B200, SGLang
0.5.12.dev136, sglang-kernel 0.4.2.post1, flashinfer_python 0.6.8.post1, ``vllm: Module Not Found``) with lines
edited the way a user's machine differs; fixtures/preflight/h200-live-facts.json (a live collection on an H200 where
sglang and flashinfer are not installed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.cli.main import main

F = Path(__file__).parent.parent / "fixtures" / "preflight"
DUMP = F / "envdumps" / "sglang-24834.txt"


def _verdict(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = main(["preflight", *args, "-f", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _dump(tmp_path: Path, edit) -> Path:
    p = tmp_path / "env.txt"
    p.write_text("\n".join(edit(line) for line in DUMP.read_text().splitlines() if edit(line) is not None) + "\n")
    return p


def _gaps(doc: dict, blocking: bool) -> list[str]:
    return [g["message"] for g in doc["gaps"] if g["blocking"] is blocking]


def test_full_dump_is_capable_with_the_unread_sm_targets_as_a_note(capsys):
    rc, doc = _verdict(["--env-dump", str(DUMP)], capsys)
    assert rc == 0 and doc["facts"]["preflight"]["summary"]["verdict"] == "capable"
    assert ("SM targets of sglang-kernel not read (a version only): whether its build holds FP4 kernels for this GPU was "
            "not checked") in _gaps(doc, False)


def test_kernel_packages_not_shown_is_could_not_tell(tmp_path, capsys):
    """F24: the same dump without its sglang-kernel / flashinfer lines was PASS; the kernels are not in evidence."""
    p = _dump(tmp_path, lambda x: None if x.startswith(("sglang-kernel", "flashinfer")) else x)
    rc, doc = _verdict(["--env-dump", str(p)], capsys)
    assert rc == 3
    (v,) = {x["reasons"][0] for x in doc["facts"]["preflight"]["verdicts"]}
    assert v == ("SM100 has FP4 tensor cores, but sgl-kernel / sglang-kernel, whose FP4 kernels SGLang loads, are not shown; "
                 "flashinfer-python, whose FP4 kernels SGLang loads, is not shown")


def test_packages_shown_not_installed_are_no_pass(tmp_path, capsys):
    """F24c: 'Module Not Found' for sglang and its kernels was PASS while the sglang line absent was could-not-tell."""
    names = ("sglang:", "sglang-kernel:", "flashinfer_python:", "flashinfer_cubin:")
    gone = _dump(tmp_path, lambda x: x.split(":")[0] + ": Module Not Found" if x.startswith(names) else x)
    rc, doc = _verdict(["--env-dump", str(gone)], capsys)
    assert rc == 3 and doc["facts"]["preflight"]["summary"]["verdict"] == "unknown"
    assert doc["facts"]["preflight"]["verdicts"][0]["reasons"][0].startswith(
        "SM100 has FP4 tensor cores, but SGLang is not installed (check_env: Module Not Found), so no FP4 kernel of it is on this machine")
    assert "SGLang is shown as not installed (check_env: Module Not Found): a launch of it on this machine as it stands does not start; " \
           "its FP4 kernels were not checked" in _gaps(doc, False)
    absent = tmp_path / "absent.txt"
    absent.write_text("\n".join(x for x in DUMP.read_text().splitlines() if not x.startswith("sglang:")) + "\n")
    rc_absent, _ = _verdict(["--env-dump", str(absent)], capsys)
    assert rc_absent == 3  # both could-not-tell: showing the packages absent no longer turns it into a pass


@pytest.mark.parametrize(("engine", "reason"), [
    ("vllm", "vLLM is not installed (check_env: Module Not Found), so no FP4 kernel of it is on this machine; "
             "the verdict is that of the release you install, which was not given"),
    ("trtllm", "the preflight reads no TensorRT-LLM release or FP4 kernel build from a machine, so whether its FP4 kernels run here was not checked"),
    ("llamacpp", "the preflight reads no llama.cpp release or FP4 kernel build from a machine, so whether its FP4 kernels run here was not checked"),
])
def test_other_engines_unknown_release_is_could_not_tell(engine, reason, capsys):
    """F28: --engine vllm|trtllm|llamacpp on this dump was PASS '(version unknown)'; SGLang unknown was could-not-tell."""
    rc, doc = _verdict(["--env-dump", str(DUMP), "--engine", engine], capsys)
    assert rc == 3
    assert doc["facts"]["preflight"]["verdicts"][0]["reasons"][0] == f"SM100 has FP4 tensor cores, but {reason}"


def test_vllm_installed_on_b200_stays_capable(tmp_path, capsys):
    from mtp_audit.synth.dumps import B200, vllm_env

    p = tmp_path / "env.txt"
    p.write_text(vllm_env(B200))
    rc, doc = _verdict(["--env-dump", str(p)], capsys)
    assert rc == 0 and doc["facts"]["preflight"]["summary"]["verdict"] == "capable", doc["facts"]["preflight"]["verdicts"]


def test_gpu_name_contradicting_its_compute_capability_is_a_blocking_gap(tmp_path, capsys):
    """F24b: an H200 (SM90 in the GPU table) recorded with compute capability 10.0 was PASS 'can run native FP4'."""
    d = json.loads((F / "h200-live-facts.json").read_text())
    d["gpus"][0]["compute_capability"] = {"value": [10, 0], "source": "nvml"}
    p = tmp_path / "facts.json"
    p.write_text(json.dumps(d))
    rc, doc = _verdict(["--facts", str(p)], capsys)
    msg = ("NVIDIA H200 has compute capability 9.0 (https://developer.nvidia.com/cuda-gpus; matched 'H200'), but the facts "
           "give 10.0 [nvml]: could not tell which GPU it is")
    assert rc == 3 and f"GPU 0: {msg}" in _gaps(doc, True)
    assert doc["facts"]["preflight"]["verdicts"][0]["native_fp4"] == "unknown"
    assert doc["facts"]["preflight"]["verdicts"][0]["reasons"] == [msg]
    d["gpus"][0]["compute_capability"] = {"value": [9, 0], "source": "nvml"}  # the real one: no gap
    p.write_text(json.dumps(d))
    rc, doc = _verdict(["--facts", str(p)], capsys)
    assert rc == 0 and not [g for g in _gaps(doc, True) if "could not tell which GPU" in g]
