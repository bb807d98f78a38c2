"""How many GPUs a launch command needs on this node, from its parallel sizes.

SGLang (the layout its launcher builds; line numbers checked in the real wheels by
``tests/test_launch_parallel.py``):

* One model replica is ``--tp-size`` x ``--pp-size`` processes, one GPU each. Without DP attention
  ``--dp-size N`` starts N replicas, each placed after the previous one (0.5.9
  ``managers/data_parallel_controller.py:246`` ``base_gpu_id += tp_size * pp_size * gpu_id_step``;
  0.5.23 ``:445``): GPUs = tp x pp x dp.
* With ``--enable-dp-attention`` (0.5.9) the DP groups live *inside* the TP group: dp must divide tp
  (0.5.9 ``server_args.py:2116`` ``assert self.tp_size % self.dp_size == 0``) and the launcher starts
  one TP group (``launch_dp_attention_schedulers``): GPUs = tp x pp. 0.5.23 spells it ``--attn-dp-size N``
  (``arg_groups/parallel_hook.py:326`` ``assert cfg.tp_size % cfg.attn_dp_size == 0``) and turns the
  deprecated ``--dp-size N --enable-dp-attention`` into it (``handle_deprecated_dp_attention``); its
  ``--dp-size`` then counts replicas again.
* ``--nnodes``: each node runs ``tp x pp / nnodes`` of them (0.5.9 ``entrypoints/engine.py:942``
  ``gpu_id = base_gpu_id + (pp_rank % pp_size_per_node) * tp_size_per_node + (tp_rank % tp_size_per_node)
  * gpu_id_step``; 0.5.23 ``:938``); tp x pp must divide by nnodes (0.5.9 ``server_args.py:5132``,
  0.5.23 ``arg_groups/validation_hook.py:179``) and DP replicas cannot span nodes (0.5.9 ``:5143``
  unless DP attention; 0.5.23 ``validation_hook.py:199``).
* ``--ep-size`` splits the experts inside the TP group, it adds no GPU: ``moe_tp_size = tp_size //
  ep_size // moe_dp_size`` (0.5.9 ``distributed/parallel_state.py:1775``), so ep must divide tp (0.5.23
  ``model_executor/model_runner_components/moe_ep_setup.py:150`` raises "tp_size N must be divisible by
  ep_size M").
* ``--base-gpu-id`` / ``--gpu-id-step`` shift and space the GPU ids; the highest id used must be a
  visible CUDA device.
"""

from __future__ import annotations

from mtp_audit.engines.parallel import Getter, ParallelPlan, read_flag, read_ints

#: SGLang option strings (declared flag and aliases) of the sizes read here.
SGLANG_TP = ("--tp-size", "--tensor-parallel-size")
SGLANG_PP = ("--pp-size", "--pipeline-parallel-size")
SGLANG_DP = ("--dp-size", "--data-parallel-size")
SGLANG_EP = ("--ep-size", "--expert-parallel-size", "--ep")
SGLANG_DP_ATTENTION = ("--enable-dp-attention",)
SGLANG_ATTN_DP = ("--attn-dp-size",)
SGLANG_NNODES = ("--nnodes",)
SGLANG_BASE_GPU = ("--base-gpu-id",)
SGLANG_GPU_STEP = ("--gpu-id-step",)
#: Where each SGLang constraint is enforced (file:line in 0.5.9 and 0.5.23 wheels).
#: the option string a size is named by in messages
SGLANG_NAMES = {"tp": "--tp-size", "pp": "--pp-size", "dp": "--dp-size", "ep": "--ep-size", "nnodes": "--nnodes"}

SGLANG_SOURCES = {
    "sizes": "sglang 0.5.9 and 0.5.23 server_args: --tp-size, --pp-size, --dp-size, --ep-size and --nnodes are process counts "
             "(argparse type=int, no lower bound)",
    "replicas": "sglang 0.5.9 srt/managers/data_parallel_controller.py:246, 0.5.23 :445 (base_gpu_id += tp_size * pp_size * gpu_id_step)",
    "gpu_id": "sglang 0.5.9 srt/entrypoints/engine.py:942, 0.5.23 :938 (gpu_id = base_gpu_id + ... * gpu_id_step)",
    "nnodes": "sglang 0.5.9 srt/server_args.py:5132, 0.5.23 srt/arg_groups/validation_hook.py:179 (tp_size must be divisible by number of nodes)",
    "dp_attention": "sglang 0.5.9 srt/server_args.py:2116, 0.5.23 srt/arg_groups/parallel_hook.py:326 (tp_size % dp/attn_dp size == 0)",
    "multinode_dp": "sglang 0.5.9 srt/server_args.py:5143, 0.5.23 srt/arg_groups/validation_hook.py:199 (multi-node data parallel)",
    "ep": "sglang 0.5.9 srt/distributed/parallel_state.py:1775 (moe_tp_size = tp // ep // moe_dp), "
          "0.5.23 srt/model_executor/model_runner_components/moe_ep_setup.py:150 (tp_size must be divisible by ep_size)",
}


def plan_sglang(get: Getter) -> ParallelPlan:
    """The SGLang layout of a parsed command.

    Args:
        get: ``LaunchCommand.get``: value of the last occurrence of an option known by any of the given
            option strings (``"true"`` for a flag without value), ``None`` when absent.

    Returns:
        the :class:`ParallelPlan`; sizes the server rejects are in ``problems``. Never raises.
    """
    vals, given, invalid = read_ints(get, {"tp": SGLANG_TP, "pp": SGLANG_PP, "dp": SGLANG_DP, "ep": SGLANG_EP, "attn_dp": SGLANG_ATTN_DP,
                                       "nnodes": SGLANG_NNODES, "base": SGLANG_BASE_GPU, "step": SGLANG_GPU_STEP})
    tp, pp, dp, ep = (max(1, vals[k] or 1) for k in ("tp", "pp", "dp", "ep"))
    nnodes = max(1, vals["nnodes"] or 1)
    base, step = max(0, vals["base"] or 0), max(1, vals["step"] or 1)
    dpa_flag = read_flag(get, SGLANG_DP_ATTENTION)
    if dpa_flag:
        given[SGLANG_DP_ATTENTION[0]] = "true"
    problems: list[tuple[str, str]] = [
        ("sizes", f"{SGLANG_NAMES[k]} {size} is not a positive size: it counts processes (one per GPU), so the server "
                  "cannot place them; it is read as 1 below only to go on") for k in ("tp", "pp", "dp", "ep", "nnodes")
        if (size := vals[k]) is not None and size < 1]
    if (vals["attn_dp"] or 1) > 1:  # 0.5.23: attention DP width; --dp-size counts replicas
        attn_dp, replicas = vals["attn_dp"] or 1, dp
        how = f"--attn-dp-size {attn_dp} splits attention inside tp, adds no GPU"
    elif dpa_flag and dp > 1:  # 0.5.9 (and 0.5.23's deprecated spelling): dp groups inside the TP group
        attn_dp, replicas = dp, 1
        how = f"--enable-dp-attention: the {dp} DP groups live inside tp, so dp adds no GPU"
    else:
        attn_dp, replicas = 1, dp
        how = ""
    if attn_dp > 1 and tp % attn_dp:
        problems.append(("dp_attention", f"DP attention needs tp divisible by its dp size: --tp-size {tp} is not divisible by {attn_dp} "
                                         "(SGLang asserts tp_size % dp_size == 0 at start-up)"))
    if (tp * pp) % nnodes:
        problems.append(("nnodes", f"tp {tp} x pp {pp} = {tp * pp} is not divisible by --nnodes {nnodes} "
                                   "(SGLang: 'tp_size must be divisible by number of nodes')"))
    if replicas > 1 and nnodes > 1:
        problems.append(("multinode_dp", f"--dp-size {dp} replicas across --nnodes {nnodes}: SGLang supports multi-node data "
                                         "parallelism only as DP attention"))
    if ep > tp or tp % ep:
        problems.append(("ep", f"--ep-size {ep} does not divide --tp-size {tp}: the experts are split inside the TP group "
                               f"(moe_tp_size = tp_size // ep_size = {tp // ep}), so ep must be a divisor of tp, at most tp"))
    per_pp = max(pp // nnodes, 1)
    nodes_per_pp = max(nnodes // pp, 1)
    tp_per_node = max(tp // nodes_per_pp, 1)
    per_replica = per_pp * tp_per_node
    gpus = per_replica * replicas
    highest = base + (replicas - 1) * tp * pp * step + (per_pp - 1) * tp_per_node + (tp_per_node - 1) * step
    parts = [f"tp {tp}", f"pp {pp}"] + ([f"dp {replicas}"] if replicas > 1 else [])
    formula = " x ".join(parts) + f" = {tp * pp * replicas}"
    if nnodes > 1:
        formula += f" over --nnodes {nnodes}: {gpus} on this node"
    if how:
        formula += f"; {how}"
    if ep > 1:
        formula += f"; --ep-size {ep} splits the experts inside tp, adds no GPU"
    if base or step > 1:
        formula += f"; --base-gpu-id {base} --gpu-id-step {step}: highest GPU id {highest}"
    return ParallelPlan("sglang", tp, pp, dp, ep, attn_dp, replicas, nnodes, base, step, gpus, highest, formula, given,
                        tuple(problems), tuple(invalid))
