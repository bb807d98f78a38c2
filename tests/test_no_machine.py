"""``--no-machine`` (launch and preflight): an audit off the serving machine, as CI, pre-commit and the Action run it.
The machine running the audit is never read; machine questions are notes saying "not examined: not the serving
machine"; the launch's own questions still decide (a correct launch exits 0, a broken one still fails)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, sglang_wheel

from mtp_audit.cli.main import main
from mtp_audit.preflight.nomachine import NOT_SERVING_MACHINE
from mtp_audit.synth.launch import checkpoint_files

YAML = str(FIXTURES / "trtllm" / "r1-nextn-3.yaml")
REAP = str(FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
GB10_DUMP = str(FIXTURES / "preflight" / "envdumps" / "sglang-13198.txt")


@pytest.fixture()
def ckpt(tmp_path: Path) -> str:
    """A correct metadata-only Qwen3.5-MoE checkpoint with its MTP layer (:func:`mtp_audit.synth.launch.checkpoint_files`)."""
    for name, text in checkpoint_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return str(tmp_path / "ckpt")


@pytest.fixture()
def no_live_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading this machine fails the test: --no-machine must never do it."""
    import mtp_audit.preflight.collect as collect

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the live machine was read")

    monkeypatch.setattr(collect, "collect_live", refuse)


SCHEMA = json.loads((REPO / "mtp_audit" / "schema" / "report.schema.json").read_text())


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    """Exit code and JSON report of ``mtp-audit ARGV``, the report checked against the JSON schema."""
    import jsonschema

    rc = main(argv)
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    return rc, doc


def test_preflight_without_a_machine_or_launch_is_could_not_tell(capsys: pytest.CaptureFixture[str], no_live_machine: None) -> None:
    """Nothing examined and nothing else asked: the machine question is "could not tell" (exit 3), never a pass."""
    rc, doc = _json(capsys, ["preflight", "--no-machine", "-f", "json"])
    assert rc == 3 and doc["status"] == "inconclusive" and doc["findings"] == []
    assert [(g["message"], g["blocking"]) for g in doc["gaps"]] == [
        (f"native FP4 verdict unknown: no GPU listed ({NOT_SERVING_MACHINE})", True),
        (f"no GPU information ({NOT_SERVING_MACHINE})", False)]
    assert doc["facts"]["preflight"]["machine"]["origin"] == "none"
    assert doc["facts"]["preflight"]["summary"]["verdict"] == "unknown"
    main(["preflight", "--no-machine"])
    assert capsys.readouterr().out.startswith("INCONCLUSIVE: could not tell whether this machine can run native FP4")


def test_preflight_no_machine_with_a_launch_says_not_examined(capsys: pytest.CaptureFixture[str], no_live_machine: None) -> None:
    """With a launch command its questions decide the exit (0 here); the machine question left open is worded "not
    examined", never "could not tell" beside PASS."""
    rc = main(["preflight", "--no-machine", "--", "vllm", "serve", "./nonexistent-ckpt"])
    first = capsys.readouterr().out.splitlines()[0]
    assert rc == 0 and first.startswith("PASS: not examined whether this machine can run native FP4")
    assert "could not tell" not in first


def test_preflight_with_a_dump_keeps_what_the_dump_says(capsys: pytest.CaptureFixture[str], no_live_machine: None) -> None:
    """The dump's evidence still decides: the GB10 dump's machine error (MTP209, a torch its kernels are not built for)
    fails the gate with or without --no-machine. Without a launch, what SGLang's default flags would pick (MTP212)
    is information about a command nobody gave, not an error."""
    rc_dump, doc_dump = _json(capsys, ["preflight", "--env-dump", GB10_DUMP, "-f", "json"])
    rc, doc = _json(capsys, ["preflight", "--no-machine", "--env-dump", GB10_DUMP, "-f", "json"])
    ids = sorted(f["rule_id"] for f in doc["findings"] if f["severity"] == "error")
    assert rc == rc_dump == 1 and ids == ["MTP209"]
    assert [f["severity"] for f in doc["findings"] if f["rule_id"] == "MTP212"] == ["info"]
    assert ids == sorted(f["rule_id"] for f in doc_dump["findings"] if f["severity"] == "error")
    assert doc["facts"]["preflight"]["machine"]["gpus"][0]["name"]["value"] == "NVIDIA GB10"
    # a fact the dump does not state says why it is unknown, and that this machine was not asked
    assert doc["facts"]["preflight"]["machine"]["torch_arch_list"]["missing"].startswith(NOT_SERVING_MACHINE + "; ")


@pytest.mark.parametrize("extra", [["--facts", "fixtures/preflight/h200-live-facts.json"], ["--probe"]])
def test_no_machine_refuses_another_machine_source(capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    assert main(["preflight", "--no-machine", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtp-audit: error: --no-machine: ") and err.count("\n") == 1


def test_trtllm_launch_off_the_machine_is_go(capsys: pytest.CaptureFixture[str], ckpt: str, no_live_machine: None) -> None:
    rc, doc = _json(capsys, ["launch", "--no-machine", "-f", "json", "--", "trtllm-serve", ckpt, "--config", YAML])
    assert rc == 0 and doc["facts"]["launch"]["summary"]["verdict"] == "go"
    assert not [g for g in doc["gaps"] if g["blocking"]]
    assert [g["message"] for g in doc["gaps"] if NOT_SERVING_MACHINE in g["message"]] == [
        "the GPUs' compute capability is unknown: whether TensorRT-LLM's MTP kernels (SM90+) run could not be told "
        f"({NOT_SERVING_MACHINE})"]
    assert main(["launch", "--no-machine", "--facts", "fixtures/preflight/h200-live-facts.json", "--",
                 "trtllm-serve", ckpt, "--config", YAML]) == 2


def test_a_broken_launch_still_fails_off_the_machine(capsys: pytest.CaptureFixture[str], no_live_machine: None) -> None:
    """The REAP checkpoint declares an MTP layer it does not ship (MTP001): an error without any machine fact."""
    rc, doc = _json(capsys, ["launch", "--no-machine", "-f", "json", "--", "trtllm-serve", REAP, "--config", YAML])
    assert rc == 1 and doc["facts"]["launch"]["summary"]["verdict"] == "fix first"
    assert "MTP001" in {f["rule_id"] for f in doc["findings"]}


@pytest.mark.network
def test_sglang_launch_off_the_machine(capsys: pytest.CaptureFixture[str], ckpt: str, no_live_machine: None) -> None:
    """A correct SGLang NEXTN launch on 4 GPUs: the GPU count and the FP4 verdict are notes, the verdict go, exit 0;
    the same launch against a dump listing no GPU (a machine that shows none) still cannot tell (exit 3)."""
    whl = str(sglang_wheel("0.5.23"))
    argv = ["--", "python", "-m", "sglang.launch_server", "--model-path", ckpt, "--speculative-algorithm", "NEXTN", "--tp-size", "4"]
    rc, doc = _json(capsys, ["launch", "--no-machine", "--sglang", whl, "-f", "json", *argv])
    assert rc == 0 and doc["facts"]["launch"]["summary"]["verdict"] == "go"
    notes = [g["message"] for g in doc["gaps"] if NOT_SERVING_MACHINE in g["message"]]
    assert f"the command needs 4 GPUs on this node (tp 4 x pp 1 = 4) but the GPUs are unknown ({NOT_SERVING_MACHINE})" in notes
    assert len(notes) == 3 and not [g for g in doc["gaps"] if g["blocking"]]


def test_the_no_machine_option_is_documented() -> None:
    readme = (REPO / "README.md").read_text()
    assert "--no-machine" in readme and "--no-machine" in (REPO / "action.yml").read_text()
    assert "--no-machine" in (REPO / ".pre-commit-hooks.yaml").read_text()


def test_no_installed_vllm_advice_is_said_once_with_a_release(capsys: pytest.CaptureFixture[str], no_live_machine: None) -> None:
    """No vLLM in this Python and no --vllm: one blocking gap whose advice is given once and names a release version."""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed in this Python")
    rc, doc = _json(capsys, ["launch", "--no-machine", "-f", "json", "--", "vllm", "serve", str(REPO / "fixtures/checkpoint/jj8127--mimo_kor"),
                             "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'])
    gap = next(g["message"] for g in doc["gaps"] if g["message"].startswith("no vLLM to check"))
    assert rc == 3 and gap == ("no vLLM to check the command against (not installed in this Python); pass --vllm TARGET (a release "
                               "version such as --vllm 0.33.0, a .whl, an unpacked wheel, a package folder or a checkout)")


# --- the reason a gap is open is typed (why_open), never read from its message ---------------------------------------


def test_machine_note_decides_by_why_open_not_by_the_message() -> None:
    """A blocking gap whose message happens to say "not examined: not the serving machine" but whose fact was looked
    for stays blocking; one marked not-examined becomes a note whatever its message says."""
    from mtp_audit.preflight.nomachine import machine_note, scope_gaps
    from mtp_audit.report import Gap
    from mtp_audit.report.questions import NOT_EXAMINED

    worded = Gap("launch", f"GPU count could not be told (a facts file says: {NOT_SERVING_MACHINE})", None, True)
    typed = Gap("launch", "GPU count could not be told", None, True, why_open=NOT_EXAMINED)
    assert machine_note(worded) is worded and machine_note(worded).blocking
    assert machine_note(typed) == Gap("launch", "GPU count could not be told", None, False, why_open=NOT_EXAMINED)
    assert [g.blocking for g in scope_gaps([worded, typed])] == [True, False]


def test_only_given_marks_by_the_unexamined_flag_not_by_the_reason_text() -> None:
    """A dump fact whose own reason contains the words is still marked (once); a fact already unexamined is kept as is."""
    import dataclasses

    from mtp_audit.preflight.facts import Fact, MachineFacts
    from mtp_audit.preflight.nomachine import only_given, unexamined_machine

    worded = MachineFacts(origin="env-dump:x", driver_version=Fact.absent(f"the paste said {NOT_SERVING_MACHINE}", "dump"))
    marked = only_given(worded).driver_version
    assert marked.unexamined and marked.missing == f"{NOT_SERVING_MACHINE}; the paste said {NOT_SERVING_MACHINE}"
    assert marked.why_open == "not-examined" and marked.to_dict()["why_open"] == "not-examined"
    assert Fact.from_dict(marked.to_dict()) == marked  # the flag round-trips through JSON
    assert Fact.from_dict({"missing": marked.missing}).unexamined is False  # the words alone do not make it
    none = unexamined_machine()
    assert only_given(none).driver_version is none.driver_version and none.driver_version.missing == NOT_SERVING_MACHINE
    assert dataclasses.replace(none.gpu_list, unexamined=False).why_open is None


def test_gpu_list_suffix_and_answer_rewording_follow_the_typed_fact() -> None:
    """The verdict line's "(not examined: ...)" and the answer's "not examined whether" come from the GPU list's flag:
    a GPU list whose reason merely contains the words says neither."""
    import dataclasses

    from mtp_audit.preflight import _scoped, _unexamined
    from mtp_audit.preflight.facts import Fact, MachineFacts
    from mtp_audit.report import Report
    from mtp_audit.report.questions import NOT_EXAMINED

    worded = MachineFacts(origin="facts-file", gpu_list=Fact.absent(NOT_SERVING_MACHINE))
    assert _unexamined(worded) == ""
    flagged = dataclasses.replace(worded, gpu_list=dataclasses.replace(worded.gpu_list, unexamined=True))
    assert _unexamined(flagged) == f" ({NOT_SERVING_MACHINE})"
    line = f"could not tell whether this machine can run native FP4: no GPU listed ({NOT_SERVING_MACHINE})"
    report = Report.build("preflight", "x", facts={"answer": [line]})
    assert _scoped(report, True, True, None).facts["preflight"]["answer"] == [line]
    assert _scoped(report, True, True, NOT_EXAMINED).facts["preflight"]["answer"] == [line.replace("could not tell", "not examined", 1)]


def _worded_facts(tmp_path: Path) -> str:
    """A stored facts file of a machine showing no GPU whose reason, in words only, is the --no-machine one (no
    ``why_open``): evidence looked for and missing, not a machine left unexamined."""
    from mtp_audit.preflight.nomachine import unexamined_machine

    doc = unexamined_machine().to_dict()
    for fact in doc.values():
        if isinstance(fact, dict):
            fact.pop("why_open", None)
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_trtllm_gap_worded_like_no_machine_still_blocks(capsys: pytest.CaptureFixture[str], ckpt: str, tmp_path: Path) -> None:
    """TensorRT-LLM's compute-capability gap is a note only when the GPU list was not examined: a facts file whose GPU
    list says the same words without the flag is "could not tell" (exit 3), never go; with the flag written by a
    --no-machine run (``why_open``) it is the note of the --no-machine launch (exit 0)."""
    worded = _worded_facts(tmp_path)
    rc, doc = _json(capsys, ["launch", "--facts", worded, "-f", "json", "--", "trtllm-serve", ckpt, "--config", YAML])
    gap = next(g for g in doc["gaps"] if g["message"].startswith("the GPUs' compute capability is unknown"))
    assert rc == 3 and gap["blocking"] and "why_open" not in gap and NOT_SERVING_MACHINE not in gap["message"]
    flagged = tmp_path / "flagged.json"
    from mtp_audit.preflight.nomachine import unexamined_machine

    flagged.write_text(json.dumps(unexamined_machine().to_dict()))
    rc, doc = _json(capsys, ["launch", "--facts", str(flagged), "-f", "json", "--", "trtllm-serve", ckpt, "--config", YAML])
    gap = next(g for g in doc["gaps"] if g["message"].startswith("the GPUs' compute capability is unknown"))
    assert rc == 0 and not gap["blocking"] and gap["why_open"] == "not-examined"


def test_every_no_machine_gap_says_why_open(capsys: pytest.CaptureFixture[str], no_live_machine: None) -> None:
    """Off the machine, no dump, a vLLM launch on 4 GPUs: the two gaps about machine facts carry ``why_open`` and are
    notes (exit 0), no other gap carries it; the unexamined machine facts carry it too."""
    rc, doc = _json(capsys, ["preflight", "--no-machine", "-f", "json", "--", "vllm", "serve", "./nonexistent-ckpt",
                             "--tensor-parallel-size", "4"])
    opened = [(g["message"], g["blocking"]) for g in doc["gaps"] if g.get("why_open") == "not-examined"]
    assert rc == 0 and opened == [(f"native FP4 verdict unknown: no GPU listed ({NOT_SERVING_MACHINE})", False),
                                  (f"no GPU information ({NOT_SERVING_MACHINE})", False)]
    machine = doc["facts"]["preflight"]["machine"]
    assert machine["gpu_list"] == {"missing": NOT_SERVING_MACHINE, "source": "--no-machine", "why_open": "not-examined"}
