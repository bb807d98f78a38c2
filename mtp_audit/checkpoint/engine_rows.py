"""The engine rows the family checks read (:mod:`mtp_audit.checkpoint.checks_families`): which MTP layers each engine
runs when a checkpoint ships several (MTP017, :data:`MULTI_LAYER_USE`), and the engines that build an MTP
``shared_head`` under another name than the checkpoint's (MTP018, :data:`HEAD_RENAMES`). Each row read in the named
release or cited from the engine's tracker.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtp_audit.valueclass import Value

# --- MTP017: several MTP layers, the engine runs the first ------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class LayerUse(Value):
    """How one engine release uses a checkpoint's MTP layers beyond the first.

    Attributes:
        engine: ``"vLLM 0.33.0"``.
        families: layout families (``mtp_audit.checkpoint.layouts``) it applies to; ``()`` = every family not
            named by another row of the same engine.
        uses: ``"all"`` (each draft step runs its own layer), ``"first-built"`` (only layer 0 is built; the rest is
            never loaded) or ``"first-run"`` (all are loaded, every draft step runs layer 0).
        where: file:line of the deciding code, or the report that says so.
    """

    engine: str
    families: tuple[str, ...]
    uses: str
    where: str


MULTI_LAYER_USE: tuple[LayerUse, ...] = (
    LayerUse("vLLM 0.33.0", ("step-3.5",), "all",
             "vllm/v1/spec_decode/step3p5.py:387-388 (Step3p5MTPProposer passes spec_step_idx = token_index + 1), "
             "chosen at vllm/v1/worker/gpu_model_runner.py:643-644"),
    LayerUse("vLLM 0.33.0", ("mimo-v2",), "first-built",
             "vllm/model_executor/models/mimo_v2_mtp.py:51-54 ('MiMo-V2 checkpoints contain multiple MTP layers, but "
             "vLLM currently supports only the first layer') and :177 (num_mtp_layers = 1)"),
    LayerUse("vLLM 0.33.0", (), "first-run",
             "vllm/v1/spec_decode/llm_base_proposer.py:688 (the draft loop passes no spec_step_idx, so every step runs "
             "layers[0]; vLLM issue #52688, PR #42146: 'spec_step_idx > 0 is still technically dead code')"),
    LayerUse("SGLang 0.5.23", ("mimo-v2",), "all",
             "sglang/srt/arg_groups/model_overrides/mimo_v2.py:20-25 (EAGLE -> enable_multi_layer_eagle)"),
    LayerUse("SGLang 0.5.23", ("step-3.5",), "all",
             "sglang/srt/arg_groups/overrides.py:331-349 (EAGLE -> enable_multi_layer_eagle for Step3p5/Step3p7)"),
)


def layer_use(engine: str, family: str | None) -> LayerUse | None:
    """The :data:`MULTI_LAYER_USE` row of ``engine`` for ``family`` (the engine's catch-all row otherwise)."""
    rows = [r for r in MULTI_LAYER_USE if r.engine == engine]
    return next((r for r in rows if family in r.families), None) or next((r for r in rows if not r.families), None)


# --- MTP018: shared_head renamed past the exclusion list --------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class HeadRename(Value):
    """An engine that builds an MTP layer's ``shared_head`` under another module name than the checkpoint's, so an
    exclusion pattern written for the checkpoint name does not reach it and the head is built quantized.

    Attributes:
        engine: engine and the releases it concerns.
        family: layout family.
        built_as: the module name the engine gives the head (``{n}`` = the MTP layer index in the checkpoint).
        absent_too: the engine builds the head even when the checkpoint stores none (a placeholder).
        report: the report that shows the failure, with the error it gives.
    """

    engine: str
    family: str
    built_as: str
    absent_too: bool
    report: str


HEAD_RENAMES: tuple[HeadRename, ...] = (
    HeadRename("SGLang (before PR #32325)", "step-3.5", "model.shared_head", False,
               "SGLang PR #32325: Step-3.7-Flash-NVFP4 excludes model.layers.45.* but Step3p5MTP builds the head as "
               "model.shared_head.*, so it is built NVFP4: packed width 2048 against the BF16 weight's 4096"),
    HeadRename("vLLM (after PR #52501, before PR #55442)", "glm-5.3", "parallel_lm_head", True,
               "vLLM issue #57532: GLM-5.3-Flash NVFP4 + MTP: \"NVFP4 weight_scale for layer 'parallel_lm_head' was "
               "never loaded (still NaN)\": the MTP shared_head.head placeholder is built with the NVFP4 config"),
)
