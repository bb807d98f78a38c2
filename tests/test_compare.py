"""``mtp-audit compare``: the comparison of two checkpoint reports' public facts.

The unit tests feed :func:`compare_reports` reports whose ``facts["checkpoint"]`` follow the shape the
checkpoint analyzer emits (``build_facts`` in mtp_audit/checkpoint/analyze.py on branch ``checkpoint``,
listed in docs/hub.md "Facts compare reads"), so they run without the analyzer. The end-to-end tests
need ``mtp_audit.checkpoint.audit_checkpoint`` and are skipped, with that reason, until it is merged.
"""

from __future__ import annotations

import copy
import importlib
import json
import subprocess
import sys

import pytest
from hubfixture import (
    DEEPSEEK_SHARDS,
    FakeHub,
    FakeRepo,
    build_deepseek_163,
    build_mimo,
    child_env,
    isolate_hf,
    write_tree,
)

from mtp_audit.compare.analyze import REQUIRED_FACTS, compare_reports, human_bytes
from mtp_audit.report import Gap, Report, Severity, Status


def _analyzer_available() -> bool:
    try:
        return hasattr(importlib.import_module("mtp_audit.checkpoint"), "audit_checkpoint")
    except ImportError:
        return False


needs_analyzer = pytest.mark.skipif(
    not _analyzer_available(),
    reason="mtp_audit.checkpoint.audit_checkpoint (branch 'checkpoint') is not merged yet; the lead runs this after merging",
)


def mimo_facts() -> dict:
    """facts["checkpoint"] of the MiMo-7B fixture (4 shards, 16 BF16 MTP tensors, 8 MTP linears)."""
    return {
        "summary": {"mode": "shards", "mtp_tensors": 16, "mtp_format": "BF16", "trunk_format": "BF16"},
        "mode": "shards",
        "config": {"architectures": ["MiMoForCausalLM"], "model_type": "mimo", "num_hidden_layers": 36, "num_experts": None},
        "mtp": {
            "declared_layers": 1,
            "declared_by": "/num_nextn_predict_layers",
            "found_layers": 1,
            "tensors": 16,
            "tensors_per_layer": {"model.mtp_layers.0": 16},
            "dtypes": {"BF16": 16},
            "scale_tensors": 0,
            "format": "BF16",
            "format_modules": {"BF16": 8},
            "experts": {},
            "bytes": {"value": 320, "estimated": False},
        },
        "trunk": {"format": "BF16", "format_modules": {"BF16": 252}, "tensors": 435},
        "quantization": [],
    }


def deepseek_facts() -> dict:
    """facts["checkpoint"] of a DeepSeek-V3 FP8 release: 1,564 MTP tensors in model.layers.61, 256 experts."""
    f = mimo_facts()
    f["config"] = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61, "num_experts": 256}
    f["summary"]["mtp_tensors"] = 1564
    f["mtp"].update(
        tensors=1564,
        tensors_per_layer={"model.layers.61": 1564},
        dtypes={"BF16": 8, "F32": 780, "F8_E4M3": 776},
        format="FP8",
        format_modules={"FP8": 776, "BF16": 2},
        experts={"model.layers.61": {"layout": "per-expert", "found": 256, "expected": 256, "projections": ["down_proj", "gate_proj", "up_proj"]}},
        bytes={"value": 18840, "estimated": False},
    )
    f["trunk"] = {"format": "mixed", "format_modules": {"FP8": 45000, "BF16": 3}, "tensors": 90427}
    f["quantization"] = [{"method": "fp8", "algo": "FP8", "mtp_exclude_patterns": []}]
    return f


def _report(name: str, facts: dict, gaps: tuple[Gap, ...] = ()) -> Report:
    return Report.build("checkpoint", name, facts=facts, gaps=gaps)


def _cmp(base: dict, derived: dict, **kw) -> Report:
    return compare_reports(_report("base-ckpt", base, **kw), _report("derived-ckpt", derived))


def _ids(report: Report) -> list[tuple[str, str]]:
    return [(f.rule_id, f.severity.label) for f in report.findings]


def test_identical_checkpoints_pass():
    r = _cmp(mimo_facts(), mimo_facts())
    assert r.status is Status.PASS and r.findings == () and r.gaps == ()
    doc = r.facts["compare"]
    assert doc["summary"]["mtp_tensors"] == "16 -> 16" and doc["config_changes"] == []
    assert doc["answer"] == ["MTP tensors 16 -> 16 (320 bytes -> 320 bytes), stored BF16 -> BF16; 0 MTP config key(s) changed"]
    assert r.targets[0].name == "base-ckpt -> derived-ckpt"
    assert r.rule_ids == ("MTP050", "MTP051", "MTP052", "MTP053", "MTP054")


def test_dropped_mtp_with_the_declaration_kept_is_an_error():
    derived = mimo_facts()
    derived["summary"]["mtp_tensors"] = 0
    derived["mtp"].update(tensors=0, tensors_per_layer={}, dtypes={}, format="none", format_modules={}, found_layers=0, bytes={"value": 0, "estimated": False})
    r = _cmp(mimo_facts(), derived)
    assert _ids(r) == [("MTP050", "error")]
    f = r.findings[0]
    assert f.location.path == "config.json" and f.location.symbol == "/num_nextn_predict_layers"
    assert "dropped all 16 MTP tensors of base-ckpt (model.mtp_layers.0 (16); 320 bytes)" in f.message
    assert "still declares 1 MTP layer(s) at /num_nextn_predict_layers" in f.message
    assert r.facts["compare"]["mtp"]["bytes"] == {"base": 320, "derived": 0, "delta": -320}
    # Declaration dropped too: consistent, but MTP is lost -> warning, plus the config change.
    derived["mtp"].update(declared_layers=0, declared_by=None)
    r = _cmp(mimo_facts(), derived)
    assert sorted(_ids(r)) == [("MTP050", "warning"), ("MTP054", "warning"), ("MTP054", "warning")]


def test_mtp_absorbed_into_the_trunk_is_a_rename():
    derived = deepseek_facts()
    derived["config"]["num_hidden_layers"] = 62
    derived["summary"]["mtp_tensors"] = 0
    derived["mtp"].update(tensors=0, tensors_per_layer={}, format_modules={}, found_layers=0, experts={})
    r = _cmp(deepseek_facts(), derived)
    assert _ids(r) == [("MTP052", "warning")]
    assert "raised num_hidden_layers from 61 to 62" in r.findings[0].message
    assert r.findings[0].location.symbol == "/num_hidden_layers"
    assert r.facts["compare"]["config_changes"] == [{"key": "num_hidden_layers", "base": 61, "derived": 62, "mtp_relevant": True}]


def test_expert_pruning_that_the_config_follows_is_not_a_loss():
    derived = deepseek_facts()
    derived["config"]["num_experts"] = 180
    derived["mtp"]["experts"]["model.layers.61"].update(found=180, expected=180)
    derived["mtp"]["format_modules"] = {"FP8": 776 - 76 * 3, "BF16": 2}
    r = _cmp(deepseek_facts(), derived)
    assert _ids(r) == [("MTP054", "warning")]  # only the num_experts change
    assert r.facts["compare"]["mtp"]["experts"]["model.layers.61"] == {
        "base": {"found": 256, "expected": 256},
        "derived": {"found": 180, "expected": 180},
    }
    # The same pruning of the MTP experts while the config still says 256: modules are lost.
    derived["config"]["num_experts"] = 256
    derived["mtp"]["experts"]["model.layers.61"]["expected"] = 256
    r = _cmp(deepseek_facts(), derived)
    assert _ids(r) == [("MTP051", "error")]
    assert "keeps 550 of the 778 MTP linear modules" in r.findings[0].message
    assert "model.layers.61: 256 -> 180 experts (derived config expects 256)" in r.findings[0].message


def test_renamed_mtp_layer():
    derived = deepseek_facts()
    derived["mtp"]["tensors_per_layer"] = {"mtp.layers.0": 1564}
    derived["mtp"]["experts"] = {"mtp.layers.0": derived["mtp"]["experts"].pop("model.layers.61")}
    r = _cmp(deepseek_facts(), derived)
    assert _ids(r) == [("MTP052", "warning")]
    assert "as mtp.layers.0 where base-ckpt has model.layers.61" in r.findings[0].message


def test_trunk_quantized_mtp_left_bf16():
    """The Qwen3.5-397B-A17B NVFP4 shape (checkpoint_formats.md §5): 1,553 BF16 MTP tensors, 13.2 GB."""
    base = mimo_facts()
    base["mtp"].update(tensors=1553, tensors_per_layer={"mtp": 4, "mtp.layers.0": 1549}, format_modules={"BF16": 1541})
    base["mtp"]["bytes"] = {"value": 13_190_037_504, "estimated": False}
    base["summary"]["mtp_tensors"] = 1553
    derived = copy.deepcopy(base)
    derived["trunk"] = {"format": "mixed", "format_modules": {"NVFP4": 92000, "BF16": 900}, "tensors": 400000}
    derived["quantization"] = [{"method": "modelopt", "algo": "NVFP4", "mtp_exclude_patterns": ["mtp.layers.0*"],
                                "mtp_linear_excluded": 1541}]
    r = _cmp(base, derived)
    assert _ids(r) == [("MTP053", "info")]
    f = [x for x in r.findings if x.rule_id == "MTP053"][0]
    assert "quantized the trunk to NVFP4 but left its 1541 MTP linear modules BF16" in f.message
    assert "13,190,037,504 bytes (13.19 GB)" in f.message
    assert "on purpose: the quantization config excludes mtp.layers.0*" in f.message
    derived["quantization"][0]["mtp_linear_excluded"] = 1  # the list covers 1 of the 1541: not on purpose
    r = _cmp(base, derived)
    assert _ids(r) == [("MTP053", "warning")]
    assert "and the quantization config excludes only 1 of them (mtp.layers.0*)" in r.findings[0].message
    del derived["quantization"][0]["mtp_linear_excluded"]  # a facts document that does not say how many
    assert _ids(_cmp(base, derived)) == [("MTP053", "warning")]
    derived["quantization"][0]["mtp_exclude_patterns"] = []
    r = _cmp(base, derived)
    assert _ids(r) == [("MTP053", "warning")]
    assert "and the quantization config does not exclude them" in r.findings[0].message


def test_missing_facts_and_unknown_tensors_are_blocking_gaps():
    base = mimo_facts()
    del base["mtp"]["format_modules"]
    r = _cmp(base, mimo_facts())
    assert r.status is Status.INCONCLUSIVE and r.findings == ()
    assert r.gaps[0].message == "base: the checkpoint report lacks facts mtp.format_modules; cannot compare"
    assert r.facts["compare"]["answer"] == ["could not compare the MTP heads: base: the checkpoint report lacks facts "
                                            "mtp.format_modules; cannot compare"]
    config_only = mimo_facts()
    config_only["summary"]["mtp_tensors"] = None
    config_only["mode"] = "config-only"
    r = _cmp(mimo_facts(), config_only)
    assert r.status is Status.INCONCLUSIVE
    assert r.gaps[0].message == "derived: no index and no shard header was read (mode config-only), so its MTP tensors are unknown"


def test_gaps_of_each_side_are_carried_over():
    r = _cmp(mimo_facts(), mimo_facts(), gaps=(Gap("checkpoint", "offline: not cached", "mtp.safetensors"),))
    assert r.gaps == (Gap("compare", "base (base-ckpt): offline: not cached", "mtp.safetensors", True),)
    assert r.status is Status.INCONCLUSIVE


def test_human_bytes():
    assert human_bytes(320) == "320 bytes"
    assert human_bytes(13_190_037_504) == "13,190,037,504 bytes (13.19 GB)"
    assert human_bytes(None) == "unknown bytes"


def test_compare_command_is_registered_and_light():
    from click.testing import CliRunner

    from mtp_audit.cli.main import COMMANDS, cli

    assert COMMANDS["compare"] == "mtp_audit.cli.compare:compare"
    out = CliRunner().invoke(cli, ["compare", "--help"])
    assert out.exit_code == 0 and "--offline" in out.output and "--jobs" in out.output
    code = "import sys; from mtp_audit.cli.main import main; main(['compare', '--help']); print('huggingface_hub' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().endswith("False")


# ---------------------------------------------------------------------------------------------------
# End to end, with the checkpoint analyzer (branch "checkpoint").
# ---------------------------------------------------------------------------------------------------


@needs_analyzer
def test_the_analyzer_emits_every_fact_compare_reads(tmp_path):
    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.compare.analyze import _MISSING, _dig

    facts = audit_checkpoint(str(write_tree(tmp_path / "m", build_mimo()))).facts["checkpoint"]
    assert [".".join(k) for k in REQUIRED_FACTS if _dig(facts, *k) is _MISSING] == []


@needs_analyzer
def test_compare_rule_examples(tmp_path):
    from mtp_audit.compare.examples import run_example
    from mtp_audit.compare.rules import RULES

    for rule in RULES:
        for i, example in enumerate(rule.examples):
            root = tmp_path / f"{rule.id}-{i}"
            root.mkdir()
            example.materialize(root)
            fired = any(f.rule_id == rule.id for f in run_example(root, example).findings)
            assert fired == example.fires, (rule.id, i, example.note)


@needs_analyzer
def test_compare_local_base_with_a_hub_export_that_dropped_mtp(monkeypatch, tmp_path):
    """DeepSeek-V3 (163 shards, local) against a hub copy without model.layers.61: MTP050 with the
    1,564 tensors and their bytes, 18,840 in this fixture (hand count: 216 for embed_tokens, enorm,
    hnorm, eh_proj, shared_head + 18,624 for the FP8 MoE decoder layer: 5 attention linears x 20,
    4 norms x 8, gate 2,048, e_score_correction_bias 1,024, 768 expert linears x 20, 3 shared x 20)."""
    from mtp_audit.compare.analyze import compare_checkpoints

    base_files = build_deepseek_163()
    base = write_tree(tmp_path / "base", base_files)
    derived_files = dict(base_files)
    index = json.loads(derived_files["model.safetensors.index.json"])
    index["weight_map"] = {k: v for k, v in index["weight_map"].items() if not k.startswith("model.layers.61.")}
    derived_files["model.safetensors.index.json"] = json.dumps(index).encode()
    import struct

    from hubfixture import safetensors_bytes  # rebuild the shards without layer 61

    for shard in sorted({v for v in json.loads(base_files["model.safetensors.index.json"])["weight_map"].values()}):
        blob = base_files[shard]
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8 : 8 + n])
        kept = [(k, v["dtype"], tuple(v["shape"])) for k, v in header.items() if k != "__metadata__" and not k.startswith("model.layers.61.")]
        if len(kept) != len(header) - 1:
            derived_files[shard] = safetensors_bytes(kept, {"format": "pt"})
    repo = FakeRepo("someone/DeepSeek-V3-export", derived_files)
    with FakeHub([repo]) as hub:
        isolate_hf(monkeypatch, tmp_path, endpoint=hub.endpoint)
        r = compare_checkpoints(str(base), "someone/DeepSeek-V3-export")
    mtp050 = [f for f in r.findings if f.rule_id == "MTP050"]
    assert len(mtp050) == 1 and mtp050[0].severity is Severity.ERROR
    assert "dropped all 1564 MTP tensors" in mtp050[0].message and "18,840 bytes" in mtp050[0].message
    assert r.facts["compare"]["mtp"]["tensors"] == {"base": 1564, "derived": 0}
    assert r.targets[0].name == f"{base} -> someone/DeepSeek-V3-export@{repo.commit}"
    assert hub.requests() <= 3 + 2 * DEEPSEEK_SHARDS


@needs_analyzer
def test_compare_cli_exit_codes(tmp_path):
    from mtp_audit.cli.main import main

    base = write_tree(tmp_path / "base", build_mimo())
    same = write_tree(tmp_path / "same", build_mimo())
    dropped = write_tree(tmp_path / "dropped", build_mimo("dropped"))
    assert main(["compare", str(base), str(same), "-f", "json", "-o", str(tmp_path / "same.json")]) == 0
    assert main(["compare", str(base), str(dropped), "-f", "json", "-o", str(tmp_path / "r.json")]) == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    # the derived checkpoint's own MTP001 (declared, no MTP tensor) is carried over beside the comparison's MTP050
    assert [f["rule_id"] for f in doc["findings"]] == ["MTP001", "MTP050"]
    assert doc["findings"][0]["message"].startswith(f"derived ({dropped}): ")
    assert main(["compare", str(base), str(tmp_path / "nope")]) == 2


@needs_analyzer
def test_a_derived_checkpoint_that_cannot_load_is_not_a_passing_compare(tmp_path, capsys):
    """Same MTP tensors on both sides by the index, but the derived folder lacks the shard holding them (MTP008)
    or has it with a broken header (MTP013): the derived side's own error is in the compare report, exit 1."""
    from mtp_audit.cli.main import main

    base = write_tree(tmp_path / "base", build_mimo())
    index = json.loads((base / "model.safetensors.index.json").read_text())["weight_map"]
    shard = next(s for t, s in sorted(index.items()) if t.startswith("model.mtp_layers."))
    missing = write_tree(tmp_path / "missing", build_mimo())
    (missing / shard).unlink()
    broken = write_tree(tmp_path / "broken", build_mimo())
    (broken / shard).write_bytes((broken / shard).read_bytes()[:20])
    for derived, rule in ((missing, "MTP008"), (broken, "MTP013")):
        out = tmp_path / f"{derived.name}.json"
        assert main(["compare", str(base), str(derived), "-f", "json", "-o", str(out)]) == 1
        found = json.loads(out.read_text())["findings"]
        assert [f["rule_id"] for f in found] == [rule]
        assert found[0]["message"].startswith(f"derived ({derived}): ")
    capsys.readouterr()


@needs_analyzer
def test_offline_hub_audit_that_cannot_see_a_sidecar_exits_3(tmp_path):
    """After an online audit that read only config.json and the index, an offline audit of a repo whose
    MTP lives in an un-indexed mtp.safetensors cannot tell: exit 3, the gap names the file."""
    files = build_mimo("sidecar")
    repo = FakeRepo("XiaomiMiMo/MiMo-7B-Base", files)
    with FakeHub([repo]) as hub:
        env = child_env(hub.endpoint, tmp_path)
        warm = (
            "from mtp_audit.sources.hub import audit_source_for as a; s = a('XiaomiMiMo/MiMo-7B-Base'); "
            "s.read_json('config.json'); s.read_json('model.safetensors.index.json')"
        )
        subprocess.run([sys.executable, "-c", warm], env=env, check=True, timeout=60)
        hub.clear_log()
        out = tmp_path / "offline.json"
        proc = subprocess.run(
            [sys.executable, "-m", "mtp_audit", "checkpoint", "XiaomiMiMo/MiMo-7B-Base", "-f", "json", "-o", str(out)],
            env={**env, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=120,
        )
        assert hub.requests() == 0
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "inconclusive"
    assert any(g.get("path") == "mtp.safetensors" and g["blocking"] for g in doc["gaps"])


def test_side_without_config_is_unknown_not_changed(tmp_path, capsys):
    """A bare shard (no config.json) compared with its own folder: the config values of that side are
    unknown, so no MTP054 'changed from None' (fresh-user report)."""
    from mtp_audit.cli.main import main
    from mtp_audit.compare.rules import mimo_checkpoint

    root = tmp_path / "ckpt"
    root.mkdir()
    for rel, data in mimo_checkpoint().items():
        (root / rel).write_bytes(data)
    rc = main(["compare", str(root / "model.safetensors"), str(root), "-f", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert [f["rule_id"] for f in doc["findings"]] == []
    assert rc == 0


def test_a_gguf_of_another_model_is_could_not_tell_not_0_of_0(capsys):
    """MiMo (16 MTP tensors, none named like a GGUF nextn part) against the qwen35moe GGUF: nothing maps, so nothing
    was compared: a blocking gap naming both architectures, exit 3; it said 'PASS: 0 of 0 MTP tensors ...' (exit 0)."""
    from pathlib import Path

    from mtp_audit.cli.main import main

    root = Path(__file__).resolve().parent.parent / "fixtures"
    base, gguf = root / "checkpoint" / "jj8127--mimo_kor", root / "gguf" / "Qwen3.6-35B-A3B-MTP-layout.gguf"
    assert main(["compare", str(base), str(gguf), "-f", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "inconclusive" and doc["findings"] == []
    assert doc["facts"]["compare"]["summary"]["compared"] is False and doc["facts"]["compare"]["summary"]["hallmarks"] == 0
    [gap] = [g for g in doc["gaps"] if g["blocking"]]
    assert gap["message"] == (f"{base} (architecture MiMoForCausalLM): none of its 16 MTP tensors maps to a GGUF nextn "
                              f"tensor (eh_proj, enorm, hnorm, shared_head_norm, ...); {gguf} is GGUF architecture "
                              "qwen35moe: nothing was compared")
