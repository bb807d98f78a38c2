"""What ``mtp-audit hook`` reads from the files pre-commit passes, on hostile or unusual input: YAML read only through
the bounded composer (an alias bomb, a recursive alias or deep nesting is one skip line, exit 0); shell lines read as
the shell runs them (quoted text and here-document bodies are not launches; ``sh -c`` scripts are; a quote the shell
cannot close is a skip line, never exit 2); a ``config.json`` that is not a model config is skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_trtllm_yaml_bounds import laughs

from mtp_audit.cli.hook import _NotYaml, launch_commands, yaml_commands
from mtp_audit.cli.main import main


def _hook(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    rc = main(["hook", *args])
    out, err = capsys.readouterr()
    return rc, (out + err).splitlines()


# -- YAML: the bounded reader ------------------------------------------------------------------------------------------

def test_alias_bomb_is_refused_by_the_bounded_composer() -> None:
    """6 levels of 10 aliases: over a million nodes once expanded, over the 200,000 bound (measured until it is passed:
    "at least 222,223"); before, every alias was walked."""
    with pytest.raises(_NotYaml, match=r"once its aliases are expanded \(at line 6, column 5: at least 222,223 nodes"):
        yaml_commands(laughs(levels=6), "bomb.yaml")


@pytest.mark.parametrize(("body", "reason"), [
    ("a: &a [*a]\n", "a recursive alias at line 1, column 4"),
    ("a: " + "[" * 1000 + "1" + "]" * 1000 + "\n", "YAML nested deeper than 100 levels (at line 1, column 103)"),
    ("".join(" " * i + "a:\n" for i in range(150)) + " " * 150 + "b: 1\n", "YAML nested deeper than 100 levels (at line 101, column 101)"),
])
def test_hostile_yaml_is_one_skip_line_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, reason: str) -> None:
    """Before: RecursionError, exit 4 (an internal error) for each."""
    f = tmp_path / "x.yaml"
    f.write_text(body)
    rc, lines = _hook(capsys, "launch", "--no-machine", str(f))
    assert rc == 0 and len(lines) == 1 and lines[0].startswith(f"{f}: skipped: {reason}")
    assert lines[0].endswith(": its commands were not read")


def test_a_long_integer_in_a_manifest_does_not_hide_its_commands() -> None:
    """The integer-length bound is the engine options' (``int()`` is never called here): a manifest keeps its commands."""
    assert yaml_commands("replicas: " + "9" * 200 + "\ncommand: [vllm, serve, m]\n", "k.yaml") == [(2, "vllm serve m")]


# -- shell lines as the shell runs them --------------------------------------------------------------------------------

def test_quoted_program_names_are_text() -> None:
    """An echo's quoted usage text (with a quote shlex cannot close once cut at the program) is no launch; a launch
    after it on the same line still is."""
    script = ("echo \"usage: vllm serve MODEL --speculative-config '{\\\"method\\\":\\\"mtp\\\"}'\"\n"
              "printf '%s\\n' 'then run vllm serve ./m' ; vllm serve ./real --tp 2\n"
              "echo done  # then: vllm serve ./in-a-comment\n")
    assert launch_commands(script) == [(2, "vllm serve ./real --tp 2")]


def test_heredoc_bodies_are_text_unless_a_shell_reads_them() -> None:
    script = ("cat <<EOT\nTo serve: vllm serve ./x --speculative-config '{\"method\":\"mtp\"}'\nEOT\n"
              "cat <<-'EOT' > notes.txt\n\tpython -m sglang.launch_server --model-path y\n\tEOT\n"
              "bash <<EOF\ncd /srv\nvllm serve ./ckpt --tp 8\nEOF\n"
              "trtllm-serve ckpt --config a.yaml\n")
    assert launch_commands(script) == [(9, "vllm serve ./ckpt --tp 8"), (11, "trtllm-serve ckpt --config a.yaml")]


def test_sh_c_one_liners_and_multi_line_quoted_arguments_are_read() -> None:
    script = ("sh -c \"python -m sglang.launch_server --model-path ./ckpt --speculative-algorithm NEXTN\"\n"
              "cd /srv && bash -lc 'exec vllm serve ./m --tp 2'\n"
              "vllm serve ./m --speculative-config '{\n  \"method\": \"mtp\",\n  \"num_speculative_tokens\": 1\n}'\n")
    assert launch_commands(script) == [
        (1, "python -m sglang.launch_server --model-path ./ckpt --speculative-algorithm NEXTN"),
        (2, "vllm serve ./m --tp 2"),
        (3, "vllm serve ./m --speculative-config '{   \"method\": \"mtp\",   \"num_speculative_tokens\": 1 }'")]


def test_kubernetes_sh_c_block_scalar_with_continuations_is_read() -> None:
    """Before: no command found (the launch was not on the block's last line), no skip line, exit 0."""
    pod = ("spec:\n  containers:\n    - name: vllm\n      command: [/bin/sh, -c]\n      args:\n        - |\n"
           "          vllm serve ./ckpt \\\n            --tensor-parallel-size 2 \\\n"
           "            --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'\n          echo done\n")
    assert yaml_commands(pod, "pod.yaml") == [
        (7, "vllm serve ./ckpt    --tensor-parallel-size 2    "
            "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'")]


def test_unclosed_quote_is_a_skip_line_not_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "serve.sh").write_text("#!/bin/sh\nvllm serve ./m --speculative-config '{\"method\":\"mtp\"}\n")
    (tmp_path / "usage.sh").write_text("echo \"usage: vllm serve MODEL --speculative-config '{\\\"method\\\":\\\"mtp\\\"}'\"\n")
    rc, lines = _hook(capsys, "launch", "--no-machine", str(tmp_path / "serve.sh"), str(tmp_path / "usage.sh"))
    assert rc == 0 and lines == [
        f"{tmp_path / 'serve.sh'}:2: skipped: cannot split the command (No closing quotation)",
        f"{tmp_path / 'usage.sh'}: skipped: no launch command of SGLang, vLLM, llama.cpp or TensorRT-LLM found"]


# -- hook checkpoint: only model configs ------------------------------------------------------------------------------

def test_a_config_json_that_is_not_a_model_config_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An application's settings: skipped, exit 0 (before: exit 2 "/architectures: missing"); a model config with a
    defect (model_type but no architectures) still fails as before."""
    for name, doc in {"app": {"port": 8080}, "web": ["a", "b"], "model": {"model_type": "deepseek_v3"}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(doc))
    rc, lines = _hook(capsys, "checkpoint", str(tmp_path / "app" / "config.json"), str(tmp_path / "web" / "config.json"))
    assert rc == 0 and lines == [
        f"{tmp_path / d / 'config.json'}: skipped: not a model config (no architectures or model_type, no safetensors "
        "file beside it)" for d in ("app", "web")]
    rc, lines = _hook(capsys, "checkpoint", str(tmp_path / "model" / "config.json"))
    assert rc == 2 and lines[-1].endswith("/architectures: missing or not a non-empty list of strings")


def test_a_settings_config_beside_weights_is_still_audited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": {}}')
    rc, lines = _hook(capsys, "checkpoint", str(tmp_path / "config.json"))
    assert rc == 2 and lines[0] == f"mtp-audit checkpoint {tmp_path}"
