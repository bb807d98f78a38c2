"""What ``mtp-audit log`` takes from each engine's own words (fixtures/logs/, sources in SOURCE.txt): the launch
command read by the engine's own parser (method after the engine's aliases, draft, k), the engine named from any
distinctive line or a wrapper, C/C++ and Python crash causes, a draft that failed to load, a trailing run of
intervals that accepted nothing, benchmark clients' figures. Values checked by hand against the excerpts."""

from __future__ import annotations

import tempfile
from pathlib import Path

from mtp_audit.engines.registry import log_dialects
from mtp_audit.runtime.analyze import analyze_log
from mtp_audit.runtime.command import read_command

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def _log(name_or_bytes: str | bytes) -> dict:  # type: ignore[type-arg]
    if isinstance(name_or_bytes, bytes):
        fd, name = tempfile.mkstemp(suffix=".log")
        with open(fd, "wb") as fh:
            fh.write(name_or_bytes)
        return analyze_log([name]).facts["log"]
    return analyze_log([LOGS / name_or_bytes]).facts["log"]


def test_every_engine_lends_a_dialect() -> None:
    assert [d.engine for d in log_dialects()] == ["sglang", "vllm", "llamacpp", "trtllm"]
    for d in log_dialects():
        assert d.lines and all(ln.literal and " @ " in ln.source or "(" in ln.source for ln in d.lines)


def test_llama_command_with_backslash_and_zero_acceptance() -> None:
    log = _log("llama_gsq11_command_zero_acceptance.log")
    cmd = log["files"][0]["command"]
    assert (cmd["line"], cmd["entry"], cmd["method"], cmd["num_speculative_tokens"], cmd["model"]) == (
        1, "llama-server", "draft-mtp", 2, "Qwen3.8-27B-GSQ-RCO-IQ3_S-mtp.gguf")
    assert log["summary"]["algorithm"] == "draft-mtp" and log["summary"]["num_speculative_tokens"] == 2
    assert log["answer"][0].startswith("ran-but-accepted-nothing: MTP ran but accepted almost nothing: acceptance 0.0 % (0 of 3595")


def test_vllm_multiline_command_then_a_bare_statistics_fragment() -> None:
    """vllm#34552's command, then the fragment of a SpecDecoding line a report quotes (no 'SpecDecoding metrics:')."""
    raw = (LOGS / "vllm_pr34552_command_multiline.log").read_bytes() + b"Accepted: 0 tokens, Drafted: 1200 tokens, Per-position acceptance rate: 0.000, 0.000, 0.000\n"
    log = _log(raw)
    assert (log["engine"], log["verdict"]) == ("vllm", "ran-but-accepted-nothing")
    cmd = log["files"][0]["command"]
    assert (cmd["entry"], cmd["method"], cmd["draft"], cmd["num_speculative_tokens"]) == ("vllm serve", "mtp", "zai-org/GLM-5-FP8", 3)
    assert (log["files"][0]["statistics"]["accepted_tokens"], log["files"][0]["statistics"]["drafted_tokens"]) == (0, 1200)


def test_engine_aliases_apply() -> None:
    sgl = read_command("$ SGLANG_X=1 numactl --cpunodebind=0 -- python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
                       "--speculative-algorithm NEXTN --speculative-num-steps 3 --tp 8")
    assert sgl is not None and (sgl.engine, sgl.typed, sgl.method, sgl.num_speculative_tokens) == ("sglang", "NEXTN", "EAGLE", 3)
    assert sgl.alias is not None and "spec_registry.py:183" in sgl.alias
    vl = read_command("docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.33.0 --model deepseek-ai/DeepSeek-V3 "
                      "--speculative-config '{\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 1}'")
    assert vl is not None and (vl.engine, vl.typed, vl.method, vl.draft, vl.num_speculative_tokens) == (
        "vllm", "deepseek_mtp", "mtp", "deepseek-ai/DeepSeek-V3", 1)
    assert read_command("Error: llama-server process has terminated: exit status 1") is None


def test_command_contradicted_by_the_printed_config() -> None:
    raw = (b"vllm serve Qwen/Qwen3.5-9B --speculative-config '{\"method\": \"eagle3\", \"model\": \"x/eagle3\", \"num_speculative_tokens\": 3}'\n"
           + (LOGS / "vllm_intel386_config_engine_core_prefix.log").read_bytes())
    cmd = _log(raw)["files"][0]["command"]
    assert cmd["check"] == ["contradicts: the command asks for eagle3 (line 1); the engine printed mtp (line 2)",
                            "contradicts: the command asks for k 3 (line 1); the engine printed 2 (line 2)"]


def test_cxx_crash_gives_the_what_line() -> None:
    log = _log("trtllm_600_terminate_what.log")
    crash = log["files"][0]["crashes"][-1]
    assert (crash["line"], crash["exception"], crash["exception_line"]) == (1, "tensorrt_llm::common::TllmException (Assertion failed)", 2)
    assert crash["message"].startswith("[TensorRT-LLM][ERROR] Assertion failed: max_context_len <= mMaxContextLength")


def test_what_line_ends_a_python_traceback() -> None:
    raw = (b"Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/tensorrt_llm/executor/worker.py\", line 12, in run\n"
           b"    self.engine.step()\n"
           + (LOGS / "trtllm_600_terminate_what.log").read_bytes().split(b"\n", 1)[1])
    crash = _log(raw)["files"][0]["crashes"][-1]
    assert (crash["exception"], crash["cut"], crash["exception_line"]) == ("Assertion failed", False, 4)


def test_draft_that_failed_to_load_never_ran() -> None:
    log = _log("beellama4_dflash_draft_unknown_arch.log")
    d = log["files"][0]["draft_failure"]
    assert (d["line"], d["architecture"], d["cause"], d["cause_line"]) == (6, "dflash", "unknown model architecture: 'dflash'", 4)
    assert d["draft"].endswith("Qwen3.6-35B-A3B-DFlash-Q8_0.gguf")
    assert "failed to load (line 6), architecture 'dflash': unknown model architecture: 'dflash' (line 4)" in log["answer"][0]


def test_wrapper_is_named() -> None:
    log = _log("ollama_llamamodels496_unknown_arch.log")
    assert log["engine"] == "llamacpp" and log["files"][0]["wrapper"] == {"value": "Ollama (wraps llama.cpp)", "line": 1}
    assert log["answer"][1] == "engine: llama.cpp (via Ollama (wraps llama.cpp), line 1)"
    assert log["files"][0]["command"] is None  # "llama-server process has terminated" is prose, not a command
    assert "unknown model architecture: 'mllama'" in log["answer"][0]


def test_ggml_assert_behind_an_env_command() -> None:
    log = _log("llama_am17an6_env_command_ggml_assert.log")
    cmd = log["files"][0]["command"]
    assert (cmd["method"], cmd["num_speculative_tokens"], cmd["model"]) == ("draft-mtp", 6, "unsloth/Qwen3.6-27B-MTP-GGUF:UD-Q4_K_XL")
    assert "GGML_ASSERT(ggml_nelements(state) == S_v * S_v * H * n_seqs) failed" in log["answer"][0]


def test_trailing_zero_intervals_beat_the_average() -> None:
    """40 SGLang Decode batch lines of the real format, the last 10 at accept len 1.00: 'accepting nothing since'."""
    good = "[2026-07-21 15:{:02d}:00 TP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, accept len: 3.05, accept rate: 0.68, gen throughput (token/s): 100.00, #queue-req: 0\n"
    bad = good.replace("accept len: 3.05, accept rate: 0.68", "accept len: 1.00, accept rate: 0.00")
    raw = "".join((good if i < 30 else bad).format(i) for i in range(40)).encode()
    log = _log(raw)
    assert log["verdict"] == "ran-but-accepted-nothing"
    assert log["files"][0]["accepting_nothing_since"] == {"line": 31, "time": "2026-07-21 15:30:00", "intervals": 10}
    assert "has been accepting nothing since line 31 / 2026-07-21 15:30:00: the last 10 of 40 statistics lines" in log["answer"][0]


def test_client_summary_alone_is_the_clients_evidence() -> None:
    log = _log(b"============ Serving Benchmark Result ============\nAccept length:                           2.31\n")
    assert log["verdict"] == "ran-and-helped"
    assert log["files"][0]["client_figures"] == [{"line": 2, "client": "sglang.bench_serving", "what": "accept length",
                                                 "value": 2.31, "text": "Accept length:                           2.31"}]
    assert "by the benchmark client's own summary (sglang.bench_serving, line 2: accept length 2.31)" in log["answer"][0]


def test_docs_table_names_every_dialect_line() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "runtime.md").read_text()
    missing = [(d.engine, ln.source) for d in log_dialects() for ln in d.lines
               if f"`{ln.source}`" not in doc or f"`{ln.fmt.replace(chr(10), chr(92) + 'n').replace('|', chr(92) + '|')}`" not in doc]
    assert missing == []


def test_chained_python_tracebacks_report_the_last_exception() -> None:
    raw = (b"Traceback (most recent call last):\n  File \"/x/sglang/srt/speculative/eagle_worker.py\", line 10, in forward\n"
           b"KeyError: 'model.layers.61.eh_proj.weight'\n\nDuring handling of the above exception, another exception occurred:\n\n"
           b"Traceback (most recent call last):\n  File \"/x/sglang/srt/managers/scheduler.py\", line 20, in run\n"
           b"RuntimeError: draft worker failed\n")
    crashes = _log(raw)["files"][0]["crashes"]
    assert [(c["exception"], c["exception_line"]) for c in crashes] == [("KeyError", 3), ("RuntimeError", 9)]


def test_a_backslash_at_a_line_end_does_not_swallow_the_log() -> None:
    """A line ending in a backslash continues a command only while the next lines carry no log prefix."""
    raw = (b"llama-server -m C:\\models\\q.gguf --spec-type draft-mtp \\\n"
           + (LOGS / "llama_27151_mtp_1_of_633.log").read_bytes())
    log = _log(raw)
    assert log["files"][0]["command"]["method"] == "draft-mtp"
    assert (log["files"][0]["statistics"]["accepted_tokens"], log["files"][0]["statistics"]["drafted_tokens"]) == (1, 633)


def test_sglang_abbreviated_options_and_another_program() -> None:
    """sglang PR #2150's command (argparse abbreviations ``--speculative-algo`` / ``--speculative-draft``); sglang-jax
    PR #378's ``python3 -u -m sgl_jax.launch_server`` is another program, not SGLang."""
    cmd = read_command("python3 -m sglang.launch_server --model meta-llama/Llama-2-7b-chat-hf  --speculative-algo EAGLE "
                       "--speculative-draft lmzheng/sglang-EAGLE-llama2-chat-7B --speculative-num-steps 5 "
                       "--speculative-eagle-topk 8 --speculative-num-draft-tokens 64 --mem-fraction 0.7")
    assert cmd is not None and (cmd.method, cmd.draft, cmd.num_speculative_tokens) == ("EAGLE", "lmzheng/sglang-EAGLE-llama2-chat-7B", 5)
    assert cmd.notes == ("--speculative-draft read as --speculative-draft-model-path (an argparse abbreviation, if unique at that release)",)
    assert read_command("python3 -u -m sgl_jax.launch_server   --model-path Qwen/Qwen3-32B --speculative-algorithm EAGLE3") is None


def test_vllm_non_default_args_line_gives_the_typed_method() -> None:
    """vLLM logs its arguments as given (vllm/entrypoints/common/startup.py:96 @ v0.33.0): read field by field."""
    raw = (b"(APIServer pid=1) INFO 05-30 15:20:01 [startup.py:96] non-default args: {'model_tag': 'zai-org/GLM-5-FP8', "
           b"'speculative_config': {'method': 'deepseek_mtp', 'num_speculative_tokens': 3}, 'tensor_parallel_size': 8}\n"
           + (LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes())
    log = _log(raw)
    cmd = log["files"][0]["command"]
    assert (cmd["entry"], cmd["typed"], cmd["method"], cmd["draft"], cmd["num_speculative_tokens"], cmd["line"]) == (
        "non-default args", "deepseek_mtp", "mtp", "zai-org/GLM-5-FP8", 3, 1)
    assert log["summary"]["algorithm"] == "mtp" and log["answer"][0].startswith("ran-and-helped: MTP ran and helped")


def _engine_ids_in(doc: object, path: str = "") -> list[tuple[str, object]]:
    """Every place of a report's JSON that holds an engine id: the value of an ``engine`` key, the keys of
    ``engine_votes`` and of a file's ``version``."""
    out: list[tuple[str, object]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "engine":
                out.append((f"{path}.engine", v))
            if k in ("engine_votes", "version") and isinstance(v, dict):
                out += [(f"{path}.{k}", key) for key in v]
            out += _engine_ids_in(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _engine_ids_in(v, f"{path}[{i}]")
    return out


def test_log_reports_name_engines_by_their_registry_ids(capsys) -> None:  # type: ignore[no-untyped-def]
    """The JSON of every log fixture says ``llamacpp`` and ``trtllm`` (the registry's ids) wherever it names an engine,
    never the labels ``llama.cpp`` / ``tensorrt-llm`` it said before; the text names the engine by its label."""
    import json

    from mtp_audit.cli.main import main
    from mtp_audit.engines.registry import engine_ids

    logs = sorted(str(p) for p in LOGS.rglob("*.log"))
    assert len(logs) == 33
    seen: set[object] = set()
    for log in logs:
        main(["log", log, "-f", "json"])
        out = capsys.readouterr().out
        assert '"llama.cpp"' not in out and '"tensorrt-llm"' not in out, log
        places = _engine_ids_in(json.loads(out))
        assert all(v is None or v in engine_ids() for _, v in places), (log, places)
        seen |= {v for _, v in places}
    assert seen == {None, "sglang", "vllm", "llamacpp", "trtllm"}
    main(["log", str(LOGS / "trtllm_600_terminate_what.log"), "-f", "text"])
    assert "\n  engine: TensorRT-LLM\n" in capsys.readouterr().out


def test_a_prediction_names_the_engine_by_id_or_alias() -> None:
    """``launch --log`` predicts ``trtllm`` (the launch's engine id); the log of a TensorRT-LLM crash is the same
    engine, whether the prediction says the id or an alias. Another engine is a disagreement named by labels."""
    from mtp_audit.runtime.analyze import analyze_log as analyze

    path = [LOGS / "trtllm_600_terminate_what.log"]
    for said in ("trtllm", "tensorrt-llm", "TensorRT-LLM"):
        r = analyze(path, prediction={"engine": said, "algorithm": None})
        assert [f.rule_id for f in r.findings if f.rule_id.startswith("MTP53")] == ["MTP530"], said
        assert [f.message for f in r.findings if f.rule_id == "MTP530"] == [
            "predicted no speculation on TensorRT-LLM; the log shows the same (no contradiction)"]
    r = analyze(path, prediction={"engine": "vllm", "algorithm": None})
    assert [f.message for f in r.findings if f.rule_id == "MTP531"] == ["predicted engine vLLM, the log is TensorRT-LLM's"]


def test_deciding_lines_send_to_metrics_only_an_engine_whose_metrics_are_read() -> None:
    """"Lines that would decide" may point at ``--metrics`` only for an engine whose dialect names its samples
    (TensorRT-LLM's said "or the /metrics counters (--metrics)", which read none of its)."""
    said = {d.engine: "--metrics" in d.deciding for d in log_dialects()}
    assert said == {"sglang": False, "vllm": False, "llamacpp": False, "trtllm": False}
    assert [d.engine for d in log_dialects() if d.metrics is None] == ["trtllm"]
    log = _log("trtllm_600_terminate_what.log")
    assert log["files"][0]["deciding_lines"] == ("TensorRT-LLM's per-iteration statistics (not parsed by this release, "
                                                "nor are its /metrics counters)")
