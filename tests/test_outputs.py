"""Several outputs in one run, the format from the -o suffix, display filters, --env-dump - (standard input)."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main
from mtp_audit.cli.outputs import output_plan
from mtp_audit.errors import InputError

REAP = str(FIXTURES / "checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
DUMP = FIXTURES / "preflight/envdumps/sglang-13198.txt"  # MTP209 error; MTP212 and MTP228 info (no launch given)
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())


@pytest.mark.parametrize("fmts, outs, plan", [
    ((), (), [("text", "-")]),
    (("json",), (), [("json", "-")]),
    (("sarif", "json"), ("a.sarif", "b.json"), [("sarif", "a.sarif"), ("json", "b.json")]),
    ((), ("a.sarif", "b.json", "c.md", "d.txt", "e.sarif.json"),
     [("sarif", "a.sarif"), ("json", "b.json"), ("markdown", "c.md"), ("text", "d.txt"), ("sarif", "e.sarif.json")]),
    # the README's example: suffixes first, the -f to the output whose name tells nothing
    (("text",), ("report.sarif", "report.json", "-"), [("sarif", "report.sarif"), ("json", "report.json"), ("text", "-")]),
    (("text",), ("a.json", "b.txt"), [("json", "a.json"), ("text", "b.txt")]),
    ((), ("-",), [("text", "-")]),
    ((), ("report",), [("text", "report")]),  # one plain output: the default format, as before
    ((), ("/dev/null",), [("text", "/dev/null")]),
])
def test_output_plan_pairs_in_order(fmts, outs, plan) -> None:
    assert output_plan(fmts, outs) == plan


@pytest.mark.parametrize("fmts, outs, message", [
    (("sarif", "json"), (), "2 formats but no --output"),
    (("sarif", "json", "text"), ("a", "b"), "3 formats but 2 output(s)"),
    ((), ("a.json", "report"), "cannot tell the format from the suffix"),
])
def test_output_plan_never_drops_a_pair(fmts, outs, message) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        output_plan(fmts, outs)


def test_two_outputs_in_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, c = tmp_path / "a.sarif", tmp_path / "b.json", tmp_path / "c.md"
    assert main(["checkpoint", REAP, "-f", "sarif", "-o", str(a), "-f", "json", "-o", str(b), "-o", str(c)]) == 1
    jsonschema.validate(json.loads(a.read_text()), SARIF_SCHEMA)
    assert [f["rule_id"] for f in json.loads(b.read_text())["findings"]] == ["MTP001"]
    assert c.read_text().startswith("# mtp-audit report")
    err = capsys.readouterr().err
    assert err.startswith("FAIL: config.json declares 1 MTP layer") and f"{a}, {b}, {c}" in err


def test_a_failing_pair_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.json"
    assert main(["checkpoint", REAP, "-o", str(a), "-o", str(tmp_path / "report")]) == 2
    assert not a.exists()
    assert "cannot tell the format from the suffix" in capsys.readouterr().err
    assert main(["checkpoint", REAP, "-o", str(a), "-o", str(a)]) == 2  # the same file twice
    assert "name the same file" in capsys.readouterr().err and not a.exists()


def test_filters_change_what_is_listed_not_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["preflight", "--env-dump", str(DUMP)]
    rc_all = main(args)
    full = capsys.readouterr().out
    assert main([*args, "--severity", "error"]) == rc_all == 1
    errors_only = capsys.readouterr().out
    assert errors_only.splitlines()[0] == full.splitlines()[0]  # the verdict is the same
    assert errors_only.splitlines()[-1] == full.splitlines()[-1]  # so are the counts
    assert " info: " in full and " info: " not in errors_only
    assert "not listed (--severity error); the verdict and the counts include them" in errors_only
    assert main([*args, "--select", "MTP228"]) == 1
    selected = capsys.readouterr().out
    listed = [line.split(": ")[1].split()[0] for line in selected.splitlines()[1:] if ": MTP" in line]
    assert listed == ["MTP228"] and "2 findings not listed (--select MTP228)" in selected
    assert main([*args, "-q"]) == 1
    quiet = capsys.readouterr().out
    assert quiet.splitlines()[0] == full.splitlines()[0] and quiet.splitlines()[-1] == full.splitlines()[-1]
    assert not [line for line in quiet.splitlines() if ": MTP2" in line and " error: " in line]
    assert "not listed (-q)" in quiet


def test_severity_filter_in_json_and_sarif(tmp_path: Path) -> None:
    j, s = tmp_path / "r.json", tmp_path / "r.sarif"
    assert main(["preflight", "--env-dump", str(DUMP), "--severity", "error", "-o", str(j), "-o", str(s)]) == 1
    doc = json.loads(j.read_text())
    assert {f["severity"] for f in doc["findings"]} == {"error"}
    assert doc["summary"]["findings"] == {"error": 1, "warning": 0, "info": 2}  # the counts still include the info findings
    sarif = json.loads(s.read_text())
    assert {r["level"] for r in sarif["runs"][0]["results"]} == {"error"}


def test_env_dump_from_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    class In(io.TextIOWrapper):
        def isatty(self) -> bool:
            return False

    monkeypatch.setattr("sys.stdin", In(io.BytesIO(DUMP.read_bytes())))
    assert main(["preflight", "--env-dump", "-", "-f", "json"]) == 1
    from_stdin = json.loads(capsys.readouterr().out)
    assert main(["preflight", "--env-dump", str(DUMP), "-f", "json"]) == 1
    from_file = json.loads(capsys.readouterr().out)
    assert from_stdin["findings"] == from_file["findings"]
    assert from_stdin["targets"] == [{"analyzer": "preflight", "name": "env dump -"}]
    monkeypatch.setattr("sys.stdin", In(io.BytesIO(b"")))
    assert main(["preflight", "--env-dump", "-"]) == 2
    assert "is empty" in capsys.readouterr().err


def test_o_dev_stdin_never_replaces_the_file_read_on_standard_input(tmp_path):
    """`mtp-audit log - -o /dev/stdin < my.log` replaced my.log with the report."""
    import subprocess
    import sys

    log = tmp_path / "my.log"
    log.write_text("INFO 01-01 00:00:00 [metrics.py:1] SpecDecoding metrics: Mean acceptance length: 2.50, Accepted: 3 tokens, Drafted: 4 tokens\n")
    before = log.read_bytes()
    with log.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "mtp_audit", "log", "-", "-o", "/dev/stdin"], stdin=stdin,
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "standard input" in proc.stderr
    assert log.read_bytes() == before


@pytest.mark.parametrize("fmts, outs, problem", [
    (("text",), ("x.sarif",), "-f text contradicts the suffix"),  # text written into a .sarif file, exit 0, before
    (("json",), ("a.sarif", "b.md"), "-f json has no output"),  # json written into a.sarif, before
    (("text", "json"), ("a.json", "b.txt"), "-f text contradicts the suffix"),
])
def test_output_plan_never_writes_a_format_its_name_contradicts(fmts, outs, problem) -> None:
    from mtp_audit.cli.outputs import output_plan

    with pytest.raises(InputError, match=problem):
        output_plan(fmts, outs)


def test_select_of_no_rule_is_refused(capsys):
    """--select FOO hid every finding and exited 0; like --ignore, a value that names no rule is exit 2."""
    assert main(["checkpoint", REAP, "--select", "FOO"]) == 2
    assert "--select: FOO: no rule id starts with it" in capsys.readouterr().err


def test_a_device_that_refuses_the_report_leaves_no_file_written(tmp_path: Path) -> None:
    """Found by a new user: ``-o a.json -f sarif -o /dev/full`` exited 2 ('No space left on device') with a.json
    already written. Devices are written before files are put in place."""
    from mtp_audit.cli.main import main

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    out = tmp_path / "a.json"
    code = main(["checkpoint", str(Path(__file__).resolve().parents[1] / "fixtures/checkpoint/jj8127--mimo_kor"),
                 "-o", str(out), "-f", "sarif", "-o", "/dev/full"])
    assert code == 2
    assert list(tmp_path.iterdir()) == []


def _closed(fd: int):  # noqa: ANN202 - a preexec function
    import os

    return lambda: os.close(fd)


@pytest.mark.parametrize(("closed", "extra", "code", "line"), [
    (1, [], 2, "mtp-audit: error: stdout: cannot write the report: standard output is closed"),
    (1, ["-o", "{out}"], 1, None),      # the report goes to the file; nothing needs stdout
    (2, [], 1, None),                   # the audit's own exit code, with nowhere to say it
])
def test_a_closed_standard_stream_is_one_line_and_the_audit_exit_code(tmp_path: Path, closed: int, extra: list[str],
                                                                       code: int, line: str | None) -> None:
    """Started with ``>&-`` or ``2>&-`` (cron, a CI step): stdout closed with no ``-o`` is one line, exit 2; with
    ``-o FILE`` the file is written and the exit code is the audit's (MTP001: 1); stderr closed changes nothing."""
    import subprocess
    import sys

    out = tmp_path / "r.txt"
    argv = [sys.executable, "-m", "mtp_audit", "checkpoint", REAP, *[a.format(out=out) for a in extra]]
    proc = subprocess.run(argv, capture_output=False, stdout=None if closed == 1 else subprocess.PIPE,
                          stderr=subprocess.PIPE if closed == 1 else subprocess.DEVNULL, text=True,
                          preexec_fn=_closed(closed), timeout=120)
    assert proc.returncode == code
    if closed == 1:
        assert "Traceback" not in proc.stderr
        if line is not None:
            assert proc.stderr.strip() == line
    if extra:
        assert "MTP001" in out.read_text()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_without_a_reader_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a new user: ``-o FIFO`` with no process reading it blocked for ever in ``open`` (with SIGTERM held
    back during the commit). It is now one line and exit 2, nothing written; with a reader the report goes through
    (the text report of this fixture fits in the pipe's buffer, so the reader can drain it afterwards)."""
    from mtp_audit.cli.main import main

    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    ck = str(FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
    assert main(["checkpoint", ck, "-o", str(fifo)]) == 2
    assert capsys.readouterr().err == f"mtp-audit: error: {fifo}: is a FIFO that no process is reading; nothing written\n"
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert main(["checkpoint", ck, "-o", str(fifo), "-f", "text"]) == 1
        assert b"MTP001" in os.read(reader, 1 << 16)
    finally:
        os.close(reader)


def test_stdout_only_plan_examines_no_input(tmp_path: Path) -> None:
    """Standard output cannot overwrite an input: a plan without a file output never looks at the inputs (the 163
    shards a checkpoint audit read cost an ``lstat`` and a real path each); a file output still does."""
    from mtp_audit.cli.protect import check_outputs

    looked: list[str] = []

    def inputs(tag: str):
        looked.append(tag)
        yield tmp_path

    check_outputs(inputs("protected"), {"--output": None, "--output #2": "-"}, read=inputs("read"))
    assert looked == []
    check_outputs(inputs("protected"), {"--output": "-", "--output #2": tmp_path.parent / "elsewhere.json"},
                  read=inputs("read"))
    assert looked == ["protected", "read"]
    with pytest.raises(InputError, match="both go to standard output"):
        check_outputs(inputs("protected"), {"--output": "-", "--output #2": "-"})
