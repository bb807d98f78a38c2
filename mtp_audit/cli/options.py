"""The output options every analyzer command shares (``-f``, ``-o``, ``--fail-on`` and the display filters
``-q``, ``--severity``, ``--select``) and the display filter they set (:class:`Shown`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from mtp_audit.cli.invocation import current
from mtp_audit.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])


FORMAT_CHOICES = ("text", "json", "markdown", "sarif")


FAIL_ON_CHOICES = ("info", "warning", "error", "never")


#: ``ctx.meta`` key of the display filter (``-q``, ``--severity``, ``--select``).
META_SHOWN = "mtp_audit.shown"
#: ``ctx.meta`` key of ``--sarif-category`` (``None``: the SARIF's own ``mtp-audit/<analyzer>/``).
META_CATEGORY = "mtp_audit.sarif_category"
#: ``ctx.meta`` key of ``(--baseline-findings, --write-baseline)`` (each ``None`` when not given).
META_BASELINE = "mtp_audit.baseline"


def output_options(func: F) -> F:
    """Add the output options to a click command: ``-f/--format`` and ``-o/--output`` (both repeatable,
    paired in order: ``-f sarif -o a.sarif -f json -o b.json``; an ``-o`` without its ``-f`` takes the
    format from its suffix), ``--fail-on``, the display filters ``-q/--quiet``, ``--severity`` and
    ``--select`` (what is listed, never what is computed nor the exit code), ``--sarif-category`` (the SARIF's
    ``automationDetails.id``), ``--baseline-findings`` / ``--write-baseline`` (:mod:`mtp_audit.cli.baseline`), and the
    settings options
    (``--config``, ``--ignore``, ``-v/--verbose``: :func:`mtp_audit.cli.config.config_options`).

    The command receives ``fmt`` and ``output`` as tuples (pass them to :func:`emit` as they are) and
    ``fail_on`` (None when not given, so the settings file's ``fail-on`` can apply); the filters reach
    :func:`emit` through the click context."""
    import click

    from mtp_audit.cli.config import config_options

    out: Any = config_options(with_display_filter(func))
    out = click.option("--write-baseline", "write_baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
                       help="Write the fingerprints of every finding of this run to FILE: the baseline to pass to "
                            "--baseline-findings later (adopting the gate on a project that has findings today).")(out)
    out = click.option("--baseline-findings", "baseline_findings", type=click.Path(dir_okay=False, path_type=Path),
                       default=None, help="Findings whose fingerprints (SARIF partialFingerprints) are in FILE (a "
                                          "--write-baseline file or an earlier SARIF) are ignored: listed, never failing the gate.")(out)
    out = click.option("--sarif-category", "sarif_category", metavar="NAME", default=None,
                       help="SARIF: the code-scanning category (runs[].automationDetails.id = NAME/), to keep the alerts "
                            "of several audits of one repository apart [default: mtp-audit/<analyzer>].")(out)
    out = click.option("--select", "select", multiple=True, metavar="RULE[,RULE...]",
                       help="List only these rules (an id such as MTP209, or a prefix such as MTP2); repeatable. "
                            "The verdict and the exit code still count every finding.")(out)
    out = click.option("--severity", "min_severity", type=click.Choice(("info", "warning", "error"), case_sensitive=False),
                       default=None, help="List only findings at or above this severity (the verdict and the exit code "
                                           "still count every finding).")(out)
    out = click.option("--quiet", "-q", "quiet", is_flag=True, default=False,
                       help="Text and Markdown: only the verdict, the answer and the counts (no finding lines).")(out)
    out = click.option(
        "--fail-on",
        type=click.Choice(FAIL_ON_CHOICES, case_sensitive=False),
        default=None,
        help="Lowest severity that makes the exit code 1 ('never': only 2 and 3 remain possible) "
             "[default: fail-on of [tool.mtp-audit], else error].",
    )(out)
    out = click.option(
        "--output",
        "-o",
        multiple=True,
        type=click.Path(dir_okay=False, writable=False, path_type=Path),
        help="Write the report to FILE (atomically, only once it is complete; never over an input); '-' is stdout. "
             "Repeatable: the Nth -o gets the Nth -f, else the format of its suffix (.sarif, .json, .md, .txt).",
    )(out)
    out = click.option(
        "--format",
        "-f",
        "fmt",
        multiple=True,
        type=click.Choice(FORMAT_CHOICES, case_sensitive=False),
        help="Report format: text, json, markdown or sarif [default: text, or the -o suffix]. Repeatable, paired with -o.",
    )(out)
    return out


def with_display_filter(func: F) -> F:
    """``func`` taking the output options' values: the display filters (``quiet``, ``min_severity``,
    ``select``), ``sarif_category``, ``baseline_findings`` and ``write_baseline`` are taken out of its keyword
    arguments and left in the running command's ``meta`` (:func:`mtp_audit.cli.invocation.current`) for
    :func:`mtp_audit.cli.emit.emit`."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        meta = current().meta
        meta[META_SHOWN] = Shown.of(kwargs.pop("quiet", False), kwargs.pop("min_severity", None), kwargs.pop("select", ()))
        meta[META_CATEGORY] = checked_category(kwargs.pop("sarif_category", None))
        meta[META_BASELINE] = (kwargs.pop("baseline_findings", None), kwargs.pop("write_baseline", None))
        return func(*args, **kwargs)

    return cast(F, wrapper)  # the wrapper takes func's arguments plus the options it pops


def checked_category(category: str | None) -> str | None:
    """``--sarif-category`` as given, checked before any work (:func:`mtp_audit.formats.sarif.automation_id`).

    Raises:
        InputError: an empty category or one with a control character.
    """
    if category is None:
        return None
    from mtp_audit.formats.sarif import automation_id

    try:
        automation_id(category, "")
    except ValueError as exc:
        raise InputError("--sarif-category", str(exc)) from None
    return category


class Shown:
    """What the outputs list: all findings, or those at or above ``severity`` and among ``select``
    (rule ids or id prefixes); ``quiet`` drops the finding lines of the text and Markdown reports.
    Never changes the verdict, the status or the exit code."""

    def __init__(self, quiet: bool = False, severity: str | None = None, select: Sequence[str] = ()) -> None:
        from mtp_audit.report import Severity

        self.quiet = quiet
        self.severity = Severity.parse(severity) if severity else None
        self.select = tuple(s.strip().upper() for item in select for s in item.split(",") if s.strip())
        _check_selected(self.select)

    @classmethod
    def of(cls, quiet: bool, severity: str | None, select: Sequence[str]) -> Shown:
        """The filter of the given option values (see the class)."""
        return cls(bool(quiet), severity, select)

    @property
    def active(self) -> bool:
        """Whether anything is filtered."""
        return bool(self.quiet or self.severity or self.select)

    def __call__(self, finding: Any) -> bool:
        if self.severity is not None and finding.severity < self.severity:
            return False
        return not self.select or any(finding.rule_id.startswith(s) for s in self.select)

    def describe(self) -> str:
        """The options that filter, as typed (``--severity warning --select MTP2``)."""
        parts = [f"--severity {self.severity.label}"] if self.severity else []
        parts += [f"--select {s}" for s in self.select]
        return " ".join(parts)


def _check_selected(select: Sequence[str]) -> None:
    """Every ``--select`` value is a rule id or the prefix of one (``MTP2``), as ``--ignore`` requires a known rule.

    Raises:
        InputError: a value no rule id starts with (it would hide every finding without a word).
    """
    if not select:
        return
    from mtp_audit.report.rules import all_rules

    ids = [r.id for r in all_rules()]
    for s in select:
        if not any(i.startswith(s) for i in ids):
            raise InputError("--select", f"{s}: no rule id starts with it (see 'mtp-audit rules')")


def engine_id(value: str | None) -> str | None:
    """``--engine``'s value as a registered engine id (an alias becomes its id:
    :func:`mtp_audit.engines.registry.canonical_id`), ``None`` when not given.

    Raises:
        click.BadParameter: no registered engine has that id or alias (the message lists the ids and aliases).
    """
    if value is None:
        return None
    import click

    from mtp_audit.engines.registry import ALIASES, canonical_id, engine_ids

    engine = canonical_id(value)
    if engine not in engine_ids():
        raise click.BadParameter(f"{value!r} is not a registered engine (ids: {', '.join(engine_ids())}; "
                                 f"aliases: {', '.join(ALIASES)})", param_hint="--engine")
    return engine
