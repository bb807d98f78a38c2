"""How many GPUs a vLLM launch command needs on this node, from its parallel sizes.

vLLM (0.20.0 ``vllm/engine/arg_utils.py`` spellings ``-tp/--tensor-parallel-size`` :925,
``-pp/--pipeline-parallel-size`` :905, ``-dp/--data-parallel-size`` :950, ``-dpl/--data-parallel-size-local``
:966, ``-ep/--enable-expert-parallel`` :1001, ``-n/--nnodes`` :911): ``world_size = pp x tp``
(``vllm/config/parallel.py:725``), ``world_size_across_dp = world_size x dp`` (:486); expert parallelism
reuses the TP x DP ranks (a flag, no size). GPUs on one node: ``tp x pp / nnodes`` x the local DP ranks.
"""

from __future__ import annotations

from mtp_audit.engines.parallel import Getter, ParallelPlan, read_flag, read_ints

#: vLLM option strings (``vllm/engine/arg_utils.py`` 0.20.0, lines in the module docstring).
VLLM_TP = ("--tensor-parallel-size", "-tp")
VLLM_PP = ("--pipeline-parallel-size", "-pp")
VLLM_DP = ("--data-parallel-size", "-dp")
VLLM_DP_LOCAL = ("--data-parallel-size-local", "-dpl")
VLLM_EP = ("--enable-expert-parallel", "-ep")
VLLM_NNODES = ("--nnodes", "-n")


def plan_vllm(get: Getter) -> ParallelPlan:
    """The vLLM layout of a command's options (same ``get`` contract as :func:`plan_sglang`).

    GPUs on this node = ``tp x pp / nnodes`` (vLLM's local world size, ``config/parallel.py:653``) x the DP
    ranks on this node (``--data-parallel-size-local`` when given, else ``--data-parallel-size`` on one node).
    """
    vals, given, invalid = read_ints(get, {"tp": VLLM_TP, "pp": VLLM_PP, "dp": VLLM_DP, "dpl": VLLM_DP_LOCAL, "nnodes": VLLM_NNODES})
    tp, pp, dp = (max(1, vals[k] or 1) for k in ("tp", "pp", "dp"))
    nnodes = max(1, vals["nnodes"] or 1)
    ep_on = read_flag(get, VLLM_EP)
    if ep_on:
        given[VLLM_EP[0]] = "true"
    local_dp = max(1, vals["dpl"]) if vals["dpl"] is not None else (dp if nnodes == 1 else 1)
    problems: list[tuple[str, str]] = []
    if nnodes > 1 and (tp * pp) % nnodes and vals["dpl"] is None:
        problems.append(("nnodes", f"tp {tp} x pp {pp} = {tp * pp} is not divisible by --nnodes {nnodes}"))
    per_node_world = tp * pp // nnodes if nnodes > 1 and vals["dpl"] is None else tp * pp
    gpus = max(1, per_node_world) * local_dp
    formula = f"tp {tp} x pp {pp}" + (f" x dp {local_dp}" if local_dp > 1 else "") + f" = {tp * pp * local_dp}"
    if nnodes > 1 and vals["dpl"] is None:
        formula += f" over --nnodes {nnodes}: {gpus} on this node"
    if ep_on:
        formula += f"; --enable-expert-parallel puts the experts over tp x dp = {tp * dp} ranks, adds no GPU"
    return ParallelPlan("vllm", tp, pp, dp, tp * dp if ep_on else 1, 1, local_dp, nnodes, 0, 1, gpus, gpus - 1, formula, given,
                        tuple(problems), tuple(invalid))
