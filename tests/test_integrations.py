"""The files people copy into their repositories: the pre-commit hooks (``.pre-commit-hooks.yaml``) and the
composite GitHub Action (``action.yml``), run here the way pre-commit and the Actions runner run them, on
this repository's fixtures."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, sglang_wheel
from mtp_audit.cli.hook import launch_commands
from test_sarif_github import github_problems

BIN = Path(sys.executable).parent
HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
DUMP = "fixtures/preflight/envdumps/sglang-13198.txt"


def _repo_files() -> list[str]:
    return [p.relative_to(REPO).as_posix() for p in (REPO / "fixtures").rglob("*") if p.is_file()]


def _run_hook(hook_id: str, args: list[str] = (), under: str = "fixtures/") -> tuple[int, str, list[str]]:
    """What ``pre-commit run HOOK --all-files`` does: the files matching ``files`` (here: those ``under`` a folder,
    as a project's ``files`` override narrows them) passed after ``entry`` and ``args``."""
    hook = next(h for h in HOOKS if h["id"] == hook_id)
    files = [f for f in _repo_files() if re.search(hook["files"], f) and f.startswith(under)]
    cmd = [*shlex.split(hook["entry"]), *args, *files]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr, files


def test_hooks_are_well_formed() -> None:
    assert [h["id"] for h in HOOKS] == ["mtp-audit-checkpoint", "mtp-audit-launch"]
    for h in HOOKS:
        assert {"id", "name", "entry", "language", "files"} <= set(h) and h["language"] == "python"
        re.compile(h["files"])


def test_checkpoint_hook_on_the_fixtures() -> None:
    rc, out, files = _run_hook("mtp-audit-checkpoint")
    folders = {os.path.dirname(f) for f in files}
    assert "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding" in folders
    assert out.count("mtp-audit checkpoint ") == len(folders)  # each folder once, even with two matching files
    assert "FAIL: config.json declares 1 MTP layer but the checkpoint ships none" in out
    assert rc == 1  # the REAP fixture's MTP001


@pytest.mark.network
def test_launch_hook_on_the_fixture_script() -> None:
    whl = sglang_wheel("0.5.9")
    rc, out, files = _run_hook("mtp-audit-launch", ["--sglang", str(whl), "--env-dump", DUMP], under="fixtures/launch/")
    assert files == ["fixtures/launch/serve-qwen35-reap.sh"]
    assert ("fixtures/launch/serve-qwen35-reap.sh:7: mtp-audit launch -- SGLANG_ENABLE_JIT_DEEPGEMM=0 python -m sglang.launch_server "
            "--model-path fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding") in out
    assert "FAIL: fix first: 2 error(s) (MTP001, MTP304)" in out and rc == 1
    rc, out, _ = _run_hook("mtp-audit-launch", ["--sglang", str(whl), "--env-dump", DUMP, "--fail-on", "never"], under="fixtures/launch/")
    assert rc == 0
    # every shell script of the fixtures: one names a model path that exists only on the machine it came from: its
    # checkpoint questions could not be told, the rest is still answered
    rc, out, files = _run_hook("mtp-audit-launch", ["--sglang", str(whl), "--env-dump", DUMP])
    assert len(files) >= 2 and rc == 1 and "no such file or folder on this machine" in out and "FAIL: fix first" in out


def test_launch_commands_found_in_scripts() -> None:
    script = "nohup vllm serve ./m --tp 8 > log 2>&1 &\n# python -m sglang.launch_server commented out\nA=1 exec sglang serve \\\n  --model-path x\n"
    assert launch_commands(script) == [(1, "vllm serve ./m --tp 8 > log 2>&1"), (3, "A=1 sglang serve    --model-path x")]


def _step(name: str) -> dict[str, Any]:
    return next(s for s in ACTION["runs"]["steps"] if s.get("name") == name)


def test_action_runs_the_audit_and_uploads_its_sarif(tmp_path: Path) -> None:
    """The Action's run step as the runner executes it (inputs in the environment, ``GITHUB_OUTPUT`` a file),
    on the REAP fixture; its SARIF is what the upload step sends, and it passes GitHub's rules."""
    assert ACTION["runs"]["using"] == "composite"
    upload = _step("Upload SARIF")
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@") and upload["with"]["sarif_file"] == "${{ inputs.sarif }}"
    run = _step("Run mtp-audit")
    out_file, sarif = tmp_path / "github_output", tmp_path / "mtp-audit.sarif"
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1", GITHUB_OUTPUT=str(out_file),
               MTP_AUDIT_ARGS="checkpoint 'fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding' --fail-on warning",
               MTP_AUDIT_SARIF=str(sarif))
    proc = subprocess.run(["bash", "-e", "-c", run["run"]], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr  # the step itself succeeds; the last step fails the job
    assert out_file.read_text() == "exit-code=1\n"
    assert proc.stdout.startswith("FAIL: config.json declares 1 MTP layer")
    doc = json.loads(sarif.read_text())
    assert github_problems(doc) == [] and [r["ruleId"] for r in doc["runs"][0]["results"]] == ["MTP001"]
    final = _step("Exit with mtp-audit's code")
    assert subprocess.run(["bash", "-c", final["run"]], env=dict(env, CODE="1")).returncode == 1
    assert subprocess.run(["bash", "-c", final["run"]], env=dict(env, CODE="")).returncode == 4  # the audit step never ran
