"""Bad input found by a fresh-user run: each gives one line and exit 2 (or an honest verdict), never a
hang, a traceback, unbounded memory, or a destroyed file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main

MIMO = FIXTURES / "checkpoint" / "jj8127--mimo_kor"
NEMOTRON = FIXTURES / "checkpoint" / "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def _run(*args: str, timeout: float = 60, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    env = {**os.environ, "PYTHONPATH": str(FIXTURES.parent)}
    return subprocess.run([sys.executable, "-m", "mtp_audit", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, env=env)


def test_fifo_config_does_not_hang(tmp_path: Path) -> None:
    shutil.copy(MIMO / "model.safetensors.index.json", tmp_path)
    os.mkfifo(tmp_path / "config.json")
    proc = _run("checkpoint", str(tmp_path), timeout=20)
    assert proc.returncode == 2
    assert proc.stderr == f"mtp-audit: error: {tmp_path}/config.json: is not a regular file, expected a JSON file\n"


def test_fifo_shard_is_not_read(tmp_path: Path) -> None:
    shutil.copy(MIMO / "config.json", tmp_path)
    shutil.copy(MIMO / "model.safetensors.index.json", tmp_path)
    os.mkfifo(tmp_path / "model-00001-of-00004.safetensors")
    proc = _run("checkpoint", str(tmp_path), "-f", "json", timeout=20)
    doc = json.loads(proc.stdout)
    assert any("is a FIFO, expected a regular file; not read" in g["message"] for g in doc["gaps"])


def test_fifo_env_dump_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "dump.txt")
    proc = _run("preflight", "--env-dump", str(tmp_path / "dump.txt"), timeout=20)
    assert proc.returncode == 2
    assert proc.stderr == f"mtp-audit: error: {tmp_path / 'dump.txt'}: is a FIFO, expected a regular file; not read\n"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num_nextn_predict_layers", 1_000_000, "/num_nextn_predict_layers: 1000000 MTP layers is implausible (more than 64); not audited"),
        ("n_routed_experts", 10**9, "/n_routed_experts: 1000000000 experts is implausible (more than 65536); not audited"),
    ],
)
def test_implausible_config_values_are_refused_quickly(tmp_path: Path, capsys, key, value, message) -> None:  # type: ignore[no-untyped-def]
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 2, "num_nextn_predict_layers": 1, key: value}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert main(["checkpoint", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"mtp-audit: error: {tmp_path}/config.json: {message}\n"


def test_config_with_infinity_is_read(capsys) -> None:  # type: ignore[no-untyped-def]
    """nvidia Nemotron-3-Super config.json line 62 holds a bare Infinity (transformers writes it)."""
    assert "Infinity" in (NEMOTRON / "config.json").read_text()
    assert main(["checkpoint", str(NEMOTRON), "-f", "json"]) == 3  # MTP declared, config-only
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["checkpoint"]["summary"]["mtp_layers_declared"] == 1
    assert doc["facts"]["checkpoint"]["summary"]["architecture"] == "NemotronHForCausalLM"


def test_weight_map_with_null_and_float_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    shutil.copy(MIMO / "config.json", tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": {"0": null, "": 6.0}}')
    assert main(["checkpoint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mtp-audit: error: {tmp_path}/model.safetensors.index.json: /weight_map/") and err.count("\n") == 1


def test_directory_named_config_json(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    shutil.copy(MIMO / "model.safetensors.index.json", tmp_path)
    (tmp_path / "config.json").mkdir()
    assert main(["checkpoint", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"mtp-audit: error: {tmp_path}/config.json: is a directory, expected a JSON file\n"


def test_config_json_target_reads_the_index_beside_it(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["checkpoint", str(MIMO / "config.json"), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["checkpoint"]["summary"]["mtp_tensors"] == 16  # 16 model.mtp_layers.0.* in the real index


def test_output_inside_the_audited_folder_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    ckpt = tmp_path / "m"
    shutil.copytree(MIMO, ckpt)
    before = (ckpt / "config.json").read_bytes()
    assert main(["checkpoint", str(ckpt), "-o", str(ckpt / "config.json")]) == 2
    assert capsys.readouterr().err == (
        f"mtp-audit: error: {ckpt}/config.json: would overwrite a file of the audited input {ckpt}; "
        "refusing to write the report there\n"
    )
    assert (ckpt / "config.json").read_bytes() == before
    assert main(["checkpoint", str(ckpt), "-o", str(ckpt / "mtp-report.txt")]) == 0  # a new file beside it is fine


def test_output_over_an_env_dump_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    dump = tmp_path / "dump.txt"
    shutil.copy(FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt", dump)
    before = dump.read_bytes()
    assert main(["preflight", "--env-dump", str(dump), "-o", str(dump)]) == 2
    assert capsys.readouterr().err == f"mtp-audit: error: {dump}: is the audited input {dump}; refusing to write the report there\n"
    assert dump.read_bytes() == before


def test_output_through_symlink_and_device(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    (tmp_path / "link.json").symlink_to(real)
    assert main(["checkpoint", str(MIMO), "-f", "json", "-o", str(tmp_path / "link.json")]) == 0
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads(real.read_text())["schema_version"] == 1
    assert oct(real.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert main(["checkpoint", str(MIMO), "-o", os.devnull]) == 0
    assert Path(os.devnull).is_char_device()


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_full_stdout_is_an_input_error() -> None:
    with open("/dev/full", "w") as full:
        proc = _run("checkpoint", str(MIMO), stdout=full)
    assert proc.returncode == 2
    assert proc.stderr == "mtp-audit: error: stdout: cannot write the report: No space left on device\n"


def test_usage_errors_are_one_line() -> None:
    proc = _run("checkpoint", str(MIMO), "--fail-on", "bogus")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("mtp-audit: error: --fail-on: 'bogus' is not one of")
    assert proc.stderr.endswith("(see 'mtp-audit checkpoint --help')\n")


def test_own_report_is_not_an_env_dump(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rep = tmp_path / "rep.txt"
    # the H200 with SGLang's version unknown: MTP200 is a warning (SGLang >= 0.5.13 falls back to Marlin), exit 0
    assert main(["preflight", "--facts", str(FIXTURES / "preflight" / "h200-live-facts.json"), "-o", str(rep)]) == 0
    capsys.readouterr()
    assert main(["preflight", "--env-dump", str(rep)]) == 2
    assert capsys.readouterr().err == (
        f"mtp-audit: error: {rep}: is an mtp-audit report, not an environment dump "
        "(pass the output of 'python3 -m sglang.check_env' or 'nvidia-smi')\n"
    )


@pytest.mark.parametrize("edit, message", [
    (lambda g: g[0]["compute_capability"].__setitem__("value", "ten"), "GPU 0: compute_capability ten is not two integers"),
    (lambda g: g[0]["compute_capability"].__setitem__("value", [10**30, 0]), "is not two integers (major 0-20, minor 0-9)"),
    (lambda g: g[0]["memory_bytes"].__setitem__("value", -5), "GPU 0: memory_bytes -5 is not a byte count"),
    (lambda g: g.extend(g * 1100), "gpus lists 1,101 GPUs (at most 1024 in one facts file)"),
])
def test_facts_file_with_impossible_gpu_values_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, message: str) -> None:  # type: ignore[no-untyped-def]
    """Found by a new user: compute capability "ten" was 'internal error: ValueError' (exit 4); [10**30, 0] read as a
    GPU that 'can run native FP4' (exit 0); 100,000 GPUs ran for minutes. A facts file is data: a value no GPU has
    is bad input."""
    import json

    from mtp_audit.cli.main import main

    doc = json.loads((Path(__file__).resolve().parents[1] / "fixtures/preflight/h200-live-facts.json").read_text())
    edit(doc["gpus"])
    f = tmp_path / "facts.json"
    f.write_text(json.dumps(doc))
    assert main(["preflight", "--facts", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"mtp-audit: error: {f}: ") and message in err
