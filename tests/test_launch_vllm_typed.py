"""The vLLM launch reads the typed answers: the checkpoint's ``config.json`` as its audit read it (once per audit), and the
machine's GPUs from :class:`~mtp_audit.preflight.typed.MachineAnswer`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import vllm_wheel

from mtp_audit.checkpoint.typed import CheckpointAnswer
from mtp_audit.engines.vllm.launch.attn_launch import capability_missing, gpu_capability, launch_config
from mtp_audit.preflight.facts import MachineFacts
from mtp_audit.preflight.typed import MachineAnswer

ROOT = Path(__file__).resolve().parents[1]
CK = ROOT / "fixtures" / "checkpoint"
H200 = ROOT / "fixtures" / "preflight" / "h200-live-facts.json"


@pytest.mark.network
def test_a_mapped_model_path_uses_the_config_its_audit_read():
    """``--model-dir /models=fixtures/checkpoint``: the checkpoint audit reads the mapped folder; the attention backend
    and the lookahead bound come from that config.json too. Read again from ``/models/...`` (the command's path, absent
    here) they were "could not tell" and unchecked: no backend, and no MTP320 for 10^9 draft tokens."""
    from mtp_audit.launch import audit_launch

    spec = '{"method":"mtp","num_speculative_tokens":1000000000}'
    runs = {}
    for model, dirs in ((str(CK / "deepseek-ai--DeepSeek-V3"), ()), ("/models/deepseek-ai--DeepSeek-V3", [("/models", str(CK))])):
        r = audit_launch(["vllm", "serve", model, "-tp", "8", "--speculative-config", spec], vllm=vllm_wheel("0.33.0"),
                         facts_file=H200, model_dirs=dirs, environ={})
        runs[model.startswith("/models")] = r
    local, mapped = runs[False], runs[True]
    assert mapped.facts["launch"]["attention"]["backend"] == local.facts["launch"]["attention"]["backend"] == "FLASH_ATTN_MLA"
    # vllm/config/vllm.py:2371 at 0.33.0: max_num_batched_tokens <= num_lookahead_tokens raises at config creation
    lookahead = [f.message for f in mapped.findings if f.rule_id == "MTP320"]
    assert len(lookahead) == 1 and "num_lookahead_tokens=1000000000" in lookahead[0] and "vllm/config/vllm.py:2371" in lookahead[0]
    assert [f.rule_id for f in mapped.findings] == [f.rule_id for f in local.findings]
    assert not [g.message for g in mapped.gaps if "attention backend" in g.message]


def test_launch_config_is_the_answers_config_copied(tmp_path):
    """The answer's mapping, copied (the launch's own edits never reach the answer), without reading a file: the model
    path need not exist. Without an answer's config, a hub id stays "no local config.json" (could not tell)."""
    cfg = {"model_type": "deepseek_v3", "kv_lora_rank": 512, "rope_scaling": {"factor": 40}}
    answer = CheckpointAnswer.from_doc({"config": {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"]}},
                                       config=cfg)
    got, why = launch_config(answer, "org/not-a-local-folder", tmp_path)
    assert (got, why) == (cfg, None)
    got["rope_scaling"]["factor"] = 1  # type: ignore[index]
    assert answer.config is not None and answer.config["rope_scaling"] == {"factor": 40}
    assert launch_config(None, "org/name", tmp_path) == (
        None, "org/name: no local config.json (the model's head size and MLA use are unknown)")
    no_config = CheckpointAnswer.from_doc({"summary": {"mode": "config-only"}})
    assert launch_config(no_config, "org/name", tmp_path)[0] is None


def test_capability_from_the_machine_answer():
    """The H200's 9.0 from the live facts; no machine: not guessed, and the reason says so."""
    import json

    machine = MachineAnswer.from_facts(MachineFacts.from_dict(json.loads(H200.read_text())))
    assert gpu_capability(machine) == (9, 0)
    assert capability_missing(None) == "no machine declared or seen"
    empty = MachineAnswer.from_facts(MachineFacts(origin="env-dump:nvidia-smi"))
    assert capability_missing(empty) == "the machine facts (env-dump:nvidia-smi) list no GPU: not observed"
