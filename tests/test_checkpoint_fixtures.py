"""Real safetensors shards written by ``mtp_audit.synth.shards`` from the two metadata fixtures,
checked against publicly reported facts:

- deepseek-ai/DeepSeek-V3 (FP8): 91,991 tensors, 1,564 in model.layers.61, 688,574,839,360 bytes
  (simpx/model-inspect README.md @ 5894630, header dump); dtype counts BF16 316 / F8_E4M3 45,808 /
  F32 45,867 and index total_size 1,369,062,772,000 as reported by an independent public audit
  (see fixtures/checkpoint/deepseek-ai--DeepSeek-V3/spec.json "source").
- nvidia/Qwen3.5-397B-A17B-NVFP4: 1,553 MTP tensors = 512 x 3 + 17, all BF16, no scale tensors;
  hf_quant_config.json excludes only mtp.layers.0*, so mtp.fc (BF16) is not covered (vLLM PR #38832).

Shards are sparse files (real shapes, no data), so the 163 DeepSeek shards use ~20 MB of disk.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.cli.main import main
from mtp_audit.report import Severity
from mtp_audit.synth.shards import write_checkpoint

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"
DS = FIX / "deepseek-ai--DeepSeek-V3"
QW = FIX / "nvidia--Qwen3.5-397B-A17B-NVFP4"


def _make(tmp: Path, fixture: Path, files: tuple[str, ...], *, shards: bool) -> Path:
    spec = json.loads((fixture / "spec.json").read_text())
    write_checkpoint(tmp, spec, shards=shards)
    for f in files:
        shutil.copy(fixture / f, tmp / f)
    return tmp


@pytest.fixture(scope="module")
def deepseek(tmp_path_factory):
    return _make(tmp_path_factory.mktemp("dsv3"), DS, ("config.json",), shards=True)


@pytest.fixture(scope="module")
def deepseek_report(deepseek):
    return audit_checkpoint(deepseek)


def test_deepseek_v3_header_facts(deepseek, deepseek_report):
    f = deepseek_report.facts["checkpoint"]
    assert len(list(deepseek.glob("*.safetensors"))) == 163
    assert f["mode"] == "shards"
    assert f["shards"]["read"] == 163
    assert f["summary"]["tensors"] == 91991
    assert f["mtp"]["tensors"] == 1564
    assert f["mtp"]["tensors_per_layer"] == {"model.layers.61": 1564}
    assert f["shards"]["bytes"] == 688_574_839_360
    assert f["index"]["total_size"] == 1_369_062_772_000
    # 777 MTP linears = 256 experts x 3 + 3 shared-expert + 5 MLA projections + eh_proj; only eh_proj is BF16
    assert "stored mixed (1 BF16, 776 FP8 linear modules), 15,424,227,552 bytes." in "\n".join(f["closing"]["lines"])


def test_deepseek_v3_dtype_counts_from_headers(deepseek):
    from collections import Counter

    from mtp_audit.sources.local import LocalSource

    src = LocalSource(deepseek)
    counts: Counter[str] = Counter()
    for _rel, hdr in src.read_headers([p.name for p in deepseek.glob("*.safetensors")]).items():
        counts.update(t.dtype for t in hdr.tensors.values())
    assert counts == {"BF16": 316, "F8_E4M3": 45808, "F32": 45867}


def test_deepseek_v3_mtp_layer(deepseek_report):
    f = deepseek_report.facts["checkpoint"]["mtp"]
    assert f["declared_layers"] == 1 and f["found_layers"] == 1
    assert f["experts"]["model.layers.61"]["found"] == 256
    assert f["experts"]["model.layers.61"]["missing"] == []
    assert f["experts"]["model.layers.61"]["projections"] == ["down_proj", "gate_proj", "up_proj"]
    # 776 FP8 linears (5 MLA projections + 768 expert + 3 shared-expert) and eh_proj in BF16
    assert f["format_modules"] == {"BF16": 1, "FP8": 776}
    assert f["bytes"]["estimated"] is False
    ids = {x.rule_id: x for x in deepseek_report.findings}
    assert set(ids) == {"MTP006", "MTP011"}
    assert ids["MTP006"].location.symbol == "model.layers.61.eh_proj"
    assert "205,520,896 bytes" in ids["MTP006"].message  # 7168 x 14336 x 2 (header dump row)
    assert "computed as if every tensor were BF16" in ids["MTP011"].message
    assert ids["MTP011"].severity is Severity.WARNING
    assert deepseek_report.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is True


def test_deepseek_v3_metadata_only_estimate_matches_headers(tmp_path, deepseek_report):
    """Bytes estimated from config.json + tensor names equal the exact header sum of layer 61."""
    folder = _make(tmp_path, DS, ("config.json",), shards=False)
    rep = audit_checkpoint(folder)
    f = rep.facts["checkpoint"]
    assert f["mode"] == "metadata-only"
    assert f["mtp"]["tensors"] == 1564
    exact = deepseek_report.facts["checkpoint"]["mtp"]["bytes"]["value"]
    assert f["mtp"]["bytes"] == {"value": exact, "estimated": True, "unestimated_tensors": 0}
    assert f["mtp"]["format_modules"] == {"BF16": 1, "FP8": 776}
    assert f["mtp"]["format_inferred"] is True
    assert [x.rule_id for x in rep.findings] == ["MTP006"]  # total_size not checkable without headers
    # trunk formats counted from suffixes equal the per-module header result
    assert f["trunk"]["format_modules"] == deepseek_report.facts["checkpoint"]["trunk"]["format_modules"] == {"FP8": 45032}
    assert [g.blocking for g in rep.gaps] == [False]


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return _make(tmp_path_factory.mktemp("qwen"), QW, ("config.json", "hf_quant_config.json"), shards=True)


def test_qwen35_nvfp4_mtp_is_1553_bf16(qwen):
    rep = audit_checkpoint(qwen)
    f = rep.facts["checkpoint"]["mtp"]
    assert f["tensors"] == 1553
    assert f["dtypes"] == {"BF16": 1553}
    assert f["scale_tensors"] == 0
    e = f["experts"]["mtp.layers.0"]
    assert e["found"] == 512 and e["expected"] == 512 and e["missing"] == []
    assert f["tensors"] - 3 * e["found"] == 17
    assert f["tensors_per_layer"] == {"mtp": 4, "mtp.layers.0": 1549}
    assert f["format"] == "BF16"
    assert rep.facts["checkpoint"]["trunk"]["format_modules"]["NVFP4"] == 1536


def test_qwen35_nvfp4_mtp_fc_not_excluded(qwen):
    rep = audit_checkpoint(qwen)
    hits = [x for x in rep.findings if x.rule_id == "MTP007"]
    assert len(hits) == 1
    x = hits[0]
    assert x.location.path == "hf_quant_config.json"
    assert x.location.symbol == "/quantization/exclude_modules"
    assert "1 MTP linear module(s) stored BF16" in x.message and "mtp.fc" in x.message
    ev = {e.label: e for e in x.evidence}
    assert ev["stored dtype"].value == "mtp.fc.weight: BF16"
    # "*.mlp.shared_expert.*" also matches mtp.layers.0.mlp.shared_expert.{gate,up,down}_proj
    assert ev["exclusion patterns that cover MTP modules"].value == "*.mlp.shared_expert.*, mtp.layers.0*"
    # the other 182 of the 184 patterns (lm_head, trunk linear_attn, visual...) are counted, not called MTP
    assert ev["other exclusion patterns (match no MTP module)"].value == "182"
    # a warning, not an error: SGLang 0.5.23 builds the whole MTP module BF16 for serialized modelopt_fp4 and
    # vLLM 0.20.0 forces mtp.fc unquantized, whatever exclude_modules says (mtp_audit/checkpoint/overrides.py)
    assert x.severity.label == "warning"
    engines = [e.value.split(":", 1)[0] for e in x.evidence if e.label == "engine override (all of them)"]
    assert engines == ["SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py", "vLLM 0.20.0 vllm/model_executor/models/qwen3_5_mtp.py"]
    assert "SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69" in x.message
    closing = rep.facts["checkpoint"]["closing"]["lines"]
    assert closing[2].startswith("SGLang: yes") and "MTP007" in closing[3]
    cost = [x for x in rep.findings if x.rule_id == "MTP006"][0]
    assert "1544 of 1544 MTP linear module(s)" in cost.message
    # 1,544 linears = 1,536 experts + q/k/v/o + 3 shared-expert + mtp.fc; their bytes are the 13,191,136,256 MTP
    # bytes minus router 512x4096x2, shared_expert_gate 4096x2, 5 norms 4096x2 and q/k norms 256x2:
    assert 13_191_136_256 - (512 * 4096 * 2 + 4096 * 2 + 5 * 4096 * 2 + 2 * 256 * 2) == 13_186_891_776
    assert "13,186,891,776 bytes" in cost.message


def test_qwen35_nvfp4_fixed_exclude_list_passes(tmp_path):
    # regenerate instead of copying: shutil.copytree would fill the sparse 13-GB shard with zeros
    folder = _make(tmp_path, QW, ("config.json", "hf_quant_config.json"), shards=True)
    hq = json.loads((folder / "hf_quant_config.json").read_text())
    hq["quantization"]["exclude_modules"].append("mtp*")  # what the 122B release and Model-Optimizer PR #1124 do
    (folder / "hf_quant_config.json").write_text(json.dumps(hq))
    rep = audit_checkpoint(folder)
    assert "MTP007" not in {x.rule_id for x in rep.findings}


def test_qwen35_config_json_ignore_list_is_checked_too(tmp_path):
    folder = _make(tmp_path, QW, ("config.json",), shards=True)
    assert not (folder / "hf_quant_config.json").exists()
    rep = audit_checkpoint(folder)
    x = [x for x in rep.findings if x.rule_id == "MTP007"][0]
    assert x.location.path == "config.json"
    assert x.location.symbol == "/quantization_config/ignore"


def test_qwen35_metadata_only_infers_bf16(tmp_path):
    folder = _make(tmp_path, QW, ("config.json", "hf_quant_config.json"), shards=False)
    rep = audit_checkpoint(folder)
    f = rep.facts["checkpoint"]["mtp"]
    assert f["tensors"] == 1553 and f["dtypes"] == {} and f["format_inferred"] is True
    assert f["bytes"]["value"] == 13_191_136_256 and f["bytes"]["estimated"] is True
    assert {"MTP006", "MTP007"} <= {x.rule_id for x in rep.findings}
    assert "(inferred: no scale tensors)" in [x for x in rep.findings if x.rule_id == "MTP007"][0].message
    # trunk sample: 1,536 NVFP4 experts; 7 BF16 linears (q/k/v/o, 3 shared-expert) counted from suffixes
    assert rep.facts["checkpoint"]["trunk"]["format_modules"] == {"BF16": 7, "NVFP4": 1536}


def test_qwen_fixture_cli_sarif_and_json(qwen, tmp_path):
    out = tmp_path / "r.sarif"
    assert main(["checkpoint", str(qwen), "-f", "sarif", "-o", str(out)]) == 0  # warnings only
    sarif = json.loads(out.read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"MTP006", "MTP007"}
    assert main(["checkpoint", str(qwen), "--fail-on", "warning"]) == 1


def test_findings_and_gaps_name_the_question_they_answer(tmp_path):
    """The MTP rules and the gaps about the heads answer "mtp-heads" (a launch scopes them by it, never by their
    words); a broken file answers "starts"; the JSON carries it."""
    reap = audit_checkpoint(FIX / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
    assert [(f.rule_id, f.question) for f in reap.findings] == [("MTP001", "mtp-heads")]
    assert [(g.blocking, g.question) for g in reap.gaps] == [(False, "mtp-heads")]  # 10 shards named, none read
    config_only = audit_checkpoint(DS).to_dict()
    assert [(g["blocking"], g["question"]) for g in config_only["gaps"]] == [(True, "mtp-heads")]
    from mtp_audit.report.rules import get_rule

    assert [get_rule(r).question for r in ("MTP006", "MTP013", "MTP011", "MTP033", "MTP039", "MTP050")] == [
        "memory", "starts", None, "mtp-heads", "starts", "mtp-heads"]
