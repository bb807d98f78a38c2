"""MTP4xx rules of the vLLM analyzer: declarations only (the checks live in
:mod:`mtp_audit.engines.vllm.findings` and :mod:`mtp_audit.engines.vllm.diff`; examples run through
:func:`mtp_audit.engines.vllm.examples.run_example`).

Examples are small hand-written snippets in the shape of the real code (vllm/config/speculative.py
of 0.11.0 / 0.33.0), never copied vLLM files.
"""

from __future__ import annotations

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule

_SP = "vllm/config/speculative.py"
_REG = "vllm/model_executor/models/registry.py"
_ENVS = "vllm/envs.py"
_RUNNER = "vllm/v1/worker/gpu_model_runner.py"
_TU = "vllm/transformers_utils/config.py"
_ARGS = "vllm/engine/arg_utils.py"

_HEAD = '''from typing import Literal, get_args

from pydantic.dataclasses import dataclass

logger = None

'''
_ALIAS_TUPLE = _HEAD + '''SpeculativeMethod = Literal["eagle", "draft_model", "deepseek_mtp", "mtp"]
MTP_MODEL_TYPES = ("deepseek_mtp", "glm4_moe_mtp")


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.method in MTP_MODEL_TYPES:
            logger.warning("method `%s` is deprecated and replaced with mtp.", self.method)
            self.method = "mtp"
'''
_ALIAS_LITERAL = _HEAD + '''MTPModelTypes = Literal["deepseek_mtp", "glm4_moe_mtp", "mtp"]
EagleModelTypes = Literal["eagle", MTPModelTypes]
SpeculativeMethod = Literal["draft_model", EagleModelTypes]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.method in get_args(MTPModelTypes) and self.method != "mtp":
            logger.warning("method `%s` is deprecated and replaced with mtp.", self.method)
            self.method = "mtp"
'''
_NO_ALIAS = _HEAD + '''SpeculativeMethod = Literal["eagle", "draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None
'''
_AUTODETECT = _HEAD + '''SpeculativeMethod = Literal["eagle", "eagle3", "draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.model is not None:
            self.draft_model_config = ModelConfig(model=self.model, hf_overrides=SpeculativeConfig.hf_config_override)
            if self.method in ("eagle", "eagle3"):
                pass
            elif "eagle-" in self.draft_model_config.model.lower():
                self.method = "eagle"
            elif self.draft_model_config.hf_config.model_type == "deepseek_mtp":
                self.method = "mtp"
'''
_AUTODETECT_LOGGED = _AUTODETECT.replace('''                self.method = "mtp"
''', '''                logger.warning("method replaced by mtp")
                self.method = "mtp"
''').replace('''                self.method = "eagle"
''', '''                logger.warning("method replaced by eagle")
                self.method = "eagle"
''')
_DRAFT_TARGET = _HEAD + '''SpeculativeMethod = Literal["draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.model is None and self.num_speculative_tokens is not None:
            if self.method == "mtp":
                self.model = self.target_model_config.model
                if not self.quantization:
                    self.quantization = self.target_model_config.quantization
'''
_DRAFT_EXPLICIT = _HEAD + '''SpeculativeMethod = Literal["draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.model is None:
            raise ValueError("model is required")
'''
_OVERRIDE = _HEAD + '''SpeculativeMethod = Literal["draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    @staticmethod
    def hf_config_override(hf_config):
        if hf_config.model_type == "deepseek_v3":
            hf_config.model_type = "deepseek_mtp"
        if hf_config.model_type == "deepseek_mtp":
            n_predict = getattr(hf_config, "num_nextn_predict_layers", None)
            hf_config.update({"n_predict": n_predict, "architectures": ["DeepSeekMTPModel"]})
        return hf_config

    def __post_init__(self):
        self.draft_model_config = ModelConfig(model=self.model, hf_overrides=SpeculativeConfig.hf_config_override)
'''
_REG_OK = '''_SPECULATIVE_DECODING_MODELS = {
    "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
}
'''
_REG_OTHER = '''_SPECULATIVE_DECODING_MODELS = {
    "EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM"),
}
'''
_NPREDICT = _HEAD + '''SpeculativeMethod = Literal["draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        n_predict = getattr(self.draft_model_config.hf_config, "n_predict", None)
        if n_predict is not None:
            if self.num_speculative_tokens is None:
                self.num_speculative_tokens = n_predict
            elif self.num_speculative_tokens % n_predict != 0:
                raise ValueError(f"num_speculative_tokens must be divisible by {n_predict=}")
'''
_SPECULATORS_DROP = '''def maybe_override_with_speculators(model, tokenizer, trust_remote_code, vllm_speculative_config=None):
    config_dict = get_config_dict(model)
    speculators_config = config_dict.get("speculators_config")
    if speculators_config is None:
        return model, tokenizer, vllm_speculative_config
    vllm_speculative_config = SpeculatorsConfig.extract_vllm_speculative_config(config_dict)
    vllm_speculative_config["model"] = model
    verifier_model = speculators_config["verifier"]["name_or_path"]
    model = tokenizer = verifier_model
    return model, tokenizer, vllm_speculative_config
'''
_NO_SPECULATORS = '''def get_config(model):
    return None
'''
_PAREN = _HEAD + '''SpeculativeMethod = Literal["draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    @staticmethod
    def hf_config_override(hf_config):
        if hf_config.model_type in ("pangu_ultra_moe"):
            hf_config.model_type = "pangu_ultra_moe_mtp"
        return hf_config
'''
_PAREN_OK = _PAREN.replace('("pangu_ultra_moe")', '("pangu_ultra_moe",)')
_ORACLE = '''class EngineArgs:
    def _is_v1_supported_oracle(self, model_config):
        if self.speculative_config is not None:
            speculative_method = self.speculative_config.get("method")
            if speculative_method in ("ngram", "[ngram]"):
                return True
            elif speculative_method in ("eagle", "eagle3"):
                return True
        return False
'''
_ORACLE_MTP = _ORACLE.replace('("eagle", "eagle3")', '("eagle", "eagle3", "deepseek_mtp")')
_FORCED = _HEAD + '''SpeculativeMethod = Literal["draft_model", "mtp"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.method == "mtp":
            if self.target_model_config.hf_text_config.model_type == "deepseek_v32":
                self.enforce_eager = True
'''
_FORCED_DEFAULT = _FORCED.replace('if self.target_model_config.hf_text_config.model_type == "deepseek_v32":',
                                  'if self.enforce_eager is None:')
_USE_EAGLE = '''
    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3", "mtp")
'''
_RUNNER_SRC = '''class GPUModelRunner:
    def __init__(self, vllm_config):
        if self.speculative_config:
            if self.speculative_config.method == "ngram":
                self.drafter = NgramProposer(self.vllm_config)
            elif self.speculative_config.use_eagle():
                self.drafter = EagleProposer(self.vllm_config, self.device, self)
'''
_ENV_OLD = '''environment_variables = {
    "VLLM_USE_FLASHINFER_MOE_FP4": lambda: bool(int(os.getenv("VLLM_USE_FLASHINFER_MOE_FP4", "0"))),
    "VLLM_USE_V1": lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),
}
'''
_ENV_NEW = '''environment_variables = {
    "VLLM_USE_V1": lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),
}
'''
_LIT_OLD = _NO_ALIAS.replace('["eagle", "draft_model", "mtp"]', '["eagle", "medusa", "draft_model", "mtp"]')
_REG_TWO = _REG_OK.replace("}\n", '    "Glm4MoeMTPModel": ("glm4_moe_mtp", "Glm4MoeMTP"),\n}\n')
_SP_NEW_ALIAS = _ALIAS_TUPLE.replace('''            self.method = "mtp"
''', '''            self.method = "mtp"
        if self.model is not None:
            if self.method in ("eagle",):
                pass
            elif self.draft_model_config.hf_config.model_type == "glm4_moe_mtp":
                self.method = "mtp"
''')


_WITH_FIELD = _NO_ALIAS + '''    disable_padded_drafter_batch: bool = False
'''


def _diff(old: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    return {**{"old/" + k: v for k, v in old.items()}, **{"new/" + k: v for k, v in new.items()}}


RULES: tuple[Rule, ...] = (
    Rule(
        id="MTP400", name="mtp-method-alias", analyzer="vllm", severity=Severity.INFO,
        summary="A per-architecture MTP method name is an alias that vLLM rewrites to 'mtp'",
        what="Finds the write `self.method = \"mtp\"` in SpeculativeConfig.__post_init__ guarded by a test of the method "
             "against an alias set (a module tuple MTP_MODEL_TYPES in 0.11.0, the Literal MTPModelTypes through get_args "
             "from 0.11.1), and whether a log call sits next to it.",
        why="`{\"method\": \"deepseek_mtp\"}` does not select a DeepSeek-specific path: it runs the EAGLE machinery with the "
            "target checkpoint as its own draft. Integrations that compare the method name after start-up see 'mtp'.",
        fix="Pass {\"method\": \"mtp\"} on vLLM 0.11.0 and later; nothing else changes.",
        sources=("vllm/config/speculative.py:214-216 (0.11.0), :1247-1250 (0.33.0)",
                 "https://github.com/vllm-project/vllm/pull/25232"),
        basis="code",
        examples=(
            Example(True, {_SP: _ALIAS_TUPLE}, note="deepseek_mtp / glm4_moe_mtp become mtp after a warning"),
            Example(True, {_SP: _ALIAS_LITERAL}, note="0.11.1+ shape: get_args(MTPModelTypes) minus 'mtp'"),
            Example(False, {_SP: _NO_ALIAS}, note="no alias rewrite"),
        ),
    ),
    Rule(
        id="MTP401", name="explicit-method-overridden", analyzer="vllm", severity=Severity.WARNING,
        summary="Auto-detection silently replaces a method the user set explicitly",
        what="Finds `self.method = ...` writes in the else-branch of `if self.method in (<kept>): pass` in "
             "SpeculativeConfig.__post_init__: every explicit method outside the kept set is re-derived from the draft's "
             "name (`\"eagle-\" in model.lower()`) or the draft's model_type, without a log line.",
        why="{\"method\": \"draft_model\", \"model\": <a DeepSeek-V3 / GLM-4.5 / Qwen3.5 checkpoint>} runs the draft's MTP head "
            "instead of the draft model (hf_config_override rewrote its model_type first); {\"method\": \"mtp\", \"model\": "
            "\"/ckpt/my-eagle-run\"} runs EAGLE.",
        fix="Use a method in the kept set, or a draft path whose name and model_type agree with the method you want; check "
            "the startup log's speculative config.",
        sources=("vllm/config.py:2377-2388 (0.8.5)", "vllm/config/speculative.py:317-348 (0.11.0)",
                 "https://github.com/vllm-project/vllm/pull/16636"),
        basis="code",
        examples=(
            Example(True, {_SP: _AUTODETECT}, note="mtp / draft_model / ... are re-derived silently"),
            Example(False, {_SP: _AUTODETECT_LOGGED}, note="every override logs"),
            Example(False, {_SP: _NO_ALIAS}, note="no auto-detection"),
        ),
    ),
    Rule(
        id="MTP402", name="alias-rejected-by-validator", analyzer="vllm", severity=Severity.ERROR,
        summary="An MTP alias the code would rewrite is missing from the validated method Literal",
        what="Compares the alias set of the `self.method = \"mtp\"` rewrite with the SpeculativeMethod Literal of the "
             "`method` field, when SpeculativeConfig is a pydantic dataclass (pydantic.dataclasses.dataclass from 0.9.2; "
             "@config from 0.16).",
        why="pydantic rejects the value before __post_init__ runs: `{\"method\": \"glm4_moe_mtp\"}` fails to start on vLLM "
            "0.11.0 although the alias code lists it.",
        fix="Pass {\"method\": \"mtp\"} instead of the per-architecture name.",
        sources=("vllm/config/speculative.py:32 and :36 (0.11.0)", "https://github.com/vllm-project/vllm-ascend/pull/4072"),
        basis="code",
        examples=(
            Example(True, {_SP: _ALIAS_TUPLE}, note="glm4_moe_mtp is in MTP_MODEL_TYPES but not in SpeculativeMethod"),
            Example(False, {_SP: _ALIAS_LITERAL}, note="the alias set is part of the Literal"),
            Example(False, {_SP: _ALIAS_TUPLE.replace("from pydantic.dataclasses import dataclass", "from dataclasses import dataclass")},
                    note="stdlib dataclass: the Literal is not enforced"),
        ),
    ),
    Rule(
        id="MTP403", name="vllm-draft-defaults-to-target", analyzer="vllm", severity=Severity.INFO,
        summary="Without a draft model vLLM uses the target checkpoint as the draft and copies its quantization",
        what="Finds `self.model = self.target_model_config.model` (0.33.0: `model_weights or model`) and "
             "`self.quantization = self.target_model_config.quantization` in SpeculativeConfig.__post_init__ with their guards "
             "(0.8.5-0.10.2: keyed on the target's model_type, whatever the method; 0.11.0+: method == 'mtp').",
        why="The MTP head is loaded from the target checkpoint only through this default, and with the target's "
            "quantization (e.g. --quantization fp8 on a BF16 checkpoint); neither is logged.",
        fix="Nothing if that is what you want; pass \"model\" and \"quantization\" in --speculative-config otherwise.",
        sources=("vllm/config.py:2299 (0.8.5)", "vllm/config/speculative.py:229-233 (0.11.0), :1261-1268 (0.33.0)"),
        basis="code",
        examples=(
            Example(True, {_SP: _DRAFT_TARGET}, note="model and quantization copied from the target"),
            Example(False, {_SP: _DRAFT_EXPLICIT}, note="the draft must be given"),
        ),
    ),
    Rule(
        id="MTP404", name="draft-architecture-chain", analyzer="vllm", severity=Severity.INFO,
        summary="hf_config_override rewrites the draft config's model_type and architectures to an MTP class",
        what="Interprets SpeculativeConfig.hf_config_override statically once per model_type / architecture it tests "
             "(two-step chains, conditional IfExp targets, local dict lookups, text_config rebinding, f-string targets "
             "marked dynamic) and follows it to the draft ModelConfig(hf_overrides=...) call, directly or through "
             "compose_draft_hf_overrides (0.25+). The chains are in facts.draft_chains.",
        why="This is how a target checkpoint becomes its own MTP draft: DeepSeek-V3 -> deepseek_mtp -> DeepSeekMTPModel. "
            "It is applied to every draft, including an explicit draft_model, and never logged.",
        fix="Check that your checkpoint's model_type / architectures appear in the chains; otherwise pass an explicit draft.",
        sources=("vllm/config/speculative.py:148-200 (0.11.0), :711-1170 (0.33.0)",
                 "https://github.com/vllm-project/vllm/pull/12755 (DeepSeek MTP spec decode)",
                 "https://github.com/vllm-project/vllm/pull/25232 (MTP method names consolidated into mtp)"),
        basis="code",
        examples=(
            Example(True, {_SP: _OVERRIDE, _REG: _REG_OK}, note="deepseek_v3 -> deepseek_mtp -> DeepSeekMTPModel"),
            Example(False, {_SP: _NO_ALIAS}, note="no hf_config_override"),
        ),
    ),
    Rule(
        id="MTP405", name="draft-class-not-registered", analyzer="vllm", severity=Severity.ERROR,
        summary="A draft architecture written by hf_config_override is not in the model registry",
        what="Joins every literal architecture target of the draft chains (and of __post_init__ writes) with the "
             "dictionaries of vllm/model_executor/models/registry.py.",
        why="vLLM resolves the draft class from the registry: an unregistered name fails at start-up "
            "(\"Model architectures [...] are not supported\").",
        fix="Use a vLLM version whose registry has the class, or pass a draft checkpoint of a registered architecture.",
        sources=("vllm/model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS (0.8.5 L215, 0.33.0 L655)",),
        basis="code",
        examples=(
            Example(True, {_SP: _OVERRIDE, _REG: _REG_OTHER}, note="DeepSeekMTPModel is not registered"),
            Example(False, {_SP: _OVERRIDE, _REG: _REG_OK}, note="registered"),
        ),
    ),
    Rule(
        id="MTP406", name="num-speculative-tokens-vs-mtp-layers", analyzer="vllm", severity=Severity.INFO,
        summary="num_speculative_tokens defaults silently to the draft's MTP layer count and must divide by it",
        what="Finds in SpeculativeConfig.__post_init__ the silent default `self.num_speculative_tokens = n_predict`, the "
             "divisibility ValueError and the 'same MTP layer' warning with the model types it skips.",
        why="Leaving num_speculative_tokens out gives as many tokens as the checkpoint has MTP layers; a larger value "
            "re-runs the same layers (lower acceptance, e.g. qwen3_5_mtp reusing layer 0) and a non-multiple fails to start.",
        fix="Set num_speculative_tokens to the checkpoint's num_nextn_predict_layers (or a multiple, knowingly).",
        sources=("vllm/config.py:2418-2422 (0.8.5)", "vllm/config/speculative.py:333, :388-392 (0.11.0)",
                 "https://github.com/vllm-project/vllm/pull/13626", "https://github.com/vllm-project/vllm/issues/52688"),
        basis="code",
        examples=(
            Example(True, {_SP: _NPREDICT}, note="default and divisibility rule present"),
            Example(False, {_SP: _NO_ALIAS}, note="no n_predict handling"),
        ),
    ),
    Rule(
        id="MTP407", name="speculators-replaces-model", analyzer="vllm", severity=Severity.WARNING,
        summary="A speculators-format --model checkpoint is replaced by its verifier and becomes the draft",
        what="Finds maybe_override_with_speculators in vllm/transformers_utils/config.py and whether it merges the user's "
             "speculative config (`.update(vllm_speculative_config)`, 0.29+) or replaces it, and whether it logs.",
        why="`vllm serve <speculators checkpoint>` serves a different model than named; before 0.29 any "
            "--speculative-config passed with it is dropped, silently.",
        fix="Pass the verifier as --model and the speculators checkpoint in --speculative-config explicitly.",
        sources=("vllm/transformers_utils/config.py:470 (0.11.0), :800 (0.33.0)", "https://github.com/vllm-project/vllm/pull/25250"),
        basis="code",
        examples=(
            Example(True, {_TU: _SPECULATORS_DROP, _SP: _NO_ALIAS}, note="the user's speculative config is replaced"),
            Example(False, {_TU: _NO_SPECULATORS, _SP: _NO_ALIAS}, note="no speculators support"),
        ),
    ),
    Rule(
        id="MTP408", name="parenthesised-string-in-test", analyzer="vllm", severity=Severity.WARNING,
        summary="An `in` test against a parenthesised single string is a substring test, not a tuple membership",
        what="Flags `x in (\"name\")` in the SpeculativeConfig source: the parentheses do not make a tuple.",
        why="`model_type in (\"pangu_ultra_moe\")` is also true for \"pangu\" or \"ultra\": a draft config can be rewritten "
            "to the wrong MTP class; when the same name is tested earlier the branch is dead code.",
        fix="Report it upstream; the fix is a trailing comma (`(\"name\",)`) or `==`.",
        sources=("vllm/config/speculative.py:339 (0.11.0, longcat_flash_mtp), :777 (0.33.0, pangu_ultra_moe)",),
        basis="code",
        examples=(
            Example(True, {_SP: _PAREN}, note='in ("pangu_ultra_moe")'),
            Example(False, {_SP: _PAREN_OK}, note='in ("pangu_ultra_moe",)'),
        ),
    ),
    Rule(
        id="MTP409", name="mtp-not-on-v1-engine", analyzer="vllm", severity=Severity.WARNING,
        summary="The V1 engine's oracle does not accept any MTP method, so MTP runs on V0 or fails",
        what="Reads the speculative methods EngineArgs._is_v1_supported_oracle accepts (vllm/engine/arg_utils.py, 0.8-0.10).",
        why="On 0.8.x an MTP draft falls back to the V0 engine (a warning) or raises with VLLM_USE_V1=1.",
        fix="Upgrade to 0.9+ (V1 accepts deepseek_mtp) or run V0 knowingly.",
        sources=("vllm/engine/arg_utils.py:1430-1436 (0.8.5)", "vllm/engine/arg_utils.py:1434 (0.9.2)"),
        basis="code",
        examples=(
            Example(True, {_ARGS: _ORACLE, _SP: _NO_ALIAS}, note="only ngram / eagle / eagle3"),
            Example(False, {_ARGS: _ORACLE_MTP, _SP: _NO_ALIAS}, note="deepseek_mtp accepted"),
        ),
    ),
    Rule(
        id="MTP410", name="setting-forced-silently", analyzer="vllm", severity=Severity.WARNING,
        summary="SpeculativeConfig forces enforce_eager regardless of the user's value",
        what="Finds `self.enforce_eager = True` in SpeculativeConfig under a guard that does not test enforce_eager itself "
             "(0.11.0-0.28.0: a DeepSeek-V3.2 target with method mtp).",
        why="CUDA graphs are turned off for the draft although the user asked for them: throughput drops, silently.",
        fix="Expect eager-mode drafting on this target, or upgrade past 0.28.",
        sources=("vllm/config/speculative.py:227 (0.11.0)",),
        basis="code",
        examples=(
            Example(True, {_SP: _FORCED}, note="forced for deepseek_v32"),
            Example(False, {_SP: _FORCED_DEFAULT}, note="only fills an unset value"),
        ),
    ),
    Rule(
        id="MTP411", name="mtp-proposer-per-runner", analyzer="vllm", severity=Severity.INFO,
        summary="Which proposer class runs method 'mtp' on each model runner",
        what="Maps the `self.drafter = XProposer(...)` branches of vllm/v1/worker/gpu_model_runner.py and the `return "
             "XSpeculator(...)` branches of vllm/v1/worker/gpu/spec_decode/__init__.py to methods, through the "
             "SpeculativeConfig.use_*() predicates, and reads the VLLM_USE_V2_MODEL_RUNNER default.",
        why="The same {\"method\": \"mtp\"} runs EagleProposer on the V1 runner but MTPSpeculator / MultiModuleMTPSpeculator "
            "on the V2 runner (0.23+), and Gemma4 / Step3.5 have their own classes first.",
        fix="Set VLLM_USE_V2_MODEL_RUNNER explicitly when comparing runs.",
        sources=("vllm/v1/worker/gpu_model_runner.py:283-284 (0.11.0), :641-651 (0.33.0)",
                 "vllm/v1/worker/gpu/spec_decode/__init__.py (0.33.0)"),
        basis="code",
        examples=(
            Example(True, {_SP: _NO_ALIAS.replace("method: SpeculativeMethod | None = None\n", "method: SpeculativeMethod | None = None\n" + _USE_EAGLE),
                           _RUNNER: _RUNNER_SRC}, note="mtp -> EagleProposer"),
            Example(False, {_SP: _NO_ALIAS}, note="no runner source"),
        ),
    ),
    Rule(
        id="MTP420", name="rewrite-changed", analyzer="vllm", severity=Severity.WARNING,
        summary="An upgrade added, removed or changed a rewrite of a speculative-config field",
        what="Compares the field rewrites of two versions by (field, kind, value, from) wherever they live (a moved line "
             "is not a change) and reports added, removed and now-silent ones.",
        why="A new silent override changes what your --speculative-config means after the upgrade.",
        fix="Read the new rewrite's condition and location; adjust --speculative-config before upgrading.",
        sources=("mtp-audit vllm --compare (docs/vllm.md)",),
        basis="code",
        examples=(
            Example(True, _diff({_SP: _ALIAS_TUPLE}, {_SP: _SP_NEW_ALIAS}), args=("--diff",), note="a new auto-detect override"),
            Example(False, _diff({_SP: _ALIAS_TUPLE}, {_SP: _ALIAS_TUPLE}), args=("--diff",), note="same code"),
        ),
    ),
    Rule(
        id="MTP421", name="method-choice-removed", analyzer="vllm", severity=Severity.WARNING,
        summary="An upgrade removed a value from the validated speculative method Literal",
        what="Compares the SpeculativeMethod Literal of two versions.",
        why="A --speculative-config that worked before fails validation after the upgrade (0.33.0 dropped medusa and "
            "mlp_speculator).",
        fix="Replace the removed method in your launch command.",
        sources=("vllm/config/speculative.py SpeculativeMethod (0.20.0 vs 0.33.0)",),
        basis="code",
        examples=(
            Example(True, _diff({_SP: _LIT_OLD}, {_SP: _NO_ALIAS}), args=("--diff",), note="medusa dropped"),
            Example(False, _diff({_SP: _NO_ALIAS}, {_SP: _LIT_OLD}), args=("--diff",), note="a value added"),
        ),
    ),
    Rule(
        id="MTP422", name="env-var-removed", analyzer="vllm", severity=Severity.WARNING,
        summary="An upgrade removed a spec-decode / MTP / FP4 / MoE environment variable",
        what="Compares the relevant names defined in vllm/envs.py (environment_variables) of two versions.",
        why="A removed variable is ignored: 0.24.0 retired ten FP4/MoE variables in favour of --moe-backend, and an old "
            "setting then only triggers the 'Unknown vLLM environment variable' warning.",
        fix="Use the replacement flag (e.g. --moe-backend) named in the new version's docs.",
        sources=("vllm/envs.py (0.20.0 vs 0.33.0)",),
        basis="code",
        examples=(
            Example(True, _diff({_ENVS: _ENV_OLD, _SP: _NO_ALIAS}, {_ENVS: _ENV_NEW, _SP: _NO_ALIAS}), args=("--diff",), note="FP4 variable gone"),
            Example(False, _diff({_ENVS: _ENV_OLD, _SP: _NO_ALIAS}, {_ENVS: _ENV_OLD, _SP: _NO_ALIAS}), args=("--diff",), note="unchanged"),
        ),
    ),
    Rule(
        id="MTP423", name="vllm-mtp-class-removed", analyzer="vllm", severity=Severity.WARNING,
        summary="An upgrade removed an MTP model class or a draft-architecture chain",
        what="Compares the registry's MTP classes and the draft chains (key -> architectures) of two versions.",
        why="Without the class (or the rewrite to it) the target's MTP head can no longer be used as the draft.",
        fix="Stay on the old version for that architecture or check the new class name.",
        sources=("vllm/model_executor/models/registry.py", "vllm/config/speculative.py hf_config_override"),
        basis="code",
        examples=(
            Example(True, _diff({_REG: _REG_TWO, _SP: _NO_ALIAS}, {_REG: _REG_OK, _SP: _NO_ALIAS}), args=("--diff",), note="Glm4MoeMTPModel gone"),
            Example(False, _diff({_REG: _REG_OK, _SP: _NO_ALIAS}, {_REG: _REG_TWO, _SP: _NO_ALIAS}), args=("--diff",), note="a class added"),
        ),
    ),
)

RULES = RULES + (
    Rule(
        id="MTP424", name="speculative-config-key-removed", analyzer="vllm", severity=Severity.WARNING,
        summary="An upgrade removed a --speculative-config key or restricted it to some methods",
        what="Compares the fields SpeculativeConfig(**...) accepts in two versions (annotated fields, not ClassVar, not "
             "field(init=False)), and, where the new version checks method-specific options against each SpeculatorConfig "
             "class's supported_options (0.34.0 speculative.py:1393-1401), which methods still accept each option.",
        why="vllm serve passes the JSON straight to SpeculativeConfig(**...), a pydantic dataclass with extra=\"forbid\": a "
            "key the new version lacks is refused ('Unexpected keyword argument') and the server does not start (0.34.0 "
            "removed disable_padded_drafter_batch and use_heterogeneous_vocab); an option used with another method raises "
            "ValueError('<option> is not supported with speculative method ...').",
        fix="Drop the removed key, or use the option only with a method whose SpeculatorConfig supports it.",
        sources=("vllm/config/utils.py config (ConfigDict(extra=\"forbid\"))", "vllm/config/speculative.py (0.33.0 vs 0.34.0)",
                 "vllm/v1/worker/gpu/spec_decode/*/config.py supported_options (0.34.0)"),
        basis="code",
        examples=(
            Example(True, _diff({_SP: _WITH_FIELD}, {_SP: _NO_ALIAS}), args=("--diff",), note="disable_padded_drafter_batch gone"),
            Example(False, _diff({_SP: _NO_ALIAS}, {_SP: _WITH_FIELD}), args=("--diff",), note="a key added"),
        ),
    ),
)

BY_ID = {r.id: r for r in RULES}
