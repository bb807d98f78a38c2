"""``mtp-audit launch [OPTIONS] -- <engine launch command>`` (SGLang, vLLM, TensorRT-LLM): one cross-checked verdict before the model
loads. Kept light: the analyzers are imported only when the command runs."""

from __future__ import annotations

from pathlib import Path

import click

from mtp_audit.cli.emit import emit
from mtp_audit.cli.options import engine_id, output_options


@click.command("launch", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--sglang", "sglang_targets", multiple=True, metavar="TARGET",
              help="SGLang to check against: a .whl, an unpacked wheel, a package folder, a checkout or a release version "
                   "(0.5.23: fetched from the package index, only the members read) (default: the installed sglang). Give it "
                   "twice (OLD, then NEW) to see what changes between the two.")
@click.option("--compare-sglang", metavar="NEW", default=None,
              help="A second SGLang: report for NEW and what changes from --sglang (or the installed one).")
@click.option("--vllm", "vllm_target", metavar="TARGET", default=None,
              help="For a vLLM command (vllm serve MODEL ..., python -m vllm.entrypoints.openai.api_server ...): the vLLM to "
                   "check against, a .whl, an unpacked wheel, a package folder, a checkout or a release version (0.33.0) "
                   "(default: the installed vllm).")
@click.option("--env-dump", "env_dumps", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Environment dump of the serving machine (sglang check_env, torch/vllm collect_env, nvidia-smi); repeatable.")
@click.option("--facts", "facts_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Stored machine facts (mtp-audit preflight --save-facts) instead of this machine.")
@click.option("--no-machine", "no_machine", is_flag=True,
              help="Audit off the serving machine (CI, pre-commit, a laptop): never read this machine; the machine is the "
                   "--env-dump given, or nothing. Machine questions left open are notes ('not examined: not the serving "
                   "machine'), not blocking: a correct launch exits 0.")
@click.option("--env", "env_pairs", multiple=True, metavar="KEY=VALUE",
              help="Environment variable of the launch (repeatable); applied after the current environment and after "
                   "KEY=VALUE written before the program.")
@click.option("--llamacpp-build", "llamacpp_build", metavar="N", default=None,
              help="For a llama.cpp command (llama-server / llama-cli ...): the llama.cpp build (10444, b10444, ik:4100 for "
                   "ik_llama.cpp); or paste 'llama-server --version' output with --env-dump.")
@click.option("--model-dir", "model_dirs", multiple=True, metavar="SRC=DST",
              help="Read a model path of the command that starts with SRC (a folder of the serving container, /models) "
                   "from DST on this machine instead (repeatable). A model path that is on neither is 'could not tell' "
                   "for the checkpoint questions; the other questions are still answered.")
@click.option("--engine", default=None, callback=lambda ctx, param, value: engine_id(value),
              help="Serving engine the preflight verdict is for: any registered engine id or alias (sglang, vllm, trtllm, "
                   "llamacpp, ...). Default: the engine the command starts; a disagreement is shown as evidence.")
@click.option("--log", "log_file", metavar="FILE", default=None,
              help="The engine's log of this launch: hold the prediction against it (MTP530 agrees, MTP531 per disagreement).")
@output_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def launch(sglang_targets: tuple[str, ...], compare_sglang: str | None, vllm_target: str | None, env_dumps: tuple[Path, ...],
           facts_file: Path | None, no_machine: bool, env_pairs: tuple[str, ...], llamacpp_build: str | None,
           model_dirs: tuple[str, ...], engine: str | None, log_file: str | None, fmt: str, output: Path | None,
           fail_on: str, command: tuple[str, ...]) -> int:
    """Will this engine launch command (SGLang, vLLM, TensorRT-LLM, llama.cpp), on this machine, use the MTP heads and run the FP4 kernels?

    \b
    mtp-audit launch -- python -m sglang.launch_server --model-path ./ckpt --speculative-algorithm NEXTN --tp 8
    mtp-audit launch --sglang sglang-0.5.9-py3-none-any.whl --env-dump check_env.txt -- sglang serve --model-path ./ckpt
    mtp-audit launch --sglang OLD.whl --compare-sglang NEW.whl -f markdown -- python -m sglang.launch_server ...
    mtp-audit launch --vllm vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl -- vllm serve ./ckpt --speculative-config '{"method":"mtp","num_speculative_tokens":1}'
    mtp-audit launch --llamacpp-build 10444 -- llama-server -m Qwen3.6-27B-MTP-Q8_0.gguf --spec-type draft-mtp
    mtp-audit launch --env-dump env.txt -- trtllm-serve ./ckpt --config mtp.yaml
    mtp-audit launch --no-machine --sglang 0.5.23 -- sglang serve --model-path ./ckpt --speculative-algorithm NEXTN

    The engine is picked from the command. Runs the engine's own audit (its source, or its knowledge table), the
    checkpoint and preflight audits, cross-checks them and ends with "what will happen": the algorithm the engine
    really runs, the draft model and its architecture, the FP4 backends, the verdict (go / fix first / could not tell)
    and the corrected command when a flag fix is known.
    """
    from mtp_audit.cli.suggest import reject_leading_option
    from mtp_audit.errors import InputError
    from mtp_audit.launch import audit_launch

    reject_leading_option(command)
    if len(sglang_targets) > 2:
        raise InputError("--sglang", "give at most two (OLD NEW)")
    if len(sglang_targets) == 2 and compare_sglang is not None:
        raise InputError("--compare-sglang", "use either --sglang OLD --sglang NEW or --compare-sglang NEW")
    if env_dumps and facts_file is not None:
        raise InputError("--facts", "use either --facts or --env-dump, not both")
    env = {}
    for pair in env_pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key or not key.replace("_", "").isalnum():
            raise InputError(f"--env {pair}", "expected KEY=VALUE")
        env[key] = value
    mapping = []
    for pair in model_dirs:
        src, eq, dst = pair.partition("=")
        if not eq or not src or not dst:
            raise InputError(f"--model-dir {pair}", "expected SRC=DST (a folder of the command's paths = a folder here)")
        mapping.append((src, dst))
    # a release version is fetched by audit_launch (Engine.by_version): one the index cannot give is a blocking gap there
    old = sglang_targets[0] if sglang_targets else None
    new = sglang_targets[1] if len(sglang_targets) == 2 else compare_sglang
    report = audit_launch(list(command), sglang=old, compare_sglang=new, env_dumps=list(env_dumps) or None,
                          facts_file=facts_file, env=env, engine=engine, vllm=vllm_target,
                          llamacpp=llamacpp_build, model_dirs=mapping, no_machine=no_machine)
    if log_file is not None:
        from mtp_audit.runtime.launchlog import with_log

        report = with_log(report, log_file)
    from mtp_audit.cli.targets import installed_package_folder

    # without --sglang the installed sglang is audited: its files are inputs too
    protected = list(installed_package_folder("sglang")) if not sglang_targets else []
    return emit(report, fmt, output, fail_on, protected=protected + ([log_file] if log_file and log_file != "-" else []))
