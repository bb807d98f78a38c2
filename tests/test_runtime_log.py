"""mtp-audit log on real log excerpts (fixtures/logs/, sources in SOURCE.txt): engine, version, resolved
algorithm, draft, acceptance figures, line numbers and verdict, each checked by hand against the excerpt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.runtime.analyze import analyze_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"

# file -> (verdict, engine, version, algorithm, intervals, accepted, drafted, mean acceptance length (2 d.p.,
# weighted by drafted tokens: speculators 613 = (1.34*2160 + 1.22*3945 + 1.17*3960) / 10065), rules)
EXPECTED = {
    "vllm_41789_gemma4_config_wrapped.log": ("could-not-tell", "vllm", "0.20.2rc1.dev49+g9b4e83934", "mtp", 0, 0, 0, None, []),
    "vllm_pr24127_ngram_old_format.log": ("ran-and-helped", "vllm", None, None, 1, 262, 295, 5.44, []),
    "vllm_ascend_12521_multi_engine.log": ("ran-and-helped", "vllm", None, None, 2, 581, 906, 2.92, []),
    "speculators_613_dflash_near_zero.log": ("ran-but-accepted-nothing", "vllm", None, None, 3, 151, 10065, 1.23, ["MTP500"]),
    "vllm_ascend_9803_glm5_mtp3.log": ("ran-and-helped", "vllm", None, None, 2, 892, 1185, 3.26, []),
    "llama_pr24536_eagle3_relative_ts.log": ("ran-and-helped", "llamacpp", None, None, 1, 167, 259, 2.92, []),
    "llama_27151_mtp_1_of_633.log": ("ran-but-accepted-nothing", "llamacpp", None, None, 1, 1, 633, 1.00, ["MTP500"]),
    "llama_27342_dflash2_mean_len.log": ("ran-and-helped", "llamacpp", None, None, 1, 886, 900, 4.94, []),
    "llama_26296_mtp_block_unused.log": ("never-ran", "llamacpp", None, None, 0, 0, 0, None, ["MTP501", "MTP506"]),
    # the client's own rate= lines are evidence, labelled as the client's (mean rate 74.0 % over 7 prompts)
    "llama_23269_bench_client_and_preset.log": ("ran-and-helped", None, None, None, 0, 0, 0, None, ["MTP508"]),
    "sglang_pr608_decode_batch_tp_ep.log": ("ran-and-helped", "sglang", None, None, 3, 0, 0, 2.84, []),
    "sglang_4305_decode_batch_dot_no_spec.log": ("never-ran", "sglang", None, None, 0, 0, 0, None, ["MTP501"]),
    "sglang_8336_crash_k8s_prefix.log": ("ran-then-stopped", "sglang", None, None, 0, 0, 0, None, ["MTP502", "MTP507"]),
    "vllm_intel386_config_engine_core_prefix.log": ("could-not-tell", "vllm", "0.14.1.dev0+gb17039bcc.d20260311", "mtp", 0, 0, 0, None, []),
    "vllm_7301_v0_speculative_metrics.log": ("ran-and-helped", "vllm", None, None, 1, 32594, 53716, 3.43, []),  # V0: 1 + 32594 / (53716 / 4)
    "lemonade9_glm45_nextn_unused.log": ("never-ran", "llamacpp", None, None, 0, 0, 0, None, ["MTP501", "MTP506"]),
    "llama_gsq11_command_zero_acceptance.log": ("ran-but-accepted-nothing", "llamacpp", None, None, 1, 0, 3595, None, ["MTP500"]),
    "trtllm_600_terminate_what.log": ("could-not-tell", "trtllm", None, None, 0, 0, 0, None, ["MTP507"]),
    "beellama4_dflash_draft_unknown_arch.log": ("never-ran", "llamacpp", None, None, 0, 0, 0, None, ["MTP501"]),
    "ollama_llamamodels496_unknown_arch.log": ("could-not-tell", "llamacpp", None, None, 0, 0, 0, None, ["MTP507"]),
    "vllm_pr34552_command_multiline.log": ("could-not-tell", "vllm", None, None, 0, 0, 0, None, []),
    "llama_am17an6_env_command_ggml_assert.log": ("could-not-tell", "llamacpp", None, None, 0, 0, 0, None, ["MTP507"]),
}


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(EXPECTED)
    assert len(EXPECTED) + len(list((LOGS / "holdout").glob("*.log"))) >= 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_log(name: str) -> None:
    verdict, engine, version, algorithm, n, acc, drafted, mean_len, rules = EXPECTED[name]
    report = analyze_log([LOGS / name])
    log = report.facts["log"]
    f = log["files"][0]
    assert (log["verdict"], log["engine"]) == (verdict, engine)
    assert (f["version"].get(engine or "", {}) or {}).get("value") == version
    assert (f["config"].get("algorithm") or {}).get("value") == algorithm
    st = f["statistics"]
    assert (st["intervals"], st["accepted_tokens"], st["drafted_tokens"]) == (n, acc, drafted)
    assert (None if st["mean_acceptance_length"] is None else round(st["mean_acceptance_length"], 2)) == mean_len
    assert sorted({x.rule_id for x in report.findings}) == rules


def test_line_numbers_point_at_the_lines() -> None:
    report = analyze_log([LOGS / "sglang_pr608_decode_batch_tp_ep.log"])
    st = report.facts["log"]["files"][0]["statistics"]
    assert (st["first_line"], st["last_line"]) == (2, 6)
    assert [b["first_line"] for b in st["curve"]] == [2, 4, 6]
    assert [b["value"] for b in st["curve"]] == [3.05, 2.63, 2.83]
    crash = analyze_log([LOGS / "sglang_8336_crash_k8s_prefix.log"]).facts["log"]["files"][0]["crashes"][0]
    assert crash["line"] == 1 and crash["cut"] is True and crash["speculative_frames"] is True
    assert crash["last_frame"] == {"file": "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py",
                                   "line": 325, "function": "forward_batch_speculative_generation"}
    assert crash["marker"] == "Scheduler hit an exception"


def test_a_traceback_alone_names_its_engine_by_its_frames(tmp_path: Path) -> None:
    # sgl-project/sglang#8336's traceback as Python prints it when nothing logs it (no "Scheduler hit an exception"
    # marker, no other SGLang line): its frames in sglang/srt/ name SGLang, so the log gets SGLang's deciding lines
    log = tmp_path / "bare.log"
    log.write_text((LOGS / "sglang_8336_crash_k8s_prefix.log").read_text().replace("Scheduler hit an exception: ", ""))
    report = analyze_log([log])
    assert report.facts["log"]["engine"] == "sglang"
    assert report.facts["log"]["files"][0]["crashes"][0]["marker"] is None
    assert sorted({x.rule_id for x in report.findings}) == ["MTP502", "MTP507"]


def test_wrapped_config_line_is_joined() -> None:
    cfg = analyze_log([LOGS / "vllm_41789_gemma4_config_wrapped.log"]).facts["log"]["files"][0]["config"]
    assert cfg["draft_model"] == {"value": "google/gemma-4-31B-it-assistant", "line": 1}
    assert cfg["num_speculative_tokens"] == {"value": 4, "line": 1}
    assert cfg["quantization"]["value"] == "compressed-tensors"


def test_vllm_sources_are_the_api_servers() -> None:
    src = analyze_log([LOGS / "vllm_ascend_12521_multi_engine.log"]).facts["log"]["files"][0]["statistics"]["sources"]
    assert src == {"APIServer pid=95669": {"accepted": 282, "drafted": 453, "intervals": 1},
                   "APIServer pid=95673": {"accepted": 299, "drafted": 453, "intervals": 1}}


def test_unused_mtp_block_facts() -> None:
    f = analyze_log([LOGS / "lemonade9_glm45_nextn_unused.log"]).facts["log"]["files"][0]
    # 13 "model has unused tensor blk.46..." lines from line 6; their sizes summed by hand
    assert f["unused_tensors"] == {"blk.46": {"tensors": 13, "bytes": 1495753216, "first_line": 6, "nextn_named": False}}


def test_cli_exit_codes_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["log", str(LOGS / "llama_27151_mtp_1_of_633.log")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: ran-but-accepted-nothing: ")
    assert main(["log", str(LOGS / "sglang_pr608_decode_batch_tp_ep.log")]) == 0
    out = capsys.readouterr().out
    assert "mean acceptance length over 3 lines (2-6): █▇▇ 3.05 -> 2.83" in out
    assert main(["log", str(LOGS / "vllm_intel386_config_engine_core_prefix.log"), "-f", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["log"]["verdict"] == "could-not-tell" and doc["status"] == "inconclusive"


def test_causes_are_ranked_from_the_facts(tmp_path: Path) -> None:
    # the real config line of vllm#41789 followed by the real statistics of speculators#613
    p = tmp_path / "x.log"
    p.write_bytes((LOGS / "vllm_41789_gemma4_config_wrapped.log").read_bytes() + (LOGS / "speculators_613_dflash_near_zero.log").read_bytes())
    f = analyze_log([p]).facts["log"]["files"][0]
    assert f["verdict"] == "ran-but-accepted-nothing"
    assert f["causes"][0].startswith("the model runs quantized (compressed-tensors, line 1)")
    assert f["statistics"]["first_line"] == 3  # the wrapped config line is lines 1-2


def test_a_fifo_is_refused_at_once(tmp_path, capsys):
    """`mtp-audit log FIFO` waited for a writer forever; every other command refuses a FIFO at once."""
    import os

    from mtp_audit.cli.main import main

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["log", str(fifo)]) == 2
    assert "is a FIFO" in capsys.readouterr().err


_VLLM_LINE = ("(APIServer pid=1) INFO 06-30 18:16:28 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 1.34, "
              "Accepted throughput: 0.69 tokens/s, Drafted throughput: 30.29 tokens/s, Accepted: {a} tokens, Drafted: {d} tokens, "
              "Per-position acceptance rate: 0.340, Avg Draft acceptance rate: {r}%\n")


@pytest.mark.parametrize("a, d, r, why", [
    (300, 200, "150.0", "line 1 prints 300 accepted of 200 drafted tokens, which no engine prints"),
    (0, 0, "0.0", "1 statistics line(s) count 0 drafted tokens: nothing was drafted to accept"),
])
def test_impossible_or_empty_figures_are_could_not_tell(tmp_path: Path, a: int, d: int, r: str, why: str) -> None:
    """Found by a new user: 'Accepted: 300 tokens, Drafted: 200 tokens' was 'ran-and-helped ... acceptance 150.0 %'
    (exit 0) and 'Drafted: 0 tokens' was 'ran-but-accepted-nothing'. The vLLM line is speculators_613's, edited."""
    log = tmp_path / "server.log"
    log.write_text(_VLLM_LINE.format(a=a, d=d, r=r))
    report = analyze_log([str(log)])
    assert report.facts["log"]["verdict"] == "could-not-tell"
    assert why in report.facts["log"]["answer"][0]
    assert main(["log", str(log), "-q"]) == 3


#: beellama4_dflash_draft_unknown_arch.log cut before llama-server names the model that failed (line 6 names the draft)
_LOAD_FAILURE_CUT = """\
print_info: file format = GGUF V3 (latest)
print_info: file type   = Q8_0
print_info: file size   = 480.40 MiB (8.50 BPW)
llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'dflash'
"""


@pytest.mark.parametrize("after, verdict, errors", [
    ("", "could-not-tell", []),  # the log stops at the load error: target or draft unknown
    ("srv   operator (): operator (): cleaning up before exit...\nmain: exiting due to model loading error\n",
     "could-not-tell", []),  # lines 5-6 dropped: still not named
    ("llama_model_load_from_file_impl: failed to load model\nsrv    load_model: failed to load model, 'M:\\t.gguf'\n",
     "could-not-tell", ["MTP507"]),  # llama-server names the target: the engine stops
])
def test_a_model_load_failure_is_an_error_once_the_target_is_named(tmp_path: Path, after: str, verdict: str,
                                                                    errors: list[str]) -> None:
    p = tmp_path / "cut.log"
    p.write_text(_LOAD_FAILURE_CUT + after, encoding="utf-8")
    r = analyze_log([p])
    assert r.facts["log"]["verdict"] == verdict
    assert sorted(f.rule_id for f in r.findings if f.severity.label == "error") == errors


def test_every_log_finding_and_gap_answers_the_runtime_question() -> None:
    """Findings and gaps of ``mtp-audit log`` (every fixture, and a metrics window alone) name the question they
    answer: :data:`mtp_audit.report.questions.RUNTIME`."""
    from mtp_audit.runtime.analyze import analyze_metrics_only
    from mtp_audit.runtime.metrics import window_from_texts
    from mtp_audit.runtime.rules import METRICS_AFTER, METRICS_BEFORE

    logs = sorted(str(p) for p in LOGS.rglob("*.log"))
    reports = [analyze_log([p]) for p in logs] + [
        analyze_metrics_only(window_from_texts(METRICS_BEFORE, METRICS_AFTER, 10, "u")),
        analyze_metrics_only(window_from_texts(METRICS_BEFORE, METRICS_BEFORE, 10, "u"))]
    findings = [f for r in reports for f in r.findings]
    gaps = [g for r in reports for g in r.gaps]
    assert (len(findings), len(gaps)) == (25, 9)
    assert {f.question for f in findings} == {g.question for g in gaps} == {"runtime"}
    assert {f.to_dict()["question"] for f in findings} == {"runtime"}


LLAMA_ZERO = ("slot print_timing: id  0 | task 0 | draft acceptance = 0.00000 (    0 accepted / {n:5d} generated), "
              "mean len =  1.00\n")
VLLM_ZERO = ("INFO 05-30 15:21:33 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: "
             "0.00 tokens/s, Drafted throughput: 2.10 tokens/s, Accepted: 0 tokens, Drafted: {n} tokens, Avg Draft acceptance "
             "rate: 0.0%\n")


@pytest.mark.parametrize("text, code, verdict", [
    (LLAMA_ZERO.format(n=1), 3, "could-not-tell"),    # the fresh-user log: was MTP500 "ran-but-accepted-nothing", exit 1
    (LLAMA_ZERO.format(n=62), 3, "could-not-tell"),   # under 21 steps of the default 3 draft tokens
    (LLAMA_ZERO.format(n=63), 1, "ran-but-accepted-nothing"),
    (VLLM_ZERO.format(n=1), 3, "could-not-tell"),
    # one draft token per step, said by the command in the log: 21 drafted tokens are 21 steps
    ("vllm serve m --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n" + VLLM_ZERO.format(n=20), 3,
     "could-not-tell"),
    ("vllm serve m --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n" + VLLM_ZERO.format(n=21), 1,
     "ran-but-accepted-nothing"),
])
def test_accepted_nothing_needs_enough_drafted_tokens(tmp_path, capsys, text: str, code: int, verdict: str) -> None:
    p = tmp_path / "s.log"
    p.write_text(text)
    assert main(["log", str(p), "-f", "json"]) == code
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["log"]["verdict"] == verdict
    assert ("MTP500" in {f["rule_id"] for f in doc["findings"]}) == (code == 1)
    if code == 3:
        (g,) = [g for g in doc["gaps"] if g["blocking"]]
        assert "too few drafted tokens: " in g["message"] and "the log lacks" not in g["message"]


OLD = LOGS / "sglang_4305_decode_batch_dot_no_spec.log"  # 2025-03-11: Decode batch lines without accept len: never-ran
NEW = LOGS / "sglang_pr608_decode_batch_tp_ep.log"  # 2026-07-21: accept len 2.8: ran-and-helped


@pytest.mark.parametrize("order", [(OLD, NEW), (NEW, OLD)])
def test_several_files_follow_the_rule_of_several_runs(monkeypatch, capsys, order) -> None:
    """``log A B`` reported the worst file's verdict (never-ran, with no MTP509) while ``cat A B | log -`` reported the
    run latest in time (ran-and-helped): both now report the latest run, and MTP509 names the other file's verdict."""
    import io

    from mtp_audit.runtime.analyze import analyze_log

    rep = analyze_log(list(order))
    assert rep.facts["log"]["verdict"] == "ran-and-helped"
    (f,) = [x for x in rep.findings if x.rule_id == "MTP509"]
    why = "the last file given that decided" if order[-1] == NEW else "the latest in time"
    assert f.message == (f"2 log files; the verdict is for {why}, {NEW} (the rule of several runs in one log); the other "
                         f"files' own verdicts: {OLD}: never-ran")
    assert main(["log", *map(str, order)]) == 0
    capsys.readouterr()

    class In:
        buffer = io.BytesIO(b"".join(p.read_bytes() for p in order))

    monkeypatch.setattr("sys.stdin", In())
    assert main(["log", "-", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["facts"]["log"]["verdict"] == "ran-and-helped"
