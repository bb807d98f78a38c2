"""CLI, bad input, live collection failure modes (nvidia-smi missing / hanging, NVML errors), facts
round-trip, and every rule's examples."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.preflight.collect import (
    collect_gpus,
    collect_live,
    read_torch_version_py,
)
from mtp_audit.preflight.examples import run_example
from mtp_audit.preflight.facts import MachineFacts
from mtp_audit.preflight.rules import preflight_rules

F = Path(__file__).resolve().parent.parent / "fixtures" / "preflight"


def run_cli(args, capsys):
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("content,msg", [(b"", "is empty"), (b"\x00\x01\x02binary\x00", "is a binary file"), (b"just some notes\n", "not a recognised environment dump")])
def test_bad_dump_one_line_exit_2(tmp_path, capsys, content, msg):
    p = tmp_path / "d.txt"
    p.write_bytes(content)
    rc, out, err = run_cli(["preflight", "--env-dump", str(p)], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mtp-audit: error: ") and msg in err


def test_missing_dump_and_conflicting_sources(tmp_path, capsys):
    rc, _, err = run_cli(["preflight", "--env-dump", str(tmp_path / "nope.txt")], capsys)
    assert rc == 2 and "no such file" in err
    p = tmp_path / "f.json"
    p.write_text("{}")
    rc, _, err = run_cli(["preflight", "--env-dump", str(p), "--facts", str(p)], capsys)
    assert rc == 2 and "either --facts or --env-dump" in err
    rc, _, err = run_cli(["preflight", "--facts", str(p)], capsys)
    assert rc == 2 and "not an mtp-audit facts document" in err


def test_env_dump_json_and_exit_codes(capsys):
    rc, out, _ = run_cli(["preflight", "--env-dump", str(F / "envdumps" / "pytorch-150733.txt"), "-f", "json"], capsys)
    d = json.loads(out)
    assert rc == 1  # MTP203: torch cu126 on an RTX 5090 D
    assert [f["rule_id"] for f in d["findings"] if f["severity"] == "error"] == ["MTP203"]
    assert d["facts"]["preflight"]["verdicts"][0]["native_fp4"] == "not capable"
    rc, _, _ = run_cli(["preflight", "--env-dump", str(F / "envdumps" / "flashinfer-4549.txt")], capsys)
    assert rc == 3  # no GPU in a truncated dump: inconclusive, not a pass


def test_report_validates_against_schema(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parent.parent / "mtp_audit" / "schema" / "report.schema.json").read_text())
    for dump in ("sglang-24834.txt", "k8s-device-plugin-1482.txt"):
        _, out, _ = run_cli(["preflight", "--env-dump", str(F / "envdumps" / dump), "-f", "json", "--",
                             "python", "-m", "sglang.launch_server", "--model-path", "x", "--quantization", "modelopt_fp4"], capsys)
        jsonschema.validate(json.loads(out), schema)


def test_save_and_replay_facts(tmp_path, capsys):
    saved = tmp_path / "facts.json"
    rc1, out1, _ = run_cli(["preflight", "--env-dump", str(F / "envdumps" / "sglang-11208.txt"), "--save-facts", str(saved), "-f", "json"], capsys)
    rc2, out2, _ = run_cli(["preflight", "--facts", str(saved), "-f", "json"], capsys)
    a, b = json.loads(out1), json.loads(out2)
    assert rc1 == rc2 and a["findings"] == b["findings"]
    assert a["facts"]["preflight"]["machine"] == b["facts"]["preflight"]["machine"]
    live = json.loads((F / "h200-live-facts.json").read_text())
    assert MachineFacts.from_dict(live).to_dict() == live


def test_nvidia_smi_missing_and_hanging():
    def missing(cmd, timeout):
        raise FileNotFoundError(cmd[0])

    def hanging(cmd, timeout):
        raise subprocess.TimeoutExpired(cmd, timeout)

    gpus, gl, drv, cuda, notes = collect_gpus(run=missing, nvml_loader=lambda: None)
    assert gpus == () and gl.missing == "NVML unavailable and nvidia-smi not found"
    gpus, gl, drv, cuda, notes = collect_gpus(run=hanging, nvml_loader=lambda: None, timeout=2)
    assert gpus == () and "did not answer within 2 s" in gl.missing
    facts = collect_live(run=hanging, nvml_loader=lambda: None, timeout=2)
    from mtp_audit.preflight import preflight

    r = preflight(facts=facts)
    assert r.facts["preflight"]["summary"]["verdict"] == "unknown" and r.inconclusive
    assert any("did not answer within 2 s" in g.message for g in r.gaps)


class FakeNvml:
    """An NVML whose memory query fails (GB10 style) and whose second GPU handle errors."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return b"580.95.05"

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return 13000

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        if i == 1:
            raise self.NVMLError("GPU is lost")
        return i

    def nvmlDeviceGetName(self, h):
        return "NVIDIA GB10"

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return (12, 1)

    def nvmlDeviceGetMemoryInfo(self, h):
        raise self.NVMLError("Not Supported")


def test_nvml_errors_become_missing_facts():
    gpus, gl, drv, cuda, notes = collect_gpus(nvml_loader=FakeNvml, run=lambda c, t: (_ for _ in ()).throw(AssertionError("no nvidia-smi")))
    assert drv.value == "580.95.05" and cuda.value == "13.0" and gl.value == 2
    assert gpus[0].cc == (12, 1) and gpus[0].memory_bytes.missing == "NVML error: Not Supported"
    assert gpus[1].compute_capability.missing == "NVML error: GPU is lost"
    assert notes == ["NVML: GPU 1: GPU is lost"]

    class Broken:
        def nvmlInit(self):
            raise RuntimeError("NVML Shared Library Not Found")

    def smi(cmd, timeout):
        out = "0, NVIDIA H200, 9.0, 580.159.04, 143771 MiB\n" if len(cmd) > 1 and "--query-gpu" in cmd[1] else "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\n"
        return subprocess.CompletedProcess(cmd, 0, out, "")

    gpus, gl, drv, cuda, notes = collect_gpus(nvml_loader=Broken, run=smi)
    assert gpus[0].cc == (9, 0) and drv.value == "580.159.04" and cuda.value == "13.0"
    assert "NVML failed (RuntimeError: NVML Shared Library Not Found)" in notes[0]


def test_torch_version_py_text():
    v, c = read_torch_version_py("from typing import Optional\n__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    assert v.value == "2.11.0+cu130" and c.value == "13.0"
    v, c = read_torch_version_py("__version__ = '2.9.1'\ncuda = None\n")
    assert v.value == "2.9.1" and "CPU or ROCm" in c.missing


def test_launch_parsing_errors(capsys):
    rc, _, err = run_cli(["preflight", "--env-dump", str(F / "envdumps" / "sglang-24834.txt"), "--", "python -m 'sglang.launch_server"], capsys)
    assert rc == 2 and "cannot split" in err


def test_every_rule_example():
    assert [r.id for r in preflight_rules()] == [f"MTP2{i:02d}" for i in range(34)] + ["MTP236", "MTP237"] + [f"MTP2{i:02d}" for i in range(40, 50)]
    for rule in preflight_rules():
        assert any(e.fires for e in rule.examples) and any(not e.fires for e in rule.examples), rule.id
        assert rule.basis in ("code", "documentation", "bug report")
        if rule.basis == "bug report":
            assert "based on public bug reports" in rule.doc()
        for ex in rule.examples:
            with tempfile.TemporaryDirectory() as d:
                ex.materialize(Path(d))
                rep = run_example(Path(d), ex)
                fired = any(f.rule_id == rule.id for f in rep.findings)
                assert fired is ex.fires, (rule.id, ex.note, [f.message for f in rep.findings])


@pytest.mark.parametrize(("key", "value", "said"), [("gpus", "lots", "'gpus' is a string, expected a list"),
                                                    ("packages", [1], "'packages' is a list, expected an object"),
                                                    ("gpus", [{"name": {}}], "'gpus'[0] is not a GPU object with an 'index'")])
def test_a_facts_file_of_the_wrong_shape_says_which_key(tmp_path, capsys, key, value, said):
    """Found by a fresh-user run: '"gpus": "lots"' said "string indices must be integers, not 'str'"."""
    doc = json.loads((F / "h200-live-facts.json").read_text())
    doc[key] = value
    bad = tmp_path / "facts.json"
    bad.write_text(json.dumps(doc))
    rc, out, err = run_cli(["preflight", "--facts", str(bad)], capsys)
    assert rc == 2 and err.count("\n") == 1 and said in err and "facts.json" in err, err
