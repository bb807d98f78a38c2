"""Taking evidence away never yields a new error or a new pass: cutting a real input after any line, in the middle of
a line, or dropping a run of lines, leaves each verdict as it was or turns it into "could not tell".

Inputs: every environment dump under fixtures/preflight/envdumps and fixtures/launch/reports (real pastes, each
file's first line names its source) and every engine log under fixtures/logs. Verdicts compared, whole input against the cut one:

- preflight: the error rule ids (no new one), the native-FP4 verdict (the same, or ``unknown``), and the GPU-count
  question for 1, 2 and 8 GPUs (:meth:`mtp_audit.preflight.visible.Visibility.covers`: the same, or could not tell);
- launch (a sample, each run is a full audit): an SGLang, vLLM and TensorRT-LLM launch needing 8 GPUs, and the
  command of fixtures/launch/serve-qwen35-reap.sh (one GPU, its real checkpoint), whose
  GPU-count question (MTP311 / MTP328 / MTP714 error, a "could not tell" gap, or a pass) stays or becomes the gap;
- runtime log: the verdict word (the same, or ``could-not-tell``) and its error rule ids.

A cause written in the input (an environment variable, a flag in a pasted command) that the cut removes takes its
error with it: that is the cause gone, not evidence lost; the native-FP4 verdict it fed may then only stay or
become unknown. A cut is an input error (exit 2) only when it lost the first lines that make the dump recognisable
(a cut keeping a collect_env banner or an nvidia-smi header is read: "could not tell" at worst). Examples are sampled (hypothesis, no database); ``MTP_AUDIT_FUZZ_EXAMPLES`` raises the count.
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest
from fuzzkit import FIXTURES, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from mtp_audit.errors import InputError
from mtp_audit.report import Severity

DUMPS = sorted([p for p in (FIXTURES / "preflight" / "envdumps").rglob("*.txt") if p.name != "SOURCE.txt"]
               + [p for p in (FIXTURES / "launch" / "reports").glob("*.txt") if p.name != "SOURCE.txt"])
LOGS = sorted((FIXTURES / "logs").rglob("*.log"))
#: dumps whose GPU list is read (the launch sample draws from these)
CUT_TABLES = ("sglang-27487.txt", "sglang-35080-env.txt", "h200-nvidia-smi.txt", "k8s-device-plugin-1482.txt", "vllm-57932.txt", "pytorch-150733.txt",
              "sglang-13198.txt", "semantic-router-1863.txt", "gb10-sglang-0.5.17.txt")


def _body(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    return text.split("\n", 1)[1] if path.suffix == ".txt" else text  # a dump's line 1 is its source URL


@st.composite
def cuts(draw, text: str) -> str:  # type: ignore[no-untyped-def]
    """``text`` cut after a line, in the middle of a line, or with a run of 1-8 lines dropped."""
    lines = text.splitlines(keepends=True)
    at = draw(st.integers(0, max(0, len(lines) - 1)))
    kind = draw(st.sampled_from(["line", "mid", "drop"]))
    if kind == "line":
        return "".join(lines[:at])
    if kind == "mid":
        return "".join(lines[:at]) + lines[at][:draw(st.integers(0, len(lines[at])))]
    return "".join(lines[:at] + lines[at + draw(st.integers(1, 8)):])


def _write(tmp: Path, text: str) -> Path:
    p = tmp / "cut.txt"
    p.write_text(text, encoding="utf-8")
    return p


@cache
def _preflight(text: str) -> tuple[frozenset[str], str, tuple[bool | None, ...]] | None:
    """(error rule ids, native-FP4 verdict, covers(1, 2, 8)) of a dump text, or None when it is not a dump."""
    import tempfile

    from mtp_audit.preflight import preflight
    from mtp_audit.preflight.envdump import parse_dump
    from mtp_audit.preflight.visible import machine_visible

    with tempfile.TemporaryDirectory() as tmp:
        try:
            r = preflight(env_dumps=[_write(Path(tmp), text)], use_engine_analyzer=False)
        except InputError:
            return None
    vis = machine_visible(parse_dump(text), {}, {})
    return (frozenset(f.rule_id for f in r.findings if f.severity == Severity.ERROR), r.facts["preflight"]["summary"]["verdict"],
            tuple(vis.covers(n) for n in (1, 2, 8)))


@cache
def _recognised_prefix(path: Path) -> str:
    """The shortest run of first lines of ``path``'s dump read as an environment (no input error)."""
    from mtp_audit.preflight.envdump import parse_dump

    lines = _body(path).splitlines(keepends=True)
    for n in range(1, len(lines) + 1):
        try:
            parse_dump("".join(lines[:n]))
        except InputError:
            continue
        return "".join(lines[:n])
    raise AssertionError(f"{path.name}: not read as an environment")


@fuzz_settings(8)
@given(data=st.data())
@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.name)
def test_cutting_an_env_dump_adds_no_error_and_no_pass(path: Path, data: st.DataObject) -> None:
    whole = _preflight(_body(path))
    assert whole is not None, path
    text = data.draw(cuts(_body(path)), label="cut")
    cut = _preflight(text)
    if cut is None:
        # nothing recognisable left (exit 2 with one line, the fuzz suite checks that shape): only a cut that lost the
        # first lines that make the whole dump recognisable, never one that keeps them
        assert not text.startswith(_recognised_prefix(path)), f"{path.name}: a cut keeping its first recognisable lines is an input error"
        return
    assert cut[0] <= whole[0], f"{path.name}: new errors {sorted(cut[0] - whole[0])}"
    assert cut[1] in (whole[1], "unknown"), f"{path.name}: native FP4 {whole[1]} -> {cut[1]}"
    for need, w, c in zip((1, 2, 8), whole[2], cut[2]):
        assert c in (w, None), f"{path.name}: {need} GPU(s) visible {w} -> {c}"


@pytest.fixture(scope="module")
def dsv3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mtp_audit.synth.shards import write_checkpoint

    src = FIXTURES / "checkpoint" / "deepseek-ai--DeepSeek-V3"
    folder = tmp_path_factory.mktemp("dsv3")
    write_checkpoint(folder, json.loads((src / "spec.json").read_text()), shards=True)
    shutil.copy(src / "config.json", folder)
    return folder


#: the GPU-count rule of each launch (an 8-GPU launch of each engine, and the one-GPU launch of the fixtures' own script)
LAUNCHES = {"MTP311": ("MTP311", ["python3", "-m", "sglang.launch_server", "--tp-size", "8", "--model-path", "CKPT"]),
            "MTP328": ("MTP328", ["vllm", "serve", "CKPT", "--tensor-parallel-size", "8"]),
            "MTP714": ("MTP714", ["trtllm-serve", "CKPT", "--tp_size", "8"]),
            "serve-qwen35-reap.sh": ("MTP311", ["SGLANG_ENABLE_JIT_DEEPGEMM=0", "python", "-m", "sglang.launch_server", "--model-path",
                                                str(FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"),
                                                "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "1", "--tp-size", "1"])}
_WHOLE: dict[tuple[str, str], tuple[str, frozenset[str]] | None] = {}


def _gpu_question(text: str, launch: str, ck: Path, tmp: Path) -> tuple[str, frozenset[str]] | None:
    """("error" | "could not tell" | "pass", error rule ids) of the GPU-count question of ``launch`` on a dump text."""
    from mtp_audit.launch import audit_launch

    rule, argv = LAUNCHES[launch]
    argv = [str(ck) if a == "CKPT" else a for a in argv]
    try:
        r = audit_launch(argv, env_dumps=[_write(tmp, text)], environ={})
    except InputError:
        return None
    errors = frozenset(f.rule_id for f in r.findings if f.severity == Severity.ERROR)
    gap = any(g.blocking and ("GPU count" in g.message or "GPUs are unknown" in g.message or "GPU(s) on this node" in g.message)
              for g in r.gaps)
    return ("error" if rule in errors else "could not tell" if gap else "pass"), errors


@fuzz_settings(4)
@given(data=st.data())
@pytest.mark.parametrize("rule", sorted(LAUNCHES))
def test_cutting_the_dump_of_a_launch(rule: str, dsv3: Path, tmp_path_factory: pytest.TempPathFactory,
                                                  data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("cut")
    path = data.draw(st.sampled_from([p for p in DUMPS if p.name in CUT_TABLES]), label="dump")
    key = (path.name, rule)
    if key not in _WHOLE:
        _WHOLE[key] = _gpu_question(_body(path), rule, dsv3, tmp)
    whole = _WHOLE[key]
    assert whole is not None
    cut = _gpu_question(data.draw(cuts(_body(path)), label="cut"), rule, dsv3, tmp)
    if cut is None:
        return
    assert cut[0] in (whole[0], "could not tell"), f"{path.name}: GPU count {whole[0]} -> {cut[0]}"
    assert cut[1] <= whole[1], f"{path.name}: new errors {sorted(cut[1] - whole[1])}"


@cache
def _log(text: str) -> tuple[str, frozenset[str]] | None:
    import tempfile

    from mtp_audit.runtime.analyze import analyze_log

    with tempfile.TemporaryDirectory() as tmp:
        try:
            r = analyze_log([_write(Path(tmp), text)])
        except InputError:
            return None
    return r.facts["log"]["verdict"], frozenset(f.rule_id for f in r.findings if f.severity == Severity.ERROR)


@fuzz_settings(6)
@given(data=st.data())
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_cutting_an_engine_log_adds_no_error_and_no_verdict(path: Path, data: st.DataObject) -> None:
    whole = _log(_body(path))
    cut = _log(data.draw(cuts(_body(path)), label="cut"))
    if whole is None or cut is None:
        return
    assert cut[0] in (whole[0], "could-not-tell"), f"{path.name}: {whole[0]} -> {cut[0]}"
    assert cut[1] <= whole[1], f"{path.name}: new errors {sorted(cut[1] - whole[1])}"


def test_the_samples_cover_every_input():
    """Every dump and log parses whole (a fixture that does not would make the property vacuous for it)."""
    assert len(DUMPS) >= 50 and len(LOGS) >= 25
    assert [p.name for p in DUMPS if _preflight(_body(p)) is None] == []
    assert {p.name for p in DUMPS if p.name in CUT_TABLES} == set(CUT_TABLES)


def test_every_dump_is_recognised_from_its_first_lines():
    """A dump is read as an environment (could not tell at worst, never an input error) from its first tool line on:
    a collect_env banner, an nvidia-smi or npu-smi header, a GPU named: at most 7 lines (kthena-1101's GPU is in a
    Markdown table after a heading and a blank line), and every longer cut at a line end is read too."""
    from mtp_audit.preflight.envdump import parse_dump

    longest = max(DUMPS, key=lambda p: _recognised_prefix(p).count("\n"))
    assert _recognised_prefix(longest).count("\n") <= 7, longest.name
    for p in DUMPS:
        lines = _body(p).splitlines(keepends=True)
        for n in range(_recognised_prefix(p).count("\n"), len(lines) + 1, 7):
            parse_dump("".join(lines[:n]))  # raises InputError for an unrecognised longer cut
