"""MTP1xx rules of the SGLang analyzer: what SGLang will do with ``--speculative-algorithm NEXTN``
and which CLI values it rewrites, and (MTP110-113) what changed between two versions.

Facts come from SGLang source (cited per rule). Examples are small hand-written snippets in the
shape of the real code, never copied SGLang files.
"""

from __future__ import annotations

from mtp_audit.report import Severity
from mtp_audit.report.rules import Example, Rule

_SA_NEXTN_SILENT = '''class ServerArgs:
    def _handle_speculative_decoding(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument(
            "--speculative-algorithm",
            type=str,
            choices=["EAGLE", "NEXTN"],
        )
'''
_SA_NO_NEXTN = '''class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument(
            "--speculative-algorithm",
            type=str,
            choices=["EAGLE"],
        )
'''
_SA_ACCEPTS_NO_REMAP = '''class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument(
            "--speculative-algorithm",
            type=str,
            choices=["EAGLE", "NEXTN"],
        )
'''
_SA_NO_SPEC = '''class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--quantization", type=str, choices=["fp8", "modelopt_fp4"])
'''
_SA_FILL = '''class ServerArgs:
    def _handle_speculative_decoding(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"
        if self.speculative_draft_model_path is None:
            self.speculative_draft_model_path = self.model_path

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-algorithm", type=str, choices=["EAGLE", "NEXTN"])
'''
_SA_OLD_REMAP = _SA_NEXTN_SILENT
_SA_NEW_REMAP = _SA_NEXTN_SILENT.replace('"EAGLE"\n', '"EAGLE3"\n', 1)
_HOOK_MOVED = '''def handle(self):
    if self.speculative_algorithm == "NEXTN":
        self.speculative_algorithm = "EAGLE"
'''
_SA_QUANT_OLD = '''class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--quantization", type=str, choices=["fp8", "modelopt_fp4"])
'''
_SA_QUANT_NEW = _SA_QUANT_OLD.replace(', "modelopt_fp4"', "")
_ENV_OLD = '''class Envs:
    SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE = EnvBool(False)
'''
_ENV_NEW = '''class Envs:
    SGLANG_ENABLE_SPEC_V2 = EnvBool(False)
'''
_MODEL_OLD = '''class DeepseekV3ForCausalLMNextN:
    pass


EntryClass = [DeepseekV3ForCausalLMNextN]
'''
_MODEL_NEW = '''class DeepseekV3ForCausalLM:
    pass


EntryClass = [DeepseekV3ForCausalLM]
'''
_SP = "sglang/srt/server_args.py"
_MC = "sglang/srt/configs/model_config.py"
# The 0.5.9 shape (server_args.py:882-885, model_config.py:240-244 and 917-918), reduced to the lines that matter.
_SA_UNQUANT = '''class ServerArgs:
    def _handle_missing_default_values(self):
        if self.speculative_draft_model_quantization is None:
            self.speculative_draft_model_quantization = self.quantization
        elif self.speculative_draft_model_quantization == "unquant":
            self.speculative_draft_model_quantization = None

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-algorithm", type=str, choices=["EAGLE", "NEXTN"])
        parser.add_argument("--speculative-draft-model-quantization", type=str, choices=["fp8", "modelopt_fp4", "unquant"])
'''
_MC_REFILL = '''class ModelConfig:
    def __init__(self, model_path, quantization=None, is_draft_model=False):
        self.quantization = quantization
        self._verify_quantization()

    @staticmethod
    def from_server_args(server_args, model_path=None, is_draft_model=False):
        quantization = (
            server_args.speculative_draft_model_quantization
            if is_draft_model
            else server_args.quantization
        )
        return ModelConfig(model_path or server_args.model_path, quantization=quantization, is_draft_model=is_draft_model)

    def _verify_quantization(self):
        quant_method = self._parse_quant_hf_config()["quant_method"]
        if self.quantization is None:
            self.quantization = quant_method
'''
_MC_HONOURS = _MC_REFILL.replace("        if self.quantization is None:\n            self.quantization = quant_method\n",
                                 "        if self.quantization is None and not self.is_draft_model:\n"
                                 "            self.quantization = quant_method\n")

RULES: tuple[Rule, ...] = (
    Rule(
        id="MTP101", name="nextn-rewritten", analyzer="sglang", severity=Severity.INFO,
        summary="SGLang rewrites --speculative-algorithm NEXTN to another algorithm",
        what="Finds every place where the value NEXTN of --speculative-algorithm is replaced (direct "
             "assignment, helper return, declare_resolution, alias set looked up by "
             "SpeculativeAlgorithm.from_string) and says whether a log line is printed in that branch.",
        why="Informational: NEXTN is an alias. SGLang runs its EAGLE worker with the target checkpoint as its "
            "own draft and rewrites the draft architecture to the model's MTP class; nothing is wrong with that. "
            "It matters only when the chain does not end in an MTP class for your architecture (the draft then "
            "fails to load, as a confusing EAGLE error 30 minutes into the load), or when the rewrite is silent "
            "and users grep the logs for NEXTN (they will only find EAGLE).",
        fix="Nothing to change if the chain ends in an MTP class for your architecture (see the facts "
            "draft_arch_overrides and mtp_classes); otherwise pass --speculative-draft-model-path explicitly.",
        sources=("sglang/srt/server_args.py ServerArgs._handle_speculative_decoding (0.4.6-0.5.9)",
                 "sglang/srt/arg_groups/speculative_hook.py _resolve_speculative_algorithm_alias (0.5.15-0.5.23)",
                 "sglang/srt/speculative/spec_registry.py _RESERVED_ALIASES (0.5.20 on)"),
        basis="code",
        examples=(
            Example(True, {_SP: _SA_NEXTN_SILENT}, note="NEXTN is assigned EAGLE with no log call in the branch"),
            Example(False, {_SP: _SA_NO_NEXTN}, note="NEXTN is not a choice and never rewritten"),
        ),
    ),
    Rule(
        id="MTP102", name="nextn-remap-not-found", analyzer="sglang", severity=Severity.WARNING,
        summary="The tree accepts --speculative-algorithm NEXTN but no rewrite of NEXTN was found",
        what="Reports a tree whose --speculative-algorithm accepts NEXTN (choices, help text or an alias "
             "set) where no recognised code shape maps NEXTN to a worker algorithm.",
        why="Either SGLang handles NEXTN in a shape this analyzer does not know (so the audit cannot tell "
            "whether MTP heads are used), or NEXTN reaches the worker unmapped and fails at start-up.",
        fix="Read the places listed in nextn_accepted; if the rewrite moved, report the new shape to mtp-audit.",
        sources=("docs/sglang.md 'Shapes'", "an SGLang without the NEXTN -> EAGLE remap runs NEXTN as its own algorithm (docs/sglang.md 'Shapes')"),
        basis="code",
        examples=(
            Example(True, {_SP: _SA_ACCEPTS_NO_REMAP}, note="NEXTN is a choice but nothing rewrites it"),
            Example(False, {_SP: _SA_NEXTN_SILENT}, note="NEXTN is a choice and is rewritten to EAGLE"),
        ),
    ),
    Rule(
        id="MTP103", name="no-speculative-decoding", analyzer="sglang", severity=Severity.WARNING,
        summary="This SGLang has no --speculative-algorithm flag, so MTP/NextN heads are never used",
        what="Reports a tree whose server-arguments source (srt/server_args.py, plus srt/arg_groups/ from 0.5.15) "
             "was parsed and declares no --speculative-algorithm (SGLang 0.4.0 and older). Never concluded from an "
             "empty or unparseable server_args.py: that is a blocking gap (inconclusive).",
        why="Without speculative decoding the MTP/NextN weights of a checkpoint are loaded for nothing or skipped.",
        fix="Upgrade SGLang to a version that accepts --speculative-algorithm NEXTN (0.4.6 or later).",
        sources=("sglang/srt/server_args.py of 0.4.0 (no speculative flags) vs 0.4.3 (EAGLE only)",),
        basis="code",
        examples=(
            Example(True, {_SP: _SA_NO_SPEC}, note="only --quantization is declared"),
            Example(False, {_SP: _SA_NO_NEXTN}, note="--speculative-algorithm exists"),
        ),
    ),
    Rule(
        id="MTP104", name="nextn-not-accepted", analyzer="sglang", severity=Severity.WARNING,
        summary="--speculative-algorithm exists but does not accept NEXTN",
        what="Reports a tree whose --speculative-algorithm choices, help text and alias sets never mention NEXTN.",
        why="`--speculative-algorithm NEXTN` is rejected by argparse; MTP heads cannot be used by name.",
        fix="Upgrade SGLang (NEXTN is accepted from 0.4.6), or check whether EAGLE with an explicit draft works.",
        sources=("sglang/srt/server_args.py of 0.4.3: choices=['EAGLE']",),
        basis="code",
        examples=(
            Example(True, {_SP: _SA_NO_NEXTN}, note="choices are only EAGLE"),
            Example(False, {_SP: _SA_NEXTN_SILENT}, note="NEXTN is a choice"),
        ),
    ),
    Rule(
        id="MTP105", name="draft-defaults-to-target", analyzer="sglang", severity=Severity.INFO,
        summary="When --speculative-draft-model-path is omitted SGLang uses the target model as the draft",
        what="Finds assignments of the target model path to speculative_draft_model_path (explicit, under an "
             "architecture whitelist) and the implicit `model_path or server_args.model_path` in ModelConfig.",
        why="This is the link between NEXTN->EAGLE and the draft-architecture override to the MTP class: "
            "the MTP heads are loaded from the target checkpoint only through this default.",
        fix="Nothing, if your architecture is in the whitelist; otherwise pass --speculative-draft-model-path.",
        sources=("sglang/srt/server_args.py _handle_speculative_decoding (0.5.9: model_arch in [...])",
                 "sglang/srt/configs/model_config.py ModelConfig.from_server_args"),
        basis="code",
        examples=(
            Example(True, {_SP: _SA_FILL}, note="draft path is filled with model_path"),
            Example(False, {_SP: _SA_NEXTN_SILENT}, note="no draft path default"),
        ),
    ),
    Rule(
        id="MTP106", name="explicit-value-overwritten", analyzer="sglang", severity=Severity.WARNING,
        summary="An explicit speculative/quantization/FP4 flag value is turned into None after parsing and re-filled downstream",
        what="Follows the speculative-decoding, quantization and FP4/MoE-backend fields from the server-args hook "
             "that rewrites an explicit value to None (`if x.F == \"lit\": x.F = None`, or declare_resolution(F=None)) "
             "to the config class that consumes the field (`ModelConfig(quantization=...)` in from_server_args) and "
             "to a method of that class that re-fills it when None (`if self.quantization is None: self.quantization = "
             "quant_method`). Reports the rewrite and the re-fill with file:line each (mtp_audit/engines/sglang/flow.py).",
        why="The user's explicit value is silently undone. `--speculative-draft-model-quantization unquant` (meant to "
            "load a BF16 MTP draft from a quantized checkpoint) becomes None in the server-args hook and ModelConfig then "
            "re-detects the checkpoint's quantization for the draft, so the draft is built quantized anyway; seen in "
            "every SGLang release that accepts 'unquant' from 0.5.9 to 0.5.23 (0.5.4 has no such choice). The same "
            "happens to `--quantization unquant` for the target in 0.5.12-0.5.23, although the hook records the "
            "opt-out in _quantization_explicitly_unset.",
        fix="Do not rely on 'unquant': make the checkpoint's quantization config exclude the MTP modules (so the "
            "detected quantization leaves them BF16), or pass a concrete draft quantization that matches how the MTP "
            "weights are stored.",
        sources=("sglang 0.5.9 sglang/srt/server_args.py:882-885, configs/model_config.py:240-244 and 917-918",
                 "sglang 0.5.23 sglang/srt/arg_groups/serving_hook.py:704-709, configs/model_config.py:945-948 and 2106-2107"),
        basis="code",
        examples=(
            Example(True, {_SP: _SA_UNQUANT, _MC: _MC_REFILL}, note="unquant -> None, then re-filled from the checkpoint"),
            Example(False, {_SP: _SA_UNQUANT, _MC: _MC_HONOURS}, note="the re-fill is guarded, so None stays None"),
            Example(False, {_SP: _SA_UNQUANT}, note="no consumer re-fills the field"),
        ),
    ),
    Rule(
        id="MTP110", name="remap-changed", analyzer="sglang", severity=Severity.ERROR,
        summary="An upgrade added, removed or changed a rewrite of a CLI value",
        what="Compares the remaps and auto resolutions of two SGLang versions. A rewrite is identified by "
             "(argument, from, to) wherever it lives: a rewrite that only moved (0.5.9 server_args.py -> "
             "0.5.23 srt/arg_groups/) is not a change; dynamic targets are compared without their receiver "
             "(<self.revision> == <cfg.revision>). Each finding points at the new version's file:line, or for a "
             "removed rewrite at the old version's file:line (path relative to the old tree).",
        why="A new silent rewrite overrides a flag you pass without a log line; a removed one changes what your "
            "flags mean. Severity depends on relevance to MTP/NextN and FP4. Relevant arguments: every "
            "speculative_* argument, anything naming draft / MTP / NextN / FP4, and moe_runner_backend, "
            "fp4_gemm_backend, quantization, kv_cache_dtype, attention_backend (prefill_/decode_ too). "
            "A user's value is overridden when `from` is a value a user passes (a literal other than None/auto, "
            "or * = whatever was passed). Policy: relevant argument + silent + overrides a user's value = error; "
            "relevant argument + silent + only resolves a default (None/auto) = warning; other argument + silent + "
            "overrides a value the old version honoured (the flag existed, no rewrite from that value) = warning; "
            "a removed speculative_algorithm rewrite = warning; every other change (logged rewrites, removed "
            "rewrites, other arguments) = info. Each rewrite's guard is read from its function: the if branches, "
            "early returns and asserts before it (a check that raises instead of rewriting), locals and the "
            "release's one-line predicates (is_attention_backend_not_set) inlined, the guards around the calls of "
            "its function, the architectures a model override is registered for. A guard that never lets an explicit "
            "value through makes the rewrite one of an unset flag (or of the literals it compares); 'whatever value is "
            "passed' is said only when the guard is true for any value. A rewrite under a guard that is not certainly "
            "true (a platform, an environment variable, a model family, another flag) is at most a warning, and so is "
            "one of a literal the old version's choices refused (info). With a launch (mtp-audit launch --sglang OLD "
            "--compare-sglang NEW) each guard is evaluated against the command, checkpoint and GPU: only rewrites that "
            "apply keep their severity; those that cannot apply are left out.",
        fix="Read the new rewrite's condition and location; adjust your launch flags before upgrading.",
        sources=("docs/sglang.md (diff of two SGLang trees)", "mtp_audit/engines/sglang/diff.py rewrite_severity",
                 "mtp_audit/engines/sglang/guards.py (the guard of a rewrite)"),
        basis="code",
        examples=(
            Example(True, {"old/" + _SP: _SA_OLD_REMAP, "new/" + _SP: _SA_NEW_REMAP}, args=("--diff",), note="NEXTN now maps to EAGLE3"),
            Example(False, {"old/" + _SP: _SA_OLD_REMAP, "new/" + _SP: _SA_OLD_REMAP}, args=("--diff",), note="same code"),
            Example(False, {"old/" + _SP: _SA_OLD_REMAP, "new/" + _SP: _SA_NO_NEXTN, "new/sglang/srt/arg_groups/speculative_hook.py": _HOOK_MOVED},
                    args=("--diff",), note="the same NEXTN -> EAGLE rewrite moved to arg_groups/"),
        ),
    ),
    Rule(
        id="MTP111", name="cli-choice-removed", analyzer="sglang", severity=Severity.WARNING,
        summary="An upgrade removed a CLI flag or one of its choices",
        what="Compares the declared flags and their statically resolved choices of two versions.",
        why="A launch command that worked before is rejected by argparse after the upgrade.",
        fix="Replace the removed value in your launch command.",
        sources=("docs/sglang.md (diff of two SGLang trees)",),
        basis="code",
        examples=(
            Example(True, {"old/" + _SP: _SA_QUANT_OLD, "new/" + _SP: _SA_QUANT_NEW}, args=("--diff",), note="modelopt_fp4 dropped"),
            Example(False, {"old/" + _SP: _SA_QUANT_OLD, "new/" + _SP: _SA_QUANT_OLD}, args=("--diff",), note="same choices"),
        ),
    ),
    Rule(
        id="MTP112", name="env-var-changed", analyzer="sglang", severity=Severity.INFO,
        summary="An upgrade added or removed an NEXTN/MTP/SPEC/FP4 environment variable",
        what="Compares the defined and read environment variables whose names contain NEXTN, MTP, SPEC or FP4.",
        why="A removed variable is silently ignored: deployments that set it lose the behaviour.",
        fix="Check the new variable names in sglang/srt/environ.py.",
        sources=("sglang/srt/environ.py (e.g. SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE)",),
        basis="code",
        examples=(
            Example(True, {"old/sglang/srt/environ.py": _ENV_OLD, "new/sglang/srt/environ.py": _ENV_NEW, "old/" + _SP: _SA_NEXTN_SILENT, "new/" + _SP: _SA_NEXTN_SILENT}, args=("--diff",), note="one variable replaced"),
            Example(False, {"old/sglang/srt/environ.py": _ENV_OLD, "new/sglang/srt/environ.py": _ENV_OLD, "old/" + _SP: _SA_NEXTN_SILENT, "new/" + _SP: _SA_NEXTN_SILENT}, args=("--diff",), note="unchanged"),
        ),
    ),
    Rule(
        id="MTP113", name="mtp-class-removed", analyzer="sglang", severity=Severity.WARNING,
        summary="An upgrade removed an MTP/NextN model class or draft-architecture override",
        what="Compares EntryClass registrations of MTP/NextN classes and draft-architecture overrides.",
        why="Without the class (or the override to it) the draft for that architecture can no longer load its MTP heads.",
        fix="Stay on the old version for that architecture or check the new class name.",
        sources=("sglang/srt/models/*_nextn.py / *_mtp.py EntryClass", "sglang/srt/configs/model_config.py _config_draft_model"),
        basis="code",
        examples=(
            Example(True, {"old/sglang/srt/models/m.py": _MODEL_OLD, "new/sglang/srt/models/m.py": _MODEL_NEW, "old/" + _SP: _SA_NEXTN_SILENT, "new/" + _SP: _SA_NEXTN_SILENT}, args=("--diff",), note="NextN class gone"),
            Example(False, {"old/sglang/srt/models/m.py": _MODEL_OLD, "new/sglang/srt/models/m.py": _MODEL_OLD, "old/" + _SP: _SA_NEXTN_SILENT, "new/" + _SP: _SA_NEXTN_SILENT}, args=("--diff",), note="unchanged"),
        ),
    ),
)

BY_ID = {r.id: r for r in RULES}
