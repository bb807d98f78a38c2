"""vLLM launch cross-check rules MTP320-MTP339: documentation, sources and runnable examples.

The checks live in :mod:`mtp_audit.engines.vllm.launch.evaluate`. Examples write a hand-written vLLM tree in the shape
of 0.33.0's files (``vl/vllm/...``, never copied vLLM code), a metadata-only checkpoint and an ``env.txt``;
``example.args`` is the launch command, run from the example folder (through :mod:`mtp_audit.launch.examples`).
"""

from __future__ import annotations

import json

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule
from mtp_audit.synth.launch import SM120_ENV, checkpoint_files

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


def R(id: str, name: str, sev: Severity, summary: str, what: str, why: str, fix: str, sources: tuple[str, ...], basis: str,
      examples: tuple[Example, ...]) -> Rule:
    return Rule(id, name, "launch", sev, summary, what, why, fix, sources, basis, examples)


_VL_SPEC = """from typing import Literal, get_args

from pydantic.dataclasses import dataclass

logger = None

MTPModelTypes = Literal["deepseek_mtp", "mimo_mtp", "qwen3_5_mtp", "mtp"]
SpeculativeMethod = Literal["ngram", "draft_model", "eagle", "eagle3", "deepseek_mtp", "mimo_mtp", "qwen3_5_mtp", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None
    model: str | None = None
    num_speculative_tokens: int | None = None

    @staticmethod
    def hf_config_override(hf_config):
        if hf_config.model_type in ("deepseek_v3", "deepseek_v32"):
            hf_config.model_type = "deepseek_mtp"
        if hf_config.model_type == "deepseek_mtp":
            n_predict = getattr(hf_config, "num_nextn_predict_layers", None)
            hf_config.update({"n_predict": n_predict, "architectures": ["DeepSeekMTPModel"]})
        if hf_config.model_type in ("qwen3_5_moe", "qwen3_5_moe_text"):
            text_config = getattr(hf_config, "text_config", hf_config)
            hf_config.model_type = "qwen3_5_mtp"
            n_predict = getattr(text_config, "mtp_num_hidden_layers", None)
            hf_config.update({"n_predict": n_predict, "architectures": ["Qwen3_5MoeMTP"]})
        return hf_config

    def __post_init__(self):
        if self.method in get_args(MTPModelTypes) and self.method != "mtp":
            logger.warning("method `%s` is deprecated and replaced with mtp.", self.method)
            self.method = "mtp"
        if self.model is None and self.num_speculative_tokens is not None:
            if self.method == "mtp":
                self.model = self.target_model_config.model
                if not self.quantization:
                    self.quantization = self.target_model_config.quantization
            elif self.method in ("ngram", "[ngram]"):
                self.model = "ngram"
            else:
                raise ValueError("num_speculative_tokens was provided but without speculative model.")
        if self.model is not None:
            self.draft_model_config = ModelConfig(model=self.model, hf_overrides=SpeculativeConfig.hf_config_override)
            if self.method in ("eagle", "eagle3"):
                pass
            elif "eagle-" in self.draft_model_config.model.lower():
                self.method = "eagle"
            elif self.draft_model_config.hf_config.model_type in get_args(MTPModelTypes):
                self.method = "mtp"
                if self.num_speculative_tokens > 1:
                    logger.warning("Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer")
            elif self.method == "draft_model":
                pass
            else:
                raise NotImplementedError(f"Unsupported speculative method: '{self.method}'")
            n_predict = getattr(self.draft_model_config.hf_config, "n_predict", None)
            if n_predict is not None:
                if self.num_speculative_tokens is None:
                    self.num_speculative_tokens = n_predict
                elif self.num_speculative_tokens > n_predict and self.num_speculative_tokens % n_predict != 0:
                    raise ValueError(f"num_speculative_tokens:{self.num_speculative_tokens} must be divisible by {n_predict=}")

    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3", "mtp")

    @model_validator(mode="after")
    def _verify_args(self):
        if self.num_speculative_tokens is None:
            raise ValueError("num_speculative_tokens must be provided with speculative model unless the draft model config "
                             "contains an n_predict parameter.")
        return self
"""
_VL_REGISTRY = """_TEXT_GENERATION_MODELS = {
    "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),
    "Qwen3_5MoeForConditionalGeneration": ("qwen3_5", "Qwen3_5MoeForConditionalGeneration"),
}
_SPECULATIVE_DECODING_MODELS = {
    "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
    "Qwen3_5MoeMTP": ("qwen3_5_mtp", "Qwen3_5MoeMTP"),
}
"""
_VL_RUNNER = """class GPUModelRunner:
    def __init__(self):
        if self.speculative_config:
            if self.speculative_config.method == "ngram":
                self.drafter = NgramProposer(self.vllm_config)
            elif self.speculative_config.uses_draft_model():
                self.drafter = DraftModelProposer(self.vllm_config, self.device, self)
            elif self.speculative_config.use_eagle():
                self.drafter = EagleProposer(self.vllm_config, self.device, self)
"""
_VL_MODEL = """class ModelConfig:
    quantization: str | None = None

    def _verify_quantization(self) -> None:
        supported_quantization = me_quant.QUANTIZATION_METHODS
        quant_cfg = self.model_arch_config.quantization_config
        if quant_cfg is not None:
            quant_method = quant_cfg["quant_method"]
            overrides = ["modelopt", "modelopt_fp4", "modelopt_mixed"]
            quantization_methods = [q for q in supported_quantization if q not in overrides] + overrides
            for name in quantization_methods:
                method = me_quant.get_quantization_config(name)
                quantization_override = method.override_quantization_method(quant_cfg, self.quantization, hf_config=self.hf_config)
                if quantization_override is not None:
                    quant_method = quantization_override
                    self.quantization = quantization_override
                    break
            if self.quantization is None:
                self.quantization = quant_method
            elif self.quantization != quant_method:
                raise ValueError(f"Quantization method specified in the model config ({quant_method}) does not match the "
                                 f"quantization method specified in the `quantization` argument ({self.quantization}).")
"""
_VL_CONVERTOR = """class ModelArchConfigConvertorBase:
    def _normalize_quantization_config(self, config):
        quant_cfg = getattr(config, "quantization_config", None)
        if quant_cfg is not None:
            producer_name = quant_cfg.get("producer", {}).get("name")
            algo = quant_cfg.get("quantization", {}).get("quant_algo")
            if producer_name == "modelopt" and algo is not None:
                if str(algo).upper() == "FP8":
                    quant_cfg["quant_method"] = "modelopt"
                elif str(algo).upper() == "NVFP4":
                    quant_cfg["quant_method"] = "modelopt_fp4"
                elif str(algo).upper() == "MIXED_PRECISION":
                    quant_cfg["quant_method"] = "modelopt_mixed"
                else:
                    raise ValueError(f"Unknown ModelOpt quant algo: {algo}")
        return quant_cfg
"""
_VL_QUANT_INIT = """from typing import Literal, get_args

QuantizationMethods = Literal["fp8", "modelopt", "modelopt_fp4", "modelopt_mixed"]
QUANTIZATION_METHODS: list[str] = list(get_args(QuantizationMethods))


def get_quantization_config(quantization: str):
    from .modelopt import ModelOptFp8Config, ModelOptMixedPrecisionConfig, ModelOptNvFp4Config

    method_to_config = {"modelopt": ModelOptFp8Config, "modelopt_fp4": ModelOptNvFp4Config,
                        "modelopt_mixed": ModelOptMixedPrecisionConfig}
    return method_to_config[quantization]
"""
_VL_MODELOPT = """class ModelOptQuantConfigBase:
    @staticmethod
    def _algo(hf_quant_cfg):
        if not hf_quant_cfg.get("quant_method", "").startswith("modelopt"):
            return None
        return str(hf_quant_cfg.get("quantization", {}).get("quant_algo", "")).upper()


class ModelOptFp8Config(ModelOptQuantConfigBase):
    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant, hf_config=None):
        return "modelopt" if cls._algo(hf_quant_cfg) == "FP8" else None


class ModelOptNvFp4Config(ModelOptQuantConfigBase):
    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant, hf_config=None):
        algo = cls._algo(hf_quant_cfg)
        if algo is not None and "FP4" in algo:
            return "modelopt_fp4"
        return None


class ModelOptMixedPrecisionConfig(ModelOptQuantConfigBase):
    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant, hf_config=None):
        if cls._algo(hf_quant_cfg) == "MIXED_PRECISION":
            return "modelopt_mixed"
        return None
"""
_VL_PLATFORMS = """def cuda_platform_plugin():
    return "vllm.platforms.cuda.CudaPlatform"
"""
_VL_CUDA = """from typing import TYPE_CHECKING, NamedTuple

from vllm.v1.attention.backends.registry import AttentionBackendEnum

if TYPE_CHECKING:
    from vllm.v1.attention.selector import AttentionSelectorConfig


class _BackendCandidate(NamedTuple):
    backend_class: type
    backend: AttentionBackendEnum
    priority: int


def _get_backend_priorities(use_mla, device_capability):
    if use_mla:
        if device_capability.major == 10:
            return [AttentionBackendEnum.FLASHINFER_MLA, AttentionBackendEnum.TRITON_MLA]
        return [AttentionBackendEnum.TRITON_MLA]
    return [AttentionBackendEnum.FLASH_ATTN]


class CudaPlatform:
    device_name: str = "cuda"

    @classmethod
    def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None):
        device_capability = cls.get_device_capability()
        if selected_backend is not None:
            backend_class = selected_backend.get_class()
            invalid_reasons = backend_class.validate_configuration(device_capability=device_capability,
                                                                   **attn_selector_config._asdict())
            if invalid_reasons:
                raise ValueError(f"Selected backend {selected_backend} is not valid for this configuration. "
                                 f"Reason: {invalid_reasons}")
            return f"{backend_class.__module__}.{backend_class.__qualname__}"
        valid = []
        for priority, backend in enumerate(_get_backend_priorities(attn_selector_config.use_mla, device_capability)):
            backend_class = backend.get_class()
            if not backend_class.validate_configuration(device_capability=device_capability, **attn_selector_config._asdict()):
                valid.append(_BackendCandidate(backend_class, backend, priority))
        if len(valid) == 0:
            raise ValueError(f"No valid attention backend found for {cls.device_name}")
        chosen = min(valid, key=lambda c: c.priority)
        return f"{chosen.backend_class.__module__}.{chosen.backend_class.__qualname__}"
"""
_VL_SELECTOR = """from typing import NamedTuple


class AttentionSelectorConfig(NamedTuple):
    head_size: int
    dtype: str
    kv_cache_dtype: str | None
    block_size: int | None
    use_mla: bool = False
"""
_VL_ATTN_REGISTRY = """from enum import Enum, EnumMeta


class _AttentionBackendEnumMeta(EnumMeta):
    def __getitem__(cls, name):
        raise ValueError(f"Unknown attention backend: '{name}'")


class AttentionBackendEnum(Enum, metaclass=_AttentionBackendEnumMeta):
    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
    FLASHINFER_MLA = "vllm.v1.attention.backends.mla.flashinfer_mla.FlashInferMLABackend"
    TRITON_MLA = "vllm.v1.attention.backends.mla.triton_mla.TritonMLABackend"
"""
_VL_ATTN_BASE = """class AttentionBackend:
    supported_kv_cache_dtypes = ["auto", "bfloat16"]

    @classmethod
    def is_mla(cls):
        return False

    @classmethod
    def supports_compute_capability(cls, capability):
        return True

    @classmethod
    def validate_configuration(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla, device_capability):
        invalid_reasons = []
        if kv_cache_dtype not in cls.supported_kv_cache_dtypes:
            invalid_reasons.append("kv_cache_dtype not supported")
        if use_mla != cls.is_mla():
            invalid_reasons.append("MLA not supported" if use_mla else "non-MLA not supported")
        if not cls.supports_compute_capability(device_capability):
            invalid_reasons.append("compute capability not supported")
        return invalid_reasons
"""
_VL_FA = """from vllm.v1.attention.backend import AttentionBackend


class FlashAttentionBackend(AttentionBackend):
    supported_kv_cache_dtypes = ["auto", "bfloat16", "fp8"]
"""
_VL_FI_MLA = """from vllm.v1.attention.backend import AttentionBackend


class FlashInferMLABackend(AttentionBackend):
    @classmethod
    def is_mla(cls):
        return True

    @classmethod
    def supports_compute_capability(cls, capability):
        return capability.major == 10
"""
_VL_TRITON_MLA = """from vllm.v1.attention.backend import AttentionBackend


class TritonMLABackend(AttentionBackend):
    @classmethod
    def is_mla(cls):
        return True
"""
_VL_ATTN = {"vl/vllm/platforms/__init__.py": _VL_PLATFORMS, "vl/vllm/platforms/cuda.py": _VL_CUDA,
            "vl/vllm/v1/__init__.py": "", "vl/vllm/v1/attention/__init__.py": "", "vl/vllm/v1/attention/selector.py": _VL_SELECTOR,
            "vl/vllm/v1/attention/backend.py": _VL_ATTN_BASE, "vl/vllm/v1/attention/backends/__init__.py": "",
            "vl/vllm/v1/attention/backends/registry.py": _VL_ATTN_REGISTRY, "vl/vllm/v1/attention/backends/flash_attn.py": _VL_FA,
            "vl/vllm/v1/attention/backends/mla/__init__.py": "", "vl/vllm/v1/attention/backends/mla/flashinfer_mla.py": _VL_FI_MLA,
            "vl/vllm/v1/attention/backends/mla/triton_mla.py": _VL_TRITON_MLA}
_VL = {"vl/vllm/__init__.py": "", "vl/vllm/_version.py": '__version__ = version = "0.33.0"\n', "vl/vllm/envs.py": "",
       "vl/vllm/config/__init__.py": "", "vl/vllm/config/speculative.py": _VL_SPEC,
       "vl/vllm/model_executor/models/registry.py": _VL_REGISTRY, "vl/vllm/v1/worker/gpu_model_runner.py": _VL_RUNNER,
       "vl/vllm/config/model.py": _VL_MODEL, "vl/vllm/transformers_utils/model_arch_config_convertor.py": _VL_CONVERTOR,
       "vl/vllm/model_executor/layers/quantization/__init__.py": _VL_QUANT_INIT,
       "vl/vllm/model_executor/layers/quantization/modelopt.py": _VL_MODELOPT, **_VL_ATTN}
#: a ModelOpt MIXED_PRECISION checkpoint's hf_quant_config.json (the shape of vLLM PR 36312's test config: NVFP4 MLPs,
#: FP8 attention, per-layer quantized_layers)
_MIXED = json.dumps({"producer": {"name": "modelopt", "version": "0.41.0"}, "quantization": {
    "quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8", "quantized_layers": {
        "model.layers.0.mlp.experts.0.gate_proj": {"quant_algo": "NVFP4", "group_size": 16},
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}}}}, indent=1)
_VS = ("vllm", "serve", "ckpt")


def _spec(**kv: object) -> tuple[str, ...]:
    return ("--speculative-config", json.dumps(kv))


def _vfiles(*, env: str = SM120_ENV, **ck: object) -> dict[str, str]:
    out = dict(_VL)
    out.update(checkpoint_files(**ck))  # type: ignore[arg-type]
    out["env.txt"] = env
    return out


def _vex(fires: bool, note: str, args: tuple[str, ...], **files: object) -> Example:
    return Example(fires=fires, files=lambda: _vfiles(**files), args=args, note=note)  # type: ignore[arg-type]


_VSRC = "vllm 0.33.0 vllm/config/speculative.py"
RULES: tuple[Rule, ...] = (
    R("MTP320", "vllm-spec-config-rejected", E, "vLLM rejects the speculative config before the model loads",
      "Replays what vLLM does with --speculative-config (JSON, --speculative-config.KEY, and the --spec-method/--spec-model/"
      "--spec-tokens shorthand of 0.33.0) up to the proposer: an option that takes one value given none (argparse "
      "'expected one argument'); invalid JSON; a shorthand key also in the JSON ('mutually "
      "exclusive'); a --spec-* option this version lacks; a method outside the validated SpeculativeMethod Literal (0.11.0: "
      "glm4_moe_mtp is in the alias set but not in the Literal); an MTP method with neither num_speculative_tokens nor model "
      "(no draft config is built, _verify_args raises); num_speculative_tokens without a model for a method that needs one; "
      "an explicit method no auto-detection test matches (NotImplementedError); num_speculative_tokens not a multiple of "
      "the draft's MTP layers; num_speculative_tokens draft slots that do not fit in max_num_batched_tokens (VllmConfig's 'not enough slots' check, 0.33.0; exact with --max-num-batched-tokens, else only above a proven bound of the default); no proposer for the method in the runner; no model at all.",
      "The engine exits during config creation with a ValueError / NotImplementedError / pydantic error. The failure is "
      "early, but {\"method\": \"deepseek_mtp\"} alone (the most common MTP config in forum posts) is one of them: without "
      "num_speculative_tokens the draft = target rewrite does not happen.",
      "Apply the corrected command (facts.launch.summary.corrected_command, evaluated again before it is shown); or fix the "
      "key named in the finding.",
      (f"{_VSRC}:1252-1295 (draft = target needs num_speculative_tokens), :1497 (NotImplementedError), :1603-1612 (divisibility), "
       ":1947 (_verify_args)", "vllm 0.11.0 vllm/config/speculative.py:213-238, :389-394, :520",
       "vllm 0.33.0 vllm/engine/arg_utils.py:1864-1872, :2108-2121"),
      "code",
      (_vex(True, "deepseek-style MTP method without num_speculative_tokens", _VS + _spec(method="qwen3_5_mtp")),
       _vex(False, "num_speculative_tokens given: the target is its own draft", _VS + _spec(method="qwen3_5_mtp", num_speculative_tokens=1)))),
    R("MTP321", "vllm-method-overridden", W, "vLLM's auto-detection silently replaces the method the command gives",
      "Runs the auto-detection elif chain of SpeculativeConfig.__post_init__ (the analyzer's auto-detect rewrites, in source "
      "order) on the draft after hf_config_override: a method other than the ones it keeps (eagle, eagle3 [, dflash, dspark]) "
      "is replaced when a test matches, e.g. {\"method\": \"draft_model\", \"model\": <a DeepSeek or Qwen3.5 checkpoint>} "
      "runs as mtp.",
      "The command says one thing and vLLM runs another, with no log line: the proposer, the draft architecture and the "
      "acceptance rate are those of the other method.",
      "Write the method vLLM runs (the finding names it), or pick a draft that is not an MTP checkpoint.",
      (f"{_VSRC}:1431-1499 (auto-detection)", "vllm 0.11.0 vllm/config/speculative.py:313-353"),
      "code",
      (_vex(True, "draft_model on the Qwen3.5 MTP checkpoint becomes mtp", _VS + _spec(method="draft_model", model="ckpt", num_speculative_tokens=1)),
       _vex(False, "mtp as given", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP322", "vllm-draft-class-not-registered", E, "The draft architecture after hf_config_override is not in this vLLM's registry",
      "Runs SpeculativeConfig.hf_config_override statically on the checkpoint's model_type and architectures[0] together "
      "and looks the architectures it writes up in the model registry (vllm/model_executor/models/registry.py).",
      "The draft ModelConfig asks the registry for a class it does not have: the engine stops while building the draft.",
      "Use a vLLM version that registers the MTP class (`mtp-audit vllm` lists mtp_classes), or drop --speculative-config.",
      (f"{_VSRC} hf_config_override", "vllm/model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS"),
      "code",
      (Example(True, lambda: dict(_vfiles(), **{"vl/vllm/model_executor/models/registry.py": _VL_REGISTRY.replace('    "Qwen3_5MoeMTP": ("qwen3_5_mtp", "Qwen3_5MoeMTP"),\n', "")}),
               _VS + _spec(method="mtp", num_speculative_tokens=1), "Qwen3_5MoeMTP is not registered"),
       _vex(False, "Qwen3_5MoeMTP is registered", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP323", "vllm-num-speculative-tokens", INFO, "num_speculative_tokens against the checkpoint's MTP layers",
      "Reads the draft's n_predict the way hf_config_override does (num_nextn_predict_layers, text_config."
      "mtp_num_hidden_layers, ... as declared in config.json) and applies vLLM's rules: not given -> silently the layer count "
      "(only where no earlier statement raises: with a model given, the MTP auto-detection compares num_speculative_tokens > 1 "
      "first and None raises TypeError, MTP320); more than one token -> the same MTP layer runs several times (vLLM logs a "
      "warning). The divisibility error is MTP320.",
      "A silent default hides how many tokens are drafted; running one MTP layer k times lowers the acceptance rate of the "
      "later tokens. Neither stops the server (hence info).",
      "Give num_speculative_tokens explicitly; with one MTP layer, measure the acceptance rate before going above 1-3.",
      (f"{_VSRC}:1483-1491 (reuse warning), :1601-1603 (default)", "vllm 0.11.0 vllm/config/speculative.py:333, :388"),
      "code",
      (_vex(True, "two tokens on the checkpoint's one MTP layer: the layer runs twice", _VS + _spec(method="mtp", num_speculative_tokens=2)),
       _vex(False, "one token for one layer", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP324", "vllm-mtp-without-weights", E, "vLLM runs the mtp method but the draft checkpoint has no MTP tensors",
      "Fires when the method after aliasing and auto-detection is mtp and the checkpoint the draft loads from (the target "
      "when model is omitted) has no MTP tensors (decided from the index or shard headers).",
      "The MTP draft class finds no weights: the load fails, or the draft runs uninitialised and every token is rejected. "
      "Real case: REAP-pruned Qwen3.5-25B-A3B keeps mtp_num_hidden_layers=1 but ships none of its mtp.* tensors.",
      "Drop --speculative-config (the corrected command does), or use a checkpoint that ships its MTP weights.",
      ("fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding", f"{_VSRC} hf_config_override (qwen3_5_moe -> Qwen3_5MoeMTP)"),
      "real checkpoint",
      (_vex(True, "mtp on a checkpoint without mtp.* tensors", _VS + _spec(method="mtp", num_speculative_tokens=1), mtp=False),
       _vex(False, "mtp on a checkpoint with its MTP layer", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP325", "vllm-mtp-heads-unused", INFO, "The checkpoint carries MTP heads but the vLLM command has no speculative config",
      "Fires when the checkpoint has MTP tensors and the command gives no --speculative-config (nor --spec-*).",
      "vLLM skips the MTP weights and decodes one token per step; the heads shipped for faster decoding are idle.",
      "Add --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":N}' (N = the MTP layer count) if memory allows.",
      ("vLLM docs features/spec_decode (MTP)", f"{_VSRC} __post_init__"),
      "documentation",
      (_vex(True, "MTP present, no speculative config", _VS),
       _vex(False, "speculative config given", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
    R("MTP326", "vllm-env-var-not-read", W, "A VLLM_* spec-decode / FP4 / MoE variable of the launch that this vLLM does not define",
      "For each VLLM_* variable of the launch (KEY=VALUE before the program, --env, or the current environment) whose name "
      "is about speculative decoding, FP4 or MoE kernels, looks it up in this vLLM's vllm/envs.py (facts.vllm.env_vars).",
      "vLLM ignores a variable it does not define (recent versions log 'Unknown vLLM environment variable detected'). "
      "0.24 retired ten FP4/MoE backend variables (VLLM_USE_FLASHINFER_MOE_FP4, ...) in favour of --moe-backend, so a "
      "recipe written for an older release silently runs another MoE kernel.",
      "Remove the variable; choose the FP4/MoE kernel with --moe-backend (0.24+).",
      ("vllm 0.11.0 vllm/envs.py VLLM_USE_FLASHINFER_MOE_FP4", "vllm 0.33.0 vllm/envs.py (no VLLM_USE_FLASHINFER_MOE_FP4), "
       "vllm/engine/arg_utils.py:1845 --moe-backend", "wheel:vllm-0.20.0:vllm/envs.py vs wheel:vllm-0.24.0:vllm/envs.py (0.24 env-var retirement)"),
      "code",
      (_vex(True, "VLLM_USE_FLASHINFER_MOE_FP4=1 on a vLLM whose envs.py does not define it",
            ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + _VS + _spec(method="mtp", num_speculative_tokens=1)),
       Example(False, lambda: dict(_vfiles(), **{"vl/vllm/envs.py": 'environment_variables = {\n    "VLLM_USE_FLASHINFER_MOE_FP4": lambda: False,\n}\n'}),
               ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + _VS + _spec(method="mtp", num_speculative_tokens=1), "defined in this vLLM's envs.py"))),
    R("MTP327", "vllm-default-model-served", E, "vLLM serves its default model, not the checkpoint meant",
      "Fires when the command names no model vLLM reads: `vllm serve` with neither a positional model nor --model, or the "
      "api_server entry point given the model as a positional argument (its parser, make_arg_parser, declares the optional "
      "model_tag positional, but only `vllm serve` copies it to --model).",
      "The server starts without an error and serves ModelConfig's default model (facebook/opt-125m in 0.8.5-0.9.2, "
      "Qwen/Qwen3-0.6B from 0.11.0 to 0.33.0), not the checkpoint meant: the MTP heads, the FP4 kernels and the answers are "
      "those of another model.",
      "Name the model: vllm serve MODEL, or --model MODEL (the corrected command does where the model is known).",
      ("vllm 0.8.5 vllm/engine/arg_utils.py:206 (model: str = 'facebook/opt-125m'), vllm 0.9.2 vllm/config.py:233",
       "vllm 0.11.0 vllm/entrypoints/cli/serve.py:47-48 (args.model = args.model_tag), vllm/entrypoints/openai/api_server.py:1942-1953, "
       "vllm/entrypoints/openai/cli_args.py:241, vllm/config/model.py:92",
       "vllm 0.33.0 vllm/entrypoints/launchers/api_server/entry.py:204-226, vllm/entrypoints/common/cli_args.py:439, vllm/config/model.py:155"),
      "code",
      (_vex(True, "api_server with a positional model", ("python", "-m", "vllm.entrypoints.openai.api_server", "ckpt")),
       _vex(False, "api_server with --model", ("python", "-m", "vllm.entrypoints.openai.api_server", "--model", "ckpt")))),
    R("MTP328", "vllm-too-few-gpus", E, "The vLLM command needs more GPUs than this node shows it",
      "Computes the GPUs one node of a vLLM launch uses (mtp_audit.engines.sglang.launch.parallel.plan_vllm: -tp x -pp per replica, / --nnodes, "
      "x the local data-parallel ranks) and compares them with the CUDA devices visible (the preflight's GPUs after a "
      "CUDA_VISIBLE_DEVICES of the launch, by CUDA's rules). A blocking gap when the GPUs are unknown.",
      "vLLM starts one worker per GPU of the local world; with fewer devices it stops while creating the workers, before the "
      "model loads but after the config and tokenizer are read.",
      "Lower -tp (or -pp / -dp), widen CUDA_VISIBLE_DEVICES, or run on a larger node.",
      ("vllm 0.20.0 vllm/config/parallel.py (world_size = pipeline_parallel_size x tensor_parallel_size)",
       "vllm 0.20.0 vllm/engine/arg_utils.py (-tp, -pp, -dp, -dpl, --nnodes)", "CUDA C++ Programming Guide: CUDA_VISIBLE_DEVICES"),
      "code",
      (_vex(True, "-tp 2 on a one-GPU machine", _VS + ("-tp", "2")),
       _vex(False, "-tp 1 on a one-GPU machine", _VS + ("-tp", "1")))),
    R("MTP329", "vllm-quantization-rejected", E, "vLLM refuses the checkpoint's quantization config or the --quantization given",
      "Replays, statement by statement from this vLLM's source, how the quantization method is resolved: the quant_method "
      "normalisation of ModelOpt configs (vllm/transformers_utils/model_arch_config_convertor.py), then "
      "ModelConfig._verify_quantization (vllm/config/model.py): every listed method's override_quantization_method in the "
      "source's order of preference, then the 'does not match' and 'Unknown quantization method' refusals. Fires when a "
      "statement of that chain raises.",
      "The engine exits while building ModelConfig, before any weight is read; e.g. a ModelOpt MIXED_PRECISION checkpoint "
      "(Nemotron-3-Super-120B-A12B-NVFP4) on a release whose normaliser knows only FP8/NVFP4, or an FP8 checkpoint launched "
      "with --quantization modelopt_fp4.",
      "Drop --quantization (vLLM reads the method from the checkpoint), or use a release that knows the checkpoint's scheme "
      "(the finding names the raising file:line).",
      ("vllm 0.33.0 vllm/transformers_utils/model_arch_config_convertor.py:241-283, vllm/config/model.py:1383-1470",
       "vllm 0.24.0 vllm/transformers_utils/model_arch_config_convertor.py:228 ('Unknown ModelOpt quant algo')",
       "https://github.com/vllm-project/vllm/issues/37854"),
      "code",
      (Example(True, lambda: dict(_vfiles(), **{"ckpt/hf_quant_config.json": _MIXED, "vl/vllm/transformers_utils/model_arch_config_convertor.py":
                                                _VL_CONVERTOR.replace('"MIXED_PRECISION"', '"NOT_KNOWN_HERE"')}),
               _VS, "MIXED_PRECISION on a release whose normaliser does not know it"),
       _vex(False, "NVFP4 checkpoint, no --quantization", _VS, nvfp4=True))),
    R("MTP330", "vllm-quantization-replaced", W, "vLLM silently replaces the --quantization method the command gives",
      "The same replay as MTP329: fires when the method vLLM keeps differs from --quantization because an "
      "override_quantization_method answered first (ModelOpt MIXED_PRECISION: --quantization modelopt_fp4 runs as "
      "modelopt_mixed, 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1663).",
      "The command names one quantization method and another runs, with no log line: its kernels, its FP4/FP8 split per "
      "layer and its memory are those of the other method.",
      "Write the method vLLM runs (the finding names it), or drop --quantization.",
      ("vllm 0.33.0 vllm/config/model.py:1429-1450", "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1658-1664"),
      "code",
      (Example(True, lambda: dict(_vfiles(), **{"ckpt/hf_quant_config.json": _MIXED}), _VS + ("--quantization", "modelopt_fp4"),
               "--quantization modelopt_fp4 on a MIXED_PRECISION checkpoint"),
       _vex(False, "--quantization modelopt_fp4 on an NVFP4 checkpoint", _VS + ("--quantization", "modelopt_fp4"), nvfp4=True))),
    R("MTP331", "vllm-foreign-option", E, "The command passes another engine's option, which vLLM refuses",
      "Options that belong to SGLang (--speculative-algorithm, --speculative-num-steps, --model-path, --tp-size, ...), "
      "llama.cpp (--spec-type) or TensorRT-LLM (--extra_llm_api_options) in a vLLM command. vLLM's option table is not "
      "read as a whole, but these names are not vLLM's in any release checked.",
      "vLLM's argparse exits with 'unrecognized arguments' before anything loads; the speculative setting meant by the "
      "option never reaches vLLM.",
      "Use vLLM's spelling: --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}' for MTP, "
      "--tensor-parallel-size for --tp-size, the model as the first argument for --model-path.",
      ("vllm 0.33.0 vllm/entrypoints/cli/main.py:110 (parser.parse_args: unknown options are an error)",), "code",
      (_vex(True, "SGLang's --speculative-algorithm", _VS + ("--speculative-algorithm", "NEXTN")),
       _vex(False, "vLLM's --speculative-config", _VS + _spec(method="mtp", num_speculative_tokens=1)))),
)

RULES = RULES + (
    R("MTP332", "vllm-attention-backend-rejected", E, "vLLM refuses the attention backend at start-up on this GPU and model",
      "Replays, statement by statement from this vLLM's source, the CUDA platform's get_attn_backend_cls (the class named "
      "by vllm/platforms/__init__.py's CUDA plugin) with the launch's values: the declared GPU's compute capability, the "
      "checkpoint's head size, dtype, MLA use and sparse indexer, --kv-cache-dtype, --block-size and the backend chosen by "
      "--attention-backend / --attention-config (0.11.0: VLLM_ATTENTION_BACKEND). Each backend's validate_configuration "
      "and supports_* checks are replayed from the backend's own module and its base classes. Fires when that code "
      "raises: an unknown backend name, an explicit backend whose checks fail (FLASHINFER_MLA on SM90: 'compute "
      "capability not supported'; a non-MLA backend for an MLA model), or no valid backend at all.",
      "The server exits while the model's attention layers are built, after the config is read and often after minutes "
      "of start-up; with tensor parallelism every worker dies with the same ValueError.",
      "Drop the explicit backend (vLLM picks the highest-priority valid one) or choose one the finding lists as valid; "
      "for the automatic case change --kv-cache-dtype or --block-size.",
      ("vllm 0.33.0 vllm/platforms/cuda.py:84-181 (priorities), :420-518 (get_attn_backend_cls, :443 the selected-backend "
       "ValueError, :472 no valid backend)", "vllm 0.33.0 vllm/v1/attention/backend.py:279-370 (validate_configuration)",
       "vllm 0.24.0 vllm/platforms/cuda.py:395-490", "vllm 0.11.0 vllm/platforms/cuda.py:240-390",
       "https://github.com/vllm-project/vllm/issues/40153 (GPT-OSS-20B, forced FLASHINFER on SM120: 'attention sinks')",
       "https://github.com/vllm-project/vllm/issues/32732 (DeepSeek-R1-NVFP4 on SM120: no valid backend in 0.14.0)"),
      "code",
      (_vex(True, "--attention-backend FLASHINFER_MLA for a non-MLA model on SM120", _VS + ("--attention-backend", "FLASHINFER_MLA")),
       _vex(False, "--attention-backend FLASH_ATTN", _VS + ("--attention-backend", "FLASH_ATTN")))),
)

_VL_PP_SPEC = _VL_SPEC + """
    @staticmethod
    def create_draft_parallel_config(target_parallel_config, speculative_draft_tensor_parallel_size):
        return ParallelConfig(pipeline_parallel_size=target_parallel_config.pipeline_parallel_size,
                              tensor_parallel_size=speculative_draft_tensor_parallel_size)
"""
_VL_QWEN_MTP = """from torch import nn


class Qwen3_5MoeMTP(nn.Module, QwenNextMixtureOfExperts):
    pass
"""


def _vdepth(*, metadata: str | None = None, pp_spec: str | None = None, mtp_pp: bool = False,
            env: str = SM120_ENV) -> dict[str, str]:
    """The example vLLM tree with a ``METADATA`` beside it (``Requires-Dist`` lines), a draft parallel config that
    inherits (or not) the target's pipeline size, and the Qwen3.5 MTP draft class (with or without SupportsPP)."""
    out = _vfiles(env=env)
    if metadata is not None:
        out["vl/vllm-0.33.0.dist-info/METADATA"] = "Metadata-Version: 2.1\nName: vllm\nVersion: 0.33.0\n" + metadata
    if pp_spec is not None:
        out["vl/vllm/config/speculative.py"] = pp_spec
        out["vl/vllm/model_executor/models/qwen3_5_mtp.py"] = (
            _VL_QWEN_MTP.replace("QwenNextMixtureOfExperts)", "QwenNextMixtureOfExperts, SupportsPP)") if mtp_pp else _VL_QWEN_MTP)
    return out


def _dex(fires: bool, note: str, args: tuple[str, ...], **files: object) -> Example:
    return Example(fires=fires, files=lambda: _vdepth(**files), args=args, note=note)  # type: ignore[arg-type]


_MTP_SPEC = _spec(method="mtp", num_speculative_tokens=1)
_V24 = "vllm 0.24.0 vllm/config/speculative.py"

RULES = RULES + (
    R("MTP337", "vllm-pipeline-parallel-draft-refused", E, "vLLM refuses --pipeline-parallel-size with this draft",
      "A launch with --pipeline-parallel-size above 1 and a speculative method that loads a draft model (mtp, eagle, "
      "draft_model, ...). Reads, from this release's source, whether SpeculativeConfig.create_draft_parallel_config gives "
      "the draft the target's pipeline_parallel_size, and, from the model registry and the draft's module, whether the "
      "draft class implements SupportsPP (a base named SupportsPP or supports_pp = True, following bases of the same "
      "module). A blocking gap when either cannot be told.",
      "vLLM validates the draft's ModelConfig against the draft's ParallelConfig; with the target's pipeline size and a "
      "draft class without SupportsPP, verify_with_parallel_config raises NotImplementedError ('Pipeline parallelism is "
      "not supported for this model') and the server exits before the model loads. 0.24.0 copies the pipeline size; "
      "0.33.0 gives the draft pipeline_parallel_size=1.",
      "Drop --pipeline-parallel-size (tensor parallelism shards the MTP layer too), or use a release whose draft gets "
      "pipeline_parallel_size=1.",
      (_V24 + ":985-1003 (create_draft_parallel_config: pipeline_parallel_size=target_parallel_config.pipeline_parallel_size)",
       _V24 + ":1053-1055 (draft_model_config.verify_with_parallel_config(draft_parallel_config))",
       "vllm 0.24.0 vllm/config/model.py:1175-1182 (NotImplementedError ... 'implement the `SupportsPP` interface')",
       "vllm 0.24.0 vllm/model_executor/models/deepseek_mtp.py:208 (class DeepSeekMTP(nn.Module, DeepseekV2MixtureOfExperts))",
       _VSRC + ":1904-1905 (0.33.0: the draft's pipeline_parallel_size=1)"),
      "code",
      (_dex(True, "-pp 2 with MTP; the draft inherits pp; Qwen3_5MoeMTP has no SupportsPP", _VS + _MTP_SPEC + ("-pp", "2"),
            pp_spec=_VL_PP_SPEC),
       _dex(False, "-pp 2 with MTP; the draft class implements SupportsPP", _VS + _MTP_SPEC + ("-pp", "2"),
            pp_spec=_VL_PP_SPEC, mtp_pp=True),
       _dex(False, "no -pp", _VS + _MTP_SPEC, pp_spec=_VL_PP_SPEC))),
    R("MTP338", "vllm-mtp-memory-per-gpu", INFO, "Memory the MTP draft's weights take on each GPU at load",
      "Divides the checkpoint's MTP bytes (exact from safetensors headers, else estimated from config) by "
      "--tensor-parallel-size (vLLM builds the MTP layer with the target's TP) and compares them with the smallest GPU "
      "the preflight saw: info below 10% of a GPU, warning from 10%, error above it. The figure is the load-time peak; "
      "the steady state is not derived (a release may share the target's embedding and LM head with the draft).",
      "The MTP layer of an FP4 checkpoint is usually kept in BF16 (about 4x its FP4 size) and comes on top of the "
      "target's weights: at low tensor parallelism it eats the KV cache or fails at start-up.",
      "Raise --tensor-parallel-size, lower --gpu-memory-utilization, or use a checkpoint whose MTP layer is quantized.",
      ("nvidia/Qwen3.5-397B-A17B-NVFP4 hf_quant_config.json (its MTP layer is stored BF16)",
       "vllm 0.33.0 vllm/config/speculative.py (the draft's tensor_parallel_size defaults to the target's)"),
      "real checkpoint",
      (_dex(True, "MTP launch", _VS + _MTP_SPEC), _dex(False, "no speculative config", _VS))),
    R("MTP339", "vllm-torch-pin-mismatch", W, "The machine's torch is not the one the vLLM release pins",
      "Reads the release's METADATA (the wheel's, or the dist-info beside a package folder) for Requires-Dist: torch "
      "(0.33.0: torch==2.14.0; 0.24.0: torch==2.11.0) and compares it with the machine's torch (an environment dump's "
      "PyTorch line, the installed package). An error when this very release is installed beside another torch; a "
      "warning when it is not installed (installing it replaces torch). A checkout without METADATA or an unknown torch "
      "is a note.",
      "vLLM's compiled ops (vllm._C, the MoE and attention kernels) are built against the pinned torch's C++ ABI: with "
      "another torch they fail to import (undefined symbol) and the server does not start; the FP4 verdict of the "
      "preflight says nothing about this.",
      "Install the pinned torch (pip install 'torch==X', the CUDA build the release was built for), or the vLLM release "
      "built for the machine's torch.",
      ("vllm 0.33.0 wheel METADATA (Requires-Dist: torch==2.14.0)", "vllm 0.24.0 wheel METADATA (Requires-Dist: torch==2.11.0)"),
      "code",
      (_dex(True, "vLLM pins torch==2.14.0, the machine has torch 2.9.1", _VS, metadata="Requires-Dist: torch==2.14.0\n"),
       _dex(False, "vLLM pins torch==2.9.1, the machine has torch 2.9.1+cu129", _VS, metadata="Requires-Dist: torch==2.9.1\n"))),
)

RULES_BY_ID = {r.id: r for r in RULES}
