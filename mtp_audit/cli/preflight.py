"""``mtp-audit preflight``: the live machine, a pasted env dump, or stored facts, plus an optional
launch command after ``--``. Heavy work is imported inside the command (start-up stays fast)."""

from __future__ import annotations

from pathlib import Path

import click

from mtp_audit.cli.emit import emit
from mtp_audit.cli.options import engine_id, output_options


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--env-dump", "env_dumps", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Environment dump to audit instead of this machine (sglang check_env, torch/vllm/flashinfer collect_env, nvidia-smi). Repeatable; merged.")
@click.option("--facts", "facts_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Replay facts stored with --save-facts instead of collecting them.")
@click.option("--no-machine", "no_machine", is_flag=True,
              help="Audit off the serving machine (CI, pre-commit, a laptop): never read this machine; the machine is the "
                   "--env-dump given, or nothing. Machine questions left open are notes ('not examined: not the serving "
                   "machine'), not blocking.")
@click.option("--save-facts", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the collected machine facts (JSON) to FILE ('-': stdout) for later --facts replays.")
@click.option("--probe", is_flag=True, help="Run one tiny FP4 GEMM on GPU 0 against a BF16 reference (needs torch and a GPU; time-boxed).")
@click.option("--import-torch", is_flag=True, help="Import torch (in a child process) to read its arch list; off by default.")
@click.option("--engine", default=None, callback=lambda ctx, param, value: engine_id(value),
              help="Serving engine the verdict is for: any registered engine id or alias (sglang, vllm, trtllm, llamacpp, "
                   "tensorrt-llm, ...; its FP4 kernel checks apply). Default: detected from the launch command or the dump; "
                   "SGLang when nothing names one.")
@click.option("--no-nvml", is_flag=True, help="Read the GPUs with nvidia-smi even when NVML (nvidia-ml-py) is importable (also: MTP_AUDIT_NO_NVML=1).")
@click.option("--timeout", type=click.FloatRange(0.1, 600), default=10.0, show_default=True, help="Seconds allowed for each external command (nvidia-smi, nvcc).")
@output_options
@click.argument("launch", nargs=-1, type=click.UNPROCESSED)
def preflight(env_dumps: tuple[Path, ...], facts_file: Path | None, no_machine: bool, save_facts: Path | None, probe: bool, import_torch: bool,
              engine: str | None, no_nvml: bool, timeout: float, fmt: str, output: Path | None, fail_on: str, launch: tuple[str, ...]) -> int:
    """Can this GPU stack run the FP4 (NVFP4/MXFP4) kernels of the intended launch?

    \b
    mtp-audit preflight
    mtp-audit preflight --env-dump check_env.txt
    mtp-audit preflight --env-dump collect_env.txt -- vllm serve ./ckpt --quantization modelopt_fp4 --moe-backend flashinfer_cutlass -tp 8
    mtp-audit preflight -- python -m sglang.launch_server --model-path ./ckpt --quantization modelopt_fp4 \\
        --fp4-gemm-backend flashinfer_cudnn --moe-runner-backend flashinfer_cutlass --tp 8
    """
    import json

    from mtp_audit.cli.suggest import reject_leading_option
    from mtp_audit.errors import InputError
    from mtp_audit.formats.indented import nonfinite_as_text
    from mtp_audit.preflight import preflight as run

    reject_leading_option(launch)

    if env_dumps and facts_file:
        raise InputError("--facts", "use either --facts or --env-dump, not both")
    report = run(env_dumps=env_dumps, facts_file=facts_file, launch=list(launch) if launch else None,
                 probe=probe, import_torch=import_torch, timeout=timeout,
                 use_nvml=False if no_nvml else None, engine=engine, no_machine=no_machine)
    pf = report.facts["preflight"]
    if probe and pf.get("probe"):
        p = pf["probe"]
        click.echo("probe: " + (p["error"] or f"{p['gpu']} (compute capability {'.'.join(map(str, p['cc'] or []))})"), err=True)
        for line in p["ran"]:
            click.echo(f"probe ran: {line}", err=True)
        for r in p["results"]:
            click.echo(f"probe result: {r['path']}: {r['status']}" + (f" ({r.get('error')})" if r.get("error") else f" rel_error={r.get('rel_error')}"), err=True)
    facts_text = json.dumps(nonfinite_as_text(pf["machine"]), indent=1, sort_keys=False, allow_nan=False) + "\n"
    # written by emit, after every output is checked against every input (nothing is written otherwise)
    return emit(report, fmt, output, fail_on, also_write=[("--save-facts", save_facts, facts_text)])
