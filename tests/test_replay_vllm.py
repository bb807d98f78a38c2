"""Bad engine source is "could not tell" for the question it decides, never a crash nor a guess: the example vLLM tree
of the launch rules (mtp_audit/engines/vllm/launch/rules.py, 0.33.0's shapes) with one file damaged."""

from __future__ import annotations

from mtp_audit.engines.vllm.launch.rules import RULES_BY_ID
from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity, exit_code

SPEC = "vl/vllm/config/speculative.py"
MODEL = "vl/vllm/config/model.py"
CMD = ["vllm", "serve", "ckpt", "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}']


def _tree(tmp_path):
    RULES_BY_ID["MTP323"].examples[1].materialize(tmp_path)
    return tmp_path


def _launch(root, *extra: str):
    return audit_launch(CMD + list(extra), vllm=root / "vl", env_dumps=[root / "env.txt"], environ={}, cwd=root)


def test_the_example_tree_is_decided(tmp_path) -> None:
    r = _launch(_tree(tmp_path))
    assert r.facts["launch"]["verdict"] == "go" and r.facts["launch"]["speculative"]["runs_as"] == "mtp"


def test_a_loop_the_replay_cannot_follow_is_not_a_guess(tmp_path) -> None:
    root = _tree(tmp_path)
    p = root / SPEC
    text = p.read_text().replace("        if self.model is not None:\n",
                                 "        while self.retry:\n            self.model = None\n        if self.model is not None:\n", 1)
    p.write_text(text)
    r = _launch(root)
    gaps = [g.message for g in r.gaps if "statement-order replay" in g.message]
    assert gaps and "While statement at vllm/config/speculative.py:" in gaps[0]
    assert not any(f.rule_id == "MTP320" for f in r.findings)


def test_non_utf8_model_config_is_a_note_for_the_quantization_only(tmp_path) -> None:
    root = _tree(tmp_path)
    (root / MODEL).write_bytes(b"class ModelConfig:\n    x = '\xff\xfe'\n")
    r = _launch(root, "--quantization", "fp8")
    assert any("quantization" in g.message and "does not parse" in g.message for g in r.gaps)
    assert r.facts["launch"]["speculative"]["runs_as"] == "mtp" and not any(f.rule_id in ("MTP329", "MTP330") for f in r.findings)


def test_truncated_speculative_config_gives_could_not_tell_not_a_traceback(tmp_path) -> None:
    root = _tree(tmp_path)
    p = root / SPEC
    p.write_text(p.read_text()[:1500])
    r = _launch(root)
    assert exit_code(r, Severity.ERROR) == 3 and r.facts["launch"]["verdict"] == "could not tell"
    assert any("speculative.py" in g.message and g.blocking for g in r.gaps)


CUDA = "vl/vllm/platforms/cuda.py"
FI_MLA = "vl/vllm/v1/attention/backends/mla/flashinfer_mla.py"


def test_truncated_platform_file_leaves_only_the_attention_question_open(tmp_path) -> None:
    root = _tree(tmp_path)
    p = root / CUDA
    p.write_text(p.read_text()[:700])
    r = _launch(root)
    gaps = [g for g in r.gaps if "attention backend" in g.message]
    assert gaps and "vllm/platforms/cuda.py is missing or does not parse" in gaps[0].message and not gaps[0].blocking
    assert r.facts["launch"]["verdict"] == "go" and r.facts["launch"]["speculative"]["runs_as"] == "mtp"
    assert "attention not decided (auto; vllm/platforms/cuda.py is missing or does not parse)" in r.facts["launch"]["summary"]["backends"]


def test_non_utf8_backend_module_is_not_a_refusal(tmp_path) -> None:
    root = _tree(tmp_path)
    (root / FI_MLA).write_bytes(b"class FlashInferMLABackend:\n    x = '\xff\xfe'\n")
    r = _launch(root, "--attention-backend", "FLASHINFER_MLA")
    assert not any(f.rule_id == "MTP332" for f in r.findings)
    assert any("attention backend" in g.message and "flashinfer_mla.py does not parse" in g.message for g in r.gaps)


def test_the_example_tree_refuses_flashinfer_mla_for_a_non_mla_model(tmp_path) -> None:
    r = _launch(_tree(tmp_path), "--attention-backend", "FLASHINFER_MLA")
    f = next(f for f in r.findings if f.rule_id == "MTP332")
    assert "Reason: ['non-MLA not supported', 'compute capability not supported'] (vllm/platforms/cuda.py:34)" in f.message
    assert exit_code(r, Severity.ERROR) == 1


def test_cached_selection_is_replayed_again_when_a_backend_file_changes(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _tree(tmp_path / "t")
    first = _launch(root, "--attention-backend", "FLASHINFER_MLA")
    again = _launch(root, "--attention-backend", "FLASHINFER_MLA")
    assert [f.message for f in first.findings if f.rule_id == "MTP332"] == [f.message for f in again.findings if f.rule_id == "MTP332"] != []
    assert list((tmp_path / "cache" / "vllm-attn-v1").rglob("attn-*.json"))
    p = root / FI_MLA
    p.write_text(p.read_text().replace("return capability.major == 10", "return True"))
    edited = _launch(root, "--attention-backend", "FLASHINFER_MLA")
    f = next(f for f in edited.findings if f.rule_id == "MTP332")
    assert "Reason: ['non-MLA not supported'] " in f.message
