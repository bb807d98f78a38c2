"""llama.cpp's FP4 verdict for its own kernels and the MTP head's memory (MTP612): a GGUF with NVFP4 trunk tensors on real environment dumps (an H200, 8x
B200) and a synthetic SM120 one. Expected verdicts checked by hand against llama.cpp's ``blackwell_mma_available``
(ggml cc 1200 <= 100 x major + 10 x minor < 1300): only SM12x takes the native FP4 path."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.launch import audit_launch
from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors
from mtp_audit.synth.launch import env_dump

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
B200 = ROOT / "fixtures" / "preflight" / "envdumps" / "sglang-24834.txt"


def _launch(tmp_path: Path, dump: Path, gtype: int = 40):
    tensors = trunk_tensors(range(3), ggml_type=gtype) + nextn_tensors(3, ggml_type=8)
    (tmp_path / "model.gguf").write_bytes(gguf_bytes(model_kv("qwen35moe", blocks=4, nextn=1), tensors))
    return audit_launch(["llama-server", "-m", "model.gguf", "--spec-type", "draft-mtp"], llamacpp="10444",
                        env_dumps=[dump], cwd=tmp_path, environ={})


def test_nvfp4_gguf_on_h200_runs_the_int8_path(tmp_path):
    r = _launch(tmp_path, H200)
    fp4 = r.facts["launch"]["fp4"]
    assert (fp4["engine"], fp4["needed"], fp4["native_fp4"]) == ("llamacpp", True, "not capable")
    [f] = [f for f in r.findings if f.rule_id == "MTP611"]
    # 3 trunk tensors per synthetic GGUF are NVFP4: token_embd, output, and 2 per block x 3 blocks = 8
    assert "8 NVFP4 tensor(s) run on GPU 0 (NVIDIA H200, compute capability 9.0)" in f.message
    assert f.severity.name == "INFO" and r.facts["launch"]["verdict"] != "fix first"
    assert any("checked for llama.cpp only for the FP4 kernels of the GGUF's NVFP4 tensors" in g.message for g in r.gaps)


def test_b200_is_not_llamacpp_native_fp4_but_sm120_is(tmp_path):
    r = _launch(tmp_path, B200)
    assert {v["compute_capability"] for v in r.facts["launch"]["fp4"]["verdicts"]} == {"10.0"}
    assert r.facts["launch"]["fp4"]["native_fp4"] == "not capable"
    dump = tmp_path / "env.txt"
    dump.write_text(env_dump("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"))
    r = _launch(tmp_path, dump)
    assert r.facts["launch"]["fp4"]["native_fp4"] == "capable" and not any(f.rule_id == "MTP611" for f in r.findings)


def test_q8_gguf_reads_no_machine(tmp_path):
    r = _launch(tmp_path, H200, gtype=8)
    assert "fp4" not in r.facts["launch"]
    assert any(g.message.startswith("the machine is not checked for llama.cpp") for g in r.gaps)


def test_mtp_head_memory_is_whole_on_one_device(tmp_path):
    """The synthetic head: eh_proj 64 x 128 Q8_0 (8,704 bytes) + three F32 norms of 64 (768 bytes) = 9,472 bytes."""
    r = _launch(tmp_path, H200, gtype=8)
    [f] = [f for f in r.findings if f.rule_id == "MTP612"]
    assert f.message.startswith("the MTP head's 1 nextn block(s) take 9,472 bytes")
    assert "whole on the one device that holds the last blocks (--split-mode layer, the default)" in f.message
    r = audit_launch(["llama-server", "-m", "model.gguf"], llamacpp="10444", env_dumps=[H200], cwd=tmp_path, environ={})
    assert not any(f.rule_id == "MTP612" for f in r.findings)
