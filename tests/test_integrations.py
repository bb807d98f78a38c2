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
from test_sarif_github import github_problems

from mtp_audit.cli.hook import launch_commands, yaml_commands

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


def test_launch_commands_of_all_four_engines_found_in_scripts() -> None:
    script = ("./build/bin/llama-server -m m.gguf --spec-type draft-mtp\nllama-server-wrapper --x\n"
              "CUDA_VISIBLE_DEVICES=0,1 trtllm-serve ./ckpt \\\n  --config mtp.yaml &\nexec python3 -m vllm.entrypoints.openai.api_server --model m\n")
    assert launch_commands(script) == [(1, "./build/bin/llama-server -m m.gguf --spec-type draft-mtp"),
                                       (3, "CUDA_VISIBLE_DEVICES=0,1 trtllm-serve ./ckpt    --config mtp.yaml"),
                                       (5, "python3 -m vllm.entrypoints.openai.api_server --model m")]


K8S = """\
spec:
  containers:
    - name: trt
      command: ["trtllm-serve"]
      args: ["ckpt", "--config", "mtp.yaml"]
    - name: vllm
      command: ["/bin/sh", "-c"]
      args:
        - |
          echo starting
          vllm serve ./ckpt --tp 2
---
services:
  llama:
    command: llama-server -m m.gguf --spec-type draft-mtp
  other:
    image: busybox
"""


def test_launch_commands_found_in_yaml() -> None:
    assert yaml_commands(K8S, "k8s.yaml") == [(4, "trtllm-serve ckpt --config mtp.yaml"), (11, "vllm serve ./ckpt --tp 2"),
                                             (15, "llama-server -m m.gguf --spec-type draft-mtp")]


def test_launch_hook_says_what_it_skips_and_writes_one_sarif_run(tmp_path: Path) -> None:
    """All four engines' commands in a script and a YAML file, audited off the serving machine (--no-machine); each
    skip named with its reason; the SARIF is one run that GitHub accepts, each result tied to its script line."""
    from mtp_audit.synth.launch import checkpoint_files

    for name, text in checkpoint_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "mtp.yaml").write_text((REPO / "fixtures/trtllm/r1-nextn-3.yaml").read_text())
    (tmp_path / "serve.sh").write_text("#!/bin/sh\ntrtllm-serve ckpt --config mtp.yaml\npython -m sglang.launch_server --model-path $M\n"
                                       "python -m vllm.entrypoints.cli.main bench latency\n")
    (tmp_path / "pod.yaml").write_text("command: [trtllm-serve]\nargs: [ckpt, --config, mtp.yaml]\n")
    (tmp_path / "ci.yml").write_text("on: push\n")
    (tmp_path / "chart.yaml").write_text("image: {{ .Values.image }}:latest\ncommand: [trtllm-serve, ckpt]\n")
    (tmp_path / "data.yml").write_text("rows:\n" + "  - 0123456789\n" * 100_000)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1")
    cmd = ["mtp-audit", "hook", "launch", "--no-machine", "--sarif", "out.sarif", "--sarif-category", "deploy",
           "serve.sh", "pod.yaml", "ci.yml", "chart.yaml", "data.yml"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert [ln for ln in out.splitlines() if ln.startswith(("serve.sh", "pod.yaml", "ci.yml", "chart.yaml", "data.yml"))] == [
        "serve.sh:2: mtp-audit launch -- trtllm-serve ckpt --config mtp.yaml",
        "serve.sh:3: skipped: the command uses shell variables or substitutions, which only the shell can expand",
        "serve.sh:4: skipped: 'python -m vllm.entrypoints.cli.main bench' is not a server launch of an engine mtp-audit knows",
        "pod.yaml:1: mtp-audit launch -- trtllm-serve ckpt --config mtp.yaml",
        "ci.yml: skipped: no launch command of SGLang, vLLM, llama.cpp or TensorRT-LLM found",
        "chart.yaml: skipped: does not parse as YAML at line 1 (expected <block end>, but found '<scalar>'; a template?): its "
        "commands were not read",
        "data.yml: skipped: is larger than 1,048,576 bytes: its commands were not read"]
    doc = json.loads((tmp_path / "out.sarif").read_text())
    assert github_problems(doc) == [] and len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert run["automationDetails"] == {"id": "deploy/"}
    assert sorted((r["ruleId"], r["properties"]["launch"]) for r in run["results"]) == [
        ("MTP702", "pod.yaml:1"), ("MTP702", "serve.sh:2"), ("MTP704", "pod.yaml:1"), ("MTP704", "serve.sh:2"),
        ("MTP719", "pod.yaml:1"), ("MTP719", "serve.sh:2")]  # MTP719: the MTP layers' bytes per GPU, a note
    assert [r["id"] for r in run["tool"]["driver"]["rules"]][run["results"][0]["ruleIndex"]] == run["results"][0]["ruleId"]


def _step(name: str) -> dict[str, Any]:
    return next(s for s in ACTION["runs"]["steps"] if s.get("name") == name)


def _run_step(tmp_path: Path, args: str, category: str = "") -> tuple[subprocess.CompletedProcess[str], dict[str, str], Path]:
    """The action's run step as the runner executes it (inputs in the environment, ``GITHUB_OUTPUT`` a file, the
    install step's interpreter: this one), from the repository root; ``(process, its outputs, the SARIF path)``."""
    run = _step("Run mtp-audit")
    out_file, sarif = tmp_path / "github_output", tmp_path / "mtp-audit.sarif"
    out_file.unlink(missing_ok=True)
    env = dict(os.environ, NO_COLOR="1", GITHUB_OUTPUT=str(out_file), MTP_AUDIT_PYTHON=sys.executable,
               MTP_AUDIT_ARGS=args, MTP_AUDIT_SARIF=str(sarif), MTP_AUDIT_CATEGORY=category)
    proc = subprocess.run(["bash", "-e", "-c", run["run"]], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    return proc, outputs, sarif


def test_action_runs_the_audit_and_uploads_its_sarif(tmp_path: Path) -> None:
    """On the REAP fixture: the step succeeds (the last step fails the job), its SARIF is what the upload step sends,
    it passes GitHub's rules and carries the category."""
    assert ACTION["runs"]["using"] == "composite"
    upload = _step("Upload SARIF")
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"] == {"sarif_file": "${{ steps.audit.outputs.sarif }}", "category": "${{ inputs.category }}"}
    proc, outputs, sarif = _run_step(tmp_path, "checkpoint 'fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding' --fail-on warning",
                                     category="models/reap")
    assert proc.returncode == 0, proc.stderr
    assert outputs == {"exit-code": "1", "sarif": str(sarif)}
    assert proc.stdout.startswith("FAIL: config.json declares 1 MTP layer")
    doc = json.loads(sarif.read_text())
    assert github_problems(doc) == [] and [r["ruleId"] for r in doc["runs"][0]["results"]] == ["MTP001"]
    assert doc["runs"][0]["automationDetails"] == {"id": "models/reap/"}
    final = _step("Exit with mtp-audit's code")
    env = dict(os.environ)
    assert subprocess.run(["bash", "-c", final["run"]], env=dict(env, CODE="1")).returncode == 1
    assert subprocess.run(["bash", "-c", final["run"]], env=dict(env, CODE="")).returncode == 4  # the audit step never ran


@pytest.mark.parametrize("args, code, sarif", [
    ("rules", 0, False), ("explain MTP007", 0, False), ("--version", 0, False),
    ("hook launch --no-machine fixtures/oracle-configs", 2, False),
    ("launch --no-machine -- trtllm-serve fixtures/checkpoint/jj8127--mimo_kor --config fixtures/trtllm/r1-nextn-3.yaml", 3, True),
    ("checkpoint 'unbalanced", 2, False),
])
def test_every_subcommand_runs_under_the_action(tmp_path: Path, args: str, code: int, sarif: bool) -> None:
    """``rules``, ``explain`` and ``hook`` take no ``-f/-o``: the step runs them as given (they failed with exit 2 when
    it added SARIF options to every command); arguments that do not split fail as bad input (2), never through eval."""
    proc, outputs, path = _run_step(tmp_path, args)
    assert proc.returncode == 0, proc.stderr
    assert outputs.get("exit-code") == str(code), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert ("sarif" in outputs) is sarif and path.exists() is sarif


def test_the_hook_writes_sarif_under_the_action(tmp_path: Path) -> None:
    proc, outputs, path = _run_step(tmp_path, "hook checkpoint fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding/config.json",
                                    category="hooks")
    assert outputs == {"exit-code": "1", "sarif": str(path)}, proc.stderr
    doc = json.loads(path.read_text())
    assert github_problems(doc) == [] and doc["runs"][0]["automationDetails"] == {"id": "hooks/"}
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["MTP001"]


def test_action_yml_is_valid_and_pins_what_it_uses() -> None:
    """action.yml against the SchemaStore schema of action metadata (tests/data/SOURCE.txt); every ``uses:`` pinned by a
    full commit SHA with its version in a comment; no expression inside a ``run:`` script (inputs reach the shell as
    environment variables only); the caller's Python left alone; the install pinned by action-constraints.txt."""
    import jsonschema

    schema = json.loads((REPO / "tests/data/github-action.schema.json").read_text())
    jsonschema.validate(ACTION, schema)
    text = (REPO / "action.yml").read_text()
    uses = re.findall(r"^\s*(?:- )?uses: (\S+)(.*)$", text, re.M)
    assert len(uses) == 2
    for ref, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), ref
        assert re.fullmatch(r"\s+# v\d+\.\d+\.\d+", comment), comment
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")
    setup = _step("Set up Python for mtp-audit")
    assert setup["uses"].startswith("actions/setup-python@") and setup["with"]["update-environment"] is False
    install = _step("Install mtp-audit")["run"]
    assert 'PIP_CONSTRAINT="$ACTION_PATH/action-constraints.txt"' in install
    pins = [ln.split(";")[0].strip() for ln in (REPO / "action-constraints.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]
    assert pins and all(re.fullmatch(r"[\w.-]+==[\w.]+", p) for p in pins), pins
    assert {"click", "huggingface_hub", "PyYAML", "safetensors", "packaging", "setuptools"} <= {p.split("==")[0] for p in pins}


@pytest.mark.slow
@pytest.mark.network
def test_the_action_install_step(tmp_path: Path) -> None:
    """The install step as the runner runs it (this interpreter in place of setup-python's): a virtual environment
    with mtp-audit and every dependency at the versions of action-constraints.txt."""
    step = _step("Install mtp-audit")
    out = tmp_path / "github_output"
    env = dict(os.environ, ACTION_PATH=str(REPO), SETUP_PYTHON=sys.executable, VENV=str(tmp_path / "venv"), GITHUB_OUTPUT=str(out))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", "-c", step["run"]], capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0 and "Could not find a version" in proc.stderr:
        pytest.skip("the package index cannot be reached")
    assert proc.returncode == 0, proc.stderr[-3000:]
    py = out.read_text().strip().split("=", 1)[1]
    frozen = subprocess.run([py, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True).stdout
    pinned = {ln.split(";")[0].strip().lower().replace("_", "-") for ln in (REPO / "action-constraints.txt").read_text().splitlines()
              if ln.strip() and not ln.startswith("#") and (";" not in ln or _marker_holds(ln.split(";", 1)[1]))}
    installed = {ln.strip().lower().replace("_", "-") for ln in frozen.splitlines() if "==" in ln and not ln.startswith("mtp")}
    assert installed <= pinned, installed - pinned
    assert subprocess.run([py, "-m", "mtp_audit", "--version"], capture_output=True, text=True).returncode == 0


def _marker_holds(marker: str) -> bool:
    from packaging.markers import Marker

    return Marker(marker.strip()).evaluate()


def test_usage_examples_name_nothing_that_does_not_exist() -> None:
    """No release is tagged and the repository's public name is not known here: the snippets install from a path or
    a commit, never from a placeholder owner or a tag that does not exist."""
    for name in ("README.md", "action.yml", ".pre-commit-hooks.yaml"):
        text = (REPO / name).read_text()
        assert "OWNER" not in text and not re.search(r"@v\d+\.\d+\.\d+\b", text.replace("# v", "")), name
        assert not re.search(r"^\s*rev: v\d", text, re.M), name
