"""The corrected command: the flag fixes that findings name as their remediation, applied to the command
as written (values replaced in place, a flag never repeated), or to its spelling-corrected form."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mtp_audit.engines.argv import shell_join
from mtp_audit.engines.sglang.launch.command import rebuild
from mtp_audit.engines.sglang.launch.context import QUANT, Ctx
from mtp_audit.report import Finding, Severity

_FLAG_FIX = re.compile(r"^(--[a-z0-9][a-z0-9-]*) ([A-Za-z0-9_.-]+)(?=$|[\s;,(])")
_DROP_FIX = re.compile(r"^drop (--[a-z0-9][a-z0-9-]*)$")


def flag_fixes(ctx: Ctx, findings: Sequence[Finding]) -> dict[str, str | None]:
    """Flag replacements that findings name as their fix: a remediation that starts with
    ``--flag value`` (or ``drop --flag``) for a flag this SGLang declares."""
    out: dict[str, str | None] = dict(ctx.fixes)
    for f in sorted(findings, key=lambda f: (-int(f.severity), f.rule_id)):
        if f.severity < Severity.WARNING or not f.remediation:
            continue
        m = _FLAG_FIX.match(f.remediation)
        if m:
            flag = ctx.cmd.flag_of(m.group(1))
            if flag is not None and (flag not in out):
                choices = ctx.release.choices(flag)
                if not choices or m.group(2) in choices:
                    out[flag] = m.group(2)
            continue
        m = _DROP_FIX.match(f.remediation)
        if m:
            flag = ctx.cmd.flag_of(m.group(1))
            if flag is not None:
                out.setdefault(flag, None)
    return out


def corrected_command(ctx: Ctx, findings: Sequence[Finding]) -> tuple[str | None, list[str]]:
    """``(the corrected command line, flags changed)``, or ``(None, [])`` when no flag fix is known.

    With a spelling-corrected command (``ctx.respelled``) the value fixes come from that command's own
    evaluation, so a misspelt flag's value is checked and replaced in place, never added a second time.
    """
    toks, changed = corrected_tokens(ctx, findings)
    return (shell_join(toks), changed) if toks is not None else (None, [])


def corrected_tokens(ctx: Ctx, findings: Sequence[Finding]) -> tuple[list[str] | None, list[str]]:
    """:func:`corrected_command` as tokens (``None`` when no fix is known, or when a required argument such as
    ``--model-path`` is missing: no flag fix can supply the model)."""
    spelling = {p.token for p in ctx.cmd.problems if p.fix is not None}
    if ctx.respelled is not None:
        spelled, sub_ctx, sub_findings = ctx.respelled
        if any(p.kind == "required" for p in sub_ctx.cmd.problems):
            return None, []
        sub_toks, sub_changed = corrected_tokens(sub_ctx, sub_findings)
        return (sub_toks if sub_toks is not None else spelled), sorted(set(sub_changed) | spelling)
    if any(p.kind == "required" for p in ctx.cmd.problems):
        return None, []
    fixes = flag_fixes(ctx, findings)
    # a flag the command does not give (its default or 'auto' resolved to the bad value) is added
    # (not when --quantization is being dropped: the backends of an FP4 launch that will not happen are moot)
    qflag = ctx.cmd.flag_of(*QUANT)
    moot = qflag is not None and qflag in fixes and fixes[qflag] is None
    add = {} if moot else {k: v for k, v in fixes.items() if not ctx.cmd.has(k) and v is not None}
    fixes = {k: v for k, v in fixes.items() if ctx.cmd.has(k)}
    toks = rebuild(ctx.cmd, fixes, add=add, drop_prefixes=ctx.drop_prefixes)
    if toks == list(ctx.cmd.argv):
        return None, []
    changed = sorted(set(fixes) | set(add) | spelling | ({f"{p}*" for p in ctx.drop_prefixes}))
    return toks, changed
