"""``mtp-audit sglang [OLD] [NEW]``: what SGLang will do with your flags, or what an upgrade changes.

Kept light: the analyzer is imported only when the command runs, and the click command (``sglang``) is built on
first use, so a plain invocation runs :data:`callback` without importing click (:mod:`mtp_audit.cli.fastpath`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtp_audit.cli.emit import emit
from mtp_audit.cli.options import output_options, with_display_filter
from mtp_audit.cli.targets import release_or_path


def run(targets: tuple[str, ...], baseline: Path | None, fmt: str, output: Path | None, fail_on: str) -> int:
    """Trace CLI value rewrites (NEXTN -> EAGLE -> draft = target -> MTP class), draft-architecture
    overrides, MTP registrations, env vars and FP4 choices in SGLang source.

    TARGET: a checkout, package folder, unpacked wheel or .whl file; a release version (0.5.23: only the
    wheel's .py members are fetched from the package index with range requests, then cached); none: the
    installed sglang. With two targets (OLD NEW) or --baseline, reports what changed.
    """
    from mtp_audit.engines.sglang import audit_sglang, diff_sglang
    from mtp_audit.errors import InputError

    targets = tuple(str(release_or_path("sglang", t)) for t in targets)

    if len(targets) > 2:
        raise InputError("sglang", "expected at most two targets (OLD NEW)")
    if baseline is not None and len(targets) > 1:
        raise InputError("--baseline", "use either --baseline with one target, or two targets")
    if len(targets) == 2:
        report = diff_sglang(audit_sglang(targets[0]), audit_sglang(targets[1]))
    else:
        new = audit_sglang(targets[0] if targets else None)
        if baseline is not None:
            from mtp_audit.sources.bounded import read_json_bounded

            old = read_json_bounded(baseline)
            if not isinstance(old, dict) or "sglang" not in (old.get("facts") or {}):
                raise InputError(str(baseline), "not an mtp-audit sglang JSON report")
            report = diff_sglang(old, new)
        else:
            report = new
    from mtp_audit.cli.targets import installed_package_folder

    # with no TARGET the installed package is audited: its files are inputs too
    return emit(report, fmt, output, fail_on, protected=installed_package_folder("sglang") if not targets else ())


#: What the command runs with click's parameter values (the display filter taken out).
callback = with_display_filter(run)


def __getattr__(name: str) -> Any:
    """``sglang``: the click command, built on first use."""
    if name != "sglang":
        raise AttributeError(name)
    import click

    command = click.command("sglang")(click.argument("targets", nargs=-1, metavar="[TARGET] [NEW]")(click.option(
        "--baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
        help="A JSON report of an older audit (mtp-audit sglang -f json); report what changed since.")(
        output_options(run))))
    globals()["sglang"] = command
    return command
