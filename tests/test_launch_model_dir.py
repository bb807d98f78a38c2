"""``--model-dir SRC=DST``: a command path is normalised in the container's namespace before it is mapped, and one
written under SRC that leaves it (``/models/../../etc`` is ``/etc`` in the container) is not read anywhere here."""

from __future__ import annotations

from conftest import sglang_wheel

from mtp_audit.cli.main import main
from mtp_audit.launch.analyzers import map_model_dir
from mtp_audit.synth.launch import checkpoint_files


def test_map_normalises_in_the_container_namespace() -> None:
    assert map_model_dir("/models/../../../../etc", [("/models", "/data/m")]) is None
    assert map_model_dir("/models/x/../ckpt", [("/models", "/data/m")]) == "/data/m/ckpt"
    assert map_model_dir("/models/./ckpt/", [("/models/", "/data/m")]) == "/data/m/ckpt"
    assert map_model_dir("/other/../models/ckpt", [("/models", "/data/m")]) == "/data/m/ckpt"
    assert map_model_dir("/etc", [("/models", "/data/m")]) == "/etc"  # not written under SRC: unchanged


def test_a_path_leaving_src_is_could_not_tell_and_not_opened(tmp_path, capsys) -> None:
    for rel, text in checkpoint_files(str(tmp_path / "ckpt")).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    # a checkpoint one level above DST: the escaping path would reach it by prefix replacement
    dst = tmp_path / "models"
    dst.mkdir()
    base = ["launch", "--no-machine", "--sglang", str(sglang_wheel("0.5.9")), "--model-dir", f"/models={dst}", "--",
            "python", "-m", "sglang.launch_server", "--speculative-algorithm", "NEXTN", "--model-path"]
    assert main([*base, "/models/../ckpt"]) == 3
    out = capsys.readouterr().out
    assert ("[launch, blocking] --model-path /models/../ckpt: written under --model-dir /models but it leaves that folder "
            "in the container (/ckpt), so it is not read here") in out
    assert "Qwen3_5ForCausalLMMTP" not in out  # the checkpoint outside DST was not read
