"""End-to-end ``mtp-audit launch`` on real input: SGLang wheels from PyPI (0.5.4, 0.5.9, 0.5.23, cached),
the nvidia/Qwen3.5-397B-A17B-NVFP4 layout written as sparse shards from its spec, the REAP Qwen3.5-25B
metadata, and the RTX PRO 6000 Blackwell (SM120) environment dump of vllm#57932.

Values checked by hand in the unpacked wheels (/work/cache/sglang-src/<version>, grep -n / sed -n):
- 0.5.9 sglang/srt/server_args.py:2352-2353 ``if self.speculative_algorithm == "NEXTN": ... = "EAGLE"`` (no log call);
  configs/model_config.py:251 ``model_path=model_path or server_args.model_path``; :324-328 the override
  ``["Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"] -> "Qwen3_5ForCausalLMMTP"`` (no row
  for Qwen3_5MoeForCausalLM); models/qwen3_5_mtp.py:347 ``EntryClass = [Qwen3_5ForCausalLMMTP]``; models/qwen3_5.py
  EntryClass lists only Qwen3_5MoeForConditionalGeneration and Qwen3_5ForConditionalGeneration; METADATA
  ``Requires-Dist: torch==2.9.1``; server_args.py:1320 reads SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE inside the DeepSeek-family
  block guarded by ``is_sm100_supported()`` (utils/common.py: capability major 10).
- 0.5.23 configs/model_config.py:1179 the override now also lists Qwen3_5MoeForCausalLM; models/qwen3_5_text.py:335
  ``EntryClass = [Qwen3_5MoeForCausalLM, Qwen3_5ForCausalLM]``; models/qwen3_5_mtp.py:506; --cuda-graph-bs is gone,
  --cuda-graph-bs-decode and --cuda-graph-bs-prefill exist.
- 0.5.4 has no sglang/cli/ folder (no ``sglang serve``).
- vllm-57932.txt line 15 ``PyTorch version : 2.13.0+cu132``; GPU 0 NVIDIA RTX PRO 6000 Blackwell Max-Q (12.0 from the name
  table); no driver line and no GPU memory (the excerpt ends after the GPU list).
- Qwen3.5-397B-A17B-NVFP4: 1,553 MTP tensors, all BF16, 13,191,136,256 bytes (tests/test_checkpoint_fixtures.py);
  REAP Qwen3.5-25B: 22,213 tensors in the index, none mtp.*, config declares mtp_num_hidden_layers 1.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, sglang_wheel

from mtp_audit.cli.main import main
from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity, exit_code
from mtp_audit.synth.shards import write_checkpoint

pytestmark = pytest.mark.network

QW = FIXTURES / "checkpoint" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
REAP = FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
SM120 = FIXTURES / "preflight" / "envdumps" / "vllm-57932.txt"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "mtp_audit/schema/report.schema.json").read_text())
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())
INCIDENT = ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-algorithm", "NEXTN")


def _qwen(folder: Path, arch: str | None = None) -> Path:
    write_checkpoint(folder, json.loads((QW / "spec.json").read_text()), shards=True)
    shutil.copy(QW / "hf_quant_config.json", folder)
    cfg = json.loads((QW / "config.json").read_text())
    if arch:
        cfg["architectures"] = [arch]
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture(scope="module")
def qwen(tmp_path_factory) -> Path:
    return _qwen(tmp_path_factory.mktemp("qwen"))


@pytest.fixture(scope="module")
def qwen_text(tmp_path_factory) -> Path:
    return _qwen(tmp_path_factory.mktemp("qwen-text"), "Qwen3_5MoeForCausalLM")


@pytest.fixture(scope="module")
def sg(tmp_path_factory) -> dict:
    import os

    from mtp_audit.engines.sglang import audit_sglang

    # module fixtures run before conftest's function-scoped cache isolation: point at the same folder here,
    # so the user's ~/.cache/mtp-audit is untouched and the CLI runs below hit this tree cache
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "mtp-audit-cache")
    return {v: audit_sglang(sglang_wheel(v)) for v in ("0.5.9", "0.5.23")}


def _cmd(model: Path, *extra: str) -> list[str]:
    return ["python", "-m", "sglang.launch_server", "--model-path", str(model), *extra]


def _ids(report, sev=Severity.ERROR) -> set[str]:
    return {f.rule_id for f in report.findings if f.severity >= sev}


def test_incident_nextn_runs_as_eagle_with_target_as_mtp_draft(qwen, sg):
    r = audit_launch(_cmd(qwen, *INCIDENT), sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    lf = r.facts["launch"]
    assert lf["speculative"]["requested"] == "NEXTN" and lf["speculative"]["runs_as"] == "EAGLE"
    assert lf["speculative"]["remap"]["location"] == "sglang/srt/server_args.py:2353" and lf["speculative"]["remap"]["logged"] is False
    d = lf["draft"]
    assert d["path"] == str(qwen) and d["path_source"] == "defaults to --model-path (sglang/srt/configs/model_config.py:251)"
    assert d["architecture"] == "Qwen3_5MoeForConditionalGeneration" and d["draft_class"] == "Qwen3_5ForCausalLMMTP"
    assert d["override"]["location"] == "sglang/srt/configs/model_config.py:328"
    assert d["draft_class_location"] == "sglang/srt/models/qwen3_5_mtp.py:347"
    assert d["mtp_tensors"] == 1553 and d["mtp_dtypes"] == {"BF16": 1553} and d["mtp_bytes"] == 13_191_136_256
    # FP4 backends acceptable on SM120: no GEMM / MoE backend rule of the preflight fires
    pf = r.facts["preflight"]
    assert pf["resolved"]["fp4_gemm_backend"]["value"] == "flashinfer_cudnn" and pf["resolved"]["fp4_gemm_backend"]["how"] == "explicit"
    assert pf["resolved"]["moe_runner_backend"]["value"] == "flashinfer_cutlass"
    assert not {f.rule_id for f in r.findings} & {f"MTP2{n}" for n in range(10, 21)}
    assert pf["summary"]["flag_semantics"] == "sglang analyzer (sglang 0.5.9)"
    # the one error: the dump's torch 2.13.0+cu132 is not 0.5.9's pinned torch==2.9.1 (a fix outside the command)
    # no error: the dump's torch 2.13.0+cu132 is not 0.5.9's pinned torch==2.9.1, but the dump (a vLLM collect_env)
    # does not show SGLang installed: installing 0.5.9 replaces torch, a warning (was the one error, "fix first")
    assert _ids(r) == set() and [f.severity for f in r.findings if f.rule_id == "MTP209"] == [Severity.WARNING]
    s = lf["summary"]
    assert s["verdict"] == "go" and s["corrected_command"] == "none needed"
    assert s["checkpoint_fp4"] == "NVFP4" and s["fp4_gemm_backend"] == "flashinfer_cudnn (explicit)"
    assert "1,553 tensors (BF16 1,553), 13,191,136,256 bytes" in s["mtp_weights"]
    # no launch cross-check error: command accepted, MTP class found, MTP weights present
    assert not {f.rule_id for f in r.findings} & {"MTP300", "MTP301", "MTP302", "MTP303", "MTP304", "MTP306", "MTP308"}
    mem = [f for f in r.findings if f.rule_id == "MTP307"]
    assert len(mem) == 1 and "13,191,136,256 bytes" in mem[0].message and "GPU memory unknown" in mem[0].message
    # every analyzer ran and kept its rule ids
    assert [t.analyzer for t in r.targets] == ["launch", "sglang", "checkpoint", "preflight"]
    assert {"MTP101", "MTP007", "MTP228"} <= {f.rule_id for f in r.findings}


def test_incident_with_trtllm_gemm_is_an_error_naming_capability_12_0(qwen, sg, tmp_path):
    cmd = _cmd(qwen, *INCIDENT[:2], "--fp4-gemm-backend", "flashinfer_trtllm", *INCIDENT[4:])
    r = audit_launch(cmd, sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP210"]
    assert f.severity == Severity.ERROR and "capability 120" in f.message and "compute capability 12.0" in f.message
    lf = r.facts["launch"]
    assert lf["verdict"] == "fix first"
    assert lf["corrected_command"] == (f"python -m sglang.launch_server --model-path {qwen} --moe-runner-backend flashinfer_cutlass "
                                       "--fp4-gemm-backend flashinfer_cudnn --speculative-algorithm NEXTN")
    assert lf["changed_flags"] == ["--fp4-gemm-backend"]
    assert not any("still to fix outside the command" in line for line in lf["closing"]["lines"])
    # the CLI: exit 1, Markdown with the closing section, JSON and SARIF valid
    out = tmp_path / "r.md"
    assert main(["launch", "--sglang", str(sglang_wheel("0.5.9")), "--env-dump", str(SM120), "-f", "markdown", "-o", str(out), "--", *cmd]) == 1
    md = out.read_text()
    assert "## What will happen" in md and "| MTP210 | error |" in md and "Corrected command: python -m sglang.launch_server" in md
    for fmt, schema in (("json", SCHEMA), ("sarif", SARIF_SCHEMA)):
        p = tmp_path / f"r.{fmt}"
        assert main(["launch", "--sglang", str(sglang_wheel("0.5.9")), "--env-dump", str(SM120), "-f", fmt, "-o", str(p), "--", *cmd]) == 1
        jsonschema.validate(json.loads(p.read_text()), schema)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["facts"]["launch"]["summary"]["verdict"] == "fix first" and doc["targets"][0]["analyzer"] == "launch"


def test_reap_nextn_is_an_error_no_mtp_tensors(sg):
    r = audit_launch(["python", "-m", "sglang.launch_server", "--model-path", str(REAP), "--speculative-algorithm", "NEXTN"],
                     sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP304"]
    assert f.severity == Severity.ERROR
    assert "has no MTP tensors although config.json declares 1 MTP layer(s) (22,213 tensors checked)" in f.message
    assert "MTP001" in _ids(r)  # the checkpoint analyzer's own finding, under its own id
    lf = r.facts["launch"]
    assert lf["verdict"] == "fix first"
    assert lf["corrected_command"] == f"python -m sglang.launch_server --model-path {REAP}"


def test_reap_eagle3_without_draft_path_reads_the_missing_mtp_layer_as_nextn_does(sg):
    """SGLang 0.5.23 builds every EAGLE-family draft with TpModelWorker(is_draft_worker=True) on
    speculative_draft_model_path, which defaults to the target (configs/model_config.py:956) and is overridden to the
    target's MTP class (model_config.py:1179): EAGLE3 with no draft path loads the REAP checkpoint's absent MTP layer,
    the same MTP304 as NEXTN."""
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", str(REAP), "--speculative-algorithm"]
    r = audit_launch([*cmd, "EAGLE3"], sglang=sg["0.5.23"], env_dumps=SM120, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP304"]
    assert f.severity == Severity.ERROR
    assert f.message.startswith("--speculative-algorithm EAGLE3 (runs as EAGLE3) loads its draft from ")
    assert "has no MTP tensors although config.json declares 1 MTP layer(s) (22,213 tensors checked)" in f.message
    assert "builds the target's MTP class Qwen3_5ForCausalLMMTP as the draft" in f.message
    assert f.remediation.startswith("add --speculative-draft-model-path with the EAGLE3 draft model trained for this target")
    lf = r.facts["launch"]
    assert lf["verdict"] == "fix first" and lf["corrected_command"] == f"python -m sglang.launch_server --model-path {REAP}"
    assert lf["summary"]["mtp_weights"] == "0 tensors"  # was "n/a": the draft reads the MTP layer
    # with a separate draft path the EAGLE3 draft is not the target's MTP layer: no MTP304
    other = audit_launch([*cmd, "EAGLE3", "--speculative-draft-model-path", str(FIXTURES / "checkpoint" / "jj8127--mimo_kor")],
                         sglang=sg["0.5.23"], env_dumps=SM120, environ={})
    assert "MTP304" not in _ids(other)


def test_two_versions_diff_text_only_architecture(qwen_text, sg):
    cmd = _cmd(qwen_text, *INCIDENT)
    old = audit_launch(cmd, sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    # 0.5.9: the text-only class is neither registered nor mapped to an MTP class
    assert {"MTP302", "MTP303"} <= _ids(old)
    assert "no draft-architecture override for Qwen3_5MoeForCausalLM" in next(f.message for f in old.findings if f.rule_id == "MTP302")
    r = audit_launch(cmd, sglang=sg["0.5.9"], compare_sglang=sg["0.5.23"], env_dumps=SM120, environ={})
    d = r.facts["launch"]["draft"]
    assert d["draft_class"] == "Qwen3_5ForCausalLMMTP" and d["override"]["location"] == "sglang/srt/configs/model_config.py:1179"
    assert d["draft_class_location"] == "sglang/srt/models/qwen3_5_mtp.py:506"
    assert not {"MTP302", "MTP303"} & _ids(r)
    ch = r.facts["launch"]["diff"]["changes"]
    assert ch["draft_architecture"] == {"old": "Qwen3_5MoeForCausalLM -> no override", "new": "Qwen3_5MoeForCausalLM -> Qwen3_5ForCausalLMMTP"}
    assert ch["errors"]["old"] == "MTP302, MTP303" and ch["errors"]["new"] == "none"
    # 0.5.23's NEXTN -> FROZEN_KV_MTP rewrite is guarded by is_gemma4_draft, false for this Qwen3.5 checkpoint:
    # both versions run NEXTN as EAGLE, so the algorithm is no change
    assert "speculative_algorithm" not in ch
    assert r.facts["launch"]["speculative"]["conditional"] == [] and r.facts["launch"]["speculative"]["runs_as"] == "EAGLE"
    assert {f.location.symbol for f in r.findings if f.rule_id == "MTP310"} == {
        "what-will-happen:draft_architecture", "what-will-happen:errors", "what-will-happen:attention_backend",
        "what-will-happen:verdict"}  # 0.5.9 fix first (MTP302, MTP303) -> 0.5.23 go: MTP209 is no longer an error in both
    # the hybrid GDN gate on this SM120 GPU (attention_registry.py 0.5.9 :203, 0.5.23 :473) accepts more in 0.5.23
    assert ch["attention_backend"] == {"old": "not given; the gate accepts triton, trtllm_mha",
                                       "new": "not given; the gate accepts triton, trtllm_mha, flashinfer"}
    assert r.facts["launch"]["diff"]["old_version"] == "0.5.9" and r.facts["launch"]["diff"]["new_version"] == "0.5.23"


def test_two_versions_cli_forms_agree(qwen, tmp_path):
    old, new = str(sglang_wheel("0.5.9")), str(sglang_wheel("0.5.23"))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    cmd = ["--", *_cmd(qwen, *INCIDENT)]
    assert main(["launch", "--sglang", old, "--sglang", new, "--env-dump", str(SM120), "-f", "json", "-o", str(a), *cmd]) == 0
    assert main(["launch", "--sglang", old, "--compare-sglang", new, "--env-dump", str(SM120), "-f", "json", "-o", str(b), *cmd]) == 0
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert da["facts"]["launch"] == db["facts"]["launch"] and da["findings"] == db["findings"]  # (scan statistics differ: cache hit)
    # same flags, same class; 0.5.23's FROZEN_KV_MTP remap is guarded by is_gemma4_draft, false for this Qwen3.5
    # checkpoint, so only the hybrid GDN gate differs: on SM120 0.5.23 also accepts flashinfer (line numbers are not
    # changes)
    assert list(da["facts"]["launch"]["diff"]["changes"]) == ["attention_backend"]


def test_env_var_ignored_on_sm120_qwen(qwen, sg):
    r = audit_launch(["SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1", *_cmd(qwen, *INCIDENT)], sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP309"]
    assert f.severity == Severity.WARNING and "is ignored by SGLang 0.5.9" in f.message
    assert "is_sm100_supported: needs compute capability major 10" in f.message and "GPU 0 is 12.0" in f.message
    assert "sglang/srt/models/deepseek_common/utils.py:96" in f.message
    dna = sorted(e.value.split(":")[0] for e in f.evidence if e.label == "does not apply")
    # the deep_gemm/deepep rewrite (set) and the triton/none one (unset) of 0.5.9:1321-1328, all four guarded by the block
    assert dna == ["speculative_moe_a2a_backend -> deepep (sglang/srt/server_args.py", "speculative_moe_a2a_backend -> none (sglang/srt/server_args.py",
                   "speculative_moe_runner_backend -> deep_gemm (sglang/srt/server_args.py", "speculative_moe_runner_backend -> triton (sglang/srt/server_args.py"]
    # --env gives the same answer; the current environment is used only for variables SGLang reads
    r2 = audit_launch(_cmd(qwen, *INCIDENT), sglang=sg["0.5.9"], env_dumps=SM120, env={"SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE": "1"},
                      environ={"HOME": "/root", "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE": "0"})
    (g,) = [x for x in r2.findings if x.rule_id == "MTP309"]
    assert "(--env)" in g.message and g.severity == Severity.WARNING
    # 0.5.23 moved the rewrite into a hook with early returns: the effect is not claimed either way
    r3 = audit_launch(["SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1", *_cmd(qwen, *INCIDENT)], sglang=sg["0.5.23"], env_dumps=SM120, environ={})
    (h,) = [x for x in r3.findings if x.rule_id == "MTP309"]
    assert h.severity == Severity.INFO and "sglang/srt/arg_groups/overrides.py:879" in h.message and "could not be decided" in h.message


def test_real_parsers_abbreviations_and_ambiguity(qwen, sg):
    cmd = _cmd(qwen, "--tp", "1", "--cuda-graph-bs", "1", "2", "4")
    r9 = audit_launch(cmd, sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (a,) = [f for f in r9.findings if f.rule_id == "MTP301"]
    assert a.location.symbol == "argv[5]" and "--tp is accepted only as an abbreviation of --tp-size" in a.message
    assert "MTP300" not in _ids(r9)
    assert r9.facts["launch"]["command"]["options"][1] == {"flag": "--tensor-parallel-size", "typed": "--tp", "option_string": "--tp-size", "value": "1"}
    r23 = audit_launch(cmd, sglang=sg["0.5.23"], env_dumps=SM120, environ={})
    (b,) = [f for f in r23.findings if f.rule_id == "MTP300"]
    assert "ambiguous option: --cuda-graph-bs could match --cuda-graph-bs-decode, --cuda-graph-bs-prefill" in b.message
    assert r23.facts["launch"]["command"]["options"][1]["flag"] == "--tp-size"  # 0.5.23 declares --tp-size first


def test_sglang_serve_only_where_the_version_has_it(tmp_path):
    cmd = ["sglang", "serve", "--model-path", str(REAP)]
    r = audit_launch(cmd, sglang=sglang_wheel("0.5.4"), env_dumps=SM120, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP300"]
    assert "SGLang 0.5.4 has no 'sglang serve' command" in f.message
    assert r.facts["launch"]["corrected_command"] == f"python -m sglang.launch_server --model-path {REAP}"
    r9 = audit_launch(cmd, sglang=sglang_wheel("0.5.9"), env_dumps=SM120, environ={})
    assert "MTP300" not in _ids(r9) and r9.facts["launch"]["command"]["entry"] == "sglang serve"


def test_sglang_facts_for_parsing(sg):
    """The sglang analyzer's additions for the launch parser (docs/sglang.md), checked with sed in the wheels:
    0.5.9 server_args.py:5579 ``parser = argparse.ArgumentParser()``; 0.5.23 server_args.py:679
    ``argparse.ArgumentParser(prog="sglang serve")``; 0.5.23 arg_groups/fields/parallel.py:45 ``tp_size: A[int,
    Arg(help=..., aliases=["--tensor-parallel-size"])] = 1``; cli/main.py ``subparsers.add_parser("serve", ...)`` at
    0.5.9 :20 and 0.5.23 :28."""
    f9, f23 = sg["0.5.9"].facts["sglang"], sg["0.5.23"].facts["sglang"]
    assert f9["parser"] == {"allow_abbrev": True, "prog": None, "function": "prepare_server_args", "location": "sglang/srt/server_args.py:5579"}
    assert f23["parser"]["location"] == "sglang/srt/server_args.py:679" and f23["parser"]["prog"] == "sglang serve"
    assert f9["entry_points"] == {"python -m sglang.launch_server": "sglang/launch_server.py", "sglang serve": "sglang/cli/main.py:20"}
    assert f23["entry_points"]["sglang serve"] == "sglang/cli/main.py:28"
    a9, a23 = f9["cli_arguments"], f23["cli_arguments"]
    assert a9["--tensor-parallel-size"]["aliases"] == ["--tp-size"] and a9["--tensor-parallel-size"]["type"] == "int"
    assert a23["--tp-size"]["aliases"] == ["--tensor-parallel-size"] and a23["--tp-size"]["location"] == "sglang/srt/arg_groups/fields/parallel.py:45"
    assert a9["--model-path"]["aliases"] == ["--model"] and a9["--model-path"]["required"] is True
    assert a9["--trust-remote-code"]["action"] == "store_true" and a23["--trust-remote-code"]["action"] == "store_true"
    assert a9["--cuda-graph-bs"]["nargs"] == "+"
    classes9 = {e["class"] for e in f9["entry_classes"]}
    assert {"Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLMMTP"} <= classes9 and "Qwen3_5MoeForCausalLM" not in classes9
    assert "Qwen3_5MoeForCausalLM" in {e["class"] for e in f23["entry_classes"]}


def test_default_backends_resolve_from_serverargs_fields(qwen, sg):
    """No backend flags: the defaults come from the ServerArgs fields that ``default=ServerArgs.<field>`` names
    (0.5.12 server_args.py:623 ``moe_runner_backend: str = "auto"``, 0.5.9 :456 ``fp4_gemm_runner_backend: str =
    "flashinfer_cutlass"``), and the preflight rules fire as when the same value is given on the command line."""
    from mtp_audit.engines.sglang import audit_sglang

    sg12 = audit_sglang(sglang_wheel("0.5.12"))
    r = audit_launch(_cmd(qwen), sglang=sg12, env_dumps=SM120, environ={})
    pf = r.facts["preflight"]["resolved"]
    assert (pf["moe_runner_backend"]["value"], pf["moe_runner_backend"]["how"]) == ("flashinfer_trtllm", "auto")
    assert "ServerArgs" not in json.dumps(r.facts["launch"]["summary"])
    assert "MTP216" in _ids(r)
    explicit = audit_launch(_cmd(qwen, "--moe-runner-backend", "auto"), sglang=sg12, env_dumps=SM120, environ={})
    assert {f.rule_id for f in r.findings if f.rule_id.startswith("MTP21")} == {f.rule_id for f in explicit.findings if f.rule_id.startswith("MTP21")}
    r9 = audit_launch(_cmd(qwen), sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    g = r9.facts["preflight"]["resolved"]["fp4_gemm_backend"]
    assert (g["value"], g["how"]) == ("flashinfer_cutlass", "default")
    assert "MTP212" in {f.rule_id for f in r9.findings}
    explicit9 = audit_launch(_cmd(qwen, "--fp4-gemm-backend", "flashinfer_cutlass"), sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    assert "MTP212" in {f.rule_id for f in explicit9.findings}


def test_reap_without_speculative_flags_is_go_with_mtp001_as_a_warning(sg):
    """The REAP checkpoint declares an MTP layer it does not ship (MTP001, an error of the checkpoint analyzer,
    in BLOCKS_MTP); a command without --speculative-algorithm never loads it, so for this launch it is a warning."""
    b200 = FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt"  # 8 x B200
    r = audit_launch(["python", "-m", "sglang.launch_server", "--model-path", str(REAP)], sglang=sg["0.5.9"], env_dumps=b200, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP001"]
    assert f.severity == Severity.WARNING
    assert f.message.startswith("config.json declares 1 MTP layer(s) (mtp_num_hidden_layers), but none of the 22,213 tensors matches mtp.*")
    assert "the command requests no speculative decoding" in f.message
    assert not [x for x in r.findings if x.severity >= Severity.ERROR]
    assert r.facts["launch"]["verdict"] == "go" and exit_code(r, Severity.ERROR) == 0
    # with NEXTN it stays an error
    r2 = audit_launch(["python", "-m", "sglang.launch_server", "--model-path", str(REAP), "--speculative-algorithm", "NEXTN"],
                      sglang=sg["0.5.9"], env_dumps=b200, environ={})
    assert [x.severity for x in r2.findings if x.rule_id == "MTP001"] == [Severity.ERROR]


def test_draft_without_mtp_tensors_drops_only_the_draft_path(qwen, sg):
    """NEXTN with the REAP folder (0 mtp.* tensors) as the draft, on a target with 1,553 MTP tensors of its own: the
    corrected command keeps speculative decoding and drops only --speculative-draft-model-path."""
    b200 = FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt"
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", str(qwen), "--speculative-algorithm", "NEXTN",
           "--speculative-draft-model-path", str(REAP), "--tp-size", "8"]
    r = audit_launch(cmd, sglang=sg["0.5.9"], env_dumps=b200, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP304"]
    assert f.remediation.startswith(f"drop --speculative-draft-model-path {REAP}: the target {qwen} has 1,553 MTP tensors of its own")
    fixed = r.facts["launch"]["corrected_command"]
    assert fixed == f"python -m sglang.launch_server --model-path {qwen} --speculative-algorithm NEXTN --tp-size 8"
    again = audit_launch(fixed.split(), sglang=sg["0.5.9"], env_dumps=b200, environ={})
    assert "MTP304" not in _ids(again) and again.facts["launch"]["draft"]["mtp_tensors"] == 1553


def test_sglang_serve_positional_model_path(qwen, sg):
    """``sglang serve MODEL``: 0.5.23's serve.py:62 ``_normalize_positional_model_path`` turns a first argument without
    ``-`` into ``--model-path MODEL`` (first in 0.5.16); 0.5.9 has no such step, so argparse rejects it and the
    corrected command writes ``--model-path`` in front of it."""
    b200 = FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt"
    cmd = ["sglang", "serve", str(qwen), "--tp-size", "8", "--moe-runner-backed", "flashinfer_cutlass"]
    r23 = audit_launch(cmd, sglang=sg["0.5.23"], env_dumps=b200, environ={})
    (f,) = [x for x in r23.findings if x.rule_id == "MTP300"]
    assert f.message.endswith("unrecognized arguments: --moe-runner-backed flashinfer_cutlass")
    assert r23.facts["launch"]["command"]["options"][0] == {"flag": "--model-path", "typed": str(qwen), "option_string": "--model-path",
                                                            "value": str(qwen)}
    assert r23.facts["launch"]["summary"]["mtp_weights"].startswith("1,553 MTP tensors in the checkpoint")
    assert r23.facts["launch"]["corrected_command"] == f"sglang serve {qwen} --tp-size 8 --moe-runner-backend flashinfer_cutlass"
    r9 = audit_launch(cmd, sglang=sg["0.5.9"], env_dumps=b200, environ={})
    msgs = sorted(x.message.split(": ", 1)[1] for x in r9.findings if x.rule_id == "MTP300")
    assert msgs == ["the following arguments are required: --model-path/--model",
                    "unrecognized arguments: --moe-runner-backed flashinfer_cutlass", f"unrecognized arguments: {qwen}"]
    assert r9.facts["launch"]["corrected_command"] == f"sglang serve --model-path {qwen} --tp-size 8 --moe-runner-backend flashinfer_cutlass"


def test_eagle3_without_draft_path_is_fixed_by_the_draft_path_not_a_version(qwen_text, sg):
    """Issue 10 §5: the remediation names the fix for the cause found. EAGLE3 needs its own draft model; with no
    --speculative-draft-model-path SGLang 0.5.9 drafts with the target (Qwen3_5MoeForCausalLM, no override row),
    so the fix is the draft path, not "another SGLang version" (which is the fix for NEXTN on that architecture)."""
    eagle3 = audit_launch(_cmd(qwen_text, "--speculative-algorithm", "EAGLE3"), sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (f,) = [x for x in eagle3.findings if x.rule_id == "MTP302"]
    assert f.remediation.startswith("add --speculative-draft-model-path with the EAGLE3 draft model trained for this target")
    assert "SGLang version" not in f.remediation
    nextn = audit_launch(_cmd(qwen_text, "--speculative-algorithm", "NEXTN"), sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (g,) = [x for x in nextn.findings if x.rule_id == "MTP302"]
    assert g.remediation.startswith("use an SGLang version whose configs/model_config.py maps this architecture")


def test_unquant_draft_opt_out_is_reported_only_when_the_command_passes_it(qwen, sg):
    """MTP106 (SGLang 0.5.9 server_args.py:885 turns unquant into None, model_config.py:918 re-fills it from the
    checkpoint) belongs in a launch report only when the command asks for it."""
    plain = audit_launch(_cmd(qwen, *INCIDENT), sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    assert "MTP106" not in {f.rule_id for f in plain.findings}
    opt_out = audit_launch(_cmd(qwen, *INCIDENT, "--speculative-draft-model-quantization", "unquant"),
                           sglang=sg["0.5.9"], env_dumps=SM120, environ={})
    (f,) = [x for x in opt_out.findings if x.rule_id == "MTP106"]
    assert (f.location.path, f.location.line) == ("sglang/srt/server_args.py", 885)
    assert f.message.startswith("--speculative-draft-model-quantization unquant is undone")
