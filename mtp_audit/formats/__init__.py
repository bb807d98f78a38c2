"""Renderers: a :class:`~mtp_audit.report.Report` in, a string out. No printing, no files.

Every renderer's output passes through :mod:`mtp_audit.formats.escape`: text and Markdown render a copy of
the report whose strings are escaped (:func:`~mtp_audit.formats.escape.escape_deep`), JSON and SARIF
documents have the unsafe characters ``json.dumps`` leaves raw written as ``\\uNNNN``
(:func:`~mtp_audit.formats.escape.escape_json`, lossless).

``FORMATS`` maps each ``--format`` name to its ``render(report) -> str`` function (defaults:
not verbose, no colour, ``--fail-on error``); :func:`render` passes the text options on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mtp_audit.formats.escape import escape_deep, escape_json
from mtp_audit.report import Report, Severity


def _text(report: Report) -> str:
    from mtp_audit.formats.text import render

    return render(escape_deep(report))


def _json(report: Report) -> str:
    from mtp_audit.formats.jsonfmt import render

    return escape_json(render(report))


def _markdown(report: Report) -> str:
    from mtp_audit.formats.markdown import render

    return render(escape_deep(report))


def _sarif(report: Report) -> str:
    from mtp_audit.formats.sarif import render

    return escape_json(render(report))


FORMATS: dict[str, Callable[[Report], str]] = {
    "text": _text,
    "json": _json,
    "markdown": _markdown,
    "sarif": _sarif,
}


#: The facts the text report reads of an analyzer that has a ``summary`` (mtp_audit.formats.summary: answer_lines,
#: headline_facts, closing_sections, secondary_findings); an analyzer without one shows its scalar facts.
_TEXT_FACTS = ("summary", "answer", "closing", "secondary")


def _text_view(report: Report) -> Report:
    """``report`` with only the facts the text report shows, so that escaping them does not walk every fact of a
    large report (an SGLang tree's thousands of rewrite records)."""
    import dataclasses

    facts = {a: ({k: f[k] for k in _TEXT_FACTS if k in f} if isinstance(f, dict) and "summary" in f else f)
             for a, f in report.facts.items()}
    return dataclasses.replace(report, facts=facts)


def render(report: Report, fmt: str, *, verbose: bool = False, color: bool = False,
           fail_on: Severity | str | None = Severity.ERROR, shown: Any = None, width: int | None = None, **sarif: Any) -> str:
    """Render ``report`` in format ``fmt`` (a key of :data:`FORMATS`).

    ``verbose`` and ``color`` shape the text report only (JSON, SARIF and Markdown always carry
    everything, uncoloured); ``fail_on`` (``None``: never) is the threshold whose exit code the text and
    Markdown reports name in their first line. ``shown`` (``shown(finding) -> bool``, with ``quiet``
    and ``describe()``: the CLI's ``-q`` / ``--severity`` / ``--select``) filters the findings every
    format lists; the verdict, the status and the counts still describe every finding. ``sarif``:
    keyword arguments of :func:`mtp_audit.formats.sarif.render` (``roots``, ``anchor``, ``anchor_line``). ``width``:
    the terminal's width for the text report (``None``: no wrapping, no cut). ``fail_on`` may be the CLI's word
    (:func:`mtp_audit.report.model.fail_on_severity`).

    Raises:
        KeyError: unknown format.
        ValueError: a ``fail_on`` word outside the CLI's.
    """
    from mtp_audit.report.model import fail_on_severity

    fail_on = fail_on_severity(fail_on)
    if fmt == "text":
        from mtp_audit.formats.text import render as text

        return text(escape_deep(_text_view(report)), verbose=verbose, color=color, fail_on=fail_on, shown=shown, width=width)
    if fmt == "markdown":
        from mtp_audit.formats.markdown import render as markdown

        return markdown(escape_deep(report), fail_on=fail_on, shown=shown)
    if fmt == "sarif":
        from mtp_audit.formats.sarif import render as sarif_render

        return escape_json(sarif_render(report, shown=shown, **sarif))
    if fmt == "json" and shown is not None:
        from mtp_audit.formats.jsonfmt import render as json_render

        return escape_json(json_render(report, shown=shown))
    return FORMATS[fmt](report)
