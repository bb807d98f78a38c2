"""Will SGLang draft with a checkpoint's MTP heads? SGLang's answer to the checkpoint analyzer's evidence
(:func:`sglang_uses_heads`, the :meth:`~mtp_audit.engines.sglang.launch.SGLangEngine.uses_heads` hook).

``--speculative-algorithm NEXTN`` is an alias: SGLang runs its EAGLE worker with the target checkpoint as its own
draft model and loads the MTP weights as the draft (``python/sglang/srt/server_args.py``: "NEXTN shares the same
implementation of EAGLE"; the draft model path defaults to the target model path; docs/sglang.md).
"""

from __future__ import annotations

from mtp_audit.checkpoint.heads import HeadsAnswer, HeadsEvidence, MtpQuantOverride

SGLANG_SOURCE = (
    "SGLang python/sglang/srt/server_args.py: '# NEXTN shares the same implementation of EAGLE' "
    "(speculative_algorithm NEXTN -> EAGLE); the draft model path defaults to the target model path"
)

TITLE = "Will SGLang use the MTP heads?"

#: Where SGLang builds the MTP module unquantized whatever the exclusion list says (Qwen3.5 dense and MoE share
#: ``qwen3_5_mtp.py``); read in the named wheel, re-read by ``tests/test_checkpoint_severity.py``.
LIST_OVERRIDES: tuple[MtpQuantOverride, ...] = (
    MtpQuantOverride(
        "SGLang", "0.5.23", "sglang/srt/models/qwen3_5_mtp.py", (65, 69),
        ("qwen3.5-moe", "qwen3.5-dense"), ("modelopt",), ("NVFP4",), ("mtp.*",),
        needle='quant_config.get_name() == "modelopt_fp4"',
        what="_mtp_quant_config returns None for a serialized modelopt_fp4 checkpoint: the whole MTP module is "
        "built BF16, whatever exclude_modules says",
    ),
)


def sglang_list_overrides() -> tuple[MtpQuantOverride, ...]:
    """SGLang's rows of "build the MTP module unquantized whatever the exclusion list says"
    (:meth:`~mtp_audit.engines.base.Engine.list_overrides`): :data:`LIST_OVERRIDES`."""
    return LIST_OVERRIDES


def _usability(ev: HeadsEvidence) -> tuple[bool | None, list[str], bool]:
    """``(usable, blocking rule ids (sorted, distinct), whether a wrong exclusion list is saved by SGLang's own
    override)``: whether SGLang gets working MTP heads, ``None`` when a blocking gap leaves it open.

    Any error means the load fails, computes garbage or cannot run, so the answer is never "yes" after one. A
    wrong exclusion list that only some engines override (MTP007 as a warning) blocks unless SGLang is one of them.
    """
    blocking = list(ev.errors)
    saved = bool(ev.list_overrides) and "MTP007" not in blocking
    if saved and not any(o.engine == "SGLang" for o in ev.list_overrides):
        blocking.append("MTP007")
        saved = False
    usable: bool | None
    if not ev.declared and not ev.mtp_tensors:
        usable = False
    elif not ev.tensors_known or ev.blocking_gap is not None:
        usable = None
    else:
        usable = bool(ev.mtp_tensors) and ev.declared and not blocking
    return usable, sorted(set(blocking)), saved


def _lines(ev: HeadsEvidence, usable: bool | None, blocking: list[str], saved: bool) -> tuple[str, ...]:
    """SGLang's lines of the closing section."""
    if usable is True:
        lines = ["SGLang: yes, with --speculative-algorithm NEXTN (an alias: SGLang runs its EAGLE worker with this "
                 "checkpoint as its own draft model and loads these MTP weights as the draft)."]
        if saved:
            who = " and ".join(o.where for o in ev.list_overrides)
            lines.append(f"  Only because {who} ignore(s) the wrong exclusion list (MTP007); an engine that "
                         "trusts the list fails to load these MTP weights.")
        return tuple(lines)
    if usable is False and blocking:
        return (f"SGLang: no, --speculative-algorithm NEXTN would not get working MTP heads ({', '.join(blocking)}).",)
    if usable is False:
        return ("SGLang: no MTP heads to use; speculative decoding would need a separate draft model.",)
    return ("SGLang: could not tell (see 'not examined').",)


def _declared_words(ev: HeadsEvidence) -> str:
    """``"config.json declares 1 MTP layer"``, ``"this family always carries 3 MTP layers"``, or ``""``."""
    declared = ev.declared_layers or 0
    plural = "s" if declared != 1 else ""
    if not ev.declared:
        return ""
    if ev.implicit:
        return f"this family always carries {declared} MTP layer{plural}"
    return f"config.json declares {declared} MTP layer{plural}"


def _answer(ev: HeadsEvidence, usable: bool | None, blocking: list[str]) -> str:
    """The one-line answer the text report opens with: what is declared, what ships, and whether
    ``--speculative-algorithm NEXTN`` gets working MTP heads."""
    what, n = _declared_words(ev), ev.mtp_tensors
    if usable is True:
        size = f", {ev.mtp_bytes:,} bytes" if isinstance(ev.mtp_bytes, int) else ""
        return (f"{what} and the checkpoint ships {n:,} MTP tensor{'s' if n != 1 else ''} ({ev.mtp_format}{size}); "
                "--speculative-algorithm NEXTN will use them as the draft")
    if usable is False:
        return _answer_no(ev, what, n, blocking)
    return _answer_unknown(ev, what, blocking)


def _answer_no(ev: HeadsEvidence, what: str, n: int, blocking: list[str]) -> str:
    """The answer when SGLang will not draft with the heads."""
    if blocking:
        ships = "the checkpoint ships none" if not n else f"its {n:,} MTP tensors are not usable"
        if not what:  # no declaration (no config.json, or none that declares MTP): say what ships
            ships = f"{n:,} MTP tensor{'s ship' if n != 1 else ' ships'} but {'they are' if n != 1 else 'it is'} not usable"
            return f"{ships}; --speculative-algorithm NEXTN will not get working MTP heads ({', '.join(blocking)})"
        return f"{what} but {ships}; --speculative-algorithm NEXTN will not get working MTP heads ({', '.join(blocking)})"
    if n:
        why = "there is no config.json to declare them" if not ev.has_config else "config.json declares no MTP layer"
        return (f"{n:,} MTP tensor{'s ship' if n != 1 else ' ships'} but {why}; --speculative-algorithm NEXTN will not load "
                "them as a draft")
    if not ev.tensors_known:  # config only: the tensors were not inspected, so none is claimed absent
        return ("no MTP layers declared (tensors not inspected: no index and no shard): speculative decoding would need a "
                "separate draft model")
    return "no MTP layers declared and no MTP tensors: speculative decoding would need a separate draft model"


def _answer_unknown(ev: HeadsEvidence, what: str, blocking: list[str]) -> str:
    """The answer when it could not be told (nothing lists the tensors, or a blocking gap)."""
    if not ev.tensors_known:
        if not ev.has_index and not ev.shards_present:
            return f"{what or 'MTP'}, but there is no index and no shard to check that the MTP tensors ship: could not tell"
        problems = ", ".join(ev.problems[:2]) or "see not examined"
        if blocking:
            return (f"{what or 'the checkpoint'}, but no shard header could be read ({problems}): "
                    f"the load fails before the MTP heads matter ({', '.join(blocking)})")
        return (f"{what or 'MTP'}, but no readable index or shard header lists the tensors "
                f"({problems}), so whether the MTP tensors ship could not be checked: could not tell")
    gap = ev.blocking_gap or "see 'not examined'"
    return f"could not tell whether --speculative-algorithm NEXTN gets working MTP heads: {gap}"


def sglang_uses_heads(ev: HeadsEvidence) -> HeadsAnswer:
    """SGLang's answer for the checkpoint of ``ev``: usable with ``--speculative-algorithm NEXTN``, not (and what
    blocks it), or could not tell."""
    usable, blocking, saved = _usability(ev)
    return HeadsAnswer(
        engine="sglang", usable=usable, blocked_by=tuple(blocking), answer=_answer(ev, usable, blocking), title=TITLE,
        lines=_lines(ev, usable, blocking, saved), summary={"sglang_mtp_usable": usable},
        facts={"flags": "--speculative-algorithm NEXTN", "runs_as": "EAGLE",
               "draft_model": "the target checkpoint itself (no separate draft model)", "usable": usable,
               "blocked_by": blocking, "source": SGLANG_SOURCE})
