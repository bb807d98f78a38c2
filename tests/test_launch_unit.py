"""``mtp-audit launch`` without the network: the command parser against Python's own argparse, entry
points, bad input, could-not-tell cases, the condition evaluator, memory per GPU on the Qwen3.5-NVFP4
layout, the go verdict, and the closing "what will happen" section in every renderer.

The SGLang tree is the hand-written one of the MTP3xx rule examples (``mtp_audit.engines.sglang.launch.rules``), in the
shape of SGLang 0.5.9 (same option strings, ``argparse.ArgumentParser()`` with allow_abbrev on).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mtp_audit.cli.main import main
from mtp_audit.engines.sglang import audit_sglang
from mtp_audit.engines.sglang.launch.command import parse_command
from mtp_audit.engines.sglang.launch.conditions import Known, evaluate
from mtp_audit.engines.sglang.launch.rules import _SG
from mtp_audit.formats import render
from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity
from mtp_audit.synth.dumps import SM120_KERNEL, facts_json
from mtp_audit.synth.launch import SM120_ENV, checkpoint_files
from mtp_audit.synth.shards import write_checkpoint

QW = FIXTURES / "checkpoint" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
LS = ["python", "-m", "sglang.launch_server"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    import os

    # module fixtures run before conftest's per-test cache isolation: same folder, set here
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "mtp-audit-cache")
    root = tmp_path_factory.mktemp("launch")
    _write(root, dict(_SG))
    _write(root, checkpoint_files("ckpt"))
    _write(root, checkpoint_files("plain", mtp=False))
    (root / "env.txt").write_text(SM120_ENV)
    q = root / "qwen"
    write_checkpoint(q, json.loads((QW / "spec.json").read_text()), shards=True)
    for f in ("config.json", "hf_quant_config.json"):
        shutil.copy(QW / f, q / f)
    return root


@pytest.fixture(scope="module")
def facts(work) -> dict:  # after work: the cache folder is set
    return audit_sglang(work / "sg").facts["sglang"]


# --- the parser agrees with argparse ------------------------------------------------------------


class _Err(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D102 - raise instead of exiting
        raise _Err(message)


def reference_parser() -> argparse.ArgumentParser:
    """The add_argument calls of the example tree's server_args.py, made by hand (not executed from the tree)."""
    p = _Parser()
    p.add_argument("--model-path", "--model", type=str, required=True)
    p.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=1)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--quantization", type=str, default=None, choices=["fp8", "modelopt", "modelopt_fp4", "mxfp4"])
    p.add_argument("--fp4-gemm-backend", type=str, default="flashinfer_cutlass", choices=["auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"])
    p.add_argument("--moe-runner-backend", type=str, default="auto", choices=["auto", "triton", "flashinfer_trtllm", "flashinfer_cutlass", "deep_gemm"])
    p.add_argument("--speculative-algorithm", type=str, choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"])
    p.add_argument("--speculative-draft-model-path", "--speculative-draft-model", type=str)
    p.add_argument("--speculative-num-steps", type=int)
    p.add_argument("--speculative-eagle-topk", type=int)
    p.add_argument("--speculative-num-draft-tokens", type=int)
    p.add_argument("--speculative-moe-runner-backend", type=str, default=None)
    return p


REJECTING = {"unknown", "ambiguous", "missing-value", "invalid-choice", "invalid-type", "explicit-arg-ignored", "required", "positional", "help"}
TOKENS = ["--model-path", "--model", "--tp", "--tp-size", "--tensor-parallel-size", "--t", "--trust-remote-code", "--trust",
          "--speculative-algorithm", "--speculative", "--spec", "--speculative-draft-model", "--speculative-num-steps",
          "--quantization", "--fp4-gemm-backend", "--moe", "--mem-fraction", "--bogus", "-x", "-h",
          "m", "8", "-1", "0.5", "abc", "NEXTN", "nextn", "modelopt_fp4", "flashinfer_cudnn", "flashinfer_trtllm", "auto", "",
          "--tp-size=2", "--tp=x", "--quantization=mxfp4", "--speculative-algorithm=EAGLE", "--trust-remote-code=1", "--model-path=m"]


OPTS = [t for t in TOKENS if t.startswith("-")]
VALUES = [t for t in TOKENS if not t.startswith("--")]
#: option/value pairs (a value may be missing or be another option), so that many commands are accepted
PAIRS = st.lists(st.tuples(st.sampled_from(OPTS), st.lists(st.sampled_from(VALUES), max_size=2)), max_size=4)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PAIRS, st.lists(st.sampled_from(TOKENS), max_size=2), st.booleans())
@example([("--tp-size", ["-1"])], [], True)                      # a negative number is a value, not an option
@example([("--mem-fraction", ["0.5"]), ("--trust", [])], [], True)  # two unique prefixes
@example([("--spec", ["NEXTN"])], [], True)                       # ambiguous prefix
@example([("--trust-remote-code=1", [])], [], True)               # explicit value for a flag
@example([("--quantization", ["--tp"])], [], True)                # an option where a value is due
@example([("--tp", ["x"])], [""], True)                           # bad int, stray empty token
def test_parser_accepts_exactly_what_argparse_accepts(facts, pairs, noise, with_model):
    tokens = [t for o, vs in pairs for t in (o, *vs)] + noise
    if with_model:  # most random commands lack the required --model-path; give most of them one
        tokens = ["--model-path", "m", *tokens]
    cmd = parse_command(LS + tokens, facts)
    rejected = [p for p in cmd.problems if p.kind in REJECTING]
    try:
        ns = reference_parser().parse_args(tokens)
    except _Err as exc:
        assert rejected, f"argparse rejects {tokens} ({exc}) but the launch parser accepts it"
        return
    except SystemExit:  # -h prints help and exits
        assert any(p.kind == "help" for p in cmd.problems)
        return
    assert not rejected, f"argparse accepts {tokens} but the launch parser reports {rejected}"
    for dest, value in vars(ns).items():
        flag = {"tensor_parallel_size": "--tensor-parallel-size"}.get(dest, "--" + dest.replace("_", "-"))
        got = cmd.get(flag)
        if any(o.flag == flag for o in cmd.options):
            if isinstance(value, bool):
                assert got == "true", (tokens, flag, got)
            elif isinstance(value, (int, float)):
                assert type(value)(got) == value, (tokens, flag, got, value)
            else:
                assert got == value, (tokens, flag, got, value)


def test_parse_forms_and_entry_points(facts):
    c = parse_command(["env", "A=1", "B=x", "/usr/bin/python3.12", "-u", "-m", "sglang.launch_server", "--model-path=/m", "--tp", "2",
                       "--trust-remote-code"], facts)
    assert c.env == {"A": "1", "B": "x"} and c.entry == "python -m sglang.launch_server" and c.start == 7
    assert c.get("--model-path") == "/m" and c.get("--tp-size") == "2" and c.get("--trust-remote-code") == "true"
    assert [(p.kind, p.token, p.fix) for p in c.problems] == [("abbreviation", "--tp", ("--tp-size",))]
    one = parse_command(["SGLANG_X=1 python -m sglang.launch_server --model-path 'a b' --speculative-algorithm NEXTN"], facts)
    assert one.env == {"SGLANG_X": "1"} and one.get("--model") == "a b" and one.get("--speculative-algorithm") == "NEXTN"
    serve = parse_command(["sglang", "serve", "--model-path", "m"], facts)
    assert serve.entry == "sglang serve"
    # the example tree has no sglang/cli/main.py: no 'sglang serve' in this version
    assert [(p.kind, p.fix) for p in serve.problems] == [("entry-point", ("python", "-m", "sglang.launch_server"))]


def test_heuristic_parse_without_facts():
    c = parse_command(LS + ["--model-path", "m", "--tp", "8", "--enable-x", "--y=1"], None)
    assert c.parsed_with == "heuristic" and c.get("--tp") == "8" and c.get("--y") == "1" and c.get("--enable-x") == "true"


# --- bad input: one line, exit 2 -------------------------------------------------------------------


@pytest.mark.parametrize("cmd, where", [
    ([], "launch command: empty"),
    (["vllm", "serve", "Qwen/Qwen3.5"], "--sglang: the command starts vLLM, not SGLang: use --vllm TARGET"),
    (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "x"],
     "--sglang: the command starts vLLM, not SGLang: use --vllm TARGET"),
    (["python", "-m", "vllm.entrypoints.api_server", "--model", "x"], "'python -m vllm.entrypoints.api_server' is not a server launch of any engine mtp-audit knows"),
    (["A=1"], "only environment assignments"),
])
def test_bad_input_is_one_line_exit_2(work, capsys, monkeypatch, cmd, where):
    monkeypatch.chdir(work)
    out = work / "never-written.json"
    rc = main(["launch", "--sglang", "sg", "--env-dump", "env.txt", "-f", "json", "-o", str(out), "--", *cmd])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert err.count("\n") == 1 and err.startswith("mtp-audit: error: ") and where in err


@pytest.mark.parametrize("opts, where", [
    (["--env", "NOEQUALS"], "--env NOEQUALS: expected KEY=VALUE"),
    (["--sglang", "sg", "--sglang", "sg", "--sglang", "sg"], "--sglang: give at most two"),
    (["--sglang", "nope"], "nope: no such file or folder"),
    (["--facts", "f.json", "--env-dump", "env.txt"], "use either --facts or --env-dump"),
])
def test_bad_options_exit_2(work, capsys, monkeypatch, opts, where):
    monkeypatch.chdir(work)
    rc = main(["launch", *opts, "--", *LS, "--model-path", "ckpt"])
    assert rc == 2 and where in capsys.readouterr().err


# --- could not tell ------------------------------------------------------------------------------


def test_hub_id_model_path_is_could_not_tell(work, capsys, monkeypatch, tmp_path):
    """A hub id as --model-path goes to the hub; an unreachable hub is "could not tell" (exit 3)."""
    from hubfixture import isolate_hf

    isolate_hf(monkeypatch, tmp_path, endpoint="http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.chdir(work)
    rc = main(["launch", "--sglang", "sg", "--env-dump", "env.txt", "-v", "--", *LS, "--model-path", "nvidia/Qwen3.5-397B-A17B-NVFP4"])
    out = capsys.readouterr().out
    assert rc == 3
    assert out.startswith("INCONCLUSIVE: could not tell: cannot reach http://127.0.0.1:9")
    assert "[checkpoint, blocking] cannot reach http://127.0.0.1:9" in out
    assert "Verdict: could not tell" in out and "status: inconclusive" in out


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_no_sglang_installed_is_could_not_tell(work):
    r = audit_launch(LS + ["--model-path", "ckpt", "--tp", "1"], env_dumps=work / "env.txt", cwd=work, environ={})
    assert r.inconclusive and r.facts["launch"]["verdict"] == "could not tell"
    msgs = [g.message for g in r.gaps if g.analyzer == "launch"]
    assert any(m.startswith("no SGLang to check the command against") for m in msgs)
    assert any("split heuristically" in m for m in msgs)
    # without an option table --tp is still read as the tensor-parallel size (argparse's prefix match), as typed
    assert r.facts["launch"]["command"]["options"][1] == {"flag": "--tp-size", "typed": "--tp", "option_string": "--tp-size", "value": "1"}


# --- cross-checks on the Qwen3.5-397B-A17B-NVFP4 layout --------------------------------------------


def _facts_file(root: Path, name: str, **kw) -> Path:
    p = root / name
    p.write_text(facts_json(**kw))
    return p


@pytest.mark.parametrize("tp, memory, severity, share", [
    ("8", 102_641_467_392, Severity.INFO, "1.6%"),      # 13,191,136,256 / 8 = 1,648,892,032
    ("1", 102_641_467_392, Severity.WARNING, "12.9%"),  # 13,191,136,256 / 102,641,467,392 = 0.1285
    ("1", 8_000_000_000, Severity.ERROR, "164.9%"),
])
def test_mtp_memory_per_gpu(work, tp, memory, severity, share):
    f = _facts_file(work, f"m{tp}-{memory}.json", torch="2.9.1+cu130", binaries=SM120_KERNEL, memory=memory)
    r = audit_launch(LS + ["--model-path", "qwen", "--speculative-algorithm", "NEXTN", "--tp-size", tp], sglang=work / "sg",
                     facts=f, cwd=work, environ={})
    (m,) = [x for x in r.findings if x.rule_id == "MTP307"]
    assert m.severity == severity and share in m.message
    per = 13_191_136_256 // int(tp)
    assert f"about {per:,} bytes" in m.message and "BF16 1,553" in m.message


def test_matching_sm120_stack_is_go(work, capsys, monkeypatch):
    f = _facts_file(work, "go.json", torch="2.9.1+cu130", binaries=SM120_KERNEL)
    monkeypatch.chdir(work)
    rc = main(["launch", "--sglang", "sg", "--facts", str(f), "-v", "--", *LS, "--model-path", "qwen", "--moe-runner-backend", "flashinfer_cutlass",
               "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-algorithm", "NEXTN", "--tp-size", "8"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.split("\n")[0] == ("WARN: go: speculative decoding: NEXTN runs as EAGLE, draft the target checkpoint (Qwen3_5ForCausalLMMTP); "
                                   "FP4 GEMM flashinfer_cudnn (explicit), MoE flashinfer_cutlass (explicit); warnings: MTP007 (exit 0)")
    tail = out.rstrip("\n").split("\n")
    # the report ends with what will happen, then the one-line verdict
    i = tail.index("What will happen:")
    assert tail[i + 2] == "  Speculative decoding: NEXTN runs as EAGLE (silent rewrite at sglang/srt/server_args.py:25)."
    assert tail[i + 4] == "  Draft architecture: Qwen3_5MoeForConditionalGeneration -> Qwen3_5ForCausalLMMTP (override at sglang/srt/configs/model_config.py:12; EntryClass at sglang/srt/models/qwen3_5_mtp.py:5)."
    assert tail[-3] == "  Verdict: go (warnings: MTP007)." and tail[-1].endswith("status: findings")
    assert "corrected_command: none needed" in out


def test_other_draft_checkpoint_says_what_is_loaded(work):
    r = audit_launch(LS + ["--model-path", "qwen", "--speculative-algorithm", "NEXTN", "--speculative-draft-model-path", "ckpt"],
                     sglang=work / "sg", env_dumps=work / "env.txt", cwd=work, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP306"]
    assert "--speculative-draft-model-path ckpt (Qwen3_5MoeForConditionalGeneration -> Qwen3_5ForCausalLMMTP; 17 MTP tensors)" in f.message
    assert "whose own 1,553 MTP tensors are not loaded" in f.message
    assert r.facts["launch"]["draft"]["mtp_tensors"] == 17  # 4 + 4 attention + 2 experts x 3 + gate + 2 norms


def test_fp4_quantization_mismatch_and_fix(work):
    r = audit_launch(LS + ["--model-path", "plain", "--quantization", "modelopt_fp4"], sglang=work / "sg", env_dumps=work / "env.txt",
                     cwd=work, environ={})
    assert [x.rule_id for x in r.findings if x.severity == Severity.ERROR] == ["MTP308"]
    assert r.facts["launch"]["corrected_command"] == "python -m sglang.launch_server --model-path plain"
    r2 = audit_launch(LS + ["--model-path", "qwen", "--quantization", "mxfp4"], sglang=work / "sg", env_dumps=work / "env.txt",
                      cwd=work, environ={})
    (m,) = [x for x in r2.findings if x.rule_id == "MTP308"]
    assert m.message == "--quantization mxfp4 expects MXFP4 weights but the checkpoint is NVFP4"


def test_missing_model_path_and_unknown_flag_fix(work):
    r = audit_launch(LS + ["--tp-sise", "2", "--speculative-algorithm", "nextn"], sglang=work / "sg", env_dumps=work / "env.txt",
                     cwd=work, environ={})
    msgs = sorted(f.message for f in r.findings if f.rule_id == "MTP300")
    assert msgs == [
        "SGLang 0.5.9 rejects the command (the server will not start): argument --speculative-algorithm: invalid choice: 'nextn' "
        "(choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')",
        "SGLang 0.5.9 rejects the command (the server will not start): the following arguments are required: --model-path/--model",
        "SGLang 0.5.9 rejects the command (the server will not start): unrecognized arguments: --tp-sise 2",
    ]
    # no flag fix supplies the model: no corrected command rather than one that still lacks --model-path
    assert r.facts["launch"]["corrected_command"] is None
    assert r.facts["launch"]["summary"]["corrected_command"] == "no command-line fix known"


def test_output_is_deterministic(work):
    args = dict(sglang=work / "sg", env_dumps=work / "env.txt", cwd=work, environ={})
    cmd = ["SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE=1", *LS, "--model-path", "ckpt", "--tp", "1", "--speculative-algorithm", "NEXTN"]
    for fmt in ("text", "json", "markdown", "sarif"):
        assert render(audit_launch(cmd, **args), fmt) == render(audit_launch(cmd, **args), fmt)


# --- the condition evaluator --------------------------------------------------------------------------


@pytest.mark.parametrize("cond, known, value", [
    ("", Known(), True),
    ("is_sm100_supported()", Known(cc=(12, 0)), False),
    ("is_sm100_supported()", Known(cc=(10, 3)), True),
    ("is_sm100_supported()", Known(), None),
    ("get_platform().is_sm120", Known(cc=(12, 1)), True),
    ("is_hip() and x", Known(cc=(12, 0), nvidia=True), False),
    ("not is_hip()", Known(nvidia=True), True),
    ('model_arch in ["A", "B"] and unknown_call()', Known(arch="C"), False),
    ('model_arch in ["A", "B"] and unknown_call()', Known(arch="A"), None),
    ('model_arch in ["A"] or is_blackwell_supported()', Known(arch="X", cc=(12, 0)), True),
    ('self.quantization == "modelopt_fp4" and self.x is None', Known(args={"quantization": "modelopt_fp4", "x": None}), True),
    ('cfg.moe_runner_backend != "auto"', Known(args={"moe_runner_backend": "auto"}), False),
    ("envs.SGLANG_A.get()", Known(env={"SGLANG_A": "true"}), True),
    ("envs.SGLANG_A.get()", Known(env={"SGLANG_A": "0"}), False),
    ("envs.SGLANG_A.get()", Known(), None),
    ('get_bool_env_var("SGLANG_B")', Known(env={"SGLANG_B": "1"}), True),
    ("this is ( not python", Known(), None),
])
def test_condition_evaluator(cond, known, value):
    assert evaluate(cond, known).value is value


def test_closing_section_is_generic_and_last(work):
    from mtp_audit.report import Report

    r = Report.build("launch", "x", facts={"summary": {"a": 1}, "closing": {"title": "T", "lines": ["one.", "two."]}})
    assert "T:" not in render(r, "text")  # the closing section is --verbose
    text = render(r, "text", verbose=True).rstrip("\n").split("\n")
    assert text[-5:] == ["T:", "  one.", "  two.", "", text[-1]] and text[-1].endswith("status: pass")
    md = render(r, "markdown")
    assert md.rstrip().endswith("## T\n\n- one.\n- two.")
    bad = Report.build("launch", "x", facts={"closing": "not a dict"})
    assert "T:" not in render(bad, "text")


def test_fix_for_a_defaulted_backend_adds_the_flag(work):
    # the example tree's --fp4-gemm-backend defaults to flashinfer_cutlass (as 0.5.9 does): on SM120 the preflight
    # warns (MTP212, NaN reports) and names flashinfer_cudnn; the corrected command adds the flag
    f = _facts_file(work, "default-gemm.json", torch="2.9.1+cu130", binaries=SM120_KERNEL)
    r = audit_launch(LS + ["--model-path", "qwen"], sglang=work / "sg", facts=f, cwd=work, environ={})
    (w,) = [x for x in r.findings if x.rule_id == "MTP212"]
    assert w.severity == Severity.WARNING and r.facts["preflight"]["resolved"]["fp4_gemm_backend"]["how"] == "default"
    lf = r.facts["launch"]
    assert lf["verdict"] == "go"
    assert lf["corrected_command"] == "python -m sglang.launch_server --model-path qwen --fp4-gemm-backend flashinfer_cudnn"
    assert "MTP305" in {x.rule_id for x in r.findings}  # 1,553 MTP tensors, no speculative flag


def test_corrected_command_after_misspelt_flags_fixes_their_values_once(work):
    # --moe-runner-backed / --fp4-gemm-backed are not flags of the example tree (0.5.9 shape): argparse rejects them.
    # Spelled right, flashinfer_trtllm is still wrong on SM120 for both; the corrected command must replace the
    # values in place (each flag once) and auditing it again must leave no error a flag could fix.
    f = _facts_file(work, "misspelt.json", torch="2.9.1+cu130", binaries=SM120_KERNEL)
    args = dict(sglang=work / "sg", facts=f, cwd=work, environ={})
    r = audit_launch(LS + ["--model-path", "qwen", "--moe-runner-backed", "flashinfer_trtllm", "--fp4-gemm-backed", "flashinfer_trtllm"], **args)
    fixed = r.facts["launch"]["corrected_command"]
    toks = fixed.split()
    assert toks[:5] == LS + ["--model-path", "qwen"]
    assert toks.count("--moe-runner-backend") == 1 and toks.count("--fp4-gemm-backend") == 1
    assert "--moe-runner-backed" not in toks and "flashinfer_trtllm" not in toks
    assert toks[toks.index("--fp4-gemm-backend") + 1] == "flashinfer_cudnn"
    again = audit_launch(toks, **args)
    assert again.facts["launch"]["corrected_command"] is None
    assert not [x for x in again.findings if x.severity >= Severity.ERROR and x.rule_id.startswith(("MTP3", "MTP2"))
                and x.remediation and x.remediation.startswith("--")]
    assert again.facts["launch"]["verdict"] == "go"


def test_hub_id_draft_model_path_is_could_not_tell(work, capsys, monkeypatch, tmp_path):
    """A hub id as --speculative-draft-model-path that cannot be audited leaves the draft unknown: "could not tell"
    (exit 3), not go; without a speculative algorithm the draft is never loaded and the gap does not block."""
    from hubfixture import isolate_hf

    isolate_hf(monkeypatch, tmp_path, endpoint="http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.chdir(work)
    f = _facts_file(work, "hubdraft.json", torch="2.9.1+cu130", binaries=SM120_KERNEL)
    base = ["launch", "--sglang", "sg", "--facts", str(f), "-v", "--", *LS, "--model-path", "qwen", "--moe-runner-backend", "flashinfer_cutlass",
            "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-draft-model-path", "foo/bar"]
    rc = main([*base, "--speculative-algorithm", "NEXTN", "--tp-size", "8"])
    out = capsys.readouterr().out
    assert rc == 3
    assert "[checkpoint, blocking] --speculative-draft-model-path foo/bar: cannot reach http://127.0.0.1:9" in out
    assert "Draft architecture: unknown (draft checkpoint not audited)." in out
    assert "Verdict: could not tell (1 blocking gap(s): --speculative-draft-model-path foo/bar: cannot reach" in out
    rc = main(base)
    out = capsys.readouterr().out
    assert rc == 0 and "Verdict: go" in out and "[checkpoint, note] --speculative-draft-model-path foo/bar: cannot reach" in out


def test_mtp307_location_and_unaudited_checkpoint_fp4(work, monkeypatch, tmp_path):
    f = _facts_file(work, "loc.json", torch="2.9.1+cu130", binaries=SM120_KERNEL, memory=102_641_467_392)
    args = dict(sglang=work / "sg", facts=f, cwd=work, environ={})
    r = audit_launch(LS + ["--model-path", "qwen", "--speculative-algorithm", "NEXTN"], **args)
    (m,) = [x for x in r.findings if x.rule_id == "MTP307"]
    assert m.location.symbol == "--model-path"  # no --tp-size in the command
    r = audit_launch(LS + ["--model-path", "qwen", "--speculative-algorithm", "NEXTN", "--tp-size", "8"], **args)
    (m,) = [x for x in r.findings if x.rule_id == "MTP307"]
    assert m.location.symbol == "--tp-size"
    from hubfixture import isolate_hf

    isolate_hf(monkeypatch, tmp_path, endpoint="http://127.0.0.1:9")
    r = audit_launch(LS + ["--model-path", "nvidia/Qwen3.5-397B-A17B-NVFP4"], **args)
    s = r.facts["launch"]["summary"]
    assert s["checkpoint_fp4"] == "unknown (checkpoint not audited)" and s["verdict"] == "could not tell"


def test_engine_is_passed_to_the_preflight(work, capsys, monkeypatch):
    # default: the command starts SGLang, so the preflight's verdict is for SGLang
    r = audit_launch(LS + ["--model-path", "qwen"], sglang=work / "sg", env_dumps=work / "env.txt", cwd=work, environ={})
    assert r.facts["preflight"]["summary"]["engine"] == "sglang"
    # --engine vllm wins for the preflight verdict; the command's own engine is shown as the conflict
    monkeypatch.chdir(work)
    rc = main(["launch", "--engine", "vllm", "--sglang", "sg", "--env-dump", "env.txt", "-f", "json", "--", *LS, "--model-path", "qwen"])
    data = json.loads(capsys.readouterr().out)
    eng = data["facts"]["preflight"]["engine"]
    # env.txt is an SGLang check_env without a vllm line: vLLM's release is not shown, so whether its FP4 kernels run
    # on this SM120 stack could not be told (was exit 0 "capable" on the machine alone)
    assert rc == 3
    assert data["facts"]["preflight"]["verdicts"][0]["reasons"][0] == (
        "SM120 has FP4 tensor cores, but vLLM's version is not shown, so the FP4 kernels it loads were not checked")
    assert eng["engine"] == "vllm" and eng["how"] == "explicit"
    assert eng["conflicts"][0] == "launch command 'python -m sglang.launch_server' says SGLang, but the verdict is for vLLM (--engine vllm)"


@pytest.mark.parametrize(("given", "engine"), [("trtllm", "trtllm"), ("tensorrt-llm", "trtllm"), ("llama.cpp", "llamacpp")])
def test_launch_engine_takes_every_registered_engine_and_its_aliases(work, capsys, monkeypatch, given, engine):
    monkeypatch.chdir(work)
    main(["launch", "--engine", given, "--sglang", "sg", "--env-dump", "env.txt", "-f", "json", "--", *LS, "--model-path", "qwen"])
    eng = json.loads(capsys.readouterr().out)["facts"]["preflight"]["engine"]
    assert eng["engine"] == engine and eng["how"] == "explicit"


def test_launch_engine_not_registered_is_one_line_and_exit_2(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    assert main(["launch", "--engine", "tgi", "--sglang", "sg", "--", *LS, "--model-path", "qwen"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'tgi' is not a registered engine" in err


def test_missing_local_draft_path_is_named_once(work, capsys, monkeypatch):
    """A --speculative-draft-model-path that is not on this machine: its gap (made where the path is looked up, naming
    the flag and the path) is said once, not prefixed again like the draft checkpoint report's own gaps."""
    monkeypatch.chdir(work)
    f = _facts_file(work, "localdraft.json", torch="2.9.1+cu130", binaries=SM120_KERNEL)
    rc = main(["launch", "--sglang", "sg", "--facts", str(f), "-f", "json", "--", *LS, "--model-path", "qwen",
               "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "./no-draft-here", "--tp-size", "8"])
    doc = json.loads(capsys.readouterr().out)
    drafts = [g for g in doc["gaps"] if "no-draft-here" in g["message"]]
    assert rc == 3 and len(drafts) == 1 and drafts[0]["blocking"]
    assert drafts[0]["message"].startswith("--speculative-draft-model-path ./no-draft-here: no such file or folder on this machine")


def test_release_pin_is_told_by_its_evidence_not_its_words() -> None:
    """MTP209 from the audited release's own pin (evidence ``pin source``) is a warning where the machine has another
    SGLang installed, however it is worded; an MTP209 worded like it but without that evidence (an installed package's
    ``Requires-Dist`` pin) stays an error."""
    from types import SimpleNamespace

    from mtp_audit.engines.sglang.kernels import PIN_SOURCE
    from mtp_audit.engines.sglang.launch.evaluate import relax_other_release_pin
    from mtp_audit.preflight.rules import rule_by_id
    from mtp_audit.report import Evidence, Report

    rule = rule_by_id("MTP209")
    release = rule.finding("the release's torch pin is not the installed torch", evidence=(Evidence(PIN_SOURCE, "matrix"),))
    worded = rule.finding("sglang 0.5.23 pins torch==2.14.1 but torch 2.9.1 is installed", evidence=(Evidence("torch", "2.9.1"),))
    from mtp_audit.preflight.facts import Fact

    installed = SimpleNamespace(package=lambda name: Fact.of("0.5.9", "sglang-check-env line 3"))
    ctx = SimpleNamespace(machine=SimpleNamespace(facts=installed), release=SimpleNamespace(version="0.5.23"))
    out = relax_other_release_pin(ctx, Report.build("preflight", "m", findings=[release, worded]))
    severities = {f.evidence[0].label: f.severity.label for f in out.findings}
    assert severities == {PIN_SOURCE: "warning", "torch": "error"}


def test_hook_mtp300_is_told_by_its_evidence_not_its_words() -> None:
    """The corrected command addresses MTP300 of the speculative hook (evidence ``hook``) when its replay no longer
    raises; a parser MTP300 whose words happen to say "stops at start-up" (an option the user typed) is not the hook's:
    it is addressed only by a parser fix."""
    from types import SimpleNamespace

    from mtp_audit.engines.sglang.launch.outcome import _fixed_by
    from mtp_audit.engines.sglang.launch.rules import RULES_BY_ID as BY_ID
    from mtp_audit.engines.sglang.launch.spec_hook_replay import HOOK
    from mtp_audit.report import Evidence

    ctx = SimpleNamespace(corrected_check={"hook_raises": False}, cmd=SimpleNamespace(problems=[]))
    hook = BY_ID["MTP300"].finding("SGLang 0.5.23: the speculative hook raises", evidence=(Evidence(HOOK, "hook()"),))
    worded = BY_ID["MTP300"].finding("SGLang 0.5.23 rejects the command (the server will not start): unrecognized "
                                     "arguments: --stops at start-up", evidence=(Evidence("token", "--stops"),))
    assert _fixed_by(hook, [], ctx) and not _fixed_by(worded, [], ctx)
