"""The checkpoint analyzer on real public metadata (fixtures/checkpoint/*, each with SOURCE.txt).

Every number below was counted by hand on the files, independently of mtp-audit, e.g.
``jq '.weight_map | keys | length' model.safetensors.index.json`` and
``jq '[.weight_map | keys[] | select(startswith("model.mtp_layers."))] | length'``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.cli.main import main
from mtp_audit.report import Severity, Status, exit_code

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"


def facts(report):
    return report.facts["checkpoint"]


def test_reap_qwen35_declared_but_missing():
    rep = audit_checkpoint(FIX / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
    f = facts(rep)
    assert f["index"]["tensors"] == 22213
    assert f["mtp"]["tensors"] == 0
    assert f["mtp"]["declared_layers"] == 1
    assert f["mtp"]["declared_by"] == "/mtp_num_hidden_layers"  # top level: this config has no text_config
    assert [x.rule_id for x in rep.findings] == ["MTP001"]
    finding = rep.findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.location.path == "config.json"
    assert finding.location.symbol == "/mtp_num_hidden_layers"
    assert "22,213 tensors" in finding.message and "mtp.*" in finding.message
    assert f["summary"]["sglang_mtp_usable"] is False
    assert f["engine"]["sglang"]["blocked_by"] == ["MTP001"]
    assert exit_code(rep, Severity.ERROR) == 1
    # metadata-only mode is noted, not blocking
    assert [g.blocking for g in rep.gaps] == [False]
    assert main(["checkpoint", str(FIX / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")]) == 1


def test_mimo_kor_sixteen_mtp_tensors():
    rep = audit_checkpoint(FIX / "jj8127--mimo_kor")
    f = facts(rep)
    assert f["index"]["tensors"] == 451
    assert f["mtp"]["tensors"] == 16
    assert f["mtp"]["tensors_per_layer"] == {"model.mtp_layers.0": 16}
    assert f["mtp"]["found_layers"] == 1 and f["mtp"]["declared_layers"] == 1
    assert f["config"]["family"] == "mimo-7b"
    # 7 linears (q/k/v/o, gate/up/down) + input_proj, all unquantized; config torch_dtype bfloat16
    assert f["mtp"]["format_modules"] == {"BF16": 8}
    assert f["mtp"]["format_inferred"] is True
    assert rep.findings == ()
    assert rep.status is Status.PASS
    assert f["summary"]["sglang_mtp_usable"] is True
    assert f["engine"]["sglang"]["flags"] == "--speculative-algorithm NEXTN"
    assert f["engine"]["sglang"]["runs_as"] == "EAGLE"
    # estimated from config (hidden 4096, 32 heads x 128, 8 KV heads, intermediate 11008), BF16:
    # q, o (4096x4096), k, v (1024x4096), gate/up/down (11008x4096), input_proj (4096x8192),
    # q/k/v biases, 5 norms (token, hidden, final, input, post_attention)
    h, i, kv = 4096, 11008, 8 * 128
    linears = 2 * (h * h * 2) + 2 * (kv * h * 2) + 3 * (h * i * 2) + h * 2 * h * 2
    biases = (h + kv + kv) * 2
    norms = 5 * h * 2
    assert f["mtp"]["bytes"] == {"value": linears + biases + norms, "estimated": True, "unestimated_tensors": 0}


@pytest.mark.parametrize("folder", ["tbressers--WizardLM-2-8x22B", "mistralai--Mixtral-8x22B-v0.1"])
def test_mixtral_family_passes(folder):
    rep = audit_checkpoint(FIX / folder)
    assert rep.findings == ()
    assert not rep.inconclusive
    assert exit_code(rep, Severity.ERROR) == 0
    assert facts(rep)["config"]["family"] == "mixtral"
    assert main(["checkpoint", str(FIX / folder)]) == 0


def test_wizardlm_counts():
    f = facts(audit_checkpoint(FIX / "tbressers--WizardLM-2-8x22B"))
    assert f["index"]["tensors"] == 1739
    assert f["index"]["shards"] == 59
    assert f["mtp"]["tensors"] == 0
    assert f["config"]["num_experts"] == 8 and f["config"]["experts_key"] == "/num_local_experts"


def test_mixtral_config_only_is_conclusive():
    rep = audit_checkpoint(FIX / "mistralai--Mixtral-8x22B-v0.1")
    assert facts(rep)["mode"] == "config-only"
    assert rep.gaps == ()
    assert rep.status is Status.PASS


def test_nvidia_qwen35_config_only_inconclusive_with_quant_facts(tmp_path):
    folder = tmp_path / "nvidia-qwen"
    folder.mkdir()
    for name in ("config.json", "hf_quant_config.json", "SOURCE.txt"):
        (folder / name).write_bytes((FIX / "nvidia--Qwen3.5-397B-A17B-NVFP4" / name).read_bytes())
    rep = audit_checkpoint(folder)
    f = facts(rep)
    assert f["mode"] == "config-only"
    assert rep.status is Status.INCONCLUSIVE
    assert [g.blocking for g in rep.gaps] == [True]
    assert "/text_config/mtp_num_hidden_layers" in rep.gaps[0].message
    q = f["quantization"]
    assert [s["source"] for s in q] == ["hf_quant_config.json#/quantization", "config.json#/quantization_config"]
    assert q[0]["algo"] == "NVFP4" and q[0]["group_size"] == 16 and q[0]["kv_cache"] == "FP8"
    assert q[0]["producer"] == "modelopt 0.0.1.dev538+g26cad678d"
    # 184 entries in both lists (jq '.quantization.exclude_modules | length'); two cover an expected MTP module:
    # mtp.layers.0* and *.mlp.shared_expert.* (mtp.layers.0.mlp.shared_expert.{gate,up,down}_proj)
    assert q[0]["exclude_patterns"] == 184 and q[1]["exclude_patterns"] == 184
    assert q[0]["mtp_exclude_patterns"] == ["*.mlp.shared_expert.*", "mtp.layers.0*"] == q[1]["mtp_exclude_patterns"]
    assert f["summary"]["quantization"] == "NVFP4 (modelopt, hf_quant_config.json, group size 16)"
    assert f["summary"]["mtp_bytes_estimated"] is True
    assert f["mtp"]["bytes"]["basis"].startswith("expected layout")
    out = tmp_path / "report.json"
    assert main(["checkpoint", str(folder), "-f", "json", "-o", str(out)]) == 3
    doc = json.loads(out.read_text())
    assert doc["status"] == "inconclusive"
    assert doc["facts"]["checkpoint"]["quantization"][0]["algo"] == "NVFP4"


def test_minimax_config_only_declares_three_modules():
    rep = audit_checkpoint(FIX / "MiniMaxAI--MiniMax-M2.5")
    f = facts(rep)
    assert f["mtp"]["declared_layers"] == 3  # use_mtp true, num_mtp_modules 3, mtp_transformer_layers 1
    assert f["mtp"]["declared_by"] == "/num_mtp_modules"
    assert rep.status is Status.INCONCLUSIVE


def test_minimax_index_without_mtp_is_upstream_fact(tmp_path):
    (tmp_path / "config.json").write_bytes((FIX / "MiniMaxAI--MiniMax-M2.5" / "config.json").read_bytes())
    wm = {f"model.layers.{i}.self_attn.o_proj.weight": "model-00001-of-00001.safetensors" for i in range(62)}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wm}))
    rep = audit_checkpoint(tmp_path)
    assert [x.rule_id for x in rep.findings] == ["MTP002"]
    assert "never published upstream" in rep.findings[0].message
    assert "model.layers.62..64.*" in rep.findings[0].message


def test_qwen3_next_is_implicit():
    rep = audit_checkpoint(FIX / "Qwen--Qwen3-Next-80B-A3B-Thinking")
    f = facts(rep)
    assert f["mtp"]["declared_layers"] == 1 and f["mtp"]["declared_by"] == "implicit"
    assert rep.status is Status.INCONCLUSIVE
    assert "implicitly" in rep.gaps[0].message


def test_text_report_answers_in_plain_words() -> None:
    """The text report opens with the answer, and (verbose) ends saying whether SGLang will use the MTP heads (values from the real
    REAP and mimo_kor files: 1 layer declared, 0 vs 16 MTP tensors)."""
    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.formats import render

    fx = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint"
    reap = render(audit_checkpoint(fx / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"), "text", verbose=True)
    assert reap.startswith("FAIL: config.json declares 1 MTP layer but the checkpoint ships none; --speculative-algorithm NEXTN "
                           "will not get working MTP heads (MTP001) (exit 1)\n")
    assert "  Declared: 1 MTP layer(s) at /mtp_num_hidden_layers.\n  Found: 0 MTP tensor(s) in 0 layer(s).\n" in reap
    assert "  SGLang: no, --speculative-algorithm NEXTN would not get working MTP heads (MTP001).\n" in reap
    mimo = render(audit_checkpoint(fx / "jj8127--mimo_kor"), "markdown")
    assert "Found: 16 MTP tensor(s) in 1 layer(s), stored BF16" in mimo
    assert "SGLang: yes, with --speculative-algorithm NEXTN (an alias: SGLang runs its EAGLE worker" in mimo
