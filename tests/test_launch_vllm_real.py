"""End-to-end ``mtp-audit launch -- vllm serve ...`` on real input: vLLM 0.11.0 and 0.33.0 wheels from PyPI
(cached), DeepSeek-V3 and Qwen3.5-397B-A17B-NVFP4 written as sparse shards from their specs, the MiMo MTP
metadata (jj8127/mimo_kor), and the H200 facts recorded live.

Values checked by hand in the unpacked wheels (unzip the .py members; grep -n / sed -n):
- 0.11.0 vllm/config/speculative.py:213-216 ``if self.method in MTP_MODEL_TYPES: logger.warning(...); self.method = "mtp"``;
  :218-229 ``if self.model is None and self.num_speculative_tokens is not None: if self.method == "mtp": ... self.model =
  self.target_model_config.model``; :150 ``if hf_config.model_type in ("deepseek_v3", "deepseek_v32")`` -> deepseek_mtp ->
  ``DeepSeekMTPModel``; :331 ``elif ...model_type in MTP_MODEL_TYPES: self.method = "mtp"``; :520 ``_verify_args`` raises when
  num_speculative_tokens is None; registry.py:291 ``"DeepSeekMTPModel"``; gpu_model_runner.py:284 ``EagleProposer``; no
  ``--spec-method`` in engine/arg_utils.py; ``SpeculativeMethod`` (:32) lacks glm4_moe_mtp.
- 0.33.0 vllm/config/speculative.py:1246-1250 the alias (``get_args(MTPModelTypes)``, logged); :1261 draft = target;
  :1473 ``elif using_transformers_mtp or ...model_type in get_args(MTPModelTypes): self.method = "mtp"`` (silent);
  :796 mimo -> ``MiMoMTPModel`` (registry.py:657); :997-1002 qwen3_5_moe -> ``Qwen3_5MoeMTP`` (registry.py:740); :1491 the
  reuse warning; gpu/spec_decode/__init__.py:74 ``MTPSpeculator``; gpu_model_runner.py:651 ``EagleProposer``; vllm/config/vllm.py:731
  ``use_v2_model_runner`` (auto); engine/arg_utils.py:1869-1872 ``--spec-method/--spec-model/--spec-tokens``.
- DeepSeek-V3 config.json: model_type deepseek_v3, num_nextn_predict_layers 1; its spec holds 1,564 tensors in model.layers.61.
- jj8127/mimo_kor: model_type mimo, num_nextn_predict_layers 1, 16 model.mtp_layers.0.* tensors in the index.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.cli.main import main
from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity, exit_code
from mtp_audit.synth.shards import write_checkpoint

pytestmark = pytest.mark.network

H200 = FIXTURES / "preflight" / "h200-live-facts.json"
MIMO = FIXTURES / "checkpoint" / "jj8127--mimo_kor"
REAP = FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"


def _sharded(folder: Path, name: str) -> Path:
    src = FIXTURES / "checkpoint" / name
    write_checkpoint(folder, json.loads((src / "spec.json").read_text()), shards=True)
    for f in ("config.json", "hf_quant_config.json"):
        if (src / f).exists():
            shutil.copy(src / f, folder)
    return folder


@pytest.fixture(scope="module")
def ds(tmp_path_factory) -> Path:
    return _sharded(tmp_path_factory.mktemp("ds"), "deepseek-ai--DeepSeek-V3")


@pytest.fixture(scope="module")
def qw(tmp_path_factory) -> Path:
    return _sharded(tmp_path_factory.mktemp("qw"), "nvidia--Qwen3.5-397B-A17B-NVFP4")


def _run(version: str, *argv: str):
    r = audit_launch(list(argv), vllm=vllm_wheel(version), facts=H200, environ={}, cwd=Path.cwd())
    return r, r.facts["launch"]


def test_deepseek_alias_0_11_runs_mtp_with_v1_eagle_proposer(ds: Path) -> None:
    r, f = _run("0.11.0", "vllm", "serve", str(ds), "--speculative-config", '{"method":"deepseek_mtp","num_speculative_tokens":3}')
    s, sp = f["summary"], f["speculative"]
    assert (sp["requested"], sp["runs_as"]) == ("deepseek_mtp", "mtp")
    assert sp["trace"][0] == "method deepseek_mtp -> mtp (alias, logged, vllm/config/speculative.py:216)"
    assert "the target checkpoint is the draft (vllm/config/speculative.py:229, silent)" in sp["trace"][1]
    assert sp["proposer"]["v1"]["class"] == "EagleProposer" and sp["proposer"]["v1"]["location"] == "vllm/v1/worker/gpu_model_runner.py:284"
    assert f["draft"]["architectures"] == ["DeepSeekMTPModel"] and f["draft"]["model_type"] == "deepseek_mtp"
    assert f["draft"]["override"]["registered"] == {"DeepSeekMTPModel": "vllm/model_executor/models/registry.py:291"}
    assert (sp["num_speculative_tokens"], sp["mtp_layers"]) == (3, 1)
    reuse = [x for x in r.findings if x.rule_id == "MTP323"]
    assert len(reuse) == 1 and "runs the same MTP layer 3 times" in reuse[0].message
    assert s["verdict"] == "go" and f["corrected_command"] is None
    assert exit_code(r, Severity.ERROR) == 0


def test_deepseek_alias_without_tokens_fails_and_is_corrected(ds: Path) -> None:
    r, f = _run("0.33.0", "vllm", "serve", str(ds), "--speculative-config", '{"method":"deepseek_mtp"}')
    errs = [x for x in r.findings if x.rule_id == "MTP320"]
    # replayed statement by statement: _verify_args raises at 0.33.0 vllm/config/speculative.py:1947
    assert len(errs) == 1 and "ValueError: num_speculative_tokens must be provided" in errs[0].message
    assert "(vllm/config/speculative.py:1947)" in errs[0].message
    assert f["verdict"] == "fix first"
    assert f["corrected_command"] == f"vllm serve {ds} --speculative-config " + """'{"method":"deepseek_mtp","num_speculative_tokens":1}'"""
    chk = f["corrected_check"]
    assert chk["verdict"] == "go" and chk["errors_left"] == [] and chk["num_speculative_tokens"] == "1 (given) for 1 MTP layer(s)"
    assert exit_code(r, Severity.ERROR) == 1


def test_draft_model_on_mimo_is_silently_mtp_0_33(tmp_path: Path) -> None:
    r, f = _run("0.33.0", "vllm", "serve", str(MIMO), "--speculative-config",
                json.dumps({"method": "draft_model", "model": str(MIMO), "num_speculative_tokens": 1}))
    sp = f["speculative"]
    assert (sp["requested"], sp["runs_as"]) == ("draft_model", "mtp")
    over = [x for x in r.findings if x.rule_id == "MTP321"]
    assert len(over) == 1 and over[0].severity.name == "WARNING" and "(vllm/config/speculative.py:1473)" in over[0].message
    assert f["draft"]["architectures"] == ["MiMoMTPModel"]
    assert f["draft"]["override"]["registered"] == {"MiMoMTPModel": "vllm/model_executor/models/registry.py:657"}
    assert sp["proposer"]["runner"] == "auto"
    assert sp["proposer"]["v2"]["class"] == "MTPSpeculator" and sp["proposer"]["v1"]["class"] == "EagleProposer"
    # use_multi_module_mtp() folded: min(num_nextn_predict_layers 1, num_speculative_tokens 1) > 1 is false
    assert sp["proposer"]["v2"]["unless"] == []
    assert f["verdict"] == "go" and exit_code(r, Severity.ERROR) == 0


def test_qwen35_nvfp4_shorthand_flags_api_server(qw: Path) -> None:
    argv = ("python", "-m", "vllm.entrypoints.openai.api_server", "--model", str(qw), "--spec-method", "mtp", "--spec-tokens", "1")
    r, f = _run("0.33.0", *argv)
    assert f["command"]["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 1}
    assert f["speculative"]["runs_as"] == "mtp"
    assert f["draft"]["architectures"] == ["Qwen3_5MoeMTP"] and f["draft"]["model_type"] == "qwen3_5_mtp"
    assert f["draft"]["n_predict"]["value"] == 1
    assert f["verdict"] == "go"
    # 0.11.0 has no --spec-* flags: argparse stops on them
    r11, f11 = _run("0.11.0", *argv)
    msgs = [x.message for x in r11.findings if x.rule_id == "MTP320"]
    assert len(msgs) == 2 and all("has no --spec-" in m for m in msgs)
    assert f11["verdict"] == "fix first" and exit_code(r11, Severity.ERROR) == 1


def test_glm_alias_not_in_0_11_literal_is_rejected_and_fixed(ds: Path) -> None:
    r, f = _run("0.11.0", "vllm", "serve", str(ds), "--speculative-config.method", "glm4_moe_mtp",
                "--speculative-config.num_speculative_tokens", "1")
    assert f["command"]["speculative_config"] == {"method": "glm4_moe_mtp", "num_speculative_tokens": 1}
    errs = [x.message for x in r.findings if x.rule_id == "MTP320"]
    assert len(errs) == 1 and "not one of the 12 values of the validated SpeculativeMethod Literal declared at vllm/config/speculative.py:32 (pydantic)" in errs[0]
    assert f["corrected_command"].endswith("""--speculative-config '{"method":"mtp","num_speculative_tokens":1}'""")
    assert f["corrected_check"]["verdict"] == "go"
    # the vLLM tree's own MTP402 error is info in a launch: the command's part of it is MTP320
    assert all(x.severity.name == "INFO" for x in r.findings if x.rule_id == "MTP402")


def test_no_spec_config_reports_unused_heads_and_cli(ds: Path, capsys) -> None:
    rc = main(["launch", "-v", "--vllm", str(vllm_wheel("0.33.0")), "--facts", str(H200), "--", "vllm", "serve", str(ds), "-tp", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "MTP325 info: the checkpoint carries 1,564 MTP tensors in 1 layer(s)" in out
    assert """add --speculative-config '{"method":"mtp","num_speculative_tokens":1}'""" in out
    # MTP339: the H200's torch 2.11.0+cu130 is not 0.33.0's pinned torch==2.14.0 (vLLM not installed there: a warning)
    assert "Verdict: go (warnings: MTP011, MTP339)." in out  # MTP407 (speculators checkpoints) does not concern this checkpoint
    assert out.startswith("WARN: go: vLLM 0.33.0: no speculative decoding; warnings: MTP011, MTP339 (exit 0)\n")


def test_reap_without_mtp_tensors_drops_spec_config(tmp_path: Path) -> None:
    r, f = _run("0.33.0", "vllm", "serve", str(REAP), "--speculative-config", '{"method":"qwen3_5_mtp","num_speculative_tokens":1}')
    assert [x.rule_id for x in r.findings if x.rule_id == "MTP324"] == ["MTP324"]
    assert f["verdict"] == "fix first"
    assert f["corrected_command"] == f"vllm serve {REAP}"


def test_no_vllm_is_could_not_tell(ds: Path, monkeypatch) -> None:
    import mtp_audit.engines.vllm.target as target

    def absent(t):  # the installed vllm lookup, as on a machine without vllm
        from mtp_audit.errors import InputError

        raise InputError("installed vllm", "not installed in this Python")

    monkeypatch.setattr(target, "open_target", absent)
    import mtp_audit.engines.vllm.draft as draft

    monkeypatch.setattr(draft, "open_target", absent)
    r = audit_launch(["vllm", "serve", str(ds), "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'],
                     facts=H200, environ={}, cwd=Path.cwd())
    assert r.facts["launch"]["verdict"] == "could not tell" and exit_code(r, Severity.ERROR) == 3


def test_deepseek_mtp_0_8_5_falls_back_to_v0(ds: Path) -> None:
    """0.8.5 has no alias and no MTP auto-detection: the else branch (vllm/config.py:2388) makes the method draft_model,
    silently; the V1 oracle (vllm/engine/arg_utils.py:1430) accepts only ngram/eagle/eagle3, so vLLM falls back to V0,
    whose SpecDecodeWorker keys on the draft's model_type deepseek_mtp (vllm/spec_decode/spec_decode_worker.py:202)."""
    r, f = _run("0.8.5", "vllm", "serve", str(ds), "--speculative-config", '{"method":"deepseek_mtp","num_speculative_tokens":1}')
    sp = f["speculative"]
    assert (sp["requested"], sp["runs_as"]) == ("deepseek_mtp", "draft_model")
    assert "the target checkpoint is the draft (vllm/config.py:2299, silent)" in sp["trace"][0]
    assert sp["proposer"]["runner"] == "v0"
    assert sp["proposer"]["v0"]["location"] == "vllm/spec_decode/spec_decode_worker.py:202"
    assert f["draft"]["model_type"] == "deepseek_mtp" and f["draft"]["architectures"] == ["DeepSeekMTPModel"]
    assert [x.severity.name for x in r.findings if x.rule_id == "MTP321"] == ["WARNING"]
    assert f["verdict"] == "go"
    r1 = audit_launch(["VLLM_USE_V1=1", "vllm", "serve", str(ds), "--speculative-config", '{"method":"deepseek_mtp","num_speculative_tokens":1}'],
                      vllm=vllm_wheel("0.8.5"), facts=H200, environ={}, cwd=Path.cwd())
    assert r1.facts["launch"]["verdict"] == "fix first"
    assert any("VLLM_USE_V1=1" in x.message for x in r1.findings if x.rule_id == "MTP320")


def test_readme_vllm_launch_block_is_real_output(tmp_path: Path, capsys, monkeypatch) -> None:
    """Every line of README.md's `mtp-audit launch --vllm ... -- vllm serve` block is in the output of that command."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    head = "$ mtp-audit launch --vllm 0.33.0 "
    block = readme[readme.index(head):]
    block = block[:block.index("```")].strip().splitlines()
    import shlex

    argv = shlex.split(block[0][2:])[1:]
    whl = vllm_wheel("0.33.0")
    argv[argv.index("--vllm") + 1] = str(whl)  # the release the README names, as the whole wheel
    (tmp_path / "fixtures").symlink_to(FIXTURES)
    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc == 1
    missing = [line for line in block[1:] if line not in out]
    assert missing == []


def test_model_without_tokens_hits_none_comparison_before_the_default(qw: Path, ds: Path) -> None:
    # statement order: the MTP auto-detection branch compares ``self.num_speculative_tokens > 1`` (0.33.0
    # vllm/config/speculative.py:1487, 0.11.0 :332) before the n_predict default (0.33.0 :1603, 0.11.0 :388) is reached,
    # so a "model" without num_speculative_tokens raises TypeError and the server never starts. Real report:
    # https://github.com/vllm-project/vllm/issues/55323 (2026-09, Qwen3.6-35B-A3B, model_type qwen3_5_moe like qw)
    r, f = _run("0.33.0", "vllm", "serve", str(qw), "--speculative-config", json.dumps({"method": "mtp", "model": str(qw)}))
    errs = [x for x in r.findings if x.rule_id == "MTP320"]
    assert len(errs) == 1 and "TypeError: '>' not supported between instances of 'NoneType' and 'int' (vllm/config/speculative.py:1487)" \
        in errs[0].message and exit_code(r, Severity.ERROR) == 1
    r, f = _run("0.33.0", "vllm", "serve", str(qw), "--speculative-config", json.dumps({"method": "draft_model", "model": str(qw)}))
    assert (f["speculative"]["requested"], f["speculative"]["runs_as"]) == ("draft_model", "mtp")
    errs = [x for x in r.findings if x.rule_id == "MTP320"]
    assert len(errs) == 1 and "TypeError: '>' not supported between instances of 'NoneType' and 'int' (vllm/config/speculative.py:1487)" \
        in errs[0].message
    assert not any(x.rule_id == "MTP323" for x in r.findings) and f["verdict"] == "fix first"
    assert '"num_speculative_tokens":1}' in f["corrected_command"] and f["corrected_check"]["verdict"] == "go"
    assert exit_code(r, Severity.ERROR) == 1
    r, f = _run("0.11.0", "vllm", "serve", str(ds), "--speculative-config", json.dumps({"method": "mtp", "model": str(ds)}))
    errs = [x for x in r.findings if x.rule_id == "MTP320"]
    assert len(errs) == 1 and "(vllm/config/speculative.py:332)" in errs[0].message and f["verdict"] == "fix first"


def test_json_and_sarif_validate(ds: Path, tmp_path: Path) -> None:
    """The merged vLLM launch report (vllm + checkpoint + preflight + launch facts) validates against the report
    schema (which now names the vllm analyzer) and SARIF 2.1.0."""
    import jsonschema

    root = Path(__file__).resolve().parents[1]
    cmd = ["--vllm", str(vllm_wheel("0.11.0")), "--facts", str(H200), "--", "vllm", "serve", str(ds), "--speculative-config",
           '{"method":"deepseek_mtp","num_speculative_tokens":1}']
    assert main(["launch", "-f", "json", "-o", str(tmp_path / "r.json"), *cmd]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(doc, json.loads((root / "mtp_audit/schema/report.schema.json").read_text()))
    assert doc["facts"]["launch"]["engine"] == "vllm" and doc["facts"]["launch"]["speculative"]["runs_as"] == "mtp"
    assert main(["launch", "-f", "sarif", "-o", str(tmp_path / "r.sarif"), *cmd]) == 0
    jsonschema.validate(json.loads((tmp_path / "r.sarif").read_text()), json.loads((root / "tests/data/sarif-schema-2.1.0.json").read_text()))


def test_retired_moe_fp4_env_var(qw: Path) -> None:
    """VLLM_USE_FLASHINFER_MOE_FP4 is defined in 0.11.0's vllm/envs.py, not in 0.33.0's (retired with --moe-backend)."""
    argv = ["VLLM_USE_FLASHINFER_MOE_FP4=1", "vllm", "serve", str(qw), "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}']
    r33, _ = _run("0.33.0", *argv)
    msgs = [x.message for x in r33.findings if x.rule_id == "MTP326"]
    assert msgs == ["VLLM_USE_FLASHINFER_MOE_FP4=1 is not defined by vLLM 0.33.0 (vllm/envs.py): it has no effect; vLLM logs "
                    "'Unknown vLLM environment variable detected' (vllm/platforms/interface.py:1466)"]
    r11, _ = _run("0.11.0", *argv)
    assert [x for x in r11.findings if x.rule_id == "MTP326"] == []
    r33h, f = _run("0.33.0", *argv, "--fail-on-environ-validation")
    assert [x.severity.name for x in r33h.findings if x.rule_id == "MTP326"] == ["ERROR"] and f["verdict"] == "fix first"


def test_api_server_positional_model(qw: Path) -> None:
    r, f = _run("0.33.0", "python", "-m", "vllm.entrypoints.openai.api_server", str(qw), "--speculative-config",
                '{"method":"mtp","num_speculative_tokens":1}')
    assert [x.rule_id for x in r.findings if x.severity.name == "ERROR"] == ["MTP327"]
    assert f["corrected_command"] == (f"python -m vllm.entrypoints.openai.api_server --model {qw} --speculative-config "
                                      """'{"method":"mtp","num_speculative_tokens":1}'""")
    assert f["corrected_check"]["verdict"] == "go"


@pytest.mark.parametrize("version, environ, runs_as, runner, cls, loc", [
    # 0.9.2: no alias; auto-detection keeps deepseek_mtp (vllm/config.py:2697); gpu_model_runner.py:182 EagleProposer
    ("0.9.2", {}, "deepseek_mtp", "v1", "EagleProposer", "vllm/v1/worker/gpu_model_runner.py:182"),
    # 0.20.0: VLLM_USE_V2_MODEL_RUNNER defaults to "0" (V1, gpu_model_runner.py:561); =1 gives the V2 EagleSpeculator
    ("0.20.0", {}, "mtp", "v1", "EagleProposer", "vllm/v1/worker/gpu_model_runner.py:561"),
    ("0.20.0", {"VLLM_USE_V2_MODEL_RUNNER": "1"}, "mtp", "v2", "EagleSpeculator", "vllm/v1/worker/gpu/spec_decode/__init__.py:14"),
])
def test_deepseek_proposer_across_versions(ds: Path, version, environ, runs_as, runner, cls, loc) -> None:
    r = audit_launch(["vllm", "serve", str(ds), "--speculative-config", '{"method":"deepseek_mtp","num_speculative_tokens":1}'],
                     vllm=vllm_wheel(version), facts=H200, environ=environ, cwd=Path.cwd())
    sp = r.facts["launch"]["speculative"]
    assert sp["runs_as"] == runs_as and sp["proposer"]["runner"] == runner
    assert (sp["proposer"][runner]["class"], sp["proposer"][runner]["location"]) == (cls, loc)
    assert r.facts["launch"]["draft"]["architectures"] == ["DeepSeekMTPModel"] and r.facts["launch"]["verdict"] == "go"


def test_gpus_needed_vs_visible(ds: Path) -> None:
    """The H200 facts list one GPU: -tp 2 needs two (MTP328); an empty CUDA_VISIBLE_DEVICES before the program hides it."""
    r, f = _run("0.33.0", "vllm", "serve", str(ds), "-tp", "2")
    msgs = [x.message for x in r.findings if x.rule_id == "MTP328"]
    assert msgs == ["the command needs 2 GPU(s) on this node (tp 2 x pp 1 = 2) but 1 is visible: vLLM 0.33.0 cannot place its 2 "
                    "workers and stops before loading the model"]
    assert f["parallel"]["needed_visible"] == 2 and f["verdict"] == "fix first"
    r, f = _run("0.33.0", "CUDA_VISIBLE_DEVICES=", "vllm", "serve", str(ds))
    assert [x.rule_id for x in r.findings if x.rule_id == "MTP328"] == ["MTP328"]
    r, f = _run("0.33.0", "vllm", "serve", str(ds), "-tp", "1")
    assert [x for x in r.findings if x.rule_id == "MTP328"] == [] and f["verdict"] == "go"


@pytest.mark.parametrize("version", ["0.11.0", "0.33.0"])
def test_vllm_serve_without_a_model_serves_the_default(version: str) -> None:
    """`vllm serve` with no model starts: model_tag is optional (vllm/entrypoints/cli/serve.py, nargs='?') and
    ModelConfig.model defaults to Qwen/Qwen3-0.6B (0.11.0 vllm/config/model.py:92, 0.33.0 :155). It was reported
    as MTP320 'cannot start'; it is MTP327, the default model served instead of the one meant."""
    r, f = _run(version, "vllm", "serve", "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}')
    errors = [x for x in r.findings if x.severity.name == "ERROR"]
    assert [x.rule_id for x in errors] == ["MTP327"]
    assert "starts and serves ModelConfig's default model (Qwen/Qwen3-0.6B" in errors[0].message
    assert "MTP320" not in [x.rule_id for x in r.findings]


@pytest.mark.parametrize("tail, opt", [
    (["--speculative-config"], "--speculative-config"),
    (["--bogus-flag", "--tensor-parallel-size"], "--tensor-parallel-size"),
    (["--speculative-config", "-tp", "1"], "--speculative-config"),
])
def test_option_without_its_value_is_an_argparse_exit(capsys, tail: list[str], opt: str) -> None:
    # argparse: an option declared with one value (0.33.0 engine/arg_utils.py:1866 --speculative-config, :1209
    # --tensor-parallel-size) that ends the command or is followed by another option -> "expected one argument", exit 2
    rc = main(["launch", "--vllm", str(vllm_wheel("0.33.0")), "--facts", str(H200), "--", "vllm", "serve", str(MIMO), *tail])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.startswith("FAIL: fix first: 1 error(s) (MTP320)")
    assert f"MTP320 error: vLLM 0.33.0's argument parser exits before the server starts: 'argument {opt}: expected one argument'" in out
    if opt == "--speculative-config":  # the command does give one: "has no --speculative-config" would be wrong
        assert "MTP325" not in out


@pytest.mark.parametrize("k, extra, budget", [
    # pydantic's int takes the integer json.loads gives (speculative.py:413 has gt=0 and no upper bound); the MTP
    # divisibility rule passes (a multiple of 1 layer); VllmConfig's slot check refuses it (vllm/config/vllm.py:2371).
    # The default budget's bound here: mimo_kor's config.json's largest number, rope_theta 640000 (max_position_embeddings
    # is 32768, no RoPE factor): a loose upper bound of max_model_len, so of the default max_num_batched_tokens
    (99999999999999999999999, [], "max_num_batched_tokens left to its default, at most 640,000 here (vllm/engine/arg_utils.py:2975-3221: at most "
                                  "max(2 x 16384, max_model_len) for a text model)"),
    (3, ["--max-num-batched-tokens", "3"], "max_num_batched_tokens=3 (--max-num-batched-tokens)"),
])
def test_num_speculative_tokens_beyond_the_batch_budget(capsys, k: int, extra: list[str], budget: str) -> None:
    spec = json.dumps({"method": "mtp", "num_speculative_tokens": k}, separators=(",", ":"))
    rc = main(["launch", "--vllm", str(vllm_wheel("0.33.0")), "--facts", str(H200), "--", "vllm", "serve", str(MIMO),
               "--speculative-config", spec, *extra])
    out = capsys.readouterr().out
    assert rc == 1 and out.startswith("FAIL: fix first: 1 error(s) (MTP320)")
    assert (f"MTP320 error: vLLM 0.33.0 rejects the speculative config (the server will not start): num_speculative_tokens={k} needs "
            f"num_lookahead_tokens={k} draft slots per request and {budget} is not larger: 'VllmConfig does not have enough slots") in out
    assert "(vllm/config/vllm.py:2371, ValueError at config creation, before the model loads)" in out


def test_batch_budget_refusal_renders_as_json_with_its_evidence_location(tmp_path: Path) -> None:
    # the evidence points at the VllmConfig check (vllm/config/vllm.py:2371 in 0.33.0): a Location, so JSON (and SARIF's
    # relatedLocations) can render it; a plain string there crashed the JSON writer
    out = tmp_path / "r.json"
    rc = main(["launch", "--vllm", str(vllm_wheel("0.33.0")), "--facts", str(H200), "-f", "json", "-o", str(out), "--",
               "vllm", "serve", str(MIMO), "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}',
               "--max-num-batched-tokens", "3"])
    assert rc == 1
    f = [x for x in json.loads(out.read_text())["findings"] if x["rule_id"] == "MTP320"]
    assert [e for e in f[0]["evidence"] if e["label"] == "num_lookahead_tokens"] == [
        {"label": "num_lookahead_tokens", "value": "3", "location": {"path": "vllm/config/vllm.py", "line": 2371}}]


def test_num_speculative_tokens_below_the_proven_bound_is_not_reported() -> None:
    # 40,000 > every default table value, but the default also follows max_model_len: no bound is claimed below 640,000
    r, f = _run("0.33.0", "vllm", "serve", str(MIMO), "--speculative-config", '{"method":"mtp","num_speculative_tokens":40000}')
    assert f["verdict"] == "go" and not [x for x in r.findings if x.rule_id == "MTP320"]


@pytest.mark.parametrize("version, files", [
    ("0.33.0", "vllm/engine/arg_utils.py, vllm/entrypoints/common/cli_args.py, vllm/entrypoints/cli/serve.py, vllm/utils/argparse_utils.py"),
    ("0.11.0", "vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py, vllm/entrypoints/cli/serve.py"),
])
def test_option_no_parser_file_declares_blocks_the_start_question(capsys, version: str, files: str) -> None:
    argv = ["launch", "--vllm", str(vllm_wheel(version)), "--facts", str(H200), "--", "vllm", "serve", str(MIMO)]
    # declared: literal add_argument strings (arg_utils), FrontendArgs fields (--port/--host/--api-key), --no-X of a flag
    assert main(argv + ["--port", "8000", "--host", "0.0.0.0", "--api-key", "x", "--max-model-len", "4096",
                        "--gpu-memory-utilization", "0.9", "--no-enable-prefix-caching", "--served-model-name", "m"]) == 0
    assert "not declared" not in capsys.readouterr().out
    assert main(argv + ["--bogus-flag"]) == 3
    out = capsys.readouterr().out
    assert out.startswith(f"INCONCLUSIVE: could not tell: whether vLLM {version} starts: --bogus-flag: not declared in its argument parser "
                          f"({files}): argparse exits with 'unrecognized arguments' unless it is an unambiguous prefix")
    assert "[launch, blocking] whether vLLM" in out
