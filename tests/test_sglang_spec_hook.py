"""SGLang's speculative-parameter hook replayed statement by statement (engines/sglang/spec_hooks.py,
engines/sglang/launch/spec_hook_replay.py) against the real wheels, and the SM120 NVFP4 MoE runner without --quantization.

Hand-checked in the 0.5.23 wheel (``sglang/srt/...``):
- ``arg_groups/speculative_hook.py:1072`` ``def _handle_eagle_family``; ``:1159-1162`` ``if not cfg.speculative_adaptive
  and cfg.speculative_num_steps is None: assert (cfg.speculative_eagle_topk is None and ...)``; ``:1176-1177`` ``if
  "trtllm_mha" in attention_backends_of(...): if cfg.speculative_eagle_topk > 1``; ``:1274`` ``cfg.speculative_eagle_topk
  > 1`` (the page-size test); ``:1285`` ``def _handle_ngram``. Real SGLang 0.5.23 with ``--speculative-num-steps 2``
  alone raises ``TypeError: '>' not supported between instances of 'NoneType' and 'int'`` at ``:1274`` (``:1177`` where
  the attention backend is trtllm_mha): tests/data/oracle/sglang-0.5.23.json, 45 cases.
- ``speculative/spec_info.py:264`` ``_handle_eagle_family(server_args)`` under ``elif self.is_eagle() or
  self.is_standalone()``; ``:102-109`` ``is_eagle``: EAGLE, EAGLE3, FROZEN_KV_MTP.
- ``arg_groups/overrides.py:1513-1518``: ``auto`` -> ``flashinfer_cutlass`` on SM110/SM120 only when
  ``view.quantization == "modelopt_fp4"``; ``layers/quantization/modelopt_quant.py:3117-3123`` ``create_moe_runner``:
  ``auto`` -> marlin on compute capability 8.0-9.x, else ``FLASHINFER_TRTLLM``.
"""

from __future__ import annotations

import os

import pytest
from conftest import FIXTURES, sglang_wheel

from mtp_audit.cli.main import main
from mtp_audit.engines.sglang.audit import audit_sglang
from mtp_audit.engines.sglang.launch.spec_hook_replay import replay_hook

pytestmark = pytest.mark.network

DUMPS = FIXTURES / "preflight" / "envdumps"
CONFIGS = FIXTURES / "oracle-configs"
LS = ["python", "-m", "sglang.launch_server", "--model-path"]
HOOK = "sglang/srt/arg_groups/speculative_hook.py"


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict:
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("spec-hook-cache"))
    return {v: audit_sglang(sglang_wheel(v)).facts["sglang"] for v in ("0.5.9", "0.5.23")}


def _launch(capsys, dump: str, *cmd: str) -> tuple[int, str]:
    rc = main(["launch", "-v", "--sglang", str(sglang_wheel("0.5.23")), "--env-dump", str(DUMPS / dump), "--", *LS, *cmd])
    return rc, capsys.readouterr().out


def test_hooks_and_dispatch_are_found_in_the_tree(facts) -> None:
    h = facts["0.5.23"]["speculative_hooks"]
    fns = h["functions"][HOOK]
    assert fns["_handle_eagle_family"]["line"] == 1072 and fns["_handle_ngram"]["line"] == 1285
    # the module functions they call come along; the other hooks (DFLASH, UNO, ...) make no ordering test on topk
    assert {"_auto_choose_speculative_params", "_handle_iquest_q1_mtp_draft"} <= set(fns)
    assert "_handle_dflash" not in fns
    (eagle,) = [c for c in h["dispatch"] if c["hook"] == "_handle_eagle_family"]
    assert eagle == {"predicates": ["is_eagle", "is_standalone"], "hook": "_handle_eagle_family",
                     "location": "sglang/srt/speculative/spec_info.py:264"}
    assert h["predicates"]["is_eagle"] == ["EAGLE", "EAGLE3", "FROZEN_KV_MTP"]
    assert sum(len(f["source"]) for f in fns.values()) < 25_000  # the cache holds a few functions, not the file
    assert facts["0.5.9"]["speculative_hooks"] == {}  # 0.5.9 decides in server_args.py: nothing to replay


def test_steps_alone_is_a_startup_typeerror_with_its_line(capsys) -> None:
    rc, out = _launch(capsys, "sglang-18943.txt", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "--tp-size", "8",
                      "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2")
    assert rc == 1
    assert "MTP300" in out
    assert (f"_handle_eagle_family ({HOOK}:1072) raises TypeError: '>' not supported between instances of 'NoneType' "
            f"and 'int' at {HOOK}:1177 or {HOOK}:1274") in out
    assert "which one depends on 'trtllm_mha' in attention_backends_of(resolved_view(server_args))" in out


def test_steps_alone_with_a_given_backend_names_the_one_line(capsys) -> None:
    # Mixtral: no model override sets its attention backend, so the given one is what _handle_eagle_family reads
    ck = str(CONFIGS / "mistralai--Mixtral-8x22B-v0.1")
    rc, out = _launch(capsys, "sglang-18943.txt", ck, "--tp-size", "8", "--speculative-algorithm", "EAGLE3",
                      "--speculative-draft-model-path", ck, "--speculative-num-steps", "2", "--attention-backend", "trtllm_mha")
    assert rc == 1
    assert f"'NoneType' and 'int' at {HOOK}:1177" in out and f"{HOOK}:1274" not in out
    # DeepSeek-V3: the DSA override (deepseek_v2.py:103) may set it, so a given backend is not taken as read
    rc, out = _launch(capsys, "sglang-18943.txt", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "--tp-size", "8",
                      "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2", "--attention-backend", "trtllm_mha")
    assert rc == 1 and f"at {HOOK}:1177 or {HOOK}:1274" in out


def test_topk_alone_is_the_assert_of_the_auto_choice(capsys) -> None:
    rc, out = _launch(capsys, "sglang-18943.txt", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "--tp-size", "8",
                      "--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "2")
    assert rc == 1
    assert f"raises AssertionError: cfg.speculative_eagle_topk is None and cfg.speculative_num_draft_tokens is None at {HOOK}:1160" in out


@pytest.mark.parametrize("flags", [["--speculative-algorithm", "NEXTN"],
                                   ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
                                    "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"],
                                   ["--speculative-algorithm", "NGRAM"]])
def test_launches_that_start_get_no_startup_crash(capsys, flags) -> None:
    # NGRAM's page-size test (:1357) depends on the resolved page size and attention backend: unknown, no prediction
    rc, out = _launch(capsys, "sglang-18943.txt", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "--tp-size", "8", *flags)
    assert "_handle_eagle_family (" not in out and "_handle_ngram (" not in out


def test_unparsable_or_missing_hook_source_is_a_gap_not_a_crash(facts) -> None:
    h = facts["0.5.23"]["speculative_hooks"]
    broken = {**h, "functions": {HOOK: {name: dict(f, source=f["source"][:200]) for name, f in h["functions"][HOOK].items()}}}
    out = replay_hook(broken, "EAGLE", {"speculative_num_steps": 2}, arch="DeepseekV3ForCausalLM", nvidia=True)
    assert out.raised is None and out.gap == f"{HOOK}: the cached source of _handle_eagle_family does not parse"
    assert replay_hook({}, "EAGLE", {}, arch=None, nvidia=None).gap == "no cached speculative hook for EAGLE"
    # an algorithm the dispatch sends to a hook whose source is not cached (DFLASH) is not replayed
    assert replay_hook(h, "DFLASH", {}, arch=None, nvidia=None).gap == "no cached speculative hook for DFLASH"


def test_sm120_nvfp4_without_quantization_keeps_auto_and_the_layer_picks_trtllm(capsys) -> None:
    ck = str(CONFIGS / "nvidia--DeepSeek-V3.1-NVFP4")
    _rc, out = _launch(capsys, "vllm-57932.txt", ck, "--speculative-algorithm", "NEXTN")
    assert "MoE runner backend: flashinfer_trtllm (auto;" in out
    assert "modelopt_quant.py create_moe_runner (:3117-3123)" in out
    assert ("MTP216 error: SGLang 0.5.23 keeps --moe-runner-backend auto without --quantization modelopt_fp4, and the "
            "ModelOpt NVFP4 MoE layer then picks flashinfer_trtllm") in out
    assert "fix: --quantization modelopt_fp4 (SGLang then picks flashinfer_cutlass on SM110/SM120)" in out
    _rc, out = _launch(capsys, "vllm-57932.txt", ck, "--speculative-algorithm", "NEXTN", "--quantization", "modelopt_fp4")
    assert "MoE runner backend: flashinfer_cutlass (auto;" in out and "MTP216" not in out


def test_given_page_size_and_backend_decide_the_page_tree_tests(capsys) -> None:
    # Mixtral on B200: no model override sets its attention backends or page size, so the command's values are what the
    # hook reads (0.5.23 overrides.py:1144-1200 keep page_size 64 for trtllm_mha; _fa4_page_constraint :1274-1296 is
    # skipped for topk > 1)
    ck = str(CONFIGS / "mistralai--Mixtral-8x22B-v0.1")
    eagle = ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", ck, "--speculative-num-steps", "3",
             "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8", "--page-size", "64"]
    rc, out = _launch(capsys, "sglang-18943.txt", ck, "--tp-size", "8", *eagle, "--attention-backend", "fa4")
    assert rc == 1 and ("raises ValueError: speculative_eagle_topk > 1 with page_size > 1 is only supported on ('flashinfer', "
                        f"'fa3', 'triton'); got attention_backend='fa4'. Use page_size == 1 or one of those backends. "
                        f"at {HOOK}:1278") in out
    rc, out = _launch(capsys, "sglang-18943.txt", ck, "--tp-size", "8", "--speculative-algorithm", "NGRAM",
                      "--attention-backend", "trtllm_mha", "--page-size", "64")
    assert rc == 1 and f"_handle_ngram ({HOOK}:1285) raises ValueError: speculative_eagle_topk(10) > 1 with page_size(64) > 1" in out
    assert f"at {HOOK}:1361" in out and ":1288" not in out  # the device is cuda on an NVIDIA GPU
    _rc, out = _launch(capsys, "sglang-18943.txt", ck, "--tp-size", "8", *eagle, "--attention-backend", "flashinfer")
    assert "_handle_eagle_family (" not in out  # a page-tree backend
    # Kimi-K3: its model override may set the per-phase backends (kimi_k3.py:133-149), so given ones are not taken as
    # read; real SGLang stops at :1278 there (trtllm_mla, page 64), the analyzer says it cannot tell which line
    rc, out = _launch(capsys, "sglang-18943.txt", str(FIXTURES / "checkpoint" / "moonshotai--Kimi-K3"), "--tp-size", "8",
                      "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "4",
                      "--speculative-num-draft-tokens", "8", "--attention-backend", "trtllm_mla", "--page-size", "64")
    assert f"at {HOOK}:1178; or ValueError: speculative_eagle_topk > 1 with page_size > 1" in out


MIMO = FIXTURES / "checkpoint" / "jj8127--mimo_kor"  # MiMo-7B with its MTP layer's tensors listed in the index
H200 = DUMPS / "h200-nvidia-smi.txt"


def _facts_of(*flags: str) -> tuple[dict, list]:
    from mtp_audit.launch import audit_launch

    r = audit_launch([*LS, str(MIMO), "--speculative-algorithm", "NEXTN", *flags], sglang=sglang_wheel("0.5.23"),
                     env_dumps=H200, environ={})
    return r.facts["launch"], list(r.findings)


def test_the_none_is_traced_to_its_flag_and_the_corrected_command_replays_as_go() -> None:
    # 0.5.23 speculative_hook.py:1159 skips the auto choice once --speculative-num-steps is given, so topk stays None
    # and `cfg.speculative_eagle_topk > 1` (:1177 / :1274) raises; the hook compares topk with 1, and replayed with
    # --speculative-eagle-topk 1 it raises on no path (real SGLang 0.5.23 starts NEXTN 3/1/4: the oracle's grid)
    launch, findings = _facts_of("--speculative-num-steps", "3", "--speculative-num-draft-tokens", "4")
    (f,) = [x for x in findings if x.rule_id == "MTP300"]
    assert f.message.endswith("; speculative_eagle_topk is None there (--speculative-eagle-topk not given)")
    assert f.remediation.startswith(f"--speculative-eagle-topk 1 (speculative_eagle_topk is None at {HOOK}:1177 because")
    fixed = launch["corrected_command"]
    assert fixed.endswith("--speculative-num-steps 3 --speculative-num-draft-tokens 4 --speculative-eagle-topk 1")
    assert launch["changed_flags"] == ["--speculative-eagle-topk"]
    assert launch["corrected_check"] == {"command": fixed, "verdict": "go", "errors": [], "hook_raises": False}
    assert "Corrected command evaluated again: go (no error); the speculative hook starts." in launch["closing"]["lines"]
    assert not any("still to fix" in ln for ln in launch["closing"]["lines"])
    # and the corrected command itself: go
    again, findings2 = _facts_of("--speculative-num-steps", "3", "--speculative-num-draft-tokens", "4", "--speculative-eagle-topk", "1")
    assert again["verdict"] == "go" and not [x for x in findings2 if x.rule_id == "MTP300"]


def test_no_fix_known_is_said_instead_of_the_same_command(facts) -> None:
    from mtp_audit.engines.sglang.launch.spec_hook_replay import (
        HookOutcome,
        _remedy,
        find_fix,
        none_flags,
    )

    hook = ("def _handle_eagle_family(server_args):\n    cfg = resolving_view(server_args)\n"
            "    if cfg.speculative_eagle_topk > 1:\n        raise ValueError('never')\n    raise ValueError('always')\n")
    h = {"functions": {HOOK: {"_handle_eagle_family": {"line": 10, "source": hook}}},
         "dispatch": [{"predicates": ["is_eagle"], "hook": "_handle_eagle_family", "location": "x:1"}], "predicates": {"is_eagle": ["EAGLE"]}}
    values = {"speculative_algorithm": "EAGLE", "speculative_eagle_topk": None}
    out = replay_hook(h, "EAGLE", values, arch=None, nvidia=True)
    assert out.raised == [("TypeError", "'>' not supported between instances of 'NoneType' and 'int'", f"{HOOK}:12")]
    assert out.none_operands == ["cfg.speculative_eagle_topk"]
    cli = facts["0.5.23"]["cli_arguments"]
    nones = none_flags(out, cli, values)
    assert nones == [("speculative_eagle_topk", "--speculative-eagle-topk")]
    assert find_fix(h, nones, values, arch=None, nvidia=True) is None  # with 1 it still raises 'always'
    words = _remedy(out.raised[0], nones, None)
    assert words.startswith("no flag value found that the replayed hook accepts: speculative_eagle_topk is None at")
    assert isinstance(HookOutcome().resolved, dict)


def test_the_launch_answer_states_steps_topk_and_draft_tokens_after_resolution() -> None:
    # NEXTN alone: the auto choice (speculative_hook.py:1159-1173) gives 3/1/4, as real SGLang does on every NEXTN case
    launch, _ = _facts_of()
    assert launch["summary"]["speculative_parameters"] == "steps 3, topk 1, draft tokens 4"
    assert "MiMoMTP); steps 3, topk 1, draft tokens 4; FP4 GEMM" in launch["answer"][0]
    # topk 1 with 8 draft tokens: SGLang rewrites them to steps + 1 and logs it (speculative_hook.py:1255-1266)
    launch, _ = _facts_of("--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "8")
    assert launch["summary"]["speculative_parameters"] == (
        'steps 3, topk 1, draft tokens 4 (SGLang logs "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 '
        f'when speculative_eagle_topk == 1" at {HOOK}:1259)')
    assert any(ln.startswith("Speculative decoding: NEXTN runs as EAGLE") and "after SGLang's resolution: steps 3, topk 1, "
               "draft tokens 4" in ln for ln in launch["closing"]["lines"])
    launch, _ = _facts_of("--speculative-num-steps", "3", "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8")
    assert launch["summary"]["speculative_parameters"] == "steps 3, topk 4, draft tokens 8"
    # a hook that raises on every path states no parameters
    launch, _ = _facts_of("--speculative-num-steps", "3")
    assert "speculative_parameters" not in launch["summary"]
