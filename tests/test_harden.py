"""Issue 13: what fuzzing the CLI found, one regression test each (the fuzz suite, tests/test_fuzz.py,
keeps the classes fixed; these pin the exact reported cases and messages)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main
from mtp_audit.cli.protect import check_outputs
from mtp_audit.errors import InputError

MIMO = FIXTURES / "checkpoint" / "jj8127--mimo_kor"
DUMP = FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt"
DEEPSEEK = FIXTURES / "checkpoint" / "deepseek-ai--DeepSeek-V3"


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _one_error_line(capsys: pytest.CaptureFixture[str], expected: str | None = None) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("mtp-audit: error: "), err
    if expected is not None:
        assert err == f"mtp-audit: error: {expected}\n"
    return err


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(MIMO, tmp_path / "ck")
    shutil.copy(DUMP, tmp_path / "d.txt")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- data loss -------------------------------------------------------------------------------------


def test_index_file_target_protects_its_siblings(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(work / "ck")
    assert main(["checkpoint", "ck/model.safetensors.index.json", "-o", "ck/config.json"]) == 2
    _one_error_line(capsys, "ck/config.json: would overwrite a file of the audited input ck; refusing to write the report there")
    assert _digest(work / "ck") == before


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_save_facts_never_overwrites_the_env_dump(work: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    target = {"same": "d.txt", "symlink": "l.txt", "hardlink": "h.txt"}[how]
    if how == "symlink":
        os.symlink("d.txt", "l.txt")
    if how == "hardlink":
        os.link("d.txt", "h.txt")
    before = Path("d.txt").read_bytes()
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", target]) == 2
    _one_error_line(capsys, f"{target}: is the audited input d.txt; refusing to write the facts there")
    assert Path("d.txt").read_bytes() == before


def test_report_inside_the_audited_folder_can_be_rewritten_on_a_re_run(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``-o ck/report.json`` twice: the second run replaces the first run's report (it once exited 2, 'would overwrite
    a file of the audited input', so CI re-runs failed); the checkpoint's own files are untouched."""
    before = _digest(work / "ck")
    assert main(["checkpoint", "ck", "-o", "ck/report.json"]) == 0
    assert main(["checkpoint", "ck", "-o", "ck/report.json"]) == 0
    capsys.readouterr()
    after = _digest(work / "ck")
    assert after.pop("report.json") and after == before
    os.chdir("ck")  # the folder of a file target too (cwd '.'): 'checkpoint config.json -o r.txt' twice
    assert [main(["checkpoint", "config.json", "-o", "r.txt"]) for _ in range(2)] == [0, 0]


@pytest.mark.parametrize("name", ["model.safetensors", "model-00005-of-00005.safetensors", "x.safetensors.index.json",
                                  "hf_quant_config.json", "mtp-sidecar.gguf", "params.json"])
def test_no_new_file_the_checkpoint_audit_reads(work: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """``-f json -o ck/model.safetensors`` made a shard of the report: the next audit said MTP013 / MTP008. A new file of
    a kind the checkpoint audit reads is refused in an audited checkpoint folder; nothing is written."""
    before = _digest(work / "ck")
    assert main(["checkpoint", "ck", "-f", "json", "-o", f"ck/{name}"]) == 2
    _one_error_line(capsys, f"ck/{name}: would add a file that the audit of ck reads (a checkpoint's own kind of file); "
                            "refusing to write the report there")
    assert _digest(work / "ck") == before


def test_hard_link_into_an_audited_folder_is_refused(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.link("ck/config.json", "outside.json")
    before = _digest(work / "ck")
    assert main(["checkpoint", "ck", "-o", "outside.json"]) == 2
    _one_error_line(capsys, "outside.json: would overwrite a file of the audited input ck; refusing to write the report there")
    assert _digest(work / "ck") == before


@pytest.mark.parametrize("command", ["preflight", "launch"])
def test_model_path_of_the_launch_is_protected(work: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    before = _digest(work / "ck")
    option = ["--save-facts", "ck/config.json"] if command == "preflight" else ["-o", "ck/config.json"]
    what = "facts" if command == "preflight" else "report"
    assert main([command, "--env-dump", "d.txt", *option, "--", "python", "-m", "sglang.launch_server", "--model-path=ck"]) == 2
    _one_error_line(capsys, f"ck/config.json: would overwrite a file of the audited input ck; refusing to write the {what} there")
    assert _digest(work / "ck") == before


def test_launch_draft_folder_is_protected(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(MIMO, work / "draft")
    assert main(["launch", "--env-dump", "d.txt", "-o", "draft/config.json", "--", "python", "-m", "sglang.launch_server",
                 "--model-path", "ck", "--speculative-algorithm", "NEXTN", "--speculative-draft-model-path", "draft"]) == 2
    _one_error_line(capsys, "draft/config.json: would overwrite a file of the audited input draft; refusing to write the report there")


def test_colliding_outputs_are_refused_before_anything_is_written(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", "S", "-o", "S"]) == 2
    _one_error_line(capsys, "S: --output and --save-facts name the same file; give them different files")
    assert not Path("S").exists()
    Path("real").write_text("keep")
    os.symlink("real", "alias")
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", "real", "-o", "alias"]) == 2
    _one_error_line(capsys)
    assert Path("real").read_text() == "keep"
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", "-", "-o", "-"]) == 2
    _one_error_line(capsys, "--save-facts: --output and --save-facts both go to standard output; send one of them to a file")


def test_compare_protects_both_sides(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(MIMO, work / "other")
    before = _digest(work / "other")
    assert main(["compare", "ck", "other/model.safetensors.index.json", "-o", "other/config.json"]) == 2
    _one_error_line(capsys)
    assert _digest(work / "other") == before


def test_sglang_baseline_is_protected(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (work / "tree" / "sglang" / "srt").mkdir(parents=True)
    (work / "tree" / "sglang" / "srt" / "server_args.py").write_text("class ServerArgs:\n    speculative_algorithm: str = None\n")
    assert main(["sglang", "tree", "-f", "json", "-o", "base.json"]) in (0, 1, 3)
    capsys.readouterr()
    before = Path("base.json").read_bytes()
    assert main(["sglang", "tree", "--baseline", "base.json", "-o", "base.json"]) == 2
    _one_error_line(capsys, "base.json: is the audited input base.json; refusing to write the report there")
    assert Path("base.json").read_bytes() == before
    assert main(["sglang", "tree", "-o", "tree/sglang/srt/server_args.py"]) == 2
    _one_error_line(capsys, "tree/sglang/srt/server_args.py: would overwrite a file of the audited input tree; "
                            "refusing to write the report there")


def test_new_file_beside_the_inputs_and_devices_are_fine(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoint", "ck", "-o", "ck/report.txt"]) == 0
    # exit 3: the dump's SGLang is a source checkout, so its torch pin is not checked (could not tell)
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", os.devnull, "-o", os.devnull]) == 3
    check_outputs(["d.txt"], {"--output": Path(os.devnull), "--save-facts": Path(os.devnull)})


# --- stdout --------------------------------------------------------------------------------------


def test_dash_output_is_stdout(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoint", "ck", "-f", "json", "-o", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_version"] == 1
    assert not Path("-").exists()
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", "-", "-o", "r.txt"]) == 3  # a source checkout
    assert json.loads(capsys.readouterr().out)["origin"].startswith("env-dump")


def test_dev_stdout_on_a_pipe_and_an_append(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(FIXTURES.parent)}
    cmd = [sys.executable, "-m", "mtp_audit", "checkpoint", str(MIMO), "-f", "json", "-o", "/dev/stdout"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema_version"] == 1
    log = tmp_path / "summary.md"
    log.write_text("earlier step\n")
    with open(log, "a") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().startswith("earlier step\n{")


def test_file_name_too_long_is_an_input_error(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "a" * 256
    assert main(["checkpoint", "ck", "-o", name]) == 2
    _one_error_line(capsys, f"{name}: cannot write: File name too long")


# --- internal errors that are input errors or findings ---------------------------------------------


def test_sarif_on_a_non_utf8_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_bytes((MIMO / "config.json").read_bytes())
    with open(os.fsencode(tmp_path) + b"/mod\xff.safetensors", "wb") as fh:
        fh.write(b"\x08\x00\x00\x00\x00\x00\x00\x00{x}     ")
    assert main(["checkpoint", str(tmp_path), "-f", "sarif"]) in (0, 1, 3)
    doc = json.loads(capsys.readouterr().out)
    uris = json.dumps(doc)
    assert "mod%FF.safetensors" in uris


def test_weight_block_size_zero_is_a_gap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = json.loads((DEEPSEEK / "config.json").read_text())
    cfg["quantization_config"]["weight_block_size"] = [0, 128]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert main(["checkpoint", str(tmp_path), "-f", "json"]) == 3
    gaps = json.loads(capsys.readouterr().out)["gaps"]
    assert {"analyzer": "checkpoint", "blocking": False, "path": "config.json",
            "message": "config.json#/quantization_config/weight_block_size: [0,128] has a block size of 0; ignored, "
                       "byte estimates use the 128x128 default"} in gaps


@pytest.mark.parametrize("line", ["PyTorch", "CUDA Driver Version", "sglang", "flashinfer_python", "GPU 0,1,2,3,4,5,6,7"])
def test_five_thousand_digit_number_in_an_env_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
    text = DUMP.read_text()
    start = text.index(f"\n{line}") + 1
    end = text.index("\n", start)
    head = "GPU " + "7" * 5000 + ": NVIDIA B200" if line.startswith("GPU") else f"{line}: {'1' * 5000}.0"
    dump = tmp_path / "big.txt"
    dump.write_text(text[:start] + head + text[end:])
    code = main(["preflight", "--env-dump", str(dump), "-f", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2, 3), err
    if code == 2:
        assert out == "" and err.count("\n") == 1


def _wheel(path: Path, members: dict[str, bytes], *, method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr("sglang/srt/server_args.py", b"class ServerArgs:\n    speculative_algorithm: str = None\n")
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _corrupt_member(path: Path, name: str) -> None:
    """Overwrite the middle of ``name``'s deflate stream with garbage (the zip directory stays valid)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 2, start + info.compress_size - 2):
        raw[i] = 0xFF
    path.write_bytes(bytes(raw))


def test_corrupt_deflate_stream_is_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whl = _wheel(tmp_path / "sglang-0.0.1-py3-none-any.whl", {"sglang/srt/x.py": os.urandom(3000).hex().encode()})
    _corrupt_member(whl, "sglang/srt/x.py")
    assert main(["sglang", str(whl), "-f", "json"]) in (0, 1, 3)
    gaps = json.loads(capsys.readouterr().out)["gaps"]
    assert any(g.get("path") == "sglang/srt/x.py" and "not examined" in g["message"] for g in gaps), gaps


def test_wheel_bytes_are_counted_as_inflated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound counts bytes actually inflated, reads lazily and stops there (a declared size can lie)."""
    from mtp_audit.engines.sglang.target import open_target
    from mtp_audit.sources import tree as tree_mod

    monkeypatch.setattr(tree_mod, "MAX_TREE_PY_BYTES", 3 * 1024 * 1024)
    body = b"x = 1\n" * (1024 * 1024 // 6)
    whl = _wheel(tmp_path / "sglang-0.0.1-py3-none-any.whl", {f"sglang/srt/m{i}.py": body for i in range(8)})
    t = open_target(whl)
    try:
        sizes = [len(t.read(rel) or b"") for rel in sorted(t.files)]
    finally:
        t.close()
    assert sum(sizes) <= 3 * 1024 * 1024
    assert sum(1 for s in sizes if s == 0) >= 5
    notes = [n for _, n in t.notes if "zip-bomb bound" in n]
    assert len(notes) == 1 and "later one(s) not examined" in notes[0]


def test_member_whose_declared_size_lies(tmp_path: Path) -> None:
    """zipfile stops inflating at the declared size, so a member declaring less than it holds fails its
    CRC check (a note), and one declaring more than the per-file limit is never inflated."""
    from mtp_audit.engines.sglang.target import open_target
    from mtp_audit.sources.tree import MAX_SOURCE_BYTES

    whl = _wheel(tmp_path / "w.whl", {"sglang/srt/big.py": b"y = 2\n" * 100_000, "sglang/srt/huge.py": b"z = 3\n"})
    t = open_target(whl)
    try:
        t.files["sglang/srt/big.py"].file_size = 10  # what a lying central directory would say
        t.files["sglang/srt/huge.py"].file_size = 1 << 40
        assert t.read("sglang/srt/big.py") is None
        assert t.read("sglang/srt/huge.py") is None
        assert t.read("sglang/srt/server_args.py") is not None
    finally:
        t.close()
    notes = dict(t.notes)
    assert notes["sglang/srt/big.py"].startswith("cannot read (BadZipFile")
    assert notes["sglang/srt/huge.py"] == f"{1 << 40} bytes, over the {MAX_SOURCE_BYTES}-byte limit; not examined"


# --- the library -----------------------------------------------------------------------------------


def test_preflight_accepts_str_and_path() -> None:
    from mtp_audit.preflight import preflight

    a = preflight(env_dumps=[str(DUMP)])
    b = preflight(env_dumps=[DUMP])
    c = preflight(env_dumps=str(DUMP))
    assert a.to_dict() == b.to_dict() == c.to_dict()
    facts = FIXTURES / "preflight" / "h200-live-facts.json"
    assert preflight(facts_file=str(facts)).to_dict() == preflight(facts_file=facts).to_dict()


def test_explain_cites_no_unshipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    from mtp_audit.report.rules import all_rules

    for rule in all_rules():
        assert main(["explain", rule.id]) == 0
        text = capsys.readouterr().out
        assert "shared/" not in text and "research/" not in text, rule.id
        assert rule.sources, rule.id


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["frobnicate"], "frobnicate: no such command (see 'mtp-audit --help')"),
        (["rules", "--analyzr", "x"], "--analyzr: no such option; did you mean --analyzer? (see 'mtp-audit rules --help')"),
        (["checkpoint"], "PATH|ORG/NAME[@REV]: missing argument (see 'mtp-audit checkpoint --help')"),
        (["checkpoint", "x", "-j", "0"], "--jobs / -j: 0 is not in the range 1<=x<=64 (see 'mtp-audit checkpoint --help')"),
        (["checkpoint", "x", "-o"], "-o: requires an argument"),
    ],
)
def test_click_usage_errors_follow_the_one_line_form(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    assert main(argv) == 2
    _one_error_line(capsys, expected)


def test_write_atomic_never_raises_oserror(tmp_path: Path) -> None:
    from mtp_audit.cli.outputs import write_atomic

    for bad in (tmp_path / ("b" * 300), tmp_path / "missing" / "x", Path("/proc/version")):
        with pytest.raises(InputError):
            write_atomic(bad, "x")


def test_second_output_failing_leaves_the_first_unwritten(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzz suite: --save-facts was written, then -o failed (exit 2 with a file written)."""
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", "facts.json", "-o", "none/x.txt"]) == 2
    _one_error_line(capsys, "none/x.txt: folder none does not exist")
    assert not Path("facts.json").exists()
    assert not [p for p in work.iterdir() if p.name.startswith(".mtp-audit-")]


def test_newline_in_a_file_name_stays_one_line(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzz suite: a file name holding a newline split the error over two lines."""
    assert main(["preflight", "--env-dump", "d.txt", "--save-facts", "a\nb", "-o", "a\nb"]) == 2
    _one_error_line(capsys, "a\\nb: --output and --save-facts name the same file; give them different files")
    assert main(["checkpoint", "x\ry"]) == 2
    _one_error_line(capsys, "x\\ry: no such file or folder")


def test_schema_knows_every_analyzer() -> None:
    """Found by the fuzz suite: vllm JSON reports failed report.schema.json (facts key 'vllm' not allowed)."""
    from mtp_audit.report.rules import ANALYZER_RULE_MODULES

    schema = json.loads((Path(__file__).resolve().parents[1] / "mtp_audit" / "schema" / "report.schema.json").read_text())
    assert set(schema["$defs"]["analyzer"]["enum"]) == set(ANALYZER_RULE_MODULES)


def test_installed_sglang_is_protected_when_no_target_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    (site / "sglang" / "srt").mkdir(parents=True)
    victim = site / "sglang" / "srt" / "server_args.py"
    victim.write_text("class ServerArgs:\n    speculative_algorithm: str = None\n")
    (site / "sglang" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    assert main(["sglang", "-o", str(victim)]) == 2
    _one_error_line(capsys, f"{victim}: would overwrite a file of the audited input {site / 'sglang'}; refusing to write the report there")
    assert victim.read_text().startswith("class ServerArgs")


def test_vllm_wheel_with_a_corrupt_deflate_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the long fuzz run: the vLLM reader let zlib.error through (exit 4)."""
    whl = tmp_path / "vllm-0.9.2-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("vllm/config/speculative.py", b"class SpeculativeConfig:\n    method: str = None\n"
                   + os.urandom(3000).hex().encode() + b"\n")
    _corrupt_member(whl, "vllm/config/speculative.py")
    code = main(["vllm", str(whl), "-f", "json"])
    out, err = capsys.readouterr()
    assert code in (2, 3), err
    if code == 2:
        assert out == "" and err.count("\n") == 1


def test_deeply_nested_server_args_is_not_an_internal_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzz suite after the value-flow pass (engines/sglang/flow.py) landed: 200 nested brackets
    overflow the parser's stack (MemoryError), which that pass let through (exit 4)."""
    srt = tmp_path / "sglang" / "srt"
    srt.mkdir(parents=True)
    (srt / "server_args.py").write_text("x = " + "[" * 200 + "]" * 200 + "\n    def __post_init__(self):\n"
                                        "        if self.speculative_algorithm == \"NEXTN\":\n"
                                        "            self.speculative_algorithm = \"EAGLE\"\n")
    code = main(["sglang", str(tmp_path), "-f", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 3), err
    json.loads(out)


def test_a_file_read_through_a_symlink_protects_its_target(tmp_path: Path) -> None:
    """The run's read list names a symlink (the index of files read is built from one ``lstat`` per name, ``stat``
    only for links): writing to the link's target, to the link itself, or to a hard link of a plain file read is
    refused; a new file beside them is not."""
    target = tmp_path / "real" / "server_args.py"
    target.parent.mkdir()
    target.write_text("x = 1\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked.py").symlink_to(target)
    (tree / "plain.py").write_text("y = 2\n")
    os.link(tree / "plain.py", tmp_path / "hard.py")
    read = [str(tree / "linked.py"), str(tree / "plain.py")]
    for out in (target, tree / "linked.py", tmp_path / "hard.py"):
        with pytest.raises(InputError, match="a file this audit read"):
            check_outputs([], {"--output": out}, read=read)
    check_outputs([], {"--output": tmp_path / "real" / "new.json"}, read=read)


def test_memoised_real_paths_are_os_realpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The output guard resolves the files a run read through per-folder memos (one ``lstat`` per folder and file);
    every spelling below (absolute, relative, ``.``, ``..``, a symlinked folder, a symlink back up) resolves as
    ``os.path.realpath`` does."""
    from mtp_audit.cli.protect import _realpath

    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "c" / "up").symlink_to("../..")
    (tmp_path / "a" / "b" / "c" / "f.py").write_text("")
    monkeypatch.chdir(tmp_path)
    names = [f"{tmp_path}/a/b/c/f.py", f"{tmp_path}/lnk/c/f.py", "a/b/c/f.py", "lnk/c/f.py", "./a/./b/c/f.py",
             "a/b/c/up/b/c/f.py", f"{tmp_path}/a/b/c/up/../b/c/f.py", "a/b/../b/c/f.py", "lnk/c", "a"]
    memo: dict[str, str] = {}
    assert [_realpath(n, memo) for n in names] == [os.path.realpath(n) for n in names]
