"""What a ``mtp-audit checkpoint DIR`` process imports: modules a local checkpoint audit never uses stay unloaded,
at start-up and during the run (docs/checkpoint.md, "Third round: Imports").

Each run is a fresh interpreter (a subprocess), so what the test session itself imported does not count. The
checkpoints are the metadata-only and the header-only-shard synthetic checkpoints of a real spec (DeepSeek-V3's
names, dtypes and shapes; Qwen3.5-397B-NVFP4's with its ``hf_quant_config.json`` exclude list), audited from an empty
folder (no ``pyproject.toml`` to read), in every report format.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mtp_audit.synth.shards import write_checkpoint

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "checkpoint"

#: Modules a local safetensors checkpoint audit with the default settings must not import, each with the one place
#: that needs it.
NOT_IMPORTED = (
    "datetime",  # today's date, for a settings file's ignore with an expiry (report.settings.resolve)
    "tomllib",  # a pyproject.toml or --config file (report.settings_file)
    "shlex",  # splitting a launch command (engines.argv, engines.registry.engine_for)
    "click",  # anything the fast path declines (cli.main)
    "mtp_audit.engines.argv",
    "mtp_audit.engines.release_keywords",  # audit_launch's keywords, for type checkers
    "mtp_audit.known",  # MtpBytes.known
    "mtp_audit.checkpoint.typed_gguf",  # a GGUF audit's typed models
    "mtp_audit.report.ignores",  # a settings file's ignores and overrides, --ignore
    "mtp_audit.launch",
    "mtp_audit.preflight",
    "mtp_audit.engines.base",
    "mtp_audit.engines.sglang.launch",
    "mtp_audit.engines.vllm.launch",
)

#: Per fixture, more that its audit does not need: DeepSeek-V3 ships one MTP layer and is FP8, so neither MTP017's nor
#: MTP018's engine rows are read (Qwen3.5-397B-NVFP4 is FP4: MTP018 reads its rows).
NOT_IMPORTED_FOR = {"deepseek-ai--DeepSeek-V3": ("mtp_audit.checkpoint.engine_rows",),
                    "nvidia--Qwen3.5-397B-A17B-NVFP4": ()}

_RUN = """
import json, sys
from mtp_audit.cli.fast import main
code = main(["checkpoint", sys.argv[1], "-f", sys.argv[2], "-o", sys.argv[3]])
print(json.dumps([code, sorted(sys.modules)]))
"""


def _imported(checkpoint: Path, fmt: str, tmp_path: Path) -> tuple[int, set[str]]:
    """Exit code and the modules loaded by one ``mtp-audit checkpoint`` run in a fresh interpreter."""
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    out = subprocess.run([sys.executable, "-c", _RUN, str(checkpoint), fmt, str(tmp_path / f"report.{fmt}")],
                         capture_output=True, text=True, check=True, cwd=cwd,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MTP_AUDIT_CACHE_DIR": ""})
    code, modules = json.loads(out.stdout.splitlines()[-1])
    return code, set(modules)


@pytest.mark.parametrize("fixture", ["deepseek-ai--DeepSeek-V3", "nvidia--Qwen3.5-397B-A17B-NVFP4"])
@pytest.mark.parametrize("shards", [False, True], ids=["metadata-only", "header-only-shards"])
def test_a_local_checkpoint_audit_imports_only_what_it_uses(fixture: str, shards: bool, tmp_path: Path) -> None:
    src = FIXTURES / fixture
    ckpt = tmp_path / "ckpt"
    got = write_checkpoint(ckpt, json.loads((src / "spec.json").read_text()), shards=shards)
    for name in ("config.json", "hf_quant_config.json"):
        if (src / name).exists():
            shutil.copy(src / name, ckpt / name)
    assert got["tensors"] > 1000
    for fmt in ("text", "json", "markdown", "sarif"):
        code, modules = _imported(ckpt, fmt, tmp_path)
        assert code in (0, 1), (fmt, code)
        assert "mtp_audit.checkpoint.typed" in modules and "mtp_audit.engines.sglang.heads" in modules  # the run ran
        assert sorted(m for m in (*NOT_IMPORTED, *NOT_IMPORTED_FOR[fixture]) if m in modules) == [], fmt


def test_the_list_is_live(tmp_path: Path) -> None:
    """The guard can fail: a settings file with a dated ignore in the folder the command runs from loads the
    settings reader, the ignores and ``datetime``."""
    ckpt = tmp_path / "ckpt"
    write_checkpoint(ckpt, json.loads((FIXTURES / "deepseek-ai--DeepSeek-V3" / "spec.json").read_text()), shards=False)
    shutil.copy(FIXTURES / "deepseek-ai--DeepSeek-V3" / "config.json", ckpt / "config.json")
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "pyproject.toml").write_text(
        '[tool.mtp-audit]\nignore = [{ rule = "MTP006", reason = "known", expires = 2999-01-01 }]\n')
    code, modules = _imported(ckpt, "text", tmp_path)
    assert code in (0, 1)
    assert {"tomllib", "datetime", "mtp_audit.report.ignores"} <= modules
