"""What llama.cpp (and its ik_llama.cpp fork) does with MTP / NextN heads, as sourced data: one row per fact,
each with the pull request, release or report it comes from. No engine code is copied; the rows were read
from the ggml-org/llama.cpp and ikawrakow/ik_llama.cpp pull requests and issues they cite.

Builds are llama.cpp release numbers (``b9180``; ``llama-server --version`` prints ``version: 10444 (037f2f344)``
or ``build 10444``). Where a source names the release, the row says so (``build_source="release"``); where
only the pull request's merge date is known, the build is *estimated* from dated releases (about 14 builds a
day between b9180 on 2026-05-16, b9305 by 2026-05-25, b10444 on 2026-08-15 and b10741 by 2026-09-03) and a
build within :data:`ESTIMATE_MARGIN` (about three days) of it is "could not tell", never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Builds either side of an estimated boundary that cannot be decided (about three days of releases: the date-to-build
#: rate varies by about 10 % between the anchors, and a merge reaches the next release within a day).
ESTIMATE_MARGIN = 45


@dataclass(frozen=True)
class ArchSupport:
    """Whether a GGUF architecture has a ``draft-mtp`` graph, and since which build.

    Attributes:
        arch: ``general.architecture`` value (``"qwen35moe"``).
        family: the model family, for messages.
        since_build: first build with the graph; None when no merged build has one.
        build_source: ``"release"`` (a source names the release) or ``"estimated"`` (from the merge date).
        source: the pull request / report.
        note: what else to know (e.g. "nextn tensors kept but unused").
        sidecar: the MTP head ships as a separate ``mtp-*.gguf`` passed with ``-md``.
        heads_chained: the loader requires every ``nextn_predict_layers`` block and chains them.
    """

    arch: str
    family: str
    since_build: int | None
    build_source: str
    source: str
    note: str = ""
    sidecar: bool = False
    heads_chained: bool = False


ARCH_SUPPORT: tuple[ArchSupport, ...] = (
    ArchSupport("qwen35", "Qwen3.5 / 3.6 / 3.8 dense", 9180, "release",
                "ggml-org/llama.cpp PR #22673 'llama + spec: MTP Support' (merged 2026-05-16, release b9180: "
                "lmstudio-ai/lmstudio-bug-tracker #1924)"),
    ArchSupport("qwen35moe", "Qwen3.5 / 3.6 MoE", 9180, "release", "ggml-org/llama.cpp PR #22673 (release b9180)"),
    ArchSupport("gemma4", "Gemma-4 (target of an assistant drafter)", 9236, "estimated",
                "ggml-org/llama.cpp PR #23398 (2026-05-20: -md mtp-gemma-4-31B-it.gguf --spec-type draft-mtp)",
                note="the MTP head is a separate assistant GGUF passed with -md", sidecar=True),
    ArchSupport("gemma4_assistant", "Gemma-4 assistant drafter", 9236, "estimated",
                "ggml-org/llama.cpp PR #23398 (merged 2026-05-20); #23161 (b9190: unknown model architecture "
                "'gemma4_assistant')", sidecar=True),
    ArchSupport("gemma4-assistant", "Gemma-4 assistant drafter", 9236, "estimated",
                "ggml-org/llama.cpp PR #23398; PR #28183 'model : fix gemma4-assistant' (2026-09-01)", sidecar=True),
    ArchSupport("gemma4_mtp", "Gemma-4 assistant drafter (ik_llama.cpp schema)", None, "release",
                "ikawrakow/ik_llama.cpp PR #1744 (2026-05-06), PR #1783",
                note="an ik_llama.cpp architecture name; mainline llama.cpp loads gemma4_assistant drafters", sidecar=True),
    ArchSupport("step35", "Step-3.5 / 3.7 Flash", 9580, "estimated",
                "ggml-org/llama.cpp PR #24340 'Support Step3.5/3.7 flash mtp3' (2026-06-14)",
                note="3 heads, chained: the loader requires all nextn blocks; n_max is clamped to the head count",
                heads_chained=True),
    ArchSupport("cohere2moe", "Cohere2-MoE (community MTP packs)", 9545, "estimated",
                "ggml-org/llama.cpp PR #24260 (2026-06-11); PR #25980 names it the fourth in-tree draft-mtp graph",
                note="no official Cohere2-MoE release ships MTP weights (maintainer, PR #24260)"),
    ArchSupport("qwen3next", "Qwen3-Next", 9980, "estimated",
                "ggml-org/llama.cpp PR #25589 'model: MTP support for Qwen3-Next' (2026-07-12)"),
    ArchSupport("glm-dsa", "GLM-5.x (DSA)", 10120, "estimated",
                "ggml-org/llama.cpp PR #25980 'NextN/MTP speculative decoding support for GLM_DSA' (2026-07-22)"),
    ArchSupport("deepseek2", "DeepSeek-V3.2 (deepseek2 path)", 10270, "estimated",
                "ggml-org/llama.cpp PR #26457 (2026-08-02)"),
    ArchSupport("glm4moe", "GLM-4.5 / 4.6 / 4.7", None, "release",
                "gguf-py 0.19.0 constants.py (GLM4_MOE tensor list: 'NextN/MTP tensors - preserved but unused'); "
                "lemonade-sdk/lemonade #2451 (draft-mtp on a glm4moe GGUF crashes)",
                note="nextn tensors are kept in the GGUF but no llama.cpp build has a draft-mtp graph for glm4moe"),
    ArchSupport("mimo2", "MiMo-V2 / V2.5", None, "release",
                "ggml-org/llama.cpp #22493 (2026-05-07: 'model has unused tensor blk.48.nextn.eh_proj ... ignoring')",
                note="nextn tensors are saved by the converter and ignored by the loader"),
    ArchSupport("qwen4exp", "Qwen3.8-Flash-Next", None, "release",
                "ggml-org/llama.cpp #27742 (converter: supports_mtp_export = False); MTP only in open PRs #27836, "
                "#28243 (2026-08/09)",
                note="merged builds have no MTP graph for qwen4exp; forks with the open PRs do"),
)

ARCH_BY_NAME: dict[str, ArchSupport] = {a.arch: a for a in ARCH_SUPPORT}


@dataclass(frozen=True)
class Trap:
    """A known failure of MTP on some llama.cpp builds.

    Attributes:
        key: stable identifier used by the launch checks.
        first_build / last_build: inclusive range of affected builds (None = open-ended).
        fixed_in: the first build with the fix, when known.
        summary: one line.
        source: pull request / issue.
        build_source: ``"release"`` or ``"estimated"`` (see the module docstring).
    """

    key: str
    first_build: int | None
    last_build: int | None
    fixed_in: int | None
    summary: str
    source: str
    build_source: str = "release"


TRAPS: tuple[Trap, ...] = (
    Trap("nextn-layer-heads", 10741, 10748, 10749,
         "draft-mtp cannot start on any GGUF with an MTP head: the nextn layer gets n_head_kv = 0 and the graph "
         "reservation asserts (GGML_ASSERT(a->ne[0] == b->ne[0]))",
         "ggml-org/llama.cpp #28196 comment (2026-09-03): regression from #28159, fixed by #28173, first fixed "
         "release b10749; b10741-b10743 reported broken"),
    Trap("parallel-slots", 9180, None, None,
         "on some builds draft-mtp acceptance collapses on slots other than 0 (per-slot draft state not armed; "
         "multi-ubatch t_h_nextn race on HIP)",
         "spiritbuun/buun-llama-cpp PR #110 (2026-08-30: slot id > 0 at ~2.7% acceptance); ggml-org/llama.cpp "
         "#27572 (2026-08-22, HIP); unslothai/unsloth PR #8172 (on b10310 four CUDA slots measured 1.97x one slot: "
         "not every build and backend is affected, no fixing release is known)",
         "estimated"),
    Trap("nvfp4-mtp-scales-load", 9180, 9279, 9280,
         "an NVFP4 GGUF whose MTP eh_proj/shared_head_head carry .scale/.input_scale fails to load "
         "('wrong number of tensors') on builds without the MTP scale tensors",
         "ggml-org/llama.cpp PR #23563 'Add NVFP4 MTP scale tensors' (merged 2026-05-23)", "estimated"),
    Trap("nvfp4-mtp-scales-no-mtp", 9280, 10609, 10610,
         "an NVFP4 GGUF with an MTP block fails to load when MTP is not enabled: the loader skips the nextn .weight "
         "but not its .scale/.input_scale ('wrong number of tensors; expected 1194, got 1178')",
         "ggml-org/llama.cpp PR #27736 (2026-08-26)", "estimated"),
    Trap("split-mode-tensor", 9180, None, None,
         "a GGUF with nextn tensors crashes with --split-mode tensor",
         "ggml-org/llama.cpp #24309 (cited by zephel01/CodeRouter PR #59, 2026-07-09)"),
)

TRAP_BY_KEY: dict[str, Trap] = {t.key: t for t in TRAPS}


@dataclass(frozen=True)
class Fork:
    """Flag spellings of one llama.cpp code base.

    Attributes:
        name: ``"llama.cpp"`` or ``"ik_llama.cpp"``.
        mtp_spec_type: the ``--spec-type`` value that runs the model's own MTP head.
        spec_types: every ``--spec-type`` value the fork accepts (chains join them with commas).
        source: where the spellings come from.
    """

    name: str
    mtp_spec_type: str
    spec_types: frozenset[str]
    source: str


FORKS: dict[str, Fork] = {
    "llama.cpp": Fork(
        "llama.cpp", "draft-mtp",
        frozenset({"none", "draft-simple", "draft-eagle3", "draft-mtp", "ngram-cache", "ngram-simple", "ngram-map-k",
                   "ngram-map-k4v", "ngram-mod"}),
        "ggml-org/llama.cpp PR #22673 review (2026-05-13: COMMON_SPECULATIVE_TYPE_DRAFT_MTP -> 'draft-mtp'; "
        "'draft' became 'draft-simple'); chains such as ngram-mod,draft-mtp: PR #23269 thread (2026-05-19)"),
    "ik_llama.cpp": Fork(
        "ik_llama.cpp", "mtp",
        frozenset({"none", "mtp", "draft", "ngram-cache", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod"}),
        "ikawrakow/ik_llama.cpp PR #2369 (2026-08-30: --spec-type mtp[:n_max=..,p_min=..]); "
        "Thireus/GGUF-Tool-Suite #87 (2026-08-20)"),
}

#: ``--spec-type`` spelled ``mtp`` before the rename (am17an's branch, before release b9180).
RENAMED_SPEC_TYPES: dict[str, str] = {"mtp": "draft-mtp", "draft": "draft-simple"}

#: The default of ``--spec-draft-n-max``: 16 before the MTP clean-up, 3 after it.
N_MAX_DEFAULTS: tuple[tuple[int, int, str], ...] = (
    (0, 16, "ggml-org/llama.cpp common/common.h before PR #23269"),
    (9210, 3, "ggml-org/llama.cpp PR #23269 'llama : MTP clean-up' (2026-05-18: --spec-draft-n-max default 16 -> 3)"),
)

#: First build with ``--spec-type draft-mtp`` at all.
FIRST_MTP_BUILD = 9180


def n_max_default(build: int | None) -> tuple[int | None, str]:
    """The ``--spec-draft-n-max`` default of a build (None when the build is unknown or too close to the
    estimated change) and its source."""
    if build is None:
        return None, N_MAX_DEFAULTS[-1][2]
    change = N_MAX_DEFAULTS[-1][0]
    if abs(build - change) <= ESTIMATE_MARGIN // 4:
        return None, N_MAX_DEFAULTS[-1][2]
    row = N_MAX_DEFAULTS[-1] if build >= change else N_MAX_DEFAULTS[0]
    return row[1], row[2]


def within(build: int, first: int | None, last: int | None, *, estimated: bool) -> bool | None:
    """Whether ``build`` lies in ``[first, last]``; None ("could not tell") when the range is estimated and
    ``build`` is within :data:`ESTIMATE_MARGIN` of an end."""
    margin = ESTIMATE_MARGIN if estimated else 0
    lo = first if first is not None else -1
    hi = last if last is not None else 1 << 40
    if lo + margin <= build <= hi - margin:
        return True
    if build < lo - margin or build > hi + margin:
        return False
    return None


def arch_has_mtp_graph(arch: str | None, build: int | None) -> tuple[bool | None, ArchSupport | None]:
    """Whether ``arch`` has a ``draft-mtp`` graph in ``build`` (None build: the newest known build).

    Returns:
        ``(answer, row)``: answer None means could not tell (unknown architecture, or a build too close to an
        estimated boundary); row is the table row when there is one.
    """
    row = ARCH_BY_NAME.get(arch or "")
    if row is None:
        return None, None
    if row.since_build is None:
        return False, row
    if build is None:
        return True, row
    return within(build, row.since_build, None, estimated=row.build_source == "estimated"), row
